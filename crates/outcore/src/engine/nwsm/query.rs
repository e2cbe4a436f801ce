//! The k-walk neighborhood query API (TurboGraph++ §2.1–2.3, Figure 6) and its in-memory
//! executor, the oracle the windowed executor is tested against.
//!
//! A query enumerates walks of length ≤ k (k = [`NeighborhoodQuery::levels`], 1 or 2 here)
//! level by level: `adj_scatter(1, ..)` sees each starting vertex with its adjacency list and
//! marks the vertices of interest of level 2 ([`Emitter::mark`]); `adj_scatter(2, ..)` sees each
//! marked vertex `v` with its list and reaches back to its level-1 parents
//! ([`NeighborhoodView::parent_list`]) and to the common neighbours of a parent and `v`
//! ([`NeighborhoodView::common_neighbors`], a fast sorted intersection). Updates sent to any
//! vertex ([`Emitter::update`]) are folded with `vertex_gather`; afterwards `vertex_apply` turns
//! each vertex's gathered value into its output. Figure 19 (triangle counting) reads the same in
//! `algo/tc.rs`.
//!
//! Adjacency lists are *full* (paper §2.2 "full adjacency list mode"): every neighbour of the
//! underlying simple undirected graph once — out- and in-neighbours merged, self-loops and
//! duplicate arcs dropped — sorted by id, each entry ([`Nbr`]) saying which arcs join the pair,
//! so that directed measures (Graphalytics LCC) can count arcs while walks ignore direction.
//! Partial lists (the edges of one page at a time) are what pages hold; engines merge them.
//!
//! Vertex ids seen by a query are engine ids: dense store ids on the in-memory engine, BBP ids
//! on nwsm (consecutive per rank, descending degree). A query may only rely on them being a
//! total order (the partial-order constraint u < v < w); `vertex_apply` gets store ids.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::store::{InMemoryCsr, Store};
use crate::VertexId;

/// One entry of a full adjacency list: a neighbour id (30 bits) and the arcs joining it to the
/// list's owner (bit 1: owner → neighbour, bit 0: neighbour → owner). Entries sort by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Nbr(pub u32);

impl Nbr {
    /// Graphs with this many vertices or more cannot be packed into entries.
    pub const MAX_VERTICES: u64 = 1 << 30;

    pub fn new(id: VertexId, owner_to_neighbor: bool, neighbor_to_owner: bool) -> Nbr {
        debug_assert!(id < Self::MAX_VERTICES);
        Nbr(((id as u32) << 2) | ((owner_to_neighbor as u32) << 1) | neighbor_to_owner as u32)
    }

    pub fn id(self) -> VertexId {
        (self.0 >> 2) as VertexId
    }

    /// Whether an arc goes from the list's owner to this neighbour.
    pub fn is_out(self) -> bool {
        self.0 & 2 != 0
    }

    /// Number of arcs between the owner and this neighbour (1 or 2).
    pub fn arcs(self) -> u64 {
        ((self.0 >> 1) & 1) as u64 + (self.0 & 1) as u64
    }

    /// The same entry with the direction bits of `other` or-ed in (a duplicate neighbour).
    fn merged(self, other: Nbr) -> Nbr {
        Nbr(self.0 | (other.0 & 3))
    }
}

/// Whether scatter sees whole adjacency lists or the part of a list stored in one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdjacencyMode {
    /// Parts of lists (edge-at-a-time computations: PageRank, SSSP). Not used by tc/lcc.
    Partial,
    /// Whole lists, needed for intersections (triangles, clustering coefficient).
    Full,
}

/// A value folded per vertex by `vertex_gather`, spillable to disk as 8 bytes.
pub trait GatherValue: Copy + Default + Send + Sync + 'static {
    fn to_bits(self) -> u64;
    fn from_bits(bits: u64) -> Self;
}

impl GatherValue for u64 {
    fn to_bits(self) -> u64 {
        self
    }
    fn from_bits(bits: u64) -> Self {
        bits
    }
}

