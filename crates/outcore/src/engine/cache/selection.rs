//! Which vertices' adjacency lists go into the static cache (BASC paper §3.1–3.2).
//!
//! * **GVS** — greedy vertex selection, the paper's Algorithm 1. The penalty function F(C)
//!   (§3.1) charges every edge `(v, u1)` with `u1` not cached the probability that it causes a
//!   request, `1 / (r(u1) · d_i(u1))`, times the page under-use that request suffers,
//!   `1 / Σ d_o(u2)` over the uncached neighbours `u2` of `v` that share `u1`'s page. GVS
//!   attributes each edge's penalty to its target (`T[u1]`), then caches the vertices with the
//!   highest penalty per byte of cache, `K` rounds of `M/K` bytes each, recomputing `T` after
//!   every round so that later picks see the earlier ones.
//! * **HighD / LowD / Random** — the paper's baselines (§5.1): lists by descending or ascending
//!   out-degree, or in random order, until the cache is full.
//!
//! Definitions used here (the paper leaves them implicit):
//! * a vertex's page `P(u)` is the page (of `--page-size` bytes of the targets file) where its
//!   list starts; lists that share that page are "in the same page";
//! * `r(u)` = the number of uncached, non-empty lists that start in `u`'s page (§3.1: "the
//!   number of vertices whose edge lists are stored in the page");
//! * the cost of caching `u` is its list's bytes plus [`INDEX_BYTES_PER_VERTEX`]; `M` is the
//!   static cache's byte budget less its membership bitmap;
//! * Algorithm 1 line 13 (as extracted) reads "minimum T[n]/deg(n)" while the text says GVS
//!   "selects the vertices with the highest normalized penalty"; minimising F means removing the
//!   largest penalty per byte, so we take the maximum of `T[u] / cost(u)`;
//! * line 14 ends a round at the first vertex that would overflow `k/K · M`; in the last round
//!   we skip such a vertex and go on, so that the cache is filled up to `M − ε` as §3.1 asks.
//!
//! Every round reads all lists once; the time is `O(K (|E| + |V| log |V|))`, the paper's
//! complexity without its incremental re-computation. The selection is saved in the store
//! (`cache/selection-*.u64`, registered as a layout) and reused for the same method, page size
//! and cache size.
//!
//! **What is resident.** GVS holds 32 bytes per vertex (penalty, in-degree, page and live
//! degree, a 4-byte heap entry, the chosen ids). It runs before the caches and the program
//! state exist and gets their memory (`CacheEngine::selection`); when that also holds the
//! whole `csr-out` targets file as stored (4 bytes an arc below 2^32 vertices), the file is
//! read once, checksums verified, and all K rounds run over that copy ([`Lists::Resident`]),
//! which the engine then compacts in place into the static cache (`StaticCache::load`): a first
//! run reads the adjacency once for selection and cache together instead of K + 1 times (a
//! first BFS on RMAT-22, norder, 384 MiB, K = 16: 4.3 GiB read before, 455 MiB, 1.8 times the
//! adjacency, after). Otherwise each round streams the file in chunks ([`Lists::Streamed`]).
//! Both give the same selection.
//!
//! **Threads.** The penalty pass splits the *targets* into ranges of about equal in-arcs, cut
//! where the page changes, one task each; a task walks every list in source order and charges
//! the run of neighbours in its range. Every `T[u]` therefore adds its terms in source order,
//! as one thread would, and a list's page groups are whole in one range: the penalties, hence
//! the selection, are bit-identical for any number of threads, with no per-thread copies of
//! `T`. The price is one look at every list per task (two ids, a binary search on overlap).

use std::cmp::Ordering;
use std::ops::Range;

use rayon::prelude::*;

use super::static_cache::{StaticCache, INDEX_BYTES_PER_VERTEX};
use crate::error::{Error, Result};
use crate::store::order::{list_chunks, shuffle};
use crate::store::CsrLayout;

