//! SNAP/TSV edge lists (`src dst [weight]`) and one-id-per-line vertex lists.
//!
//! These are the formats of the largest inputs, so this is the hot path: one pass over each
//! line, ids parsed straight from bytes, nothing allocated per line in `--ids u64` mode.
//! Fields are separated by any run of whitespace or commas; lines whose first field starts with
//! `#` or `%` are comments; columns after the ones used are ignored (SNAP files often carry
//! timestamps or signs there).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::compress::{self, InputStream};
use super::text::{find_newline, is_separator, leading_digits, line_error, parse_id, parse_weight, Fields, LineReader};
use super::{describe, BadLines, FileJob, FileParser, Plan};
use crate::error::Result;
use crate::ingest::{ImportOptions, InputRecord, RawId};
use crate::store::IdType;

/// The weight of an edge list is its third field.
const EDGE_LIST_WEIGHT_FIELD: usize = 2;

pub(super) fn plan(path: &Path, opts: &ImportOptions, reason: &str) -> Result<Plan> {
    let compression = compress::detect_compression(path)?;
    let read_weights = opts.weighted == Some(true);
    let what = if read_weights { "SNAP/TSV edge list with weights in the third column" } else { "SNAP/TSV edge list" };
    Ok(Plan {
        jobs: vec![FileJob::EdgeList {
            path: path.to_path_buf(),
            weight_field: read_weights.then_some(EDGE_LIST_WEIGHT_FIELD),
        }],
        description: describe(compression, what, reason),
        directed: None,
        weighted: opts.weighted,
        path: path.to_path_buf(),
    })
}

/// Is this field the start of a comment line?
#[inline]
fn is_comment(first_field: &[u8]) -> bool {
    matches!(first_field.first(), Some(b'#' | b'%'))
}

/// Blocks are split into chunks of at least this many bytes, one per thread: smaller ones cost
/// more to hand out than to parse.
const MIN_CHUNK_BYTES: usize = 64 * 1024;
/// The shortest line that gives an edge ("1 2\n"): a block of `4 × n` bytes yields at most
/// `n` records (plus one for a last line without newline), which bounds the records held.
const MIN_EDGE_LINE_BYTES: usize = 4;

/// Reads an edge list in blocks of whole lines; each block is cut at line boundaries into one
/// chunk per thread, the chunks are parsed in parallel and their records kept in input order,
/// so the records (and the store built from them) do not depend on the number of threads.
pub(super) struct EdgeListParser {
    lines: LineReader,
    path: PathBuf,
    ids: IdType,
    /// 0-based field of the weight, when weights are read.
    weight_field: Option<usize>,
    /// Records parsed from the last block and not yet handed out, one vector per chunk (the
    /// first possibly handed out in part).
    pending: VecDeque<Vec<InputRecord>>,
    /// Size of a block: four bytes per record of the largest batch asked for.
    block_bytes: usize,
    /// The reader is at its end (no more blocks).
    exhausted: bool,
}

impl EdgeListParser {
    pub(super) fn new(input: InputStream, ids: IdType, weight_field: Option<usize>) -> Result<Self> {
        let path = input.path().to_path_buf();
        let lines = LineReader::new(input, "edge list")?;
        Ok(EdgeListParser {
            lines,
            path,
            ids,
            weight_field,
            pending: VecDeque::new(),
            block_bytes: 0,
            exhausted: false,
        })
    }

    /// Parses the next block into `pending`, handling its bad lines in input order with their
    /// exact line numbers; `false` at the end of the input.
    fn parse_block(&mut self, bad_lines: &mut BadLines) -> Result<bool> {
        let Some((first_line, block)) = self.lines.next_block(self.block_bytes)? else {
            return Ok(false);
        };
        let (ids, weight_field) = (self.ids, self.weight_field);
        let parts = (block.len() / MIN_CHUNK_BYTES).clamp(1, rayon::current_num_threads());
        let chunks: Vec<ParsedChunk> = if parts == 1 {
            vec![parse_chunk(block, ids, weight_field)]
        } else {
            split_at_lines(block, parts).into_par_iter().map(|chunk| parse_chunk(chunk, ids, weight_field)).collect()
        };
        let mut line_number = first_line;
        for chunk in chunks {
            for (index, message, text) in &chunk.errors {
                bad_lines.handle(line_error(&self.path, line_number + index, message, text))?;
            }
            if !chunk.records.is_empty() {
                self.pending.push_back(chunk.records);
            }
            line_number += chunk.lines;
        }
        self.lines.lines_consumed(line_number - first_line);
        Ok(true)
    }
}

/// Cuts `block` into about `parts` pieces of whole lines.
fn split_at_lines(block: &[u8], parts: usize) -> Vec<&[u8]> {
    let target = block.len().div_ceil(parts.max(1));
    let mut chunks = Vec::with_capacity(parts);
    let mut rest = block;
    while rest.len() > target {
        let cut = find_newline(&rest[target..]).map_or(rest.len(), |offset| target + offset + 1);
        chunks.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        chunks.push(rest);
    }
    chunks
}

/// What one chunk of whole lines gave.
struct ParsedChunk {
    records: Vec<InputRecord>,
    /// Lines in the chunk (comments and blank lines included).
    lines: u64,
    /// Bad lines: (0-based line index in the chunk, message, line text).
    errors: Vec<(u64, String, Vec<u8>)>,
}

