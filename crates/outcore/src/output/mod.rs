//! Result files: one row per vertex, in ascending original-id order, keyed by original id.
//!
//! An [`AlgorithmResult`] holds its columns in dense-id order; users think in their own ids. The
//! writers walk the store's id map in original-id order ([`IdMap::for_each_by_original`], a
//! sequential read of `ids/by-original`) and look each vertex's values up by dense id, so the
//! output is sorted whatever ordering the store was imported with, and is written as it is
//! produced: memory is one buffer (text) or one row group (Parquet), never the whole output.
//!
//! Formats ([`OutputFormat`]):
//! * `text` — LDBC Graphalytics' result format, byte for byte: `vertex value [value...]`
//!   separated by single spaces, no header; values spelled as in [`format`](mod@format). Labels (WCC,
//!   CDLP) are printed as the label vertex's original id.
//! * `tsv` — tab separated with a header line `vertex<TAB>column...`.
//! * `csv` — comma separated with a header; string ids quoted (RFC 4180) when they need it.
//! * `parquet` (cargo feature `parquet`) — columns `vertex` (UINT_64, or UTF8 for string ids)
//!   then one per result column: hops as nullable INT64 with unreachable as null, counts as
//!   UINT_64, floats as DOUBLE (infinity stays infinity), labels of the vertex column's type.
//!   Snappy-compressed, in row groups of [`OutputOptions::row_group_rows`] rows.
//!
//! Text formats cannot hold every string id: an id with whitespace in `text`, or with a tab or
//! line break in `tsv`, is an error naming the id and pointing to `csv` or `parquet`.
//! Files get a `.gz` / `.zst` compression from their name (text formats), and appear only once
//! complete ([`sink::OutputFile`]).

pub mod format;
#[cfg(feature = "parquet")]
mod parquet;
pub mod sink;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use format::{format_float, format_hops, push_float, push_hops, UNREACHABLE_HOPS};

use crate::algo::{AlgorithmResult, ValueColumn};
use crate::error::{Error, IoContext, Result};
use crate::store::{IdMap, IdType, OriginalId, Store};
use sink::{Compression, OutputFile};

/// Result file formats (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Graphalytics `vertex value` lines (the default).
    Text,
    Tsv,
    Csv,
    /// Needs the `parquet` cargo feature.
    Parquet,
}

impl OutputFormat {
    pub const NAMES: &'static [&'static str] = &["text", "tsv", "csv", "parquet"];

    /// Parses a `--format` value; unknown names (and `parquet` in a build without it) are
    /// errors that list the choices.
    pub fn parse(name: &str) -> Result<OutputFormat> {
        let format = match name.trim().to_ascii_lowercase().as_str() {
            "text" | "txt" | "graphalytics" => OutputFormat::Text,
            "tsv" => OutputFormat::Tsv,
            "csv" => OutputFormat::Csv,
            "parquet" | "pq" => OutputFormat::Parquet,
            _ => {
                return Err(Error::invalid(format!(
                    "unknown output format '{name}' (available: {})",
                    Self::available_names().join(", ")
                )))
            }
        };
        if !format.is_available() {
            return Err(Error::invalid(format!(
                "output format '{name}' is not in this build of outcore (rebuild with the `parquet` cargo feature; available: {})",
                Self::available_names().join(", ")
            )));
        }
        Ok(format)
    }

    /// The format a file name suggests (`.csv`, `.tsv`, `.parquet`/`.pq`, `.txt`/`.out`, with an
    /// optional compression suffix), if any.
    pub fn from_path(path: &Path) -> Option<OutputFormat> {
        let (_, inner) = Compression::from_path(path);
        let extension = Path::new(&inner).extension()?.to_string_lossy().to_ascii_lowercase();
        match extension.as_str() {
            "csv" => Some(OutputFormat::Csv),
            "tsv" => Some(OutputFormat::Tsv),
            "parquet" | "pq" => Some(OutputFormat::Parquet),
            "txt" | "out" => Some(OutputFormat::Text),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Text => "text",
            OutputFormat::Tsv => "tsv",
            OutputFormat::Csv => "csv",
            OutputFormat::Parquet => "parquet",
        }
    }

    /// Whether this build can write the format.
    pub fn is_available(self) -> bool {
        self != OutputFormat::Parquet || cfg!(feature = "parquet")
    }

    fn available_names() -> Vec<&'static str> {
        [OutputFormat::Text, OutputFormat::Tsv, OutputFormat::Csv, OutputFormat::Parquet]
            .into_iter()
            .filter(|f| f.is_available())
            .map(|f| f.name())
            .collect()
    }
}

/// Where a result goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputTarget {
    Stdout,
    File(PathBuf),
}

