//! Multi-source shortest paths (`mssp`): for each of several sources, the length of a
//! shortest path to every vertex along out-edges, with non-negative f64 weights (1.0 each on
//! an unweighted store); unreachable: infinity. One output column per source, named by the
//! source's original id. Sources are given (`--sources ID,ID,...`, or one `--source ID`) or
//! sampled uniformly without replacement (`--num-sources K --seed N`, seed 0 by default: the
//! same sample as `msbfs` and `bc` draw for that seed).
//!
//! Running one SSSP per source would stream the edges once per source per iteration; here
//! every vertex carries a vector of distances, one per source, and one pass over the active
//! edges advances all sources at once — the point of MSSP on an out-of-core engine (Redio and
//! BASC run it as a batch).
//!
//! A vertex value must be `Copy` (engines keep values in flat arrays), so the distances are a
//! fixed-capacity array `[f64; K]`, K ∈ {1, 2, 4, 8, 16, 32} the smallest that holds the
//! batch: at most [`MAX_SOURCES_PER_PASS`] = 32 sources run together, more sources run in
//! several passes of up to 32 (each pass a complete run; results are the same as for single
//! SSSP runs). Memory per vertex is about 2 × 8 × K bytes (value and accumulator).
//!
//! Per source the program is SSSP's frontier Bellman–Ford: a vertex whose distance to source
//! k dropped sends `distance + weight` for k in the next iteration (the other components send
//! infinity), `combine` is the element-wise minimum, and a vertex is active while any of its
//! components improved. Weights are checked like `sssp` does (negative or NaN: an error).

use super::{AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// Sources run together in one pass.
pub const MAX_SOURCES_PER_PASS: usize = 32;

/// MSSP parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Dense ids of the sources (duplicates allowed; each gets its column).
    pub sources: Vec<VertexId>,
}

/// Distances per source: `distances[i][v]` from `sources[i]` to vertex `v` (dense order).
#[derive(Debug, Clone, PartialEq)]
pub struct MsspOutput {
    pub sources: Vec<VertexId>,
    /// Original ids of the sources, as printed (column names).
    pub source_names: Vec<String>,
    pub distances: Vec<Vec<f64>>,
    /// Passes run (⌈sources / 32⌉).
    pub passes: usize,
}

/// One vertex's distances and which of them improved in the last apply.
#[derive(Debug, Clone, Copy)]
struct Distances<const K: usize> {
    distance: [f64; K],
    improved: u64,
}

struct Mssp<const K: usize> {
    sources: [VertexId; K],
    count: usize,
}

impl<const K: usize> Mssp<K> {
    fn new(batch: &[VertexId]) -> Self {
        let mut sources = [VertexId::MAX; K];
        sources[..batch.len()].copy_from_slice(batch);
        Mssp { sources, count: batch.len() }
    }

    fn source_mask(&self, v: VertexId) -> u64 {
        (0..self.count).filter(|&k| self.sources[k] == v).fold(0, |m, k| m | 1 << k)
    }
}

