//! Betweenness centrality by Brandes' algorithm (Brandes 2001), exact or from sampled sources
//! (Brandes & Pich 2007; the BASC paper's BC samples 128 sources, §5).
//!
//! For each source `s`, two vertex programs run over the Runner:
//! 1. **forward** — level-synchronous BFS along out-edges that also counts shortest paths:
//!    the frontier (depth `i`) sends its path count σ, counts are summed, and a vertex first
//!    reached in iteration `i` gets depth `i + 1` and σ = the sum (all its predecessors are in
//!    the frontier of that same iteration);
//! 2. **backward** — dependency accumulation by level, deepest first: in iteration `j` the
//!    vertices at level `L = D − j` send `(1 + δ(w)) / σ(w)` along their *in*-edges
//!    ([`EdgeDirection::In`]), and a vertex at level `L − 1` sets
//!    `δ(v) = σ(v) · Σ (1 + δ(w)) / σ(w)` over its successors `w` (messages from vertices at
//!    other levels are not summed into it: only level `L` sends in iteration `j`, and only
//!    level `L − 1` takes the sum). Every vertex applies every iteration
//!    ([`applies_to_all`](VertexProgram::applies_to_all)) so that level `L − 1` is active next
//!    even where it has no successor.
//!
//! `bc(v) = Σ_s δ_s(v)` over the sources, `v ≠ s`. Unweighted (hop) shortest paths.
//!
//! **Normalisation** follows networkx ≥ 3.5 `betweenness_centrality(G, k, normalized,
//! endpoints=False)` exactly (its `_rescale`), with `N = |V| − 1`:
//! * all vertices as sources: `normalized` scales by `1 / (N (N − 1))`; otherwise undirected
//!   graphs are halved (each unordered pair was counted from both ends) and directed ones kept;
//! * `k < |V|` sampled sources: a vertex that is not a source is scaled by `1 / (k (N − 1))`
//!   (normalized) or `N / (k c)` (not normalized, `c` = 2 undirected, 1 directed), and a source
//!   by the same with `k − 1` in place of `k` (a source cannot lie on its own paths).
//!
//! Sources are given, or sampled (`num_sources`, `seed`) by original-id rank (see `msbfs`);
//! `num_sources >= |V|` gives the exact value.

use super::msbfs::sample_sources;
use super::{AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeDirection, EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

const UNREACHED: u64 = u64::MAX;

/// Default number of sampled sources (the paper samples 128; each costs two traversals).
pub const DEFAULT_NUM_SOURCES: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Dense ids of the sources; all vertices for the exact value.
    pub sources: Vec<VertexId>,
    /// Scale as networkx's `normalized=True` (the default).
    pub normalized: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BcOutput {
    pub centrality: Vec<f64>,
    pub sources: usize,
    pub exact: bool,
}

/// Depth and number of shortest paths from the source.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PathCount {
    depth: u64,
    sigma: f64,
}

struct Forward {
    source: VertexId,
}

