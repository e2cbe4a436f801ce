//! The program API: what an algorithm writes, and all an engine needs to know about it.
//!
//! * [`VertexProgram`] — push-style, combinable programs (PageRank, BFS, SSSP, WCC, MSSP...).
//!   `combine` is what lets every engine run the same program in its own order: it is Redio's
//!   accumulation operator, GraphD's combiner, the aggregation function of the delay buffer in
//!   "Load the Edges You Need" (§3), and TurboGraph++'s gather.
//! * [`PregelProgram`] — compute over all incoming messages of a vertex, for programs whose
//!   messages cannot be combined (label propagation needs the multiset of neighbour labels).
//! * [`NeighborhoodQuery`] — TurboGraph++'s k-walk queries over full adjacency lists (triangle
//!   counting, clustering coefficient; Figure 6 of the paper). The trait and the types it
//!   speaks ([`Nbr`], [`NeighborhoodView`], [`Emitter`], [`GatherValue`], [`Min`]) are defined
//!   beside their in-memory executor in `engine/nwsm/query.rs` and are part of this API.
//! * [`EdgePass`] — one visit of every arc, in any order and from many threads at once, into
//!   state the program keeps itself (union-find connectivity: one pass where label
//!   propagation needs one per unit of diameter).
//!
//! An algorithm may offer several forms (PageRank as a vertex program or as rounds of one-level
//! queries); [`Runner::choose_form`](crate::engine::Runner::choose_form) decides which one runs.
//!
//! Algorithms are written only against these traits; they never open files and never know
//! which engine runs them.

use crate::VertexId;

pub use crate::engine::nwsm::query::{
    AdjacencyMode, Emitter, GatherValue, Min, Nbr, NeighborhoodQuery, NeighborhoodView, QueryResult,
};

/// Whether messages are increments or values (DESIGN.md "Program API").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// Accumulative: a vertex folds increments into its value (PageRank-delta, heat).
    /// A missing message is the identity (zero increment).
    Delta,
    /// Selective: the message is a candidate value, `combine` picks one (min/max: BFS, SSSP, WCC).
    Value,
}

/// Along which edges an active vertex sends its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeDirection {
    /// Out-edges (the default).
    Out,
    /// Out-edges and in-edges (direction ignored: weakly connected components). An in-arc
    /// `u -> v` is scattered by `v` as `EdgeRef { source: v, target: u, .. }`. An undirected
    /// store already holds both arcs of every edge, so there `Both` is the same as `Out`.
    Both,
    /// In-edges only, reversed: an active vertex `v` sends along each in-arc `u → v` to `u`
    /// (`EdgeRef { source: v, target: u, .. }`). This is "pull" expressed as push, for backward
    /// sweeps such as Brandes' dependency accumulation. On an undirected store it equals `Out`.
    In,
}

/// One edge as seen by `scatter`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgeRef {
    pub source: VertexId,
    pub target: VertexId,
    /// 1.0 on unweighted stores.
    pub weight: f64,
    /// Out-degree of the source (in stored arcs).
    pub source_out_degree: u64,
}

/// Facts about the graph available to every program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphInfo {
    pub num_vertices: u64,
    /// Stored arcs.
    pub num_arcs: u64,
    pub directed: bool,
    pub weighted: bool,
}

/// What `apply` learns about the current iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationContext {
    /// 0-based iteration number.
    pub iteration: usize,
    pub graph: GraphInfo,
    /// Sum over all vertices of [`VertexProgram::global_contribution`] taken before this
    /// iteration's scatter (e.g. the PageRank mass of sink vertices).
    pub global_sum: f64,
    /// Sum over all vertices of [`VertexProgram::second_global_contribution`], taken with
    /// `global_sum` (0 for programs that do not define it).
    pub second_global_sum: f64,
}

/// Whether to go on after an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    Stop,
}

/// A push-style program: active vertices scatter messages along their edges, messages to the
/// same target are folded with `combine`, and `apply` folds the result into the target's value.
///
/// Engines call `apply` for every vertex that received at least one message, and for every
/// vertex when [`applies_to_all`](Self::applies_to_all) is true (with `identity()` when it
/// received none). A vertex is active in the next iteration when `apply` returns true. The run
/// ends when no vertex is active, after [`max_iterations`](Self::max_iterations), or when
/// [`end_iteration`](Self::end_iteration) says so.
pub trait VertexProgram: Sync + Send {
    type Value: Copy + Send + Sync + 'static;
    type Msg: Copy + Send + Sync + 'static;

