//! Matrix Market coordinate files (the SuiteSparse collection's format).
//!
//! ```text
//! %%MatrixMarket matrix coordinate real symmetric     <- banner: field and symmetry
//! % comments
//! 5 5 7                                               <- rows, columns, entries (nnz)
//! 1 2 0.5                                             <- 1-based row, column [, value]
//! ```
//! Entry (i, j) is the edge i → j. A matrix has `max(rows, cols)` vertices whether or not they
//! appear in an entry, so the parser first emits a [`InputRecord::Vertex`] for each of them
//! (generated lazily, never held in memory) to keep isolated vertices. `symmetric` means each
//! off-diagonal edge is stored once: the graph is undirected. `real` and `integer` values are
//! the weights. The entry count on the size line is checked, which catches truncated files.
//! Dense `array` files, `complex` values and the skew/hermitian symmetries are not graphs we
//! can represent and are refused with a message saying so.

use std::path::{Path, PathBuf};

use super::compress::InputStream;
use super::text::{line_error, parse_u64, parse_weight, quote, Fields, LineReader};
use super::{describe, BadLines, FileJob, FileParser, Plan};
use crate::error::{Error, Result};
use crate::ingest::{ImportOptions, InputRecord, RawId};
use crate::store::IdType;

/// The value type of the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Pattern,
    Real,
    Integer,
}

/// What the `%%MatrixMarket` line says.
#[derive(Debug, Clone, Copy)]
struct Banner {
    field: Field,
    symmetric: bool,
}

impl Banner {
    fn description(&self) -> String {
        let field = match self.field {
            Field::Pattern => "pattern",
            Field::Real => "real",
            Field::Integer => "integer",
        };
        let symmetry = if self.symmetric {
            "symmetric"
        } else {
            "general"
        };
        format!("Matrix Market coordinate {field} {symmetry}")
    }
}

/// Does this (first) line start a Matrix Market file?
pub(super) fn is_banner(line: &[u8]) -> bool {
    line.len() >= 14 && line[..14].eq_ignore_ascii_case(b"%%MatrixMarket")
}

/// Parses the banner, or says in words why it cannot be read as a graph.
fn parse_banner(line: &[u8]) -> std::result::Result<Banner, String> {
    let text = String::from_utf8_lossy(line).to_lowercase();
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.first() != Some(&"%%matrixmarket") {
        return Err("not a Matrix Market file: the first line must be \
                    '%%MatrixMarket matrix coordinate <field> <symmetry>'"
            .to_string());
    }
    if words.len() < 5 {
        return Err("incomplete %%MatrixMarket header (expected \
                    '%%MatrixMarket matrix coordinate <field> <symmetry>')"
            .to_string());
    }
    if words[1] != "matrix" {
        return Err(format!(
            "Matrix Market object '{}' is not supported (only 'matrix')",
            words[1]
        ));
    }
    match words[2] {
        "coordinate" => {}
        "array" => {
            return Err("Matrix Market 'array' (dense) format is not supported: \
                        a graph must be in 'coordinate' (sparse) format"
                .to_string())
        }
        other => {
            return Err(format!(
                "unknown Matrix Market format '{other}' (expected 'coordinate')"
            ))
        }
    }
    let field = match words[3] {
        "pattern" => Field::Pattern,
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "complex" => {
            return Err("complex-valued Matrix Market files are not supported: \
                        edge weights must be real numbers"
                .to_string())
        }
        other => {
            return Err(format!(
                "unknown Matrix Market field '{other}' (expected pattern, real or integer)"
            ))
        }
    };
    let symmetric = match words[4] {
        "general" => false,
        "symmetric" => true,
        other @ ("skew-symmetric" | "hermitian") => {
            return Err(format!(
                "Matrix Market symmetry '{other}' is not supported (only general and symmetric)"
            ))
        }
        other => {
            return Err(format!(
                "unknown Matrix Market symmetry '{other}' (expected general or symmetric)"
            ))
        }
    };
    Ok(Banner { field, symmetric })
}

/// Reads and checks the banner (line 1).
fn read_banner(lines: &mut LineReader, path: &Path) -> Result<Banner> {
    match lines.next_line()? {
        Some((number, line)) => {
            parse_banner(line).map_err(|message| line_error(path, number, &message, line))
        }
        None => Err(Error::input(
            path,
            None,
            "input is empty: no %%MatrixMarket header",
        )),
    }
}

pub(super) fn plan(path: &Path, opts: &ImportOptions, reason: &str) -> Result<Plan> {
    let input = InputStream::open(path, Default::default())?;
    let compression = input.compression();
    let mut lines = LineReader::new(input, "Matrix Market")?;
    let banner = read_banner(&mut lines, path)?;
    let has_values = banner.field != Field::Pattern;
    if opts.weighted == Some(true) && !has_values {
        return Err(Error::input(
            path,
            Some(1),
            "weights were asked for, but a 'pattern' Matrix Market file has no values",
        ));
    }
    let read_weights = opts.weighted.unwrap_or(has_values);
    Ok(Plan {
        jobs: vec![FileJob::MatrixMarket {
            path: path.to_path_buf(),
            read_weights,
        }],
        description: describe(compression, &banner.description(), reason),
        directed: Some(!banner.symmetric),
        weighted: Some(read_weights),
        path: path.to_path_buf(),
    })
}

