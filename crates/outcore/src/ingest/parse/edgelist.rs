//! SNAP/TSV edge lists (`src dst [weight]`) and one-id-per-line vertex lists.
//!
//! These are the formats of the largest inputs, so this is the hot path: one pass over each
//! line, ids parsed straight from bytes, nothing allocated per line in `--ids u64` mode.
//! Fields are separated by any run of whitespace or commas; lines whose first field starts with
//! `#` or `%` are comments; columns after the ones used are ignored (SNAP files often carry
//! timestamps or signs there).

use std::path::{Path, PathBuf};

use super::compress::{self, InputStream};
use super::text::{
    is_separator, leading_digits, line_error, parse_id, parse_weight, Fields, LineReader,
};
use super::{describe, BadLines, FileJob, FileParser, Plan};
use crate::error::Result;
use crate::ingest::{ImportOptions, InputRecord, RawId};
use crate::store::IdType;

/// The weight of an edge list is its third field.
const EDGE_LIST_WEIGHT_FIELD: usize = 2;

pub(super) fn plan(path: &Path, opts: &ImportOptions, reason: &str) -> Result<Plan> {
    let compression = compress::detect_compression(path)?;
    let read_weights = opts.weighted == Some(true);
    let what = if read_weights {
        "SNAP/TSV edge list with weights in the third column"
    } else {
        "SNAP/TSV edge list"
    };
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

pub(super) struct EdgeListParser {
    lines: LineReader,
    path: PathBuf,
    ids: IdType,
    /// 0-based field of the weight, when weights are read.
    weight_field: Option<usize>,
}

impl EdgeListParser {
    pub(super) fn new(
        input: InputStream,
        ids: IdType,
        weight_field: Option<usize>,
    ) -> Result<Self> {
        let path = input.path().to_path_buf();
        let lines = LineReader::new(input, "edge list")?;
        Ok(EdgeListParser {
            lines,
            path,
            ids,
            weight_field,
        })
    }
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
                return Err(format!(
                    "missing weight (expected it in column {} of 'src dst weight')",
                    field + 1
                ));
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
    fn read_batch(
        &mut self,
        out: &mut Vec<InputRecord>,
        max: usize,
        bad_lines: &mut BadLines,
    ) -> Result<bool> {
        let limit = out.len() + max;
        out.reserve(max.min(1 << 16));
        let numeric = self.ids == IdType::U64;
        while out.len() < limit {
            let Some((line_number, line)) = self.lines.next_line()? else {
                return Ok(false);
            };
            if numeric {
                if let Some((src, dst, end)) = fast_numeric_pair(line) {
                    let weight = match self.weight_field {
                        None => Some(None),
                        Some(field) => Fields::new(&line[end..])
                            .nth(field.saturating_sub(2))
                            .and_then(|token| parse_weight(token).ok())
                            .map(Some),
                    };
                    if let Some(weight) = weight {
                        out.push(InputRecord::Edge {
                            src: RawId::U64(src),
                            dst: RawId::U64(dst),
                            weight,
                        });
                        continue;
                    }
                }
            }
            let mut fields = Fields::new(line);
            let Some(first) = fields.next() else { continue };
            if is_comment(first) {
                continue;
            }
            match parse_edge(first, fields, self.ids, self.weight_field) {
                Ok(record) => out.push(record),
                Err(message) => {
                    bad_lines.handle(line_error(&self.path, line_number, &message, line))?
                }
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
    fn read_batch(
        &mut self,
        out: &mut Vec<InputRecord>,
        max: usize,
        bad_lines: &mut BadLines,
    ) -> Result<bool> {
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
                Err(e) => bad_lines.handle(line_error(
                    &self.path,
                    line_number,
                    &e.into_message(),
                    line,
                ))?,
            }
        }
        Ok(true)
    }
}
