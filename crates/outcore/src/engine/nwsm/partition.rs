//! Balanced buffer-aware partitioning (TurboGraph++ §3, Theorem 4.1, Appendix A.3).
//!
//! * Degrees are those of the full lists (the simple undirected graph under the store).
//! * Vertices are sorted by descending degree (ties: ascending store id) and dealt round-robin
//!   to `p` ranks, so every rank gets as many high- as low-degree vertices; each rank's
//!   vertices are renumbered consecutively in *ascending* degree (rank r holds
//!   `[rank_starts[r], rank_starts[r+1])`). The degree order doubles as the partial order of
//!   the intersection queries: a query that orients its walks by id (u < v < w, as triangle
//!   counting does) then starts from the low-degree end, so the list tails it intersects are
//!   the few higher-degree neighbours, as in GAP's ordered count. (Numbered in descending
//!   degree, the tails were the hubs' whole lists: 13× the intersection work of the in-memory
//!   executor on RMAT-18.) Layouts numbered the old way carry no `id_order` and are rebuilt.
//! * Each rank's vertices are cut into `q` source ranges and the whole id space into `p·q`
//!   destination ranges: `q × pq` edge chunks per rank. `q` comes from the memory budget
//!   ([`q_min`], Theorem 4.1).
//! * Each chunk's edges are written as slotted pages (`pages.rs`) into `rank-r/pages`, chunk
//!   a batch of source vertices at a time; the two-level index `rank-r/chunks` (offsets) and
//!   `rank-r/chunk-pages` (page numbers) lists the pages of chunk (destination range j, source
//!   range i) at `j·q + i` in ascending source order, and `rank-r/page-sources` the first and
//!   last source of every page, so that the pages holding a range of sources are found by
//!   binary search.
//! * `degree` (u32 per BBP id) and `old-of-new` (store id per BBP id) complete the layout.
//!
//! The layout `bbp-{p}-{q}` is built in a temporary directory inside the store and renamed into
//! place before the manifest (rewritten atomically) lists it. The build is semi-external: a few
//! arrays of |V| entries, and the lists of as many consecutive source ranges as fit in the
//! budget, collected in one sequential scan of `csr-out`/`csr-in` per batch.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::pages::{PageBuilder, MIN_PAGE_SIZE};
use super::query::{check_vertex_count, full_list, Nbr};
use crate::error::{Error, Result};
use crate::runtime::commit::StagedDir;
use crate::runtime::{format_size, CancelToken, MemoryBudget, Progress, ProgressUnit};
use crate::store::manifest::{FileEntry, LayoutEntry};
use crate::store::order::list_chunks;
use crate::store::{Direction, Store, StoreFileWriter};
use crate::VertexId;

/// How vertices are numbered within a rank (the `id_order` parameter of the layout).
const ID_ORDER: &str = "ascending-degree";

/// Default page size (paper Appendix A.3).
pub const DEFAULT_PAGE_SIZE: u64 = 64 << 10;
/// Bytes of gathered attribute per vertex (|VA| / |V|): one 8-byte value.
pub const ATTRIBUTE_BYTES: u64 = 8;
/// Bytes per vertex the engine keeps whole during a query besides the attributes: the degree
/// (4) and the query's output column (8).
pub const RESIDENT_BYTES_PER_VERTEX: u64 = 12;

/// Theorem 4.1: the fewest source ranges per rank for a k-walk query, with `memory` the budget
/// left for vertex windows, gather buffers, vertex-of-interest bitmaps and adjacency windows:
/// `q = ⌈(1/p)·(4k+1)|VA| / (M − k(2·PS + α|VA|))⌉` with `α|VA| = |V|/8` (one bit per vertex).
pub fn q_min(vertices: u64, p: usize, k: usize, page_size: u64, memory: u64) -> Result<usize> {
    let va = (vertices * ATTRIBUTE_BYTES) as f64;
    let fixed = k as f64 * (2.0 * page_size as f64 + vertices.div_ceil(8) as f64);
    let room = memory as f64 - fixed;
    if room <= 0.0 {
        return Err(Error::MemoryBudget(format!(
            "the nwsm engine needs more than {} for two pages and a vertex bitmap per level; {} is left",
            format_size(fixed as u64),
            format_size(memory)
        )));
    }
    Ok((((4 * k + 1) as f64 * va / (p as f64 * room)).ceil() as usize).max(1))
}

