//! The nwsm engine (`--engine nwsm`): TurboGraph++'s nested windowed streaming for k-walk
//! neighborhood queries — triangle counting, clustering coefficient — in a fixed memory budget
//! (Ko and Han, "TurboGraph++: A Scalable and Fast Graph Analytics System", SIGMOD '18;
//! DESIGN.md "nwsm").
//!
//! **Model** (§2.2, Figure 4). A query (`query.rs`, Figure 6) enumerates walks level by level.
//! Level 1 streams each rank's vertices in *vertex windows* (its `q` BBP ranges) and, inside
//! each, *adjacency windows*: as many consecutive full lists as the level-1 window budget holds,
//! materialised by page-ordered reads (`window.rs`). `adj_scatter(1)` marks the vertices of
//! interest of level 2 in a bitmap (`voi²`, one bit per vertex); level 2 then streams the marked
//! vertices range by range in windows of their own — loaded in two sequential passes, the mark
//! pass and the backward traversal over the pages that hold marked vertices, never by
//! per-vertex random reads — and `adj_scatter(2)` reaches back to the level-1 parents of each
//! (the neighbours inside the level-1 window) and intersects lists. When level 2 reaches its
//! end the level-1 window slides; the query ends when level 1 does.
//!
//! **Storage** (§3, Appendix A.3). The store's BBP layout (`partition.rs`): vertices dealt
//! round-robin by degree to `p` ranks and renumbered, edges in `q × pq` chunks of slotted pages
//! (`pages.rs`) behind a buffer manager (array page table, clock, pinning, resident pages first).
//! `q` is the smallest value Theorem 4.1 allows for the budget; a layout with a smaller `q`
//! is replaced automatically by a finer one (Algorithm 1, lines 1–3).
//!
//! **Gather** (§4.1, `gather.rs`). Updates go to a local gather buffer per scatter task, are
//! combined there and handed to the owner rank's global gather buffer, which keeps its first
//! range in memory and spills the others to disk partitions, gathered range by range before
//! apply with double buffering (Algorithms 2–4).
//!
//! **Ranks** (§4.1). `NwsmOptions::ranks = p` runs p ranks over a `bbp-p-q` layout through the
//! [`Transport`] trait (issue 7): here [`InProcessTransport`], one thread per rank. Each rank
//! streams its own level-1 windows with its own buffer manager (budget / p); pages of other
//! ranks' vertices needed by level 2 are requested from their owner, whose page server thread
//! reads them from its page file and sends them back in batches (remote disk read + network
//! transfer); combined updates for other ranks' vertices are sent to the owner's global gather
//! task. Each rank tells every other when its scatter is done, then gathers, applies and joins
//! an all-reduce of the aggregate.
//!
//! **Overlap** (3-LPO, §4.1): level-2 computation runs on all rayon threads; page serving and
//! the global gather run on their own threads beside the scatter; spilled ranges are gathered
//! by a loader thread while apply runs; the pages of a rank's next level-1 window (those not
//! resident, up to the plan's read-ahead) are read by a reader thread while the current window
//! and its nested level-2 windows are computed. Each run reports the time each resource was
//! busy (disk reads — buffer-manager misses plus read-ahead —, scatter computation, network,
//! gathering and spilling, apply), summed over ranks and threads, so a busy time may exceed
//! the wall time when ranks run side by side.
//!
//! **One-level queries** (k = 1: pr, wcc, sssp): level 1 only, no vertex of interest; they
//! read per-vertex state in store-id order through [`NeighborhoodView::store_id`] (the plan
//! keeps the store ids resident, 4 B per vertex), and algorithms iterate them as rounds.
//!
//! **Memory** ([`MemoryPlan`] per rank, [`RunSizing`] for the run: the planner's parts and the
//! run's ledger charges): degrees (4 B) and the output column (8 B) per vertex stay whole
//! (every rank writes its outputs straight into the one column), and so do the ranks' page
//! indexes (12 B per page); W ranks in one process share the one budget, each planning
//! (budget − resident) / W. Per rank, 1/8 is page memory (frames; a quarter of it reads ahead);
//! next what is in flight between ranks (W > 1): the page reply it waits for and the one its server fills (a request asks for at most
//! a quarter of the frames), an update credit window (a rank may have at most that many update
//! bytes unacknowledged, split evenly over the destinations, so none receives more either;
//! charged twice, sent and received) and the output shares of a distributed run (in rounds);
//! then Theorem 4.1 gives q; the global gather buffer (two ranges, for double buffering), the
//! local gather buffers (2·|VA|/(pq) per level, 16 B per update held), the vertex-of-interest
//! bitmap and the spill write buffers come next; what remains is the adjacency windows, 40 %
//! for level 1 and 60 % for level 2 (§4.2 gives most memory to the windows; level 2 here holds
//! the lists of marked vertices, so it gets the larger share). Each run reports the largest
//! update bytes in flight and page reply seen, to be checked against the plan.

pub mod gather;
pub mod pages;
pub mod partition;
pub mod plan;
pub mod query;
pub mod window;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

pub use partition::{BbpFacts, BbpLayout, DEFAULT_PAGE_SIZE};
pub use query::{
    tail_after, AdjacencyMode, CommonNeighbors, Emitter, GatherValue, Min, Nbr, NeighborhoodQuery, NeighborhoodView,
    QueryResult,
};

use self::gather::{
    encode_updates, GatherStats, GlobalGather, LocalGather, UpdateSink, SPILL_BUFFER_BYTES, SPILL_RECORD_BYTES,
};
use self::pages::{read_record, slots, BufferManager, BufferStats};
use self::window::{materialize, pages_of, take_window, AdjWindow, PageIndex, PageSource, Prefetched};
use super::stream::IndexedBitmap;
use super::{IterationFigures, IterationStats, NwsmQuery, Runner};
use crate::error::{Error, Result};
use crate::runtime::{format_size, MemoryPart, ProgressBar, ProgressUnit};
use crate::store::csr::check_encoded_ids;
use crate::store::files::{u32s_from_le_bytes, u64s_from_le_bytes};
use crate::store::{Store, StoreFile};
use crate::transport::{InProcessTransport, ReduceOp, Tag, Transport};
use crate::VertexId;

/// Options of the nwsm engine.
#[derive(Debug, Clone, PartialEq)]
pub struct NwsmOptions {
    /// Bytes per slotted page (`--page-size`, default 64 KiB as in the paper).
    pub page_size: u64,
    /// Ranks p (in-process, one thread each).
    pub ranks: usize,
}

impl Default for NwsmOptions {
    fn default() -> Self {
        NwsmOptions { page_size: DEFAULT_PAGE_SIZE, ranks: 1 }
    }
}

