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
//! on nwsm (consecutive per rank, ascending degree). A query may only rely on them being a
//! total order (the partial-order constraint u < v < w); `vertex_apply` gets store ids.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use rayon::prelude::*;

use super::ColumnRead;
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

    /// Entry `v` (engine id) of the query's [`NeighborhoodQuery::column`], for one-level queries.
    fn column(&self, v: VertexId) -> u64 {
        panic!("vertex {v}: the query has no column, or is not a one-level query")
    }

    /// Common neighbours of `u` and `v` (both in current windows), ascending.
    fn common_neighbors(&self, u: VertexId, v: VertexId) -> CommonNeighbors<'_> {
        CommonNeighbors::new(self.adjacency(u), self.adjacency(v))
    }

    /// Common neighbours of `u` and `v` with ids above `after` (a partial-order constraint
    /// applied before intersecting: only the lists' tails above `after` are compared).
    fn common_neighbors_after(&self, u: VertexId, v: VertexId, after: VertexId) -> CommonNeighbors<'_> {
        CommonNeighbors::new(tail_after(self.adjacency(u), after), tail_after(self.adjacency(v), after))
    }
}

/// The entries of a sorted list with ids above `after`.
pub fn tail_after(list: &[Nbr], after: VertexId) -> &[Nbr] {
    &list[list.partition_point(|n| n.id() <= after)..]
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

    /// A per-vertex column in store order that a one-level query's `adj_scatter` reads for any
    /// vertex, its own or a neighbour's, through [`NeighborhoodView::column`] by engine id: the
    /// values of the last round of a round-based algorithm (CDLP labels, k-core estimates).
    /// Engines that number vertices their own way keep a copy in their order (nwsm: 8 B per
    /// vertex, in its plan), so that a neighbour's value is one read and not a store-id lookup
    /// and then a read, and with BBP ids (ascending degree) the hubs that most lists name lie
    /// together. Default: none.
    fn column(&self) -> Option<&[u64]> {
        None
    }
}

/// Per-vertex outputs (store-id order) and the aggregated global sum.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult<O> {
    pub values: Vec<O>,
    pub aggregate: u64,
}

/// Iterator over the intersection of two sorted lists: yields `(entry in the first list, entry
/// in the second)` for each common id. Merges when the lists have similar lengths and gallops
/// through the longer one (exponential then binary search) when one is much shorter; or, when
/// the first list is marked in a table ([`CommonNeighbors::marked`]), looks each entry of the
/// second up in it.
pub struct CommonNeighbors<'a> {
    a: &'a [Nbr],
    b: &'a [Nbr],
    gallop: bool,
    /// The second list as a lookup table (then `b` holds the first list).
    marks: Option<&'a [u8]>,
}

impl<'a> CommonNeighbors<'a> {
    /// Lists whose lengths differ by more than this factor are intersected by galloping.
    const GALLOP_RATIO: usize = 16;

    pub fn new(a: &'a [Nbr], b: &'a [Nbr]) -> Self {
        let gallop = a.len().min(b.len()) * Self::GALLOP_RATIO < a.len().max(b.len());
        CommonNeighbors { a, b, gallop, marks: None }
    }

    /// The intersection of `a` with a list marked in `marks` (`marks[w]` = the direction bits
    /// of `w`'s entry, 0 where `w` is not in it): one table lookup per entry of `a`, so the
    /// marked list is never scanned. Worth it when one list meets many others, as a level-2
    /// vertex's list meets each of its parents' lists.
    pub fn marked_second(a: &'a [Nbr], marks: &'a [u8]) -> Self {
        CommonNeighbors { a: &[], b: a, gallop: false, marks: Some(marks) }
    }
}