impl<const K: usize> VertexProgram for Mssp<K> {
    type Value = Distances<K>;
    type Msg = [f64; K];

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn uses_weights(&self) -> bool {
        true
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> Distances<K> {
        let mask = self.source_mask(v);
        let mut distance = [f64::INFINITY; K];
        for (k, d) in distance.iter_mut().enumerate() {
            if mask >> k & 1 == 1 {
                *d = 0.0;
            }
        }
        Distances { distance, improved: mask }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        self.source_mask(v) != 0
    }
    fn scatter(&self, value: &Distances<K>, edge: EdgeRef) -> Option<[f64; K]> {
        if value.improved == 0 {
            return None;
        }
        let mut msg = [f64::INFINITY; K];
        for (k, m) in msg.iter_mut().enumerate() {
            if value.improved >> k & 1 == 1 {
                *m = value.distance[k] + edge.weight;
            }
        }
        Some(msg)
    }
    fn combine(&self, mut a: [f64; K], b: [f64; K]) -> [f64; K] {
        for (x, y) in a.iter_mut().zip(b) {
            *x = x.min(y);
        }
        a
    }
    fn identity(&self) -> [f64; K] {
        [f64::INFINITY; K]
    }
    fn apply(&self, _: VertexId, value: &mut Distances<K>, candidate: [f64; K], _: &IterationContext) -> bool {
        let mut improved = 0u64;
        for (k, (d, c)) in value.distance.iter_mut().zip(candidate).enumerate() {
            if c < *d {
                *d = c;
                improved |= 1 << k;
            }
        }
        value.improved = improved;
        improved != 0
    }
}

/// One iteration over every edge counting negative or NaN weights per target (the same check
/// as `sssp`'s, which engines allow only through a program since only `scatter` sees weights).
struct BadWeightCount;

impl VertexProgram for BadWeightCount {
    type Value = u64;
    type Msg = u64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn uses_weights(&self) -> bool {
        true
    }
    fn init(&self, _: VertexId, _: &GraphInfo) -> u64 {
        0
    }
    fn scatter(&self, _: &u64, edge: EdgeRef) -> Option<u64> {
        (edge.weight.is_nan() || edge.weight < 0.0).then_some(1)
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        a + b
    }
    fn identity(&self) -> u64 {
        0
    }
    fn apply(&self, _: VertexId, value: &mut u64, count: u64, _: &IterationContext) -> bool {
        *value = count;
        false
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(1)
    }
}

/// Runs one batch of at most K sources; appends one distance vector per source.
/// The values are visited, not collected: only the batch's distance columns are ever held,
/// not the K-slot state of every vertex (72 bytes per vertex for K = 8).
fn run_batch<const K: usize>(runner: &Runner, batch: &[VertexId], out: &mut Vec<Vec<f64>>) -> Result<()> {
    let n = runner.graph_info().num_vertices as usize;
    let mut columns: Vec<Vec<f64>> = (0..batch.len()).map(|_| Vec::with_capacity(n)).collect();
    runner.run_vertex_program_visit(&Mssp::<K>::new(batch), |_, value| {
        for (k, column) in columns.iter_mut().enumerate() {
            column.push(value.distance[k]);
        }
    })?;
    out.extend(columns);
    Ok(())
}

pub fn run(runner: &Runner, config: &Config) -> Result<MsspOutput> {
    let n = runner.graph_info().num_vertices;
    if config.sources.is_empty() {
        return Err(Error::invalid("mssp needs at least one source (--sources ID,ID,... or --num-sources K)"));
    }
    if let Some(bad) = config.sources.iter().find(|&&s| s >= n) {
        return Err(Error::invalid(format!("source {bad} is not a vertex of this graph ({n} vertices)")));
    }
    if runner.graph_info().weighted {
        let bad: u64 = runner.run_vertex_program(&BadWeightCount)?.iter().sum();
        if bad > 0 {
            return Err(Error::invalid(format!(
                "mssp needs non-negative edge weights, but {bad} edge(s) have a negative or NaN weight"
            )));
        }
    }
    let ids = runner.store().ids()?;
    let source_names =
        config.sources.iter().map(|&s| ids.original(s).map(|o| o.to_string())).collect::<Result<Vec<_>>>()?;
    let mut distances = Vec::with_capacity(config.sources.len());
    let mut passes = 0;
    for batch in config.sources.chunks(MAX_SOURCES_PER_PASS) {
        passes += 1;
        match batch.len() {
            1 => run_batch::<1>(runner, batch, &mut distances)?,
            2 => run_batch::<2>(runner, batch, &mut distances)?,
            3..=4 => run_batch::<4>(runner, batch, &mut distances)?,
            5..=8 => run_batch::<8>(runner, batch, &mut distances)?,
            9..=16 => run_batch::<16>(runner, batch, &mut distances)?,
            _ => run_batch::<32>(runner, batch, &mut distances)?,
        }
    }
    runner.record_figures(|figures| figures.mssp_passes = Some(passes as u64));
    Ok(MsspOutput { sources: config.sources.clone(), source_names, distances, passes })
}

impl From<MsspOutput> for AlgorithmResult {
    fn from(out: MsspOutput) -> Self {
        let mut summary = serde_json::Map::new();
        summary.insert("sources".into(), out.sources.len().into());
        summary.insert("passes".into(), out.passes.into());
        let reached: Vec<usize> = out.distances.iter().map(|d| d.iter().filter(|x| x.is_finite()).count()).collect();
        summary.insert("reached".into(), reached.into());
        AlgorithmResult {
            algorithm: "mssp".into(),
            columns: out
                .source_names
                .into_iter()
                .zip(out.distances)
                .map(|(name, d)| (name, ValueColumn::Float(d)))
                .collect(),
            summary,
        }
    }
}