    fn message_kind(&self) -> MessageKind;

    fn direction(&self) -> EdgeDirection {
        EdgeDirection::Out
    }

    /// True when `scatter` reads `edge.weight` (engines then read the weight file).
    fn uses_weights(&self) -> bool {
        false
    }

    fn init(&self, vertex: VertexId, graph: &GraphInfo) -> Self::Value;

    /// Active in iteration 0 (default: every vertex).
    fn initially_active(&self, _vertex: VertexId, _graph: &GraphInfo) -> bool {
        true
    }

    fn scatter(&self, value: &Self::Value, edge: EdgeRef) -> Option<Self::Msg>;

    /// Commutative and associative; `combine(identity(), m) == m`.
    fn combine(&self, a: Self::Msg, b: Self::Msg) -> Self::Msg;

    fn identity(&self) -> Self::Msg;

    /// Folds the combined message into the value; returns true if the vertex is active next.
    fn apply(&self, vertex: VertexId, value: &mut Self::Value, msg: Self::Msg, ctx: &IterationContext) -> bool;

    fn applies_to_all(&self) -> bool {
        false
    }

    /// True when the result stays the same if some messages reach their target in a later
    /// iteration, folded with `combine` — the distributive programs of "Load the Edges You
    /// Need" (§4.2): accumulations (PageRank-delta, heat) and selections (min/max: SSSP, WCC).
    /// Engines that skip edges and delay messages (shards with dynamic shards) need it.
    /// Programs whose `apply` depends on the iteration a message arrives in (BFS levels
    /// counted by iteration) or on every in-edge each iteration (`applies_to_all`) do not.
    fn tolerates_delays(&self) -> bool {
        !self.applies_to_all()
    }

    /// A vertex's share of the global sum handed to the next iteration (default 0).
    fn global_contribution(&self, _vertex: VertexId, _value: &Self::Value, _out_degree: u64) -> f64 {
        0.0
    }

    /// A vertex's share of a second global sum, handed to the next iteration beside the first
    /// as [`IterationContext::second_global_sum`] (default 0). For programs that need two
    /// aggregates per iteration: eigenvector centrality normalises by the squared norm and
    /// stops on the L1 change, both of the same update.
    fn second_global_contribution(&self, _vertex: VertexId, _value: &Self::Value, _out_degree: u64) -> f64 {
        0.0
    }

    /// Whether [`global_contribution`](Self::global_contribution) or
    /// [`second_global_contribution`](Self::second_global_contribution) can be nonzero
    /// (default true). Programs that define neither say false, and engines may then skip the
    /// sums — a pass over every vertex each iteration, which a sparse iteration (BFS) cannot
    /// afford — and hand them 0.
    fn has_global_contributions(&self) -> bool {
        true
    }

    /// Whether `scatter` reads [`EdgeRef::source_out_degree`] (default true). A program that
    /// says false spares an engine that pushes along csr-in the offsets of csr-out, kept only
    /// for the degrees (8 bytes a vertex); its edges then carry no meaningful degree there.
    fn reads_out_degrees(&self) -> bool {
        true
    }

    fn max_iterations(&self) -> Option<usize> {
        None
    }

    /// For the planner: the iterations a run that ends by convergence is expected to take,
    /// when the program can tell (pr-delta: the mass left to propagate shrinks by the damping
    /// factor each iteration). [`max_iterations`](Self::max_iterations) is then a cap, not the
    /// count. Default none: the planner takes `max_iterations` as the count, or assumes
    /// [`ASSUMED_ITERATIONS`](crate::engine::planner::ASSUMED_ITERATIONS).
    fn expected_iterations(&self) -> Option<f64> {
        None
    }

    /// True when the program also has a dense *pull* form (Beamer et al., "Direction-Optimizing
    /// Breadth-First Search", SC'12; Ligra's `edgeMapDense`, PPoPP'13 §4). Default off.
    ///
    /// In a pull iteration an engine visits every vertex `t` for which
    /// [`pull_wants`](Self::pull_wants) holds, scans its arcs *against* the program's
    /// direction (in-arcs `s → t` for [`EdgeDirection::Out`], out-arcs for
    /// [`EdgeDirection::In`]), folds `scatter(value(s), EdgeRef { source: s, target: t, .. })`
    /// of the active `s` with `combine` in ascending `s` order (or, where nothing can stop the fold
    /// early, in interleaved partial folds: `combine` is associative and commutative), and stops as soon as
    /// [`pull_satisfied`](Self::pull_satisfied) holds for the fold so far. A program that says
    /// true promises that this gives every vertex the same `apply` result as the push form:
    /// a vertex that does not want messages would not change nor become active from any, and
    /// once satisfied, folding further messages changes nothing `apply` sees. Engines may then
    /// choose push or pull per iteration; results are identical. Programs with
    /// [`EdgeDirection::Both`] run push only.
    fn supports_pull(&self) -> bool {
        false
    }

