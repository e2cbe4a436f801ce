//! The stream engine (`--engine stream`): semi-external, edge-centric streaming with Redio's
//! dynamic selective scheduling (paper: `redio-selective-scheduling-tc19.md`, §3–4).
//!
//! **What lives where.** Every vertex attribute is in memory, one array per attribute (§3.1:
//! vertices are accessed far more often than edges, and for the graphs we target they fit):
//! the program's values, the per-target accumulators, two [`IndexedBitmap`] frontiers, and the
//! `offsets` array of each adjacency layout read (8 bytes per vertex, counted as vertex
//! state). Edges stay on disk in the compact `csr-out` layout (`csr-in` instead for
//! [`EdgeDirection::In`] programs, both for [`EdgeDirection::Both`] on a directed store; the
//! weight files only when the program reads weights). They are never mapped or loaded whole: a [`ChunkReader`] thread
//! streams them through a fixed pool of large aligned buffers sized from `--memory`. When the
//! vertex state alone exceeds the budget, the run fails before starting with
//! [`Error::MemoryBudget`] naming the memory needed and the fully external engine.
//!
//! **An iteration** (§4, Fig. 4) is scatter + apply:
//! 1. *schedule*: from the active vertices the [`schedule`] module derives the edge ranges to
//!    read — merged active chunks (gap threshold `l`, see [`calibrate`]), everything
//!    ([`Schedule::Full`]) or fixed blocks ([`Schedule::Block`]) — lazily, in file order,
//!    on the reader thread; a selective iteration whose active edges cover most of the file
//!    streams it whole. (Redio scans the frontier in parallel before the iteration, §4; here
//!    the scan runs on the reader thread while the compute threads scatter, which hides it
//!    as well and needs no plan in memory);
//! 2. *scatter*: each filled buffer is split into equal slices of edges, one per accumulator;
//!    slice `k` always goes to accumulator `k` (whichever rayon thread runs it), which owns a
//!    full array of messages and a bitmap of the targets it touched. No locks or atomics in
//!    the hot loop, and a fixed fold order, so results do not depend on thread timing;
//! 3. *apply*: in parallel over blocks of vertices, the accumulators are folded with `combine`
//!    (visiting only targets they touched, through their bitmaps' index), `apply` runs on
//!    every vertex that received a message (every vertex for `applies_to_all` programs), and
//!    the vertices it reports changed form the next frontier, built block by block.
//!
//! I/O overlaps compute: the reader fills buffers ahead of the scatter through a bounded
//! queue. What the budget leaves after the plan keeps a prefix of the layout dense passes read
//! in memory ([`resident`]); later dense passes read only the rest. Reads are buffered when an
//! iteration's data fits the page cache estimate and `O_DIRECT` otherwise (`--io auto`, §4
//! "Vertex Data Buffering"), or as forced.
//!
//! Semantics follow the reference engine exactly (see `engine/inmem.rs`): `global_sum` is
//! taken before each scatter, messages along in-arcs of a directed store for
//! [`EdgeDirection::Both`] carry the source's out-degree, and the run ends when no vertex is
//! active, after `max_iterations`, or when `end_iteration` says so.

pub mod bitmap;
pub mod calibrate;
pub mod edge_pass;
pub mod plan;
pub mod pull;
pub mod reader;
pub mod resident;
mod run;
pub mod schedule;

use std::time::Instant;

use crossbeam_channel::bounded;
use rayon::prelude::*;

pub use bitmap::IndexedBitmap;
pub use reader::{ChunkReader, EdgeBuffer, LayoutFiles};
pub use run::run_vertex_program;
pub use schedule::{BlockScheduler, Chunk, ChunkPlan, GapRule, Schedule, SelectiveScheduler};

use super::Runner;
use crate::error::{Error, Result};
use crate::program::{add_global_sums, global_contributions, EdgeDirection, EdgeRef, IterationContext, VertexProgram};
use crate::runtime::{format_size, prefetch, MemoryPart, PREFETCH_DISTANCE};
use crate::store::{Direction, Store};
use reader::EdgeFile;

/// How edges are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// O_DIRECT when an iteration's data will not fit in the page cache, buffered otherwise.
    #[default]
    Auto,
    Direct,
    Buffered,
}

impl IoMode {
    pub const NAMES: &'static [&'static str] = &["auto", "direct", "buffered"];

    pub fn parse(name: &str) -> Result<IoMode> {
        match name {
            "auto" => Ok(IoMode::Auto),
            "direct" => Ok(IoMode::Direct),
            "buffered" => Ok(IoMode::Buffered),
            other => Err(Error::invalid(format!("unknown I/O mode '{other}' (available: {})", Self::NAMES.join(", ")))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IoMode::Auto => "auto",
            IoMode::Direct => "direct",
            IoMode::Buffered => "buffered",
        }
    }
}

