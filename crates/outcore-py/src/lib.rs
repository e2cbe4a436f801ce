//! `outcore._native`: the Python extension module. The only crate that knows pyo3.
//!
//! It exposes a handful of coarse functions (import, open, run) that take and return plain
//! Python values and numpy arrays; the Pythonic API (`Graph`, `Result`, the networkx backend)
//! is written in Python on top of them (`python/src/outcore/`). Every long call releases the
//! GIL, runs on a worker thread, and polls for signals so that Ctrl-C cancels it at a safe
//! point without corrupting a store.

mod progress;
mod stream;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use numpy::IntoPyArray;
use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::ingest::{
    import, import_records, ImportOptions, InputFormat, InputInfo, InputRecord, RawId, RecordSource,
};
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress, Progress};
use outcore::store::{IdType, OriginalId, Store};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

create_exception!(outcore, OutcoreError, PyException, "Base class of every outcore error.");
create_exception!(outcore, InputError, OutcoreError, "Malformed or unusable input (names file, line and text).");
create_exception!(outcore, StoreError, OutcoreError, "A missing, incomplete or damaged store.");
create_exception!(outcore, MemoryBudgetError, OutcoreError, "The memory budget is too small for the request.");

fn to_py_err(error: outcore::Error) -> PyErr {
    let message = error.to_string();
    match error {
        outcore::Error::Input { .. } => InputError::new_err(message),
        outcore::Error::Store { .. } => StoreError::new_err(message),
        outcore::Error::MemoryBudget(_) => MemoryBudgetError::new_err(message),
        outcore::Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        outcore::Error::InvalidArgument(_) | outcore::Error::Unsupported(_) => {
            pyo3::exceptions::PyValueError::new_err(message)
        }
        outcore::Error::Io { .. } | outcore::Error::Remote { .. } => OutcoreError::new_err(message),
    }
}

/// `progress=`: a callable gets [`progress::CallbackProgress`] events, a true value the stderr
/// line, None or a false value nothing.
fn progress_for(progress: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<dyn Progress>> {
    Ok(match progress {
        Some(p) if p.is_callable() => Arc::new(progress::CallbackProgress::new(p.clone().unbind())),
        Some(p) if p.is_truthy()? => Arc::new(progress::StderrProgress::new()),
        _ => Arc::new(NoProgress),
    })
}

/// Starts a new peak for `VmHWM` (Linux: writing 5 to /proc/self/clear_refs resets the
/// process's peak RSS to its current RSS), so that a call's stats report its own peak rather
/// than the process's lifetime one. Elsewhere (or where not permitted) nothing changes.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Runs `work` on a worker thread with the GIL released, waking every 20 ms to check for
/// Ctrl-C (a KeyboardInterrupt cancels the work at its next safe point and is re-raised) and
/// at once when the work ends, so short calls pay no polling delay.
fn run_detached<T: Send>(
    py: Python<'_>,
    cancel: &CancelToken,
    work: impl FnOnce() -> outcore::Result<T> + Send,
) -> PyResult<T> {
    use std::sync::mpsc::{channel, RecvTimeoutError};
    std::thread::scope(|scope| {
        let (done, finished) = channel::<()>();
        let handle = scope.spawn(move || {
            let result = work();
            let _ = done.send(());
            result
        });
        // (a Mutex makes the receiver Sync, which releasing the GIL around it asks for)
        let finished = std::sync::Mutex::new(finished);
        loop {
            // Disconnected (the worker panicked) ends the wait as well as a message does.
            let waited = py.detach(|| finished.lock().unwrap().recv_timeout(Duration::from_millis(20)));
            if !matches!(waited, Err(RecvTimeoutError::Timeout)) {
                break;
            }
            if let Err(interrupt) = py.check_signals() {
                cancel.cancel();
                let _ = handle.join();
                return Err(interrupt);
            }
        }
        match handle.join() {
            Ok(result) => result.map_err(to_py_err),
            Err(_) => Err(OutcoreError::new_err("internal error: the worker thread panicked")),
        }
    })
}

fn memory_budget(memory: Option<&str>) -> PyResult<MemoryBudget> {
    match memory {
        Some(m) => MemoryBudget::parse(m).map_err(to_py_err),
        None => Ok(MemoryBudget::default_for_machine()),
    }
}

fn id_type(ids: &str) -> PyResult<IdType> {
    match ids {
        "u64" => Ok(IdType::U64),
        "string" => Ok(IdType::String),
        other => {
            Err(pyo3::exceptions::PyValueError::new_err(format!("unknown id type '{other}' (use 'u64' or 'string')")))
        }
    }
}

/// Imports edge files into a store; returns the import report as JSON text.
#[pyfunction]
#[pyo3(signature = (inputs, store, format="auto", undirected=None, weighted=None, memory=None, dedup=false, drop_self_loops=false, ids="u64", skip_bad_lines=false, src_col=None, dst_col=None, weight_col=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn import_edges(
    py: Python<'_>,
    inputs: Vec<PathBuf>,
    store: PathBuf,
    format: &str,
    undirected: Option<bool>,
    weighted: Option<bool>,
    memory: Option<&str>,
    dedup: bool,
    drop_self_loops: bool,
    ids: &str,
    skip_bad_lines: bool,
    src_col: Option<String>,
    dst_col: Option<String>,
    weight_col: Option<String>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let opts = ImportOptions {
        format: InputFormat::parse(format).map_err(to_py_err)?,
        undirected,
        weighted,
        dedup,
        drop_self_loops,
        ids: id_type(ids)?,
        memory: memory_budget(memory)?,
        skip_bad_lines,
        src_col,
        dst_col,
        weight_col,
    };
    let cancel = CancelToken::new();
    let reporter = progress_for(progress.as_ref())?;
    let report = run_detached(py, &cancel, || {
        import(&inputs, &store, &opts, reporter.as_ref(), &cancel).map(|(_, report)| report)
    })?;
    Ok(serde_json::to_string(&report).expect("report serialises"))
}

