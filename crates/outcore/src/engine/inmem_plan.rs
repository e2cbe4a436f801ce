//! The in-memory engine's answer to the planner ([`super::planner::Engine`]): it runs every
//! program form, with both adjacency layouts loaded, as long as they and the vertex state fit
//! the budget ([`InMemorySizing`]: the sums `inmem` checks and charges to the run's ledger
//! before it loads anything, so the plan's parts are what a run holds). An edge pass reads each
//! arc once, so it is streamed rather than loaded (see `stream::edge_pass`).

use super::planner::{
    Engine, GraphCounts, MemoryPart, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload,
};
use super::EngineKind;
use crate::program::EdgeDirection;

/// Arc scans saved by pull iterations, as planned: well below the 18.7 measured for BFS on
/// RMAT-22, since graphs with longer diameters pull less.
const PULL_SAVING: f64 = 4.0;

/// The cost of a Pregel message no combiner folds, against an arc whose message folds: it is
/// stored in its target's list, and compute reads it back. Measured on RMAT-22 at 8 GiB
/// (2,396,670 vertices, 65 M arcs): cdlp's 11 supersteps took 52.6 s against 6.9 s planned at
/// the folded rate, kcore's 38 took 182 s against 12.3 s planned for 20; both about 8 times.
const STORED_MESSAGE_COST: f64 = 8.0;

/// The reference engine (see [`super::inmem`]).
pub struct InMemoryEngine;

/// Which layouts a run loads: csr-out always (degrees), csr-in too or not, and the weights or
/// not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Load {
    pub in_edges: bool,
    pub weights: bool,
}

/// The memory of one inmem run, by part: the one sum behind the plan's parts, the run's budget
/// check and its ledger charges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct InMemorySizing {
    pub load: Load,
    /// Dense iterations pull: a vertex program that supports it, with both layouts (and the
    /// sources' messages of uniform ones) within the budget.
    pub pulls: bool,
    /// The loaded layouts (targets as u64, weights as f64 when loaded).
    pub adjacency: u64,
    pub vertex_state: u64,
    /// Pregel's messages: one per loaded arc, held by its sender's chunk and placed in the inbox.
    pub messages: u64,
}

impl InMemorySizing {
    /// The sizing of a program of `shape` (edge passes are sized by `stream::edge_pass`).
    pub fn of(shape: &ProgramShape, graph: GraphCounts, budget: u64) -> InMemorySizing {
        match shape.form {
            ProgramForm::Vertex | ProgramForm::EdgePass => InMemorySizing::vertex(shape, graph, budget),
            ProgramForm::Pregel => {
                let load = Load { in_edges: shape.in_edges, weights: shape.uses_weights };
                let (per_vertex, per_message) = super::inmem::pregel_state_bytes(shape.value_bytes, shape.msg_bytes);
                let per_arc = layouts(load, graph) * per_message;
                InMemorySizing::sized(load, graph, per_vertex, per_arc, false)
            }
            // Both layouts with weights, the full lists (4 bytes an arc), an output and a
            // gathered value per vertex (`nwsm::query::run_in_memory`).
            ProgramForm::Neighborhood => {
                let load = Load { in_edges: true, weights: true };
                InMemorySizing::sized(load, graph, shape.value_bytes + 32, 4, false)
            }
        }
    }

    /// Values, the inbox (a message and two flags per vertex) and the frontier (a bit and a
    /// list entry); with pulls of uniform messages one message and one bit more (`Sent`).
    fn vertex(shape: &ProgramShape, graph: GraphCounts, budget: u64) -> InMemorySizing {
        let per_vertex = shape.value_bytes + shape.msg_bytes + 18;
        let weights = shape.uses_weights;
        let sent = if shape.sends_uniform_messages { shape.msg_bytes + 1 } else { 0 };
        let pulling = InMemorySizing::sized(Load { in_edges: true, weights }, graph, per_vertex + sent, 0, true);
        if shape.supports_pull && shape.direction != EdgeDirection::Both && pulling.total() <= budget {
            return pulling;
        }
        let load = Load { in_edges: shape.direction != EdgeDirection::Out, weights };
        InMemorySizing::sized(load, graph, per_vertex, 0, false)
    }

    fn sized(load: Load, graph: GraphCounts, per_vertex: u64, per_arc: u64, pulls: bool) -> InMemorySizing {
        let weights = if load.weights && graph.weighted { graph.arcs * 8 } else { 0 };
        let csr = (graph.vertices + 1) * 8 + graph.arcs * 8 + weights;
        InMemorySizing {
            load,
            pulls,
            adjacency: layouts(load, graph) * csr,
            vertex_state: graph.vertices * per_vertex,
            messages: graph.arcs * per_arc,
        }
    }

    pub fn total(&self) -> u64 {
        self.adjacency + self.vertex_state + self.messages
    }

    pub fn parts(&self) -> [MemoryPart; 3] {
        [
            MemoryPart::new("adjacency", self.adjacency),
            MemoryPart::new("vertex state", self.vertex_state),
            MemoryPart::new("messages", self.messages),
        ]
    }
}

/// Layouts loaded: csr-in beside csr-out only on a directed store (an undirected store's
/// csr-out holds both directions).
fn layouts(load: Load, graph: GraphCounts) -> u64 {
    if load.in_edges && graph.directed {
        2
    } else {
        1
    }
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
        let sizing = InMemorySizing::of(shape, graph.counts(), ctx.budget);
        let layouts = layouts(sizing.load, graph.counts());
        // Direction optimisation (inmem.rs): with both layouts in the budget, dense iterations
        // pull, and a pull that stops at its first satisfying source saves scans (BFS-like:
        // on RMAT-22 it scanned 18.7 times fewer arcs); other programs (PageRank, pr-delta)
        // fold every in-arc.
        let mut visits = work.edge_visits;
        if sizing.pulls && graph.directed && shape.pull_stops_early {
            visits /= PULL_SAVING;
        }
        if shape.form == ProgramForm::Pregel && !shape.combines {
            visits *= STORED_MESSAGE_COST;
        }
        let files = if layouts == 2 { graph.csr_out_bytes + graph.csr_in_bytes } else { graph.csr_out_bytes };
        let unread_weights = if graph.weighted && !sizing.load.weights { layouts * graph.arcs * 8 } else { 0 };
        let read = files.saturating_sub(unread_weights);
        let mut plan = Plan::new(self.kind(), &work).with_parts(sizing.parts()).check_budget(ctx.budget);
        plan.bytes_read = read;
        plan.seconds = ctx.model.transfer(read) + ctx.model.compute(visits, ctx.model.rates.inmem);
        plan.single_process(ctx)
    }
}