/// How one rank's share of the budget is spent. Every buffer a rank holds for longer than a
/// few records is here: page frames, adjacency windows, gather buffers, the vertex-of-interest
/// bitmap, spill write buffers and, with more than one rank, what is in flight between ranks
/// (page replies, update batches under credit flow control, output shares).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct MemoryPlan {
    pub q: usize,
    /// Bytes of the whole budget kept for per-vertex columns (degree and output).
    pub resident_bytes: u64,
    /// Each rank's share: (budget − resident) / p.
    pub per_rank_bytes: u64,
    pub frames: usize,
    /// Pages of the next level-1 window read ahead while the current one is computed.
    pub prefetch_pages: usize,
    pub window1_bytes: u64,
    pub window2_bytes: u64,
    /// Updates each local gather buffer of a level holds (all of a level's buffers together).
    pub local_gather_records: usize,
    pub global_gather_bytes: u64,
    pub voi_bytes: u64,
    pub spill_buffer_bytes: u64,
    /// Pages asked of another rank at once; a rank waits for each reply before asking again.
    pub remote_batch_pages: usize,
    /// Page replies: the one this rank waits for and the one its page server is filling.
    pub page_reply_bytes: u64,
    /// Credit window: update bytes this rank may have sent and not yet seen acknowledged, split
    /// evenly over the other ranks, so that no rank receives more than this much either.
    pub update_window_bytes: u64,
    /// Update bytes charged for the window: sent by this rank plus received from others.
    pub update_flight_bytes: u64,
    /// Vertices each rank shares per round of a distributed run's output exchange.
    pub output_share_vertices: u64,
    /// Output shares of a distributed run (vertices per round × 12 B, all ranks, ×3 copies).
    pub output_share_bytes: u64,
    /// Vertices applied at once (their store ids are read in chunks of this many).
    pub apply_chunk_vertices: usize,
}

impl MemoryPlan {
    /// Bytes one rank's buffers may hold at once (all parts of the plan added).
    pub fn charged_per_rank(&self, page_size: u64, k: usize) -> u64 {
        (self.frames + self.prefetch_pages) as u64 * page_size
            + self.window1_bytes
            + self.window2_bytes
            + k as u64 * self.local_gather_records as u64 * gather::LOCAL_RECORD_BYTES
            + self.global_gather_bytes
            + self.voi_bytes
            + (self.q as u64 - 1) * self.spill_buffer_bytes
            + self.page_reply_bytes
            + self.update_flight_bytes
            + self.output_share_bytes
            + self.apply_chunk_vertices as u64 * 4
    }
}

/// The plan for `n` vertices, `p` ranks and a `k`-level query.
pub fn plan_memory(n: u64, p: usize, k: usize, page_size: u64, budget: u64, q_at_least: usize) -> Result<MemoryPlan> {
    // One-level queries also keep the store id of every vertex (4 B): they read state by it.
    // Two-level queries keep a list-mark table of 1 B per vertex per thread (`ListMarks`).
    let store_id_bytes = if k == 1 { 4 } else { 0 };
    let mark_bytes = if k >= 2 { rayon::current_num_threads() as u64 } else { 0 };
    let resident_bytes = n * (partition::RESIDENT_BYTES_PER_VERTEX + store_id_bytes + mark_bytes);
    let per_rank = budget.saturating_sub(resident_bytes) / p as u64;
    let frames_bytes = (per_rank / 8).max(4 * page_size);
    // A quarter of the page memory reads the next level-1 window ahead (none below 5 pages).
    let pages = (frames_bytes / page_size) as usize;
    let prefetch_pages = (pages / 4).min(pages.saturating_sub(4));
    let frames = pages - prefetch_pages;
    let room = per_rank.saturating_sub(frames_bytes);
    // In flight between ranks (none with one rank): a quarter of the frames per page reply, an
    // update credit window of 1/32 of the room (at least 16 updates per other rank, at most
    // 4 MiB) and output shares of 1/64; apply reads store ids in chunks of 1/64 too.
    let remote_batch_pages = (frames / 4).max(1);
    let record = gather::SPILL_RECORD_BYTES as u64;
    let apply_chunk_vertices = (room / 64 / 4).clamp(64, 4096) as usize;
    let output_share_vertices = (room / 64 / (3 * p as u64 * record)).clamp(16, 8192);
    let (page_reply_bytes, update_window_bytes, output_share_bytes) = if p > 1 {
        (
            2 * remote_batch_pages as u64 * page_size,
            (room / 32).clamp(16 * record * (p as u64 - 1), 4 << 20),
            3 * p as u64 * output_share_vertices * record,
        )
    } else {
        (0, 0, 0)
    };
    let update_flight_bytes = 2 * update_window_bytes;
    let in_flight = page_reply_bytes + update_flight_bytes + output_share_bytes + apply_chunk_vertices as u64 * 4;
    let room = room.saturating_sub(in_flight);
    let q = partition::q_min(n, p, k, page_size, room)?.max(q_at_least);
    let range = n.div_ceil((p * q) as u64) + 1;
    let global_gather_bytes = 2 * range * partition::ATTRIBUTE_BYTES;
    let local_gather_records = (2 * range * partition::ATTRIBUTE_BYTES / gather::LOCAL_RECORD_BYTES) as usize;
    let local_gather_bytes = k as u64 * local_gather_records as u64 * gather::LOCAL_RECORD_BYTES;
    let voi_bytes = n.div_ceil(8) + n.div_ceil(4096) / 8;
    let spill_buffer_bytes = (room / 16 / q as u64).clamp(4 << 10, SPILL_BUFFER_BYTES as u64);
    let spill_bytes = (q as u64 - 1) * spill_buffer_bytes;
    let windows = room.checked_sub(global_gather_bytes + local_gather_bytes + voi_bytes + spill_bytes).unwrap_or(0);
    if windows < 4 * page_size {
        return Err(Error::MemoryBudget(format!(
            "the nwsm engine has {} left for adjacency windows out of {} (|V| = {n}, p = {p}, q = {q}); \
             give it more memory",
            format_size(windows),
            format_size(budget)
        )));
    }
    Ok(MemoryPlan {
        q,
        resident_bytes,
        per_rank_bytes: per_rank,
        frames,
        prefetch_pages,
        window1_bytes: windows * 2 / 5,
        window2_bytes: windows * 3 / 5,
        local_gather_records,
        global_gather_bytes,
        voi_bytes,
        spill_buffer_bytes,
        remote_batch_pages,
        page_reply_bytes,
        update_window_bytes,
        update_flight_bytes,
        output_share_vertices,
        output_share_bytes,
        apply_chunk_vertices,
    })
}

/// A run's memory by part: each rank's buffers ([`MemoryPlan`], for the q of the layout it
/// reads), the columns kept whole, and the page indexes of all ranks (12 B per page). The one
/// sum behind the planner's parts and the run's ledger charges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSizing {
    pub plan: MemoryPlan,
    pub index_bytes: u64,
    /// Bytes of all the ranks this process runs (W in-process ranks, or this one rank of a
    /// distributed run).
    pub ranks_bytes: u64,
}

impl RunSizing {
    /// The sizing of a `k`-level query over `layout` (its q and pages), `local_ranks` of the
    /// `p` ranks in this process.
    pub fn new(
        n: u64,
        (p, local_ranks): (usize, usize),
        k: usize,
        page_size: u64,
        budget: u64,
        layout: BbpFacts,
    ) -> Result<RunSizing> {
        let (index_bytes, q) = (layout.pages * 12, layout.q);
        let plan = plan_memory(n, p, k, page_size, budget.saturating_sub(index_bytes), q)?;
        let ranks_bytes = plan.charged_per_rank(page_size, k) * local_ranks as u64;
        Ok(RunSizing { plan, index_bytes, ranks_bytes })
    }

