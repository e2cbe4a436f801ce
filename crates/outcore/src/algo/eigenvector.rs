//! Eigenvector centrality with networkx's semantics (`networkx.eigenvector_centrality`): power
//! iteration on Aᵀ + I (the shift makes it converge on bipartite graphs too) from x₀ = 1/|V|,
//!
//! ```text
//! x_{k+1} = (Aᵀ + I) x_k / ‖(Aᵀ + I) x_k‖₂
//! ```
//! until Σ_v |x_{k+1}(v) − x_k(v)| < |V| · tolerance, giving x_{k+1} (unit Euclidean norm);
//! when `max_iterations` updates are not enough the run fails, as networkx's does
//! (`PowerIterationFailedConvergence`). Arcs count once each with weight 1 (networkx's
//! `weight=None`), or with their stored weight when `weighted`; on an undirected store every
//! edge is two arcs, as in networkx's undirected graphs.
//!
//! As a vertex program every vertex sends its raw value y(u) along its out-arcs, `combine`
//! sums. Each update needs two aggregates of the same vector: its Euclidean norm (to
//! normalise) and, once normalised, its L1 change (to stop). The engine hands `apply` both
//! sums of the values as they stood before the iteration's scatter — `global_sum` is Σ y²,
//! `second_global_sum` is Σ of the per-vertex changes that the previous `apply` stored — so
//! iteration i normalises update i (x_i = y_i / ‖y_i‖, its change kept per vertex) and sees
//! whether update i − 1 converged. A converged update is found one iteration after it is
//! normalised; that iteration stops without changing anything and the result is the x_{i−1}
//! every vertex kept: update k costs k + 1 passes over the arcs. Scattering the raw y and
//! dividing in `apply` gives the same vector as networkx's divide-then-multiply, as the
//! product is linear. It runs on every vertex-program engine, out-of-core on stream, cache,
//! shards and pregel.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::{ProgramShape, ASSUMED_CONVERGENCE_ITERATIONS};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// Eigenvector-centrality parameters (networkx's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Convergence: the L1 change of an update below |V| · tolerance. Default 1e-6.
    pub tolerance: f64,
    /// Most updates. Default 100.
    pub max_iterations: usize,
    /// Arcs count with their stored weights (networkx's `weight="weight"`); the store must be
    /// weighted. Default false: every arc counts 1.
    pub weighted: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { tolerance: 1e-6, max_iterations: 100, weighted: false }
    }
}

/// Eigenvector centrality per vertex in dense-id order (unit Euclidean norm).
#[derive(Debug, Clone, PartialEq)]
pub struct EigenvectorOutput {
    pub centrality: Vec<f64>,
}

/// The program's value: [y, x, change]. y is the raw next vector, (Aᵀ + I) x_i at the vertex;
/// x the vertex's entry of the last normalised update x_i, and change |x_i − x_{i−1}| there.
type State = [f64; 3];
const RAW: usize = 0;
const X: usize = 1;
const CHANGE: usize = 2;

struct Eigenvector {
    config: Config,
}

impl Eigenvector {
    fn converged(&self, l1_change: f64, num_vertices: u64) -> bool {
        l1_change < num_vertices as f64 * self.config.tolerance
    }
}

