//! The shards engine (`--engine shards`): GraphChi's parallel sliding windows over shards
//! (Kyrola et al., OSDI 2012), fully external, with the dynamic shards, delay buffer and
//! shadow iterations of "Load the Edges You Need" (Vora et al., ATC 2016,
//! `dynamic-shards-vora-atc16.md` §2–5).
//!
//! **Fully external.** Vertex values live in a work file and only the current interval's
//! vertices are in memory, so graphs whose vertex state exceeds the budget run. The layout
//! `shards-P` ([`layout`]) splits the vertices into P intervals balanced by in-edge count; P
//! comes from `--memory` (one interval's in- and out-edges plus its vertices must fit a third
//! of the budget; a P whose intervals cannot fit by the offsets alone,
//! [`layout::interval_load_floor`], is passed over unbuilt) unless `--shards P` says otherwise.
//! Edge records (the messages edges carry,
//! [`edges`]) live in work files beside the shards. Work files go to `STORE/tmp/` and are
//! removed at the end of the run.
//!
//! **Values in memory** ([`memory`], [`ShardValues`]): a static run (`--dynamic off`) whose
//! vertex values, combined messages and flags fit the budget beside one shard's topology
//! keeps them all in memory instead (the default, `Auto`, also for programs that would get
//! `ods` by default: the memory mode reads less): messages go straight into their
//! targets' accumulators, so edges need no records and a step only reads the shards'
//! topology. What follows describes the fully external mode (`Disk`), which dynamic policies
//! and larger graphs use.
//!
//! **A step** (§2, Fig. 2a) visits the intervals in order. For interval j it loads the memory
//! shard j whole (every in-edge of the interval) and, from every other shard k, the block of
//! edges whose source lies in j (the sliding window: the interval's out-edges), then
//! 1. *gather*: each vertex folds with `combine` the messages written to its in-edges in the
//!    previous step (in source order, like the reference engine);
//! 2. *apply*, in parallel over the interval's vertices, with the previous iteration's
//!    context; `apply` says whether the vertex is active;
//! 3. *scatter*: each active vertex writes `scatter(value, edge)` into its out-edges' records,
//!    windows in parallel (an edge has one source, so no two threads write one record);
//! 4. *write-back* of the interval's values and of every loaded record block that changed.
//!
//! Step s thus runs apply of iteration s−1 and scatter of iteration s of the reference engine
//! (`engine/inmem.rs`), with the same results: each record has two message slots selected by
//! the step's parity ([`edges`]), so messages of step s are read in step s+1 whatever the
//! order of intervals — the deterministic rule for edges inside an interval too. Programs that
//! send against edge direction ([`EdgeDirection::Both`], `In`) use a second, backward record
//! per edge: a vertex's out-edges (its windows) bring the messages its out-neighbours sent
//! backwards, and it sends backwards along its in-edges (its memory shard) — the in- and
//! out-windows of PSW give both directions without a second layout.
//!
//! **Dynamic shards** ([`policy`]): with `ads` or `ods` a step may load, instead of static
//! shards, dynamic shards holding only the edges updated with a non-identity message (dirty)
//! since some step. A missing in-edge is a zero increment (§4); an active vertex with a
//! missing out-edge sends along the edges present and, under the paper's rule
//! (`--delayed-delivery shadow`), enters the [`delay::DelayBuffer`];
//! shadow iterations (Algorithm 1) load the static shards, overlay the dynamic shards built
//! since the last shadow (later data wins: the record with the newer stamp), send the delayed
//! messages folded with `combine`, write the static shards back (the checkpoint), build the
//! next dynamic shards and clear the buffer. Dynamic shards are built at write-back: the dirty
//! edges of shard k are appended block by block in source-interval order (memory shard k's
//! blocks 0..=k when interval k is written, then the window block of every later interval),
//! which keeps each dynamic shard sorted like its static shard.
//!
//! Policies need distributive programs (§4.2), declared by
//! [`VertexProgram::tolerates_delays`]: `apply(v, x, identity())` must leave `x` unchanged and
//! return false (a dropped edge carries no message), and the messages of a delayed vertex,
//! folded with `combine`, must equal what the edge would have carried. Other programs (`pr`
//! needs every in-edge's full value every iteration; BFS levels counted by iteration in `bc`
//! and `msbfs`) run with `--dynamic off`, which they get by default; asking for more is an
//! error. With `off` the engine runs every vertex program exactly like the reference engine.
//!
//! **Direct delivery** ([`direct`], `--delayed-delivery adjacency`, the default): a vertex that
//! lacks out-edges on a dynamic shard reads its adjacency list from the store and sends along
//! the missing edges at once, instead of waiting for a shadow iteration (the paper's rule,
//! `--delayed-delivery shadow`); see [`direct`] for why.
//!
//! **Memory** ([`DiskSizing`], the plan's parts and the run's ledger charges). One interval's
//! edges (topology, positions, records: [`EdgeSection`]) and its vertices must fit
//! [`INTERVAL_SHARE`] of the budget; a shadow iteration may hold the same again
//! while overlaying; the writers of dynamic shards get an eighth of the budget; the two
//! direct-delivery buffers a thirty-second each (beyond that they spill to sorted runs); the
//! delay buffer is small by construction (its size triggers shadow iterations). The final
//! values are read back in chunks: into the `Vec` that `run_vertex_program` returns, or one
//! by one to the caller of [`Runner::run_vertex_program_visit`], which keeps only what it
//! needs (mssp: one distance per source, not the K-slot state).

