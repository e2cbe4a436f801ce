//! The nwsm engine's answer to the planner ([`crate::engine::planner::Engine`]): neighborhood
//! queries only, in a fixed budget ([`super::plan_memory`]), over the bbp layout it builds on first
//! use; a k-level query reads the adjacency once for its level-1 windows and again for each
//! level-1 window, for the level-2 lists of the vertices it marks (TurboGraph++ §4): on R-MAT
//! those lists lie on nearly every page, so the windows a budget allows set the bytes read.

use super::partition::partition_memory;
use super::window::{ENTRY_BYTES, VERTEX_BYTES};
use super::{BbpFacts, MemoryPlan, NwsmOptions, RunSizing};
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
        let per_round = if k >= 2 {
            // Pages still resident from the window before are not read again.
            let resident = (memory.frames as u64 * options.page_size * p as u64).min(adjacency);
            adjacency + level1_windows(graph, p, &memory) * (adjacency - resident)
        } else {
            2 * adjacency
        };
        plan.bytes_read = (per_round as f64 * work.iterations) as u64;
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

/// The level-1 windows of a run, all ranks together: each rank cuts each of its q vertex
/// ranges (balanced by edges) into windows of `window1_bytes` of full lists, 4 bytes an entry
/// and 12 a vertex ([`super::window::take_window`]). Measured on RMAT-18 tc (36 MiB of
/// adjacency, 1 and 2 ranks, 6 to 48 MiB), each window's level 2 read 27 to 62 MiB of pages.
fn level1_windows(graph: &PlanGraph, p: usize, memory: &MemoryPlan) -> u64 {
    // Full lists hold both directions of a directed store; an undirected store counts both.
    let entries = if graph.directed { 2 * graph.arcs } else { graph.arcs };
    let full_lists = ENTRY_BYTES * entries + VERTEX_BYTES * graph.vertices.min(entries);
    let ranges = (p * memory.q) as u64;
    ranges * full_lists.div_ceil(ranges * memory.window1_bytes.max(1)).max(1)
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
    let wanted = RunSizing::wanted(graph.vertices, ranks.0, k, page_size, budget, column)?;
    let unbuilt = BbpFacts { p: ranks.0, q: wanted.q, page_size, pages: 0 };
    let layout = BbpFacts::find(&graph.bbp_layouts, ranks.0, wanted.q, page_size).unwrap_or(unbuilt);
    RunSizing::new(graph.vertices, ranks, k, page_size, budget, layout, column)
}
