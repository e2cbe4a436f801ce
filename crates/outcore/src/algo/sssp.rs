//! Single-source shortest paths (LDBC Graphalytics SSSP): the length of a shortest path from a
//! source to every vertex along out-edges, with non-negative f64 edge weights (1.0 each on an
//! unweighted store). Unreachable vertices get `f64::INFINITY` (printed `infinity`).
//!
//! As a vertex program this is Bellman-Ford with a frontier (the push variant of Redio and
//! GraphD): a vertex whose distance dropped sends `distance + weight` along its out-edges,
//! `combine` keeps the minimum. Negative or NaN weights would make the result meaningless, so
//! a first one-iteration program looks at every weight and the run fails with a clear error
//! when it finds one (engines only show weights to `scatter`, so the check is a program too).
//!
//! On engines that run neighborhood queries (nwsm) each Bellman-Ford round is a one-level query
//! ([`SsspRound`], TurboGraph++ §2.3 with k = 1): every reached vertex of a level-1 window sends
//! `distance + 1` to the out-neighbours in its full list, targets gather the minimum; rounds run
//! until no distance drops. Full lists carry no weights, so there the store must be unweighted.

use super::bfs::check_source;
use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::program::{Emitter, Min, Nbr, NeighborhoodQuery, NeighborhoodView};
use crate::VertexId;

/// SSSP parameters (no defaults: the source is required).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Dense id of the source vertex.
    pub source: VertexId,
}

/// Distance per vertex in dense-id order; infinity where not reached.
#[derive(Debug, Clone, PartialEq)]
pub struct SsspOutput {
    pub distance: Vec<f64>,
}

struct Sssp {
    source: VertexId,
}

impl VertexProgram for Sssp {
    type Value = f64;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn checkpoint_key(&self) -> String {
        format!("source {}", self.source)
    }
    fn uses_weights(&self) -> bool {
        true
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> f64 {
        if v == self.source {
            0.0
        } else {
            f64::INFINITY
        }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        v == self.source
    }
    fn scatter(&self, distance: &f64, edge: EdgeRef) -> Option<f64> {
        Some(distance + edge.weight)
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a.min(b)
    }
    fn identity(&self) -> f64 {
        f64::INFINITY
    }
    fn apply(&self, _: VertexId, distance: &mut f64, candidate: f64, _: &IterationContext) -> bool {
        let improved = candidate < *distance;
        if improved {
            *distance = candidate;
        }
        improved
    }
}

/// One iteration over every edge: per target, (number of bad weights, the smallest one).
struct BadWeights;

impl VertexProgram for BadWeights {
    type Value = (u64, f64);
    type Msg = (u64, f64);

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn uses_weights(&self) -> bool {
        true
    }
    fn init(&self, _: VertexId, _: &GraphInfo) -> (u64, f64) {
        (0, 0.0)
    }
    fn scatter(&self, _: &(u64, f64), edge: EdgeRef) -> Option<(u64, f64)> {
        (edge.weight.is_nan() || edge.weight < 0.0).then_some((1, edge.weight))
    }
    fn combine(&self, a: (u64, f64), b: (u64, f64)) -> (u64, f64) {
        (a.0 + b.0, if b.1.is_nan() || b.1 < a.1 { b.1 } else { a.1 })
    }
    fn identity(&self) -> (u64, f64) {
        (0, 0.0)
    }
    fn apply(&self, _: VertexId, value: &mut (u64, f64), msg: (u64, f64), _: &IterationContext) -> bool {
        *value = msg;
        false
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(1)
    }
}

/// One Bellman-Ford round over unit-weight out-arcs as a one-level neighborhood query.
struct SsspRound<'a> {
    distance: &'a [f64],
}

impl NeighborhoodQuery for SsspRound<'_> {
    type Value = Min<f64>;
    type Output = f64;

    fn levels(&self) -> usize {
        1
    }
    fn adj_scatter(&self, _: usize, view: &dyn NeighborhoodView, out: &mut dyn Emitter<Min<f64>>, u: u64, adj: &[Nbr]) {
        let d = self.distance[view.store_id(u) as usize];
        if d.is_finite() {
            adj.iter().filter(|v| v.is_out()).for_each(|v| out.update(v.id(), Min(d + 1.0)));
        }
    }
    fn vertex_gather(&self, gathered: Min<f64>, update: Min<f64>) -> Min<f64> {
        gathered.min(update)
    }
    fn vertex_apply(&self, v: VertexId, _: u64, gathered: Min<f64>) -> f64 {
        self.distance[v as usize].min(gathered.0)
    }
}

fn run_rounds(runner: &Runner, source: VertexId) -> Result<Vec<f64>> {
    if runner.graph_info().weighted {
        return Err(Error::Unsupported(
            "sssp on the nwsm engine reads full adjacency lists, which carry no weights; this store is weighted".into(),
        ));
    }
    let n = runner.graph_info().num_vertices as usize;
    let distance: Vec<f64> = (0..n).map(|v| if v as u64 == source { 0.0 } else { f64::INFINITY }).collect();
    super::until_stable(distance, |distance| Ok(runner.run_neighborhood_query(&SsspRound { distance })?.values))
}

pub fn run(runner: &Runner, config: &Config) -> Result<SsspOutput> {
    check_source(runner, config.source)?;
    // One-level queries read full adjacency lists, which carry no weights.
    let mut forms = vec![ProgramShape::vertex_wire(&Sssp { source: config.source })];
    if !runner.graph_info().weighted {
        // The rounds keep the last distances beside the engine.
        forms.push(ProgramShape::query_rounds(1, 8, None).with_state(8));
    }
    let distance = runner.run_forms(&forms, |form| match form {
        0 => run_program(runner, config.source),
        _ => run_rounds(runner, config.source),
    })?;
    Ok(SsspOutput { distance })
}

/// The vertex-program form, after checking that no weight is negative or NaN.
fn run_program(runner: &Runner, source: VertexId) -> Result<Vec<f64>> {
    if runner.graph_info().weighted {
        let bad = runner.run_vertex_program_wire(&BadWeights)?.into_iter().reduce(|a, b| BadWeights.combine(a, b));
        if let Some((count @ 1.., example)) = bad {
            return Err(Error::invalid(format!(
                "sssp needs non-negative edge weights, but {count} edge(s) have a negative or NaN weight (e.g. {example})"
            )));
        }
    }
    runner.run_vertex_program_wire(&Sssp { source })
}

impl From<SsspOutput> for AlgorithmResult {
    fn from(out: SsspOutput) -> Self {
        let reached = out.distance.iter().filter(|d| d.is_finite()).count();
        single_column("sssp", "distance", ValueColumn::Float(out.distance), [("reached", reached.into())])
    }
}