impl GatherValue for f64 {
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

/// A value gathered by minimum (label and distance propagation): `vertex_gather` keeps the
/// smaller with [`Min::min`], and the default, the gather's identity, is the largest value
/// (`u64::MAX`, `f64::INFINITY`: nothing gathered).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Min<T>(pub T);

impl Default for Min<u64> {
    fn default() -> Self {
        Min(u64::MAX)
    }
}

impl Default for Min<f64> {
    fn default() -> Self {
        Min(f64::INFINITY)
    }
}

impl Min<u64> {
    pub fn min(self, other: Self) -> Self {
        Min(self.0.min(other.0))
    }
}

impl Min<f64> {
    pub fn min(self, other: Self) -> Self {
        Min(self.0.min(other.0))
    }
}

impl<T: GatherValue> GatherValue for Min<T>
where
    Min<T>: Default,
{
    fn to_bits(self) -> u64 {
        self.0.to_bits()
    }
    fn from_bits(bits: u64) -> Self {
        Min(T::from_bits(bits))
    }
}

/// What scatter functions can read: the lists loaded in the current windows.
pub trait NeighborhoodView {
    /// The full adjacency list of `v`, which must be in a current window.
    fn adjacency(&self, v: VertexId) -> &[Nbr];

    /// The parents of `v` at `level`: the vertices of the level's current window adjacent to
    /// `v` (backward traversal over `v`'s own list). Entries are as in `v`'s list.
    fn parent_list(&self, level: usize, v: VertexId) -> &[Nbr];

    /// The store id (dense id, as `vertex_apply` gets it) of engine id `v`, for one-level queries
    /// that read per-vertex state kept in store-id order (PageRank, WCC, SSSP).
    fn store_id(&self, v: VertexId) -> VertexId {
        v
    }

    /// Common neighbours of `u` and `v` (both in current windows), ascending.
    fn common_neighbors(&self, u: VertexId, v: VertexId) -> CommonNeighbors<'_> {
        CommonNeighbors::new(self.adjacency(u), self.adjacency(v))
    }

    /// Common neighbours of `u` and `v` with ids above `after` (a partial-order constraint
    /// applied before intersecting: only the lists' tails above `after` are compared).
    fn common_neighbors_after(&self, u: VertexId, v: VertexId, after: VertexId) -> CommonNeighbors<'_> {
        let (a, b) = (self.adjacency(u), self.adjacency(v));
        let tail = |list: &'_ [Nbr]| list.partition_point(|n| n.id() <= after);
        CommonNeighbors::new(&a[tail(a)..], &b[tail(b)..])
    }
}

/// What scatter functions can do: mark vertices of interest, send updates, add to the total.
pub trait Emitter<V> {
    /// Marks `v` as a vertex of interest of `level` (`voi[level].Mark(v)`).
    fn mark(&mut self, level: usize, v: VertexId);
    /// Sends `value` to `target`, folded there with `vertex_gather`.
    fn update(&mut self, target: VertexId, value: V);
    /// Adds to the query's global sum (Figure 19's `tri_cnts`, reduced over ranks).
    fn aggregate(&mut self, amount: u64);
}

/// A k-walk neighborhood query (Figure 6).
pub trait NeighborhoodQuery: Sync + Send {
    /// What updates carry and vertices gather.
    type Value: GatherValue;
    /// What `vertex_apply` makes of a vertex's gathered value (8 bytes, to travel between ranks).
    type Output: GatherValue;

    /// k: the longest walks enumerated (1 or 2).
    fn levels(&self) -> usize;

    fn mode(&self) -> AdjacencyMode {
        AdjacencyMode::Full
    }

    /// `adj_scatter[level]`: called with each vertex `u` of the level's stream and its list.
    fn adj_scatter(
        &self,
        level: usize,
        view: &dyn NeighborhoodView,
        out: &mut dyn Emitter<Self::Value>,
        u: VertexId,
        adj: &[Nbr],
    );

    /// `vertex_gather`: folds an update into a vertex's gathered value (commutative, associative;
    /// `Value::default()` is the identity).
    fn vertex_gather(&self, gathered: Self::Value, update: Self::Value) -> Self::Value;

    /// `vertex_apply`: the output of vertex `vertex` (store id) of full degree `degree`.
    fn vertex_apply(&self, vertex: VertexId, degree: u64, gathered: Self::Value) -> Self::Output;
}

/// Per-vertex outputs (store-id order) and the aggregated global sum.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult<O> {
    pub values: Vec<O>,
    pub aggregate: u64,
}

/// Iterator over the intersection of two sorted lists: yields `(entry in the first list, entry
/// in the second)` for each common id. Merges when the lists have similar lengths and gallops
/// through the longer one (exponential then binary search) when one is much shorter.
pub struct CommonNeighbors<'a> {
    a: &'a [Nbr],
    b: &'a [Nbr],
    gallop: bool,
}