/// Options of the stream engine (`RunOptions::stream`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamOptions {
    /// Which edges an iteration reads (default: selective).
    pub schedule: Schedule,
    /// The gap threshold `l` in bytes (`--gap-threshold`); None: the device's calibration, or
    /// [`calibrate::DEFAULT_GAP_THRESHOLD`].
    pub gap_threshold: Option<u64>,
    pub io: IoMode,
    /// Block size of [`Schedule::Block`], in bytes of the targets file (default 1 MiB).
    pub block_bytes: u64,
    /// A selective iteration whose active edges are at least this share of the file streams
    /// the whole file (default 0.9).
    pub dense_fraction: f64,
    /// Partition size `p` of the indexed bitmaps, in bits (default 512).
    pub partition_bits: usize,
    /// Buffers in the reader's pool (default 4: one being filled, one being scattered, two
    /// queued).
    pub buffers: usize,
    /// Upper bound of one buffer (default 4 MiB: the device reads as fast in 4 MiB requests as
    /// in 16 MiB ones, and the budget they leave keeps edges resident); smaller when the
    /// budget is tight.
    pub max_buffer_bytes: u64,
    /// Dense iterations of programs that support it pull (see [`pull`]; default on). Off:
    /// every iteration pushes.
    pub pull: bool,
    /// Edges of dense passes are kept in memory when the budget has room (see [`resident`];
    /// default on). Off: every pass reads from disk (tests comparing schedules' reads).
    pub resident_edges: bool,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            schedule: Schedule::Selective,
            gap_threshold: None,
            io: IoMode::Auto,
            block_bytes: 1 << 20,
            dense_fraction: 0.9,
            partition_bits: bitmap::DEFAULT_PARTITION_BITS,
            buffers: 4,
            max_buffer_bytes: 4 << 20,
            pull: true,
            resident_edges: true,
        }
    }
}

/// The smallest read buffer the engine runs with.
pub const MIN_BUFFER_BYTES: u64 = 64 << 10;

/// How the budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPlan {
    pub values: u64,
    pub offsets: u64,
    /// The two frontiers.
    pub frontiers: u64,
    /// One accumulator: a message per vertex plus its bitmap of touched targets.
    pub accumulator: u64,
    pub accumulators: usize,
    pub buffer_bytes: u64,
    pub buffers: usize,
    /// The sources' messages of pull iterations ([`pull::Sources`]; 0 when the run never
    /// pulls or its messages are not uniform).
    pub pull: u64,
}

impl MemoryPlan {
    /// Vertex state with one accumulator: what must fit before anything is read.
    pub fn vertex_state(&self) -> u64 {
        self.values + self.offsets + self.frontiers + self.accumulator + self.pull
    }

    /// Everything the engine allocates.
    pub fn total(&self) -> u64 {
        self.values
            + self.offsets
            + self.frontiers
            + self.accumulator * self.accumulators as u64
            + self.buffer_bytes * self.buffers as u64
            + self.pull
    }

    /// The plan's parts, as the planner shows them and the run charges them to the ledger.
    pub fn parts(&self) -> [MemoryPart; 6] {
        [
            MemoryPart::new("vertex values", self.values),
            MemoryPart::new("offsets", self.offsets),
            MemoryPart::new("frontiers", self.frontiers),
            MemoryPart::new("accumulators", self.accumulator * self.accumulators as u64),
            MemoryPart::new("read buffers", self.buffer_bytes * self.buffers as u64),
            MemoryPart::new("pulled messages", self.pull),
        ]
    }

    /// Sizes state, accumulators (up to `threads`) and buffers within `budget`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        vertices: u64,
        layouts: u64,
        value_bytes: u64,
        msg_bytes: u64,
        budget: u64,
        threads: usize,
        options: &StreamOptions,
    ) -> Result<MemoryPlan> {
        let bitmap = IndexedBitmap::bytes_for(vertices as usize, options.partition_bits);
        let mut plan = MemoryPlan {
            values: vertices * value_bytes,
            offsets: layouts * (vertices + 1) * 8,
            frontiers: 2 * bitmap,
            accumulator: vertices * msg_bytes + bitmap,
            accumulators: 1,
            buffer_bytes: 0,
            buffers: options.buffers.max(2),
            pull: 0,
        };
        let min_buffers = plan.buffers as u64 * MIN_BUFFER_BYTES;
        let needed = plan.vertex_state() + min_buffers;
        if needed > budget {
            return Err(Error::MemoryBudget(format!(
                "the stream engine keeps all vertex state in memory: {} for {vertices} vertices (values {}, \
                 accumulator {}, offsets {}, frontier bitmaps {}) plus at least {} of read buffers, but the budget \
                 is {}; raise --memory to at least {}, or use the fully external engine (--engine shards), which \
                 keeps only one interval of vertices in memory",
                format_size(plan.vertex_state()),
                format_size(plan.values),
                format_size(plan.accumulator),
                format_size(plan.offsets),
                format_size(plan.frontiers),
                format_size(min_buffers),
                format_size(budget),
                format_size(needed),
            )));
        }
        // More accumulators let scatter run on more threads; each must leave the minimum
        // buffers in place.
        while plan.accumulators < threads.max(1)
            && plan.vertex_state() + plan.accumulator * plan.accumulators as u64 + min_buffers <= budget
        {
            plan.accumulators += 1;
        }
        let state = plan.values + plan.offsets + plan.frontiers + plan.accumulator * plan.accumulators as u64;
        let per_buffer = (budget - state) / plan.buffers as u64;
        let align = crate::runtime::DIRECT_ALIGN as u64;
        plan.buffer_bytes = per_buffer.min(options.max_buffer_bytes.max(MIN_BUFFER_BYTES)) / align * align;
        Ok(plan)
    }
}