    /// Whether `scatter` depends on the arc only through its source (its value and
    /// `source_out_degree`), never its target or weight (PageRank, BFS). Engines that pull may
    /// then compute each active source's message once per iteration instead of once per arc;
    /// they call `scatter` with the source as `target` and weight 1.0.
    fn sends_uniform_messages(&self) -> bool {
        false
    }

    /// Whether, on top of [uniform messages](Self::sends_uniform_messages), every active vertex
    /// of one iteration sends the *same* message (level-synchronous BFS: all of a level's
    /// vertices send depth + 1), and folding it into a target several times gives what folding
    /// it once gives (BFS's min). A pulling engine may then fold that one message wherever an
    /// arc's source is active, instead of loading each source's own from a random address; a
    /// pushing engine may mark the targets reached and fold it once into each (the cache
    /// engine's parts).
    fn sends_one_message_per_iteration(&self) -> bool {
        false
    }

    /// Whether a vertex with this value still wants messages in a pull iteration (BFS: not
    /// yet reached).
    fn pull_wants(&self, _value: &Self::Value) -> bool {
        true
    }

    /// Whether the messages folded so far already satisfy their target in a pull iteration
    /// (BFS: any parent).
    fn pull_satisfied(&self, _folded: &Self::Msg) -> bool {
        false
    }

    /// Whether [`pull_satisfied`](Self::pull_satisfied) often holds before a list ends (BFS:
    /// the first parent found), so that a pulling engine should check it after every arc. A
    /// hint for speed only: engines that do not check fold whole lists, which the promise of
    /// [`supports_pull`](Self::supports_pull) allows. Default false.
    fn pull_stops_early(&self) -> bool {
        false
    }

    /// Called after iteration `iteration` with the number of vertices active in the next one.
    fn end_iteration(&self, _iteration: usize, _active_vertices: u64) -> Control {
        Control::Continue
    }

    /// What identifies this run's parameters in a checkpoint; see
    /// [`PregelProgram::checkpoint_key`].
    fn checkpoint_key(&self) -> String {
        String::new()
    }
}

/// Both global contributions of one vertex, `[global_contribution, second_global_contribution]`:
/// what every engine sums, slot by slot, into an [`IterationContext`].
pub fn global_contributions<P: VertexProgram + ?Sized>(
    program: &P,
    vertex: VertexId,
    value: &P::Value,
    out_degree: u64,
) -> [f64; 2] {
    [
        program.global_contribution(vertex, value, out_degree),
        program.second_global_contribution(vertex, value, out_degree),
    ]
}

/// Adds two pairs of global sums slot by slot.
pub fn add_global_sums(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] + b[0], a[1] + b[1]]
}

/// A program that visits every arc once, in no particular order and from several threads at
/// once, folding it into state it keeps itself — which must therefore be safe to update
/// concurrently (atomics). No messages, no iterations: an engine runs it in one pass over the
/// arcs. Union-find connectivity (Shiloach–Vishkin hooking, as GAP's Afforest `cc` does) is
/// what it is for: `arc(u, v)` joins the sets of `u` and `v`.
pub trait EdgePass: Sync {
    /// Visits the arc `source → target`.
    fn arc(&self, source: VertexId, target: VertexId);
    /// Called between batches of arcs (at least |V| arcs each, so that O(|V|) work here costs
    /// no more than the arcs), while no arc is being visited: the place for work that makes the
    /// next batch cheaper (union-find compresses its paths).
    fn between_batches(&self) {}
    /// Bytes of state the program keeps per vertex (checked against the budget).
    fn state_bytes_per_vertex(&self) -> u64;
}

