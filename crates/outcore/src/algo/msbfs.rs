//! Multi-source BFS: breadth-first searches from many sources at once, as the BASC paper's
//! APSP on sampled sources (§5, after Graphene: "BFS from 32 random sources ... each bit
//! indicates if the traversal from the corresponding source vertex is reached").
//!
//! Up to 64 sources run together: every vertex holds a u64 bitset of the sources that reached
//! it (`visited`) and of those that reached it in the last iteration (`frontier`); an active
//! vertex sends its `frontier` along its out-edges, messages are OR-ed, and a vertex whose
//! bitset gained bits is active next. One pass over a frontier's adjacency thus serves up to
//! 64 searches — the point of the algorithm on a disk-based engine. More than 64 sources run
//! in batches of 64.
//!
//! Output (chosen to stay O(|V|) whatever the number of sources): per vertex, the number of
//! sources that reach it (`sources_reaching`, a source reaches itself) and the sum of its hop
//! distances from them (`distance_sum`); the summary has the reachable pairs and the mean
//! distance over them. The per-source depths are exactly those of `bfs` from each source.
//!
//! Sources are given (`sources`) or sampled (`num_sources`, `seed`) uniformly among all
//! vertices by their rank in original-id order, so a seed picks the same vertices whatever the
//! store's ordering.

use super::{AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::store::order::SplitMix64;
use crate::VertexId;

/// Sources searched at once (bits of the per-vertex set).
pub const SOURCES_PER_PASS: usize = 64;

/// Default number of sampled sources (the paper samples 128 for APSP and BC).
pub const DEFAULT_NUM_SOURCES: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Dense ids of the sources (duplicates are searched once).
    pub sources: Vec<VertexId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsbfsOutput {
    pub sources: Vec<VertexId>,
    /// Per vertex: how many sources reach it.
    pub sources_reaching: Vec<u64>,
    /// Per vertex: Σ of its hop distances from the sources that reach it.
    pub distance_sum: Vec<u64>,
}

/// `k` distinct vertices sampled uniformly (Floyd's algorithm over original-id ranks), in
/// ascending rank order; every vertex when `k >= |V|`.
pub fn sample_sources(runner: &Runner, k: usize, seed: u64) -> Result<Vec<VertexId>> {
    let n = runner.graph_info().num_vertices;
    let ranks: Vec<u64> = if k as u64 >= n {
        (0..n).collect()
    } else {
        let mut rng = SplitMix64::new(seed);
        let mut chosen = std::collections::BTreeSet::new();
        for j in n - k as u64..n {
            let t = rng.below(j + 1);
            if !chosen.insert(t) {
                chosen.insert(j);
            }
        }
        chosen.into_iter().collect()
    };
    if ranks.len() as u64 == n {
        return Ok((0..n).collect());
    }
    ranks.into_iter().map(|r| runner.vertex_at_original_rank(r)).collect()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SearchState {
    visited: u64,
    frontier: u64,
    reached: u32,
    distance_sum: u64,
}

struct MultiSourceBfs<'a> {
    /// (source, its bit) sorted by source.
    sources: &'a [(VertexId, u64)],
}

impl MultiSourceBfs<'_> {
    fn mask(&self, v: VertexId) -> u64 {
        match self.sources.binary_search_by_key(&v, |&(s, _)| s) {
            Ok(i) => self.sources[i].1,
            Err(_) => 0,
        }
    }
}

impl VertexProgram for MultiSourceBfs<'_> {
    type Value = SearchState;
    type Msg = u64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> SearchState {
        let mask = self.mask(v);
        SearchState { visited: mask, frontier: mask, reached: mask.count_ones(), distance_sum: 0 }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        self.mask(v) != 0
    }
    fn scatter(&self, state: &SearchState, _: EdgeRef) -> Option<u64> {
        (state.frontier != 0).then_some(state.frontier)
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        a | b
    }
    fn identity(&self) -> u64 {
        0
    }
    /// Levels are counted by iteration: a delayed message would give a wrong distance.
    fn tolerates_delays(&self) -> bool {
        false
    }
    fn apply(&self, _: VertexId, state: &mut SearchState, bits: u64, ctx: &IterationContext) -> bool {
        let new = bits & !state.visited;
        state.visited |= new;
        state.frontier = new;
        state.reached += new.count_ones();
        state.distance_sum += new.count_ones() as u64 * (ctx.iteration as u64 + 1);
        new != 0
    }
}

pub fn run(runner: &Runner, config: &Config) -> Result<MsbfsOutput> {
    let n = runner.graph_info().num_vertices;
    let mut sources = config.sources.clone();
    sources.sort_unstable();
    sources.dedup();
    if let Some(&bad) = sources.iter().find(|&&s| s >= n) {
        return Err(Error::invalid(format!("source vertex (dense id {bad}) is not in the graph ({n} vertices)")));
    }
    let mut sources_reaching = vec![0u64; n as usize];
    let mut distance_sum = vec![0u64; n as usize];
    for batch in sources.chunks(SOURCES_PER_PASS) {
        let bits: Vec<(VertexId, u64)> = batch.iter().enumerate().map(|(i, &s)| (s, 1u64 << i)).collect();
        let states = runner.run_vertex_program(&MultiSourceBfs { sources: &bits })?;
        for (v, state) in states.iter().enumerate() {
            sources_reaching[v] += state.reached as u64;
            distance_sum[v] += state.distance_sum;
        }
    }
    Ok(MsbfsOutput { sources, sources_reaching, distance_sum })
}

impl From<MsbfsOutput> for AlgorithmResult {
    fn from(out: MsbfsOutput) -> Self {
        let pairs: u64 = out.sources_reaching.iter().sum();
        let total: u64 = out.distance_sum.iter().sum();
        let mut summary = serde_json::Map::new();
        summary.insert("sources".into(), out.sources.len().into());
        summary.insert("reachable_pairs".into(), pairs.into());
        summary.insert(
            "mean_distance".into(),
            serde_json::json!(if pairs > 0 { total as f64 / pairs as f64 } else { 0.0 }),
        );
        AlgorithmResult {
            algorithm: "msbfs".into(),
            columns: vec![
                ("sources_reaching".into(), ValueColumn::Count(out.sources_reaching)),
                ("distance_sum".into(), ValueColumn::Count(out.distance_sum)),
            ],
            summary,
        }
    }
}