/// What a run keeps in memory beside its [`MemoryPlan`], from the room the budget leaves after
/// it ([`resident`]): a prefix of the layout dense passes read, up to all of it, and, when all
/// of it fits and pulls fold uniform messages, the [`pull::SourceOrder`] its first pull builds
/// (from the room left and the accumulators pulls do not use). One sum for the plan's parts
/// and the run's charges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResidentSizing {
    /// Bytes the resident prefix may take.
    pub edges: u64,
    /// Bytes of the source order while the first pull renumbers (0: no order).
    pub order: u64,
}

impl ResidentSizing {
    /// `kept`: one layout is read densely on its own (the pull's, or the only push layout) and
    /// resident edges are on; `edge_bytes`: bytes of one of its edges in memory; `ordered`: the
    /// program's pulls order their sources (not one that sends one message per iteration, see
    /// `run.rs`, `pull_iteration`). May shrink `plan`'s read buffers ([`lend_read_buffers`]).
    pub fn new(
        plan: &mut MemoryPlan,
        budget: u64,
        graph: (u64, u64),
        edge_bytes: u64,
        kept: bool,
        ordered: bool,
    ) -> Self {
        let (vertices, arcs) = graph;
        if !kept {
            return ResidentSizing::default();
        }
        let layout = arcs * edge_bytes;
        let spare_accumulators = plan.accumulator * (plan.accumulators as u64 - 1);
        let order_bytes = pull::SourceOrder::bytes(vertices as usize).0;
        let narrow = crate::store::csr::target_bytes_for(vertices) == 4;
        let wants_order = ordered && plan.pull > 0 && narrow;
        let order_beyond_accumulators = if wants_order { order_bytes.saturating_sub(spare_accumulators) } else { 0 };
        // Kept copies of `O_DIRECT` buffers hold their aligned tails too (smaller buffers, more tails).
        let whole = |buffer_bytes| layout + resident::alignment_slack(layout, buffer_bytes);
        if !lend_read_buffers(plan, budget, whole(LENT_BUFFER_FLOOR) + order_beyond_accumulators) {
            lend_read_buffers(plan, budget, whole(LENT_BUFFER_FLOOR));
        }
        let room = budget.saturating_sub(plan.total());
        let whole = whole(plan.buffer_bytes);
        let edges = room.min(whole);
        let orders = wants_order && whole <= room && order_bytes <= room - edges + spare_accumulators;
        let order = if orders { order_charge(order_bytes, room - edges, spare_accumulators) } else { 0 };
        ResidentSizing { edges, order }
    }

    pub fn parts(&self) -> [MemoryPart; 2] {
        [MemoryPart::new("resident edges", self.edges), MemoryPart::new(SOURCE_ORDER, self.order)]
    }
}

/// Read buffers are not shrunk below this to make room for resident edges.
pub const LENT_BUFFER_FLOOR: u64 = 1 << 20;

/// Shrinks `plan`'s read buffers (to no less than [`LENT_BUFFER_FLOOR`] each) when that
/// leaves `wanted` bytes beside the plan within `budget`; true when they are there. A layout
/// kept whole is read from disk once, so its buffers serve only that first pass, and four of
/// 1 MiB still keep the device busy; the whole layout in memory, with its sources ordered by
/// degree, pulls about 1.4× faster than a prefix (RMAT-22 csr-in at 384 MiB was 0.4 % short).
fn lend_read_buffers(plan: &mut MemoryPlan, budget: u64, wanted: u64) -> bool {
    let room = budget.saturating_sub(plan.total());
    if wanted <= room {
        return true;
    }
    let buffers = plan.buffers as u64;
    let align = crate::runtime::DIRECT_ALIGN as u64;
    let short_per_buffer = (wanted - room).div_ceil(buffers).next_multiple_of(align);
    let shrunk = plan.buffer_bytes.saturating_sub(short_per_buffer);
    if shrunk < LENT_BUFFER_FLOOR {
        return false;
    }
    plan.buffer_bytes = shrunk;
    true
}

/// The ledger part of the [`pull::SourceOrder`].
pub const SOURCE_ORDER: &str = "source order";

