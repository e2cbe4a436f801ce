//! The stream engine's answer to the planner ([`crate::engine::planner::Engine`]): edge passes
//! (one streamed pass, see [`super::edge_pass`]) and vertex programs, when all vertex state fits ([`MemoryPlan`]); edges are streamed from disk
//! every iteration, selectively (Redio §3), overlapped with compute.

use super::{MemoryPlan, PullNeeds, ResidentSizing};
use crate::engine::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use crate::engine::EngineKind;
use crate::program::EdgeDirection;
use crate::store::csr::target_bytes_for;

/// The semi-external edge-centric engine (see [`super`]).
pub struct StreamEngine;

impl Engine for StreamEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Stream
    }

    fn refuses(&self, shape: &ProgramShape, _: &PlanGraph) -> Option<String> {
        match shape.form {
            ProgramForm::EdgePass => None,
            form => form.refused_by(ProgramForm::Vertex),
        }
    }

    fn plan(&self, shape: &ProgramShape, ctx: &PlanContext) -> Plan {
        if shape.form == ProgramForm::EdgePass {
            return super::edge_pass::plan(self.kind(), shape, ctx, ctx.model.rates.stream);
        }
        let graph = ctx.graph;
        let work = Workload::of(shape, graph);
        // Layouts whose offsets stay in memory: those read, plus csr-out's for degrees when
        // only csr-in is read and the program reads them.
        let degrees_apart = shape.direction == EdgeDirection::In && graph.directed && shape.out_degrees;
        let layouts = shape.layouts(graph.directed) + degrees_apart as u64;
        let pull = PullNeeds::of(
            shape.supports_pull && ctx.options.stream.pull,
            shape.sends_uniform_messages,
            shape.direction,
            graph.directed,
            shape.msg_bytes,
            graph.vertices,
        );
        let memory = MemoryPlan::with_pull(
            graph.vertices,
            layouts,
            shape.value_bytes,
            shape.msg_bytes,
            ctx.budget,
            rayon::current_num_threads(),
            &ctx.options.stream,
            pull,
        );
        let (mut memory, pulls) = match memory {
            Ok(m) => m,
            Err(e) => return Plan::refused(self.kind(), &work, e.to_string()),
        };
        let adjacency = graph.adjacency_bytes(shape);
        // Selective scheduling reads about the active share of each iteration's edges.
        let arcs_read = graph.arcs as f64 * shape.layouts(graph.directed) as f64;
        let passes = if arcs_read > 0.0 { (work.edge_visits / arcs_read).min(work.iterations) } else { 0.0 };
        let resident = resident_sizing(shape, graph, pulls, ctx, &mut memory);
        let mut plan = Plan::new(self.kind(), &work).with_parts(memory.parts()).with_parts(resident.parts());
        let resident = resident.edges;
        // Offsets are read once; the first dense pass reads every edge, later ones take the
        // resident part from memory.
        let offsets = (graph.vertices + 1) * 8 * shape.layouts(graph.directed);
        let edges = adjacency.saturating_sub(offsets) as f64;
        let read = edges * passes - resident as f64 * (passes - 1.0).max(0.0);
        plan.bytes_read = offsets + read.max(0.0) as u64;
        // Reading overlaps compute (a reader thread fills buffers ahead).
        let io = ctx.model.transfer(plan.bytes_read);
        // Pulls of uniform messages fold in lanes unless the program stops early (BFS).
        let rate = if pulls && shape.sends_uniform_messages && !shape.pull_stops_early {
            ctx.model.rates.stream_pull
        } else {
            ctx.model.rates.stream
        };
        plan.seconds =
            io.max(ctx.model.compute(work.edge_visits, rate)) + ctx.model.transfer(graph.vertices * 8 * layouts);
        plan.single_process(ctx)
    }
}

/// What the run keeps in memory after its first dense pass (`resident.rs`): the room the
/// budget leaves after the plan, for a prefix of the layout dense passes read (csr-in when the
/// program pulls, else csr-out when it reads one layout; none when it reads two), and the
/// source order of the first pull when all of it fits; the read buffers of `memory` may shrink to
/// make that room (`ResidentSizing::new`).
fn resident_sizing(
    shape: &ProgramShape,
    graph: &PlanGraph,
    pulls: bool,
    ctx: &PlanContext,
    memory: &mut MemoryPlan,
) -> ResidentSizing {
    let kept = ctx.options.stream.resident_edges && (pulls || shape.layouts(graph.directed) == 1);
    // Ids of 4 bytes below 2^32 vertices, and weights when the program reads them.
    let edge_bytes = target_bytes_for(graph.vertices) + 8 * (graph.weighted && shape.uses_weights) as u64;
    ResidentSizing::new(memory, ctx.budget, (graph.vertices, graph.arcs), edge_bytes, kept, !shape.sends_one_message)
}