pub mod delay;
pub mod direct;
pub mod edges;
mod interval;
pub mod layout;
pub mod memory;
pub mod plan;
pub mod policy;

use std::path::PathBuf;
use std::time::Instant;

pub use delay::DelayBuffer;
pub use direct::DirectDelivery;
pub use edges::{DynamicShardSet, DynamicShardWriter, EdgeRecord, EdgeSection, ShardFiles, WorkFile};
pub use layout::{IntervalFloors, ShardLayout};
pub use policy::{DelayedDelivery, DynamicPolicy, ShadowSchedule, StepKind, StepOutcome, StepPlan};

use interval::{IntervalOutcome, StepInputs};

use super::{IterationFigures, IterationStats, Runner, ShardsIteration, ShardsRun};
use crate::error::{Error, IoContext, Result};
use crate::program::{Control, EdgeRef, IterationContext, VertexProgram};
use crate::runtime::{format_size, peak_rss_bytes, Charge, MemoryPart, ProgressUnit};
use crate::store::Direction;
use crate::VertexId;

/// Options of the shards engine.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardsOptions {
    /// Number of intervals (`--shards`); None: from the budget.
    pub shards: Option<usize>,
    /// `--dynamic`; None: `ods` for programs that allow it, `off` for the others.
    pub dynamic: Option<DynamicPolicy>,
    /// ODS: the first shadow iteration runs when the share of updated edges falls below this
    /// (`--shadow-edge-share`); None: [`DelayedDelivery::default_shadow_edge_share`] (0.8 with
    /// direct delivery, the paper's 0.30 with shadow delivery).
    pub shadow_edge_share: Option<f64>,
    /// ADS/ODS: a shadow iteration runs when the delay buffer exceeds this many bytes.
    pub delay_buffer_bytes: u64,
    /// ADS/ODS: where the messages of a vertex lacking edges on a dynamic shard go
    /// (`--delayed-delivery`, default adjacency).
    pub delayed_delivery: DelayedDelivery,
    /// Where vertex values live (`--shards-values`, default auto).
    pub values: ShardValues,
}

/// Where the shards engine keeps vertex values (`--shards-values`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShardValues {
    /// In memory ([`memory`]) when the run is static (`--dynamic off`) and every value,
    /// combined message and flag fits the budget beside one shard's topology; on disk otherwise.
    #[default]
    Auto,
    /// In memory; an error when they do not fit or a dynamic policy was asked for.
    Memory,
    /// In a work file, one interval in memory at a time (GraphChi's PSW, fully external).
    Disk,
}

