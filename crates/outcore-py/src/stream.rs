//! Edges streamed across the language boundary in chunks, both ways: [`ChunkSource`] feeds the
//! import pipeline from a Python iterator of `(src, dst, weights)` chunks (so a large edge list
//! is never copied whole into Rust), and [`EdgeReader`] reads a store's arcs a chunk at a time
//! into numpy arrays (`Graph.edges()`, `to_scipy()`, `to_networkx()`).

use std::sync::{Arc, Mutex};

use numpy::{IntoPyArray, PyReadonlyArray1};
use outcore::ingest::{InputRecord, RawId, RecordSource};
use outcore::store::{CsrLayout, Direction, IdType, Store};
use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::{original_order, to_py_err, Originals};

/// The first Python error a chunk source met, handed back to the caller as itself (the import
/// pipeline only sees an `outcore::Error` naming it).
pub type ErrorSlot = Arc<Mutex<Option<PyErr>>>;

/// Records from a Python iterator yielding `(src, dst, weights or None)`: numpy uint64 arrays
/// (or sequences of int) for integer ids, sequences of str for string ids.
pub struct ChunkSource {
    chunks: Py<PyAny>,
    id_type: IdType,
    weighted: bool,
    vertices: Vec<RawId>,
    src: Vec<RawId>,
    dst: Vec<RawId>,
    weights: Option<Vec<f64>>,
    next: usize,
    edges_read: u64,
    exhausted: bool,
    error: ErrorSlot,
}

impl ChunkSource {
    pub fn new(chunks: Py<PyAny>, id_type: IdType, weighted: bool, vertices: Vec<RawId>, error: ErrorSlot) -> Self {
        ChunkSource {
            chunks,
            id_type,
            weighted,
            vertices,
            src: Vec::new(),
            dst: Vec::new(),
            weights: None,
            next: 0,
            edges_read: 0,
            exhausted: false,
            error,
        }
    }

    /// Takes the next chunk from Python; `false` once the iterator is exhausted.
    fn fetch(&mut self) -> outcore::Result<bool> {
        let fetched = Python::attach(|py| -> PyResult<bool> {
            let item = match self.chunks.bind(py).call_method0("__next__") {
                Ok(item) => item,
                Err(e) if e.is_instance_of::<PyStopIteration>(py) => return Ok(false),
                Err(e) => return Err(e),
            };
            let (s, d, w): (Bound<'_, PyAny>, Bound<'_, PyAny>, Option<Bound<'_, PyAny>>) = item.extract()?;
            self.src = raw_ids(&s, self.id_type)?;
            self.dst = raw_ids(&d, self.id_type)?;
            self.weights = w.map(|w| floats(&w)).transpose()?;
            if self.src.len() != self.dst.len() || self.weights.as_ref().is_some_and(|w| w.len() != self.src.len()) {
                return Err(PyValueError::new_err("src, dst (and weights) must have the same length"));
            }
            if self.weights.is_some() != self.weighted {
                return Err(PyValueError::new_err("every chunk must carry weights, or none"));
            }
            self.next = 0;
            Ok(true)
        });
        fetched.map_err(|e| {
            let message = Python::attach(|py| e.value(py).to_string());
            *self.error.lock().unwrap() = Some(e);
            outcore::Error::invalid(message)
        })
    }
}

impl RecordSource for ChunkSource {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize) -> outcore::Result<bool> {
        out.extend(self.vertices.drain(..).map(InputRecord::Vertex));
        let mut added = 0;
        while added < max {
            if self.next == self.src.len() {
                if self.exhausted || !self.fetch()? {
                    self.exhausted = true;
                    self.src = Vec::new();
                    self.dst = Vec::new();
                    return Ok(false);
                }
                continue;
            }
            let end = (self.next + max - added).min(self.src.len());
            for i in self.next..end {
                out.push(InputRecord::Edge {
                    src: std::mem::replace(&mut self.src[i], RawId::U64(0)),
                    dst: std::mem::replace(&mut self.dst[i], RawId::U64(0)),
                    weight: self.weights.as_ref().map(|w| w[i]),
                });
            }
            added += end - self.next;
            self.edges_read += (end - self.next) as u64;
            self.next = end;
        }
        Ok(true)
    }

    fn bytes_consumed(&self) -> u64 {
        self.edges_read * 16
    }
}

/// Ids of one chunk: a numpy uint64 array is read without a Python list in between.
pub fn raw_ids(values: &Bound<'_, PyAny>, id_type: IdType) -> PyResult<Vec<RawId>> {
    match id_type {
        IdType::U64 => match values.extract::<PyReadonlyArray1<'_, u64>>() {
            Ok(array) => Ok(array.as_array().iter().map(|&x| RawId::U64(x)).collect()),
            Err(_) => Ok(values.extract::<Vec<u64>>()?.into_iter().map(RawId::U64).collect()),
        },
        IdType::String => Ok(values.extract::<Vec<String>>()?.into_iter().map(RawId::Str).collect()),
    }
}

fn floats(values: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    match values.extract::<PyReadonlyArray1<'_, f64>>() {
        Ok(array) => Ok(array.as_array().to_vec()),
        Err(_) => values.extract::<Vec<f64>>(),
    }
}

/// Reads a store's arcs in chunks of whole adjacency lists, in original ids. An undirected
/// store keeps both directions of an edge: each is reported once (`u <= v` in dense ids).
#[pyclass(unsendable, module = "outcore._native")]
pub struct EdgeReader {
    csr: CsrLayout,
    directed: bool,
    weighted: bool,
    vertices: u64,
    next_vertex: u64,
    originals: Originals,
}