/// Edges given as arrays (from numpy or pandas), as a record source for the import pipeline.
struct ArraySource {
    /// Vertices that must exist even when isolated, emitted first.
    vertices: Vec<RawId>,
    src: Vec<RawId>,
    dst: Vec<RawId>,
    weights: Option<Vec<f64>>,
    next: usize,
}

impl RecordSource for ArraySource {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize) -> outcore::Result<bool> {
        out.extend(self.vertices.drain(..).map(InputRecord::Vertex));
        let end = (self.next + max).min(self.src.len());
        for i in self.next..end {
            out.push(InputRecord::Edge {
                src: self.src[i].clone(),
                dst: self.dst[i].clone(),
                weight: self.weights.as_ref().map(|w| w[i]),
            });
        }
        self.next = end;
        Ok(end < self.src.len())
    }
    fn bytes_consumed(&self) -> u64 {
        self.next as u64 * 16
    }
}

use stream::raw_ids;

/// Builds a store from a Python iterator of edge chunks `(src, dst, weights or None)` (see
/// [`stream::ChunkSource`]): the importer pulls one chunk at a time, so only a chunk is held
/// beside the importer's own budget. `total_edges` (when known) sizes the progress bar.
#[pyfunction]
#[pyo3(signature = (chunks, store, weighted, directed=true, memory=None, ids="u64", dedup=false, drop_self_loops=false, progress=None, vertices=None, total_edges=0))]
#[allow(clippy::too_many_arguments)]
fn import_chunks(
    py: Python<'_>,
    chunks: &Bound<'_, PyAny>,
    store: PathBuf,
    weighted: bool,
    directed: bool,
    memory: Option<&str>,
    ids: &str,
    dedup: bool,
    drop_self_loops: bool,
    progress: Option<Bound<'_, PyAny>>,
    vertices: Option<&Bound<'_, PyAny>>,
    total_edges: u64,
) -> PyResult<String> {
    let id_type = id_type(ids)?;
    let vertices = match vertices {
        Some(v) => raw_ids(v, id_type)?,
        None => Vec::new(),
    };
    let error = stream::ErrorSlot::default();
    let source =
        stream::ChunkSource::new(chunks.try_iter()?.into_any().unbind(), id_type, weighted, vertices, error.clone());
    let info = InputInfo {
        format_description: "edge chunks from Python".into(),
        directed: Some(directed),
        weighted: Some(weighted),
        total_bytes: total_edges * 16,
        files: Vec::new(),
    };
    let opts = ImportOptions {
        undirected: Some(!directed),
        weighted: Some(weighted),
        dedup,
        drop_self_loops,
        ids: id_type,
        memory: memory_budget(memory)?,
        ..ImportOptions::default()
    };
    let cancel = CancelToken::new();
    let reporter = progress_for(progress.as_ref())?;
    reset_peak_rss();
    let report = run_detached(py, &cancel, || {
        import_records(Box::new(source), info, &store, &opts, reporter.as_ref(), &cancel).map(|(_, r)| r)
    });
    if let Some(chunk_error) = error.lock().unwrap().take() {
        return Err(chunk_error);
    }
    Ok(serde_json::to_string(&report?).expect("report serialises"))
}