impl ShardValues {
    pub fn parse(name: &str) -> Result<ShardValues> {
        match name {
            "auto" => Ok(ShardValues::Auto),
            "memory" => Ok(ShardValues::Memory),
            "disk" => Ok(ShardValues::Disk),
            other => Err(Error::invalid(format!("unknown --shards-values '{other}' (available: auto, memory, disk)"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ShardValues::Auto => "auto",
            ShardValues::Memory => "memory",
            ShardValues::Disk => "disk",
        }
    }
}

impl Default for ShardsOptions {
    fn default() -> Self {
        ShardsOptions {
            shards: None,
            dynamic: None,
            shadow_edge_share: None,
            delay_buffer_bytes: 100 << 10,
            delayed_delivery: DelayedDelivery::Adjacency,
            values: ShardValues::Auto,
        }
    }
}

/// Share of the budget for one interval's edges and vertices (a shadow iteration may hold
/// as much again while it overlays dynamic shards); the rest is for the writers of dynamic
/// shards, the delay buffer and the runtime.
pub(crate) const INTERVAL_SHARE: f64 = 0.3;

/// The memory of the disk mode (PSW), by part: one interval's edges and vertices within
/// [`INTERVAL_SHARE`] of the budget; with dynamic shards as much again for a shadow iteration's
/// overlay and an eighth for the writers of dynamic shards, and, when messages along missing
/// edges are delivered directly, a thirty-second for each of the two direct-delivery buffers.
/// The one sum behind the plan's parts, the executor's caps and its ledger charges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiskSizing {
    pub interval: u64,
    pub shadow: u64,
    pub writers: u64,
    /// One direct-delivery buffer's cap (it spills sorted runs beyond).
    pub direct_buffer: u64,
    /// Both direct-delivery buffers, when the run delivers directly.
    pub direct: u64,
}

impl DiskSizing {
    pub fn new(budget: u64, policy: DynamicPolicy, delivery: DelayedDelivery) -> DiskSizing {
        let interval = (budget as f64 * INTERVAL_SHARE) as u64;
        let dynamic = policy != DynamicPolicy::Off;
        let direct_buffer = budget / 32;
        DiskSizing {
            interval,
            shadow: if dynamic { interval } else { 0 },
            writers: if dynamic { budget / 8 } else { 0 },
            direct_buffer,
            direct: if dynamic && delivery == DelayedDelivery::Adjacency { 2 * direct_buffer } else { 0 },
        }
    }

    pub fn parts(&self) -> [MemoryPart; 4] {
        [
            MemoryPart::new("interval (vertices, memory shard)", self.interval),
            MemoryPart::new("shadow overlay", self.shadow),
            MemoryPart::new("dynamic shard writers", self.writers),
            MemoryPart::new("direct delivery", self.direct),
        ]
    }
}

/// The policy a program runs with, or why it cannot have the one asked for (`distributive`:
/// the program [tolerates delays](VertexProgram::tolerates_delays)).
pub(crate) fn resolve_policy(options: &ShardsOptions, distributive: bool) -> Result<(DynamicPolicy, &'static str)> {
    if options.values == ShardValues::Memory {
        return match options.dynamic {
            None => Ok((DynamicPolicy::Off, "--shards-values memory runs static steps")),
            Some(DynamicPolicy::Off) => Ok((DynamicPolicy::Off, "asked")),
            Some(p) => Err(Error::invalid(format!(
                "--dynamic {} needs vertex values on disk (dynamic shards carry messages on edges); use \
                 --shards-values disk or auto, or --dynamic off",
                p.name()
            ))),
        };
    }
    match options.dynamic {
        None if distributive => Ok((DynamicPolicy::Ods, "default")),
        None => Ok((DynamicPolicy::Off, "default for programs that do not tolerate delayed messages")),
        Some(DynamicPolicy::Off) => Ok((DynamicPolicy::Off, "asked")),
        Some(p) if distributive => Ok((p, "asked")),
        Some(p) => Err(Error::invalid(format!(
            "--dynamic {} needs a program that tolerates delayed messages (accumulative or selective); this one \
             needs every in-edge each iteration or counts levels by iteration — use --dynamic off (or pr-delta \
             instead of pr)",
            p.name()
        ))),
    }
}

/// The run's work directory, removed when dropped.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Per-vertex bytes in memory for the current interval.
fn vertex_bytes<P: VertexProgram>() -> u64 {
    (2 * std::mem::size_of::<P::Value>() + std::mem::size_of::<P::Msg>() + 16 + 4) as u64
}

/// Chooses P and opens (or builds) the layout whose intervals fit `share`.
fn open_layout<P: VertexProgram>(
    runner: &Runner,
    per_edge: u64,
    share: u64,
    floors: &IntervalFloors,
) -> Result<ShardLayout> {
    let store = runner.store();
    let options = &runner.options().shards;
    let budget = runner.memory().bytes();
    let n = store.num_vertices();
    let per_vertex = vertex_bytes::<P>();
    let fits = |layout: &ShardLayout| layout.facts().intervals_fit(per_edge, per_vertex, share);
    let build_buffer = budget / 4;
    if let Some(p) = options.shards {
        let layout = ShardLayout::open_or_build(store, p, build_buffer, runner.progress())?;
        if !fits(&layout) {
            return Err(Error::MemoryBudget(format!(
                "with {p} shards an interval's edges and vertices need more than {} ({}% of --memory {}); \
                 use more shards or leave --shards out",
                format_size(share),
                (INTERVAL_SHARE * 100.0) as u32,
                runner.memory()
            )));
        }
        return Ok(layout);
    }
    // No number of intervals helps when one vertex's edges alone do not fit.
    let hub_edges = busiest_degree(store)?;
    let hub_bytes = hub_edges * per_edge + per_vertex;
    if hub_bytes > share {
        let (hub, _) = busiest_vertex(store)?;
        return Err(Error::MemoryBudget(format!(
            "vertex {hub} (dense id) has {hub_edges} in- and out-edges, which need {} in one interval, more than {} \
             ({}% of --memory {}); raise --memory to at least {}",
            format_size(hub_bytes),
            format_size(share),
            (INTERVAL_SHARE * 100.0) as u32,
            runner.memory(),
            format_size((hub_bytes as f64 / INTERVAL_SHARE) as u64 + 1)
        )));
    }
    let total = 2 * store.num_arcs() * per_edge + n * per_vertex;
    let mut p = (total.div_ceil(share.max(1)) as usize).max(1).next_power_of_two();
    loop {
        // The block index holds P·(P+1) pairs and every step reads P·(P−1) windows.
        if p > MAX_AUTO_SHARDS || (p * (p + 1) * 16) as u64 > share {
            return Err(Error::MemoryBudget(format!(
                "the shards engine would need more than {} intervals for this graph ({} vertices, {} arcs) under \
                 --memory {}; raise --memory (or force --shards)",
                p / 2,
                n,
                store.num_arcs(),
                runner.memory()
            )));
        }
        // A balance whose intervals cannot fit, even counting each one's larger edge direction
        // alone, is passed over without building it.
        if floors.worth_opening(p, |floor| floor.intervals_fit(per_edge, per_vertex, share))? {
            let layout = ShardLayout::open_or_build(store, p, build_buffer, runner.progress())?;
            if fits(&layout) {
                return Ok(layout);
            }
        }
        p *= 2;
    }
}

/// Most intervals `--memory` may ask for (each step reads P·(P−1) windows).
pub(crate) const MAX_AUTO_SHARDS: usize = 1024;

/// The vertex with most in- plus out-edges and that number, from the offsets (streamed); the
/// number is the store's [`Manifest::max_degree`](crate::store::Manifest::max_degree).
pub fn busiest_vertex(store: &crate::store::Store) -> Result<(VertexId, u64)> {
    let (out, inn) = (store.csr(Direction::Out)?, store.csr(Direction::In)?);
    crate::store::csr::busiest_by_offsets(store.num_vertices(), store.is_directed(), |direction, first, offsets| {
        match direction {
            Direction::Out => out.read_offsets(first, offsets),
            Direction::In => inn.read_offsets(first, offsets),
        }
    })
}

/// The most in- plus out-edges of one vertex: the manifest's figure, recorded when the store
/// was built, else [`busiest_vertex`]'s (which streams both offsets files: 38 MB on RMAT-22).
pub(crate) fn busiest_degree(store: &crate::store::Store) -> Result<u64> {
    match store.manifest().max_degree {
        Some(degree) => Ok(degree),
        None => Ok(busiest_vertex(store)?.1),
    }
}

/// The edge sections one interval's step has loaded: its memory shard and its windows.
#[derive(Clone, Copy)]
struct Sections<'s> {
    memory: &'s EdgeSection,
    windows: &'s [(usize, EdgeSection)],
}

/// The adjacency list of `v` in `csr`: (neighbour, weight bits), weight 1 when `weighted` is
/// false. One contiguous read of its targets (and weights).
fn adjacency(csr: &crate::store::CsrLayout, v: VertexId, weighted: bool) -> Result<Vec<(VertexId, u64)>> {
    let mut bounds = [0u64; 2];
    csr.read_offsets(v, &mut bounds)?;
    let count = bounds[1] - bounds[0];
    let mut targets = Vec::with_capacity(count as usize);
    csr.read_targets(bounds[0], count, &mut targets)?;
    let mut weights = Vec::new();
    if weighted {
        csr.read_weights(bounds[0], count, &mut weights)?;
    } else {
        weights.resize(count as usize, 1.0);
    }
    Ok(targets.into_iter().zip(weights.iter().map(|w| w.to_bits())).collect())
}

/// Bytes read and written by kind of file, over a step.
#[derive(Debug, Default, Clone, Copy)]
struct ByKind {
    static_read: u64,
    static_written: u64,
    dynamic_read: u64,
    dynamic_written: u64,
    /// Adjacency lists read for direct delivery.
    adjacency_read: u64,
}

/// Runs a vertex program to completion; values in dense-id order.
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let mut values = Vec::with_capacity(runner.graph_info().num_vertices as usize);
    run_vertex_program_visit(runner, program, |_, x| values.push(*x))?;
    Ok(values)
}