    pub fn parts(&self) -> [MemoryPart; 3] {
        [
            MemoryPart::new("resident columns", self.plan.resident_bytes),
            MemoryPart::new("page indexes", self.index_bytes),
            MemoryPart::new("ranks' pages, windows, gathers", self.ranks_bytes),
        ]
    }
}

/// Figures of one rank's scatter phase.
#[derive(Debug, Clone, Copy, Default)]
struct RankStats {
    level1_windows: u64,
    level2_windows: u64,
    marked: u64,
    adjacency_entries_loaded: u64,
    remote_pages: u64,
    pages_served: u64,
    network_bytes: u64,
    network_time: Duration,
    aggregate: u64,
    scatter_time: Duration,
    buffers: BufferStats,
    /// Most update bytes this rank had sent and not yet seen acknowledged.
    max_update_bytes_in_flight: u64,
    /// Largest page reply this rank received.
    max_page_reply_bytes: u64,
    update_credit_waits: u64,
    /// Pages of this rank read ahead by the reader thread, and the time it was reading.
    prefetched_pages: u64,
    prefetch_time: Duration,
}

impl RankStats {
    fn add(&mut self, o: &RankStats) {
        self.level1_windows += o.level1_windows;
        self.level2_windows += o.level2_windows;
        self.marked += o.marked;
        self.adjacency_entries_loaded += o.adjacency_entries_loaded;
        self.remote_pages += o.remote_pages;
        self.pages_served += o.pages_served;
        self.network_bytes += o.network_bytes;
        self.network_time += o.network_time;
        self.scatter_time += o.scatter_time;
        self.buffers.hits += o.buffers.hits;
        self.buffers.misses += o.buffers.misses;
        self.buffers.evictions += o.buffers.evictions;
        self.buffers.bytes_read += o.buffers.bytes_read;
        self.buffers.read_time += o.buffers.read_time;
        self.max_update_bytes_in_flight = self.max_update_bytes_in_flight.max(o.max_update_bytes_in_flight);
        self.max_page_reply_bytes = self.max_page_reply_bytes.max(o.max_page_reply_bytes);
        self.update_credit_waits += o.update_credit_waits;
        self.prefetched_pages += o.prefetched_pages;
        self.prefetch_time += o.prefetch_time;
    }
}

/// Message tags of the nwsm engine: page requests (an empty one: "this rank is done"), page
/// replies, and update batches for the owner's global gather buffer (empty: "done").
const TAG_PAGE_REQUEST: Tag = 8100;
const TAG_PAGE_REPLY: Tag = 8101;
const TAG_UPDATES: Tag = 8102;
/// Acknowledgement of an update batch (its byte count): returns that much credit to the sender.
const TAG_UPDATE_ACK: Tag = 8103;

/// What every rank of a run reads.
struct RunContext<'a, Q: NeighborhoodQuery> {
    runner: &'a Runner,
    store: &'a Store,
    query: &'a Q,
    layout: &'a BbpLayout,
    plan: MemoryPlan,
    degree: Vec<u32>,
    indexes: Vec<PageIndex>,
    spill_dir: PathBuf,
    bar: &'a dyn ProgressBar,
    /// The output column (store-id order, the bits of `Q::Output`): every rank writes its own
    /// vertices' outputs here; it is the 8 B per vertex the plan keeps resident.
    output: &'a [AtomicU64],
    /// Store id of every BBP id, for one-level queries ([`NeighborhoodView::store_id`]).
    store_ids: Option<Vec<u32>>,
    /// Two-level queries: one list-mark table per rayon thread (see [`scatter_level2`]).
    list_marks: Vec<Mutex<Vec<u8>>>,
}

/// What one rank hands back: figures (its outputs are in the shared output column).
struct RankOutput {
    stats: RankStats,
    gather: GatherStats,
    aggregate: u64,
    apply_time: Duration,
}