impl VertexProgram for Forward {
    type Value = PathCount;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> PathCount {
        if v == self.source {
            PathCount { depth: 0, sigma: 1.0 }
        } else {
            PathCount { depth: UNREACHED, sigma: 0.0 }
        }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        v == self.source
    }
    /// Depth is the iteration of first arrival: a delayed message would give a wrong depth.
    fn tolerates_delays(&self) -> bool {
        false
    }
    fn scatter(&self, value: &PathCount, _: EdgeRef) -> Option<f64> {
        Some(value.sigma)
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn identity(&self) -> f64 {
        0.0
    }
    fn apply(&self, _: VertexId, value: &mut PathCount, paths: f64, ctx: &IterationContext) -> bool {
        if value.depth != UNREACHED {
            return false;
        }
        value.depth = ctx.iteration as u64 + 1;
        value.sigma = paths;
        true
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Dependency {
    depth: u64,
    sigma: f64,
    delta: f64,
}

struct Backward<'a> {
    forward: &'a [PathCount],
    max_depth: u64,
}

impl VertexProgram for Backward<'_> {
    type Value = Dependency;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn direction(&self) -> EdgeDirection {
        EdgeDirection::In
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> Dependency {
        let f = self.forward[v as usize];
        Dependency { depth: f.depth, sigma: f.sigma, delta: 0.0 }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        self.forward[v as usize].depth == self.max_depth
    }
    fn scatter(&self, value: &Dependency, _: EdgeRef) -> Option<f64> {
        Some((1.0 + value.delta) / value.sigma)
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn identity(&self) -> f64 {
        0.0
    }
    fn applies_to_all(&self) -> bool {
        true
    }
    fn apply(&self, _: VertexId, value: &mut Dependency, sum: f64, ctx: &IterationContext) -> bool {
        // Level that sent in this iteration; its predecessors are one level up.
        let sending = self.max_depth - ctx.iteration as u64;
        if value.depth == UNREACHED || value.depth + 1 != sending {
            return false;
        }
        value.delta = value.sigma * sum;
        true
    }
    fn max_iterations(&self) -> Option<usize> {
        // Iteration j computes level D − j − 1; level 0 (the source) is not needed.
        Some(self.max_depth.saturating_sub(1) as usize)
    }
}

/// Sources for `num_sources` sampled with `seed` (all vertices when `num_sources >= |V|`).
pub fn sampled(runner: &Runner, num_sources: usize, seed: u64, normalized: bool) -> Result<Config> {
    Ok(Config { sources: sample_sources(runner, num_sources, seed)?, normalized })
}

pub fn run(runner: &Runner, config: &Config) -> Result<BcOutput> {
    let info = runner.graph_info();
    let n = info.num_vertices;
    let mut sources = config.sources.clone();
    sources.sort_unstable();
    sources.dedup();
    if let Some(&bad) = sources.iter().find(|&&s| s >= n) {
        return Err(Error::invalid(format!("source vertex (dense id {bad}) is not in the graph ({n} vertices)")));
    }
    let mut centrality = vec![0.0f64; n as usize];
    for &source in &sources {
        runner.cancel_token().check()?;
        let forward = runner.run_vertex_program(&Forward { source })?;
        let max_depth = forward.iter().filter(|f| f.depth != UNREACHED).map(|f| f.depth).max().unwrap_or(0);
        if max_depth < 2 {
            continue; // no vertex lies between the source and another vertex
        }
        let dependencies = runner.run_vertex_program(&Backward { forward: &forward, max_depth })?;
        for (v, d) in dependencies.iter().enumerate() {
            if v as u64 != source && d.depth != UNREACHED {
                centrality[v] += d.delta;
            }
        }
    }
    let exact = sources.len() as u64 == n;
    rescale(&mut centrality, &sources, exact, config.normalized, info.directed);
    Ok(BcOutput { centrality, sources: sources.len(), exact })
}

/// networkx's `_rescale` for `endpoints=False` (see the module doc).
fn rescale(centrality: &mut [f64], sources: &[VertexId], exact: bool, normalized: bool, directed: bool) {
    let n = centrality.len() as f64;
    let big_n = n - 1.0;
    if big_n < 2.0 {
        return;
    }
    let correction = if directed { 1.0 } else { 2.0 };
    if exact {
        let scale = if normalized { 1.0 / (big_n * (big_n - 1.0)) } else { big_n / (big_n * correction) };
        centrality.iter_mut().for_each(|c| *c *= scale);
        return;
    }
    let k = sources.len() as f64;
    let (scale_source, scale_other) = if normalized {
        (if k > 1.0 { 1.0 / ((k - 1.0) * (big_n - 1.0)) } else { f64::NAN }, 1.0 / (k * (big_n - 1.0)))
    } else {
        (if k > 1.0 { big_n / ((k - 1.0) * correction) } else { f64::NAN }, big_n / (k * correction))
    };
    for (v, c) in centrality.iter_mut().enumerate() {
        *c *= if sources.binary_search(&(v as u64)).is_ok() { scale_source } else { scale_other };
    }
}

impl From<BcOutput> for AlgorithmResult {
    fn from(out: BcOutput) -> Self {
        let mut summary = serde_json::Map::new();
        summary.insert("sources".into(), out.sources.into());
        summary.insert("exact".into(), out.exact.into());
        AlgorithmResult {
            algorithm: "bc".into(),
            columns: vec![("centrality".into(), ValueColumn::Float(out.centrality))],
            summary,
        }
    }
}