/// What the source order charges to the ledger when `free` bytes are left beside the plan:
/// all of it when it fits there, else it takes the memory of the accumulators pulls do not
/// use first (`spare_accumulators`, whose charge stays and covers it) and charges the rest.
pub fn order_charge(order_bytes: u64, free: u64, spare_accumulators: u64) -> u64 {
    if order_bytes <= free {
        order_bytes
    } else {
        order_bytes.saturating_sub(spare_accumulators)
    }
}

/// One accumulator: a message per vertex (identity where untouched) and the touched targets.
struct Accumulator<M> {
    msgs: Vec<M>,
    received: IndexedBitmap,
    /// Edges scattered into this accumulator in the current iteration.
    edges: u64,
    /// A target id out of range met while scattering (a damaged store).
    bad_target: Option<u64>,
}

/// An adjacency layout as the engine reads it: offsets in memory, edge files on disk.
struct StreamLayout {
    name: &'static str,
    offsets: Vec<u64>,
}

fn open_layout(
    store: &Store,
    direction: Direction,
    weights: bool,
    want_direct: bool,
) -> Result<(StreamLayout, LayoutFiles)> {
    let csr = store.csr(direction)?;
    let mut offsets = vec![0u64; csr.vertices as usize + 1];
    csr.read_offsets(0, &mut offsets)?;
    if offsets.windows(2).any(|w| w[0] > w[1]) || offsets.last() != Some(&csr.arcs) {
        return Err(Error::store(csr.offsets.path(), "offsets are not monotone or do not end at the arc count"));
    }
    let counters = store.counters();
    let targets = EdgeFile::open(csr.targets.path(), csr.target_bytes, want_direct, counters)?
        // Ids are range-checked where they are used (the scatter and the edge pass compare
        // each target with |V| anyway), not in a second pass on the reader thread.
        .with_checks(csr.targets.checks().cloned());
    let weights = match (&csr.weights, weights) {
        (Some(w), true) => Some(EdgeFile::open(w.path(), 8, want_direct, counters)?.with_checks(w.checks().cloned())),
        _ => None,
    };
    Ok((StreamLayout { name: csr.name, offsets }, LayoutFiles { targets, weights }))
}

/// The memory plan of a run, and the layout its pull iterations stream (None when it never
/// pulls).
fn plan_memory<P: VertexProgram>(
    runner: &Runner,
    program: &P,
    directions: &[Direction],
    degrees_apart: bool,
    options: &StreamOptions,
) -> Result<(MemoryPlan, Option<Direction>)> {
    let info = runner.graph_info();
    let pull = PullNeeds::of(
        program.supports_pull() && options.pull,
        program.sends_uniform_messages(),
        program.direction(),
        runner.store().is_directed(),
        std::mem::size_of::<P::Msg>() as u64,
        info.num_vertices,
    );
    let (plan, pulls) = MemoryPlan::with_pull(
        info.num_vertices,
        (directions.len() + degrees_apart as usize) as u64,
        std::mem::size_of::<P::Value>() as u64,
        std::mem::size_of::<P::Msg>() as u64,
        runner.memory().bytes(),
        rayon::current_num_threads(),
        options,
        pull,
    )?;
    Ok((plan, pull.filter(|_| pulls).map(|p| p.reverse)))
}

/// What dense pull iterations (see [`pull`]) need beside a push plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullNeeds {
    /// The layout a pull streams: the reverse of the program's direction.
    pub reverse: Direction,
    /// Its offsets are one layout more in memory (a directed store; an undirected one pulls
    /// along the csr-out it pushes along).
    pub extra_layout: bool,
    /// [`pull::Sources`] bytes (0 when messages are not uniform).
    pub sources: u64,
}

impl PullNeeds {
    /// The needs of a program that supports pull (None otherwise, and for `Both` programs).
    pub fn of(
        supports_pull: bool,
        uniform: bool,
        direction: EdgeDirection,
        directed: bool,
        msg_bytes: u64,
        vertices: u64,
    ) -> Option<PullNeeds> {
        let reverse = match (supports_pull, direction, directed) {
            (false, ..) | (true, EdgeDirection::Both, _) => return None,
            (true, EdgeDirection::Out, true) => Direction::In,
            (true, _, _) => Direction::Out,
        };
        let sources = if uniform { vertices * msg_bytes + vertices.div_ceil(64) * 8 } else { 0 };
        Some(PullNeeds { reverse, extra_layout: directed, sources })
    }
}

impl MemoryPlan {
    /// The plan of a run whose dense iterations may pull: with `pull`'s needs when they fit
    /// beside everything push needs (then true), else push only.
    #[allow(clippy::too_many_arguments)]
    pub fn with_pull(
        vertices: u64,
        layouts: u64,
        value_bytes: u64,
        msg_bytes: u64,
        budget: u64,
        threads: usize,
        options: &StreamOptions,
        pull: Option<PullNeeds>,
    ) -> Result<(MemoryPlan, bool)> {
        let plan = |layouts: u64, reserved: u64| {
            MemoryPlan::new(
                vertices,
                layouts,
                value_bytes,
                msg_bytes,
                budget.saturating_sub(reserved),
                threads,
                options,
            )
        };
        if let Some(pull) = pull {
            if let Ok(mut with_pull) = plan(layouts + pull.extra_layout as u64, pull.sources) {
                with_pull.pull = pull.sources;
                return Ok((with_pull, true));
            }
        }
        Ok((plan(layouts, 0)?, false))
    }
}