/// Where `marks` has `w`, its entry as the marked list holds it.
fn marked_entry(marks: &[u8], w: Nbr) -> Option<Nbr> {
    let bits = marks[(w.0 >> 2) as usize];
    (bits != 0).then_some(Nbr((w.0 & !3) | bits as u32))
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

    /// The intersection as one tight loop (what `for_each`, `count` and `sum` use): a merge
    /// that advances both cursors without a branch per step, or, for skewed lengths, a gallop
    /// through the longer list per entry of the shorter. tc and lcc spend most of their time
    /// here, so they iterate internally rather than through `next`.
    fn fold<B, F: FnMut(B, (Nbr, Nbr)) -> B>(self, init: B, mut f: F) -> B {
        let (a, b) = (self.a, self.b);
        if let Some(marks) = self.marks {
            return b.iter().fold(init, |acc, &x| match marked_entry(marks, x) {
                Some(y) => f(acc, (x, y)),
                None => acc,
            });
        }
        if !self.gallop {
            return merge_fold(a, b, init, f);
        }
        let mut acc = init;
        if a.len() <= b.len() {
            let mut rest = b;
            for &x in a {
                rest = &rest[gallop_to(rest, x.id())..];
                match rest.first() {
                    None => break,
                    Some(&y) if y.id() == x.id() => acc = f(acc, (x, y)),
                    Some(_) => {}
                }
            }
        } else {
            let mut rest = a;
            for &y in b {
                rest = &rest[gallop_to(rest, y.id())..];
                match rest.first() {
                    None => break,
                    Some(&x) if x.id() == y.id() => acc = f(acc, (x, y)),
                    Some(_) => {}
                }
            }
        }
        acc
    }

    fn next(&mut self) -> Option<(Nbr, Nbr)> {
        if let Some(marks) = self.marks {
            while let Some((&x, rest)) = self.b.split_first() {
                self.b = rest;
                if let Some(y) = marked_entry(marks, x) {
                    return Some((x, y));
                }
            }
            return None;
        }
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

/// Merge intersection of two sorted lists: each step compares one entry of each and advances
/// the cursor(s) holding the smaller id by arithmetic, so the only branch that mispredicts is the
/// rarer one taken on a common id.
fn merge_fold<B, F: FnMut(B, (Nbr, Nbr)) -> B>(a: &[Nbr], b: &[Nbr], init: B, mut f: F) -> B {
    let mut acc = init;
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let (xi, yi) = (x.0 >> 2, y.0 >> 2);
        if xi == yi {
            acc = f(acc, (x, y));
        }
        i += (xi <= yi) as usize;
        j += (yi <= xi) as usize;
    }
    acc
}

/// The full list of a vertex from its out- and in-lists (any order, duplicates, self-loops):
/// sorted by id, one entry per neighbour, direction bits merged. `out` is cleared first. Store
/// lists are sorted, so this is a merge; lists in any other order are sorted first.
pub fn full_list(owner: VertexId, outs: &[VertexId], ins: &[VertexId], out: &mut Vec<Nbr>) {
    out.clear();
    if outs.is_sorted() && ins.is_sorted() {
        let (mut i, mut j) = (0, 0);
        while i < outs.len() || j < ins.len() {
            let outgoing = j == ins.len() || (i < outs.len() && outs[i] <= ins[j]);
            let t = if outgoing { outs[i] } else { ins[j] };
            i += outgoing as usize;
            j += !outgoing as usize;
            if t != owner {
                push_merged(out, Nbr::new(t, outgoing, !outgoing));
            }
        }
        return;
    }
    let mut all: Vec<Nbr> = list_entries(owner, outs, true).chain(list_entries(owner, ins, false)).collect();
    all.sort_unstable();
    all.into_iter().for_each(|e| push_merged(out, e));
}

/// The entries of an out- (`outgoing`) or in-list of `owner`, self-loops left out.
fn list_entries(owner: VertexId, list: &[VertexId], outgoing: bool) -> impl Iterator<Item = Nbr> + '_ {
    list.iter().filter(move |&&t| t != owner).map(move |&t| Nbr::new(t, outgoing, !outgoing))
}