/// Parses the lines of a chunk (separated by `\n`, the last one possibly without it).
fn parse_chunk(chunk: &[u8], ids: IdType, weight_field: Option<usize>) -> ParsedChunk {
    let mut parsed = ParsedChunk { records: Vec::with_capacity(chunk.len() / 8), lines: 0, errors: Vec::new() };
    let mut rest = chunk;
    while !rest.is_empty() {
        let (line, next) = match find_newline(rest) {
            Some(offset) => (&rest[..offset], &rest[offset + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        match parse_line(line, ids, weight_field) {
            Some(Ok(record)) => parsed.records.push(record),
            Some(Err(message)) => parsed.errors.push((parsed.lines, message, line.to_vec())),
            None => {}
        }
        parsed.lines += 1;
        rest = next;
    }
    parsed
}

/// One line: an edge, an error message, or `None` for comments and blank lines.
#[inline]
fn parse_line(
    line: &[u8],
    ids: IdType,
    weight_field: Option<usize>,
) -> Option<std::result::Result<InputRecord, String>> {
    if ids == IdType::U64 {
        if let Some((src, dst, end)) = fast_numeric_pair(line) {
            let weight = match weight_field {
                None => Some(None),
                Some(field) => Fields::new(&line[end..])
                    .nth(field.saturating_sub(2))
                    .and_then(|token| parse_weight(token).ok())
                    .map(Some),
            };
            if let Some(weight) = weight {
                return Some(Ok(InputRecord::Edge { src: RawId::U64(src), dst: RawId::U64(dst), weight }));
            }
        }
    }
    let mut fields = Fields::new(line);
    let first = fields.next()?;
    if is_comment(first) {
        return None;
    }
    Some(parse_edge(first, fields, ids, weight_field))
}
/// Parses the fields of a non-comment line (its first field already taken) into an edge.
#[inline]
fn parse_edge(
    first: &[u8],
    mut fields: Fields<'_>,
    ids: IdType,
    weight_field: Option<usize>,
) -> std::result::Result<InputRecord, String> {
    let src = parse_id(first, ids).map_err(|e| e.into_message())?;
    let Some(second) = fields.next() else {
        return Err("expected 'src dst' but the line has a single field".to_string());
    };
    let dst = parse_id(second, ids).map_err(|e| e.into_message())?;
    let weight = match weight_field {
        None => None,
        Some(field) => {
            let Some(token) = fields.nth(field.saturating_sub(2)) else {
                return Err(format!("missing weight (expected it in column {} of 'src dst weight')", field + 1));
            };
            Some(parse_weight(token).map_err(|e| e.into_message())?)
        }
    };
    Ok(InputRecord::Edge { src, dst, weight })
}

/// The common line, `digits SEP digits [SEP ...]`, parsed in one pass for `--ids u64`:
/// `(src, dst, end of dst)`. Anything else (comments, blank lines, errors, 20-digit ids) is
/// left to the general path, which also writes the error messages.
#[inline(always)]
fn fast_numeric_pair(line: &[u8]) -> Option<(u64, u64, usize)> {
    let mut pos = 0;
    while pos < line.len() && is_separator(line[pos]) {
        pos += 1;
    }
    let (src, end) = leading_digits(line, pos)?;
    pos = end;
    if pos == line.len() || !is_separator(line[pos]) {
        return None;
    }
    while pos < line.len() && is_separator(line[pos]) {
        pos += 1;
    }
    let (dst, end) = leading_digits(line, pos)?;
    if end < line.len() && !is_separator(line[end]) {
        return None;
    }
    Some((src, dst, end))
}

impl FileParser for EdgeListParser {
    /// A batch may hold fewer than `max` records: an empty batch gets one parsed chunk whole.
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize, bad_lines: &mut BadLines) -> Result<bool> {
        self.block_bytes = self.block_bytes.max(max.saturating_mul(MIN_EDGE_LINE_BYTES));
        let limit = out.len() + max;
        while out.len() < limit {
            let Some(front) = self.pending.front_mut() else {
                if self.exhausted || !self.parse_block(bad_lines)? {
                    self.exhausted = true;
                    return Ok(false);
                }
                continue;
            };
            let room = limit - out.len();
            if out.is_empty() && front.len() <= room {
                // A whole chunk for an empty batch: hand over the vector, not its records
                // (this copy was a large part of reading a big edge list).
                std::mem::swap(out, front);
                self.pending.pop_front();
                return Ok(true);
            }
            let take = front.len().min(room);
            out.extend(front.drain(..take));
            if front.is_empty() {
                self.pending.pop_front();
            }
        }
        Ok(true)
    }
}

/// Graphalytics `.v` files: one vertex id per line (further columns are vertex properties,
/// ignored).
pub(super) struct VertexListParser {
    lines: LineReader,
    path: PathBuf,
    ids: IdType,
}

impl VertexListParser {
    pub(super) fn new(input: InputStream, ids: IdType) -> Result<Self> {
        let path = input.path().to_path_buf();
        let lines = LineReader::new(input, "vertex list")?;
        Ok(VertexListParser { lines, path, ids })
    }
}

impl FileParser for VertexListParser {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize, bad_lines: &mut BadLines) -> Result<bool> {
        let limit = out.len() + max;
        while out.len() < limit {
            let Some((line_number, line)) = self.lines.next_line()? else {
                return Ok(false);
            };
            let mut fields = Fields::new(line);
            let Some(first) = fields.next() else { continue };
            if is_comment(first) {
                continue;
            }
            match parse_id(first, self.ids) {
                Ok(id) => out.push(InputRecord::Vertex(id)),
                Err(e) => bad_lines.handle(line_error(&self.path, line_number, &e.into_message(), line))?,
            }
        }
        Ok(true)
    }
}