/// The command line of the `outcore` binary (`argv[0]` is the program name); returns its
/// exit code. For the console script that `pip install` ships: it installs the CLI's Ctrl-C
/// handler, so call it from a process of its own rather than an interactive session.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| outcore_cli::main_with_args(argv))
}

/// Builds a store from edge arrays (u64 ids, or strings with `ids="string"`).
#[pyfunction]
#[pyo3(signature = (src, dst, store, weights=None, directed=true, memory=None, ids="u64", dedup=false, drop_self_loops=false, progress=None, vertices=None))]
#[allow(clippy::too_many_arguments)]
fn from_edges(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    dst: &Bound<'_, PyAny>,
    store: PathBuf,
    weights: Option<Vec<f64>>,
    directed: bool,
    memory: Option<&str>,
    ids: &str,
    dedup: bool,
    drop_self_loops: bool,
    progress: Option<Bound<'_, PyAny>>,
    vertices: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let id_type = id_type(ids)?;
    let vertices = match vertices {
        Some(v) => raw_ids(v, id_type)?,
        None => Vec::new(),
    };
    let (src, dst) = (raw_ids(src, id_type)?, raw_ids(dst, id_type)?);
    if src.len() != dst.len() || weights.as_ref().is_some_and(|w| w.len() != src.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err("src, dst (and weights) must have the same length"));
    }
    let weighted = weights.is_some();
    let total_bytes = src.len() as u64 * 16;
    let source = ArraySource { vertices, src, dst, weights, next: 0 };
    let info = InputInfo {
        format_description: "edge arrays from Python".into(),
        directed: Some(directed),
        weighted: Some(weighted),
        total_bytes,
        files: Vec::new(),
    };
    let opts = ImportOptions {
        undirected: Some(!directed),
        weighted: Some(weighted),
        dedup,
        drop_self_loops,
        ids: id_type,
        memory: memory_budget(memory)?,
        ..ImportOptions::default()
    };
    let cancel = CancelToken::new();
    let reporter = progress_for(progress.as_ref())?;
    let report = run_detached(py, &cancel, || {
        import_records(Box::new(source), info, &store, &opts, reporter.as_ref(), &cancel).map(|(_, r)| r)
    })?;
    Ok(serde_json::to_string(&report).expect("report serialises"))
}

/// Generates a Graph500 R-MAT graph straight into a store; returns the import report (JSON).
#[pyfunction]
#[pyo3(signature = (scale, edge_factor, seed, store, weights=false, memory=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn generate_rmat(
    py: Python<'_>,
    scale: u32,
    edge_factor: u64,
    seed: u64,
    store: PathBuf,
    weights: bool,
    memory: Option<&str>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    use outcore::generate::rmat::{Rmat, RmatConfig};
    let generator =
        Rmat::new(RmatConfig { scale, edge_factor, seed, weights, ..RmatConfig::default() }).map_err(to_py_err)?;
    let opts = ImportOptions { memory: memory_budget(memory)?, ..ImportOptions::default() };
    let cancel = CancelToken::new();
    let reporter = progress_for(progress.as_ref())?;
    let report = run_detached(py, &cancel, || {
        outcore::generate::source::generate_into_store(generator, &store, &opts, reporter.as_ref(), &cancel)
            .map(|(_, r)| r)
    })?;
    Ok(serde_json::to_string(&report).expect("report serialises"))
}