/// Appends `entry` to a list sorted by id, or merges its direction bits into the last entry when
/// that is the same neighbour.
fn push_merged(list: &mut Vec<Nbr>, entry: Nbr) {
    match list.last_mut() {
        Some(last) if last.id() == entry.id() => *last = last.merged(entry),
        _ => list.push(entry),
    }
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

/// In-memory execution of Figure 3, the oracle for the windowed engine.
/// `in_csr` is `None` on undirected stores, whose `csr-out` holds both arcs of every edge.
///
/// One-level queries (PageRank, WCC, SSSP rounds) make every vertex `u` its own window and run
/// in one sequential pass in store ids, so float sums stay deterministic.
///
/// Two-level queries (the intersection queries: tc, lcc) run with the whole graph as the one
/// level-1 window, which is what the windowed engine does when the budget holds everything: level
/// 1 marks its vertices of interest, then the marked vertices `v` stream through level 2 in
/// parallel, each with all of its neighbours as parents. Ids are relabelled by ascending degree,
/// so the partial order u < v < w starts each triangle at its lowest-degree corner and hubs,
/// ranked last, never scan their long lists against every neighbour (Schank and Wagner 2005; the
/// degree order of TurboGraph++'s BBP ids, §4). At level 2 the view marks `v`'s list in a byte
/// table, so each intersection of a parent's list with it is one lookup per entry of the
/// parent's tail: Σ over arcs (u, v) of |N(u) above v|, the cost of GAP's ordered count.
pub fn run_in_memory<Q: NeighborhoodQuery>(
    out_csr: &InMemoryCsr,
    in_csr: Option<&InMemoryCsr>,
    query: &Q,
) -> Result<QueryResult<Q::Output>> {
    let lists = FlatLists::full(out_csr, in_csr);
    let n = lists.len();
    if query.levels() < 2 {
        let column = query.column().map(ColumnRead::Direct);
        let mut state = OracleState::new(n, query);
        for u in 0..n as u64 {
            let view = OracleView { lists: &lists, window: Window::One(u), store_ids: None, column, level2: None };
            query.adj_scatter(1, &view, &mut state, u, lists.list(u));
        }
        let values = (0..n).map(|v| query.vertex_apply(v as u64, lists.degree(v as u64), state.gathered[v])).collect();
        return Ok(QueryResult { values, aggregate: state.aggregate });
    }
    let (ranked, order) = lists.relabelled_by_degree();
    drop(lists);
    let (gathered, aggregate) = run_two_levels_parallel(query, &ranked, &order);
    let mut values = vec![Q::Output::default(); n];
    order.iter().enumerate().for_each(|(r, &v)| {
        values[v as usize] = query.vertex_apply(v, ranked.degree(r as u64), gathered[r]);
    });
    Ok(QueryResult { values, aggregate })
}

/// Vertices a worker takes from the shared counter at a time.
const WINDOW_CHUNK: usize = 64;

/// Level 1 over every vertex, then level 2 over the marked ones, each on all rayon threads (each
/// worker pulls chunks of vertices from a shared counter and gathers into its own array); returns
/// the folded gathered values (by engine id) and the aggregate.
fn run_two_levels_parallel<Q: NeighborhoodQuery>(
    query: &Q,
    lists: &FlatLists,
    store_ids: &[VertexId],
) -> (Vec<Q::Value>, u64) {
    let n = lists.len();
    let workers: Vec<OracleState<'_, Q>> =
        (0..rayon::current_num_threads()).map(|_| OracleState::new(n, query)).collect();
    let whole = OracleView { lists, window: Window::All, store_ids: Some(store_ids), column: None, level2: None };
    let workers = in_parallel_chunks(n, workers, |state, u| {
        query.adj_scatter(1, &whole, state, u, lists.list(u));
    });
    let mut marked = vec![0u64; n.div_ceil(64)];
    for state in &workers {
        marked.iter_mut().zip(&state.marked).for_each(|(m, w)| *m |= w);
    }
    let workers = in_parallel_chunks(n, workers, |state, v| {
        if marked[v as usize / 64] & (1 << (v % 64)) == 0 {
            return;
        }
        let list = lists.list(v);
        let mut marks = std::mem::take(&mut state.list_marks);
        list.iter().for_each(|e| marks[e.id() as usize] = (e.0 & 3) as u8);
        let view = OracleView { level2: Some((v, &marks)), ..whole };
        query.adj_scatter(2, &view, state, v, list);
        list.iter().for_each(|e| marks[e.id() as usize] = 0);
        state.list_marks = marks;
    });
    let aggregate = workers.iter().map(|s| s.aggregate).sum();
    let mut arrays = workers.into_iter().map(|s| s.gathered);
    let mut gathered = arrays.next().unwrap_or_else(|| vec![Q::Value::default(); n]);
    for other in arrays {
        gathered.par_iter_mut().zip(other.par_iter()).for_each(|(g, &o)| *g = query.vertex_gather(*g, o));
    }
    (gathered, aggregate)
}

/// Calls `visit(state, v)` for every vertex `v < n`, one worker state per rayon task, each task
/// pulling `WINDOW_CHUNK` vertices at a time from a shared counter; returns the states.
fn in_parallel_chunks<S: Send>(n: usize, states: Vec<S>, visit: impl Fn(&mut S, VertexId) + Sync) -> Vec<S> {
    let next = AtomicUsize::new(0);
    states
        .into_par_iter()
        .map(|mut state| {
            loop {
                let start = next.fetch_add(WINDOW_CHUNK, AtomicOrdering::Relaxed);
                if start >= n {
                    break;
                }
                (start..(start + WINDOW_CHUNK).min(n)).for_each(|v| visit(&mut state, v as VertexId));
            }
            state
        })
        .collect()
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

/// The level-1 window of the in-memory oracle.
#[derive(Clone, Copy)]
enum Window {
    /// One vertex (one-level queries).
    One(VertexId),
    /// Every vertex (two-level queries).
    All,
}

#[derive(Clone, Copy)]
struct OracleView<'a> {
    lists: &'a FlatLists,
    window: Window,
    /// Store id of each engine id, when ids were relabelled.
    store_ids: Option<&'a [VertexId]>,
    /// The query's column, in engine order (one-level queries: store order).
    column: Option<ColumnRead<'a>>,
    /// At level 2: the vertex being scattered and its list marked by id (direction bits; 0 = not
    /// a neighbour), so that intersecting another list with it is one lookup per entry.
    level2: Option<(VertexId, &'a [u8])>,
}

impl NeighborhoodView for OracleView<'_> {
    fn adjacency(&self, v: VertexId) -> &[Nbr] {
        self.lists.list(v)
    }
    fn parent_list(&self, _level: usize, v: VertexId) -> &[Nbr] {
        let list = self.lists.list(v);
        match self.window {
            Window::All => list,
            Window::One(u) => &list[list.partition_point(|n| n.id() < u)..list.partition_point(|n| n.id() <= u)],
        }
    }
    fn store_id(&self, v: VertexId) -> VertexId {
        self.store_ids.map_or(v, |ids| ids[v as usize])
    }
    fn column(&self, v: VertexId) -> u64 {
        ColumnRead::entry(self.column, v)
    }
    fn common_neighbors_after(&self, u: VertexId, v: VertexId, after: VertexId) -> CommonNeighbors<'_> {
        let (a, b) = (self.lists.list(u), self.lists.list(v));
        match self.level2 {
            Some((marked, marks)) if v == marked => CommonNeighbors::marked_second(tail_after(a, after), marks),
            _ => CommonNeighbors::new(tail_after(a, after), tail_after(b, after)),
        }
    }
}