/// How entry lines are checked and turned into edges.
#[derive(Debug, Clone, Copy)]
struct EntryRules {
    ids: IdType,
    read_weights: bool,
    rows: u64,
    cols: u64,
}

pub(super) struct MatrixMarketParser {
    lines: LineReader,
    path: PathBuf,
    rules: EntryRules,
    /// Entries declared on the size line.
    declared_entries: u64,
    size_line_number: u64,
    /// Next vertex (1-based) to emit; vertices are done once it exceeds `vertex_count`.
    next_vertex: u64,
    vertex_count: u64,
    /// Entry lines met so far, good or bad.
    entries_seen: u64,
}

impl MatrixMarketParser {
    pub(super) fn new(input: InputStream, ids: IdType, read_weights: bool) -> Result<Self> {
        let path = input.path().to_path_buf();
        let mut lines = LineReader::new(input, "Matrix Market")?;
        read_banner(&mut lines, &path)?;
        let (size_line_number, rows, cols, declared_entries) = loop {
            let Some((number, line)) = lines.next_line()? else {
                return Err(Error::input(
                    &path,
                    None,
                    "the file ends before the size line ('rows columns entries')",
                ));
            };
            let mut fields = Fields::new(line);
            let Some(first) = fields.next() else { continue };
            if first.starts_with(b"%") {
                continue;
            }
            let numbers: Vec<Option<u64>> = std::iter::once(first)
                .chain(fields)
                .map(parse_u64)
                .collect();
            match numbers.as_slice() {
                [Some(rows), Some(cols), Some(entries)] => break (number, *rows, *cols, *entries),
                _ => {
                    return Err(line_error(
                        &path,
                        number,
                        "invalid Matrix Market size line (expected 'rows columns entries' \
                         of a coordinate matrix)",
                        line,
                    ))
                }
            }
        };
        Ok(MatrixMarketParser {
            lines,
            path,
            rules: EntryRules {
                ids,
                read_weights,
                rows,
                cols,
            },
            declared_entries,
            size_line_number,
            next_vertex: 1,
            vertex_count: rows.max(cols),
            entries_seen: 0,
        })
    }
}

impl EntryRules {
    #[inline]
    fn raw_id(&self, index: u64) -> RawId {
        match self.ids {
            IdType::U64 => RawId::U64(index),
            IdType::String => RawId::Str(index.to_string()),
        }
    }

    /// Parses one entry line.
    fn parse_entry(&self, line: &[u8]) -> std::result::Result<InputRecord, String> {
        let mut fields = Fields::new(line);
        let row = self.parse_index(fields.next(), "row", self.rows)?;
        let col = self.parse_index(fields.next(), "column", self.cols)?;
        let weight = if self.read_weights {
            let Some(token) = fields.next() else {
                return Err("missing value (expected 'row column value')".to_string());
            };
            Some(parse_weight(token).map_err(|e| e.into_message())?)
        } else {
            None
        };
        Ok(InputRecord::Edge {
            src: self.raw_id(row),
            dst: self.raw_id(col),
            weight,
        })
    }

    fn parse_index(
        &self,
        token: Option<&[u8]>,
        what: &str,
        bound: u64,
    ) -> std::result::Result<u64, String> {
        let Some(token) = token else {
            return Err(format!(
                "missing {what} index (expected 'row column [value]')"
            ));
        };
        match parse_u64(token) {
            Some(index) if (1..=bound).contains(&index) => Ok(index),
            Some(index) => Err(format!(
                "{what} index {index} is out of range 1..={bound} (Matrix Market indices are 1-based)"
            )),
            None => Err(format!("invalid {what} index '{}' (expected a positive integer)", quote(token))),
        }
    }
}

impl FileParser for MatrixMarketParser {
    fn read_batch(
        &mut self,
        out: &mut Vec<InputRecord>,
        max: usize,
        bad_lines: &mut BadLines,
    ) -> Result<bool> {
        let limit = out.len() + max;
        while out.len() < limit && self.next_vertex <= self.vertex_count {
            out.push(InputRecord::Vertex(self.rules.raw_id(self.next_vertex)));
            self.next_vertex += 1;
        }
        while out.len() < limit {
            let Some((line_number, line)) = self.lines.next_line()? else {
                if self.entries_seen < self.declared_entries {
                    return Err(Error::input(
                        &self.path,
                        None,
                        format!(
                            "the size line (line {}) declares {} entries but the file ends after {} \
                             (truncated file?)",
                            self.size_line_number, self.declared_entries, self.entries_seen
                        ),
                    ));
                }
                return Ok(false);
            };
            let mut fields = Fields::new(line);
            match fields.next() {
                None => continue,
                Some(first) if first.starts_with(b"%") => continue,
                Some(_) => {}
            }
            self.entries_seen += 1;
            let result = if self.entries_seen > self.declared_entries {
                Err(format!(
                    "more entries than the {} declared on the size line (line {})",
                    self.declared_entries, self.size_line_number
                ))
            } else {
                self.rules.parse_entry(line)
            };
            match result {
                Ok(record) => out.push(record),
                Err(message) => {
                    bad_lines.handle(line_error(&self.path, line_number, &message, line))?
                }
            }
        }
        Ok(true)
    }
}
