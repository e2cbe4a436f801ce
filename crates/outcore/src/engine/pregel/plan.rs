//! The pregel engine's answer to the planner ([`crate::engine::planner::Engine`]): programs
//! whose values and messages travel between ranks (`Wire`), vertex programs and Pregel
//! programs alike, with O(|V|/W) memory per rank (GraphD); it streams its partition's edges
//! every superstep (or reads them once when the budget holds them) and writes messages to
//! files, except those it folds in memory (recoded mode with a combiner), and a single
//! recoded rank pulls dense uniform messages. The plan sizes the rank as the run does
//! ([`super::sizing`]), so its memory parts are what the run charges. The partition is built
//! on first use.

use super::partition::{self, VERTEX_RECORD_BYTES};
use super::sizing::{size_rank, RankNeeds, RankShare, RankSizing};
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
        let ranks = ctx.ranks.max(1);
        let recoded = ctx.options.pregel.recoded;
        let share = even_share(graph, ranks);
        let needs = RankNeeds::of_shape(shape, graph.directed);
        let sizing = size_rank(&needs, &share, recoded, ctx.budget, &ctx.options.pregel, true);
        let mut plan = Plan::new(self.kind(), &work).with_parts(sizing.parts().to_vec()).check_budget(ctx.budget);
        // The vertex file once; the lists read every step, or once when resident.
        let (out_arcs, in_arcs) = sizing.arcs(&share);
        let arc_bytes = partition::arc_bytes(recoded, ranks, graph.vertices, graph.weighted);
        let list_bytes = (out_arcs + in_arcs) * arc_bytes;
        let steps_reading = if sizing.resident() {
            1.0
        } else if shape.applies_to_all {
            work.iterations
        } else {
            work.iterations.min(4.0)
        };
        let visits = work.edge_visits / ranks as f64;
        let messages = message_bytes(shape, &sizing, &share, visits, work.iterations);
        plan.bytes_read = share.vertices * VERTEX_RECORD_BYTES + (list_bytes as f64 * steps_reading) as u64 + messages;
        plan.bytes_written = messages;
        let mut build = 0.0;
        let name = partition::layout_name(ranks, recoded);
        if !graph.layouts.contains(&name) {
            plan.builds = Some(name);
            let lists = graph.arcs * (1 + graph.directed as u64) * arc_bytes;
            build = ctx.model.build(lists + graph.vertices * VERTEX_RECORD_BYTES, graph.arcs);
        }
        let rate = if sizing.pulls { ctx.model.rates.pregel_pull } else { ctx.model.rates.pregel };
        plan.seconds =
            ctx.model.transfer(plan.bytes_read + plan.bytes_written) + ctx.model.compute(visits, rate) + build;
        plan
    }
}

/// Bytes of message files a rank writes and reads back over the run, `visits` messages in all.
/// A rank that folds messages in memory (recoded with a combiner) files only those to other
/// ranks, and a pulling rank none. Otherwise U_c files every message (U_s reads them back), and
/// U_r files the batches it receives (U_c reads them back): with a combiner, each outgoing
/// file's messages are combined first, to about the distinct targets of a file, n·(1 − e^(−m/n))
/// for m messages over the rank's n targets; without one, as many as were sent.
fn message_bytes(shape: &ProgramShape, sizing: &RankSizing, share: &RankShare, visits: f64, steps: f64) -> u64 {
    let record = (8 + shape.msg_bytes) as f64;
    if sizing.in_memory_combine {
        let ranks = share.ranks as f64;
        return (visits * (ranks - 1.0) / ranks * record) as u64;
    }
    let targets = share.vertices;
    let batches = if shape.combines && targets > 0 && steps > 0.0 {
        let per_file = (sizing.message_file_size as f64 / record).max(1.0);
        let n = targets as f64;
        let files = (visits / per_file).ceil().max(steps);
        files * n * (1.0 - (-(visits / files) / n).exp())
    } else {
        visits
    };
    ((visits + batches) * record) as u64
}

/// The share of a rank when vertices and arcs are spread evenly over `ranks` (exact at W = 1).
fn even_share(graph: &PlanGraph, ranks: usize) -> RankShare {
    let vertices = graph.vertices.div_ceil(ranks as u64);
    let arcs = graph.arcs.div_ceil(ranks as u64);
    RankShare {
        ranks,
        vertices,
        max_vertices: vertices,
        out_arcs: arcs,
        in_arcs: if graph.directed { arcs } else { 0 },
        weighted: graph.weighted,
        directed: graph.directed,
    }
}
