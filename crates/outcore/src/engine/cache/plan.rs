//! The cache engine's answer to the planner ([`crate::engine::planner::Engine`]): vertex
//! programs, vertex state in memory, adjacency lists read page by page through the engine's
//! page cache and the BASC static cache, the budget split as the engine splits it
//! ([`MemoryPlan`]).
//!
//! Its cost, measured on RMAT-22 in Norder (8 KiB pages, `--memory 384MiB`, cold):
//! - A run first loads the static cache: the selected out-lists, about the static cache's
//!   bytes (242 MiB of csr-out's 249 MiB of targets there).
//! - Each pass over the lists then reads the pages of the lists outside it. With 97 % of the
//!   targets' bytes in the static cache, a pass still read 160–200 MiB: the many short lists
//!   left out lie on most pages ([`SHORT_LIST_PAGES`]). The page cache keeps those pages from one
//!   pass to the next only when they fit in it.
//! - A store's first run selects first. GVS reads csr-out's targets once when they fit beside
//!   its arrays, else once per round, and spends about [`SELECTION_RATE`] edge visits per arc
//!   and round: 9.9 s for K = 16 on RMAT-22, against 0.4 s for the BFS after it. Later runs
//!   load the saved selection (the `static-cache-selection/...` layout) for nothing.
//!
//! So a BFS read 1.78× the targets, and ten PageRank iterations 7.4× (stream: 1.15×).

use super::memory::Reservation;
use super::static_cache::StaticCache;
use super::{gvs_holds_lists, selection_names, CacheOptions, MemoryPlan, SelectionMethod};
use crate::engine::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use crate::engine::EngineKind;
use crate::program::EdgeDirection;
use crate::store::csr::target_bytes_for;

/// The semi-external vertex-centric engine (see [`super`]).
pub struct CacheEngine;

/// The share of a layout's pages a pass reads even when the static cache holds nearly all its
/// bytes (measured 0.64–0.8 on RMAT-22, see the module doc); with no static cache, a pass reads
/// every page.
pub const SHORT_LIST_PAGES: f64 = 0.7;

/// GVS's seconds per arc and round, in edge visits of the cost model (9.9 s for 16 rounds of
/// RMAT-22's 65 M arcs on 2 cores, at 2.97 ns a visit).
pub const SELECTION_RATE: f64 = 3.2;

impl Engine for CacheEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Cache
    }

    fn refuses(&self, shape: &ProgramShape, _: &PlanGraph) -> Option<String> {
        match shape.form {
            ProgramForm::EdgePass => None,
            // With the default options the state is sized from the program: no program is
            // refused for it here; a fixed reservation refuses in `plan`.
            form => form.refused_by(ProgramForm::Vertex),
        }
    }

    fn plan(&self, shape: &ProgramShape, ctx: &PlanContext) -> Plan {
        if shape.form == ProgramForm::EdgePass {
            // The same streamed pass as stream's (Runner::run_edge_pass), at stream's rate.
            return crate::engine::stream::edge_pass::plan(self.kind(), shape, ctx, ctx.model.rates.stream);
        }
        let graph = ctx.graph;
        let work = Workload::of(shape, graph);
        let options: &CacheOptions = &ctx.options.cache;
        let reservation = match Reservation::for_program(options, graph.directed, shape, rayon::current_num_threads()) {
            Ok(reservation) => reservation,
            Err(why) => return Plan::refused(self.kind(), &work, why),
        };
        let rels = super::paged_files(graph.directed, graph.weighted);
        let file_bytes = |rel: &str| graph.file_bytes.get(rel).copied().unwrap_or(0);
        let (_, pages) = super::page_numbering(file_bytes, &rels, options.page_size);
        let every_list = StaticCache::every_list_bytes(graph.vertices, graph.arcs, cached_edge_bytes(graph));
        let memory = match MemoryPlan::new(graph.vertices, pages, every_list, ctx.budget, &reservation, options) {
            Ok(memory) => memory,
            Err(e) => return Plan::refused(self.kind(), &work, e.to_string()),
        };
        let mut plan = Plan::new(self.kind(), &work).with_parts(memory.fixed_parts()).with_parts(memory.cache_parts());
        let reads = Reads::of(shape, graph, &memory, options);
        let passes = work.edge_visits / (graph.arcs.max(1) as f64 * shape.layouts(graph.directed) as f64);
        let selection = Selection::of(graph, &memory, options, reads.static_cache);
        let static_load = if selection.fills_static_cache { 0.0 } else { reads.static_cache };
        plan.bytes_read = (selection.bytes + static_load + reads.run(passes)) as u64;
        plan.seconds = ctx.model.transfer(plan.bytes_read)
            + ctx.model.compute(work.edge_visits, ctx.model.rates.cache)
            + ctx.model.compute(selection.visits, 1.0);
        plan.builds = selection.builds;
        plan.single_process(ctx)
    }
}

