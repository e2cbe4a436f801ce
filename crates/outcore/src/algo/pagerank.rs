//! PageRank exactly as LDBC Graphalytics defines it (specification §2.3.3): a fixed number of
//! synchronous iterations from PR₀(v) = 1/|V|,
//!
//! ```text
//! PRᵢ(v) = (1 − d)/|V| + d · Σ_{u → v} PRᵢ₋₁(u)/outdeg(u) + (d/|V|) · Σ_{sinks w} PRᵢ₋₁(w)
//! ```
//! where sinks are vertices without out-edges: their rank is spread over all vertices, so the
//! ranks keep summing to 1. On an undirected store outdeg is the degree.
//!
//! As a vertex program every vertex scatters PR(u)/outdeg(u) each iteration, `combine` sums,
//! the sink mass is the engine's `global_sum` (each sink's `global_contribution` is its rank),
//! and `apply` runs on every vertex (`applies_to_all`) so that vertices without in-edges get
//! the teleport term too. Messages are whole contributions of one iteration, not increments
//! (`MessageKind::Value`); for the accumulative variant see [`super::pagerank_delta`].
//!
//! On engines that run neighborhood queries (nwsm) every iteration is a one-level query
//! ([`PageRankRound`], TurboGraph++ §2.3 with k = 1): each vertex of a level-1 window sends
//! PR(u)/outdeg(u) to the out-neighbours in its full list, targets gather the sum, apply adds
//! the teleport and sink terms. A first query counts out-degrees from the lists; full lists hold
//! each neighbour once and no self-loop, so the graph must have neither duplicate arcs nor
//! self-loops (checked: the out-degrees must add up to the store's arc count).

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::program::{Emitter, Nbr, NeighborhoodQuery, NeighborhoodView};
use crate::VertexId;

/// PageRank parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Damping factor d, in [0, 1]. Default 0.85.
    pub damping: f64,
    /// Number of iterations. Default 10 (as in the Graphalytics data sets).
    pub iterations: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { damping: 0.85, iterations: 10 }
    }
}

/// Rank per vertex in dense-id order.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRankOutput {
    pub rank: Vec<f64>,
}

pub(crate) struct PageRank {
    pub(crate) damping: f64,
    pub(crate) iterations: usize,
}

impl VertexProgram for PageRank {
    type Value = f64;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn init(&self, _: VertexId, graph: &GraphInfo) -> f64 {
        1.0 / graph.num_vertices as f64
    }
    fn scatter(&self, rank: &f64, edge: EdgeRef) -> Option<f64> {
        Some(rank / edge.source_out_degree as f64)
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
    /// A pull folds each vertex's messages in ascending source order from 0.0, as a push in
    /// vertex order adds them: the sums, and so the ranks, are bit-identical either way.
    fn supports_pull(&self) -> bool {
        true
    }
    fn sends_uniform_messages(&self) -> bool {
        true
    }
    fn global_contribution(&self, _: VertexId, rank: &f64, out_degree: u64) -> f64 {
        if out_degree == 0 {
            *rank
        } else {
            0.0
        }
    }
    fn apply(&self, _: VertexId, rank: &mut f64, sum: f64, ctx: &IterationContext) -> bool {
        let n = ctx.graph.num_vertices as f64;
        *rank = (1.0 - self.damping) / n + self.damping * sum + self.damping * ctx.global_sum / n;
        true
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(self.iterations)
    }
    fn checkpoint_key(&self) -> String {
        format!("damping {}, iterations {}", self.damping, self.iterations)
    }
}

/// One PageRank iteration as a one-level neighborhood query.
struct PageRankRound<'a> {
    rank: &'a [f64],
    out_degree: &'a [f64],
    damping: f64,
    sink_mass: f64,
}

impl NeighborhoodQuery for PageRankRound<'_> {
    type Value = f64;
    type Output = f64;

    fn levels(&self) -> usize {
        1
    }
    fn adj_scatter(&self, _: usize, view: &dyn NeighborhoodView, out: &mut dyn Emitter<f64>, u: u64, adj: &[Nbr]) {
        let u = view.store_id(u) as usize;
        let share = self.rank[u] / self.out_degree[u];
        adj.iter().filter(|v| v.is_out()).for_each(|v| out.update(v.id(), share));
    }
    fn vertex_gather(&self, gathered: f64, update: f64) -> f64 {
        gathered + update
    }
    fn vertex_apply(&self, _: VertexId, _: u64, sum: f64) -> f64 {
        let n = self.rank.len() as f64;
        (1.0 - self.damping) / n + self.damping * sum + self.damping * self.sink_mass / n
    }
}

fn run_rounds(runner: &Runner, config: &Config) -> Result<Vec<f64>> {
    let n = runner.graph_info().num_vertices as usize;
    let out_degree = super::simple_graph_out_degrees(runner, "pr")?;
    let mut rank = vec![1.0 / n as f64; n];
    for _ in 0..config.iterations {
        let sink_mass = rank.iter().zip(&out_degree).filter(|(_, &d)| d == 0.0).map(|(r, _)| r).sum();
        let round = PageRankRound { rank: &rank, out_degree: &out_degree, damping: config.damping, sink_mass };
        rank = runner.run_neighborhood_query(&round)?.values;
    }
    Ok(rank)
}

pub fn run(runner: &Runner, config: &Config) -> Result<PageRankOutput> {
    if !(0.0..=1.0).contains(&config.damping) {
        return Err(Error::invalid(format!("the damping factor must be in [0, 1], got {}", config.damping)));
    }
    let program = PageRank { damping: config.damping, iterations: config.iterations };
    // The rounds keep each vertex's rank and out-degree beside the engine.
    let rounds = ProgramShape::query_rounds(1, 8, Some(config.iterations + 1)).with_state(16);
    let forms = [ProgramShape::vertex_wire(&program), rounds];
    let rank = runner.run_forms(&forms, |form| match form {
        0 => runner.run_vertex_program_wire(&program),
        _ => run_rounds(runner, config),
    })?;
    Ok(PageRankOutput { rank })
}

impl From<PageRankOutput> for AlgorithmResult {
    fn from(out: PageRankOutput) -> Self {
        let sum: f64 = out.rank.iter().sum();
        single_column("pr", "rank", ValueColumn::Float(out.rank), [("rank_sum", sum.into())])
    }
}