/// Runs a neighborhood query with nested windowed streaming; outputs in store-id order.
pub fn run_query<Q: NeighborhoodQuery>(runner: &Runner, query: &Q) -> Result<QueryResult<Q::Output>> {
    let started = Instant::now();
    // A fresh view of the manifest: layouts built by earlier runs on this store are listed.
    let fresh = Store::open_with(runner.store().dir(), runner.store().counters().clone())?;
    let store = &fresh;
    let options = &runner.options().nwsm;
    let k = query.levels();
    if !(1..=2).contains(&k) {
        return Err(Error::invalid(format!("the nwsm engine runs queries of 1 or 2 levels, not {k}")));
    }
    if query.mode() == AdjacencyMode::Partial && k != 1 {
        return Err(Error::invalid("partial adjacency lists serve one-level queries only"));
    }
    query::check_vertex_count(store)?;
    let n = store.num_vertices();
    if n == 0 {
        return Ok(QueryResult { values: Vec::new(), aggregate: 0 });
    }
    let transport = runner.transport();
    let p = transport.map_or(options.ranks.max(1), |t| t.ranks());
    let budget = runner.memory();
    let existing_q = BbpLayout::find(store, p, 1, options.page_size).map(|l| l.q);
    let wanted = plan_memory(n, p, k, options.page_size, budget.bytes(), 1)?;
    let io_before = runner.io_snapshot();
    let ensure = || {
        let (progress, cancel) = (runner.progress(), runner.cancel_token());
        partition::ensure_layout(store, p, wanted.q, options.page_size, budget, progress, cancel)
    };
    let layout = match transport {
        None => ensure()?,
        // Under a distributed run rank 0 partitions the shared store; the others wait for it.
        Some(t) => {
            let built = if t.rank() == 0 { Some(ensure()) } else { None };
            let failed = built.as_ref().is_some_and(|b| b.is_err()) as u64;
            if t.all_reduce_u64(failed, ReduceOp::Max)? != 0 {
                let remote = Error::Remote { rank: Some(0), message: "rank 0 could not partition the store".into() };
                return Err(built.map_or(remote, |b| b.unwrap_err()));
            }
            match built {
                Some(layout) => layout?,
                None => {
                    let reopened = Store::open(store.dir())?;
                    BbpLayout::find(&reopened, p, wanted.q, options.page_size)
                        .ok_or_else(|| Error::store(store.dir(), "rank 0 built no BBP layout"))?
                }
            }
        }
    };
    // Held for the whole run: a finer layout built meanwhile does not remove this one.
    let _in_use = partition::LayoutLock::shared(store, &layout.name)?;
    // The manifest as it is now, under the lock: the layout is still listed, and one built (or
    // rebuilt under the same name) just now is read with its files' checksums.
    let fresh = Store::open_with(runner.store().dir(), runner.store().counters().clone())?;
    let store = &fresh;
    if !BbpLayout::all(store).iter().any(|l| l.name == layout.name) {
        return Err(Error::store(
            store.dir(),
            format!("{} was removed while this run started; run again", layout.name),
        ));
    }
    let partition_seconds = started.elapsed().as_secs_f64();
    let repartitioned = existing_q.is_some_and(|q| q != layout.q);
    // The page indexes of all ranks stay whole (12 B per page); the rest of the budget is planned.
    let local_ranks = if transport.is_some() { 1 } else { p };
    let sizing = RunSizing::new(n, (p, local_ranks), k, options.page_size, budget.bytes(), layout.facts())?;
    let _charges = runner.ledger().charge_parts(&sizing.parts())?;
    let plan = sizing.plan;
    let partition_io = runner.io_snapshot().since(&io_before);

    let dir = &layout.name;
    let mut indexes = Vec::with_capacity(p);
    for r in 0..p {
        let sources = u32s_from_le_bytes(&store.file(&format!("{dir}/rank-{r}/page-sources"))?.read_all()?);
        indexes.push(PageIndex {
            page_sources: sources.chunks_exact(2).map(|s| (s[0], s[1])).collect(),
            chunks: u64s_from_le_bytes(&store.file(&format!("{dir}/rank-{r}/chunks"))?.read_all()?),
            chunk_pages: u32s_from_le_bytes(&store.file(&format!("{dir}/rank-{r}/chunk-pages"))?.read_all()?),
        });
    }
    let bar = runner.progress().start("nwsm scatter", Some(n), ProgressUnit::Vertices);
    let initial = Q::Output::default().to_bits();
    let output: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(initial)).collect();
    let context = RunContext {
        runner,
        store,
        query,
        layout: &layout,
        plan,
        degree: u32s_from_le_bytes(&store.file(&format!("{dir}/degree"))?.read_all()?),
        indexes,
        spill_dir: store.temp_dir()?,
        bar: &*bar,
        output: &output,
        store_ids: match k {
            1 => Some(u32s_from_le_bytes(&store.file(&format!("{dir}/old-of-new"))?.read_all()?)),
            _ => None,
        },
        list_marks: match k {
            1 => Vec::new(),
            _ => (0..rayon::current_num_threads()).map(|_| Mutex::new(vec![0; n as usize])).collect(),
        },
    };
    let scatter_started = Instant::now();
    let outputs = match transport {
        None => InProcessTransport::run(p, |transport| run_rank(&context, transport))?,
        Some(t) => vec![share_over_ranks(run_rank(&context, t.as_ref())?, &context, t.as_ref())?],
    };
    bar.finish();
    let run_seconds = scatter_started.elapsed().as_secs_f64();

    // In place: AtomicU64 and Q::Output have the same size, so no second column is allocated.
    let values: Vec<Q::Output> = output.into_iter().map(|bits| Q::Output::from_bits(bits.into_inner())).collect();
    let (mut stats, mut gather, mut apply_time) = (RankStats::default(), GatherStats::default(), Duration::ZERO);
    let aggregate = outputs.first().map_or(0, |o| o.aggregate);
    for out in outputs {
        stats.add(&out.stats);
        gather.updates_sent += out.gather.updates_sent;
        gather.updates_to_other_ranks += out.gather.updates_to_other_ranks;
        gather.updates_gathered_in_memory += out.gather.updates_gathered_in_memory;
        gather.updates_spilled += out.gather.updates_spilled;
        gather.spill_bytes_written += out.gather.spill_bytes_written;
        gather.spill_bytes_read += out.gather.spill_bytes_read;
        gather.gather_time += out.gather.gather_time;
        apply_time += out.apply_time;
    }

    let figures = NwsmQuery {
        layout: layout.name.clone(),
        ranks: p as u64,
        q: layout.q as u64,
        page_size: layout.page_size,
        repartitioned,
        partition_seconds,
        partition_bytes_read: partition_io.bytes_read,
        partition_bytes_written: partition_io.bytes_written,
        memory_plan: plan,
        sum_degree_squared: layout.sum_degree_squared,
        level1_window_slides: stats.level1_windows,
        level2_window_slides: stats.level2_windows,
        window_slides: stats.level1_windows + stats.level2_windows,
        vertices_of_interest_marked: stats.marked,
        adjacency_entries_loaded: stats.adjacency_entries_loaded,
        page_hits: stats.buffers.hits,
        page_misses: stats.buffers.misses,
        page_evictions: stats.buffers.evictions,
        page_bytes_read: stats.buffers.bytes_read,
        remote_pages: stats.remote_pages,
        pages_served: stats.pages_served,
        network_bytes_sent: stats.network_bytes,
        max_update_bytes_in_flight: stats.max_update_bytes_in_flight,
        max_page_reply_bytes: stats.max_page_reply_bytes,
        update_credit_waits: stats.update_credit_waits,
        memory_charged_bytes: plan.resident_bytes + p as u64 * plan.charged_per_rank(layout.page_size, k),
        gather,
        prefetched_pages: stats.prefetched_pages,
        busy_prefetch_read_seconds: stats.prefetch_time.as_secs_f64(),
        busy_disk_read_seconds: (stats.buffers.read_time + stats.prefetch_time).as_secs_f64(),
        busy_compute_seconds: stats.scatter_time.as_secs_f64(),
        busy_network_seconds: stats.network_time.as_secs_f64(),
        busy_apply_seconds: apply_time.as_secs_f64(),
        scatter_gather_apply_seconds: run_seconds,
        aggregate: aggregate as u64,
    };
    runner.record_figures(|run| run.nwsm = Some(figures.clone()));
    let io = runner.io_snapshot().since(&io_before);
    runner.record_iteration(IterationStats {
        iteration: runner.iterations_recorded(),
        active_vertices: n,
        edges_processed: stats.adjacency_entries_loaded,
        bytes_read: io.bytes_read,
        bytes_written: io.bytes_written,
        seconds: started.elapsed().as_secs_f64(),
        delivery: None,
        figures: IterationFigures::Nwsm(figures),
    });
    Ok(QueryResult { values, aggregate })
}

/// Byte and time counters of a rank's transport use, shared by its threads.
#[derive(Default)]
struct NetworkCounters {
    bytes: AtomicU64,
    nanos: AtomicU64,
    updates_to_other_ranks: AtomicU64,
}

impl NetworkCounters {
    fn record(&self, bytes: usize, since: Instant) {
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.nanos.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// Hands combined updates to this rank's global gather buffer or sends them to their owner.
struct RankSink<'a, Q: NeighborhoodQuery> {
    rank: usize,
    transport: &'a dyn Transport,
    global: &'a Mutex<GlobalGather<Q::Value>>,
    query: &'a Q,
    network: &'a NetworkCounters,
    credits: &'a UpdateCredits,
}

impl<Q: NeighborhoodQuery> UpdateSink<Q::Value> for RankSink<'_, Q> {
    fn deliver(&self, rank: usize, batch: &[(u32, Q::Value)]) -> Result<()> {
        if rank == self.rank {
            let mut global = self.global.lock().unwrap();
            global.stats.updates_sent += batch.len() as u64;
            return global.gather(self.query, batch);
        }
        for part in batch.chunks(self.credits.records_per_batch()) {
            let len = part.len() * SPILL_RECORD_BYTES;
            self.credits.acquire(self.transport, rank, len as u64)?;
            let t = Instant::now();
            self.transport.send(rank, TAG_UPDATES, encode_updates(part))?;
            self.network.updates_to_other_ranks.fetch_add(part.len() as u64, Ordering::Relaxed);
            self.network.record(len, t);
        }
        Ok(())
    }
}

/// Credit-based flow control of the update batches a rank sends (§4.1's transfer of local
/// gather buffers to their owners, bounded): toward each other rank at most `per_destination`
/// bytes may be unacknowledged; the owner acknowledges a batch once it is gathered. So a rank
/// never has more than the plan's `update_window_bytes` in flight, nor receives more.
struct UpdateCredits {
    per_destination: u64,
    state: Mutex<CreditState>,
}

