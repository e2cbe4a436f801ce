//! Input parsers: from the files a user has to a stream of [`InputRecord`]s.
//!
//! Graphs arrive in whatever format the tool that made them wrote: SNAP/TSV edge lists, CSV
//! exports with a header, Matrix Market files from sparse-matrix collections, LDBC Graphalytics
//! `.v`/`.e` pairs, raw binary id pairs, Parquet tables (feature `parquet`); often gzip- or
//! zstd-compressed. [`open_inputs`] looks
//! at every input once (its name and its first bytes), decides how to read it and says why in
//! [`InputInfo::format_description`], then returns a [`RecordSource`] that reads the inputs in
//! order, one file at a time, in batches.
//!
//! Three promises shape the code:
//! * **Constant memory.** Files are streamed through fixed buffers and never read whole; a
//!   Matrix Market file's vertex range is generated lazily, batch by batch.
//! * **Speed.** Imports of billions of lines are bounded by parsing, so the text hot path works
//!   on byte slices of a large buffer, with a hand-written integer parser and no allocation per
//!   line (see [`text`]).
//! * **Errors a user can act on.** Every problem names the file, and for a bad line its 1-based
//!   number and text; with `--skip-bad-lines` malformed lines are counted and a few examples
//!   kept instead. Damage that is not a line (a truncated compressed stream, a binary file with
//!   a torn last pair, a Matrix Market file shorter than its size line says) always fails.
//!
//! Layout: [`detect`] chooses formats, [`compress`] opens files and undoes gzip/zstd, [`text`]
//! holds the line reader and the field parsers, and each format has its own module that turns
//! a file into a [`FileJob`] (at planning time) and into records (at reading time).

mod binary;
mod compress;
mod csv;
mod detect;
mod edgelist;
mod graphalytics;
mod matrix_market;
#[cfg(feature = "parquet")]
mod parquet_file;
mod points;
mod text;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{ImportOptions, InputFormat, InputInfo, InputRecord, RecordSource};
use crate::error::{Error, Result};
use crate::store::IdType;

pub use compress::Compression;

/// How many examples of skipped lines are kept for the report.
const MAX_SKIPPED_EXAMPLES: usize = 10;

/// Opens the inputs, decides their formats, and returns a record source reading all of them in
/// order together with what the inputs declare about the graph.
///
/// Nothing but the first bytes of each file is read here (and small `.properties` files), so
/// a format, a missing file or a bad header is reported before any work is done.
pub fn open_inputs(inputs: &[PathBuf], opts: &ImportOptions) -> Result<(Box<dyn RecordSource>, InputInfo)> {
    if inputs.is_empty() {
        return Err(Error::invalid("no input files given"));
    }
    for path in inputs {
        compress::check_input_file(path)?;
    }

    let mut plans = Vec::new();
    let mut taken = vec![false; inputs.len()];
    for index in 0..inputs.len() {
        if taken[index] {
            continue;
        }
        taken[index] = true;
        plans.push(plan_input(index, inputs, &mut taken, opts)?);
    }

    let info = merge_plans(&plans, opts)?;
    let jobs: VecDeque<FileJob> = plans.into_iter().flat_map(|plan| plan.jobs).collect();
    let source = InputChain {
        jobs,
        current: None,
        ids: opts.ids,
        bytes_read: Arc::new(AtomicU64::new(0)),
        bad_lines: BadLines::new(opts.skip_bad_lines),
        records: 0,
        first_input: inputs[0].clone(),
        finished: false,
    };
    Ok((Box::new(source), info))
}

/// How one input (or one group of inputs, like a `.v` + `.e` pair) is read.
struct Plan {
    jobs: Vec<FileJob>,
    /// What was chosen and why, e.g. "Matrix Market coordinate real symmetric (detected from
    /// the %%MatrixMarket header)".
    description: String,
    directed: Option<bool>,
    weighted: Option<bool>,
    /// The file the plan is about, for messages.
    path: PathBuf,
}

/// One file to read, and how.
enum FileJob {
    /// `src dst [weight]` lines; the weight (when read) is field `weight_field` (0-based).
    EdgeList {
        path: PathBuf,
        weight_field: Option<usize>,
    },
    /// One vertex id per line (Graphalytics `.v`).
    VertexList {
        path: PathBuf,
    },
    Csv(csv::CsvLayout),
    MatrixMarket {
        path: PathBuf,
        read_weights: bool,
    },
    Binary {
        path: PathBuf,
        id_bytes: usize,
    },
    /// One point per line (`--format points`, k-means input).
    Points {
        path: PathBuf,
    },
    /// Edge columns of a Parquet file, read row group by row group.
    #[cfg(feature = "parquet")]
    Parquet(parquet_file::ParquetLayout),
}