/// Runs a vertex program to completion and hands every value to `visit` in dense-id order,
/// read back from the values file in chunks (see [`Runner::run_vertex_program_visit`]).
pub fn run_vertex_program_visit<P: VertexProgram>(
    runner: &Runner,
    program: &P,
    visit: impl FnMut(VertexId, &P::Value),
) -> Result<()> {
    let options = &runner.options().shards;
    let (policy, policy_reason) = resolve_policy(options, program.tolerates_delays())?;
    let floors = layout::IntervalFloors::new(runner.store());
    // Static steps with values in memory read less than any dynamic shard set (topology
    // only, no records), so they are also the default for programs that would get ODS.
    if options.values != ShardValues::Disk && (policy == DynamicPolicy::Off || options.dynamic.is_none()) {
        if let Some((layout, sizing)) = memory::open(runner, program, &floors)? {
            let reason = if policy == DynamicPolicy::Off {
                policy_reason
            } else {
                "default when vertex values fit in memory (static steps read only the topology)"
            };
            return memory::MemoryRun::new(runner, program, layout, sizing)?.run(reason, visit);
        }
    }
    Executor::new(runner, program, policy, &floors)?.run(policy_reason, visit)
}

/// The state of one run.
struct Executor<'a, P: VertexProgram> {
    runner: &'a Runner,
    program: &'a P,
    policy: DynamicPolicy,
    layout: ShardLayout,
    /// Message directions in use: forward (along arcs), backward (against them).
    dirs: [bool; 2],
    weights: bool,
    record: usize,
    identity: Vec<u8>,
    work: WorkDir,
    values: WorkFile,
    static_records: Vec<[Option<WorkFile>; 2]>,
    out_offsets: crate::store::CsrLayout,
    in_offsets: Option<crate::store::CsrLayout>,
    /// Dynamic shard sets built since the last shadow, oldest first; the last is current.
    dynamic_sets: Vec<DynamicShardSet>,
    delay: DelayBuffer<P::Value>,
    delivery: DelayedDelivery,
    direct: DirectDelivery<P::Msg>,
    /// Dynamic shard set directories created (`dynamic-0`, `dynamic-1`, …).
    set_dirs_created: usize,
    /// Directories of retired dynamic shard sets, whose files the next set overwrites.
    spare_set_dirs: Vec<PathBuf>,
    sizing: DiskSizing,
    /// The ledger charges of `sizing`'s parts, held for the run.
    _charges: Vec<Charge>,
}

