//! The nwsm engine's answer to the planner ([`crate::engine::planner::Engine`]): neighborhood
//! queries only, in a fixed budget ([`plan_memory`]), over the bbp layout it builds on first
//! use; a k-level query reads the adjacency once per level-1 window for its level-2 lists
//! (TurboGraph++ §4), hence about `q` times for k = 2.

use super::{plan_memory, NwsmOptions};
use crate::engine::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use crate::engine::EngineKind;

/// The nested windowed streaming engine (see [`super`]).
pub struct NwsmEngine;

impl Engine for NwsmEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Nwsm
    }

    fn refuses(&self, shape: &ProgramShape, _: &PlanGraph) -> Option<String> {
        shape.form.refused_by(ProgramForm::Neighborhood)
    }

    fn plan(&self, shape: &ProgramShape, ctx: &PlanContext) -> Plan {
        let graph = ctx.graph;
        let work = Workload::of(shape, graph);
        let options: &NwsmOptions = &ctx.options.nwsm;
        if options.page_size == 0 {
            return Plan::refused(self.kind(), &work, "page size 0");
        }
        let p = options.ranks.max(1);
        let k = shape.levels.max(1);
        let memory = match plan_memory(graph.vertices, p, k, options.page_size, ctx.budget, 1) {
            Ok(m) => m,
            Err(e) => return Plan::refused(self.kind(), &work, e.to_string()),
        };
        let mut plan = Plan::new(self.kind(), &work)
            .with_part("resident columns", memory.resident_bytes)
            .with_part("ranks' pages, windows, gathers", memory.charged_per_rank(options.page_size, k) * p as u64);
        let adjacency = graph.csr_out_bytes + graph.csr_in_bytes;
        let windows = if k >= 2 { memory.q as f64 } else { 1.0 };
        plan.bytes_read = (adjacency as f64 * (1.0 + windows) * work.iterations) as u64;
        let mut build = 0.0;
        if !graph.has_layout(&format!("bbp-{p}-")) {
            plan.builds = Some(format!("bbp-{p}-{}", memory.q));
            build = ctx.model.build(adjacency, graph.arcs);
        }
        let requests = plan.bytes_read as f64 / options.page_size as f64;
        plan.seconds = ctx.model.transfer(plan.bytes_read)
            + requests * ctx.model.random_read_seconds
            + ctx.model.compute(work.edge_visits, ctx.model.rates.nwsm)
            + build;
        plan
    }
}