impl FileJob {
    fn path(&self) -> &Path {
        match self {
            FileJob::EdgeList { path, .. }
            | FileJob::VertexList { path }
            | FileJob::MatrixMarket { path, .. }
            | FileJob::Binary { path, .. }
            | FileJob::Points { path } => path,
            FileJob::Csv(layout) => &layout.path,
            #[cfg(feature = "parquet")]
            FileJob::Parquet(layout) => &layout.path,
        }
    }

    fn open(&self, ids: IdType, bytes_read: &Arc<AtomicU64>) -> Result<Box<dyn FileParser>> {
        #[cfg(feature = "parquet")]
        if let FileJob::Parquet(layout) = self {
            // Parquet needs its footer first: read from the file itself, not a byte stream.
            return Ok(Box::new(parquet_file::ParquetParser::new(layout.clone(), ids, Arc::clone(bytes_read))?));
        }
        let input = compress::InputStream::open(self.path(), Arc::clone(bytes_read))?;
        Ok(match self {
            FileJob::EdgeList { weight_field, .. } => {
                Box::new(edgelist::EdgeListParser::new(input, ids, *weight_field)?)
            }
            FileJob::VertexList { .. } => Box::new(edgelist::VertexListParser::new(input, ids)?),
            FileJob::Csv(layout) => Box::new(csv::CsvParser::new(input, ids, layout.clone())?),
            FileJob::MatrixMarket { read_weights, .. } => {
                Box::new(matrix_market::MatrixMarketParser::new(input, ids, *read_weights)?)
            }
            FileJob::Binary { id_bytes, .. } => Box::new(binary::BinaryParser::new(input, ids, *id_bytes)),
            FileJob::Points { .. } => Box::new(points::PointsParser::new(input)?),
            #[cfg(feature = "parquet")]
            FileJob::Parquet(_) => unreachable!("Parquet files are opened above"),
        })
    }
}

/// Reads the records of one file.
trait FileParser: Send {
    /// Appends up to `max` records to `out`; `Ok(false)` once the file is exhausted.
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize, bad_lines: &mut BadLines) -> Result<bool>;
}

/// Malformed lines: fail on the first, or count them and keep a few examples.
pub(crate) struct BadLines {
    skip: bool,
    count: u64,
    examples: Vec<String>,
}

impl BadLines {
    fn new(skip: bool) -> BadLines {
        BadLines { skip, count: 0, examples: Vec::new() }
    }

    /// Returns `error` unless bad lines are skipped, in which case it is counted and, while
    /// there is room, kept as an example ("file:line: message: text").
    pub(crate) fn handle(&mut self, error: Error) -> Result<()> {
        if !self.skip {
            return Err(error);
        }
        self.count += 1;
        if self.examples.len() < MAX_SKIPPED_EXAMPLES {
            self.examples.push(error.to_string());
        }
        Ok(())
    }
}

/// Decides how to read `inputs[index]`, possibly together with later inputs it belongs with
/// (marked in `taken`).
fn plan_input(index: usize, inputs: &[PathBuf], taken: &mut [bool], opts: &ImportOptions) -> Result<Plan> {
    let path = &inputs[index];
    let (format, reason) = match opts.format {
        InputFormat::Auto => {
            let detection = detect::detect(path, opts)?;
            (detection.format, detection.reason)
        }
        given => (given, "as given by --format".to_string()),
    };
    match format {
        InputFormat::EdgeList => edgelist::plan(path, opts, &reason),
        InputFormat::Csv => csv::plan(path, opts, &reason),
        InputFormat::MatrixMarket => matrix_market::plan(path, opts, &reason),
        InputFormat::Graphalytics => graphalytics::plan(index, inputs, taken, opts, &reason),
        InputFormat::Bin32 => binary::plan(path, opts, 4, &reason),
        InputFormat::Bin64 => binary::plan(path, opts, 8, &reason),
        InputFormat::Points if inputs.len() > 1 => {
            Err(Error::invalid("the points format reads one input file (points are numbered 0, 1, ... in it)"))
        }
        InputFormat::Points => points::plan(path, opts, &reason),
        #[cfg(feature = "parquet")]
        InputFormat::Parquet => parquet_file::plan(path, opts, &reason),
        #[cfg(not(feature = "parquet"))]
        InputFormat::Parquet => Err(Error::input(
            path,
            None,
            "this build of outcore reads no Parquet (it was built without the `parquet` feature); \
             rebuild with --features parquet, or read the file with the Python package",
        )),
        InputFormat::Auto => Err(Error::invalid("format detection returned 'auto'")),
    }
}