impl VertexProgram for Eigenvector {
    type Value = State;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn uses_weights(&self) -> bool {
        self.config.weighted
    }
    fn init(&self, _: VertexId, graph: &GraphInfo) -> State {
        // x₀ = 1/|V| (networkx's all-ones start divided by its sum), not normalised; no update
        // yet, so an infinite change.
        let start = 1.0 / graph.num_vertices as f64;
        [start, f64::NAN, f64::INFINITY]
    }
    fn scatter(&self, state: &State, edge: EdgeRef) -> Option<f64> {
        let weight = if self.config.weighted { edge.weight } else { 1.0 };
        Some(state[RAW] * weight)
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
    /// Every vertex sums the raw values of all its in-neighbours, whatever the order: pulling
    /// engines fold each vertex's in-arcs instead of scattering along out-arcs.
    fn supports_pull(&self) -> bool {
        true
    }
    /// Unweighted, a vertex sends its raw value along every out-arc; weighted, each arc's
    /// message is scaled by the arc's weight.
    fn sends_uniform_messages(&self) -> bool {
        !self.config.weighted
    }
    fn global_contribution(&self, _: VertexId, state: &State, _: u64) -> f64 {
        state[RAW] * state[RAW]
    }
    fn second_global_contribution(&self, _: VertexId, state: &State, _: u64) -> f64 {
        state[CHANGE]
    }
    fn apply(&self, _: VertexId, state: &mut State, sum: f64, ctx: &IterationContext) -> bool {
        // Iteration i: `second_global_sum` is the change of update i − 1, `global_sum` ‖y_i‖².
        // Iteration max_iterations + 1 only looks at the last update's change.
        let past_the_last = ctx.iteration > self.config.max_iterations;
        if past_the_last || self.converged(ctx.second_global_sum, ctx.graph.num_vertices) {
            return false;
        }
        // x₀ is used as it is; later updates are divided by their norm (1 if it is 0, as networkx).
        let norm = if ctx.iteration == 0 { 1.0 } else { ctx.global_sum.sqrt() };
        let norm = if norm > 0.0 { norm } else { 1.0 };
        let x = state[RAW] / norm;
        let change = if ctx.iteration == 0 { f64::INFINITY } else { (x - state[X]).abs() };
        *state = [(sum + state[RAW]) / norm, x, change];
        true
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(self.config.max_iterations + 2)
    }
    /// The run ends at the tolerance, at a rate set by the two largest eigenvalues, unknown
    /// before it: `max_iterations` is the cap, and the planner assumes a count.
    fn expected_iterations(&self) -> Option<f64> {
        Some(ASSUMED_CONVERGENCE_ITERATIONS + 2.0)
    }
    fn checkpoint_key(&self) -> String {
        let c = self.config;
        format!("tolerance {}, max_iterations {}, weighted {}", c.tolerance, c.max_iterations, c.weighted)
    }
}

fn check(runner: &Runner, config: &Config) -> Result<()> {
    if !config.tolerance.is_finite() || config.tolerance <= 0.0 {
        return Err(Error::invalid(format!("eigenvector needs a positive finite tolerance, got {}", config.tolerance)));
    }
    if config.max_iterations == 0 {
        return Err(Error::invalid("eigenvector needs at least one iteration"));
    }
    if config.weighted && !runner.graph_info().weighted {
        return Err(Error::invalid("eigenvector with weights needs a weighted store (import one with weights)"));
    }
    if runner.graph_info().num_vertices == 0 {
        return Err(Error::invalid("eigenvector centrality is not defined on a graph without vertices"));
    }
    Ok(())
}

pub fn run(runner: &Runner, config: &Config) -> Result<EigenvectorOutput> {
    check(runner, config)?;
    let program = Eigenvector { config: *config };
    let states =
        runner.run_forms(&[ProgramShape::vertex_wire(&program)], |_| runner.run_vertex_program_wire(&program))?;
    if states.is_empty() {
        // A pregel rank other than 0: rank 0 holds the values and reports.
        return Ok(EigenvectorOutput { centrality: Vec::new() });
    }
    let change: f64 = states.iter().map(|s| s[CHANGE]).sum();
    if !program.converged(change, states.len() as u64) {
        return Err(Error::invalid(format!(
            "eigenvector centrality did not converge in {} iterations (last change {change:.3e}, needs < |V| x \
             tolerance = {:.3e}); raise the iterations or the tolerance",
            config.max_iterations,
            states.len() as f64 * config.tolerance
        )));
    }
    Ok(EigenvectorOutput { centrality: states.iter().map(|s| s[X]).collect() })
}

impl From<EigenvectorOutput> for AlgorithmResult {
    fn from(out: EigenvectorOutput) -> Self {
        let norm = out.centrality.iter().map(|x| x * x).sum::<f64>().sqrt();
        single_column("eigenvector", "centrality", ValueColumn::Float(out.centrality), [("norm", norm.into())])
    }
}