/// What a Pregel `compute` can see and do for one vertex in one superstep.
pub trait PregelContext<M> {
    fn vertex(&self) -> VertexId;
    /// The vertex as its neighbours' lists and `send` name it: the dense id on most engines,
    /// but the pregel engine names vertices by original id or recoded name, so a program that
    /// looks for the vertex itself among its neighbours (self-loops) compares with this.
    fn name(&self) -> VertexId {
        self.vertex()
    }
    fn superstep(&self) -> usize;
    fn graph(&self) -> &GraphInfo;
    /// Targets of the vertex's out-edges.
    fn out_neighbors(&self) -> &[VertexId];
    /// Weights of the out-edges (1.0 each on unweighted stores).
    fn out_weights(&self) -> &[f64];
    /// Sources of the in-edges (only when the program asks for them).
    fn in_neighbors(&self) -> &[VertexId];
    fn send(&mut self, target: VertexId, message: M);
    fn vote_to_halt(&mut self);
    /// Adds `value` to slot `slot` of this superstep's aggregates (folded with
    /// [`PregelProgram::aggregate`]); `slot < aggregate_width()`, else it panics.
    fn aggregate_at(&mut self, slot: usize, value: f64);
    /// The aggregates of the previous superstep, `aggregate_width()` slots (0 where nobody
    /// contributed, and all 0 in superstep 0).
    fn previous_aggregates(&self) -> &[f64];
    /// Adds to slot 0 of this superstep's aggregates (the single aggregator of most programs).
    fn aggregate(&mut self, value: f64) {
        self.aggregate_at(0, value);
    }
    /// Slot 0 of the previous superstep's aggregates (0 in superstep 0).
    fn previous_aggregate(&self) -> f64 {
        self.previous_aggregates().first().copied().unwrap_or(0.0)
    }
}

/// Which adjacency lists [`send_to_neighbors`] sends along.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Along {
    /// The out-edges only.
    Out,
    /// The out-edges, then the in-edges (the program must ask for them).
    OutAndIn,
}

/// Sends `message` along every edge of `along` whose other end is not `skip`, out-edges first,
/// each list in its order — what collecting the targets into a `Vec` and sending to each does,
/// without the allocation per vertex and superstep: `send` needs `ctx` mutably while the lists
/// borrow it, so the targets pass through a small stack buffer a chunk at a time.
pub fn send_to_neighbors<M: Copy>(ctx: &mut dyn PregelContext<M>, along: Along, skip: Option<VertexId>, message: M) {
    const CHUNK: usize = 64;
    let mut buffer = [0 as VertexId; CHUNK];
    let lists: &[bool] = if along == Along::OutAndIn { &[false, true] } else { &[false] };
    for &inward in lists {
        let mut start = 0;
        loop {
            let list = if inward { ctx.in_neighbors() } else { ctx.out_neighbors() };
            let end = list.len().min(start + CHUNK);
            if start >= end {
                break;
            }
            let targets = &mut buffer[..end - start];
            targets.copy_from_slice(&list[start..end]);
            for &target in targets.iter().filter(|&&t| Some(t) != skip) {
                ctx.send(target, message);
            }
            start = end;
        }
    }
}

/// One superstep's aggregator: `width` slots, each folded element-wise with
/// [`PregelProgram::aggregate`] over the contributions of every vertex (and, on distributed
/// engines, over the ranks right after computation). A slot nobody contributed to reads 0.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Aggregates {
    values: Vec<f64>,
    contributed: Vec<bool>,
}

impl Aggregates {
    pub fn new(width: usize) -> Aggregates {
        Aggregates { values: vec![0.0; width], contributed: vec![false; width] }
    }

    pub fn width(&self) -> usize {
        self.values.len()
    }