struct CreditState {
    outstanding: Vec<u64>,
    in_flight: u64,
    max_in_flight: u64,
    /// Sends that had to wait for an acknowledgement first.
    waits: u64,
}

impl UpdateCredits {
    fn new(window_bytes: u64, ranks: usize) -> UpdateCredits {
        let share = window_bytes / ranks.saturating_sub(1).max(1) as u64;
        let per_destination = (share / SPILL_RECORD_BYTES as u64).max(1) * SPILL_RECORD_BYTES as u64;
        UpdateCredits {
            per_destination,
            state: Mutex::new(CreditState { outstanding: vec![0; ranks], in_flight: 0, max_in_flight: 0, waits: 0 }),
        }
    }

    fn records_per_batch(&self) -> usize {
        (self.per_destination / SPILL_RECORD_BYTES as u64) as usize
    }

    /// Takes `bytes` of credit toward `to`, taking acknowledgements while its window is full.
    /// (Other senders of this rank wait meanwhile: they would wait for credit anyway.)
    fn acquire(&self, transport: &dyn Transport, to: usize, bytes: u64) -> Result<()> {
        let mut state = self.state.lock().unwrap();
        if state.outstanding[to] > 0 && state.outstanding[to] + bytes > self.per_destination {
            state.waits += 1;
        }
        while state.outstanding[to] > 0 && state.outstanding[to] + bytes > self.per_destination {
            Self::take_ack(&mut state, transport)?;
        }
        state.outstanding[to] += bytes;
        state.in_flight += bytes;
        state.max_in_flight = state.max_in_flight.max(state.in_flight);
        Ok(())
    }

    /// Waits until every batch sent has been acknowledged (before telling the others "done").
    fn drain(&self, transport: &dyn Transport) -> Result<()> {
        let mut state = self.state.lock().unwrap();
        while state.in_flight > 0 {
            Self::take_ack(&mut state, transport)?;
        }
        Ok(())
    }

    fn take_ack(state: &mut CreditState, transport: &dyn Transport) -> Result<()> {
        let ack = transport.recv(TAG_UPDATE_ACK)?;
        let bytes = ack.payload.get(..8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
        match bytes {
            Some(bytes) if bytes <= state.outstanding[ack.from] => {
                state.outstanding[ack.from] -= bytes;
                state.in_flight -= bytes;
                Ok(())
            }
            _ => {
                Err(Error::Remote { rank: Some(ack.from), message: "an update acknowledgement out of protocol".into() })
            }
        }
    }
}

/// One rank: a page server and an update receiver beside the scatter of its own windows, then
/// gather of the spilled ranges and apply over its vertices.
fn run_rank<Q: NeighborhoodQuery>(ctx: &RunContext<'_, Q>, transport: &dyn Transport) -> Result<RankOutput> {
    let (rank, p, layout, query) = (transport.rank(), transport.ranks(), ctx.layout, ctx.query);
    if p != layout.p {
        return Err(Error::invalid(format!("{} has {} ranks but the job has {p}", layout.name, layout.p)));
    }
    let local = ctx.store.file(&format!("{}/rank-{rank}/pages", layout.name))?;
    let bounds = layout.chunk_bounds[rank * layout.q..=(rank + 1) * layout.q].to_vec();
    let global = Mutex::new(GlobalGather::new(
        bounds,
        ctx.spill_dir.clone(),
        &format!("rank-{rank}"),
        ctx.store.counters().clone(),
        ctx.plan.spill_buffer_bytes as usize,
    ));
    let network = NetworkCounters::default();
    let credits = UpdateCredits::new(ctx.plan.update_window_bytes, p);
    let sink = RankSink { rank, transport, global: &global, query, network: &network, credits: &credits };
    let (scattered, served) = std::thread::scope(|scope| {
        let server =
            scope.spawn(|| serve_pages(transport, &local, ctx.plan.remote_batch_pages, layout.page_size, p, &network));
        let receiver = scope.spawn(|| receive_updates(transport, &global, query, p));
        let scattered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            scatter_rank(ctx, rank, transport, &local, &sink, &network)
        }))
        .unwrap_or_else(|_| {
            Err(Error::Remote { rank: Some(rank), message: "the scatter of this rank panicked".into() })
        });
        // Every batch sent is gathered (acknowledged) before this rank says it is done.
        let scattered = scattered.and_then(|s| credits.drain(transport).map(|_| s));
        // Every rank hears "done" from this one, even after a failure, so that services end.
        let mut ended = Ok(());
        for to in 0..p {
            ended = ended.and(transport.send(to, TAG_PAGE_REQUEST, Vec::new()));
            ended = ended.and(transport.send(to, TAG_UPDATES, Vec::new()));
        }
        let served = server.join().expect("the page server does not panic");
        let received = receiver.join().expect("the update receiver does not panic");
        (scattered.and_then(|s| ended.and(received).map(|_| s)), served)
    });
    let mut stats = scattered?;
    stats.pages_served = served?;
    stats.network_bytes = network.bytes.load(Ordering::Relaxed);
    stats.network_time = Duration::from_nanos(network.nanos.load(Ordering::Relaxed));
    let credit_state = credits.state.lock().unwrap();
    (stats.max_update_bytes_in_flight, stats.update_credit_waits) = (credit_state.max_in_flight, credit_state.waits);
    drop(credit_state);

    // Gather the spilled ranges and apply (Algorithms 3 and 4).
    let old_of_new = ctx.store.file(&format!("{}/old-of-new", layout.name))?;
    let mut apply_time = Duration::ZERO;
    let global = global.into_inner().unwrap();
    let chunk = ctx.plan.apply_chunk_vertices;
    let mut ids = Vec::with_capacity(chunk * 4);
    let mut gather = global.apply_ranges(query, |first, gathered| {
        let t = Instant::now();
        for (c, values) in gathered.chunks(chunk).enumerate() {
            let start = first as usize + c * chunk;
            ids.resize(values.len() * 4, 0);
            old_of_new.read_exact_at(&mut ids, start as u64 * 4)?;
            check_encoded_ids(old_of_new.path(), &ids, 4, ctx.output.len() as u64)?;
            for (k, old) in ids.chunks_exact(4).enumerate() {
                let old = u32::from_le_bytes(old.try_into().unwrap()) as usize;
                let output = query.vertex_apply(old as VertexId, ctx.degree[start + k] as u64, values[k]);
                ctx.output[old].store(output.to_bits(), Ordering::Relaxed);
            }
        }
        apply_time += t.elapsed();
        ctx.runner.cancel_token().check()
    })?;
    gather.updates_to_other_ranks = network.updates_to_other_ranks.load(Ordering::Relaxed);
    let aggregate = transport.all_reduce_u64(stats.aggregate, ReduceOp::Sum)?;
    Ok(RankOutput { stats, gather, aggregate, apply_time })
}