/// How the static cache is filled (`--static-cache-select`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SelectionMethod {
    /// No static cache: the whole cache budget is page cache.
    None,
    Gvs,
    HighD,
    LowD,
    Random,
}

impl SelectionMethod {
    pub const NAMES: &'static [&'static str] = &["gvs", "highd", "lowd", "random", "none"];

    pub fn parse(name: &str) -> Result<SelectionMethod> {
        Ok(match name {
            "none" => SelectionMethod::None,
            "gvs" => SelectionMethod::Gvs,
            "highd" => SelectionMethod::HighD,
            "lowd" => SelectionMethod::LowD,
            "random" | "rand" => SelectionMethod::Random,
            other => {
                return Err(Error::invalid(format!(
                    "unknown static cache selection '{other}' (available: {})",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SelectionMethod::None => "none",
            SelectionMethod::Gvs => "gvs",
            SelectionMethod::HighD => "highd",
            SelectionMethod::LowD => "lowd",
            SelectionMethod::Random => "random",
        }
    }
}

/// Where GVS reads the out-lists from, all of them once per round.
#[derive(Clone, Copy)]
pub enum Lists<'a> {
    /// From the layout's targets file, `chunk_edges` edges at a time (a longer list at once).
    Streamed { chunk_edges: u64 },
    /// The whole targets file as stored, read before the rounds
    /// ([`CsrLayout::read_all_encoded_targets`]).
    Resident(&'a [u8]),
}

/// Everything a selection depends on.
pub struct SelectionInput<'a> {
    pub layout: &'a CsrLayout,
    pub out_offsets: &'a [u64],
    /// In-degree of every vertex.
    pub in_degree: &'a [u32],
    pub page_size: u64,
    /// Byte budget of the static cache.
    pub budget_bytes: u64,
    /// Bytes per cached edge (target, plus 8 with weights).
    pub edge_bytes: u64,
    pub rounds: usize,
    pub seed: u64,
    /// Where GVS reads the lists from (the selection is the same either way).
    pub lists: Lists<'a>,
}

impl SelectionInput<'_> {
    fn n(&self) -> usize {
        self.out_offsets.len() - 1
    }
    fn degree(&self, v: usize) -> u64 {
        self.out_offsets[v + 1] - self.out_offsets[v]
    }
    fn cost(&self, v: usize) -> u64 {
        self.degree(v) * self.edge_bytes + INDEX_BYTES_PER_VERTEX
    }
    /// Budget left for lists after the membership bitmap.
    fn list_budget(&self) -> u64 {
        self.budget_bytes.saturating_sub(StaticCache::bytes_for(self.n() as u64, 0, 0, 0))
    }
    fn page_of(&self, v: usize) -> usize {
        (self.out_offsets[v] * self.layout.target_bytes / self.page_size) as usize
    }
}

/// GVS's bytes per vertex: penalty (8), in-degree (4), page and live degree (8), heap entry
/// (4) and chosen id (8).
const GVS_BYTES_PER_VERTEX: u64 = 32;
/// Bytes per edge of a streamed chunk: the targets as stored, at most 8.
const CHUNK_BYTES_PER_EDGE: u64 = 8;

/// Memory a selection needs while it runs (GVS: its per-vertex arrays, page counts and the
/// scan buffer of `chunk_edges` edges; resident lists come on top, see [`Lists::Resident`]).
pub fn working_bytes(method: SelectionMethod, vertices: u64, pages: u64, chunk_edges: u64) -> u64 {
    match method {
        SelectionMethod::Gvs => vertices * GVS_BYTES_PER_VERTEX + pages * 4 + chunk_edges * CHUNK_BYTES_PER_EDGE,
        SelectionMethod::None => 0,
        _ => vertices * (4 + 16),
    }
}

/// The largest scan chunk (edges) that keeps GVS within `available` bytes, at least 1024.
pub fn chunk_edges_within(vertices: u64, pages: u64, available: u64) -> u64 {
    let fixed = working_bytes(SelectionMethod::Gvs, vertices, pages, 0);
    (available.saturating_sub(fixed) / CHUNK_BYTES_PER_EDGE).clamp(1024, crate::store::order::SCAN_CHUNK_EDGES)
}

/// Selects vertices; returns them sorted ascending.
pub fn select(method: SelectionMethod, input: &SelectionInput) -> Result<Vec<u64>> {
    let mut chosen = match method {
        SelectionMethod::None => Vec::new(),
        SelectionMethod::Gvs => match every_requestable_list(input) {
            Some(all) => all,
            None => gvs(input)?,
        },
        SelectionMethod::HighD | SelectionMethod::LowD | SelectionMethod::Random => {
            let mut order: Vec<u64> = (0..input.n() as u64).filter(|&v| input.degree(v as usize) > 0).collect();
            match method {
                SelectionMethod::HighD => order.sort_by_key(|&v| (std::cmp::Reverse(input.degree(v as usize)), v)),
                SelectionMethod::LowD => order.sort_by_key(|&v| (input.degree(v as usize), v)),
                _ => shuffle(&mut order, input.seed),
            }
            fill(input, order.into_iter())
        }
    };
    chosen.sort_unstable();
    Ok(chosen)
}

/// Every list a traversal can request (its vertex has an in-arc and a non-empty list), when
/// they all fit the budget. GVS takes exactly these over its rounds, since each has a positive
/// penalty while it is uncached; with room for all of them its K passes over the lists are
/// skipped (RMAT-22 at `--memory 4GiB`: 8.2 s of selection).
fn every_requestable_list(input: &SelectionInput) -> Option<Vec<u64>> {
    let requestable = (0..input.n()).filter(|&v| input.in_degree[v] > 0 && input.degree(v) > 0);
    let bytes: u64 = requestable.clone().map(|v| input.cost(v)).sum();
    (bytes <= input.list_budget()).then(|| requestable.map(|v| v as u64).collect())
}

/// Takes vertices in the given order while they fit in the budget (skipping those that do not).
fn fill(input: &SelectionInput, order: impl Iterator<Item = u64>) -> Vec<u64> {
    let budget = input.list_budget();
    let mut used = 0u64;
    let mut chosen = Vec::new();
    for v in order {
        let c = input.cost(v as usize);
        if used + c <= budget {
            used += c;
            chosen.push(v);
        }
    }
    chosen
}

/// What GVS keeps per vertex, side by side so that the penalty pass touches one cache line a
/// target: `meta`, its page (high 32 bits) and its list length (low 32 bits, saturated; 0 once
/// the vertex is cached or when it has no list: the penalty ignores both kinds alike), and `t`,
/// the sum of the shares charged to it this round, then its penalty per cached byte.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct Vertex {
    meta: u64,
    t: f64,
}

fn page_of(meta: u64) -> usize {
    (meta >> 32) as usize
}

fn live_degree(meta: u64) -> u64 {
    meta & 0xFFFF_FFFF
}

/// Algorithm 1 of the paper (see the module doc for the exact definitions).
fn gvs(input: &SelectionInput) -> Result<Vec<u64>> {
    let n = input.n();
    let pages = (input.layout.targets.len().div_ceil(input.page_size) as usize).max(1);
    if n >= u32::MAX as usize || pages >= u32::MAX as usize {
        return Err(Error::invalid("GVS selection supports graphs of fewer than 2^32 vertices and pages"));
    }
    let budget = input.list_budget();
    let rounds = input.rounds.max(1);
    let mut state: Vec<Vertex> = (0..n)
        .map(|v| Vertex { meta: ((input.page_of(v) as u64) << 32) | input.degree(v).min(u32::MAX as u64), t: 0.0 })
        .collect();
    let parts = target_parts(&state, input.in_degree, rayon::current_num_threads());
    let mut lists_in_page = vec![0u32; pages];
    let mut heap_ids: Vec<u32> = Vec::with_capacity(n);
    // Every cached vertex costs at least one edge and its index.
    let most_chosen = (budget / (INDEX_BYTES_PER_VERTEX + input.edge_bytes)).min(n as u64);
    let mut picked = Picked { chosen: Vec::with_capacity(most_chosen as usize), used: 0 };
    for k in 1..=rounds {
        // r(u): uncached non-empty lists per page.
        lists_in_page.fill(0);
        for vertex in &state {
            if live_degree(vertex.meta) > 0 {
                lists_in_page[page_of(vertex.meta)] += 1;
            }
        }
        let round = Round { offsets: input.out_offsets, lists_in_page: &lists_in_page };
        round.penalties(input, &parts, &mut state)?;
        // T[u] is the shares' sum over d_i(u) (the one factor of the edges' penalties that
        // depends on u alone); lines 12–16 take the highest T per cached byte first, up to k/K
        // of the budget.
        state.par_iter_mut().enumerate().for_each(|(v, vertex)| {
            vertex.t = vertex.t / input.in_degree[v].max(1) as f64 / input.cost(v) as f64;
        });
        heap_ids.clear();
        heap_ids
            .extend((0..n as u32).filter(|&v| live_degree(state[v as usize].meta) > 0 && state[v as usize].t > 0.0));
        let mut heap = ScoreHeap::new(std::mem::take(&mut heap_ids), &state);
        let limit = (budget as u128 * k as u128 / rounds as u128) as u64;
        let before = picked.chosen.len();
        picked.take(input, &mut heap, limit, k == rounds);
        heap_ids = heap.into_ids();
        for &v in &picked.chosen[before..] {
            state[v as usize].meta &= !0xFFFF_FFFF;
        }
    }
    Ok(picked.chosen)
}

/// Ranges of target ids of about equal in-arcs, at most `parts`, cut only where the page
/// changes: the neighbours of a list on one page fall in one range.
fn target_parts(state: &[Vertex], in_degree: &[u32], parts: usize) -> Vec<Range<usize>> {
    let total: u64 = in_degree.iter().map(|&d| d as u64).sum();
    let parts = parts.max(1) as u64;
    let mut cuts = vec![0];
    let mut arcs = 0u64;
    for v in 1..state.len() {
        arcs += in_degree[v - 1] as u64;
        let due = (cuts.len() as u64) < parts && arcs * parts >= total * cuts.len() as u64;
        if due && page_of(state[v].meta) != page_of(state[v - 1].meta) {
            cuts.push(v);
        }
    }
    cuts.push(state.len());
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// One round's penalty pass (Algorithm 1 lines 4–11): for every target `u1`, the sum over its
/// in-edges `(v, u1)` of `1 / (r(u1) · Σ d_o(u2))` (`u2`: `v`'s uncached neighbours on `u1`'s
/// page).
///
/// Each of the target ranges of [`target_parts`] is a task that walks every list in source
/// order and charges its neighbours in the range (a run: neighbours are sorted by id). Each
/// sum thus adds its terms in source order, as one pass over the lists would, and the page
/// groups are whole in one range: the sums are bit-identical for any number of threads.
struct Round<'a> {
    offsets: &'a [u64],
    lists_in_page: &'a [u32],
}

impl Round<'_> {
    /// Sets every vertex's `t` to its sum, reading every list once.
    fn penalties(&self, input: &SelectionInput, parts: &[Range<usize>], state: &mut [Vertex]) -> Result<()> {
        state.iter_mut().for_each(|vertex| vertex.t = 0.0);
        let mut rest = state;
        let mut slices: Vec<(usize, &mut [Vertex])> = Vec::with_capacity(parts.len());
        for part in parts {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(part.len());
            slices.push((part.start, head));
            rest = tail;
        }
        let n = self.offsets.len() - 1;
        let width = input.layout.target_bytes;
        match input.lists {
            Lists::Resident(targets) => self.charge(&mut slices, 0..n, targets, width),
            Lists::Streamed { chunk_edges } => {
                let mut buffer = Vec::new();
                for chunk in list_chunks(self.offsets, 0..n as u64, chunk_edges) {
                    let (v, w) = (chunk.start as usize, chunk.end as usize);
                    let first_edge = self.offsets[v];
                    input.layout.read_encoded_targets(first_edge, self.offsets[w] - first_edge, &mut buffer)?;
                    self.charge(&mut slices, v..w, &buffer, width);
                }
            }
        }
        Ok(())
    }

    /// Charges the lists of `sources`, whose targets (`width` bytes each) are `targets` from
    /// edge `offsets[sources.start]` on, to every part on its own thread.
    fn charge(&self, slices: &mut [(usize, &mut [Vertex])], sources: Range<usize>, targets: &[u8], width: u64) {
        slices.par_iter_mut().for_each(|(first, part)| match width {
            4 => self.charge_part::<4>(*first, part, sources.clone(), targets),
            _ => self.charge_part::<8>(*first, part, sources.clone(), targets),
        });
    }

    /// The part of [`charge`](Self::charge) that falls on the vertices `part`, from `first`.
    fn charge_part<const W: usize>(&self, first: usize, part: &mut [Vertex], sources: Range<usize>, targets: &[u8]) {
        let base = self.offsets[sources.start];
        for v in sources {
            let (s, e) = ((self.offsets[v] - base) as usize, (self.offsets[v + 1] - base) as usize);
            let list = Encoded::<W>(&targets[s * W..e * W]);
            let run = list.within(first, first + part.len());
            if !run.is_empty() {
                self.charge_run(list, run, first, part);
            }
        }
    }

    /// Charges the neighbours at positions `run` of one list (sorted by id, and pages grow with
    /// ids, so neighbours sharing a page are contiguous).
    ///
    /// Their entries are first read in a loop whose loads do not wait on one another, so that
    /// they are fetched together; the grouping below branches on every entry, and each
    /// mispredicted branch would throw away the loads issued after it.
    fn charge_run<const W: usize>(&self, list: Encoded<W>, run: Range<usize>, first: usize, part: &mut [Vertex]) {
        let touched = run.clone().fold(0u64, |x, p| x ^ part[list.get(p) - first].meta);
        std::hint::black_box(touched);
        let mut i = run.start;
        while i < run.end {
            let m = part[list.get(i) - first].meta;
            if live_degree(m) == 0 {
                i += 1;
                continue;
            }
            let page = page_of(m);
            let mut j = i;
            let mut used_edges = 0u64;
            while j < run.end {
                let w = part[list.get(j) - first].meta;
                if page_of(w) != page {
                    break;
                }
                used_edges += live_degree(w);
                j += 1;
            }
            let share = 1.0 / (self.lists_in_page[page].max(1) as f64 * used_edges as f64);
            for p in i..j {
                let target = &mut part[list.get(p) - first];
                if live_degree(target.meta) > 0 {
                    target.t += share;
                }
            }
            i = j;
        }
    }
}