/// An opened `bbp-{p}-{q}` layout: its shape (the per-vertex files are read by the engine).
#[derive(Debug, Clone, PartialEq)]
pub struct BbpLayout {
    pub name: String,
    pub p: usize,
    pub q: usize,
    pub page_size: u64,
    /// First BBP id of every rank, plus |V|.
    pub rank_starts: Vec<u64>,
    /// First BBP id of every global vertex chunk (rank r, range i at r·q + i), plus |V|.
    pub chunk_bounds: Vec<u64>,
    pub pages_per_rank: Vec<u64>,
    /// Σ over vertices of degree²: what a k = 2 query touches.
    pub sum_degree_squared: u64,
    pub max_degree: u64,
}

/// The figures of a built layout that size a run over it: its ranks, ranges, page size and
/// pages of all ranks (whose indexes a run keeps whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BbpFacts {
    pub p: usize,
    pub q: usize,
    pub page_size: u64,
    pub pages: u64,
}

impl BbpFacts {
    /// The layout a run of `p` ranks, `page_size` and at least `q` ranges reads among `layouts`
    /// (the smallest such q, as [`BbpLayout::find`]).
    pub fn find(layouts: &[BbpFacts], p: usize, q: usize, page_size: u64) -> Option<BbpFacts> {
        layouts.iter().filter(|l| l.p == p && l.page_size == page_size && l.q >= q).min_by_key(|l| l.q).copied()
    }
}

impl BbpLayout {
    pub fn dir_name(p: usize, q: usize) -> String {
        format!("bbp-{p}-{q}")
    }

    /// The rank owning BBP id `v`.
    pub fn rank_of(&self, v: VertexId) -> usize {
        self.rank_starts.partition_point(|&s| s <= v) - 1
    }

    /// The global vertex chunk holding `v`.
    pub fn chunk_of(&self, v: VertexId) -> usize {
        self.chunk_bounds.partition_point(|&s| s <= v) - 1
    }

    pub fn chunk_range(&self, chunk: usize) -> std::ops::Range<u64> {
        self.chunk_bounds[chunk]..self.chunk_bounds[chunk + 1]
    }

    /// The layout an entry describes; None for one of another id order (built by an older
    /// version), which [`ensure_layout`] then rebuilds.
    fn from_entry(name: &str, entry: &LayoutEntry) -> Option<BbpLayout> {
        let p = &entry.params;
        if p.get("id_order")?.as_str()? != ID_ORDER {
            return None;
        }
        let list = |key: &str| -> Option<Vec<u64>> { p.get(key)?.as_array()?.iter().map(|v| v.as_u64()).collect() };
        Some(BbpLayout {
            name: name.to_string(),
            p: p.get("p")?.as_u64()? as usize,
            q: p.get("q")?.as_u64()? as usize,
            page_size: p.get("page_size")?.as_u64()?,
            rank_starts: list("rank_starts")?,
            chunk_bounds: list("chunk_bounds")?,
            pages_per_rank: list("pages_per_rank")?,
            sum_degree_squared: p.get("sum_degree_squared")?.as_u64()?,
            max_degree: p.get("max_degree")?.as_u64()?,
        })
    }

    /// What the planner reads of the layout to size a run over it ([`super::RunSizing`]).
    pub fn facts(&self) -> BbpFacts {
        BbpFacts { p: self.p, q: self.q, page_size: self.page_size, pages: self.pages_per_rank.iter().sum() }
    }

    /// The store's BBP layouts, any p, q and page size.
    pub fn all(store: &Store) -> Vec<BbpLayout> {
        let layouts = &store.manifest().layouts;
        layouts.iter().filter(|(n, _)| n.starts_with("bbp-")).filter_map(|(n, e)| Self::from_entry(n, e)).collect()
    }

    /// A layout for `p` ranks and `page_size` with at least `q` ranges (the smallest such q).
    pub fn find(store: &Store, p: usize, q: usize, page_size: u64) -> Option<BbpLayout> {
        Self::all(store).into_iter().filter(|l| l.p == p && l.page_size == page_size && l.q >= q).min_by_key(|l| l.q)
    }
}