/// Under a distributed run: every rank gets all ranks' outputs, in rounds of at most
/// the plan's `output_share_vertices` per rank (what the plan charges), and the sums of their figures.
fn share_over_ranks<Q: NeighborhoodQuery>(
    mut out: RankOutput,
    ctx: &RunContext<'_, Q>,
    t: &dyn Transport,
) -> Result<RankOutput> {
    let starts = &ctx.layout.rank_starts;
    let (lo, hi) = (starts[t.rank()], starts[t.rank() + 1]);
    let largest = (0..t.ranks()).map(|r| starts[r + 1] - starts[r]).max().unwrap_or(0);
    let old_of_new = ctx.store.file(&format!("{}/old-of-new", ctx.layout.name))?;
    let mut ids = Vec::new();
    let per_round = ctx.plan.output_share_vertices;
    for round in 0..largest.div_ceil(per_round) {
        let a = (lo + round * per_round).min(hi);
        let b = (a + per_round).min(hi);
        ids.resize((b - a) as usize * 4, 0);
        old_of_new.read_exact_at(&mut ids, a * 4)?;
        check_encoded_ids(old_of_new.path(), &ids, 4, ctx.output.len() as u64)?;
        let mut bytes = Vec::with_capacity((b - a) as usize * 12);
        for old in ids.chunks_exact(4) {
            bytes.extend_from_slice(old);
            let old = u32::from_le_bytes(old.try_into().unwrap()) as usize;
            bytes.extend_from_slice(&ctx.output[old].load(Ordering::Relaxed).to_le_bytes());
        }
        for part in t.all_gather(bytes)? {
            for record in part.chunks_exact(12) {
                let old = u32::from_le_bytes(record[..4].try_into().unwrap()) as usize;
                let bits = u64::from_le_bytes(record[4..].try_into().unwrap());
                let slot = ctx.output.get(old).ok_or_else(|| Error::Remote {
                    rank: None,
                    message: format!("an output for vertex {old}, beyond the graph"),
                })?;
                slot.store(bits, Ordering::Relaxed);
            }
        }
    }
    let (s, g) = (&mut out.stats, &mut out.gather);
    let nanos = |d: Duration| d.as_nanos() as u64;
    let summed = t.all_reduce_u64s(
        &[
            s.level1_windows,
            s.level2_windows,
            s.marked,
            s.adjacency_entries_loaded,
            s.remote_pages,
            s.pages_served,
            s.network_bytes,
            s.buffers.hits,
            s.buffers.misses,
            s.buffers.evictions,
            s.buffers.bytes_read,
            g.updates_sent,
            g.updates_to_other_ranks,
            g.updates_gathered_in_memory,
            g.updates_spilled,
            g.spill_bytes_written,
            g.spill_bytes_read,
            nanos(s.network_time),
            nanos(s.scatter_time),
            nanos(s.buffers.read_time),
            nanos(g.gather_time),
            nanos(out.apply_time),
        ],
        ReduceOp::Sum,
    )?;
    [
        &mut s.level1_windows,
        &mut s.level2_windows,
        &mut s.marked,
        &mut s.adjacency_entries_loaded,
        &mut s.remote_pages,
        &mut s.pages_served,
        &mut s.network_bytes,
        &mut s.buffers.hits,
        &mut s.buffers.misses,
        &mut s.buffers.evictions,
        &mut s.buffers.bytes_read,
        &mut g.updates_sent,
        &mut g.updates_to_other_ranks,
        &mut g.updates_gathered_in_memory,
        &mut g.updates_spilled,
        &mut g.spill_bytes_written,
        &mut g.spill_bytes_read,
    ]
    .into_iter()
    .zip(&summed)
    .for_each(|(field, &sum)| *field = sum);
    s.network_time = Duration::from_nanos(summed[17]);
    s.scatter_time = Duration::from_nanos(summed[18]);
    s.buffers.read_time = Duration::from_nanos(summed[19]);
    g.gather_time = Duration::from_nanos(summed[20]);
    out.apply_time = Duration::from_nanos(summed[21]);
    let maxima = t.all_reduce_u64s(&[s.max_update_bytes_in_flight, s.max_page_reply_bytes], ReduceOp::Max)?;
    s.max_update_bytes_in_flight = maxima[0];
    s.max_page_reply_bytes = maxima[1];
    let more =
        t.all_reduce_u64s(&[s.update_credit_waits, s.prefetched_pages, nanos(s.prefetch_time)], ReduceOp::Sum)?;
    (s.update_credit_waits, s.prefetched_pages) = (more[0], more[1]);
    s.prefetch_time = Duration::from_nanos(more[2]);
    Ok(out)
}

/// Answers other ranks' page requests from this rank's page file until every rank is done.
fn serve_pages(
    transport: &dyn Transport,
    local: &StoreFile,
    batch_pages: usize,
    page_size: u64,
    ranks: usize,
    network: &NetworkCounters,
) -> Result<u64> {
    let (mut done, mut served) = (0, 0u64);
    while done < ranks {
        let request = transport.recv(TAG_PAGE_REQUEST)?;
        if request.payload.is_empty() {
            done += 1;
            continue;
        }
        let pages = u32s_from_le_bytes(&request.payload);
        if pages.len() > batch_pages {
            return Err(Error::Remote {
                rank: Some(request.from),
                message: format!("a request for {} pages, more than the {batch_pages} the plan allows", pages.len()),
            });
        }
        let mut bytes = vec![0u8; pages.len() * page_size as usize];
        for (k, &page) in pages.iter().enumerate() {
            let frame = &mut bytes[k * page_size as usize..(k + 1) * page_size as usize];
            local.read_exact_at(frame, page as u64 * page_size)?;
        }
        served += pages.len() as u64;
        let t = Instant::now();
        let len = bytes.len();
        transport.send(request.from, TAG_PAGE_REPLY, bytes)?;
        network.record(len, t);
    }
    Ok(served)
}

/// The global gather task (Algorithm 2): updates from other ranks into this rank's buffer.
fn receive_updates<Q: NeighborhoodQuery>(
    transport: &dyn Transport,
    global: &Mutex<GlobalGather<Q::Value>>,
    query: &Q,
    ranks: usize,
) -> Result<()> {
    let mut done = 0;
    while done < ranks {
        let message = transport.recv(TAG_UPDATES)?;
        if message.payload.is_empty() {
            done += 1;
            continue;
        }
        let (len, message_from) = (message.payload.len(), message.from);
        {
            let mut global = global.lock().unwrap();
            global.stats.updates_sent += (len / SPILL_RECORD_BYTES) as u64;
            global.gather_encoded(query, &message.payload)?;
        }
        drop(message);
        transport.send(message_from, TAG_UPDATE_ACK, (len as u64).to_le_bytes().to_vec())?;
    }
    Ok(())
}