impl<'a> CommonNeighbors<'a> {
    /// Lists whose lengths differ by more than this factor are intersected by galloping.
    const GALLOP_RATIO: usize = 16;

    pub fn new(a: &'a [Nbr], b: &'a [Nbr]) -> Self {
        let gallop = a.len().min(b.len()) * Self::GALLOP_RATIO < a.len().max(b.len());
        CommonNeighbors { a, b, gallop }
    }
}

/// Index of the first entry of `list` with id ≥ `id`, searching exponentially from the start.
fn gallop_to(list: &[Nbr], id: VertexId) -> usize {
    let mut bound = 1;
    while bound < list.len() && list[bound].id() < id {
        bound *= 2;
    }
    let lo = bound / 2;
    let hi = (bound + 1).min(list.len());
    lo + list[lo..hi].partition_point(|n| n.id() < id)
}

impl Iterator for CommonNeighbors<'_> {
    type Item = (Nbr, Nbr);

    fn next(&mut self) -> Option<(Nbr, Nbr)> {
        while let (Some(&x), Some(&y)) = (self.a.first(), self.b.first()) {
            match x.id().cmp(&y.id()) {
                Ordering::Equal => {
                    self.a = &self.a[1..];
                    self.b = &self.b[1..];
                    return Some((x, y));
                }
                Ordering::Less if self.gallop => self.a = &self.a[gallop_to(self.a, y.id())..],
                Ordering::Less => self.a = &self.a[1..],
                Ordering::Greater if self.gallop => self.b = &self.b[gallop_to(self.b, x.id())..],
                Ordering::Greater => self.b = &self.b[1..],
            }
        }
        None
    }
}

/// The full list of a vertex from its out- and in-lists (any order, duplicates, self-loops):
/// sorted by id, one entry per neighbour, direction bits merged. `out` is cleared first.
pub fn full_list(owner: VertexId, outs: &[VertexId], ins: &[VertexId], out: &mut Vec<Nbr>) {
    out.clear();
    out.extend(outs.iter().filter(|&&t| t != owner).map(|&t| Nbr::new(t, true, false)));
    out.extend(ins.iter().filter(|&&s| s != owner).map(|&s| Nbr::new(s, false, true)));
    out.sort_unstable();
    out.dedup_by(|next, kept| {
        let same = next.id() == kept.id();
        if same {
            *kept = kept.merged(*next);
        }
        same
    });
}

/// Checks that the store's ids fit [`Nbr`] entries.
pub fn check_vertex_count(store: &Store) -> Result<()> {
    if store.num_vertices() >= Nbr::MAX_VERTICES {
        return Err(Error::invalid(format!(
            "neighborhood queries pack vertex ids in 30 bits; this graph has {} vertices (at most {})",
            store.num_vertices(),
            Nbr::MAX_VERTICES - 1
        )));
    }
    Ok(())
}

/// In-memory execution of Figure 3, the oracle for the windowed engine. Every vertex `u` is its
/// own level-1 window; the vertices it marks are its level-2 stream, visited in ascending id.
/// `in_csr` is `None` on undirected stores, whose `csr-out` holds both arcs of every edge.
///
/// Two-level queries (the intersection queries: tc, lcc) run on ids relabelled by ascending
/// degree, so that the partial order u < v < w starts each triangle at its lowest-degree corner
/// and hubs, ranked last, never scan their long lists against every neighbour (Schank and
/// Wagner 2005; the degree order of TurboGraph++'s BBP ids, §4). Their windows run in parallel:
/// each rayon worker pulls chunks of vertices from a shared counter (work stealing at chunk
/// grain) and gathers into its own array; the arrays are folded afterwards. One-level queries
/// keep store ids and one sequential pass, so float sums (PageRank) stay deterministic.
pub fn run_in_memory<Q: NeighborhoodQuery>(
    out_csr: &InMemoryCsr,
    in_csr: Option<&InMemoryCsr>,
    query: &Q,
) -> Result<QueryResult<Q::Output>> {
    let lists = FlatLists::full(out_csr, in_csr);
    let n = lists.len();
    if query.levels() < 2 {
        let mut state = OracleState::new(n, query);
        for u in 0..n as u64 {
            scatter_window(query, &lists, None, u, &mut state);
        }
        let values = (0..n).map(|v| query.vertex_apply(v as u64, lists.degree(v as u64), state.gathered[v])).collect();
        return Ok(QueryResult { values, aggregate: state.aggregate });
    }
    let (ranked, order) = lists.relabelled_by_degree();
    drop(lists);
    let (gathered, aggregate) = run_windows_parallel(query, &ranked, &order);
    let mut values = vec![Q::Output::default(); n];
    order.iter().enumerate().for_each(|(r, &v)| {
        values[v as usize] = query.vertex_apply(v, ranked.degree(r as u64), gathered[r]);
    });
    Ok(QueryResult { values, aggregate })
}