impl OutputTarget {
    /// `-` is standard output, anything else a file path.
    pub fn from_arg(arg: &str) -> OutputTarget {
        if arg == "-" {
            OutputTarget::Stdout
        } else {
            OutputTarget::File(PathBuf::from(arg))
        }
    }

    fn describe(&self) -> String {
        match self {
            OutputTarget::Stdout => "standard output".to_string(),
            OutputTarget::File(path) => path.display().to_string(),
        }
    }
}

/// Knobs of the writers; `Default`: header on, 1 Mi rows per Parquet row group, 256 Ki rows
/// formatted together in the text formats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputOptions {
    /// Header line in `tsv` and `csv` (`text` never has one: Graphalytics files do not).
    pub header: bool,
    /// Rows per Parquet row group: the writer holds one group's values in memory.
    pub row_group_rows: usize,
    /// Rows the text formats (`text`, `tsv`, `csv`) format together, on all threads, while the
    /// rows before them are written: memory is about two such chunks of text.
    pub chunk_rows: u64,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions { header: true, row_group_rows: 1 << 20, chunk_rows: 1 << 18 }
    }
}

/// Writes `result` for every vertex of `store`, sorted by original id, with default options.
/// Returns the number of rows (= vertices) written.
pub fn write_result(
    store: &Store,
    result: &AlgorithmResult,
    target: &OutputTarget,
    format: OutputFormat,
) -> Result<u64> {
    write_result_with(store, result, target, format, &OutputOptions::default())
}

/// [`write_result`] with explicit options.
pub fn write_result_with(
    store: &Store,
    result: &AlgorithmResult,
    target: &OutputTarget,
    format: OutputFormat,
    options: &OutputOptions,
) -> Result<u64> {
    if !format.is_available() {
        return Err(Error::invalid("parquet output needs outcore built with the `parquet` cargo feature"));
    }
    let ids = store.ids()?;
    for (name, column) in &result.columns {
        if column.len() as u64 != ids.len() {
            return Err(Error::invalid(format!(
                "result column '{name}' has {} values but the store has {} vertices",
                column.len(),
                ids.len()
            )));
        }
    }
    let what = target.describe();
    match target {
        OutputTarget::Stdout => {
            let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout());
            let rows = write_to(&ids, result, format, options, &mut out, &what)?;
            out.flush().context(|| format!("writing {what}"))?;
            Ok(rows)
        }
        OutputTarget::File(path) => {
            let (compression, _) = Compression::from_path(path);
            if format == OutputFormat::Parquet && compression != Compression::None {
                return Err(Error::invalid(format!(
                    "{}: parquet files are compressed inside; drop the .gz/.zst suffix",
                    path.display()
                )));
            }
            let mut file = OutputFile::create_with(path, compression)?;
            let rows = write_to(&ids, result, format, options, &mut file, &what)?;
            file.finish()?;
            Ok(rows)
        }
    }
}

fn write_to<W: Write + Send>(
    ids: &IdMap,
    result: &AlgorithmResult,
    format: OutputFormat,
    options: &OutputOptions,
    out: &mut W,
    what: &str,
) -> Result<u64> {
    match format {
        OutputFormat::Text => write_delimited(ids, result, Style::Text, options, out, what),
        OutputFormat::Tsv => write_delimited(ids, result, Style::Tsv, options, out, what),
        OutputFormat::Csv => write_delimited(ids, result, Style::Csv, options, out, what),
        #[cfg(feature = "parquet")]
        OutputFormat::Parquet => parquet::write(ids, result, out, options.row_group_rows.max(1), what),
        #[cfg(not(feature = "parquet"))]
        OutputFormat::Parquet => {
            Err(Error::invalid("parquet output needs outcore built with the `parquet` cargo feature"))
        }
    }
}

