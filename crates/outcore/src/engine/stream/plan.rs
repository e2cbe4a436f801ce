//! The stream engine's answer to the planner ([`crate::engine::planner::Engine`]): edge passes
//! (one streamed pass, see [`super::edge_pass`]) and vertex programs, when all vertex state fits ([`MemoryPlan`]); edges are streamed from disk
//! every iteration, selectively (Redio §3), overlapped with compute.

use super::{MemoryPlan, PullNeeds};
use crate::engine::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use crate::engine::EngineKind;
use crate::program::EdgeDirection;

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
        // only csr-in is read.
        let layouts = shape.layouts(graph.directed) + (shape.direction == EdgeDirection::In && graph.directed) as u64;
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
        let memory = match memory {
            Ok((m, _)) => m,
            Err(e) => return Plan::refused(self.kind(), &work, e.to_string()),
        };
        let adjacency = graph.adjacency_bytes(shape);
        // Selective scheduling reads about the active share of each iteration's edges.
        let arcs_read = graph.arcs as f64 * shape.layouts(graph.directed) as f64;
        let passes = if arcs_read > 0.0 { (work.edge_visits / arcs_read).min(work.iterations) } else { 0.0 };
        let mut plan = Plan::new(self.kind(), &work)
            .with_part("vertex values", memory.values)
            .with_part("offsets", memory.offsets)
            .with_part("frontiers", memory.frontiers)
            .with_part("accumulators", memory.accumulator * memory.accumulators as u64)
            .with_part("read buffers", memory.buffer_bytes * memory.buffers as u64)
            .with_part("pulled messages", memory.pull);
        plan.bytes_read = (adjacency as f64 * passes) as u64;
        // Reading overlaps compute (a reader thread fills buffers ahead).
        let io = ctx.model.transfer(plan.bytes_read);
        plan.seconds = io.max(ctx.model.compute(work.edge_visits, ctx.model.rates.stream))
            + ctx.model.transfer(graph.vertices * 8 * layouts);
        plan.single_process(ctx)
    }
}