struct OracleState<'q, Q: NeighborhoodQuery> {
    gathered: Vec<Q::Value>,
    /// Level 2's vertices of interest, one bit per vertex.
    marked: Vec<u64>,
    /// One byte per vertex, all 0 between level-2 vertices (see `OracleView::level2`).
    list_marks: Vec<u8>,
    aggregate: u64,
    query: &'q Q,
}

impl<'q, Q: NeighborhoodQuery> OracleState<'q, Q> {
    fn new(n: usize, query: &'q Q) -> Self {
        OracleState {
            gathered: vec![Q::Value::default(); n],
            marked: vec![0; n.div_ceil(64)],
            list_marks: vec![0; n],
            aggregate: 0,
            query,
        }
    }
}

impl<Q: NeighborhoodQuery> Emitter<Q::Value> for OracleState<'_, Q> {
    fn mark(&mut self, _level: usize, v: VertexId) {
        self.marked[v as usize / 64] |= 1 << (v % 64);
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

    /// A sorted list with random direction bits from a set of ids.
    fn entries(ids: &std::collections::BTreeSet<u64>, bits: u64) -> Vec<Nbr> {
        ids.iter().map(|&i| Nbr::new(i, (i ^ bits) % 3 != 1, !(i ^ bits).is_multiple_of(3))).collect()
    }

    proptest::proptest! {
        /// `next`, the folding loops (merge, gallop) and the marked-table form all yield the
        /// pairs of entries that a brute-force search finds, each entry as its own list holds it.
        #[test]
        fn every_intersection_form_agrees_with_brute_force(
            a in proptest::collection::btree_set(0u64..400, 0..120),
            b in proptest::collection::btree_set(0u64..400, 0..12),
            bits in 0u64..8,
        ) {
            let (a, b) = (entries(&a, bits), entries(&b, bits + 1));
            let expected: Vec<(Nbr, Nbr)> =
                a.iter().filter_map(|&x| b.iter().find(|y| y.id() == x.id()).map(|&y| (x, y))).collect();
            for (first, second, flip) in [(&a, &b, false), (&b, &a, true)] {
                let mut folded = Vec::new();
                CommonNeighbors::new(first, second).for_each(|pair| folded.push(pair));
                let stepped: Vec<(Nbr, Nbr)> = CommonNeighbors::new(first, second).by_ref().collect();
                let mut marks = vec![0u8; 400];
                second.iter().for_each(|e| marks[e.id() as usize] = (e.0 & 3) as u8);
                let mut looked_up = Vec::new();
                CommonNeighbors::marked_second(first, &marks).for_each(|pair| looked_up.push(pair));
                let stepped_marked: Vec<(Nbr, Nbr)> = CommonNeighbors::marked_second(first, &marks).by_ref().collect();
                let want: Vec<(Nbr, Nbr)> =
                    if flip { expected.iter().map(|&(x, y)| (y, x)).collect() } else { expected.clone() };
                proptest::prop_assert_eq!(&folded, &want);
                proptest::prop_assert_eq!(&stepped, &want);
                proptest::prop_assert_eq!(&looked_up, &want);
                proptest::prop_assert_eq!(&stepped_marked, &want);
            }
        }

        /// Store lists are merged, other lists sorted: the same full list either way.
        #[test]
        fn full_lists_from_sorted_and_unsorted_lists_agree(
            outs in proptest::collection::vec(0u64..50, 0..40),
            ins in proptest::collection::vec(0u64..50, 0..40),
        ) {
            let (mut sorted_outs, mut sorted_ins) = (outs.clone(), ins.clone());
            sorted_outs.sort_unstable();
            sorted_ins.sort_unstable();
            let (mut merged, mut sorted) = (Vec::new(), Vec::new());
            full_list(7, &sorted_outs, &sorted_ins, &mut merged);
            full_list(7, &outs, &ins, &mut sorted);
            proptest::prop_assert_eq!(&merged, &sorted);
            let expected: Vec<Nbr> = (0..50u64)
                .filter(|&t| t != 7)
                .filter_map(|t| {
                    let (o, i) = (outs.contains(&t), ins.contains(&t));
                    (o || i).then(|| Nbr::new(t, o, i))
                })
                .collect();
            proptest::prop_assert_eq!(&merged, &expected);
        }
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