/// One list's targets as stored: `W`-byte little-endian ids in ascending order.
#[derive(Clone, Copy)]
struct Encoded<'a, const W: usize>(&'a [u8]);

impl<const W: usize> Encoded<'_, W> {
    fn len(self) -> usize {
        self.0.len() / W
    }

    fn get(self, i: usize) -> usize {
        let bytes = &self.0[i * W..(i + 1) * W];
        if W == 4 {
            u32::from_le_bytes(bytes.try_into().unwrap()) as usize
        } else {
            u64::from_le_bytes(bytes.try_into().unwrap()) as usize
        }
    }

    /// The positions of the ids in `lo..hi`.
    fn within(self, lo: usize, hi: usize) -> Range<usize> {
        let len = self.len();
        if len == 0 || self.get(len - 1) < lo || self.get(0) >= hi {
            return 0..0;
        }
        let start = if self.get(0) >= lo { 0 } else { self.first_at_least(lo) };
        let end = if self.get(len - 1) < hi { len } else { self.first_at_least(hi) };
        start..end
    }

    /// The first position whose id is at least `x` (`len` if none).
    fn first_at_least(self, x: usize) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid) < x {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The vertices cached so far and their cost.
struct Picked {
    chosen: Vec<u64>,
    used: u64,
}

impl Picked {
    /// Caches candidates in heap order while they fit in `limit`: a round but the last ends at
    /// the first that does not fit, the last skips it and goes on (see the module doc) until
    /// not even a one-edge list would fit.
    fn take(&mut self, input: &SelectionInput, heap: &mut ScoreHeap, limit: u64, last: bool) {
        let smallest = INDEX_BYTES_PER_VERTEX + input.edge_bytes;
        while let Some(vertex) = heap.pop() {
            let v = vertex as usize;
            let c = input.cost(v);
            if self.used + c > limit {
                if !last || limit - self.used < smallest {
                    break;
                }
                continue;
            }
            self.used += c;
            self.chosen.push(v as u64);
        }
    }
}

/// A max-heap of vertex ids by their `t` (ties: the smaller id first), 4 bytes an entry.
struct ScoreHeap<'a> {
    ids: Vec<u32>,
    score: &'a [Vertex],
}