    /// The slots (0 where nobody contributed).
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Folds `value` into `slot` with `fold` (the program's `aggregate`).
    pub fn add(&mut self, slot: usize, value: f64, fold: impl Fn(f64, f64) -> f64) {
        assert!(
            slot < self.width(),
            "aggregate slot {slot} is outside the program's aggregate_width() of {}",
            self.width()
        );
        self.values[slot] = if self.contributed[slot] { fold(self.values[slot], value) } else { value };
        self.contributed[slot] = true;
    }

    /// Folds every contributed slot of `other` into `self` (the slots are then folded in the
    /// order `self`, `other`: callers merge ranks in rank order).
    pub fn merge(&mut self, other: &Aggregates, fold: impl Fn(f64, f64) -> f64) {
        for slot in 0..other.width().min(self.width()) {
            if other.contributed[slot] {
                self.add(slot, other.values[slot], &fold);
            }
        }
    }

    /// Appends the encoding: width, then a flag and a value per slot.
    pub fn put(&self, out: &mut Vec<u8>) {
        (self.width() as u64).put(out);
        for (value, contributed) in self.values.iter().zip(&self.contributed) {
            contributed.put(out);
            value.put(out);
        }
    }

    /// Decodes what [`put`](Self::put) wrote; `None` when `bytes` is too short. Returns the
    /// aggregates and the number of bytes read.
    pub fn get(bytes: &[u8]) -> Option<(Aggregates, usize)> {
        let width = u64::get(bytes.get(..8)?) as usize;
        let end = width.checked_mul(9)?.checked_add(8)?;
        let slots = bytes.get(8..end)?;
        let mut aggregates = Aggregates::new(width);
        for (slot, record) in slots.chunks_exact(9).enumerate() {
            aggregates.contributed[slot] = bool::get(record);
            aggregates.values[slot] = f64::get(&record[1..]);
        }
        Some((aggregates, end))
    }
}

/// A vertex-centric program over all incoming messages (Pregel, GraphD).
///
/// A vertex runs `compute` in superstep 0 and afterwards whenever it is awake: it has not
/// voted to halt, or it received a message. The run ends when every vertex has halted and no
/// message is in flight, after `max_supersteps`, or when `end_superstep` says so.
pub trait PregelProgram: Sync + Send {
    type Value: Clone + Send + Sync + 'static;
    type Msg: Clone + Send + Sync + 'static;

    fn init(&self, vertex: VertexId, graph: &GraphInfo) -> Self::Value;

    fn needs_in_edges(&self) -> bool {
        false
    }

    fn uses_weights(&self) -> bool {
        false
    }

    fn compute(&self, ctx: &mut dyn PregelContext<Self::Msg>, value: &mut Self::Value, messages: &[Self::Msg]);

    /// An optional combiner: engines may fold messages to the same target with it.
    fn combine(&self, _a: &Self::Msg, _b: &Self::Msg) -> Option<Self::Msg> {
        None
    }

    /// True when `combine` is defined.
    fn has_combiner(&self) -> bool {
        false
    }

    /// The number of aggregator slots (default 1): k-means carries its centres' sums and
    /// counts as one vector aggregator.
    fn aggregate_width(&self) -> usize {
        1
    }

    /// Folds two contributions to one aggregate slot (default: sum).
    fn aggregate(&self, a: f64, b: f64) -> f64 {
        a + b
    }

    fn max_supersteps(&self) -> Option<usize> {
        None
    }

    /// Called after superstep `superstep` with slot 0 of its aggregates (via the default
    /// [`end_superstep_aggregates`](Self::end_superstep_aggregates)).
    fn end_superstep(&self, _superstep: usize, _aggregate: f64) -> Control {
        Control::Continue
    }

    /// Called after superstep `superstep` with all its aggregate slots; engines call this one.
    /// The default hands slot 0 to [`end_superstep`](Self::end_superstep).
    fn end_superstep_aggregates(&self, superstep: usize, aggregates: &[f64]) -> Control {
        self.end_superstep(superstep, aggregates.first().copied().unwrap_or(0.0))
    }

    /// What identifies this run's parameters in a checkpoint (the pregel engine refuses to
    /// `--resume` from a checkpoint with another key). Programs with parameters (a source, k,
    /// an iteration count) must include them; the default is empty.
    fn checkpoint_key(&self) -> String {
        String::new()
    }
}

/// Values and messages that can leave the process: sent between the ranks of a distributed
/// engine (`pregel`) and written to its message files and checkpoints. Fixed little-endian
/// encodings; every implementation writes exactly [`Wire::BYTES`] bytes.
pub trait Wire: Sized {
    /// Encoded size in bytes.
    const BYTES: usize;
    fn put(&self, out: &mut Vec<u8>);
    /// Decodes from the first `BYTES` bytes of `bytes` (callers pass at least that many).
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! wire_number {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes[..Self::BYTES].try_into().expect("enough bytes"))
            }
        }
    )*};
}
wire_number!(u8, u32, u64, i64, f32, f64);

impl Wire for usize {
    const BYTES: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        (*self as u64).put(out);
    }
    fn get(bytes: &[u8]) -> Self {
        u64::get(bytes) as usize
    }
}

