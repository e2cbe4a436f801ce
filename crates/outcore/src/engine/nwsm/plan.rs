//! The nwsm engine's answer to the planner ([`crate::engine::planner::Engine`]): neighborhood
//! queries only, in a fixed budget ([`plan_memory`]), over the bbp layout it builds on first
//! use; a k-level query reads the adjacency once per level-1 window for its level-2 lists
//! (TurboGraph++ §4), hence about `q` times for k = 2.

use super::partition::partition_memory;
use super::{plan_memory, BbpFacts, NwsmOptions, RunSizing};
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
        // Ranks: those of a distributed run (one in this process), else in-process ones.
        let (p, local) = if ctx.ranks > 1 { (ctx.ranks, 1) } else { (options.ranks.max(1), options.ranks.max(1)) };
        let k = shape.levels.max(1);
        let column = if k == 1 { shape.column_bytes * graph.vertices } else { 0 };
        let memory = match sizing(graph, (p, local), k, options.page_size, ctx.budget, column) {
            Ok(sizing) => sizing,
            Err(e) => return Plan::refused(self.kind(), &work, e.to_string()),
        };
        let mut plan = Plan::new(self.kind(), &work).with_parts(memory.parts());
        let memory = memory.plan;
        let adjacency = graph.csr_out_bytes + graph.csr_in_bytes;
        let windows = if k >= 2 { memory.q as f64 } else { 1.0 };
        plan.bytes_read = (adjacency as f64 * (1.0 + windows) * work.iterations) as u64;
        let mut build = 0.0;
        // The run builds a layout unless one with at least the ranges it needs exists.
        if BbpFacts::find(&graph.bbp_layouts, p, memory.q, options.page_size).is_none() {
            let partitioning = partition_memory(graph.vertices, p, options.page_size);
            if partitioning > ctx.budget {
                let why = format!(
                    "building bbp-{p}-{} needs {} of per-vertex arrays",
                    memory.q,
                    crate::runtime::format_size(partitioning)
                );
                return Plan::refused(self.kind(), &work, why);
            }
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

/// The run's sizing as the run makes it: over the built layout with enough ranges for the
/// budget's q (the smallest such), else over the one it would build, whose page indexes are
/// not known yet.
fn sizing(
    graph: &PlanGraph,
    ranks: (usize, usize),
    k: usize,
    page_size: u64,
    budget: u64,
    column: u64,
) -> crate::Result<RunSizing> {
    let wanted = plan_memory(graph.vertices, ranks.0, k, page_size, budget.saturating_sub(column), 1)?;
    let unbuilt = BbpFacts { p: ranks.0, q: wanted.q, page_size, pages: 0 };
    let layout = BbpFacts::find(&graph.bbp_layouts, ranks.0, wanted.q, page_size).unwrap_or(unbuilt);
    RunSizing::new(graph.vertices, ranks, k, page_size, budget, layout, column)
}
