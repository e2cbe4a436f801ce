//! The pregel engine's answer to the planner ([`crate::engine::planner::Engine`]): programs
//! whose values and messages travel between ranks (`Wire`), vertex programs and Pregel
//! programs alike, with O(|V|/W) memory per rank (GraphD); it streams its partition's edges
//! every superstep (or reads them once when the budget holds them) and writes messages to
//! files. The partition is built on first use.

use super::lists::ResidentEdges;
use super::partition::VERTEX_RECORD_BYTES;
use super::rank::{narrow_names, RankMemory};
use crate::engine::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use crate::engine::EngineKind;

/// The distributed out-of-core Pregel engine (see [`super`]).
pub struct PregelEngine;

impl Engine for PregelEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Pregel
    }

    fn refuses(&self, shape: &ProgramShape, _: &PlanGraph) -> Option<String> {
        if matches!(shape.form, ProgramForm::Neighborhood | ProgramForm::EdgePass) {
            return Some(format!("does not run {}", shape.form.plural()));
        }
        if shape.form == ProgramForm::Vertex && shape.direction == crate::program::EdgeDirection::In {
            return Some("does not run vertex programs that send along in-edges".into());
        }
        (!shape.wire).then(|| "runs only programs whose values and messages travel between ranks (Wire)".into())
    }

    fn plan(&self, shape: &ProgramShape, ctx: &PlanContext) -> Plan {
        let graph = ctx.graph;
        let work = Workload::of(shape, graph);
        let ranks = ctx.ranks.max(1) as u64;
        let local = graph.vertices.div_ceil(ranks);
        let mut memory = RankMemory::new(ranks as usize, local, shape.value_bytes, 0);
        let b = super::message_file_size(&ctx.options.pregel, ctx.budget, ranks as usize, memory.fixed());
        // The lists a rank reads, resident when what the budget leaves holds them.
        let rank_arcs = (graph.arcs * shape.layouts(graph.directed)).div_ceil(ranks);
        let narrow = narrow_names(ctx.options.pregel.recoded, ranks, local);
        memory.size_compute(ctx.budget, b, ResidentEdges::bytes(rank_arcs, graph.weighted, narrow));
        let mut plan = Plan::new(self.kind(), &work).with_parts(memory.parts(b)).check_budget(ctx.budget);
        let record = 8 + shape.msg_bytes;
        let arcs = graph.arcs as f64 * shape.layouts(graph.directed) as f64;
        let edge_stream = arcs * 8.0;
        // Edges are streamed every superstep (read once when resident); messages go to files
        // and are read back once.
        let supersteps_reading = if memory.resident > 0 {
            1.0
        } else if shape.applies_to_all {
            work.iterations
        } else {
            work.iterations.min(4.0)
        };
        plan.bytes_read = (edge_stream * supersteps_reading + work.edge_visits * record as f64) as u64 / ranks;
        plan.bytes_written = (work.edge_visits * record as f64) as u64 / ranks;
        let mut build = 0.0;
        let name = format!("parts-{ranks}");
        if !graph.layouts.contains(&name) {
            plan.builds = Some(name);
            build = ctx.model.build((edge_stream as u64) + graph.vertices * VERTEX_RECORD_BYTES, graph.arcs);
        }
        plan.seconds = ctx.model.transfer(plan.bytes_read + plan.bytes_written)
            + ctx.model.compute(work.edge_visits, ctx.model.rates.pregel) / ranks as f64
            + build;
        plan
    }
}