/// Vertices whose offsets [`scan_full_lists`] reads at once (512 KiB per direction).
const OFFSET_WINDOW: u64 = 1 << 16;

/// Calls `visit` with the full list of every vertex that `wanted` accepts, in id order,
/// scanning `csr-out` (and `csr-in` on directed stores) sequentially in chunks of about
/// `chunk_edges` arcs. Offsets are read a window at a time, so the scan holds no per-vertex
/// array; a chunk without a wanted vertex is not read.
pub fn scan_full_lists(
    store: &Store,
    chunk_edges: u64,
    wanted: impl Fn(VertexId) -> bool,
    mut visit: impl FnMut(VertexId, &[Nbr]) -> Result<()>,
) -> Result<()> {
    let out_layout = store.csr(Direction::Out)?;
    let in_layout = if store.is_directed() { Some(store.csr(Direction::In)?) } else { None };
    let n = store.num_vertices();
    let (mut out_offsets, mut in_offsets, mut summed) = (Vec::new(), Vec::new(), Vec::new());
    let (mut outs, mut ins, mut list) = (Vec::new(), Vec::new(), Vec::new());
    let mut base = 0;
    while base < n {
        let end = (base + OFFSET_WINDOW).min(n);
        out_offsets.resize((end - base + 1) as usize, 0);
        out_layout.read_offsets(base, &mut out_offsets)?;
        if let Some(layout) = &in_layout {
            in_offsets.resize(out_offsets.len(), 0);
            layout.read_offsets(base, &mut in_offsets)?;
        }
        // A vertex's out- and in-list are read together: chunks are cut on their summed offsets.
        let chunk_offsets = if in_layout.is_some() {
            summed.clear();
            summed.extend(out_offsets.iter().zip(&in_offsets).map(|(o, i)| o + i));
            &summed
        } else {
            &out_offsets
        };
        for chunk in list_chunks(chunk_offsets, 0..end - base, chunk_edges) {
            let (v, w) = (chunk.start as usize, chunk.end as usize);
            // Only the wanted vertices' part of the chunk is read.
            let Some(first) = (v..w).find(|&u| wanted(base + u as u64)) else {
                continue;
            };
            let stop = (first..w).rev().find(|&u| wanted(base + u as u64)).expect("first is wanted") + 1;
            out_layout.read_targets(out_offsets[first], out_offsets[stop] - out_offsets[first], &mut outs)?;
            match &in_layout {
                Some(layout) => {
                    layout.read_targets(in_offsets[first], in_offsets[stop] - in_offsets[first], &mut ins)?
                }
                None => ins.clear(),
            }
            for u in (first..stop).filter(|&u| wanted(base + u as u64)) {
                let out_part = list_in_chunk(&outs, &out_offsets, first, u);
                let in_part = if in_layout.is_some() { list_in_chunk(&ins, &in_offsets, first, u) } else { &[] };
                let owner = base + u as u64;
                full_list(owner, out_part, in_part, &mut list);
                if in_layout.is_none() {
                    // An undirected store holds both arcs of every edge in csr-out.
                    list.iter_mut().for_each(|e| *e = Nbr::new(e.id(), true, true));
                }
                visit(owner, &list)?;
            }
        }
        base = end;
    }
    Ok(())
}

/// Vertex `u`'s list among the targets `all` read from window position `first` on.
fn list_in_chunk<'a>(all: &'a [u64], offsets: &[u64], first: usize, u: usize) -> &'a [u64] {
    &all[(offsets[u] - offsets[first]) as usize..(offsets[u + 1] - offsets[first]) as usize]
}

