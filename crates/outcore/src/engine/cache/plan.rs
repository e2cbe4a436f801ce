//! The cache engine's answer to the planner ([`crate::engine::planner::Engine`]): vertex
//! programs, vertex state in memory, adjacency lists read page by page through the engine's
//! page cache and the BASC static cache, the budget split as the engine splits it
//! ([`MemoryPlan`]).
//!
//! Its cost is dominated by page requests: on RMAT-22 (main at 893c803) one BFS read 4.5 GB
//! for a 268 MB adjacency (about 16 times, every list visit a page request) — the factor
//! [`READ_AMPLIFICATION`] below, until issue 16 brings it down.

use super::{CacheOptions, MemoryPlan};
use crate::engine::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use crate::engine::EngineKind;

/// The semi-external vertex-centric engine (see [`super`]).
pub struct CacheEngine;

/// Bytes read per byte of adjacency visited, measured (see the module doc).
pub const READ_AMPLIFICATION: f64 = 16.0;

/// The engine reserves a fixed state per vertex; a program that keeps more never runs on it.
fn state_refusal(shape: &ProgramShape, options: &CacheOptions) -> Option<String> {
    let per_vertex = shape.value_bytes + shape.msg_bytes + 1;
    (per_vertex > options.state_bytes_per_vertex).then(|| {
        format!(
            "does not run programs that keep {per_vertex} bytes per vertex (it reserves {})",
            options.state_bytes_per_vertex
        )
    })
}

impl Engine for CacheEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Cache
    }

    fn refuses(&self, shape: &ProgramShape, _: &PlanGraph) -> Option<String> {
        match shape.form {
            ProgramForm::EdgePass => None,
            form => form.refused_by(ProgramForm::Vertex).or_else(|| state_refusal(shape, &CacheOptions::default())),
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
        if let Some(why) = state_refusal(shape, options) {
            return Plan::refused(self.kind(), &work, why);
        }
        let rels = super::paged_files(graph.directed, graph.weighted);
        let file_bytes = |rel: &str| graph.file_bytes.get(rel).copied().unwrap_or(0);
        let (_, pages) = super::page_numbering(file_bytes, &rels, options.page_size);
        let memory = match MemoryPlan::new(graph.vertices, graph.directed, pages, ctx.budget, options) {
            Ok(memory) => memory,
            Err(e) => return Plan::refused(self.kind(), &work, e.to_string()),
        };
        let mut plan = Plan::new(self.kind(), &work).with_parts(memory.fixed_parts()).with_parts(memory.cache_parts());
        let bytes_per_visit =
            graph.adjacency_bytes(shape) as f64 / (graph.arcs.max(1) as f64 * shape.layouts(graph.directed) as f64);
        plan.bytes_read = (work.edge_visits * bytes_per_visit * READ_AMPLIFICATION) as u64;
        let requests = plan.bytes_read as f64 / options.page_size.max(1) as f64;
        plan.seconds = ctx.model.transfer(plan.bytes_read)
            + requests * ctx.model.random_read_seconds
            + ctx.model.compute(work.edge_visits, ctx.model.rates.cache);
        plan.single_process(ctx)
    }
}
