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

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
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

struct PageRank {
    damping: f64,
    iterations: usize,
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

pub fn run(runner: &Runner, config: &Config) -> Result<PageRankOutput> {
    if !(0.0..=1.0).contains(&config.damping) {
        return Err(Error::invalid(format!("the damping factor must be in [0, 1], got {}", config.damping)));
    }
    let rank = runner.run_vertex_program_wire(&PageRank { damping: config.damping, iterations: config.iterations })?;
    Ok(PageRankOutput { rank })
}

impl From<PageRankOutput> for AlgorithmResult {
    fn from(out: PageRankOutput) -> Self {
        let sum: f64 = out.rank.iter().sum();
        single_column("pr", "rank", ValueColumn::Float(out.rank), [("rank_sum", sum.into())])
    }
}