/// Vertices a worker takes from the shared counter at a time.
const WINDOW_CHUNK: usize = 64;

/// Runs every vertex's window on all rayon threads; returns the folded gathered values (by
/// engine id) and the aggregate.
fn run_windows_parallel<Q: NeighborhoodQuery>(
    query: &Q,
    lists: &FlatLists,
    store_ids: &[VertexId],
) -> (Vec<Q::Value>, u64) {
    let n = lists.len();
    let next = AtomicUsize::new(0);
    let states: Vec<(Vec<Q::Value>, u64)> = (0..rayon::current_num_threads())
        .into_par_iter()
        .map(|_| {
            let mut state = OracleState::new(n, query);
            loop {
                let start = next.fetch_add(WINDOW_CHUNK, AtomicOrdering::Relaxed);
                if start >= n {
                    break;
                }
                for u in start..(start + WINDOW_CHUNK).min(n) {
                    scatter_window(query, lists, Some(store_ids), u as VertexId, &mut state);
                }
            }
            (state.gathered, state.aggregate)
        })
        .collect();
    let aggregate = states.iter().map(|s| s.1).sum();
    let mut states = states.into_iter().map(|s| s.0);
    let mut gathered = states.next().unwrap_or_else(|| vec![Q::Value::default(); n]);
    for other in states {
        gathered.par_iter_mut().zip(other.par_iter()).for_each(|(g, &o)| *g = query.vertex_gather(*g, o));
    }
    (gathered, aggregate)
}

/// Level 1 on the window {u}, then level 2 on the vertices it marked.
fn scatter_window<Q: NeighborhoodQuery>(
    query: &Q,
    lists: &FlatLists,
    store_ids: Option<&[VertexId]>,
    u: VertexId,
    state: &mut OracleState<'_, Q>,
) {
    let view = OracleView { lists, window: u, store_ids };
    state.marked.clear();
    query.adj_scatter(1, &view, state, u, lists.list(u));
    if query.levels() >= 2 {
        let mut marked = std::mem::take(&mut state.marked);
        marked.sort_unstable();
        marked.dedup();
        for &v in &marked {
            query.adj_scatter(2, &view, state, v, lists.list(v));
        }
        state.marked = marked;
    }
}

/// The full lists of all vertices in one array (CSR): one allocation, lists adjacent in memory.
struct FlatLists {
    offsets: Vec<usize>,
    entries: Vec<Nbr>,
}

impl FlatLists {
    /// Full lists in store ids, built in parallel.
    fn full(out_csr: &InMemoryCsr, in_csr: Option<&InMemoryCsr>) -> FlatLists {
        let lists: Vec<Vec<Nbr>> = (0..out_csr.num_vertices())
            .into_par_iter()
            .map(|v| {
                let ins = in_csr.map_or(out_csr.neighbors(v), |c| c.neighbors(v));
                let mut list = Vec::new();
                full_list(v, out_csr.neighbors(v), ins, &mut list);
                list
            })
            .collect();
        FlatLists::concat(lists)
    }

    fn concat(lists: Vec<Vec<Nbr>>) -> FlatLists {
        let mut offsets = Vec::with_capacity(lists.len() + 1);
        offsets.push(0);
        let mut entries = Vec::with_capacity(lists.iter().map(Vec::len).sum());
        for list in lists {
            entries.extend_from_slice(&list);
            offsets.push(entries.len());
        }
        FlatLists { offsets, entries }
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn list(&self, v: VertexId) -> &[Nbr] {
        &self.entries[self.offsets[v as usize]..self.offsets[v as usize + 1]]
    }

    fn degree(&self, v: VertexId) -> u64 {
        (self.offsets[v as usize + 1] - self.offsets[v as usize]) as u64
    }

    /// The same lists with vertex `order[r]` renamed `r`, where `order` sorts vertices by
    /// (degree, store id); returns them and `order` (engine id → store id).
    fn relabelled_by_degree(&self) -> (FlatLists, Vec<VertexId>) {
        let n = self.len();
        let mut order: Vec<VertexId> = (0..n as VertexId).collect();
        order.par_sort_unstable_by_key(|&v| (self.degree(v), v));
        let mut rank = vec![0u32; n];
        order.iter().enumerate().for_each(|(r, &v)| rank[v as usize] = r as u32);
        let lists: Vec<Vec<Nbr>> = order
            .par_iter()
            .map(|&v| {
                let mut list: Vec<Nbr> =
                    self.list(v).iter().map(|e| Nbr((rank[e.id() as usize] << 2) | (e.0 & 3))).collect();
                list.sort_unstable();
                list
            })
            .collect();
        (FlatLists::concat(lists), order)
    }
}

struct OracleView<'a> {
    lists: &'a FlatLists,
    /// The level-1 window: one vertex.
    window: VertexId,
    /// Store id of each engine id, when ids were relabelled.
    store_ids: Option<&'a [VertexId]>,
}