impl Wire for bool {
    const BYTES: usize = 1;
    fn put(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
    fn get(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    const BYTES: usize = A::BYTES + B::BYTES;
    fn put(&self, out: &mut Vec<u8>) {
        self.0.put(out);
        self.1.put(out);
    }
    fn get(bytes: &[u8]) -> Self {
        (A::get(bytes), B::get(&bytes[A::BYTES..]))
    }
}

impl<T: Wire + Copy + Default, const K: usize> Wire for [T; K] {
    const BYTES: usize = T::BYTES * K;
    fn put(&self, out: &mut Vec<u8>) {
        self.iter().for_each(|x| x.put(out));
    }
    fn get(bytes: &[u8]) -> Self {
        let mut array = [T::default(); K];
        for (i, x) in array.iter_mut().enumerate() {
            *x = T::get(&bytes[i * T::BYTES..]);
        }
        array
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_fold_per_slot_merge_and_round_trip() {
        let max = |a: f64, b: f64| a.max(b);
        let mut a = Aggregates::new(3);
        a.add(0, 2.0, max);
        a.add(0, -1.0, max);
        a.add(2, -5.0, max);
        // Slot 1 had no contribution: reads 0; slot 2 keeps its only (negative) value.
        assert_eq!(a.values(), [2.0, 0.0, -5.0]);
        let mut b = Aggregates::new(3);
        b.add(1, -7.0, max);
        b.add(2, -6.0, max);
        a.merge(&b, max);
        assert_eq!(a.values(), [2.0, -7.0, -5.0]);
        let mut bytes = vec![];
        a.put(&mut bytes);
        bytes.push(99);
        let (back, used) = Aggregates::get(&bytes).unwrap();
        assert_eq!((back, used), (a, 8 + 27));
        assert!(Aggregates::get(&bytes[..20]).is_none());
    }

    /// Records what is sent; the lists are its adjacency.
    struct Recorder {
        graph: GraphInfo,
        out: Vec<VertexId>,
        inward: Vec<VertexId>,
        sent: Vec<(VertexId, u64)>,
    }

    impl PregelContext<u64> for Recorder {
        fn vertex(&self) -> VertexId {
            7
        }
        fn superstep(&self) -> usize {
            0
        }
        fn graph(&self) -> &GraphInfo {
            &self.graph
        }
        fn out_neighbors(&self) -> &[VertexId] {
            &self.out
        }
        fn out_weights(&self) -> &[f64] {
            &[]
        }
        fn in_neighbors(&self) -> &[VertexId] {
            &self.inward
        }
        fn send(&mut self, target: VertexId, message: u64) {
            self.sent.push((target, message));
        }
        fn vote_to_halt(&mut self) {}
        fn aggregate_at(&mut self, _: usize, _: f64) {}
        fn previous_aggregates(&self) -> &[f64] {
            &[]
        }
    }

    #[test]
    fn send_to_neighbors_sends_what_a_collected_list_would_in_its_order() {
        let graph = GraphInfo { num_vertices: 1000, num_arcs: 0, directed: true, weighted: false };
        // Lists longer than the stack buffer, with the skipped vertex and duplicates in them.
        let out: Vec<VertexId> = (0..150).map(|i| (i * 37) % 200).chain([7, 7]).collect();
        let inward: Vec<VertexId> = (0..70).rev().collect();
        for (along, skip) in
            [(Along::Out, None), (Along::Out, Some(7)), (Along::OutAndIn, Some(7)), (Along::OutAndIn, None)]
        {
            let mut ctx = Recorder { graph, out: out.clone(), inward: inward.clone(), sent: vec![] };
            send_to_neighbors(&mut ctx, along, skip, 5);
            let both = if along == Along::OutAndIn { inward.clone() } else { vec![] };
            let want: Vec<(VertexId, u64)> =
                out.iter().chain(&both).copied().filter(|&u| Some(u) != skip).map(|u| (u, 5)).collect();
            assert_eq!(ctx.sent, want, "{along:?} skipping {skip:?}");
        }
        let mut empty = Recorder { graph, out: vec![], inward: vec![], sent: vec![] };
        send_to_neighbors(&mut empty, Along::OutAndIn, None, 1);
        assert!(empty.sent.is_empty());
    }

    #[test]
    #[should_panic(expected = "outside the program's aggregate_width() of 1")]
    fn a_slot_past_the_width_is_a_clear_panic() {
        Aggregates::new(1).add(1, 1.0, |a, b| a + b);
    }
}
