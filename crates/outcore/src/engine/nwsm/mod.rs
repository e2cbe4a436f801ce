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
//! **Ranks.** `NwsmOptions::ranks = p` runs p ranks in this process, one thread each, over a
//! `bbp-p-q` layout: each rank streams its own level-1 windows with its own buffer manager
//! (budget / p) and reads the pages of other ranks' vertices for level 2 from their page files
//! (counted as remote page reads); updates to other ranks' vertices go to their global gather
//! buffers. The MPI transport of issue 7 is not used yet: remote pages are read from the shared
//! store, not shipped by their owner.
//!
//! **Overlap** (3-LPO, §4.1): level-2 computation runs on all rayon threads; spilled ranges are
//! gathered by a loader thread while apply runs. Disk reads of adjacency windows are not yet
//! overlapped with computation. Each run reports the time each resource was busy (disk reads,
//! scatter computation, gathering and spilling, apply).
//!
//! **Memory** ([`MemoryPlan`]): degrees (4 B) and the output column (8 B) per vertex stay whole;
//! per rank, 1/8 of the rest is page frames, then Theorem 4.1 gives q; the global gather buffer
//! (two ranges, for double buffering), the local gather buffers (2·|VA|/(pq) per level), the
//! vertex-of-interest bitmap and the spill write buffers come next; what remains is the
//! adjacency windows, 40 % for level 1 and 60 % for level 2 (§4.2 gives most memory to the
//! windows; level 2 here holds the lists of marked vertices, so it gets the larger share).

pub mod gather;
pub mod pages;
pub mod partition;
pub mod query;
pub mod window;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde_json::json;

pub use partition::{BbpLayout, DEFAULT_PAGE_SIZE};
pub use query::{
    AdjacencyMode, CommonNeighbors, Emitter, GatherValue, Nbr, NeighborhoodQuery, NeighborhoodView, QueryResult,
};

use self::gather::{GatherStats, GlobalGather, LocalGather, SPILL_BUFFER_BYTES};
use self::pages::{read_record, slots, BufferManager, BufferStats};
use self::window::{materialize, take_window, AdjWindow, PageFile};
use super::stream::IndexedBitmap;
use super::{IterationStats, Runner};
use crate::error::{Error, Result};
use crate::runtime::{format_size, ProgressUnit};
use crate::store::files::{u32s_from_le_bytes, u64s_from_le_bytes};
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

/// How one rank's share of the budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MemoryPlan {
    pub q: usize,
    pub frames: usize,
    pub window1_bytes: u64,
    pub window2_bytes: u64,
    pub local_gather_records: usize,
    pub global_gather_bytes: u64,
    pub spill_buffer_bytes: u64,
}

/// The plan for `n` vertices, `p` ranks and a `k`-level query.
pub fn plan_memory(n: u64, p: usize, k: usize, page_size: u64, budget: u64, q_at_least: usize) -> Result<MemoryPlan> {
    let resident = n * partition::RESIDENT_BYTES_PER_VERTEX;
    let per_rank = budget.saturating_sub(resident) / p as u64;
    let frames_bytes = (per_rank / 8).max(4 * page_size);
    let room = per_rank.saturating_sub(frames_bytes);
    let q = partition::q_min(n, p, k, page_size, room)?.max(q_at_least);
    let range = n.div_ceil((p * q) as u64) + 1;
    let global_gather_bytes = 2 * range * partition::ATTRIBUTE_BYTES;
    let local_gather_bytes = k as u64 * 2 * range * partition::ATTRIBUTE_BYTES;
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
        frames: (frames_bytes / page_size) as usize,
        window1_bytes: windows * 2 / 5,
        window2_bytes: windows * 3 / 5,
        local_gather_records: (local_gather_bytes / k as u64 / 12) as usize,
        global_gather_bytes,
        spill_buffer_bytes,
    })
}

/// Figures of one rank's scatter phase.
#[derive(Debug, Clone, Copy, Default)]
struct RankStats {
    level1_windows: u64,
    level2_windows: u64,
    marked: u64,
    adjacency_entries_loaded: u64,
    remote_page_reads: u64,
    scatter_time: Duration,
    buffers: BufferStats,
}