/// How many times faster a pull folds resident edges than a push reads the same bytes from
/// disk: measured about 7× on RMAT-22 (BFS pulls over all 261 MB of csr-in in memory in
/// 0.018–0.036 s; selective pushes reading 244 MB in 0.2 s, and 8 MB in 788 requests in 0.15 s).
const MEMORY_PULL_SPEEDUP: u64 = 6;

/// Whether a sparse iteration should pull the wholly resident reverse layout (`resident_bytes`)
/// rather than push: Ligra's rule counts arcs, but here a push of a few hundred thousand
/// scattered vertices reads most blocks of csr-out from disk, while the pull reads nothing.
/// The push's cost is the bytes its selective schedule would read, plus, per request, the gap
/// the schedule reads through rather than seek over (what a seek costs, in bytes).
fn pull_from_memory_is_cheaper(
    layouts: &[StreamLayout],
    files: &[LayoutFiles],
    push_layouts: usize,
    frontier: &IndexedBitmap,
    options: &StreamOptions,
    gap_bytes: u64,
    resident_bytes: u64,
) -> bool {
    let push_bytes: u64 = layouts[..push_layouts]
        .iter()
        .zip(files)
        .map(|(layout, f)| {
            let plan = push_plan(layout, f, frontier, None, options, gap_bytes);
            plan.map(|c| c.edges() * f.edge_bytes() + gap_bytes).sum::<u64>()
        })
        .sum();
    push_bytes * MEMORY_PULL_SPEEDUP > resident_bytes
}

/// The first pull over the reverse layout: its edges and the bytes each takes in memory.
struct FirstPull {
    layout: usize,
    edges: u64,
    edge_bytes: u64,
}

/// Whether the first pull over `first.layout` will leave all of it resident with `spare`
/// bytes beside it (the ledger's free bytes plus accumulators that pulls do not use) for a
/// [`pull::SourceOrder`] of `vertices`: the pull then orders the sources by degree and
/// [`pass`] renumbers the ids as it copies them into memory. Every pull, this one included,
/// then loads the messages of busy sources from a small, cache-resident part of the array.
fn will_order_first_pull(
    resident: &resident::ResidentEdges,
    first: &FirstPull,
    vertices: usize,
    wide_ids: bool,
    spare: u64,
) -> bool {
    let layout_bytes = first.edges * first.edge_bytes;
    !wide_ids && resident.will_hold(first.layout, layout_bytes) && spare >= pull::SourceOrder::bytes(vertices).0
}

/// Streams `plans` through `consume`. A dense pass over one layout (`dense`) first hands
/// `consume` that layout's resident prefix, from memory, and offers the buffers it reads to be
/// kept; returns the edges taken from memory and what the stream measured.
fn pass(
    reader: &ChunkReader<'_>,
    plans: Vec<(usize, ChunkPlan<'_>)>,
    pool: &mut Vec<EdgeBuffer>,
    resident: &mut resident::ResidentEdges,
    dense: Option<usize>,
    slot_of: Option<&[u32]>,
    consume: &mut dyn FnMut(&EdgeBuffer) -> Result<()>,
) -> Result<(u64, Streamed)> {
    let mut from_memory = 0;
    if let Some(layout) = dense {
        for buffer in resident.prefix(layout).0 {
            consume(buffer)?;
            from_memory += buffer.edges();
        }
    }
    let streamed = stream_buffers(reader, plans, pool, |buffer| {
        match (dense, slot_of) {
            // Renumbered as it is copied; the fold reads the copy.
            (Some(layout), Some(slot_of)) => match resident.offer_renumbered(layout, buffer, slot_of) {
                Some(kept) => consume(kept)?,
                None => consume(&resident::renumbered_copy(buffer, slot_of))?,
            },
            _ => {
                consume(buffer)?;
                if let Some(layout) = dense {
                    resident.offer(layout, buffer);
                }
            }
        }
        Ok(())
    })?;
    if let Some(layout) = dense {
        resident.end_pass(layout);
    }
    Ok((from_memory, streamed))
}

/// The chunks a push iteration reads of one layout (a dense one from `dense_from` on).
fn push_plan<'a>(
    layout: &'a StreamLayout,
    files: &LayoutFiles,
    frontier: &'a IndexedBitmap,
    dense_from: Option<u64>,
    options: &StreamOptions,
    gap_bytes: u64,
) -> ChunkPlan<'a> {
    let total_edges = *layout.offsets.last().unwrap();
    if let Some(from) = dense_from {
        ChunkPlan::rest(from, total_edges)
    } else if options.schedule == Schedule::Block {
        ChunkPlan::Block(BlockScheduler::new(
            &layout.offsets,
            frontier,
            (options.block_bytes / files.targets.width).max(1),
        ))
    } else {
        let rule = GapRule::new(gap_bytes, files.edge_bytes(), files.files());
        ChunkPlan::Selective(SelectiveScheduler::new(&layout.offsets, frontier, rule))
    }
}

