//! One rank's scatter phase (TurboGraph++ §2.2, §4.1): its level-1 vertex windows and, nested
//! in each, the level-2 windows of the vertices of interest, computed on all rayon threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use super::exchange::{NetworkCounters, RankSink};
use super::gather::LocalGather;
use super::pages::{read_record, slots, BufferManager};
use super::window::{materialize, pages_of, take_window, AdjWindow, PageSource, Prefetched};
use super::{
    tail_after, AdjacencyMode, ColumnRead, CommonNeighbors, Emitter, Nbr, NeighborhoodQuery, NeighborhoodView,
    RankStats, RunContext, TAG_PAGE_REPLY, TAG_PAGE_REQUEST,
};
use crate::engine::stream::IndexedBitmap;
use crate::error::{Error, Result};
use crate::store::StoreFile;
use crate::transport::Transport;
use crate::VertexId;

/// One rank's scatter phase: its level-1 windows and, nested in each, the level-2 windows.
pub(super) fn scatter_rank<Q: NeighborhoodQuery>(
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
    // A one-level query over full lists gathers in its level-1 tasks' buffers ([`scatter_tasks`]).
    let rank_gathers = query.levels() >= 2 || query.mode() == AdjacencyMode::Partial;
    let mut lgb = LocalGather::new(if rank_gathers { plan.local_gather_records } else { 0 }, &layout.rank_starts, sink);
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
    let threads = rayon::current_num_threads().max(1);
    let view = WindowView { w1, w2: None, store_ids: ctx.store_ids.as_deref(), column: ctx.column(), level2: None };
    if voi.is_none() {
        // A one-level query: nothing to mark, so level 1 runs on all threads.
        stats.aggregate += scatter_tasks(ctx, sink, 1, w1, view, threads)?;
        stats.scatter_time += t.elapsed();
        return Ok(());
    }
    let mut emitter = RankEmitter { query, lgb, voi, aggregate: 0, error: None };
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
            let view = WindowView { w1, w2: Some(&w2), store_ids: None, column: None, level2: None };
            stats.aggregate += scatter_tasks(ctx, sink, 2, &w2, view, threads)?;
            stats.scatter_time += t.elapsed();
        }
    }
    voi.clear();
    Ok(())
}

/// The vertices of `window` at `level` (1: a one-level query's level-1 window; 2: a level-2
/// window, `view` holding both), split over the rayon threads, each with its own local gather
/// buffer (a share of the plan's); returns the aggregate added.
fn scatter_tasks<Q: NeighborhoodQuery>(
    ctx: &RunContext<'_, Q>,
    sink: &RankSink<'_, Q>,
    level: usize,
    window: &AdjWindow,
    view: WindowView<'_>,
    threads: usize,
) -> Result<u64> {
    let query = ctx.query;
    let capacity = ctx.plan.local_gather_records / threads;
    let bounds = balanced_tasks(window, &view, threads * 8);
    let aggregate = AtomicU64::new(0);
    bounds.par_windows(2).try_for_each(|task| -> Result<()> {
        let mut lgb = LocalGather::new(capacity, &ctx.layout.rank_starts, sink);
        let mut emitter = RankEmitter { query, lgb: &mut lgb, voi: None, aggregate: 0, error: None };
        // A rayon thread runs one task at a time, so its table is free; `None` (no table) falls
        // back to merging.
        let mut marks = rayon::current_thread_index().and_then(|i| ctx.list_marks.get(i)?.try_lock().ok());
        for k in task[0]..task[1] {
            let (v, list) = (window.ids[k] as VertexId, window.list_at(k));
            match marks.as_deref_mut() {
                Some(table) if level == 2 && view.parent_list(1, v).len() >= 2 => {
                    list.iter().for_each(|e| table[e.id() as usize] = (e.0 & 3) as u8);
                    let view = WindowView { level2: Some((v, &table[..])), ..view };
                    query.adj_scatter(2, &view, &mut emitter, v, list);
                    list.iter().for_each(|e| table[e.id() as usize] = 0);
                }
                _ => query.adj_scatter(level, &view, &mut emitter, v, list),
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
            let view = PartialView { store_ids: ctx.store_ids.as_deref(), column: ctx.column() };
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
    column: Option<ColumnRead<'a>>,
}

/// The store id of `v` from the one-level query's column.
fn store_id_of(store_ids: Option<&[u32]>, v: VertexId) -> VertexId {
    store_ids.expect("store ids are available to one-level queries")[v as usize] as VertexId
}

impl NeighborhoodView for PartialView<'_> {
    fn store_id(&self, v: VertexId) -> VertexId {
        store_id_of(self.store_ids, v)
    }
    fn column(&self, v: VertexId) -> u64 {
        ColumnRead::entry(self.column, v)
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
    /// The query's column by BBP id (one-level queries with a column).
    column: Option<ColumnRead<'a>>,
    /// At level 2: the vertex being scattered and its list marked by id (direction bits; 0 = not
    /// a neighbour), so that intersecting a parent's list with it is one lookup per entry.
    level2: Option<(VertexId, &'a [u8])>,
}

impl NeighborhoodView for WindowView<'_> {
    fn store_id(&self, v: VertexId) -> VertexId {
        store_id_of(self.store_ids, v)
    }
    fn column(&self, v: VertexId) -> u64 {
        ColumnRead::entry(self.column, v)
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
