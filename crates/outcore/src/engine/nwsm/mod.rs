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
//! **Memory** (`memory.rs`): [`MemoryPlan`] per rank, [`RunSizing`] for the run.
//!
//! The scatter phase of a rank is in `scatter.rs`; what ranks send each other besides (page
//! requests and replies, update batches under credit flow control) in `exchange.rs`.

mod exchange;
pub mod gather;
mod memory;
pub mod pages;
pub mod partition;
pub mod plan;
pub mod query;
mod scatter;
pub mod window;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use memory::{plan_memory, MemoryPlan, RunSizing};
pub use partition::{BbpFacts, BbpLayout, DEFAULT_PAGE_SIZE};
pub use query::{
    tail_after, AdjacencyMode, CommonNeighbors, Emitter, GatherValue, Min, Nbr, NeighborhoodQuery, NeighborhoodView,
    QueryResult,
};

use self::exchange::{receive_updates, serve_pages, NetworkCounters, RankSink, UpdateCredits};
use self::gather::{GatherStats, GlobalGather};
use self::pages::BufferStats;
use self::scatter::scatter_rank;
use self::window::PageIndex;
use super::{IterationFigures, IterationStats, NwsmQuery, Runner};
use crate::error::{Error, Result};
use crate::runtime::{ProgressBar, ProgressUnit};
use crate::store::csr::check_encoded_ids;
use crate::store::files::{u32s_from_le_bytes, u64s_from_le_bytes};
use crate::store::Store;
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
    /// The query's column in BBP order, for one-level queries that have one, when the budget
    /// holds the copy ([`RunContext::column`]).
    column: Option<Vec<u64>>,
    /// Two-level queries: one list-mark table per rayon thread (see `scatter::scatter_tasks`).
    list_marks: Vec<Mutex<Vec<u8>>>,
}

impl<Q: NeighborhoodQuery> RunContext<'_, Q> {
    /// How views read the query's column by BBP id: the copy in BBP order, or without one the
    /// query's own column through the store ids (one-level queries only).
    fn column(&self) -> Option<ColumnRead<'_>> {
        match (&self.column, &self.store_ids, self.query.column()) {
            (Some(copy), _, _) => Some(ColumnRead::Direct(copy)),
            (None, Some(ids), Some(column)) => Some(ColumnRead::ByStoreId(column, ids)),
            _ => None,
        }
    }
}

/// A one-level query's column as views read it by BBP id.
#[derive(Clone, Copy)]
pub(super) enum ColumnRead<'a> {
    /// The column in engine-id order: the run's copy in BBP order (neighbours' entries lie
    /// together as their lists do), or the query's own where ids are store ids.
    Direct(&'a [u64]),
    /// The query's column in store order, through the store id of each BBP id.
    ByStoreId(&'a [u64], &'a [u32]),
}

impl ColumnRead<'_> {
    pub(super) fn entry(column: Option<Self>, v: VertexId) -> u64 {
        match column.expect("the query has a column (NeighborhoodQuery::column) and one level") {
            ColumnRead::Direct(column) => column[v as usize],
            ColumnRead::ByStoreId(column, ids) => column[ids[v as usize] as usize],
        }
    }
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
    let column_bytes = if k == 1 && query.column().is_some() { 8 * n } else { 0 };
    let wanted = RunSizing::wanted(n, p, k, options.page_size, budget.bytes(), column_bytes)?;
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
    let sizing =
        RunSizing::new(n, (p, local_ranks), k, options.page_size, budget.bytes(), layout.facts(), column_bytes)?;
    let _charges = runner.ledger().charge_parts(&sizing.parts())?;
    let (plan, column_bytes) = (sizing.plan, sizing.column_bytes);
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
    let store_ids = match k {
        1 => Some(u32s_from_le_bytes(&store.file(&format!("{dir}/old-of-new"))?.read_all()?)),
        _ => None,
    };
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
        column: match (&store_ids, query.column().filter(|_| column_bytes > 0)) {
            (Some(ids), Some(column)) => Some(ids.iter().map(|&v| column[v as usize]).collect()),
            _ => None,
        },
        store_ids,
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
        column_copy_bytes: column_bytes,
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
    (stats.network_bytes, stats.network_time) = network.traffic();
    (stats.max_update_bytes_in_flight, stats.update_credit_waits) = credits.figures();

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
    gather.updates_to_other_ranks = network.updates_to_other_ranks();
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
