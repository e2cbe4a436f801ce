//! HITS hubs and authorities (Kleinberg, "Authoritative sources in a hyperlinked environment",
//! JACM 1999) with the semantics of networkx's power iteration (`hits_alg._hits_python`):
//! from h₀ = 1/|V|, each step computes
//!
//! ```text
//! a = Aᵀ h,   h = A a,   then h /= max(h), a /= max(a)
//! ```
//! until the L1 change of the max-scaled h is below `tolerance` (absolute, not scaled by |V|),
//! giving (h, a), each divided by its sum when `normalized`; when `max_iterations` steps are not
//! enough the run fails, as networkx's does (`PowerIterationFailedConvergence`). Arcs count with
//! weight 1, or their stored weight when `weighted` (networkx reads the `weight` attribute); on
//! an undirected store every edge is two arcs, as in networkx's undirected graphs. networkx's
//! public `hits` reaches the same vectors through ARPACK's SVD (`svds`): its `max_iter` and `tol`
//! are ARPACK's, and the two agree to about the tolerance.
//!
//! Why alternating vertex-program passes and not one program: a step multiplies by Aᵀ and then
//! by A — two directions — and needs three aggregates of different kinds (max h, max a, Σ|Δh|).
//! A vertex program has one direction and sums its global aggregates; a Pregel program has one
//! fold for all its aggregate slots and no weights on in-edges. Two one-iteration vertex
//! programs per step (`Out` for Aᵀh, `In` for Aa) over the values this module keeps give the
//! exact semantics, weights included, on every engine that runs vertex programs in both
//! directions: inmem, and out-of-core stream, cache and shards. The step's scaling and the
//! convergence test are one sequential pass over the |V| values in memory here, as the engines
//! keep vertex values in memory anyway (shards excepted).

use super::{AlgorithmResult, ValueColumn};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeDirection, EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// HITS parameters (networkx's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Convergence: the L1 change of the max-scaled hubs below this. Default 1e-8.
    pub tolerance: f64,
    /// Most steps. Default 100.
    pub max_iterations: usize,
    /// Divide hubs and authorities by their sums. Default true.
    pub normalized: bool,
    /// Arcs count with their stored weights; the store must be weighted. Default false.
    pub weighted: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { tolerance: 1e-8, max_iterations: 100, normalized: true, weighted: false }
    }
}

/// Hub and authority scores per vertex in dense-id order.
#[derive(Debug, Clone, PartialEq)]
pub struct HitsOutput {
    pub hubs: Vec<f64>,
    pub authorities: Vec<f64>,
    /// Steps run (networkx's iterations).
    pub iterations: usize,
}

/// One product with the adjacency matrix: every vertex sends `input[v]` (times the arc's
/// weight) along its arcs in `direction`, and its value becomes the sum it receives.
struct Product<'a> {
    input: &'a [f64],
    direction: EdgeDirection,
    weighted: bool,
}

impl VertexProgram for Product<'_> {
    type Value = f64;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn direction(&self) -> EdgeDirection {
        self.direction
    }
    fn uses_weights(&self) -> bool {
        self.weighted
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> f64 {
        self.input[v as usize]
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        // A zero sends nothing: selective engines skip its arcs.
        self.input[v as usize] != 0.0
    }
    fn scatter(&self, value: &f64, edge: EdgeRef) -> Option<f64> {
        Some(if self.weighted { value * edge.weight } else { *value })
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
    fn apply(&self, _: VertexId, value: &mut f64, sum: f64, _: &IterationContext) -> bool {
        *value = sum;
        false
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(1)
    }
    fn reads_out_degrees(&self) -> bool {
        false
    }
    fn has_global_contributions(&self) -> bool {
        false
    }
}

fn check(runner: &Runner, config: &Config) -> Result<()> {
    if !config.tolerance.is_finite() || config.tolerance <= 0.0 {
        return Err(Error::invalid(format!("hits needs a positive finite tolerance, got {}", config.tolerance)));
    }
    if config.max_iterations == 0 {
        return Err(Error::invalid("hits needs at least one iteration"));
    }
    let info = runner.graph_info();
    if config.weighted && !info.weighted {
        return Err(Error::invalid("hits with weights needs a weighted store (import one with weights)"));
    }
    if info.num_arcs == 0 {
        return Err(Error::invalid("hits is not defined on a graph without edges (every score would be 0/0)"));
    }
    Ok(())
}

/// Divides `values` by their largest entry (networkx's per-step scaling); an error when that is
/// not positive (weights that cancel out or are negative).
fn scale_by_max(values: &mut [f64], what: &str) -> Result<()> {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !(max > 0.0 && max.is_finite()) {
        return Err(Error::invalid(format!(
            "hits: the largest {what} score is {max}, not positive; weights must be positive"
        )));
    }
    values.iter_mut().for_each(|x| *x /= max);
    Ok(())
}

fn divide_by_sum(values: &mut [f64]) {
    let sum: f64 = values.iter().sum();
    values.iter_mut().for_each(|x| *x /= sum);
}

pub fn run(runner: &Runner, config: &Config) -> Result<HitsOutput> {
    check(runner, config)?;
    let n = runner.graph_info().num_vertices as usize;
    let mut hubs = vec![1.0 / n as f64; n];
    for step in 1..=config.max_iterations {
        // The hubs are held beside the engine, and the authorities too while the hubs of the
        // next step are computed from them: 16 bytes a vertex, declared for both products so
        // that an engine the Runner keeps from one to the next (cache) finds the same room.
        let product = |input: &[f64], direction| {
            let program = Product { input, direction, weighted: config.weighted };
            let shape = ProgramShape::vertex(&program).with_state(16);
            runner.run_forms(&[shape], |_| runner.run_vertex_program(&program))
        };
        let mut authorities = product(&hubs, EdgeDirection::Out)?;
        let mut next = product(&authorities, EdgeDirection::In)?;
        scale_by_max(&mut next, "hub")?;
        scale_by_max(&mut authorities, "authority")?;
        let change: f64 = next.iter().zip(&hubs).map(|(h, last)| (h - last).abs()).sum();
        hubs = next;
        if change < config.tolerance {
            if config.normalized {
                divide_by_sum(&mut hubs);
                divide_by_sum(&mut authorities);
            }
            return Ok(HitsOutput { hubs, authorities, iterations: step });
        }
    }
    Err(Error::invalid(format!(
        "hits did not converge in {} iterations (the L1 change of the hubs stayed at or above {:e}); raise the \
         iterations or the tolerance",
        config.max_iterations, config.tolerance
    )))
}

impl From<HitsOutput> for AlgorithmResult {
    fn from(out: HitsOutput) -> Self {
        AlgorithmResult {
            algorithm: "hits".to_string(),
            columns: vec![
                ("hub".to_string(), ValueColumn::Float(out.hubs)),
                ("authority".to_string(), ValueColumn::Float(out.authorities)),
            ],
            summary: [("iterations".to_string(), out.iterations.into())].into_iter().collect(),
        }
    }
}
