//! Import: from edge-list files (or any record source) to a complete store, in bounded memory.
//!
//! ```text
//! inputs --parse--> InputRecord batches --(pipeline: external sorts)--> id map + csr-out + csr-in
//! ```
//! * [`parse`] turns files (SNAP/TSV, CSV, Matrix Market, Graphalytics, binary, Parquet;
//!   gzip/zstd) into
//!   [`InputRecord`]s, naming file and line in every error.
//! * [`extsort`] is a generic external merge sort whose runs are sized from the memory budget.
//! * [`pipeline`] builds the store in memory (rank map, counting sorts, no temporary file)
//!   while that fits the budget, else maps original ids to dense ids by sort-merge joins
//!   (never a hash map of all ids) and sorts arcs externally for `csr-out` and `csr-in`; the
//!   input is read once either way, and the store goes through
//!   [`StoreBuilder`](crate::store::StoreBuilder), which commits it atomically.

pub mod extsort;
pub mod parse;
pub mod pipeline;

use std::path::PathBuf;

use crate::error::Result;
use crate::runtime::MemoryBudget;
use crate::store::IdType;

pub use pipeline::{import, import_records, ImportReport};

/// Input formats (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// Detect from file names and content, and say what was chosen.
    Auto,
    /// SNAP/TSV edge lists: `src dst [weight]`, `#`/`%` comments, whitespace or comma separated.
    EdgeList,
    /// CSV with a header row; columns chosen with `--src-col/--dst-col/--weight-col`.
    Csv,
    /// Matrix Market coordinate format (general/symmetric; pattern/real/integer).
    MatrixMarket,
    /// LDBC Graphalytics: a `.properties` file, or a `.v` + `.e` pair.
    Graphalytics,
    /// Raw little-endian u32 pairs.
    Bin32,
    /// Raw little-endian u64 pairs.
    Bin64,
    /// Points for k-means, one `x_1 ... x_d` per line: point i gets an arc i -> j of weight x_j.
    Points,
    /// A Parquet table; columns chosen like CSV's (needs the `parquet` feature).
    Parquet,
}

impl InputFormat {
    pub const NAMES: &'static [&'static str] =
        &["auto", "edgelist", "csv", "mtx", "graphalytics", "bin32", "bin64", "points", "parquet"];

    pub fn parse(name: &str) -> Result<InputFormat> {
        Ok(match name {
            "auto" => InputFormat::Auto,
            "edgelist" | "snap" | "tsv" => InputFormat::EdgeList,
            "csv" => InputFormat::Csv,
            "mtx" | "matrix-market" => InputFormat::MatrixMarket,
            "graphalytics" | "ldbc" => InputFormat::Graphalytics,
            "bin32" => InputFormat::Bin32,
            "bin64" => InputFormat::Bin64,
            "points" => InputFormat::Points,
            "parquet" => InputFormat::Parquet,
            other => {
                return Err(crate::Error::invalid(format!(
                    "unknown input format '{other}' (available: {})",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }
}

/// Options of `outcore import`.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub format: InputFormat,
    /// Store both directions of every edge. `None`: take it from the input when it says
    /// (Graphalytics `directed`, Matrix Market `symmetric`), else directed.
    pub undirected: Option<bool>,
    /// Read a weight column. `None`: weighted if the input declares weights (Graphalytics,
    /// Matrix Market real/integer), else unweighted.
    pub weighted: Option<bool>,
    /// Keep one arc per (source, target) pair: the one with the smallest weight.
    pub dedup: bool,
    pub drop_self_loops: bool,
    pub ids: IdType,
    pub memory: MemoryBudget,
    /// Count, skip and report malformed lines instead of failing on the first.
    pub skip_bad_lines: bool,
    /// CSV and Parquet column names (or 0-based indices as text).
    pub src_col: Option<String>,
    pub dst_col: Option<String>,
    pub weight_col: Option<String>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            format: InputFormat::Auto,
            undirected: None,
            weighted: None,
            dedup: false,
            drop_self_loops: false,
            ids: IdType::U64,
            memory: MemoryBudget::default_for_machine(),
            skip_bad_lines: false,
            src_col: None,
            dst_col: None,
            weight_col: None,
        }
    }
}

/// An original id as parsed (strings only in `--ids string` mode).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RawId {
    U64(u64),
    Str(String),
}

/// One parsed record.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRecord {
    /// An edge; `weight` is `None` when the input has no weight for it.
    Edge { src: RawId, dst: RawId, weight: Option<f64> },
    /// A vertex that must exist even if isolated (`.v` files, Matrix Market dimensions).
    Vertex(RawId),
}

/// What the inputs declare about the graph, when they do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputInfo {
    /// Human description of the format chosen, e.g. "SNAP edge list (detected from content)".
    pub format_description: String,
    pub directed: Option<bool>,
    pub weighted: Option<bool>,
    /// Total input bytes (compressed), for progress.
    pub total_bytes: u64,
    /// The files actually read.
    pub files: Vec<PathBuf>,
}

/// A stream of parsed records, read in batches.
pub trait RecordSource: Send {
    /// Appends up to `max` records to `out`; returns `false` once the input is exhausted.
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize) -> Result<bool>;
    /// Input bytes consumed so far (for progress and bytes/s).
    fn bytes_consumed(&self) -> u64;
    /// Lines skipped as malformed so far (with `skip_bad_lines`), with up to a few examples.
    fn skipped_lines(&self) -> (u64, Vec<String>) {
        (0, Vec::new())
    }
}