impl<'a, P: VertexProgram> Executor<'a, P> {
    fn new(runner: &'a Runner, program: &'a P, policy: DynamicPolicy, floors: &IntervalFloors) -> Result<Self> {
        let store = runner.store();
        let info = runner.graph_info();
        let dirs = memory::directions(program.direction(), info.directed);
        let weights = program.uses_weights() && info.weighted;
        let record = edges::record_bytes::<P::Msg>();
        let per_edge = EdgeSection::bytes_per_edge(weights, record, dirs.iter().filter(|&&d| d).count());
        let delivery = runner.options().shards.delayed_delivery;
        let sizing = DiskSizing::new(runner.memory().bytes(), policy, delivery);
        let charges = runner.ledger().charge_parts(&sizing.parts())?;
        let layout = open_layout::<P>(runner, per_edge, sizing.interval, floors)?;
        let work = WorkDir(store.work_path("shards-run")?);
        std::fs::create_dir_all(&work.0).context(|| format!("creating {}", work.0.display()))?;
        let counters = store.counters().clone();
        let values = WorkFile::create(
            &work.0.join("values"),
            info.num_vertices * std::mem::size_of::<P::Value>() as u64,
            counters.clone(),
        )?;
        let mut static_records = Vec::with_capacity(layout.shards);
        for k in 0..layout.shards {
            let len = layout.shard_edges(k) * record as u64;
            let mut pair = [None, None];
            for (d, name) in ["fwd", "bwd"].iter().enumerate() {
                if dirs[d] {
                    pair[d] =
                        Some(WorkFile::create(&work.0.join(format!("static-{k}.{name}")), len, counters.clone())?);
                }
            }
            static_records.push(pair);
        }
        let identity = edges::pod_bytes(&program.identity()).to_vec();
        let direct = DirectDelivery::new(layout.shards, sizing.direct_buffer, work.0.clone(), counters.clone());
        Ok(Executor {
            runner,
            program,
            policy,
            out_offsets: store.csr(Direction::Out)?,
            in_offsets: if dirs[1] { Some(store.csr(Direction::In)?) } else { None },
            layout,
            dirs,
            weights,
            record,
            identity,
            work,
            values,
            static_records,
            dynamic_sets: Vec::new(),
            delay: DelayBuffer::new(),
            delivery,
            direct,
            set_dirs_created: 0,
            spare_set_dirs: Vec::new(),
            sizing,
            _charges: charges,
        })
    }

