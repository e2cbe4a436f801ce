//! The shards engine's answer to the planner ([`crate::engine::planner::Engine`]): vertex
//! programs with only one interval of vertices in memory (GraphChi's PSW), so it runs when no
//! semi-external engine fits; every step reads and writes every shard's message records.
//! Static runs whose values fit take the memory mode ([`super::memory`]) instead: every step
//! reads the shards' topology once and writes nothing.

use super::edges::{topology_bytes_per_edge, EdgeSection};
use super::layout::run_record_bytes;
use super::memory::{MemorySizing, SizingInput};
use super::{resolve_policy, DiskSizing, DynamicPolicy, ShardValues, MAX_AUTO_SHARDS};
use crate::engine::planner::{Engine, Plan, PlanContext, PlanGraph, ProgramForm, ProgramShape, Workload};
use crate::engine::EngineKind;
use crate::runtime::format_size;
use crate::store::csr::target_bytes_for;

/// The fully external engine (see [`super`]).
pub struct ShardsEngine;

/// Bytes read per arc record in a step beyond the record itself: the memory shard and the
/// sliding windows read blocks twice (RMAT-22 PageRank, main at 893c803: ~4 GB read per step
/// for 65 M arcs of 24-byte records plus 4-byte targets).
const READS_PER_RECORD: f64 = 2.2;

impl Engine for ShardsEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Shards
    }

    fn refuses(&self, shape: &ProgramShape, _: &PlanGraph) -> Option<String> {
        shape.form.refused_by(ProgramForm::Vertex)
    }

    fn plan(&self, shape: &ProgramShape, ctx: &PlanContext) -> Plan {
        let graph = ctx.graph;
        let work = Workload::of(shape, graph);
        let values = ctx.options.shards.values;
        if values != ShardValues::Disk && static_steps(ctx) {
            match memory_plan(shape, ctx, &work) {
                Ok(plan) => return plan.single_process(ctx),
                Err(why) if values == ShardValues::Memory => {
                    return Plan::refused(self.kind(), &work, format!("values in memory: {why}"))
                }
                Err(_) => {}
            }
        }
        // The engine's own sums (DiskSizing, open_layout): an interval's edges and vertices in a
        // share of the budget, one vertex's edges at least, and a block index of P·(P+1) pairs.
        let policy = resolve_policy(&ctx.options.shards, shape.tolerates_delays).map_or(DynamicPolicy::Off, |(p, _)| p);
        let sizing = DiskSizing::new(ctx.budget, policy, ctx.options.shards.delayed_delivery);
        let share = sizing.interval;
        let record = 2 * shape.msg_bytes + 8;
        let directions = shape.layouts(graph.directed) as usize;
        let weights = shape.uses_weights && graph.weighted;
        let per_edge = EdgeSection::bytes_per_edge(weights, record as usize, directions);
        let per_vertex = 2 * shape.value_bytes + shape.msg_bytes + 20;
        let hub = graph.max_degree().saturating_mul(per_edge).saturating_add(per_vertex);
        if hub > share {
            return Plan::refused(
                self.kind(),
                &work,
                format!("one vertex's {} edges need {} in an interval", graph.max_degree(), format_size(hub)),
            );
        }
        let total = 2 * graph.arcs * per_edge + graph.vertices * per_vertex;
        // The fewest intervals that could do; the engine doubles them while an interval does
        // not fit (intervals are balanced by in-edges, not bytes), and refuses then if need be —
        // the Runner chooses again. A plan never refuses what the engine might run.
        // A layout of P intervals already built whose intervals do not fit is passed over, as
        // the engine passes it over; so is a P whose intervals cannot fit by the offsets' bound
        // (`interval_load_floor`), which the engine does not build.
        let mut p = (total.div_ceil(share.max(1)) as usize).max(1).next_power_of_two();
        loop {
            if p > MAX_AUTO_SHARDS || (p * (p + 1) * 16) as u64 > share {
                return Plan::refused(self.kind(), &work, format!("would need more than {} intervals", p / 2));
            }
            match graph.shard_facts(p) {
                Some(facts) if !facts.intervals_fit(per_edge, per_vertex, share) => p *= 2,
                _ => break,
            }
        }
        let mut plan = Plan::new(self.kind(), &work).with_parts(sizing.parts());
        let arcs = graph.arcs as f64 * directions as f64;
        let per_step_read = arcs * ((record + 4) as f64 * READS_PER_RECORD);
        let per_step_written = arcs * record as f64;
        plan.bytes_read = (per_step_read * work.iterations) as u64;
        plan.bytes_written = (per_step_written * work.iterations) as u64;
        let mut build = 0.0;
        let name = super::ShardLayout::layout_name(p);
        if !graph.layouts.contains(&name) {
            plan.builds = Some(name);
            build = ctx.model.build(graph.csr_out_bytes + graph.csr_in_bytes, graph.arcs);
        }
        plan.seconds = ctx.model.transfer(plan.bytes_read + plan.bytes_written)
            + ctx.model.compute(work.edge_visits.max(arcs * work.iterations), ctx.model.rates.shards)
            + build;
        plan.single_process(ctx)
    }
}