/// Renumbers a store's vertices (`none|degree|random|norder`) in place, within `memory`.
#[pyfunction]
#[pyo3(signature = (store, order, seed=1, memory=None, progress=None))]
fn reorder(
    py: Python<'_>,
    store: PathBuf,
    order: &str,
    seed: u64,
    memory: Option<&str>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<()> {
    let order = outcore::store::order::VertexOrder::parse(order, seed).map_err(to_py_err)?;
    let memory = memory_budget(memory)?;
    let opened = Store::open(&store).map_err(to_py_err)?;
    let reporter = progress_for(progress.as_ref())?;
    let cancel = CancelToken::new();
    run_detached(py, &cancel, || outcore::store::order::reorder(&opened, order, memory, reporter.as_ref()).map(|_| ()))
}

/// The manifest of a store, as JSON text (opening checks sizes and checksums).
#[pyfunction]
fn store_manifest(store: PathBuf) -> PyResult<String> {
    let store = Store::open(&store).map_err(to_py_err)?;
    Ok(serde_json::to_string(store.manifest()).expect("manifest serialises"))
}

/// Runs an algorithm. Returns a dict with `ids` (original ids in ascending order: a numpy
/// uint64 array, or a list of str), `columns` (list of (name, kind, numpy array) aligned with
/// ids), `stats` (JSON text) and `summary` (JSON text).
#[pyfunction]
#[pyo3(signature = (store, algorithm, params, engine="auto", memory=None, progress=None, engine_options=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    store: PathBuf,
    algorithm: &str,
    params: &Bound<'py, PyDict>,
    engine: &str,
    memory: Option<&str>,
    progress: Option<Bound<'py, PyAny>>,
    engine_options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = algorithm_params(params)?;
    let mut options = RunOptions {
        engine: EngineKind::parse(engine).map_err(to_py_err)?,
        memory: memory_budget(memory)?,
        ..RunOptions::default()
    };
    if let Some(extra) = engine_options {
        apply_engine_options(&mut options, extra)?;
    }
    let store = Store::open(&store).map_err(to_py_err)?;
    let cancel = CancelToken::new();
    let runner =
        Runner::new(&store, options).with_progress(progress_for(progress.as_ref())?).with_cancel(cancel.clone());
    reset_peak_rss();
    let (result, order, originals) = run_detached(py, &cancel, || {
        let result = run_algorithm(&runner, algorithm, &params)?;
        let (order, originals) = original_order(runner.store())?;
        Ok((result, order, originals))
    })?;
    let stats = runner.finish(algorithm);
    let summary = outcore::report::summarize(&result, &runner.store().ids().map_err(to_py_err)?).map_err(to_py_err)?;
    let out = PyDict::new(py);
    match originals {
        Originals::U64(ids) => out.set_item("ids", ids.into_pyarray(py))?,
        Originals::Str(ids) => out.set_item("ids", PyList::new(py, ids)?)?,
    }
    let columns = PyList::empty(py);
    for (name, column) in columns_in_order(&result, &order, runner.store()).map_err(to_py_err)? {
        columns.append((name, column.kind, column.array(py)?))?;
    }
    out.set_item("columns", columns)?;
    out.set_item("stats", serde_json::to_string(&stats).expect("stats serialise"))?;
    out.set_item("summary", serde_json::to_string(&summary).expect("summary serialises"))?;
    out.set_item("explanation", runner.explanation().map(|e| e.to_string()))?;
    Ok(out)
}