    fn run(mut self, policy_reason: &str, visit: impl FnMut(VertexId, &P::Value)) -> Result<()> {
        let runner = self.runner;
        let info = runner.graph_info();
        let options = runner.options().shards.clone();
        let share = options.shadow_edge_share.unwrap_or_else(|| self.delivery.default_shadow_edge_share());
        let mut schedule = ShadowSchedule::new(self.policy, share, options.delay_buffer_bytes)
            .refreshing(self.delivery == DelayedDelivery::Adjacency);
        let mut figures = ShardsRun {
            shards: self.layout.shards as u64,
            shards_values: ShardValues::Disk,
            memory: None,
            dynamic_policy: self.policy,
            dynamic_policy_reason: policy_reason.to_string(),
            delayed_delivery: self.delivery,
            shadow_iterations: None,
            dynamic_sets_built: None,
            dynamic_set_directories: None,
            engine_peak_rss_bytes: None,
        };
        runner.record_figures(|run| run.shards = Some(figures.clone()));
        let max = self.program.max_iterations();
        let label =
            format!("steps (shards, values on disk, {} shards, dynamic {})", self.layout.shards, self.policy.name());
        let bar = runner.progress().start(&label, max.map(|m| m as u64 + 1), ProgressUnit::Iterations);
        let directions = self.dirs.iter().filter(|&&d| d).count() as u64;
        let total_records = (runner.store().num_arcs() * directions).max(1);
        let mut last: Option<StepOutcome> = None;
        let [mut global_sum, mut second_global_sum] = [0.0; 2];
        let mut step = 0usize;
        let mut shadows = 0usize;
        let mut sets_built = 0u64;
        loop {
            runner.cancel_token().check()?;
            let started = Instant::now();
            let io_before = runner.io_snapshot();
            let plan = schedule.plan(step, last.as_ref());
            let scatter_allowed = max.is_none_or(|m| step < m);
            let ctx =
                IterationContext { iteration: step.saturating_sub(1), graph: info, global_sum, second_global_sum };
            let mut writer = match plan.build_since {
                Some(_) => {
                    sets_built += 1;
                    Some(DynamicShardWriter::create(
                        self.set_dir(),
                        &self.layout,
                        self.weights,
                        self.dirs,
                        self.sizing.writers,
                        runner.store().counters(),
                    )?)
                }
                None => None,
            };
            let delayed_before = self.delay.len();
            let mut total = IntervalOutcome::default();
            let mut by_kind = ByKind::default();
            let inputs = StepInputs { step, plan, ctx: &ctx, scatter_allowed };
            for j in 0..self.layout.shards {
                // `global` runs over all vertices in order, like the reference engine's sum.
                self.interval(inputs, j, writer.as_mut(), &mut by_kind, &mut total)?;
            }
            [global_sum, second_global_sum] = total.global;
            let direct_spilled = self.direct.spilled();
            self.direct.end_step()?;
            let dynamic_share = match (plan.kind, self.dynamic_sets.last()) {
                (StepKind::Dynamic, Some(set)) => Some(total.dirty as f64 / (set.edges() * directions).max(1) as f64),
                _ => None,
            };
            let built_edges = writer.as_ref().map(|w| w.edges);
            if plan.kind == StepKind::Dynamic {
                // The set loaded in this step held its edges until this step.
                if let Some(set) = self.dynamic_sets.last_mut() {
                    set.last_step = step;
                }
            }
            if let Some(w) = writer {
                let set = w.finish(step + 1, runner.store().counters())?;
                // A shadow iteration has folded the older sets into the static shards. With
                // direct delivery nothing waits for a shadow, so the older sets are not needed
                // either once their records have been written back (this step's messages are
                // in the new set); without removing them ADS would hold P files per step.
                if plan.kind == StepKind::Shadow || self.delivery == DelayedDelivery::Adjacency {
                    self.spare_set_dirs.extend(self.dynamic_sets.drain(..).map(DynamicShardSet::retire));
                }
                self.dynamic_sets.push(set);
            }
            let delivered = if plan.kind == StepKind::Shadow { self.delay.len() } else { 0 };
            if plan.kind == StepKind::Shadow {
                self.delay.clear();
                shadows += 1;
            }
            // Delivered delayed messages must be gathered in the next step too.
            // A step whose active vertices sent nothing (all delayed) leaves nothing to gather,
            // except for programs that apply to every vertex.
            let sent = self.program.applies_to_all() || total.written > 0 || total.direct_messages > 0;
            let scattered = (scatter_allowed && total.active > 0 && sent) || delivered > 0;
            let outcome = StepOutcome {
                updated_share: total.dirty as f64 / total_records as f64,
                delay_bytes: self.delay.bytes(),
                delayed_vertices: self.delay.len(),
                scattered,
                dynamic_share,
            };
            let io = runner.io_snapshot().since(&io_before);
            let figures = ShardsIteration {
                kind: plan.kind,
                shards_values: ShardValues::Disk,
                static_bytes_read: by_kind.static_read,
                static_bytes_written: by_kind.static_written,
                dynamic_bytes_read: by_kind.dynamic_read,
                dynamic_bytes_written: by_kind.dynamic_written,
                edges_loaded: total.edges_loaded,
                dirty_edges: total.dirty,
                edge_utilisation: if total.edges_loaded == 0 {
                    0.0
                } else {
                    total.dirty as f64 / total.edges_loaded as f64
                },
                delayed_vertices_added: self.delay.len().saturating_sub(delayed_before) as u64,
                delayed_vertices_delivered: delivered as u64,
                delay_buffer_bytes: self.delay.bytes(),
                directly_served_vertices: total.served,
                direct_messages: total.direct_messages,
                direct_messages_spilled: direct_spilled as u64,
                adjacency_bytes_read: by_kind.adjacency_read,
                dynamic_shard_edges: built_edges,
                dynamic_updated_share: dynamic_share,
            };
            runner.record_iteration(IterationStats {
                iteration: step,
                active_vertices: total.active,
                edges_processed: total.edges_loaded,
                bytes_read: io.bytes_read,
                bytes_written: io.bytes_written,
                seconds: started.elapsed().as_secs_f64(),
                delivery: None,
                figures: IterationFigures::Shards(figures),
            });
            bar.inc(1);
            let stop = step > 0 && self.program.end_iteration(step - 1, total.active) == Control::Stop;
            last = Some(outcome);
            step += 1;
            let pending = !self.delay.is_empty() && max.is_none_or(|m| step < m);
            if stop || (!scattered && !pending) {
                break;
            }
        }
        bar.finish();
        figures.shadow_iterations = Some(shadows as u64);
        figures.dynamic_sets_built = Some(sets_built);
        figures.dynamic_set_directories = Some(self.set_dirs_created as u64);
        figures.engine_peak_rss_bytes = Some(peak_rss_bytes());
        runner.record_figures(|run| run.shards = Some(figures));
        self.spare_set_dirs.extend(self.dynamic_sets.drain(..).map(DynamicShardSet::retire));
        for dir in self.spare_set_dirs.drain(..) {
            std::fs::remove_dir_all(&dir).context(|| format!("removing {}", dir.display()))?;
        }
        self.visit_values(visit)
    }