/// What [`stream_buffers`] measured.
pub struct Streamed {
    pub reader: reader::ReaderStats,
    /// Seconds the compute side waited for a filled buffer.
    pub io_wait_seconds: f64,
}

/// Streams `plans` through the buffers of `pool`, the reader on a thread of its own filling
/// buffers ahead of `consume` (through a bounded queue), and puts every buffer back in `pool`.
/// The first error of either side ends the stream and is returned.
pub fn stream_buffers<I: Iterator<Item = Chunk> + Send>(
    reader: &ChunkReader<'_>,
    plans: Vec<(usize, I)>,
    pool: &mut Vec<EdgeBuffer>,
    mut consume: impl FnMut(&EdgeBuffer) -> Result<()>,
) -> Result<Streamed> {
    let (free_tx, free_rx) = bounded::<EdgeBuffer>(pool.len());
    let (full_tx, full_rx) = bounded::<Result<EdgeBuffer>>(pool.len());
    for b in pool.drain(..) {
        free_tx.send(b).expect("the pool channel has room for every buffer");
    }
    let mut io_wait_seconds = 0.0f64;
    let (stats, returned, result) = std::thread::scope(|s| {
        let handle = s.spawn(move || {
            let (stats, leftover) = reader.run(plans, &free_rx, &full_tx);
            drop(full_tx);
            (stats, leftover, free_rx)
        });
        let result = (|| -> Result<()> {
            loop {
                let waiting = Instant::now();
                let Ok(buffer) = full_rx.recv() else { return Ok(()) };
                io_wait_seconds += waiting.elapsed().as_secs_f64();
                let buffer = buffer?;
                let outcome = buffer.verify().and_then(|()| consume(&buffer));
                let _ = free_tx.send(buffer);
                outcome?;
            }
        })();
        // On failure the reader may wait for a buffer or for room in the queue: hang up both
        // channels so that it stops.
        drop(full_rx);
        drop(free_tx);
        let (stats, leftover, free_rx) = handle.join().expect("the reader thread panicked");
        let buffers: Vec<EdgeBuffer> = free_rx.try_iter().chain(leftover).collect();
        (stats, buffers, result)
    });
    *pool = returned;
    result.map(|()| Streamed { reader: stats, io_wait_seconds })
}

/// Sets the initially active vertices; returns their count and their edges per layout.
fn fill_frontier(
    frontier: &mut IndexedBitmap,
    offsets: &[&[u64]],
    active: impl Fn(u64) -> bool + Sync,
) -> (u64, Vec<u64>) {
    let (count, edges) = frontier
        .par_blocks_mut()
        .map(|mut block| {
            let mut count = 0u64;
            let mut edges = [0u64; 2];
            for local in 0..block.len() {
                let v = block.first() + local;
                if active(v as u64) {
                    block.set(local);
                    count += 1;
                    for (e, o) in edges.iter_mut().zip(offsets) {
                        *e += o[v + 1] - o[v];
                    }
                }
            }
            (count, edges)
        })
        .reduce(|| (0, [0; 2]), add_activity);
    (count, edges[..offsets.len()].to_vec())
}

fn add_activity(a: (u64, [u64; 2]), b: (u64, [u64; 2])) -> (u64, [u64; 2]) {
    (a.0 + b.0, [a.1[0] + b.1[0], a.1[1] + b.1[1]])
}

/// Σ_v of both global contributions of v, in a fixed order of fixed-size pieces (deterministic).
fn global_sums<P: VertexProgram>(program: &P, values: &[P::Value], out_offsets: &[u64]) -> [f64; 2] {
    const PIECE: usize = 1 << 16;
    let partial: Vec<[f64; 2]> = values
        .par_chunks(PIECE)
        .enumerate()
        .map(|(c, vals)| {
            let first = c * PIECE;
            vals.iter()
                .enumerate()
                .map(|(i, value)| {
                    let v = first + i;
                    global_contributions(program, v as u64, value, out_offsets[v + 1] - out_offsets[v])
                })
                .fold([0.0; 2], add_global_sums)
        })
        .collect();
    partial.into_iter().fold([0.0; 2], add_global_sums)
}

/// What the scatter of one buffer needs to see.
struct Scatter<'a, P: VertexProgram> {
    program: &'a P,
    frontier: &'a IndexedBitmap,
    values: &'a [P::Value],
    /// Offsets per layout (csr-out first).
    offsets: &'a [&'a [u64]],
    out_offsets: &'a [u64],
    /// Targets are u64 (|V| >= 2^32) rather than u32.
    wide: bool,
    n: u64,
}