/// Engine options by name (the CLI's flags without `--`, `_` for `-`). The shards engine's:
/// `shards`, `dynamic`, `shadow_edge_share`, `delay_buffer`, `delayed_delivery`,
/// `shards_values`; the pregel engine's: `recode`, `message_file_size`, `checkpoint_every`,
/// `resume`.
fn apply_engine_options(options: &mut RunOptions, extra: &Bound<'_, PyDict>) -> PyResult<()> {
    use outcore::engine::shards::{DelayedDelivery, DynamicPolicy, ShardValues};
    let (shards, pregel) = (&mut options.shards, &mut options.pregel);
    for (key, value) in extra.iter() {
        if value.is_none() {
            continue;
        }
        let key: String = key.extract()?;
        match key.as_str() {
            "shards" => shards.shards = Some(value.extract()?),
            "dynamic" => shards.dynamic = Some(DynamicPolicy::parse(&value.extract::<String>()?).map_err(to_py_err)?),
            "shadow_edge_share" => {
                let share: f64 = value.extract()?;
                if !(0.0..=1.0).contains(&share) {
                    return Err(PyValueError::new_err(format!("shadow_edge_share must be in [0, 1], got {share}")));
                }
                shards.shadow_edge_share = Some(share);
            }
            "delay_buffer" => shards.delay_buffer_bytes = size_option(&value)?,
            "delayed_delivery" => {
                shards.delayed_delivery = DelayedDelivery::parse(&value.extract::<String>()?).map_err(to_py_err)?
            }
            "shards_values" => shards.values = ShardValues::parse(&value.extract::<String>()?).map_err(to_py_err)?,
            "recode" => pregel.recoded = value.extract()?,
            "message_file_size" => pregel.message_file_size = Some(size_option(&value)?),
            "checkpoint_every" => pregel.checkpoint_every = Some(value.extract()?),
            "resume" => pregel.resume = value.extract()?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown engine option '{other}' (known: shards, dynamic, shadow_edge_share, delay_buffer, \
                     delayed_delivery, shards_values, recode, message_file_size, checkpoint_every, resume)"
                )))
            }
        }
    }
    Ok(())
}

/// A size given as bytes (an int) or with a unit ("8MiB").
fn size_option(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    match value.extract::<u64>() {
        Ok(bytes) => Ok(bytes),
        Err(_) => outcore::runtime::parse_size(&value.str()?.to_string()).map_err(to_py_err),
    }
}

fn algorithm_params(params: &Bound<'_, PyDict>) -> PyResult<AlgorithmParams> {
    let mut p = AlgorithmParams::default();
    for (key, value) in params.iter() {
        if value.is_none() {
            continue;
        }
        let key: String = key.extract()?;
        match key.as_str() {
            "source" => p.source = Some(value.str()?.to_string()),
            "sources" => {
                p.sources = value
                    .extract::<Vec<Bound<'_, PyAny>>>()?
                    .iter()
                    .map(|v| v.str().map(|s| s.to_string()))
                    .collect::<PyResult<_>>()?
            }
            "num_sources" => p.num_sources = Some(value.extract()?),
            "seed" => p.seed = Some(value.extract()?),
            "iterations" => p.iterations = Some(value.extract()?),
            "damping" => p.damping = Some(value.extract()?),
            "tolerance" => p.tolerance = Some(value.extract()?),
            "sweeps" => p.sweeps = Some(value.extract()?),
            "unnormalized" => p.unnormalized = value.extract()?,
            "k" => p.k = Some(value.extract()?),
            "alpha" => p.alpha = Some(value.extract()?),
            "beta" => p.beta = Some(value.extract()?),
            "weighted" => p.weighted = value.extract()?,
            "resolution" => p.resolution = Some(value.extract()?),
            "threshold" => p.threshold = Some(value.extract()?),
            "max_level" => p.max_level = Some(value.extract()?),
            other => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("unknown algorithm parameter '{other}'")))
            }
        }
    }
    Ok(p)
}

enum Originals {
    U64(Vec<u64>),
    Str(Vec<String>),
}