/// Builds (or finds) the BBP layout for `p` ranks with at least `q` ranges and returns it.
pub fn ensure_layout(
    store: &Store,
    p: usize,
    q: usize,
    page_size: u64,
    budget: MemoryBudget,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<BbpLayout> {
    if let Some(found) = BbpLayout::find(store, p, q, page_size) {
        return Ok(found);
    }
    // A damaged layout of these ranks is reported with the command that rebuilds it.
    let prefix = format!("bbp-{p}-");
    if let Some((name, _)) = store.damaged_layouts().iter().find(|(n, _)| n.starts_with(&prefix)) {
        return Err(store.damaged_layout(name).expect("listed as damaged"));
    }
    let _building = store.lock_builds()?;
    if let Some(found) = BbpLayout::find(&store.reopen()?, p, q, page_size) {
        return Ok(found);
    }
    build_locked(store, p, q, page_size, budget, progress, cancel)
}

/// Partitions the store into `bbp-{p}-{q}` (replacing a layout of that name), under the
/// store's build lock.
pub fn build(
    store: &Store,
    p: usize,
    q: usize,
    page_size: u64,
    budget: MemoryBudget,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<BbpLayout> {
    let _building = store.lock_builds()?;
    build_locked(store, p, q, page_size, budget, progress, cancel)
}

/// Memory the partitioning of `vertices` into `p` ranks of `page_size` pages needs at least:
/// three u32 arrays of |V| entries at its peak (degrees by store id, new ids, and the degree
/// histogram or degrees by new id) and two pages per rank.
pub fn partition_memory(vertices: u64, p: usize, page_size: u64) -> u64 {
    vertices * 12 + 2 * page_size * p as u64
}

/// Every vertex's position in descending degree, ties in ascending id: a counting sort, whose
/// histogram (one u32 per degree up to the largest) is at most |V| entries.
fn degree_positions(degree: &[u32]) -> Vec<u32> {
    let max = degree.iter().copied().max().unwrap_or(0) as usize;
    let mut next = vec![0u32; max + 1];
    for &d in degree {
        next[d as usize] += 1;
    }
    // The first position of each degree: after all vertices of higher degree.
    let mut start = 0u32;
    for slot in next.iter_mut().rev() {
        let count = *slot;
        *slot = start;
        start += count;
    }
    degree
        .iter()
        .map(|&d| {
            let position = next[d as usize];
            next[d as usize] += 1;
            position
        })
        .collect()
}

fn build_locked(
    store: &Store,
    p: usize,
    q: usize,
    page_size: u64,
    budget: MemoryBudget,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<BbpLayout> {
    check_vertex_count(store)?;
    if p == 0 || q == 0 {
        return Err(Error::invalid("BBP needs at least one rank and one range (--ranks, q ≥ 1)"));
    }
    if page_size < MIN_PAGE_SIZE || !page_size.is_multiple_of(8) || page_size > u32::MAX as u64 {
        return Err(Error::invalid(format!(
            "page size {page_size} is invalid: use a multiple of 8 from {MIN_PAGE_SIZE} bytes to 4 GiB"
        )));
    }
    let n = store.num_vertices();
    let needed = partition_memory(n, p, page_size);
    if needed > budget.bytes() {
        return Err(Error::MemoryBudget(format!(
            "partitioning {n} vertices needs {} of per-vertex arrays; the budget is {budget}",
            format_size(needed)
        )));
    }
    // While pages are written: the new ids and degrees by new id (8 bytes per vertex), the
    // page builders, then the batch of lists (half of the rest) and the scan's buffers.
    let room = budget.bytes() - n * 8 - 2 * page_size * p as u64;
    let batch_units = (room / 2 / 4).max(1 << 10);
    let scan_edges = (room / 2 / 24).clamp(1 << 10, 1 << 22);

    // 1. Degrees of the full lists.
    let bar = progress.start("bbp: degrees", Some(n), ProgressUnit::Vertices);
    let mut degree = vec![0u32; n as usize];
    scan_full_lists(
        store,
        scan_edges,
        |_| true,
        |v, list| {
            degree[v as usize] = list.len() as u32;
            bar.inc(1);
            Ok(())
        },
    )?;
    bar.finish();
    cancel.check()?;
    let sum_degree_squared: u64 = degree.iter().map(|&d| d as u64 * d as u64).sum();
    let max_degree = degree.iter().copied().max().unwrap_or(0) as u64;

    // 2. Degree order, round-robin deal, renumbering.
    let counts: Vec<u64> = (0..p as u64).map(|r| (n + p as u64 - 1 - r) / p as u64).collect();
    let mut rank_starts = vec![0u64; p + 1];
    for r in 0..p {
        rank_starts[r + 1] = rank_starts[r] + counts[r];
    }
    let mut new_of_old = degree_positions(&degree);
    // Dealt in descending degree, numbered in ascending degree within the rank.
    for position in new_of_old.iter_mut() {
        let (r, local) = (*position as usize % p, (*position as usize / p) as u64);
        *position = (rank_starts[r] + counts[r] - 1 - local) as u32;
    }
    let mut chunk_bounds = Vec::with_capacity(p * q + 1);
    for r in 0..p {
        for i in 0..q as u64 {
            chunk_bounds.push(rank_starts[r] + counts[r] * i / q as u64);
        }
    }
    chunk_bounds.push(n);
    let mut degree_new = vec![0u32; n as usize];
    for (old, &new) in new_of_old.iter().enumerate() {
        degree_new[new as usize] = degree[old];
    }
    drop(degree);

    // 3. Write beside its place (removed on failure).
    let name = BbpLayout::dir_name(p, q);
    let staged = StagedDir::create(&store.path(&name))?;
    let (files, pages_per_rank) = write_layout(
        store,
        staged.path(),
        LayoutShape { p, q, page_size, chunk_bounds: &chunk_bounds },
        &degree_new,
        &new_of_old,
        (batch_units, scan_edges),
        progress,
        cancel,
    )?;

    // 4. Commit: in place of the old version (if any), then list it in the manifest.
    staged.commit()?;
    let mut params = Map::new();
    params.insert("id_order".into(), ID_ORDER.into());
    params.insert("p".into(), p.into());
    params.insert("q".into(), q.into());
    params.insert("page_size".into(), page_size.into());
    params.insert("rank_starts".into(), json!(rank_starts));
    params.insert("chunk_bounds".into(), json!(chunk_bounds));
    params.insert("pages_per_rank".into(), json!(pages_per_rank));
    params.insert("sum_degree_squared".into(), sum_degree_squared.into());
    params.insert("max_degree".into(), max_degree.into());
    params.insert("budget_bytes".into(), Value::from(budget.bytes()));
    let files: Vec<(String, FileEntry)> = files.into_iter().map(|(rel, e)| (format!("{name}/{rel}"), e)).collect();
    let bytes = files.iter().map(|(_, e)| e.bytes).sum();
    let entry = LayoutEntry { files: files.iter().map(|(rel, _)| rel.clone()).collect(), bytes, params };
    let layout = BbpLayout::from_entry(&name, &entry).expect("params just written");
    let mut fresh = store.reopen()?;
    fresh.add_layout(&name, entry, files)?;
    remove_coarser(store, p, q, page_size)?;
    Ok(layout)
}

/// A run's hold on a layout (an advisory file lock in the store's `tmp/`): shared while a query
/// reads the layout, exclusive (and only if free at once) while it is removed.
pub struct LayoutLock {
    _lock: crate::store::FileLock,
}

impl LayoutLock {
    /// Waits until no removal of `name` is under way and keeps it from starting.
    pub fn shared(store: &Store, name: &str) -> Result<LayoutLock> {
        Ok(LayoutLock { _lock: store.hold_layout(name)? })
    }

    /// The exclusive hold, or `None` when a run holds the layout.
    pub fn exclusive_if_free(store: &Store, name: &str) -> Result<Option<LayoutLock>> {
        Ok(store.try_replace_layout(name)?.map(|lock| LayoutLock { _lock: lock }))
    }
}

/// Removes the layouts for `p` ranks and `page_size` with fewer than `q` ranges (Algorithm 1
/// replaces a layout by a finer one; the coarser ones would only take disk space), and BBP
/// layouts of another id order, which no run uses any more. A layout a run holds
/// ([`LayoutLock::shared`]) stays, to be removed after a later build. Returns the names removed.
pub fn remove_coarser(store: &Store, p: usize, q: usize, page_size: u64) -> Result<Vec<String>> {
    let mut fresh = store.reopen()?;
    let coarser = BbpLayout::all(&fresh).into_iter().filter(|l| l.p == p && l.page_size == page_size && l.q < q);
    let mut names: Vec<String> = coarser.map(|l| l.name).collect();
    let manifest = &fresh.manifest().layouts;
    let other_order = manifest.iter().filter(|(n, e)| n.starts_with("bbp-") && BbpLayout::from_entry(n, e).is_none());
    names.extend(other_order.map(|(n, _)| n.clone()).filter(|n| *n != BbpLayout::dir_name(p, q)));
    let mut removed = Vec::new();
    for name in names {
        if let Some(_held) = LayoutLock::exclusive_if_free(&fresh, &name)? {
            fresh.remove_layout(&name)?;
            removed.push(name);
        }
    }
    Ok(removed)
}

/// Room a vertex's entry in a batch's index takes, in u32s: (id u32, start u64, length u32).
const INDEX_UNITS: u64 = 4;

struct LayoutShape<'a> {
    p: usize,
    q: usize,
    page_size: u64,
    chunk_bounds: &'a [u64],
}

/// The files of a layout written (relative names and entries) and its pages per rank.
type WrittenLayout = (Vec<(String, FileEntry)>, Vec<u64>);

/// Writes all files of the layout into `dir`; returns them (relative names) and pages per rank.
#[allow(clippy::too_many_arguments)]
fn write_layout(
    store: &Store,
    dir: &Path,
    shape: LayoutShape<'_>,
    degree_new: &[u32],
    new_of_old: &[u32],
    (batch_units, scan_edges): (u64, u64),
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<WrittenLayout> {
    let LayoutShape { p, q, page_size, chunk_bounds } = shape;
    let n = degree_new.len();
    let counters = store.counters().clone();
    let mut files = Vec::new();
    {
        let mut old_of_new = vec![0u32; n];
        for (old, &new) in new_of_old.iter().enumerate() {
            old_of_new[new as usize] = old as u32;
        }
        let mut w_degree = StoreFileWriter::create(&dir.join("degree"), counters.clone())?;
        let mut w_old = StoreFileWriter::create(&dir.join("old-of-new"), counters.clone())?;
        for (&old, &degree) in old_of_new.iter().zip(degree_new) {
            w_degree.write_u32(degree)?;
            w_old.write_u32(old)?;
        }
        files.push(("degree".to_string(), w_degree.finish()?));
        files.push(("old-of-new".to_string(), w_old.finish()?));
    }

    let mut writers = Vec::with_capacity(p);
    for r in 0..p {
        writers.push(StoreFileWriter::create(&dir.join(format!("rank-{r}/pages")), counters.clone())?);
    }
    let mut builders: Vec<PageBuilder> = (0..p).map(|_| PageBuilder::new(page_size)).collect();
    let mut page_sources: Vec<Vec<(u32, u32)>> = vec![Vec::new(); p];
    // chunk_pages[r][j·q + i]: the pages of chunk (destination range j, source range i), in
    // ascending source order.
    let mut chunk_pages: Vec<Vec<Vec<u32>>> = vec![vec![Vec::new(); p * q * q]; p];

    let bar = progress.start("bbp: pages", Some(n as u64), ProgressUnit::Vertices);
    // Batches: consecutive BBP ids whose lists and index entries fit `batch_units` u32s
    // together (at least one vertex); a vertex without neighbours takes no room.
    let units = |v: u64| match degree_new[v as usize] as u64 {
        0 => 0,
        d => d + INDEX_UNITS,
    };
    let mut lo = 0u64;
    let mut mapped: Vec<Nbr> = Vec::new();
    while lo < n as u64 {
        cancel.check()?;
        // The batch's list entries and its vertices with a list (each an index entry).
        let (mut hi, mut entries, mut listed) = (lo, 0u64, 0u64);
        while hi < n as u64 && (hi == lo || entries + listed * INDEX_UNITS + units(hi) <= batch_units) {
            let degree = degree_new[hi as usize] as u64;
            entries += degree;
            listed += (degree > 0) as u64;
            hi += 1;
        }
        // Fresh, exact allocations: a doubling vector would hold up to twice the batch, and
        // one kept from batch to batch the largest lists of one and the largest index of another.
        let mut arena: Vec<Nbr> = Vec::with_capacity(entries as usize);
        let mut index: Vec<(u32, u64, u32)> = Vec::with_capacity(listed as usize); // (BBP id, start in arena, len)
        let in_batch = |old: VertexId| {
            let new = new_of_old[old as usize] as usize;
            (lo..hi).contains(&(new as u64)) && degree_new[new] > 0
        };
        scan_full_lists(store, scan_edges, in_batch, |old, list| {
            let new = new_of_old[old as usize] as u64;
            mapped.clear();
            mapped.extend(list.iter().map(|e| Nbr((new_of_old[e.id() as usize] << 2) | (e.0 & 3))));
            mapped.sort_unstable();
            index.push((new as u32, arena.len() as u64, mapped.len() as u32));
            arena.extend_from_slice(&mapped);
            Ok(())
        })?;
        index.sort_unstable_by_key(|e| e.0);
        // The part of every vertex range g inside the batch, destination range by range.
        let mut at = 0;
        while at < index.len() {
            let g = chunk_bounds.partition_point(|&b| b <= index[at].0 as u64) - 1;
            let end = at + index[at..].partition_point(|e| (e.0 as u64) < chunk_bounds[g + 1]);
            let (r, i) = (g / q, g % q);
            for j in 0..p * q {
                let (dlo, dhi) = (chunk_bounds[j], chunk_bounds[j + 1]);
                for &(v, start, len) in &index[at..end] {
                    let list = &arena[start as usize..(start + len as u64) as usize];
                    let a = list.partition_point(|e| e.id() < dlo);
                    let b = list.partition_point(|e| e.id() < dhi);
                    let mut k = a;
                    while k < b {
                        let taken = builders[r].add(v, &list[k..b], k as u32);
                        if taken == 0 {
                            chunk_pages[r][j * q + i].push(page_sources[r].len() as u32);
                            flush_page(&mut builders[r], &mut writers[r], &mut page_sources[r])?;
                        }
                        k += taken;
                    }
                }
                if !builders[r].is_empty() {
                    chunk_pages[r][j * q + i].push(page_sources[r].len() as u32);
                    flush_page(&mut builders[r], &mut writers[r], &mut page_sources[r])?;
                }
            }
            at = end;
        }
        bar.inc(hi - lo);
        lo = hi;
    }
    bar.finish();
    let mut pages_per_rank = Vec::with_capacity(p);
    for (r, writer) in writers.into_iter().enumerate() {
        files.push((format!("rank-{r}/pages"), writer.finish()?));
        pages_per_rank.push(page_sources[r].len() as u64);
        let mut w = StoreFileWriter::create(&dir.join(format!("rank-{r}/page-sources")), counters.clone())?;
        for &(first, last) in &page_sources[r] {
            w.write_u32(first)?;
            w.write_u32(last)?;
        }
        files.push((format!("rank-{r}/page-sources"), w.finish()?));
        let mut w = StoreFileWriter::create(&dir.join(format!("rank-{r}/chunks")), counters.clone())?;
        let mut wp = StoreFileWriter::create(&dir.join(format!("rank-{r}/chunk-pages")), counters.clone())?;
        let mut offset = 0u64;
        w.write_u64(0)?;
        for list in &chunk_pages[r] {
            for &page in list {
                wp.write_u32(page)?;
            }
            offset += list.len() as u64;
            w.write_u64(offset)?;
        }
        files.push((format!("rank-{r}/chunks"), w.finish()?));
        files.push((format!("rank-{r}/chunk-pages"), wp.finish()?));
    }
    Ok((files, pages_per_rank))
}

fn flush_page(builder: &mut PageBuilder, writer: &mut StoreFileWriter, sources: &mut Vec<(u32, u32)>) -> Result<()> {
    let (page, range) = builder.finish_page();
    writer.write_all(page)?;
    sources.push(range);
    builder.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_grows_as_the_budget_shrinks() {
        let q_big = q_min(1 << 20, 1, 2, 64 << 10, 256 << 20).unwrap();
        let q_small = q_min(1 << 20, 1, 2, 64 << 10, 16 << 20).unwrap();
        assert_eq!(q_big, 1);
        assert!(q_small > q_big);
        assert!(q_min(1 << 20, 2, 2, 64 << 10, 16 << 20).unwrap() <= q_small.div_ceil(2));
        assert!(matches!(q_min(1 << 20, 1, 2, 64 << 10, 1000), Err(Error::MemoryBudget(_))));
    }
}