    /// The directory for the next dynamic shard set: a retired set's, whose files it
    /// overwrites, else a new one.
    fn set_dir(&mut self) -> PathBuf {
        self.spare_set_dirs.pop().unwrap_or_else(|| {
            self.set_dirs_created += 1;
            self.work.0.join(format!("dynamic-{}", self.set_dirs_created - 1))
        })
    }

    /// Sends the messages of the active vertices `lacking` (offsets in interval `j`) along their
    /// edges missing from the loaded dynamic shards, which their adjacency lists in the store
    /// name ([`direct`]).
    #[allow(clippy::too_many_arguments)]
    fn deliver_directly(
        &mut self,
        j: usize,
        lacking: &[usize],
        sections: Sections<'_>,
        values: &[P::Value],
        out_degree: &[u64],
        by_kind: &mut ByKind,
        total: &mut IntervalOutcome,
    ) -> Result<()> {
        let program = self.program;
        let v0 = self.layout.intervals[j];
        let len = (self.layout.intervals[j + 1] - v0) as usize;
        let mut slot = vec![usize::MAX; len];
        for (s, &i) in lacking.iter().enumerate() {
            slot[i] = s;
        }
        let weight_bits =
            |s: &EdgeSection, e: usize| if s.weights.is_empty() { 1f64.to_bits() } else { s.weights[e].to_bits() };
        // The edges present on the shards, per lacking vertex and direction: (neighbour, weight).
        let mut present: [Vec<Vec<(VertexId, u64)>>; 2] =
            [vec![Vec::new(); lacking.len()], vec![Vec::new(); lacking.len()]];
        if self.dirs[0] {
            for section in std::iter::once(sections.memory).chain(sections.windows.iter().map(|(_, w)| w)) {
                for e in section.block(j) {
                    let s = slot[(section.sources[e] - v0) as usize];
                    if s != usize::MAX {
                        present[0][s].push((section.targets[e], weight_bits(section, e)));
                    }
                }
            }
        }
        if self.dirs[1] {
            let memory = sections.memory;
            for e in 0..memory.len() {
                let s = slot[(memory.targets[e] - v0) as usize];
                if s != usize::MAX {
                    present[1][s].push((memory.sources[e], weight_bits(memory, e)));
                }
            }
        }
        let csrs = [Some(&self.out_offsets), self.in_offsets.as_ref()];
        for (s, &i) in lacking.iter().enumerate() {
            let u = v0 + i as u64;
            for d in (0..2).filter(|&d| self.dirs[d]) {
                let csr = csrs[d].expect("an adjacency list for every direction in use");
                let before = self.runner.io_snapshot();
                let list = adjacency(csr, u, self.weights)?;
                by_kind.adjacency_read += self.runner.io_snapshot().since(&before).bytes_read;
                let edges = direct::missing_edges(list, std::mem::take(&mut present[d][s]));
                for (neighbour, bits) in edges {
                    let edge = EdgeRef {
                        source: u,
                        target: neighbour,
                        weight: f64::from_bits(bits),
                        source_out_degree: out_degree[i],
                    };
                    if let Some(m) = program.scatter(&values[i], edge) {
                        self.direct.send(self.layout.interval_of(neighbour), neighbour, m)?;
                        total.direct_messages += 1;
                    }
                }
            }
            total.served += 1;
        }
        Ok(())
    }

    /// Reads every vertex value back (the result) through a 1 MiB buffer, in dense-id order.
    fn visit_values(&self, mut visit: impl FnMut(VertexId, &P::Value)) -> Result<()> {
        let n = self.runner.graph_info().num_vertices as usize;
        let size = std::mem::size_of::<P::Value>();
        let chunk = (1usize << 20) / size.max(1) + 1;
        let mut buf = Vec::new();
        let mut first = 0;
        while first < n {
            let count = chunk.min(n - first);
            buf.resize(count * size, 0);
            self.values.read_at(&mut buf, (first * size) as u64)?;
            for i in 0..count {
                let value = edges::pod_read::<P::Value>(&buf[i * size..(i + 1) * size]);
                visit((first + i) as VertexId, &value);
            }
            first += count;
        }
        Ok(())
    }
}