/// Dense ids in ascending original-id order, with the original ids.
fn original_order(store: &Store) -> outcore::Result<(Vec<u64>, Originals)> {
    let ids = store.ids()?;
    let mut order = Vec::with_capacity(store.num_vertices() as usize);
    let mut originals = match ids.id_type() {
        IdType::U64 => Originals::U64(Vec::with_capacity(order.capacity())),
        IdType::String => Originals::Str(Vec::with_capacity(order.capacity())),
    };
    ids.for_each_by_original(|dense, original| {
        order.push(dense);
        match (&mut originals, original) {
            (Originals::U64(v), OriginalId::U64(x)) => v.push(*x),
            (Originals::Str(v), OriginalId::Str(s)) => v.push(s.clone()),
            _ => unreachable!("id type matches the store"),
        }
        Ok(())
    })?;
    Ok((order, originals))
}

/// A column reordered into original-id order, ready to become a numpy array.
struct OrderedColumn {
    kind: &'static str,
    data: ColumnData,
}

enum ColumnData {
    I64(Vec<i64>),
    U64(Vec<u64>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

impl OrderedColumn {
    fn array<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.data {
            ColumnData::I64(v) => v.into_pyarray(py).into_any(),
            ColumnData::U64(v) => v.into_pyarray(py).into_any(),
            ColumnData::F64(v) => v.into_pyarray(py).into_any(),
            ColumnData::Str(v) => PyList::new(py, v)?.into_any(),
        })
    }
}

fn columns_in_order(
    result: &AlgorithmResult,
    order: &[u64],
    store: &Store,
) -> outcore::Result<Vec<(String, OrderedColumn)>> {
    let ids = store.ids()?;
    let mut out = Vec::new();
    for (name, column) in &result.columns {
        let pick = |d: &u64| *d as usize;
        let ordered = match column {
            // Graphalytics convention: unreachable = i64::MAX (9223372036854775807).
            ValueColumn::Hops(v) => OrderedColumn {
                kind: "hops",
                data: ColumnData::I64(order.iter().map(|d| v[pick(d)].min(i64::MAX as u64) as i64).collect()),
            },
            ValueColumn::Float(v) => {
                OrderedColumn { kind: "float", data: ColumnData::F64(order.iter().map(|d| v[pick(d)]).collect()) }
            }
            ValueColumn::Count(v) => {
                OrderedColumn { kind: "count", data: ColumnData::U64(order.iter().map(|d| v[pick(d)]).collect()) }
            }
            ValueColumn::Label(v) => {
                let labels: outcore::Result<Vec<OriginalId>> = order.iter().map(|d| ids.original(v[pick(d)])).collect();
                let labels = labels?;
                let data = match ids.id_type() {
                    IdType::U64 => ColumnData::U64(
                        labels.into_iter().map(|l| if let OriginalId::U64(x) = l { x } else { 0 }).collect(),
                    ),
                    IdType::String => ColumnData::Str(labels.into_iter().map(|l| l.to_string()).collect()),
                };
                OrderedColumn { kind: "label", data }
            }
        };
        out.push((name.clone(), ordered));
    }
    Ok(out)
}

/// Sources, targets and (weighted stores) weights, as `edges` returns them.
type EdgeColumns<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>);

