//! CSV with a header row, as exported by databases, spreadsheets and dataframes.
//!
//! The header names the columns, so `--src-col/--dst-col/--weight-col` can pick them by name
//! (or by 0-based index); by default the first two columns are the endpoints and the weight is
//! a column named `weight`, else the third column when weights are asked for. The delimiter is
//! taken from the header (comma, tab or semicolon, whichever it uses most). Fields may be
//! quoted RFC 4180 style (`"a ""quoted"" id"`, delimiters inside quotes); a quoted field may
//! not span lines, which keeps every record on one line and every error on a line number.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::compress::InputStream;
use super::text::{line_error, parse_id, parse_weight, trim_line_end, LineReader};
use super::{describe, BadLines, FileJob, FileParser, Plan};
use crate::error::{Error, Result};
use crate::ingest::{ImportOptions, InputRecord};
use crate::store::IdType;

/// Where the data of a CSV file is: decided once from the header at planning time.
#[derive(Debug, Clone)]
pub(super) struct CsvLayout {
    pub(super) path: PathBuf,
    delimiter: u8,
    /// 1-based line of the header; data starts after it.
    header_line: u64,
    src: usize,
    dst: usize,
    weight: Option<usize>,
}

impl CsvLayout {
    /// The highest column index a row must have.
    fn last_needed_column(&self) -> usize {
        self.src.max(self.dst).max(self.weight.unwrap_or(0))
    }
}

/// Is this line empty or only whitespace?
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
}

/// The delimiter a header line uses most, outside quotes (comma when it has none).
pub(super) fn guess_delimiter(header: &[u8]) -> u8 {
    let mut counts = [(b',', 0usize), (b'\t', 0), (b';', 0)];
    let mut in_quotes = false;
    for &b in header {
        if b == b'"' {
            in_quotes = !in_quotes;
        } else if !in_quotes {
            for (delimiter, count) in counts.iter_mut() {
                if b == *delimiter {
                    *count += 1;
                }
            }
        }
    }
    counts
        .iter()
        .filter(|(_, count)| *count > 0)
        .max_by_key(|(_, count)| *count)
        .map_or(b',', |(d, _)| *d)
}

/// Splits one CSV row into fields, unquoting quoted ones.
pub(super) struct CsvFields<'a> {
    line: &'a [u8],
    pos: usize,
    delimiter: u8,
    done: bool,
}

impl<'a> CsvFields<'a> {
    pub(super) fn new(line: &'a [u8], delimiter: u8) -> CsvFields<'a> {
        CsvFields {
            line: trim_line_end(line),
            pos: 0,
            delimiter,
            done: false,
        }
    }

    fn is_padding(&self, b: u8) -> bool {
        (b == b' ' || b == b'\t') && b != self.delimiter
    }

    fn skip_padding(&mut self) {
        while self.pos < self.line.len() && self.is_padding(self.line[self.pos]) {
            self.pos += 1;
        }
    }

    fn quoted_field(&mut self) -> std::result::Result<Cow<'a, [u8]>, &'static str> {
        let line = self.line;
        let start = self.pos + 1;
        let mut pos = start;
        let mut has_escaped_quotes = false;
        let end = loop {
            let Some(offset) = line[pos..].iter().position(|&b| b == b'"') else {
                return Err("unterminated quoted field (quoted fields cannot span lines)");
            };
            let quote = pos + offset;
            if line.get(quote + 1) == Some(&b'"') {
                has_escaped_quotes = true;
                pos = quote + 2;
            } else {
                pos = quote + 1;
                break quote;
            }
        };
        self.pos = pos;
        self.skip_padding();
        match self.line.get(self.pos) {
            None => self.done = true,
            Some(&b) if b == self.delimiter => self.pos += 1,
            Some(_) => return Err("unexpected text after a closing quote"),
        }
        let content = &line[start..end];
        if has_escaped_quotes {
            let mut unescaped = Vec::with_capacity(content.len());
            let mut i = 0;
            while i < content.len() {
                unescaped.push(content[i]);
                i += if content[i] == b'"' { 2 } else { 1 };
            }
            Ok(Cow::Owned(unescaped))
        } else {
            Ok(Cow::Borrowed(content))
        }
    }
}

impl<'a> Iterator for CsvFields<'a> {
    type Item = std::result::Result<Cow<'a, [u8]>, &'static str>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.skip_padding();
        if self.line.get(self.pos) == Some(&b'"') {
            let field = self.quoted_field();
            if field.is_err() {
                self.done = true;
            }
            return Some(field);
        }
        let line = self.line;
        let start = self.pos;
        let end = match line[start..].iter().position(|&b| b == self.delimiter) {
            Some(offset) => {
                self.pos = start + offset + 1;
                start + offset
            }
            None => {
                self.done = true;
                self.pos = line.len();
                line.len()
            }
        };
        let mut field = &line[start..end];
        while let Some((&last, rest)) = field.split_last() {
            if last == b' ' || last == b'\t' {
                field = rest;
            } else {
                break;
            }
        }
        Some(Ok(Cow::Borrowed(field)))
    }
}

/// Finds a column by name (exact, then ignoring case) or by 0-based index.
fn resolve_column(
    spec: &str,
    option: &str,
    names: &[String],
    path: &Path,
    header_line: u64,
) -> Result<usize> {
    let spec_trimmed = spec.trim();
    if let Some(index) = names.iter().position(|n| n == spec_trimmed) {
        return Ok(index);
    }
    if let Some(index) = names
        .iter()
        .position(|n| n.eq_ignore_ascii_case(spec_trimmed))
    {
        return Ok(index);
    }
    if let Ok(index) = spec_trimmed.parse::<usize>() {
        if index < names.len() {
            return Ok(index);
        }
    }
    Err(Error::input(
        path,
        Some(header_line),
        format!(
            "{option} '{spec}' matches no column of the CSV header (columns: {}; \
             or give a 0-based index below {})",
            names
                .iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", "),
            names.len()
        ),
    ))
}