/// One rank's scatter phase: its level-1 windows and, nested in each, the level-2 windows.
fn scatter_rank<Q: NeighborhoodQuery>(
    ctx: &RunContext<'_, Q>,
    rank: usize,
    transport: &dyn Transport,
    local: &StoreFile,
    sink: &RankSink<'_, Q>,
    network: &NetworkCounters,
) -> Result<RankStats> {
    let RunContext { runner, query, layout, plan, degree, indexes, bar, .. } = ctx;
    let query = *query;
    let n = degree.len();
    let q = layout.q;
    let mut stats = RankStats::default();
    let mut buffers = BufferManager::new(layout.page_size, plan.frames, &layout.pages_per_rank)?;
    // One request at a time: the reply is the only page batch in flight toward this rank.
    let largest_reply = std::cell::Cell::new(0u64);
    let fetch = |owner: usize, pages: &[u32]| -> Result<Vec<u8>> {
        let t = Instant::now();
        let request: Vec<u8> = pages.iter().flat_map(|p| p.to_le_bytes()).collect();
        let len = request.len();
        transport.send(owner, TAG_PAGE_REQUEST, request)?;
        let reply = transport.recv(TAG_PAGE_REPLY)?;
        network.record(len, t);
        largest_reply.set(largest_reply.get().max(reply.payload.len() as u64));
        Ok(reply.payload)
    };
    let source = PageSource { rank, local, fetch: &fetch, batch_pages: plan.remote_batch_pages };
    let mut voi = if query.levels() >= 2 { Some(IndexedBitmap::new(n, 4096)) } else { None };
    let mut lgb = LocalGather::new(plan.local_gather_records, &layout.rank_starts, sink);
    for i in 0..q {
        let g = rank * q + i;
        let range = layout.chunk_range(g);
        if query.mode() == AdjacencyMode::Partial {
            scatter_partial(ctx, rank, i, local, &mut buffers, &mut lgb, &mut stats)?;
            bar.inc(range.end - range.start);
            continue;
        }
        let mut candidates = range.clone().filter(|&v| degree[v as usize] > 0);
        let mut pending = None;
        let mut next = take_window(&mut candidates, &mut pending, degree, plan.window1_bytes)?;
        let mut prefetched = Prefetched::default();
        while !next.is_empty() {
            runner.cancel_token().check()?;
            let (w1, _) = materialize(&mut buffers, indexes, &source, layout, degree, g, next, &prefetched)?;
            drop(std::mem::take(&mut prefetched)); // freed before the next read-ahead
            stats.level1_windows += 1;
            stats.adjacency_entries_loaded += w1.entries() as u64;
            // 3-LPO: a reader thread reads the next window's pages (those not resident, up to
            // the plan's read-ahead) while this window is computed.
            next = take_window(&mut candidates, &mut pending, degree, plan.window1_bytes)?;
            let mut ahead = pages_of(indexes, layout, g, &next);
            ahead.retain(|&page| !buffers.is_resident(rank, page));
            ahead.truncate(plan.prefetch_pages);
            let (computed, read) = std::thread::scope(|scope| {
                let reader = scope.spawn(|| {
                    let t = Instant::now();
                    Prefetched::read(local, layout.page_size, ahead).map(|p| (p, t.elapsed()))
                });
                let computed =
                    compute_window(ctx, sink, &w1, &mut buffers, &source, &mut lgb, voi.as_mut(), &mut stats);
                (computed, reader.join().expect("the page reader does not panic"))
            });
            computed?;
            let (pages, time) = read?;
            stats.prefetched_pages += pages.pages.len() as u64;
            stats.prefetch_time += time;
            prefetched = pages;
            bar.inc(w1.ids.len() as u64);
        }
    }
    lgb.flush(query)?;
    stats.buffers = buffers.stats();
    stats.max_page_reply_bytes = largest_reply.get();
    Ok(stats)
}

/// Level 1 of a level-1 window and, nested in it, the level-2 windows of the vertices it marks.
#[allow(clippy::too_many_arguments)]
fn compute_window<Q: NeighborhoodQuery>(
    ctx: &RunContext<'_, Q>,
    sink: &RankSink<'_, Q>,
    w1: &AdjWindow,
    buffers: &mut BufferManager,
    source: &PageSource<'_>,
    lgb: &mut LocalGather<'_, Q::Value>,
    voi: Option<&mut IndexedBitmap>,
    stats: &mut RankStats,
) -> Result<()> {
    let RunContext { query, layout, plan, degree, indexes, .. } = ctx;
    let query = *query;
    let t = Instant::now();
    let mut emitter = RankEmitter { query, lgb, voi, aggregate: 0, error: None };
    let view = WindowView { w1, w2: None, store_ids: ctx.store_ids.as_deref(), level2: None };
    for (k, &u) in w1.ids.iter().enumerate() {
        query.adj_scatter(1, &view, &mut emitter, u as VertexId, w1.list_at(k));
    }
    stats.aggregate += emitter.aggregate;
    if let Some(e) = emitter.error.take() {
        return Err(e);
    }
    stats.scatter_time += t.elapsed();
    let Some(voi) = emitter.voi else {
        return Ok(());
    };
    stats.marked += voi.count_ones();
    let threads = rayon::current_num_threads().max(1);
    for g2 in 0..layout.p * layout.q {
        let range2 = layout.chunk_range(g2);
        let mut cursor = range2.start as usize;
        let end = range2.end as usize;
        let mut marked = std::iter::from_fn(|| {
            let v = voi.next_one(cursor).filter(|&v| v < end)?;
            cursor = v + 1;
            Some(v as VertexId)
        });
        let mut pending2 = None;
        loop {
            let ids2 = take_window(&mut marked, &mut pending2, degree, plan.window2_bytes)?;
            if ids2.is_empty() {
                break;
            }
            let none = Prefetched::default();
            let (w2, remote) = materialize(buffers, indexes, source, layout, degree, g2, ids2, &none)?;
            stats.remote_pages += remote;
            stats.level2_windows += 1;
            stats.adjacency_entries_loaded += w2.entries() as u64;
            let t = Instant::now();
            stats.aggregate += scatter_level2(ctx, sink, w1, &w2, threads)?;
            stats.scatter_time += t.elapsed();
        }
    }
    voi.clear();
    Ok(())
}

/// Level 2 of one pair of windows, split over the rayon threads, each with its own local
/// gather buffer; returns the aggregate added.
fn scatter_level2<Q: NeighborhoodQuery>(
    ctx: &RunContext<'_, Q>,
    sink: &RankSink<'_, Q>,
    w1: &AdjWindow,
    w2: &AdjWindow,
    threads: usize,
) -> Result<u64> {
    let query = ctx.query;
    let capacity = ctx.plan.local_gather_records / threads;
    let view = WindowView { w1, w2: Some(w2), store_ids: None, level2: None };
    let bounds = balanced_tasks(w2, &view, threads * 8);
    let aggregate = AtomicU64::new(0);
    bounds.par_windows(2).try_for_each(|task| -> Result<()> {
        let mut lgb = LocalGather::new(capacity, &ctx.layout.rank_starts, sink);
        let mut emitter = RankEmitter { query, lgb: &mut lgb, voi: None, aggregate: 0, error: None };
        // A rayon thread runs one task at a time, so its table is free; `None` (no table) falls
        // back to merging.
        let mut marks = rayon::current_thread_index().and_then(|i| ctx.list_marks.get(i)?.try_lock().ok());
        for k in task[0]..task[1] {
            let (v, list) = (w2.ids[k] as VertexId, w2.list_at(k));
            match marks.as_deref_mut() {
                Some(table) if view.parent_list(1, v).len() >= 2 => {
                    list.iter().for_each(|e| table[e.id() as usize] = (e.0 & 3) as u8);
                    let view = WindowView { level2: Some((v, &table[..])), ..view };
                    query.adj_scatter(2, &view, &mut emitter, v, list);
                    list.iter().for_each(|e| table[e.id() as usize] = 0);
                }
                _ => query.adj_scatter(2, &view, &mut emitter, v, list),
            }
            if emitter.error.is_some() {
                break;
            }
        }
        aggregate.fetch_add(emitter.aggregate, Ordering::Relaxed);
        if let Some(e) = emitter.error.take() {
            return Err(e);
        }
        lgb.flush(query)
    })?;
    Ok(aggregate.into_inner())
}

