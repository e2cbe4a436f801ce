//! `--format auto`: choosing a format from a file's name and its first bytes.
//!
//! Names are cheap but unreliable (`graph.txt` may be anything), content is reliable but only
//! for some formats (a `%%MatrixMarket` banner is unmistakable, a binary file has NUL bytes, a
//! CSV header has words where an edge list has numbers). So: extensions that only one format
//! uses decide alone (`.properties`, `.v`, `.e`, `.bin32`, `.bin64`, `.parquet`); Parquet's
//! `PAR1` magic bytes decide whatever the name; a Matrix Market banner
//! wins over any name; otherwise the first data line decides between an edge list and a CSV
//! header, and something that is neither is an error asking for `--format`, not a guess. The
//! reason for every choice ends up in the format description the user sees.

use std::path::Path;

use super::compress::read_head;
use super::csv::{guess_delimiter, CsvFields};
use super::logical_extension;
use super::matrix_market::is_banner;
use super::text::{looks_binary, parse_u64, quote, trim_line_end, Fields};
use crate::error::{Error, Result};
use crate::ingest::{ImportOptions, InputFormat};
use crate::store::IdType;

/// How much of a file (decompressed) detection looks at.
const SAMPLE_BYTES: usize = 64 * 1024;

/// A format chosen for a file, with the reason in words.
pub(super) struct Detection {
    pub(super) format: InputFormat,
    pub(super) reason: String,
}

fn chosen(format: InputFormat, reason: impl Into<String>) -> Result<Detection> {
    Ok(Detection { format, reason: reason.into() })
}

/// The lines of the sample that carry data (not blank, not `#`/`%` comments), with their
/// 1-based numbers. The last line is dropped when the sample cut it short.
fn data_lines(sample: &[u8], complete: bool) -> Vec<(u64, &[u8])> {
    let mut lines: Vec<&[u8]> = sample.split(|&b| b == b'\n').collect();
    if !complete && lines.len() > 1 {
        lines.pop();
    }
    lines
        .into_iter()
        .enumerate()
        .filter(|(_, line)| match Fields::new(line).next() {
            None => false,
            Some(first) => !matches!(first[0], b'#' | b'%'),
        })
        .map(|(i, line)| (i as u64 + 1, trim_line_end(line)))
        .take(2)
        .collect()
}

/// Does the line look like `src dst ...` with ids of the chosen type?
fn is_edge_line(line: &[u8], ids: IdType) -> bool {
    let mut fields = Fields::new(line);
    match (fields.next(), fields.next()) {
        (Some(src), Some(dst)) => ids == IdType::String || (parse_u64(src).is_some() && parse_u64(dst).is_some()),
        _ => false,
    }
}

/// Does the line look like a CSV header: at least two named columns, some not numbers?
fn is_csv_header(line: &[u8]) -> bool {
    let delimiter = guess_delimiter(line);
    let fields: Vec<_> = CsvFields::new(line, delimiter).collect();
    fields.len() >= 2
        && fields.iter().all(|f| f.as_ref().is_ok_and(|f| !f.is_empty()))
        && fields.iter().any(|f| f.as_ref().is_ok_and(|f| parse_u64(f).is_none()))
}

/// Does the file itself (not its decompressed content) start with Parquet's magic `PAR1`?
fn has_parquet_magic(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok()
        && &magic == b"PAR1"
}

pub(super) fn detect(path: &Path, opts: &ImportOptions) -> Result<Detection> {
    let extension = logical_extension(path);
    match extension.as_str() {
        "properties" => return chosen(InputFormat::Graphalytics, "detected from the .properties extension"),
        "v" | "e" => return chosen(InputFormat::Graphalytics, format!("detected from the .{extension} extension")),
        "bin32" => return chosen(InputFormat::Bin32, "detected from the .bin32 extension"),
        "bin64" => return chosen(InputFormat::Bin64, "detected from the .bin64 extension"),
        "parquet" | "pq" => return chosen(InputFormat::Parquet, format!("detected from the .{extension} extension")),
        _ => {}
    }
    if has_parquet_magic(path) {
        return chosen(InputFormat::Parquet, "detected from the PAR1 magic bytes");
    }

    let (sample, _) = read_head(path, SAMPLE_BYTES)?;
    let complete = sample.len() < SAMPLE_BYTES;
    let sample = sample.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&sample); // UTF-8 byte order mark
    let first_line = sample.split(|&b| b == b'\n').next().unwrap_or_default();
    if is_banner(first_line) {
        return chosen(InputFormat::MatrixMarket, "detected from the %%MatrixMarket header");
    }
    if looks_binary(sample) {
        return Err(Error::input(
            path,
            None,
            "looks like binary data, not text; for raw little-endian id pairs use \
             --format bin32 or --format bin64 (or name the file .bin32/.bin64)",
        ));
    }
    if matches!(extension.as_str(), "mtx" | "mm") {
        return Err(Error::input(
            path,
            Some(1),
            format!(
                "has the .{extension} extension but does not start with a %%MatrixMarket header: {}",
                quote(first_line)
            ),
        ));
    }

    let lines = data_lines(sample, complete);
    let Some(&(first_number, first)) = lines.first() else {
        // Nothing but comments in the sample (or an empty file): reading it as an edge list
        // either finds data further on or reports an empty input.
        return chosen(InputFormat::EdgeList, "no data lines to detect from; read as an edge list");
    };

    if extension == "csv" {
        return if is_csv_header(first) && !is_edge_line(first, IdType::U64) {
            chosen(InputFormat::Csv, "detected from the .csv extension and a header row")
        } else {
            chosen(InputFormat::EdgeList, "a .csv file without a header row, read as a comma-separated edge list")
        };
    }

    if is_edge_line(first, opts.ids) {
        return chosen(InputFormat::EdgeList, "detected from content");
    }
    let next_is_edge = lines.get(1).is_some_and(|&(_, line)| is_edge_line(line, opts.ids));
    if is_csv_header(first) && next_is_edge {
        return chosen(InputFormat::Csv, "detected from content: a header row followed by data rows");
    }
    Err(Error::input(
        path,
        Some(first_number),
        format!(
            "cannot detect the input format: the first data line is neither an edge list \
             ('src dst [weight]'{}) nor a CSV header followed by data; choose one with --format \
             ({}): {}",
            if opts.ids == IdType::U64 { " with numeric ids; use --ids string for names" } else { "" },
            InputFormat::NAMES.join(", "),
            quote(first)
        ),
    ))
}