pub(super) fn plan(path: &Path, opts: &ImportOptions, reason: &str) -> Result<Plan> {
    let input = InputStream::open(path, Default::default())?;
    let compression = input.compression();
    let mut lines = LineReader::new(input, "CSV")?;
    let (header_line, header) = loop {
        match lines.next_line()? {
            None => {
                return Err(Error::input(
                    path,
                    None,
                    "input is empty: no CSV header row found",
                ))
            }
            Some((_, line)) if is_blank(line) => continue,
            Some((number, line)) => break (number, line.to_vec()),
        }
    };
    let delimiter = guess_delimiter(&header);
    let names = CsvFields::new(&header, delimiter)
        .map(|field| field.map(|f| String::from_utf8_lossy(&f).into_owned()))
        .collect::<std::result::Result<Vec<String>, _>>()
        .map_err(|message| line_error(path, header_line, message, &header))?;
    if names.len() < 2 {
        return Err(line_error(
            path,
            header_line,
            "a CSV header needs at least two columns (source and target)",
            &header,
        ));
    }

    let column = |spec: &Option<String>, option: &str, default: usize| match spec {
        Some(spec) => resolve_column(spec, option, &names, path, header_line),
        None => Ok(default),
    };
    let src = column(&opts.src_col, "--src-col", 0)?;
    let dst = column(&opts.dst_col, "--dst-col", 1)?;
    let named_weight = names
        .iter()
        .position(|n| n.trim().eq_ignore_ascii_case("weight"));
    let weight = match (opts.weighted, &opts.weight_col) {
        (Some(false), _) => None,
        (_, Some(spec)) => Some(resolve_column(
            spec,
            "--weight-col",
            &names,
            path,
            header_line,
        )?),
        (Some(true), None) => match named_weight {
            Some(index) => Some(index),
            None if names.len() > 2 => Some(2),
            None => {
                return Err(line_error(
                    path,
                    header_line,
                    "weights were asked for but the CSV header has only two columns; \
                     name the weight column with --weight-col",
                    &header,
                ))
            }
        },
        (None, None) => named_weight,
    };

    let mut what = format!(
        "CSV with a header row (source '{}', target '{}'",
        names[src], names[dst]
    );
    if let Some(w) = weight {
        what.push_str(&format!(", weight '{}'", names[w]));
    }
    what.push_str(match delimiter {
        b'\t' => "; tab-separated)",
        b';' => "; semicolon-separated)",
        _ => ")",
    });
    let layout = CsvLayout {
        path: path.to_path_buf(),
        delimiter,
        header_line,
        src,
        dst,
        weight,
    };
    Ok(Plan {
        jobs: vec![FileJob::Csv(layout)],
        description: describe(compression, &what, reason),
        directed: None,
        weighted: if weight.is_some() {
            Some(true)
        } else {
            opts.weighted
        },
        path: path.to_path_buf(),
    })
}

pub(super) struct CsvParser {
    lines: LineReader,
    ids: IdType,
    layout: CsvLayout,
}

impl CsvParser {
    pub(super) fn new(input: InputStream, ids: IdType, layout: CsvLayout) -> Result<Self> {
        let mut lines = LineReader::new(input, "CSV")?;
        while lines.line_number() < layout.header_line {
            if lines.next_line()?.is_none() {
                break;
            }
        }
        Ok(CsvParser { lines, ids, layout })
    }
}

/// Parses one data row into an edge.
fn parse_row(
    line: &[u8],
    layout: &CsvLayout,
    ids: IdType,
) -> std::result::Result<InputRecord, String> {
    let mut src = None;
    let mut dst = None;
    let mut weight = None;
    let last_needed = layout.last_needed_column();
    let mut columns = 0;
    for (index, field) in CsvFields::new(line, layout.delimiter)
        .enumerate()
        .take(last_needed + 1)
    {
        let field = field.map_err(str::to_string)?;
        columns = index + 1;
        if index == layout.src {
            src = Some(field.clone());
        }
        if index == layout.dst {
            dst = Some(field.clone());
        }
        if Some(index) == layout.weight {
            weight = Some(field);
        }
    }
    let (Some(src), Some(dst)) = (src, dst) else {
        return Err(format!(
            "expected at least {} columns, found {columns}",
            last_needed + 1
        ));
    };
    let src = parse_id(&src, ids).map_err(|e| e.into_message())?;
    let dst = parse_id(&dst, ids).map_err(|e| e.into_message())?;
    let weight = match layout.weight {
        None => None,
        Some(column) => match weight {
            None => {
                return Err(format!(
                    "missing weight (expected it in column {column}, 0-based)"
                ))
            }
            Some(field) if field.is_empty() => {
                return Err(format!(
                    "missing weight (column {column}, 0-based, is empty)"
                ))
            }
            Some(field) => Some(parse_weight(&field).map_err(|e| e.into_message())?),
        },
    };
    Ok(InputRecord::Edge { src, dst, weight })
}

impl FileParser for CsvParser {
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
            if is_blank(line) {
                continue;
            }
            match parse_row(line, &self.layout, self.ids) {
                Ok(record) => out.push(record),
                Err(message) => {
                    bad_lines.handle(line_error(&self.layout.path, line_number, &message, line))?
                }
            }
        }
        Ok(true)
    }
}
