//! Katz centrality with networkx's semantics (`networkx.katz_centrality`): from x₀ = 0,
//!
//! ```text
//! x_{k+1}(v) = α · Σ_{u → v} x_k(u) + β
//! ```
//! until Σ_v |x_{k+1}(v) − x_k(v)| < |V| · tolerance, then (by default) scaled to unit
//! Euclidean norm. Arcs count once each with weight 1 (networkx's `weight=None`); on an
//! undirected store every edge is two arcs, as in networkx's undirected graphs. The iteration
//! converges when α < 1/λ_max (the adjacency matrix's largest eigenvalue); otherwise, or when
//! `max_iterations` updates are not enough, the run fails as networkx's does
//! (`PowerIterationFailedConvergence`).
//!
//! As a vertex program every vertex sends x(u) along its out-arcs, `combine` sums, and `apply`
//! (on every vertex) computes the update and keeps |change| next to the value. The L1 change
//! of an update reaches every vertex one iteration later as the engine's `global_sum` (each
//! vertex's `global_contribution` is its change), so the iteration after the converged update
//! changes nothing and ends the run: one extra pass over the arcs instead of a second global
//! aggregate. It runs on every vertex-program engine, out-of-core on stream, cache and shards.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::{ProgramShape, ASSUMED_CONVERGENCE_ITERATIONS};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// Katz parameters (networkx's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Attenuation α. Default 0.1.
    pub alpha: f64,
    /// Weight β of every vertex's own term. Default 1.0.
    pub beta: f64,
    /// Convergence: the L1 change of an update below |V| · tolerance. Default 1e-6.
    pub tolerance: f64,
    /// Most updates. Default 1000.
    pub max_iterations: usize,
    /// Scale the result to unit Euclidean norm. Default true.
    pub normalized: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { alpha: 0.1, beta: 1.0, tolerance: 1e-6, max_iterations: 1000, normalized: true }
    }
}

/// Katz centrality per vertex in dense-id order.
#[derive(Debug, Clone, PartialEq)]
pub struct KatzOutput {
    pub centrality: Vec<f64>,
}

/// The program's value: (x, |change of the last update|).
type State = (f64, f64);

struct Katz {
    config: Config,
}

impl Katz {
    fn converged(&self, l1_change: f64, num_vertices: u64) -> bool {
        l1_change < num_vertices as f64 * self.config.tolerance
    }
}

impl VertexProgram for Katz {
    type Value = State;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn init(&self, _: VertexId, _: &GraphInfo) -> State {
        // No update yet: an infinite change, so iteration 0 never counts as converged.
        (0.0, f64::INFINITY)
    }
    fn scatter(&self, state: &State, _: EdgeRef) -> Option<f64> {
        Some(state.0)
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
    /// Every vertex sums x of all its in-neighbours, whatever the order: pulling engines fold
    /// each vertex's in-arcs instead of scattering along out-arcs (as PageRank does).
    fn supports_pull(&self) -> bool {
        true
    }
    /// A vertex sends its x along every out-arc.
    fn sends_uniform_messages(&self) -> bool {
        true
    }
    fn global_contribution(&self, _: VertexId, state: &State, _: u64) -> f64 {
        state.1
    }
    fn apply(&self, _: VertexId, state: &mut State, sum: f64, ctx: &IterationContext) -> bool {
        // Iteration i applies update i + 1; `global_sum` is the change of update i.
        if ctx.iteration >= self.config.max_iterations || self.converged(ctx.global_sum, ctx.graph.num_vertices) {
            return false;
        }
        let next = self.config.alpha * sum + self.config.beta;
        *state = (next, (next - state.0).abs());
        true
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(self.config.max_iterations + 1)
    }
    /// The change shrinks by about alpha times the largest eigenvalue an update, unknown before
    /// the run: `max_iterations` is the cap, and the planner assumes a count.
    fn expected_iterations(&self) -> Option<f64> {
        Some(ASSUMED_CONVERGENCE_ITERATIONS + 1.0)
    }
    fn checkpoint_key(&self) -> String {
        let c = self.config;
        format!("alpha {}, beta {}, tolerance {}, max_iterations {}", c.alpha, c.beta, c.tolerance, c.max_iterations)
    }
}

fn check(config: &Config) -> Result<()> {
    let finite = [config.alpha, config.beta, config.tolerance].iter().all(|x| x.is_finite());
    if !finite || config.tolerance <= 0.0 {
        return Err(Error::invalid(format!(
            "katz needs finite alpha and beta and a positive tolerance, got alpha {}, beta {}, tolerance {}",
            config.alpha, config.beta, config.tolerance
        )));
    }
    if config.max_iterations == 0 {
        return Err(Error::invalid("katz needs at least one iteration"));
    }
    Ok(())
}

pub fn run(runner: &Runner, config: &Config) -> Result<KatzOutput> {
    check(config)?;
    let program = Katz { config: *config };
    let states =
        runner.run_forms(&[ProgramShape::vertex_wire(&program)], |_| runner.run_vertex_program_wire(&program))?;
    if states.is_empty() {
        // No vertices, or a pregel rank other than 0 (rank 0 holds the values and reports).
        return Ok(KatzOutput { centrality: Vec::new() });
    }
    let change: f64 = states.iter().map(|s| s.1).sum();
    if !change.is_finite() {
        return Err(Error::invalid(format!(
            "katz diverged (the values overflowed): alpha {} is above 1/(largest eigenvalue of the adjacency matrix); \
             lower it",
            config.alpha
        )));
    }
    if !program.converged(change, states.len() as u64) {
        return Err(Error::invalid(format!(
            "katz did not converge in {} iterations (last change {change:.3e}, needs < |V| x tolerance = {:.3e}); \
             raise the iterations or the tolerance, or lower alpha below 1/(largest eigenvalue)",
            config.max_iterations,
            states.len() as f64 * config.tolerance
        )));
    }
    let mut centrality: Vec<f64> = states.iter().map(|s| s.0).collect();
    if config.normalized {
        let norm = centrality.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 0.0 {
            centrality.iter_mut().for_each(|x| *x /= norm);
        }
    }
    Ok(KatzOutput { centrality })
}

impl From<KatzOutput> for AlgorithmResult {
    fn from(out: KatzOutput) -> Self {
        let norm = out.centrality.iter().map(|x| x * x).sum::<f64>().sqrt();
        single_column("katz", "centrality", ValueColumn::Float(out.centrality), [("norm", norm.into())])
    }
}