/// Every arc of a store as (src ids, dst ids, weights or None) in original ids (u64 stores:
/// numpy arrays; string stores: lists). For converting small stores back to networkx.
#[pyfunction]
fn edges<'py>(py: Python<'py>, store: PathBuf) -> PyResult<EdgeColumns<'py>> {
    let store = Store::open(&store).map_err(to_py_err)?;
    let csr = store.csr(outcore::store::Direction::Out).and_then(|c| c.load()).map_err(to_py_err)?;
    let ids = store.ids().map_err(to_py_err)?;
    let mut src = Vec::with_capacity(csr.targets.len());
    for v in 0..csr.num_vertices() {
        let keep_all = store.is_directed();
        for &t in csr.neighbors(v) {
            // An undirected store keeps both directions: report each edge once.
            if keep_all || v <= t {
                src.push((v, t));
            }
        }
    }
    let weights = csr.weights.as_ref().map(|w| {
        let mut out = Vec::with_capacity(src.len());
        for v in 0..csr.num_vertices() {
            let start = csr.offsets[v as usize] as usize;
            for (k, &t) in csr.neighbors(v).iter().enumerate() {
                if store.is_directed() || v <= t {
                    out.push(w[start + k]);
                }
            }
        }
        out
    });
    let originals = |dense: Vec<u64>| -> PyResult<Bound<'py, PyAny>> {
        let values: outcore::Result<Vec<OriginalId>> = dense.into_iter().map(|d| ids.original(d)).collect();
        let values = values.map_err(to_py_err)?;
        Ok(match ids.id_type() {
            IdType::U64 => values
                .into_iter()
                .map(|v| if let OriginalId::U64(x) = v { x } else { 0 })
                .collect::<Vec<u64>>()
                .into_pyarray(py)
                .into_any(),
            IdType::String => PyList::new(py, values.into_iter().map(|v| v.to_string()))?.into_any(),
        })
    };
    let (s, t): (Vec<u64>, Vec<u64>) = src.into_iter().unzip();
    Ok((originals(s)?, originals(t)?, weights.map(|w| w.into_pyarray(py).into_any())))
}

/// Every vertex's original id in ascending order.
#[pyfunction]
fn vertices<'py>(py: Python<'py>, store: PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let store = Store::open(&store).map_err(to_py_err)?;
    let (_, originals) = original_order(&store).map_err(to_py_err)?;
    Ok(match originals {
        Originals::U64(v) => v.into_pyarray(py).into_any(),
        Originals::Str(v) => PyList::new(py, v)?.into_any(),
    })
}

/// Writes a run report (a self-contained HTML page of per-iteration charts) to `output` from
/// `(label, stats JSON text)` pairs: one run, or several side by side (`outcore::run_report`).
#[pyfunction]
fn run_report(stats: Vec<(String, String)>, output: PathBuf) -> PyResult<()> {
    outcore::run_report::write_html(&report_runs(&stats)?, &output).map_err(to_py_err)
}

/// The same report for a notebook (`Result.plot()`): `(fragment, svg)`, the page's content as
/// one `<div>` with its style scoped to it, and the charts as one standalone SVG document.
#[pyfunction]
fn run_report_render(stats: Vec<(String, String)>) -> PyResult<(String, String)> {
    let runs = report_runs(&stats)?;
    if runs.is_empty() {
        return Err(to_py_err(outcore::Error::invalid("a run report needs at least one run")));
    }
    Ok((outcore::run_report::render_fragment(&runs), outcore::run_report::render_svg(&runs)))
}

fn report_runs(stats: &[(String, String)]) -> PyResult<Vec<outcore::run_report::ReportRun>> {
    use outcore::run_report::{ReportRun, RunFile};
    stats
        .iter()
        .map(|(label, text)| Ok(ReportRun { label: label.clone(), run: RunFile::parse(Path::new(label), text)? }))
        .collect::<outcore::Result<Vec<_>>>()
        .map_err(to_py_err)
}

/// The algorithms the library offers: list of (name, description).
#[pyfunction]
fn algorithms() -> Vec<(String, String)> {
    outcore::algo::ALGORITHMS.iter().map(|(n, d)| (n.to_string(), d.to_string())).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("OutcoreError", py.get_type::<OutcoreError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("MemoryBudgetError", py.get_type::<MemoryBudgetError>())?;
    m.add_function(wrap_pyfunction!(import_edges, m)?)?;
    m.add_function(wrap_pyfunction!(from_edges, m)?)?;
    m.add_function(wrap_pyfunction!(store_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(generate_rmat, m)?)?;
    m.add_function(wrap_pyfunction!(reorder, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(edges, m)?)?;
    m.add_function(wrap_pyfunction!(vertices, m)?)?;
    m.add_function(wrap_pyfunction!(import_chunks, m)?)?;
    m.add_function(wrap_pyfunction!(stream::degrees, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_class::<stream::EdgeReader>()?;
    m.add_function(wrap_pyfunction!(run_report, m)?)?;
    m.add_function(wrap_pyfunction!(run_report_render, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