impl<P: VertexProgram> Scatter<'_, P> {
    /// Scatters every active edge of `buffer`: the buffer's edges are cut into one equal
    /// slice per accumulator, and slice `k` always goes to accumulator `k`.
    fn buffer(&self, buffer: &EdgeBuffer, accumulators: &mut [Accumulator<P::Msg>]) {
        let total = buffer.edges();
        let parts = accumulators.len() as u64;
        let mut work: Vec<Vec<(usize, u64, u64)>> = vec![Vec::new(); accumulators.len()];
        let mut start = 0u64; // position of the current piece in the buffer's edge sequence
        for (pi, piece) in buffer.pieces.iter().enumerate() {
            let end = start + piece.edges();
            for (k, items) in work.iter_mut().enumerate() {
                let (lo, hi) = (total * k as u64 / parts, total * (k as u64 + 1) / parts);
                let (a, b) = (lo.max(start), hi.min(end));
                if a < b {
                    items.push((pi, piece.first_edge + (a - start), piece.first_edge + (b - start)));
                }
            }
            start = end;
        }
        let run = |acc: &mut Accumulator<P::Msg>, items: &[(usize, u64, u64)]| {
            for &(pi, first, end) in items {
                if self.wide {
                    self.range::<true>(buffer, pi, first, end, acc);
                } else {
                    self.range::<false>(buffer, pi, first, end, acc);
                }
            }
        };
        if accumulators.len() == 1 {
            run(&mut accumulators[0], &work[0]);
        } else {
            accumulators.par_iter_mut().zip(work.par_iter()).for_each(|(acc, items)| run(acc, items));
        }
    }

    /// Scatters edges `[first, end)` of piece `pi`, skipping inactive sources.
    fn range<const WIDE: bool>(
        &self,
        buffer: &EdgeBuffer,
        pi: usize,
        first: u64,
        end: u64,
        acc: &mut Accumulator<P::Msg>,
    ) {
        let piece = &buffer.pieces[pi];
        let offsets = self.offsets[piece.layout];
        let width = if WIDE { 8 } else { 4 };
        let targets = &buffer.targets[..];
        let weights = buffer.weights.as_deref();
        // The source whose range holds `first`.
        let mut v = offsets.partition_point(|&o| o <= first) - 1;
        let mut e = first;
        loop {
            if !self.frontier.get(v) {
                match self.frontier.next_one(v + 1) {
                    Some(active) if offsets[active] < end => {
                        v = active;
                        e = offsets[active];
                    }
                    _ => return,
                }
            }
            let vend = offsets[v + 1].min(end);
            if e < vend {
                let value = &self.values[v];
                let source_out_degree = self.out_offsets[v + 1] - self.out_offsets[v];
                let decode = |rel: usize| {
                    let at = piece.target_pos + rel * width;
                    if WIDE {
                        u64::from_le_bytes(targets[at..at + 8].try_into().unwrap())
                    } else {
                        u32::from_le_bytes(targets[at..at + 4].try_into().unwrap()) as u64
                    }
                };
                let piece_edges = piece.edges() as usize;
                for edge in e..vend {
                    let rel = (edge - piece.first_edge) as usize;
                    // The accumulator slots are random accesses into an array far larger than
                    // the caches: ask for the slot of a later edge now, so that its miss
                    // overlaps the work on this one.
                    if rel + PREFETCH_DISTANCE < piece_edges {
                        prefetch(acc.msgs.as_ptr().wrapping_add(decode(rel + PREFETCH_DISTANCE) as usize));
                    }
                    let target = decode(rel);
                    let weight = match weights {
                        Some(w) => {
                            let at = piece.weight_pos + rel * 8;
                            f64::from_le_bytes(w[at..at + 8].try_into().unwrap())
                        }
                        None => 1.0,
                    };
                    if target >= self.n {
                        acc.bad_target = Some(target);
                        continue;
                    }
                    let edge_ref = EdgeRef { source: v as u64, target, weight, source_out_degree };
                    if let Some(msg) = self.program.scatter(value, edge_ref) {
                        let slot = &mut acc.msgs[target as usize];
                        *slot = self.program.combine(*slot, msg);
                        acc.received.set(target as usize);
                    }
                }
                acc.edges += vend - e;
            }
            e = vend;
            if e >= end {
                return;
            }
            v += 1;
        }
    }
}

