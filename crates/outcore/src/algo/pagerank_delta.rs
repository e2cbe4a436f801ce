//! Delta PageRank (`pr-delta`): PageRank by accumulation, run until the changes fall below a
//! tolerance — the formulation of Maiter (Zhang et al., TPDS 2014) that the accumulation-based
//! engines of "Load the Edges You Need" (Vora et al., ATC 2016) and Redio run.
//!
//! It computes the fixed point of
//!
//! ```text
//! PR(v) = (1 − d)/|V| + d · Σ_{u → v} PR(u)/outdeg(u)
//! ```
//! **without** sink redistribution: the mass reaching a sink is lost, so the ranks sum to less
//! than 1 when there are sinks (use [`super::pagerank`] for the Graphalytics definition). The
//! fixed point is Σₖ (d·Pᵀ)ᵏ b with b = (1 − d)/|V|, which accumulation builds term by term.
//!
//! Each vertex keeps its rank, the pending delta it has received but not yet propagated, and
//! the delta it propagates in the next iteration. Initially rank = delta = (1 − d)/|V|. An
//! active vertex u sends d·delta(u)/outdeg(u) along each out-edge; `combine` sums; `apply` adds
//! the sum to the rank and to the pending delta, and when |pending| > tolerance/|V| the
//! vertex hands the pending delta on (it becomes the delta to send) and stays active.
//! Tolerance is thus relative to the mean rank 1/|V|: at the end every vertex holds less than
//! tolerance/|V| of unpropagated mass, so the total is below `tolerance` and the L1 distance
//! to the fixed point is below tolerance·d/(1 − d).

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram, Wire};
use crate::VertexId;

/// Delta-PageRank parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Damping factor d, in [0, 1). Default 0.85.
    pub damping: f64,
    /// Total unpropagated mass allowed at the end (per vertex: tolerance/|V|). Default 1e-9.
    pub tolerance: f64,
    /// Optional cap on iterations. Default none (the run converges since d < 1).
    pub max_iterations: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Config { damping: 0.85, tolerance: 1e-9, max_iterations: None }
    }
}

/// Rank per vertex in dense-id order.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRankDeltaOutput {
    pub rank: Vec<f64>,
}

#[derive(Debug, Clone, Copy)]
struct State {
    rank: f64,
    pending: f64,
    delta: f64,
}

impl Wire for State {
    const BYTES: usize = 24;
    fn put(&self, out: &mut Vec<u8>) {
        [self.rank, self.pending, self.delta].put(out);
    }
    fn get(bytes: &[u8]) -> Self {
        let [rank, pending, delta] = <[f64; 3]>::get(bytes);
        State { rank, pending, delta }
    }
}

struct PageRankDelta {
    config: Config,
}

impl VertexProgram for PageRankDelta {
    type Value = State;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn init(&self, _: VertexId, graph: &GraphInfo) -> State {
        let base = (1.0 - self.config.damping) / graph.num_vertices as f64;
        State { rank: base, pending: 0.0, delta: base }
    }
    fn scatter(&self, state: &State, edge: EdgeRef) -> Option<f64> {
        Some(self.config.damping * state.delta / edge.source_out_degree as f64)
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn identity(&self) -> f64 {
        0.0
    }
    fn apply(&self, _: VertexId, state: &mut State, sum: f64, ctx: &IterationContext) -> bool {
        state.rank += sum;
        state.pending += sum;
        let propagate = state.pending.abs() > self.config.tolerance / ctx.graph.num_vertices as f64;
        if propagate {
            state.delta = std::mem::take(&mut state.pending);
        }
        propagate
    }
    /// A vertex's message depends only on its own delta and out-degree, and the sum it
    /// receives does not depend on the order the messages arrive in but for rounding: a pull
    /// gives every vertex what a push gives, within a few ulps of each sum. Most iterations
    /// keep most vertices active (84 % on RMAT-22), where a pull is the cheaper delivery.
    fn supports_pull(&self) -> bool {
        true
    }
    fn sends_uniform_messages(&self) -> bool {
        true
    }
    fn max_iterations(&self) -> Option<usize> {
        self.config.max_iterations
    }
    /// The mass left, (1 − d) at first, shrinks by d an iteration until below the tolerance:
    /// ln(tolerance / (1 − d)) / ln d iterations (116 at the defaults). Vertices hold unequal
    /// shares, so runs take somewhat more: 148 on RMAT-18 and RMAT-22.
    fn expected_iterations(&self) -> Option<f64> {
        let Config { damping, tolerance, .. } = self.config;
        let iterations = ((tolerance / (1.0 - damping)).ln() / damping.ln()).ceil();
        (iterations.is_finite()).then_some(iterations.max(1.0))
    }
    fn checkpoint_key(&self) -> String {
        format!("{:?}", self.config)
    }
}

pub fn run(runner: &Runner, config: &Config) -> Result<PageRankDeltaOutput> {
    if !(0.0..1.0).contains(&config.damping) {
        return Err(Error::invalid(format!("pr-delta needs a damping factor in [0, 1), got {}", config.damping)));
    }
    if config.tolerance.is_nan() || config.tolerance <= 0.0 {
        return Err(Error::invalid(format!("pr-delta needs a positive tolerance, got {}", config.tolerance)));
    }
    let states = runner.run_vertex_program_wire(&PageRankDelta { config: *config })?;
    Ok(PageRankDeltaOutput { rank: states.into_iter().map(|s| s.rank).collect() })
}

impl From<PageRankDeltaOutput> for AlgorithmResult {
    fn from(out: PageRankDeltaOutput) -> Self {
        let sum: f64 = out.rank.iter().sum();
        single_column("pr-delta", "rank", ValueColumn::Float(out.rank), [("rank_sum", sum.into())])
    }
}