/// The run may take static steps (`--dynamic off`, or no policy asked: the engine then
/// prefers the memory mode when it fits), the only ones the memory mode runs.
fn static_steps(ctx: &PlanContext) -> bool {
    ctx.options.shards.dynamic.is_none_or(|policy| policy == DynamicPolicy::Off)
}

/// The memory mode's plan with the engine's own sums ([`memory_sizing`]), or why it does not
/// fit.
fn memory_plan(shape: &ProgramShape, ctx: &PlanContext, work: &Workload) -> Result<Plan, String> {
    let graph = ctx.graph;
    let weights = shape.uses_weights && graph.weighted;
    let forward = !(graph.directed && shape.direction == crate::program::EdgeDirection::In);
    let per_edge = topology_bytes_per_edge(weights);
    let state = MemorySizing::vertex_state(graph.vertices, shape.value_bytes, shape.msg_bytes);
    if state.saturating_add(graph.max_degree().saturating_mul(per_edge)) > ctx.budget {
        return Err(format!("values and flags need {}", format_size(state)));
    }
    let p = match ctx.options.shards.shards {
        Some(p) => p,
        None => {
            let spread = super::memory::spread_bytes(graph.vertices, graph.arcs, shape.msg_bytes, per_edge, forward);
            let p = spread.div_ceil((ctx.budget - state).max(1)).max(1);
            if p > MAX_AUTO_SHARDS as u64 {
                return Err(format!("would need more than {MAX_AUTO_SHARDS} shards"));
            }
            (p as usize).next_power_of_two()
        }
    };
    let (p, sizing) = memory_sizing(shape, ctx, p, weights, forward)?;
    let mut plan = Plan::new(EngineKind::Shards, work).with_parts(sizing.parts());
    // A step reads every shard's runs, targets and weights once and writes nothing.
    let width = target_bytes_for(graph.vertices);
    let runs = graph.arcs.min(graph.vertices.saturating_mul(p as u64));
    let per_step = runs * run_record_bytes(width) + graph.arcs * (width + if weights { 8 } else { 0 });
    plan.bytes_read = (per_step as f64 * work.iterations) as u64;
    plan.bytes_written = 0;
    let name = super::ShardLayout::layout_name(p);
    let mut build = 0.0;
    if !graph.layouts.contains(&name) {
        build = ctx.model.build(graph.csr_out_bytes + graph.csr_in_bytes, graph.arcs);
        plan.builds = Some(name);
    }
    let arcs = graph.arcs as f64 * if forward && shape.layouts(graph.directed) == 2 { 2.0 } else { 1.0 };
    plan.seconds = ctx.model.transfer(plan.bytes_read)
        + ctx.model.compute(work.edge_visits.max(arcs * work.iterations), ctx.model.rates.shards)
        + build;
    Ok(plan)
}

/// The memory mode's sums with `p` shards, as the run makes them ([`MemorySizing`]): from the
/// largest interval and shard of the built layout, or of intervals and shards balanced like
/// the layout's when it is not built yet (read from the offsets, exact). Like the run, doubles
/// `p` while they do not fit (unless `--shards` fixes it).
fn memory_sizing(
    shape: &ProgramShape,
    ctx: &PlanContext,
    mut p: usize,
    weights: bool,
    forward: bool,
) -> Result<(usize, MemorySizing), String> {
    let graph = ctx.graph;
    loop {
        // The built layout's figures, or the same figures read from the offsets.
        let facts = graph.shard_facts(p);
        let input = SizingInput {
            vertices: graph.vertices,
            value_bytes: shape.value_bytes,
            msg_bytes: shape.msg_bytes,
            weights,
            forward,
            shards: p,
            max_interval_vertices: facts
                .as_ref()
                .map_or(graph.vertices.div_ceil(p as u64), |f| f.max_interval_vertices),
            max_shard_edges: facts.as_ref().map_or(graph.arcs.div_ceil(p as u64), |f| f.max_shard_edges),
        };
        if let Some(sizing) = MemorySizing::new(&input, ctx.budget, rayon::current_num_threads()) {
            return Ok((p, sizing));
        }
        if facts.is_none() || ctx.options.shards.shards.is_some() || p * 2 > MAX_AUTO_SHARDS {
            return Err(format!("with {p} shards values, accumulators and a shard's topology exceed the budget"));
        }
        p *= 2;
    }
}