impl<'a> ScoreHeap<'a> {
    fn new(ids: Vec<u32>, score: &'a [Vertex]) -> ScoreHeap<'a> {
        let mut heap = ScoreHeap { ids, score };
        for i in (0..heap.ids.len() / 2).rev() {
            heap.sift_down(i);
        }
        heap
    }

    /// Whether `a` comes out before `b`.
    fn before(&self, a: u32, b: u32) -> bool {
        match self.score[a as usize].t.total_cmp(&self.score[b as usize].t) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => a < b,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let len = self.ids.len();
        loop {
            let mut child = 2 * i + 1;
            if child >= len {
                return;
            }
            if child + 1 < len && self.before(self.ids[child + 1], self.ids[child]) {
                child += 1;
            }
            if !self.before(self.ids[child], self.ids[i]) {
                return;
            }
            self.ids.swap(i, child);
            i = child;
        }
    }

    fn pop(&mut self) -> Option<u32> {
        let top = *self.ids.first()?;
        let last = self.ids.pop().expect("not empty");
        if !self.ids.is_empty() {
            self.ids[0] = last;
            self.sift_down(0);
        }
        Some(top)
    }

    /// The entries' storage, for the next round.
    fn into_ids(self) -> Vec<u32> {
        self.ids
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::store::order::{in_degrees, read_all_offsets, SplitMix64};
    use crate::store::{build_in_memory, Direction, InMemoryGraph, OriginalIds, Store};

    /// A store of `n` vertices and `m` arcs drawn with a skew towards small ids (hubs, and many
    /// lists of one or two edges), duplicates and self-loops kept as drawn.
    fn skewed_store(dir: &std::path::Path, n: u64, m: u64, seed: u64) -> Store {
        let mut rng = SplitMix64::new(seed);
        let mut skewed = |bound: u64| rng.below(bound).min(rng.below(bound)).min(rng.below(bound));
        let edges = (0..m).map(|_| (skewed(n) as usize, skewed(n) as usize, 1.0)).collect();
        let graph =
            InMemoryGraph { vertices: OriginalIds::U64((0..n).collect()), edges, directed: true, weighted: false };
        build_in_memory(dir, &graph).unwrap()
    }

    /// The GVS selection on `store` for the lists read as `lists` on `threads` threads.
    fn gvs_on(store: &Store, page_size: u64, share: f64, rounds: usize, lists: Lists, threads: usize) -> Vec<u64> {
        let layout = store.csr(Direction::Out).unwrap();
        let offsets = read_all_offsets(&layout).unwrap();
        let in_degree = in_degrees(store).unwrap();
        let input = SelectionInput {
            layout: &layout,
            out_offsets: &offsets,
            in_degree: &in_degree,
            page_size,
            budget_bytes: (layout.targets.len() as f64 * share) as u64,
            edge_bytes: 4,
            rounds,
            seed: 0,
            lists,
        };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| select(SelectionMethod::Gvs, &input)).unwrap()
    }

    fn all_targets(store: &Store) -> Vec<u8> {
        store.csr(Direction::Out).unwrap().read_all_encoded_targets().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Resident lists and lists streamed in chunks of any size give the same selection.
        #[test]
        fn resident_and_streamed_gvs_select_the_same(
            n in 2u64..400,
            arcs_per_vertex in 1u64..12,
            seed in 0u64..1000,
            chunk_edges in 1u64..600,
            rounds in 1usize..6,
            page_size in prop::sample::select(vec![512u64, 1024, 4096]),
            share in 0.05f64..0.9,
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let store = skewed_store(&tmp.path().join("s"), n, n * arcs_per_vertex, seed);
            let targets = all_targets(&store);
            let resident = gvs_on(&store, page_size, share, rounds, Lists::Resident(&targets), 1);
            let streamed = gvs_on(&store, page_size, share, rounds, Lists::Streamed { chunk_edges }, 1);
            prop_assert_eq!(resident, streamed);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// With room for every requestable list, the selection takes them all without GVS's
        /// rounds, and that is what the rounds would have taken; a byte less and the rounds run.
        #[test]
        fn room_for_every_list_selects_what_the_rounds_would(
            n in 2u64..400,
            arcs_per_vertex in 1u64..12,
            seed in 0u64..1000,
            rounds in 1usize..6,
            page_size in prop::sample::select(vec![512u64, 1024, 4096]),
            slack in 0u64..64,
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let store = skewed_store(&tmp.path().join("s"), n, n * arcs_per_vertex, seed);
            let layout = store.csr(Direction::Out).unwrap();
            let offsets = read_all_offsets(&layout).unwrap();
            let in_degree = in_degrees(&store).unwrap();
            let mut input = SelectionInput {
                layout: &layout,
                out_offsets: &offsets,
                in_degree: &in_degree,
                page_size,
                budget_bytes: 0,
                edge_bytes: 4,
                rounds,
                seed: 0,
                lists: Lists::Streamed { chunk_edges: 1024 },
            };
            let requestable = (0..n as usize).filter(|&v| in_degree[v] > 0 && offsets[v + 1] > offsets[v]);
            let all_lists: u64 = requestable.map(|v| input.cost(v)).sum();
            input.budget_bytes = StaticCache::bytes_for(n, 0, 0, 0) + all_lists + slack;
            let every = every_requestable_list(&input);
            prop_assert!(every.is_some());
            let mut rounds_take = gvs(&input).unwrap();
            rounds_take.sort_unstable();
            prop_assert_eq!(every.unwrap(), rounds_take.clone());
            prop_assert_eq!(select(SelectionMethod::Gvs, &input).unwrap(), rounds_take);
            input.budget_bytes -= slack + 1;
            prop_assert!(every_requestable_list(&input).is_none());
        }
    }

    /// The penalty pass splits the targets among the threads; the selection does not depend on
    /// their number, resident or streamed.
    #[test]
    fn gvs_selects_the_same_on_any_number_of_threads() {
        for seed in 0..4 {
            let tmp = tempfile::tempdir().unwrap();
            let store = skewed_store(&tmp.path().join("s"), 3000, 24_000, seed);
            let targets = all_targets(&store);
            for (page_size, share, rounds) in [(512, 0.3, 4), (4096, 0.1, 1), (1024, 0.6, 7)] {
                let one = gvs_on(&store, page_size, share, rounds, Lists::Resident(&targets), 1);
                assert!(!one.is_empty(), "seed {seed}, page {page_size}");
                for threads in [2, 3, 8] {
                    for (how, lists) in
                        [("resident", Lists::Resident(&targets)), ("streamed", Lists::Streamed { chunk_edges: 5000 })]
                    {
                        let many = gvs_on(&store, page_size, share, rounds, lists, threads);
                        assert_eq!(many, one, "seed {seed}, page {page_size}, {threads} threads, {how}");
                    }
                }
            }
            // The targets are really split: 8 ranges of about equal in-arcs, cut between pages.
            let layout = store.csr(Direction::Out).unwrap();
            let offsets = read_all_offsets(&layout).unwrap();
            let state: Vec<Vertex> = (0..3000).map(|v| Vertex { meta: (offsets[v] * 4 / 512) << 32, t: 0.0 }).collect();
            let parts = target_parts(&state, &in_degrees(&store).unwrap(), 8);
            assert_eq!(parts.len(), 8, "seed {seed}");
            let page = |v: usize| page_of(state[v].meta);
            assert!(parts.iter().all(|r| r.start == 0 || page(r.start) != page(r.start - 1)));
        }
    }

    /// The paper's Figure 4: `u`'s neighbours x, y, z share a page that a request would use
    /// well, while neighbour `v` sits alone on another page; with room for one list, GVS caches
    /// `v`, while LowD and HighD pick by degree alone.
    #[test]
    fn gvs_caches_the_list_that_would_waste_a_page() {
        // 512-byte pages hold 128 u32 targets. Vertex 0 (u) -> 1, 2, 3 and 10 (v); vertices
        // 1..=9 and 10 have 30 edges each (to vertex 11), so lists 0..=5 start on page 0, lists
        // 6..=9 on page 1 and list 10 alone on page 2.
        let mut edges = vec![(0, 1, 1.0), (0, 2, 1.0), (0, 3, 1.0), (0, 10, 1.0)];
        for v in 1..=10 {
            edges.extend(std::iter::repeat_n((v, 11, 1.0), 30));
        }
        let tmp = tempfile::tempdir().unwrap();
        let graph =
            InMemoryGraph { vertices: OriginalIds::U64((0..12).collect()), edges, directed: true, weighted: false };
        let store = build_in_memory(&tmp.path().join("s"), &graph).unwrap();
        let layout = store.csr(Direction::Out).unwrap();
        let offsets = read_all_offsets(&layout).unwrap();
        let in_degree = in_degrees(&store).unwrap();
        let one_list = StaticCache::bytes_for(12, 0, 0, 0) + 30 * 4 + INDEX_BYTES_PER_VERTEX + 10;
        let input = SelectionInput {
            layout: &layout,
            out_offsets: &offsets,
            in_degree: &in_degree,
            page_size: 512,
            budget_bytes: one_list,
            edge_bytes: 4,
            rounds: 1,
            seed: 0,
            lists: Lists::Streamed { chunk_edges: 1024 },
        };
        assert_eq!(input.page_of(5), 0);
        assert_eq!(input.page_of(6), 1);
        assert_eq!(input.page_of(10), 2);
        assert_eq!(select(SelectionMethod::Gvs, &input).unwrap(), vec![10]);
        assert_eq!(select(SelectionMethod::LowD, &input).unwrap(), vec![0]);
        assert_eq!(select(SelectionMethod::HighD, &input).unwrap(), vec![1]);
        // Room for everything: every non-empty list that can be requested is taken.
        let all = SelectionInput { budget_bytes: 1 << 20, rounds: 3, ..input };
        assert_eq!(select(SelectionMethod::Gvs, &all).unwrap(), vec![1, 2, 3, 10]);
    }
}