impl NeighborhoodView for OracleView<'_> {
    fn adjacency(&self, v: VertexId) -> &[Nbr] {
        self.lists.list(v)
    }
    fn parent_list(&self, _level: usize, v: VertexId) -> &[Nbr] {
        let list = self.lists.list(v);
        let i = list.partition_point(|n| n.id() < self.window);
        let j = list.partition_point(|n| n.id() <= self.window);
        &list[i..j]
    }
    fn store_id(&self, v: VertexId) -> VertexId {
        self.store_ids.map_or(v, |ids| ids[v as usize])
    }
}

struct OracleState<'q, Q: NeighborhoodQuery> {
    gathered: Vec<Q::Value>,
    marked: Vec<VertexId>,
    aggregate: u64,
    query: &'q Q,
}

impl<'q, Q: NeighborhoodQuery> OracleState<'q, Q> {
    fn new(n: usize, query: &'q Q) -> Self {
        OracleState { gathered: vec![Q::Value::default(); n], marked: Vec::new(), aggregate: 0, query }
    }
}

impl<Q: NeighborhoodQuery> Emitter<Q::Value> for OracleState<'_, Q> {
    fn mark(&mut self, _level: usize, v: VertexId) {
        self.marked.push(v);
    }
    fn update(&mut self, target: VertexId, value: Q::Value) {
        let slot = &mut self.gathered[target as usize];
        *slot = self.query.vertex_gather(*slot, value);
    }
    fn aggregate(&mut self, amount: u64) {
        self.aggregate += amount;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[u64]) -> Vec<Nbr> {
        ids.iter().map(|&i| Nbr::new(i, true, true)).collect()
    }

    #[test]
    fn intersection_merges_and_gallops() {
        let a = list(&[1, 3, 5, 7, 9, 11]);
        let b = list(&[2, 3, 4, 9, 10, 11, 12]);
        let common: Vec<u64> = CommonNeighbors::new(&a, &b).map(|(x, _)| x.id()).collect();
        assert_eq!(common, vec![3, 9, 11]);
        let long = list(&(0..1000).map(|i| i * 3).collect::<Vec<_>>());
        let short = list(&[0, 4, 299, 300, 2997, 5000]);
        let common: Vec<u64> = CommonNeighbors::new(&short, &long).map(|(x, _)| x.id()).collect();
        assert_eq!(common, vec![0, 300, 2997]);
        let common: Vec<u64> = CommonNeighbors::new(&long, &short).map(|(_, y)| y.id()).collect();
        assert_eq!(common, vec![0, 300, 2997]);
        struct Two(Vec<Nbr>, Vec<Nbr>);
        impl NeighborhoodView for Two {
            fn adjacency(&self, v: VertexId) -> &[Nbr] {
                if v == 0 {
                    &self.0
                } else {
                    &self.1
                }
            }
            fn parent_list(&self, _: usize, _: VertexId) -> &[Nbr] {
                &[]
            }
        }
        let view = Two(long.clone(), short.clone());
        let after: Vec<u64> = view.common_neighbors_after(0, 1, 300).map(|(x, _)| x.id()).collect();
        assert_eq!(after, vec![2997]);
    }

    #[test]
    fn full_lists_merge_directions_and_drop_loops() {
        let mut out = Vec::new();
        full_list(5, &[7, 2, 5, 7], &[2, 9], &mut out);
        let seen: Vec<(u64, u64)> = out.iter().map(|n| (n.id(), n.arcs())).collect();
        assert_eq!(seen, vec![(2, 2), (7, 1), (9, 1)]);
        assert_eq!(out[1].0 & 3, 0b10);
        assert_eq!(out[2].0 & 3, 0b01);
    }
}