/// Folds the accumulators into the first, applies, and builds the next frontier; returns the
/// next iteration's active vertices and their edges per layout.
fn apply<P: VertexProgram>(
    program: &P,
    ctx: &IterationContext,
    values: &mut [P::Value],
    accumulators: &mut [Accumulator<P::Msg>],
    next: &mut IndexedBitmap,
    offsets: &[&[u64]],
) -> (u64, Vec<u64>) {
    let block = next.block_bits();
    let identity = program.identity();
    let (head, rest) = accumulators.split_at_mut(1);
    let first = &mut head[0];
    for other in rest {
        first
            .msgs
            .par_chunks_mut(block)
            .zip(first.received.par_blocks_mut())
            .zip(other.msgs.par_chunks_mut(block).zip(other.received.par_blocks_mut()))
            .for_each(|((into, mut into_received), (from, mut from_received))| {
                from_received.for_each_one(|l| {
                    into[l] = program.combine(into[l], from[l]);
                    from[l] = identity;
                    into_received.set(l);
                });
                from_received.clear();
            });
    }
    let all = program.applies_to_all();
    let (count, edges) = values
        .par_chunks_mut(block)
        .zip(first.msgs.par_chunks_mut(block))
        .zip(first.received.par_blocks_mut())
        .zip(next.par_blocks_mut())
        .map(|(((vals, msgs), mut received), mut next_block)| {
            let base = next_block.first();
            let len = vals.len();
            let mut count = 0u64;
            let mut edges = [0u64; 2];
            let mut visit = |l: usize| {
                let v = base + l;
                let msg = std::mem::replace(&mut msgs[l], identity);
                if program.apply(v as u64, &mut vals[l], msg, ctx) {
                    next_block.set(l);
                    count += 1;
                    for (e, o) in edges.iter_mut().zip(offsets) {
                        *e += o[v + 1] - o[v];
                    }
                }
            };
            if all {
                (0..len).for_each(&mut visit);
            } else {
                received.for_each_one(&mut visit);
            }
            received.clear();
            (count, edges)
        })
        .reduce(|| (0, [0; 2]), add_activity);
    (count, edges[..offsets.len()].to_vec())
}

/// How much edge data the page cache can hold for us: the smaller of the memory the kernel
/// reports available and, inside a memory cgroup, its limit minus our budget.
pub fn page_cache_estimate(budget: u64) -> u64 {
    let available = meminfo_bytes("MemAvailable:").unwrap_or(u64::MAX);
    let cgroup = cgroup_memory_limit().map_or(u64::MAX, |limit| limit.saturating_sub(budget));
    available.min(cgroup)
}

fn meminfo_bytes(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// The memory limit of this process's cgroup (v1 `memory.limit_in_bytes` or v2 `memory.max`),
/// None when unlimited or unknown.
fn cgroup_memory_limit() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut candidates = Vec::new();
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "memory") {
            candidates.push(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"));
        } else if controllers.is_empty() {
            candidates.push(format!("/sys/fs/cgroup{path}/memory.max"));
        }
    }
    candidates.push("/sys/fs/cgroup/memory/memory.limit_in_bytes".into());
    candidates.iter().find_map(|p| {
        let value: u64 = std::fs::read_to_string(p).ok()?.trim().parse().ok()?;
        (value < 1 << 60).then_some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_plan_fails_with_the_needed_size_and_the_external_engine() {
        let options = StreamOptions::default();
        let err = MemoryPlan::new(10_000_000, 1, 8, 8, 64 << 20, 2, &options).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::MemoryBudget(_)));
        assert!(text.contains("--engine shards"), "{text}");
        assert!(text.contains("raise --memory to at least"), "{text}");
    }

    /// Buffers lend what the resident layout lacks, down to [`LENT_BUFFER_FLOOR`] each, and
    /// never more than that.
    #[test]
    fn read_buffers_lend_their_bytes_down_to_the_floor() {
        let options = StreamOptions::default();
        let budget = 256 << 20;
        let plan = MemoryPlan::new(50_000, 2, 8, 8, budget, 2, &options).unwrap();
        let room = budget - plan.total();
        let mut lent = plan;
        assert!(lend_read_buffers(&mut lent, budget, room));
        assert_eq!(lent, plan, "nothing to lend when the room suffices");
        assert!(lend_read_buffers(&mut lent, budget, room + (5 << 20)));
        assert!(lent.total() + room + (5 << 20) <= budget && lent.buffer_bytes >= LENT_BUFFER_FLOOR, "{lent:?}");
        let short = (plan.buffer_bytes - LENT_BUFFER_FLOOR) * plan.buffers as u64 + 1;
        let mut refused = plan;
        assert!(!lend_read_buffers(&mut refused, budget, room + short));
        assert_eq!(refused, plan);
    }

    #[test]
    fn memory_plan_stays_within_the_budget() {
        let options = StreamOptions::default();
        for budget in [2u64 << 20, 4 << 20, 64 << 20, 1 << 30] {
            let plan = MemoryPlan::new(50_000, 2, 8, 8, budget, 4, &options).unwrap();
            assert!(plan.total() <= budget, "{plan:?} over {budget}");
            assert!(plan.buffer_bytes >= MIN_BUFFER_BYTES && plan.buffer_bytes <= options.max_buffer_bytes);
            assert!(plan.accumulators >= 1 && plan.accumulators <= 4);
        }
        assert_eq!(MemoryPlan::new(50_000, 2, 8, 8, 1 << 30, 4, &options).unwrap().accumulators, 4);
    }
}
