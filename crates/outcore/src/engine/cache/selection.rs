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
//! Lists are read sequentially once per round; the time is `O(K (|E| + |V|))`, the paper's
//! complexity without its incremental re-computation. The selection is saved in the store
//! (`cache/selection-*.u64`, registered as a layout) and reused for the same method, page size
//! and cache size.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::static_cache::{StaticCache, INDEX_BYTES_PER_VERTEX};
use crate::error::{Error, Result};
use crate::store::order::{scan_adjacency, shuffle};
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
    /// Edges read at once while scanning the lists.
    pub chunk_edges: u64,
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

/// Memory a selection needs while it runs (GVS: penalties, in-degrees, marks, heap, page
/// counts and the scan buffers of `chunk_edges` edges).
pub fn working_bytes(method: SelectionMethod, vertices: u64, pages: u64, chunk_edges: u64) -> u64 {
    match method {
        SelectionMethod::Gvs => vertices * (8 + 4 + 8 + 16 + 8) + pages * 4 + chunk_edges * 12,
        SelectionMethod::None => 0,
        _ => vertices * (4 + 16),
    }
}

/// The largest scan chunk (edges) that keeps GVS within `available` bytes, at least 1024.
pub fn chunk_edges_within(vertices: u64, pages: u64, available: u64) -> u64 {
    let fixed = working_bytes(SelectionMethod::Gvs, vertices, pages, 0);
    (available.saturating_sub(fixed) / 12).clamp(1024, crate::store::order::SCAN_CHUNK_EDGES)
}

/// Selects vertices; returns them sorted ascending.
pub fn select(method: SelectionMethod, input: &SelectionInput) -> Result<Vec<u64>> {
    let mut chosen = match method {
        SelectionMethod::None => Vec::new(),
        SelectionMethod::Gvs => gvs(input)?,
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

/// A vertex with its penalty per cached byte, ordered for a max-heap (ties: smaller id first).
struct Candidate {
    score: f64,
    vertex: u32,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.vertex.cmp(&self.vertex))
    }
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
    // Per vertex, packed for one memory access in the hot loop: its page (high 32 bits) and
    // its list length (low 32 bits, saturated), 0 once cached or when it has no list: both
    // kinds are ignored by the penalty alike.
    let mut meta: Vec<u64> =
        (0..n).map(|v| ((input.page_of(v) as u64) << 32) | input.degree(v).min(u32::MAX as u64)).collect();
    let page_of = |m: u64| (m >> 32) as usize;
    let live_degree = |m: u64| m & 0xFFFF_FFFF;
    let mut chosen: Vec<u64> = Vec::new();
    let mut used = 0u64;
    let mut penalty = vec![0f64; n];
    let mut lists_in_page = vec![0u32; pages];
    for k in 1..=rounds {
        // r(u): uncached non-empty lists per page.
        lists_in_page.fill(0);
        for &m in &meta {
            if live_degree(m) > 0 {
                lists_in_page[page_of(m)] += 1;
            }
        }
        // T[u1] (lines 4–11): one sequential pass over all lists. A vertex's neighbours are
        // sorted by id and pages grow with ids, so neighbours sharing a page are contiguous.
        penalty.fill(0.0);
        scan_adjacency(input.layout, input.out_offsets, 0..n as u64, input.chunk_edges, |_, neighbours| {
            let mut i = 0;
            while i < neighbours.len() {
                let m = meta[neighbours[i] as usize];
                if live_degree(m) == 0 {
                    i += 1;
                    continue;
                }
                let page = page_of(m);
                let mut j = i;
                let mut used_edges = 0u64;
                while j < neighbours.len() {
                    let w = meta[neighbours[j] as usize];
                    if page_of(w) != page {
                        break;
                    }
                    used_edges += live_degree(w);
                    j += 1;
                }
                let share = 1.0 / (lists_in_page[page].max(1) as f64 * used_edges as f64);
                for &w in &neighbours[i..j] {
                    let w = w as usize;
                    if live_degree(meta[w]) > 0 {
                        penalty[w] += share / input.in_degree[w].max(1) as f64;
                    }
                }
                i = j;
            }
            Ok(())
        })?;
        // Lines 12–16: highest penalty per cached byte first, up to k/K of the budget.
        let round_limit = (budget as u128 * k as u128 / rounds as u128) as u64;
        let mut heap: BinaryHeap<Candidate> = (0..n)
            .filter(|&v| live_degree(meta[v]) > 0 && penalty[v] > 0.0)
            .map(|v| Candidate { score: penalty[v] / input.cost(v) as f64, vertex: v as u32 })
            .collect();
        while let Some(Candidate { vertex, .. }) = heap.pop() {
            let v = vertex as usize;
            let c = input.cost(v);
            if used + c > round_limit {
                if k < rounds {
                    break;
                }
                continue;
            }
            meta[v] &= !0xFFFF_FFFF;
            used += c;
            chosen.push(v as u64);
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::order::{in_degrees, read_all_offsets};
    use crate::store::{build_in_memory, Direction, InMemoryGraph, OriginalIds};

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
            edges.extend(std::iter::repeat((v, 11, 1.0)).take(30));
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
            chunk_edges: 1024,
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