/// The bytes of a run's passes over the lists (see the module doc).
struct Reads {
    /// Bytes the static cache loads once.
    static_cache: f64,
    /// Bytes of pages one pass reads.
    per_pass: f64,
    /// Bytes of those pages the page cache keeps from one pass to the next.
    kept: f64,
}

impl Reads {
    fn of(shape: &ProgramShape, graph: &PlanGraph, memory: &MemoryPlan, options: &CacheOptions) -> Reads {
        let bytes = |layout: &str| {
            let file = |name: &str| graph.file_bytes.get(&format!("{layout}/{name}")).copied().unwrap_or(0) as f64;
            file("targets") + if graph.weighted && shape.uses_weights { file("weights") } else { 0.0 }
        };
        let in_only = graph.directed && shape.direction == EdgeDirection::In;
        let out = if in_only { 0.0 } else { bytes("csr-out") };
        let inn = if in_only || shape.layouts(graph.directed) == 2 { bytes("csr-in") } else { 0.0 };
        // Only out-lists are static-cached (BASC §3 selects over csr-out).
        let static_cache =
            if options.selection == SelectionMethod::None { 0.0 } else { (memory.static_cache as f64).min(out) };
        let uncached = if out > 0.0 { 1.0 - static_cache / out } else { 0.0 };
        let out_pass = if static_cache == 0.0 {
            out
        } else if holds_every_list(graph, memory) {
            0.0
        } else {
            out * (SHORT_LIST_PAGES + (1.0 - SHORT_LIST_PAGES) * uncached)
        };
        let per_pass = out_pass + inn;
        let kept = (memory.frames as f64 * options.page_size as f64).min(per_pass);
        Reads { static_cache, per_pass, kept }
    }

    /// Bytes read over `passes` passes: the first reads every page it needs, later ones what
    /// the page cache did not keep.
    fn run(&self, passes: f64) -> f64 {
        self.per_pass * passes.min(1.0) + (self.per_pass - self.kept) * (passes - 1.0).max(0.0)
    }
}

/// Whether the static cache's budget holds every out-list: the selection takes them all and
/// a pass reads no out-list page (the lists of vertices without in-arcs are not requested).
fn holds_every_list(graph: &PlanGraph, memory: &MemoryPlan) -> bool {
    memory.static_cache >= StaticCache::every_list_bytes(graph.vertices, graph.arcs, cached_edge_bytes(graph))
}

/// Bytes the static cache keeps per edge: its target, and its weight on a weighted store.
fn cached_edge_bytes(graph: &PlanGraph) -> u64 {
    target_bytes_for(graph.vertices) + if graph.weighted { 8 } else { 0 }
}

/// What selecting the static cache costs when no selection for this budget is saved.
struct Selection {
    bytes: f64,
    /// Its compute, in edge visits.
    visits: f64,
    /// GVS holds the lists it read, and the static cache is filled from them for nothing.
    fills_static_cache: bool,
    builds: Option<String>,
}

impl Selection {
    fn of(graph: &PlanGraph, memory: &MemoryPlan, options: &CacheOptions, static_cache: f64) -> Selection {
        let none = Selection { bytes: 0.0, visits: 0.0, fills_static_cache: false, builds: None };
        if static_cache <= 0.0 {
            return none;
        }
        let target_bytes = target_bytes_for(graph.vertices);
        let (layout, _) = selection_names(options, memory.static_cache, cached_edge_bytes(graph));
        if graph.layouts.contains(&layout) {
            return none;
        }
        let builds = Some(layout);
        if options.selection != SelectionMethod::Gvs {
            // By degree or at random: from the offsets, already in memory.
            return Selection { visits: graph.vertices as f64, builds, ..none };
        }
        let targets_file = graph.file_bytes.get("csr-out/targets").copied().unwrap_or(0);
        let pages = targets_file.div_ceil(options.page_size.max(1));
        let holds = gvs_holds_lists(graph.vertices, pages, graph.arcs * target_bytes, memory);
        // With room for every list there are no rounds (selection.rs, `every_requestable_list`).
        let rounds = if holds_every_list(graph, memory) { 0.0 } else { options.gvs_rounds.max(1) as f64 };
        Selection {
            bytes: targets_file as f64 * if holds { 1.0 } else { rounds },
            visits: graph.arcs as f64 * rounds * SELECTION_RATE + graph.vertices as f64,
            fills_static_cache: holds,
            builds,
        }
    }
}