/// Cuts the level-2 window into about `tasks` runs of consecutive vertices of equal estimated
/// work (a vertex's parents plus its list: with ids in ascending degree the hubs come last, so
/// equal counts of vertices left one thread with most of the work); returns the run bounds.
fn balanced_tasks(w2: &AdjWindow, view: &WindowView<'_>, tasks: usize) -> Vec<usize> {
    let work: Vec<u64> = (0..w2.ids.len())
        .map(|k| 1 + w2.list_at(k).len() as u64 + view.parent_list(1, w2.ids[k] as VertexId).len() as u64)
        .collect();
    let total: u64 = work.iter().sum();
    let share = total.div_ceil(tasks.max(1) as u64).max(1);
    let mut bounds = vec![0];
    let mut acc = 0;
    for (k, w) in work.iter().enumerate() {
        acc += w;
        if acc >= share && k + 1 < work.len() {
            bounds.push(k + 1);
            acc = 0;
        }
    }
    bounds.push(work.len());
    bounds
}

/// Partial-list mode (k = 1): each page record goes to `adj_scatter(1)` as it is, chunk by
/// chunk of source range `i`, resident pages first.
fn scatter_partial<Q: NeighborhoodQuery>(
    ctx: &RunContext<'_, Q>,
    rank: usize,
    i: usize,
    local: &StoreFile,
    buffers: &mut BufferManager,
    lgb: &mut LocalGather<'_, Q::Value>,
    stats: &mut RankStats,
) -> Result<()> {
    let (layout, index, query) = (ctx.layout, &ctx.indexes[rank], ctx.query);
    let mut pages: Vec<u32> = (0..layout.p * layout.q)
        .flat_map(|j| {
            let c = j * layout.q + i;
            index.chunk_pages[index.chunks[c] as usize..index.chunks[c + 1] as usize].iter().copied()
        })
        .collect();
    pages.sort_by_key(|&page| (!buffers.is_resident(rank, page), page));
    let mut record = Vec::new();
    let t = Instant::now();
    for page in pages {
        let frame = buffers.pin(rank, page, local)?;
        let mut emitter = RankEmitter { query, lgb: &mut *lgb, voi: None, aggregate: 0, error: None };
        for slot in slots(buffers.page(frame)) {
            record.resize(slot.len as usize, Nbr(0));
            read_record(buffers.page(frame), &slot, &mut record);
            let view = PartialView { store_ids: ctx.store_ids.as_deref() };
            query.adj_scatter(1, &view, &mut emitter, slot.source as VertexId, &record);
            stats.adjacency_entries_loaded += slot.len as u64;
        }
        buffers.unpin(frame);
        stats.aggregate += emitter.aggregate;
        if let Some(e) = emitter.error.take() {
            return Err(e);
        }
        stats.level1_windows += 1;
    }
    stats.scatter_time += t.elapsed();
    Ok(())
}

struct PartialView<'a> {
    store_ids: Option<&'a [u32]>,
}

/// The store id of `v` from the one-level query's column.
fn store_id_of(store_ids: Option<&[u32]>, v: VertexId) -> VertexId {
    store_ids.expect("store ids are available to one-level queries")[v as usize] as VertexId
}

impl NeighborhoodView for PartialView<'_> {
    fn store_id(&self, v: VertexId) -> VertexId {
        store_id_of(self.store_ids, v)
    }
    fn adjacency(&self, _: VertexId) -> &[Nbr] {
        panic!("adjacency lists are not available in partial-list mode")
    }
    fn parent_list(&self, _: usize, _: VertexId) -> &[Nbr] {
        &[]
    }
}

/// The current level-1 window and, at level 2, the current level-2 window.
#[derive(Clone, Copy)]
struct WindowView<'a> {
    w1: &'a AdjWindow,
    w2: Option<&'a AdjWindow>,
    store_ids: Option<&'a [u32]>,
    /// At level 2: the vertex being scattered and its list marked by id (direction bits; 0 = not
    /// a neighbour), so that intersecting a parent's list with it is one lookup per entry.
    level2: Option<(VertexId, &'a [u8])>,
}

impl NeighborhoodView for WindowView<'_> {
    fn store_id(&self, v: VertexId) -> VertexId {
        store_id_of(self.store_ids, v)
    }
    fn adjacency(&self, v: VertexId) -> &[Nbr] {
        self.w2
            .and_then(|w| w.list(v))
            .or_else(|| self.w1.list(v))
            .unwrap_or_else(|| panic!("vertex {v} is in no current window: a query may only ask for loaded lists"))
    }
    fn parent_list(&self, level: usize, v: VertexId) -> &[Nbr] {
        if level != 1 || self.w2.is_none() {
            return &[];
        }
        let list = self.adjacency(v);
        let a = list.partition_point(|e| e.id() < self.w1.lo);
        let b = list.partition_point(|e| e.id() < self.w1.hi);
        &list[a..b]
    }
    fn common_neighbors_after(&self, u: VertexId, v: VertexId, after: VertexId) -> CommonNeighbors<'_> {
        let a = tail_after(self.adjacency(u), after);
        match self.level2 {
            Some((marked, marks)) if v == marked => CommonNeighbors::marked_second(a, marks),
            _ => CommonNeighbors::new(a, tail_after(self.adjacency(v), after)),
        }
    }
}

struct RankEmitter<'a, 'g, Q: NeighborhoodQuery> {
    query: &'a Q,
    lgb: &'a mut LocalGather<'g, Q::Value>,
    voi: Option<&'a mut IndexedBitmap>,
    aggregate: u64,
    error: Option<Error>,
}

impl<Q: NeighborhoodQuery> Emitter<Q::Value> for RankEmitter<'_, '_, Q> {
    fn mark(&mut self, level: usize, v: VertexId) {
        debug_assert_eq!(level, 2, "only level 2 has vertices of interest");
        if let Some(voi) = self.voi.as_mut() {
            voi.set(v as usize);
        }
    }
    fn update(&mut self, target: VertexId, value: Q::Value) {
        if self.error.is_none() {
            if let Err(e) = self.lgb.push(self.query, target, value) {
                self.error = Some(e);
            }
        }
    }
    fn aggregate(&mut self, amount: u64) {
        self.aggregate += amount;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_charges_every_buffer_within_the_budget() {
        for (n, budget) in [(2048u64, 160u64 << 10), (1 << 20, 256 << 20), (50_000, 4 << 20)] {
            for p in [1, 2, 4] {
                for k in [1, 2] {
                    let page_size = match budget {
                        b if b < 1 << 20 => 512,
                        b if b < 64 << 20 => 4096,
                        _ => 64 << 10,
                    };
                    let plan = plan_memory(n, p, k, page_size, budget, 1).unwrap();
                    let charged = plan.resident_bytes + p as u64 * plan.charged_per_rank(page_size, k);
                    assert!(charged <= budget, "n={n} p={p} k={k}: {charged} of {budget}");
                    assert_eq!(plan.page_reply_bytes > 0, p > 1);
                    assert_eq!(plan.update_window_bytes > 0, p > 1);
                    if p > 1 {
                        assert!(plan.page_reply_bytes >= 2 * plan.remote_batch_pages as u64 * page_size);
                        assert!(plan.update_window_bytes >= 16 * 12 * (p as u64 - 1));
                    }
                }
            }
        }
    }
}