/// Combines what the inputs declare; inputs that contradict each other on direction are an
/// error unless the user decided with `--undirected`/`--directed`.
fn merge_plans(plans: &[Plan], opts: &ImportOptions) -> Result<InputInfo> {
    let mut directed: Option<(bool, &Path)> = None;
    let mut conflict = false;
    for plan in plans {
        if let Some(d) = plan.directed {
            match directed {
                None => directed = Some((d, &plan.path)),
                Some((earlier, earlier_path)) if earlier != d => {
                    if opts.undirected.is_none() {
                        let word = |d: bool| if d { "directed" } else { "undirected" };
                        return Err(Error::invalid(format!(
                            "the inputs disagree on direction: {} is {} but {} is {}; \
                             pass --undirected to treat all as undirected, or import them separately",
                            earlier_path.display(),
                            word(earlier),
                            plan.path.display(),
                            word(d)
                        )));
                    }
                    conflict = true;
                }
                Some(_) => {}
            }
        }
    }
    let weighted = if plans.iter().any(|p| p.weighted == Some(true)) {
        Some(true)
    } else if plans.iter().any(|p| p.weighted == Some(false)) {
        Some(false)
    } else {
        None
    };

    let mut descriptions: Vec<&str> = Vec::new();
    for plan in plans {
        if !descriptions.contains(&plan.description.as_str()) {
            descriptions.push(&plan.description);
        }
    }
    let mut format_description = descriptions.join("; ");
    let file_count: usize = plans.iter().map(|p| p.jobs.len()).sum();
    if descriptions.len() == 1 && plans.len() > 1 {
        format_description.push_str(&format!(" [{} inputs]", plans.len()));
    }

    let mut files = Vec::with_capacity(file_count);
    let mut total_bytes = 0;
    for job in plans.iter().flat_map(|p| &p.jobs) {
        let path = job.path();
        let size =
            std::fs::metadata(path).map_err(|e| Error::input(path, None, format!("cannot read file size: {e}")))?.len();
        total_bytes += size;
        files.push(path.to_path_buf());
    }

    Ok(InputInfo {
        format_description,
        directed: if conflict { None } else { directed.map(|(d, _)| d) },
        weighted,
        total_bytes,
        files,
    })
}

/// Reads the planned files one after the other.
struct InputChain {
    jobs: VecDeque<FileJob>,
    current: Option<Box<dyn FileParser>>,
    ids: IdType,
    /// Raw (compressed) bytes read from all files so far.
    bytes_read: Arc<AtomicU64>,
    bad_lines: BadLines,
    /// Records produced so far, to recognise an empty input.
    records: u64,
    first_input: PathBuf,
    finished: bool,
}

impl RecordSource for InputChain {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize) -> Result<bool> {
        let mut appended = 0;
        while appended < max {
            if self.finished {
                return Ok(false);
            }
            let parser = match &mut self.current {
                Some(parser) => parser,
                None => match self.jobs.pop_front() {
                    Some(job) => self.current.insert(job.open(self.ids, &self.bytes_read)?),
                    None => {
                        self.finished = true;
                        if self.records == 0 {
                            return Err(Error::input(
                                &self.first_input,
                                None,
                                "input is empty: no edges or vertices found",
                            ));
                        }
                        return Ok(false);
                    }
                },
            };
            let before = out.len();
            let more = parser.read_batch(out, max - appended, &mut self.bad_lines)?;
            let added = out.len() - before;
            appended += added;
            self.records += added as u64;
            if !more {
                self.current = None;
            } else if added > 0 && added < max - (appended - added) {
                // The parser handed over a short batch (a whole parsed chunk, see
                // `EdgeListParser`): pass it on rather than copy more records after it.
                return Ok(true);
            }
        }
        Ok(true)
    }

    fn bytes_consumed(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    fn skipped_lines(&self) -> (u64, Vec<String>) {
        (self.bad_lines.count, self.bad_lines.examples.clone())
    }
}

/// The file name without compression suffixes, lower-cased, for extension checks
/// (`graph.mtx.gz` → `graph.mtx`).
pub(crate) fn logical_name(path: &Path) -> String {
    let mut name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    for suffix in [".gz", ".gzip", ".zst", ".zstd"] {
        if let Some(stripped) = name.strip_suffix(suffix) {
            name = stripped.to_string();
            break;
        }
    }
    name
}

/// The extension of [`logical_name`], without the dot ("" when there is none).
pub(crate) fn logical_extension(path: &Path) -> String {
    let name = logical_name(path);
    match name.rfind('.') {
        Some(dot) if dot > 0 => name[dot + 1..].to_string(),
        _ => String::new(),
    }
}

/// "FORMAT (REASON)", with the compression when there is one.
pub(crate) fn describe(compression: Compression, what: &str, reason: &str) -> String {
    format!("{}{what} ({reason})", compression.adjective())
}