/// Vertices whose offsets one `read` looks at, at most.
const OFFSET_WINDOW: u64 = 1 << 16;

#[pymethods]
impl EdgeReader {
    #[new]
    fn new(store: std::path::PathBuf) -> PyResult<Self> {
        let store = Store::open(&store).map_err(to_py_err)?;
        let csr = store.csr(Direction::Out).map_err(to_py_err)?;
        let (order, originals) = original_order(&store).map_err(to_py_err)?;
        Ok(EdgeReader {
            csr,
            directed: store.is_directed(),
            weighted: store.is_weighted(),
            vertices: store.num_vertices(),
            next_vertex: 0,
            originals: by_dense(&order, originals),
        })
    }

    /// The next chunk `(src, dst, weights or None)` of at most `max_arcs` arcs (more only when
    /// one vertex alone has more), or None at the end.
    #[allow(clippy::type_complexity)]
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        max_arcs: u64,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)>> {
        if self.next_vertex >= self.vertices {
            return Ok(None);
        }
        let first = self.next_vertex;
        let window = (self.vertices - first).min(OFFSET_WINDOW) as usize;
        let mut offsets = vec![0u64; window + 1];
        self.csr.read_offsets(first, &mut offsets).map_err(to_py_err)?;
        let mut end = 1;
        while end < window && offsets[end + 1] - offsets[0] <= max_arcs.max(1) {
            end += 1;
        }
        let (start, count) = (offsets[0], offsets[end] - offsets[0]);
        let mut targets = Vec::new();
        self.csr.read_targets(start, count, &mut targets).map_err(to_py_err)?;
        let mut weights = Vec::new();
        if self.weighted {
            self.csr.read_weights(start, count, &mut weights).map_err(to_py_err)?;
        }
        let (mut src, mut dst, mut w) = (Vec::new(), Vec::new(), Vec::new());
        for (i, v) in (first..first + end as u64).enumerate() {
            for k in (offsets[i] - start) as usize..(offsets[i + 1] - start) as usize {
                if self.directed || v <= targets[k] {
                    src.push(v);
                    dst.push(targets[k]);
                    if self.weighted {
                        w.push(weights[k]);
                    }
                }
            }
        }
        self.next_vertex = first + end as u64;
        let weights = if self.weighted { Some(w.into_pyarray(py).into_any()) } else { None };
        Ok(Some((self.originals.pick(py, &src)?, self.originals.pick(py, &dst)?, weights)))
    }
}

/// Original ids indexed by dense id, from [`original_order`]'s ascending lists.
fn by_dense(order: &[u64], originals: Originals) -> Originals {
    match originals {
        Originals::U64(ids) => {
            let mut out = vec![0u64; ids.len()];
            for (&d, id) in order.iter().zip(ids) {
                out[d as usize] = id;
            }
            Originals::U64(out)
        }
        Originals::Str(ids) => {
            let mut out = vec![String::new(); ids.len()];
            for (&d, id) in order.iter().zip(ids) {
                out[d as usize] = id;
            }
            Originals::Str(out)
        }
    }
}

impl Originals {
    /// The original ids of `dense` (indexed by dense id): a numpy array or a list of str.
    fn pick<'py>(&self, py: Python<'py>, dense: &[u64]) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            Originals::U64(ids) => {
                dense.iter().map(|&d| ids[d as usize]).collect::<Vec<u64>>().into_pyarray(py).into_any()
            }
            Originals::Str(ids) => PyList::new(py, dense.iter().map(|&d| ids[d as usize].as_str()))?.into_any(),
        })
    }
}

/// Out-degree (arcs per vertex) and, for a directed store, in-degree, in ascending original-id
/// order with the ids: `(ids, out, in or None)`. In-degrees are counted from the out-arcs a
/// block at a time, so no second layout is needed.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn degrees<'py>(
    py: Python<'py>,
    store: std::path::PathBuf,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
    let store = Store::open(&store).map_err(to_py_err)?;
    let csr = store.csr(Direction::Out).map_err(to_py_err)?;
    let n = store.num_vertices();
    let mut offsets = vec![0u64; n as usize + 1];
    csr.read_offsets(0, &mut offsets).map_err(to_py_err)?;
    let indegree = if store.is_directed() {
        let mut counts = vec![0u64; n as usize];
        let mut targets = Vec::new();
        let (arcs, block) = (offsets[n as usize], 1u64 << 20);
        let mut at = 0;
        while at < arcs {
            let count = block.min(arcs - at);
            csr.read_targets(at, count, &mut targets).map_err(to_py_err)?;
            targets.iter().for_each(|&t| counts[t as usize] += 1);
            at += count;
        }
        Some(counts)
    } else {
        None
    };
    let (order, originals) = original_order(&store).map_err(to_py_err)?;
    let out: Vec<u64> = order.iter().map(|&d| offsets[d as usize + 1] - offsets[d as usize]).collect();
    let ids = match originals {
        Originals::U64(v) => v.into_pyarray(py).into_any(),
        Originals::Str(v) => PyList::new(py, v)?.into_any(),
    };
    let indegree =
        indegree.map(|c| order.iter().map(|&d| c[d as usize]).collect::<Vec<u64>>().into_pyarray(py).into_any());
    Ok((ids, out.into_pyarray(py).into_any(), indegree))
}