/// The text of one value of a column (dense id `dense`), spelled as in `text` output: what the
/// validator and the CLI summary print.
pub fn format_value(ids: &IdMap, column: &ValueColumn, dense: u64) -> Result<String> {
    let index = dense as usize;
    if index >= column.len() {
        return Err(Error::invalid(format!("dense id {dense} out of range (column has {} values)", column.len())));
    }
    Ok(match column {
        ValueColumn::Hops(v) => format_hops(v[index]),
        ValueColumn::Float(v) => format_float(v[index]),
        ValueColumn::Count(v) => v[index].to_string(),
        ValueColumn::Label(v) => ids.original(v[index])?.to_string(),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Text,
    Tsv,
    Csv,
}

impl Style {
    fn separator(self) -> u8 {
        match self {
            Style::Text => b' ',
            Style::Tsv => b'\t',
            Style::Csv => b',',
        }
    }
}

/// Rows are formatted per chunk of [`IdMap::for_each_chunk_by_original`]
/// ([`OutputOptions::chunk_rows`]): each chunk is cut into [`FORMAT_SLICES`] slices formatted on
/// all threads (formatting floats as `%.15e` is most of a text result's cost), then written in
/// order while the next chunk is formatted. Chunks are large, so that threads wake a few times
/// per output, not once per thousand rows: with 64 Ki-row batches collected row by row on one
/// thread, waking, sleeping and collecting were half of the 0.13 s of writing a BFS's 2.4 M
/// lines on RMAT-22.
const FORMAT_SLICES: usize = 16;

fn write_delimited<W: Write + Send>(
    ids: &IdMap,
    result: &AlgorithmResult,
    style: Style,
    options: &OutputOptions,
    out: &mut W,
    what: &str,
) -> Result<u64> {
    // Graphalytics text files have no header line.
    if options.header && style != Style::Text {
        out.write_all(&header_line(result, style)?).context(|| format!("writing {what}"))?;
    }
    let table = label_table(ids, result)?;
    // One label cache per slice, kept across chunks (string ids only).
    let mut labels: Vec<LabelNames> = (0..FORMAT_SLICES).map(|_| LabelNames::new(table.as_deref())).collect();
    let mut rows = 0u64;
    // The text of the chunk before, written while the next one is formatted.
    let mut formatted: Vec<Result<Vec<u8>>> = Vec::new();
    let write = |texts: Vec<Result<Vec<u8>>>, out: &mut W| -> Result<()> {
        for text in texts {
            out.write_all(&text?).context(|| format!("writing {what}"))?;
        }
        Ok(())
    };
    ids.for_each_chunk_by_original(options.chunk_rows, |chunk| {
        // String ids are looked up here, one by one; u64 ids come with the chunk.
        let strings: Vec<OriginalId> = match chunk.originals {
            Some(_) => Vec::new(),
            None => chunk.dense.iter().map(|&d| ids.original(d)).collect::<Result<_>>()?,
        };
        let per_slice = chunk.dense.len().div_ceil(FORMAT_SLICES).max(1);
        let slice_ids = |i: usize| {
            let range = i * per_slice..((i + 1) * per_slice).min(chunk.dense.len());
            let originals = match chunk.originals {
                Some(u64s) => RowIds::U64(&u64s[range.clone()]),
                None => RowIds::Strings(&strings[range.clone()]),
            };
            (&chunk.dense[range], originals)
        };
        let before = std::mem::take(&mut formatted);
        let slices = chunk.dense.len().div_ceil(per_slice);
        let (written, texts) = rayon::join(
            || write(before, out),
            || {
                labels[..slices]
                    .par_iter_mut()
                    .enumerate()
                    .map(|(i, labels)| {
                        let (dense, originals) = slice_ids(i);
                        format_rows(ids, result, style, dense, originals, labels)
                    })
                    .collect::<Vec<_>>()
            },
        );
        written?;
        formatted = texts;
        rows += chunk.dense.len() as u64;
        Ok(())
    })?;
    write(std::mem::take(&mut formatted), out)?;
    Ok(rows)
}

/// The header line of `tsv` and `csv`: `vertex` and the column names.
fn header_line(result: &AlgorithmResult, style: Style) -> Result<Vec<u8>> {
    let mut buffer = Vec::new();
    push_text(&mut buffer, "vertex", style, "column name")?;
    for (name, _) in &result.columns {
        buffer.push(style.separator());
        push_text(&mut buffer, name, style, "column name")?;
    }
    buffer.push(b'\n');
    Ok(buffer)
}

/// The original ids of a slice of rows.
#[derive(Clone, Copy)]
enum RowIds<'a> {
    U64(&'a [u64]),
    Strings(&'a [OriginalId]),
}

/// The text of the rows `dense` (original ids `originals`, row for row), one line each.
fn format_rows(
    ids: &IdMap,
    result: &AlgorithmResult,
    style: Style,
    dense: &[u64],
    originals: RowIds<'_>,
    labels: &mut LabelNames<'_>,
) -> Result<Vec<u8>> {
    let separator = style.separator();
    let mut buffer: Vec<u8> = Vec::with_capacity(dense.len() * 32);
    let mut integers = itoa::Buffer::new();
    for (row, &dense) in dense.iter().enumerate() {
        match originals {
            RowIds::U64(u64s) => buffer.extend_from_slice(integers.format(u64s[row]).as_bytes()),
            RowIds::Strings(strings) => push_id(&mut buffer, &strings[row], style, &mut integers)?,
        }
        let index = dense as usize;
        for (_, column) in &result.columns {
            buffer.push(separator);
            match column {
                ValueColumn::Hops(v) => push_hops(&mut buffer, v[index]),
                ValueColumn::Float(v) => push_float(&mut buffer, v[index]),
                ValueColumn::Count(v) => buffer.extend_from_slice(integers.format(v[index]).as_bytes()),
                ValueColumn::Label(v) => match labels.table {
                    Some(table) => {
                        let label = table_lookup(table, v[index])?;
                        buffer.extend_from_slice(integers.format(label).as_bytes());
                    }
                    None => push_id(&mut buffer, labels.get(ids, v[index])?, style, &mut integers)?,
                },
            }
        }
        buffer.push(b'\n');
    }
    Ok(buffer)
}

fn push_id(out: &mut Vec<u8>, id: &OriginalId, style: Style, integers: &mut itoa::Buffer) -> Result<()> {
    match id {
        OriginalId::U64(v) => {
            out.extend_from_slice(integers.format(*v).as_bytes());
            Ok(())
        }
        OriginalId::Str(s) => push_text(out, s, style, "vertex id"),
    }
}

/// Appends a string field, quoted for CSV when needed, refused where the format cannot hold it.
fn push_text(out: &mut Vec<u8>, text: &str, style: Style, what: &str) -> Result<()> {
    match style {
        Style::Text => {
            if text.is_empty() || text.chars().any(char::is_whitespace) {
                return Err(Error::invalid(format!(
                    "{what} {text:?} is empty or contains whitespace, which the text format cannot hold; use --format csv or parquet"
                )));
            }
            out.extend_from_slice(text.as_bytes());
        }
        Style::Tsv => {
            if text.contains(['\t', '\n', '\r']) {
                return Err(Error::invalid(format!(
                    "{what} {text:?} contains a tab or line break, which tsv cannot hold; use --format csv or parquet"
                )));
            }
            out.extend_from_slice(text.as_bytes());
        }
        Style::Csv => {
            let needs_quotes = text.is_empty()
                || text.contains([',', '"', '\n', '\r'])
                || text.starts_with(char::is_whitespace)
                || text.ends_with(char::is_whitespace);
            if needs_quotes {
                out.push(b'"');
                for part in text.split('"').enumerate() {
                    if part.0 > 0 {
                        out.extend_from_slice(b"\"\"");
                    }
                    out.extend_from_slice(part.1.as_bytes());
                }
                out.push(b'"');
            } else {
                out.extend_from_slice(text.as_bytes());
            }
        }
    }
    Ok(())
}

/// Every vertex's original id in dense order, read once, when `result` has a label column and
/// the store's ids are u64s (None otherwise). A label column may hold as many distinct labels
/// as vertices (bfs-parents' parents), and a lookup per row was a read of `ids/original` each:
/// 0.8 s of a 1.2 s bfs-parents run on RMAT-20. The table is 8 bytes a vertex, the size of one
/// result column, read sequentially.
pub(crate) fn label_table(ids: &IdMap, result: &AlgorithmResult) -> Result<Option<Vec<u64>>> {
    let has_labels = result.columns.iter().any(|(_, c)| matches!(c, ValueColumn::Label(_)));
    match ids.id_type() {
        IdType::U64 if has_labels => ids.all_u64().map(Some),
        _ => Ok(None),
    }
}

/// The original id of label vertex `dense` in a [`label_table`].
pub(crate) fn table_lookup(table: &[u64], dense: u64) -> Result<u64> {
    table.get(dense as usize).copied().ok_or_else(|| Error::invalid(format!("label {dense} could not be resolved")))
}

/// Original ids of label vertices: from the [`label_table`] of a u64 store, else (string ids)
/// with a small direct-mapped cache, since label columns (WCC, CDLP) repeat few distinct
/// labels and each uncached lookup is a read of the id files.
pub(crate) struct LabelNames<'a> {
    pub(crate) table: Option<&'a [u64]>,
    slots: Vec<Option<(u64, OriginalId)>>,
}

impl<'a> LabelNames<'a> {
    const SLOTS: usize = 4096;

    pub(crate) fn new(table: Option<&'a [u64]>) -> Self {
        let slots = if table.is_some() { Vec::new() } else { vec![None; Self::SLOTS] };
        LabelNames { table, slots }
    }

    pub(crate) fn get(&mut self, ids: &IdMap, dense: u64) -> Result<&OriginalId> {
        let slot = (dense % Self::SLOTS as u64) as usize;
        let hit = matches!(&self.slots[slot], Some((d, _)) if *d == dense);
        if !hit {
            self.slots[slot] = Some((dense, ids.original(dense)?));
        }
        match &self.slots[slot] {
            Some((_, id)) => Ok(id),
            None => Err(Error::invalid(format!("label {dense} could not be resolved"))),
        }
    }
}
