//! The in-memory engine's answer to the planner ([`super::planner::Engine`]): it runs every
//! program form, with both adjacency layouts loaded, as long as they and the vertex state fit
//! the budget (the same sums `inmem` checks before it loads anything). An edge pass reads each
//! arc once, so it is streamed rather than loaded (see `stream::edge_pass`).

use super::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use super::EngineKind;

/// Arc scans saved by pull iterations, as planned: well below the 18.7 measured for BFS on
/// RMAT-22, since graphs with longer diameters pull less.
const PULL_SAVING: f64 = 4.0;

/// The reference engine (see [`super::inmem`]).
pub struct InMemoryEngine;

/// Whether the run loads the weights: only for a program that reads them (neighborhood
/// queries load whole layouts).
fn loads_weights(graph: &PlanGraph, shape: &ProgramShape) -> bool {
    graph.weighted && (shape.uses_weights || shape.form == ProgramForm::Neighborhood)
}

/// Bytes of one CSR layout loaded in memory (targets as u64, weights as f64 when loaded).
fn loaded_csr_bytes(graph: &PlanGraph, shape: &ProgramShape) -> u64 {
    (graph.vertices + 1) * 8 + graph.arcs * 8 + if loads_weights(graph, shape) { graph.arcs * 8 } else { 0 }
}

impl Engine for InMemoryEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::InMemory
    }

    fn refuses(&self, _: &ProgramShape, _: &PlanGraph) -> Option<String> {
        None
    }

    fn plan(&self, shape: &ProgramShape, ctx: &PlanContext) -> Plan {
        if shape.form == ProgramForm::EdgePass {
            return super::stream::edge_pass::plan(self.kind(), shape, ctx, ctx.model.rates.inmem);
        }
        let graph = ctx.graph;
        let work = Workload::of(shape, graph);
        // Per-vertex and per-arc state as inmem's run_vertex_program, run_pregel and
        // run_neighborhood_query charge it.
        let (mut layouts, per_vertex, per_arc) = match shape.form {
            ProgramForm::Vertex => (shape.layouts(graph.directed), shape.value_bytes + shape.msg_bytes + 18, 0),
            // Pregel: a message per loaded arc, each held by its sender's chunk and placed in
            // the inbox (inmem/pregel.rs `budget`).
            ProgramForm::Pregel => {
                let layouts = shape.layouts(graph.directed);
                (layouts, shape.value_bytes + 44, layouts * (12 + 2 * shape.msg_bytes))
            }
            ProgramForm::Neighborhood => (if graph.directed { 2 } else { 1 }, shape.value_bytes + 32, 4),
            ProgramForm::EdgePass => unreachable!("planned above"),
        };
        // Direction optimisation (inmem.rs): with both layouts in the budget, dense iterations
        // pull and stop at the first parent — on RMAT-22 BFS scanned 18.7 times fewer arcs.
        let mut visits = work.edge_visits;
        let both = 2 * loaded_csr_bytes(graph, shape) + graph.vertices * per_vertex;
        if shape.supports_pull && graph.directed && layouts == 1 && both <= ctx.budget {
            layouts = 2;
            // Only a pull that stops at its first satisfying source saves scans (BFS-like);
            // a program that applies to every vertex (PageRank) folds every in-arc.
            if !shape.applies_to_all {
                visits /= PULL_SAVING;
            }
        }
        let files = if layouts == 2 { graph.csr_out_bytes + graph.csr_in_bytes } else { graph.layout_bytes(shape) };
        let unread_weights = if graph.weighted && !loads_weights(graph, shape) { layouts * graph.arcs * 8 } else { 0 };
        let read = files.saturating_sub(unread_weights);
        let mut plan = Plan::new(self.kind(), &work)
            .with_part("adjacency", layouts * loaded_csr_bytes(graph, shape))
            .with_part("vertex state", graph.vertices * per_vertex)
            .with_part("messages", graph.arcs * per_arc)
            .check_budget(ctx.budget);
        plan.bytes_read = read;
        plan.seconds = ctx.model.transfer(read) + ctx.model.compute(visits, ctx.model.rates.inmem);
        plan.single_process(ctx)
    }
}