impl RankStats {
    fn add(&mut self, o: &RankStats) {
        self.level1_windows += o.level1_windows;
        self.level2_windows += o.level2_windows;
        self.marked += o.marked;
        self.adjacency_entries_loaded += o.adjacency_entries_loaded;
        self.remote_page_reads += o.remote_page_reads;
        self.scatter_time += o.scatter_time;
        self.buffers.hits += o.buffers.hits;
        self.buffers.misses += o.buffers.misses;
        self.buffers.evictions += o.buffers.evictions;
        self.buffers.bytes_read += o.buffers.bytes_read;
        self.buffers.read_time += o.buffers.read_time;
    }
}

/// What every rank of a run shares.
struct Shared<'a, Q: NeighborhoodQuery> {
    runner: &'a Runner,
    query: &'a Q,
    layout: &'a BbpLayout,
    plan: MemoryPlan,
    degree: Vec<u32>,
    files: Vec<PageFile>,
    globals: Vec<Mutex<GlobalGather<Q::Value>>>,
    aggregate: AtomicU64,
    vertices_done: AtomicU64,
}

/// Runs a neighborhood query with nested windowed streaming; outputs in store-id order.
pub fn run_query<Q: NeighborhoodQuery>(runner: &Runner, query: &Q) -> Result<QueryResult<Q::Output>> {
    let started = Instant::now();
    // A fresh view of the manifest: layouts built by earlier runs on this store are listed.
    let fresh = crate::store::Store::open_with(runner.store().dir(), runner.store().counters().clone())?;
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
    let p = options.ranks.max(1);
    let budget = runner.options().memory;
    let existing_q = BbpLayout::find(store, p, 1, options.page_size).map_or(1, |l| l.q);
    let wanted = plan_memory(n, p, k, options.page_size, budget.bytes(), 1)?;
    let io_before = runner.io_snapshot();
    let layout = partition::ensure_layout(
        store,
        p,
        wanted.q,
        options.page_size,
        budget,
        runner.progress(),
        runner.cancel_token(),
    )?;
    let partition_seconds = started.elapsed().as_secs_f64();
    let repartitioned = layout.q != existing_q || BbpLayout::find(store, p, 1, options.page_size).is_none();
    let plan = plan_memory(n, p, k, options.page_size, budget.bytes(), layout.q)?;
    let partition_io = runner.io_snapshot().since(&io_before);

    let dir = &layout.name;
    let degree: Vec<u32> = u32s_from_le_bytes(&store.file(&format!("{dir}/degree"))?.read_all()?);
    let mut files = Vec::with_capacity(p);
    for r in 0..p {
        let sources = u32s_from_le_bytes(&store.file(&format!("{dir}/rank-{r}/page-sources"))?.read_all()?);
        files.push(PageFile {
            pages: store.file(&format!("{dir}/rank-{r}/pages"))?,
            page_sources: sources.chunks_exact(2).map(|s| (s[0], s[1])).collect(),
            chunks: u64s_from_le_bytes(&store.file(&format!("{dir}/rank-{r}/chunks"))?.read_all()?),
            chunk_pages: u32s_from_le_bytes(&store.file(&format!("{dir}/rank-{r}/chunk-pages"))?.read_all()?),
        });
    }
    let spill_dir = store.temp_dir()?;
    let globals = (0..p)
        .map(|r| {
            let bounds = layout.chunk_bounds[r * layout.q..=(r + 1) * layout.q].to_vec();
            let tag = format!("rank-{r}");
            let buffer = plan.spill_buffer_bytes as usize;
            Mutex::new(GlobalGather::new(bounds, spill_dir.clone(), &tag, store.counters().clone(), buffer))
        })
        .collect();
    let shared = Shared {
        runner,
        query,
        layout: &layout,
        plan,
        degree,
        files,
        globals,
        aggregate: AtomicU64::new(0),
        vertices_done: AtomicU64::new(0),
    };

    // Scatter: every rank streams its own level-1 windows.
    let bar = runner.progress().start("nwsm scatter", Some(n), ProgressUnit::Vertices);
    let scatter_started = Instant::now();
    let rank_results: Vec<Result<RankStats>> = if p == 1 {
        vec![scatter_rank(&shared, 0, &*bar)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..p)
                .map(|r| {
                    scope.spawn({
                        let (shared, bar) = (&shared, &*bar);
                        move || scatter_rank(shared, r, bar)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a rank thread panicked")).collect()
        })
    };
    bar.finish();
    let mut stats = RankStats::default();
    for result in rank_results {
        stats.add(&result?);
    }
    let scatter_seconds = scatter_started.elapsed().as_secs_f64();

    // Gather the spilled ranges and apply, rank by rank.
    let apply_started = Instant::now();
    let Shared { globals, degree, aggregate, .. } = shared;
    let mut values = vec![Q::Output::default(); n as usize];
    let mut gather = GatherStats::default();
    let old_of_new = store.file(&format!("{dir}/old-of-new"))?;
    let mut apply_time = Duration::ZERO;
    for global in globals {
        let global = global.into_inner().unwrap();
        let s = global.apply_ranges(query, |first, gathered| {
            let t = Instant::now();
            let mut bytes = vec![0u8; gathered.len() * 4];
            old_of_new.read_exact_at(&mut bytes, first * 4)?;
            for (k, old) in u32s_from_le_bytes(&bytes).into_iter().enumerate() {
                let new = first as usize + k;
                values[old as usize] = query.vertex_apply(old as VertexId, degree[new] as u64, gathered[k]);
            }
            apply_time += t.elapsed();
            runner.cancel_token().check()
        })?;
        gather.updates_sent += s.updates_sent;
        gather.updates_to_other_ranks += s.updates_to_other_ranks;
        gather.updates_gathered_in_memory += s.updates_gathered_in_memory;
        gather.updates_spilled += s.updates_spilled;
        gather.spill_bytes_written += s.spill_bytes_written;
        gather.spill_bytes_read += s.spill_bytes_read;
        gather.gather_time += s.gather_time;
    }
    let apply_seconds = apply_started.elapsed().as_secs_f64();
    let aggregate = aggregate.into_inner();

    let mut extra = serde_json::Map::new();
    let mut put = |key: &str, value: serde_json::Value| {
        extra.insert(key.to_string(), value.clone());
        runner.record_extra(&format!("nwsm_{key}"), value);
    };
    put("layout", layout.name.clone().into());
    put("ranks", p.into());
    put("q", layout.q.into());
    put("page_size", layout.page_size.into());
    put("repartitioned", repartitioned.into());
    put("partition_seconds", json!(partition_seconds));
    put("partition_bytes_read", partition_io.bytes_read.into());
    put("partition_bytes_written", partition_io.bytes_written.into());
    put("memory_plan", serde_json::to_value(plan).unwrap());
    put("sum_degree_squared", layout.sum_degree_squared.into());
    put("level1_window_slides", stats.level1_windows.into());
    put("level2_window_slides", stats.level2_windows.into());
    put("window_slides", (stats.level1_windows + stats.level2_windows).into());
    put("vertices_of_interest_marked", stats.marked.into());
    put("adjacency_entries_loaded", stats.adjacency_entries_loaded.into());
    put("page_hits", stats.buffers.hits.into());
    put("page_misses", stats.buffers.misses.into());
    put("page_evictions", stats.buffers.evictions.into());
    put("page_bytes_read", stats.buffers.bytes_read.into());
    put("remote_page_reads", stats.remote_page_reads.into());
    put("updates_sent", gather.updates_sent.into());
    put("updates_to_other_ranks", gather.updates_to_other_ranks.into());
    put("updates_gathered_in_memory", gather.updates_gathered_in_memory.into());
    put("updates_spilled", gather.updates_spilled.into());
    put("spill_bytes_written", gather.spill_bytes_written.into());
    put("spill_bytes_read", gather.spill_bytes_read.into());
    put("busy_disk_read_seconds", json!(stats.buffers.read_time.as_secs_f64()));
    put("busy_compute_seconds", json!(stats.scatter_time.as_secs_f64()));
    put("busy_gather_seconds", json!(gather.gather_time.as_secs_f64()));
    put("busy_apply_seconds", json!(apply_time.as_secs_f64()));
    put("busy_network_seconds", json!(0.0));
    put("scatter_seconds", json!(scatter_seconds));
    put("apply_seconds", json!(apply_seconds));
    put("aggregate", aggregate.into());
    let io = runner.io_snapshot().since(&io_before);
    runner.record_iteration(IterationStats {
        iteration: 0,
        active_vertices: n,
        edges_processed: stats.adjacency_entries_loaded,
        bytes_read: io.bytes_read,
        bytes_written: io.bytes_written,
        seconds: started.elapsed().as_secs_f64(),
        extra,
    });
    Ok(QueryResult { values, aggregate })
}

/// One rank's scatter phase: its level-1 windows and, nested in each, the level-2 windows.
fn scatter_rank<Q: NeighborhoodQuery>(
    shared: &Shared<'_, Q>,
    rank: usize,
    bar: &dyn crate::runtime::ProgressBar,
) -> Result<RankStats> {
    let Shared { runner, query, layout, plan, degree, files, globals, .. } = shared;
    let query = *query;
    let n = degree.len();
    let q = layout.q;
    let mut stats = RankStats::default();
    let mut buffers = BufferManager::new(layout.page_size, plan.frames, &layout.pages_per_rank);
    let mut voi = if query.levels() >= 2 { Some(IndexedBitmap::new(n, 4096)) } else { None };
    let mut lgb = LocalGather::new(plan.local_gather_records, &layout.rank_starts, globals, rank);
    let threads = rayon::current_num_threads().max(1);
    for i in 0..q {
        let g = rank * q + i;
        let range = layout.chunk_range(g);
        if query.mode() == AdjacencyMode::Partial {
            scatter_partial(shared, rank, i, &mut buffers, &mut lgb, &mut stats)?;
            bar.inc(range.end - range.start);
            continue;
        }
        let mut candidates = range.clone().filter(|&v| degree[v as usize] > 0);
        let mut pending = None;
        loop {
            runner.cancel_token().check()?;
            let ids = take_window(&mut candidates, &mut pending, degree, plan.window1_bytes)?;
            if ids.is_empty() {
                break;
            }
            let w1 = materialize(&mut buffers, files, layout, degree, g, ids)?;
            stats.level1_windows += 1;
            stats.adjacency_entries_loaded += w1.entries() as u64;
            let t = Instant::now();
            let mut emitter = RankEmitter { query, lgb: &mut lgb, voi: voi.as_mut(), aggregate: 0, error: None };
            let view = WindowView { w1: &w1, w2: None };
            for (k, &u) in w1.ids.iter().enumerate() {
                query.adj_scatter(1, &view, &mut emitter, u as VertexId, w1.list_at(k));
            }
            let (aggregate, error) = (emitter.aggregate, emitter.error.take());
            shared.aggregate.fetch_add(aggregate, Ordering::Relaxed);
            if let Some(e) = error {
                return Err(e);
            }
            stats.scatter_time += t.elapsed();
            if let Some(voi) = voi.as_mut() {
                stats.marked += voi.count_ones();
                for g2 in 0..layout.p * q {
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
                        let misses_before = buffers.stats.misses;
                        let w2 = materialize(&mut buffers, files, layout, degree, g2, ids2)?;
                        if g2 / q != rank {
                            stats.remote_page_reads += buffers.stats.misses - misses_before;
                        }
                        stats.level2_windows += 1;
                        stats.adjacency_entries_loaded += w2.entries() as u64;
                        let t = Instant::now();
                        scatter_level2(shared, rank, &w1, &w2, threads)?;
                        stats.scatter_time += t.elapsed();
                    }
                }
                voi.clear();
            }
            bar.inc(w1.ids.len() as u64);
            shared.vertices_done.fetch_add(w1.ids.len() as u64, Ordering::Relaxed);
        }
    }
    lgb.flush(query)?;
    stats.buffers = buffers.stats;
    Ok(stats)
}

/// Level 2 of one pair of windows, split over the rayon threads, each with its own local
/// gather buffer.
fn scatter_level2<Q: NeighborhoodQuery>(
    shared: &Shared<'_, Q>,
    rank: usize,
    w1: &AdjWindow,
    w2: &AdjWindow,
    threads: usize,
) -> Result<()> {
    let query = shared.query;
    let tasks = (threads * 4).min(w2.ids.len()).max(1);
    let per_task = w2.ids.len().div_ceil(tasks);
    let capacity = shared.plan.local_gather_records / threads;
    let view = WindowView { w1, w2: Some(w2) };
    (0..tasks).into_par_iter().try_for_each(|t| -> Result<()> {
        let mut lgb = LocalGather::new(capacity, &shared.layout.rank_starts, &shared.globals, rank);
        let mut emitter = RankEmitter { query, lgb: &mut lgb, voi: None, aggregate: 0, error: None };
        let end = ((t + 1) * per_task).min(w2.ids.len());
        for k in t * per_task..end {
            query.adj_scatter(2, &view, &mut emitter, w2.ids[k] as VertexId, w2.list_at(k));
            if emitter.error.is_some() {
                break;
            }
        }
        shared.aggregate.fetch_add(emitter.aggregate, Ordering::Relaxed);
        if let Some(e) = emitter.error.take() {
            return Err(e);
        }
        lgb.flush(query)
    })
}

/// Partial-list mode (k = 1): each page record goes to `adj_scatter(1)` as it is, chunk by
/// chunk of source range `i`, resident pages first.
fn scatter_partial<Q: NeighborhoodQuery>(
    shared: &Shared<'_, Q>,
    rank: usize,
    i: usize,
    buffers: &mut BufferManager,
    lgb: &mut LocalGather<'_, Q::Value>,
    stats: &mut RankStats,
) -> Result<()> {
    let (layout, file, query) = (shared.layout, &shared.files[rank], shared.query);
    let mut pages: Vec<u32> = (0..layout.p * layout.q)
        .flat_map(|j| {
            let c = j * layout.q + i;
            file.chunk_pages[file.chunks[c] as usize..file.chunks[c + 1] as usize].iter().copied()
        })
        .collect();
    pages.sort_by_key(|&page| (!buffers.is_resident(rank, page), page));
    let mut record = Vec::new();
    let t = Instant::now();
    for page in pages {
        let frame = buffers.pin(rank, page, &file.pages)?;
        let mut emitter = RankEmitter { query, lgb: &mut *lgb, voi: None, aggregate: 0, error: None };
        for slot in slots(buffers.page(frame)) {
            record.resize(slot.len as usize, Nbr(0));
            read_record(buffers.page(frame), &slot, &mut record);
            query.adj_scatter(1, &PartialView, &mut emitter, slot.source as VertexId, &record);
            stats.adjacency_entries_loaded += slot.len as u64;
        }
        buffers.unpin(frame);
        shared.aggregate.fetch_add(emitter.aggregate, Ordering::Relaxed);
        if let Some(e) = emitter.error.take() {
            return Err(e);
        }
        stats.level1_windows += 1;
    }
    stats.scatter_time += t.elapsed();
    Ok(())
}

struct PartialView;

impl NeighborhoodView for PartialView {
    fn adjacency(&self, _: VertexId) -> &[Nbr] {
        panic!("adjacency lists are not available in partial-list mode")
    }
    fn parent_list(&self, _: usize, _: VertexId) -> &[Nbr] {
        &[]
    }
}

/// The current level-1 window and, at level 2, the current level-2 window.
struct WindowView<'a> {
    w1: &'a AdjWindow,
    w2: Option<&'a AdjWindow>,
}

impl NeighborhoodView for WindowView<'_> {
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
