//! Dense *pull* iterations of the stream engine (Beamer et al., "Direction-Optimizing
//! Breadth-First Search", SC'12; Ligra's `edgeMapDense`, PPoPP'13 §4), for programs that
//! [support pull](VertexProgram::supports_pull).
//!
//! **Why.** A push iteration does, per edge, a random read-modify-write into a per-thread
//! array of |V| messages plus a bitmap set. On RMAT-22 those arrays (19 MB each, one per
//! thread) outgrow the last-level cache and the scatter waits on its misses. A pull iteration
//! streams the *reverse* layout (csr-in for a program that sends along out-arcs) whole, and
//! each target folds the messages of its sources straight into its own slot:
//! - the writes are sequential, and each target belongs to one thread: one accumulator, no
//!   fold of per-thread arrays afterwards;
//! - with [uniform messages](VertexProgram::sends_uniform_messages) each source's message is
//!   computed once per iteration into one array of |V| messages ([`Sources`]; 19 MB for
//!   PageRank, within the L3), which the fold reads at random: independent loads the CPU
//!   overlaps, instead of dependent read-modify-writes;
//! - once the reverse layout is all in memory ([`super::resident`]), its source ids are
//!   renumbered by degree ([`SourceOrder`]), so that the messages most arcs load share a few
//!   cache lines instead of each taking its own;
//! - BFS-like programs skip the list of every target that no longer
//!   [wants](VertexProgram::pull_wants) messages and stop a list at its first
//!   [satisfying](VertexProgram::pull_satisfied) source (Ligra's bottom-up step).
//!
//! A pull still reads every edge of the reverse layout from disk, so the engine pulls only when
//! the frontier and its edges are more than 1/[`PULL_DIVISOR`] of the arcs (Ligra's rule), and
//! pushes, selectively, otherwise.
//!
//! **Order.** A target's list may span pieces and buffers. Its slot holds the fold so far and
//! the next piece folds on into it, so every target's messages are folded in ascending source
//! order in one chain (in [`LANES`] interleaved chains when every source sends, PageRank),
//! whatever the buffer size or the thread count: pulled results are the same in every run.

use rayon::prelude::*;

use super::reader::EdgeBuffer;
use super::IndexedBitmap;
use crate::engine::PULL_DIVISOR;
use crate::program::{EdgeRef, VertexProgram};
use crate::runtime::prefetch;

/// How many edges ahead a fold prefetches its sources' messages: the loop is short (a load and
/// an add), so it runs further ahead than the push's scatter; 48 measured best of 16/48 on
/// RMAT-22 PageRank (0.28 s and 0.17 s of compute per iteration).
const PREFETCH_DISTANCE: usize = 48;

/// Targets per parallel task (a multiple of 64: one task owns whole words of the bitmap of
/// targets that received a message).
const TARGETS_PER_TASK: usize = 2048;

/// Whether an iteration whose frontier has `active_vertices` vertices and `frontier_arcs` arcs
/// pulls (Ligra's rule: more than 1/[`PULL_DIVISOR`] of the arcs).
pub fn pulls(active_vertices: u64, frontier_arcs: u64, arcs: u64) -> bool {
    active_vertices + frontier_arcs > arcs / PULL_DIVISOR
}

/// The messages the sources send in one iteration, for programs with uniform messages: one
/// per vertex, computed once instead of once per arc (memory: [`super::PullNeeds::sources`]).
/// Slot `i` holds vertex `i`'s message, or, once the pulled layout is all resident and its ids
/// were renumbered ([`SourceOrder`]), the message of the vertex at slot `i`.
pub struct Sources<M> {
    sent: Vec<M>,
    /// One bit per slot: its vertex is active and `scatter` gave a message.
    senders: Vec<u64>,
    /// Every vertex sends (no need to look at `senders`).
    all: bool,
    /// The vertex at each slot, once ordered ([`Sources::order_by`]).
    vertex_at: Option<Vec<u32>>,
}

impl<M: Copy + Send + Sync> Sources<M> {
    /// Asks the CPU for `source`'s message (a hint: any id is safe).
    #[inline(always)]
    fn ahead(&self, source: usize) {
        prefetch(self.sent.as_ptr().wrapping_add(source));
    }

    pub fn new(vertices: usize, identity: M) -> Sources<M> {
        Sources { sent: vec![identity; vertices], senders: vec![0; vertices.div_ceil(64)], all: false, vertex_at: None }
    }

    /// Whether slots follow a [`SourceOrder`] rather than vertex ids.
    pub fn is_ordered(&self) -> bool {
        self.vertex_at.is_some()
    }

    /// From now on slot `i` holds the message of `order`'s vertex at `i` (the pulled ids were
    /// renumbered to match).
    /// Keeps messages in the slots of `order` from the next [`prepare`](Self::prepare) on;
    /// returns the slot of each vertex, for renumbering the ids the pulls fold.
    pub fn order_by(&mut self, order: SourceOrder) -> Vec<u32> {
        self.vertex_at = Some(order.vertex_at);
        order.slot_of
    }

    /// Back to messages in vertex order; returns the order's vertex of each slot, if any.
    pub fn unorder(&mut self) -> Option<Vec<u32>> {
        self.vertex_at.take()
    }

    /// Computes every active vertex's message of this iteration.
    pub fn prepare<P: VertexProgram<Msg = M>>(
        &mut self,
        program: &P,
        values: &[P::Value],
        frontier: &IndexedBitmap,
        out_offsets: &[u64],
    ) {
        let identity = program.identity();
        let vertex_at = self.vertex_at.as_deref();
        let count: u64 = self
            .sent
            .par_chunks_mut(64)
            .zip(self.senders.par_iter_mut())
            .enumerate()
            .map(|(w, (sent, word))| {
                *word = 0;
                for (i, slot) in sent.iter_mut().enumerate() {
                    if let Some(&later) = vertex_at.and_then(|at| at.get(w * 64 + i + PREPARE_AHEAD)) {
                        prefetch(values.as_ptr().wrapping_add(later as usize));
                        prefetch(out_offsets.as_ptr().wrapping_add(later as usize));
                    }
                    let s = vertex_at.map_or(w * 64 + i, |at| at[w * 64 + i] as usize);
                    let degree = out_offsets[s + 1] - out_offsets[s];
                    let edge = EdgeRef { source: s as u64, target: s as u64, weight: 1.0, source_out_degree: degree };
                    let message = if frontier.get(s) { program.scatter(&values[s], edge) } else { None };
                    *slot = message.unwrap_or(identity);
                    *word |= (message.is_some() as u64) << i;
                }
                word.count_ones() as u64
            })
            .sum();
        self.all = count == self.sent.len() as u64;
    }
}

/// Slots ahead whose vertex's value and out-offsets [`Sources::prepare`] asks the CPU for:
/// once sources are ordered, the vertex of each slot is anywhere in those arrays (19 MB each on
/// RMAT-22), and without the hint every slot waited on two cache misses in turn.
const PREPARE_AHEAD: usize = 16;

/// A renumbering of the sources for the fold's random loads: vertices by descending degree
/// class (⌊log2 degree⌋), ascending id within a class. A source is loaded once per arc, so its
/// degree is how often its message is wanted; on R-MAT graphs the top 5% of vertices by
/// degree send 75% of the messages (RMAT-22), and packed together their messages stay in the
/// L2 cache instead of each taking its own cache line of a 19 MB array. The pulled ids are
/// renumbered once, in memory ([`super::resident::ResidentEdges::renumber`]); each target's
/// edges keep their order, so every fold and result stays the same in every run.
pub struct SourceOrder {
    /// The slot of each vertex.
    pub slot_of: Vec<u32>,
    /// The vertex at each slot.
    pub vertex_at: Vec<u32>,
}

impl SourceOrder {
    /// Bytes while renumbering (both arrays), and kept afterwards (`vertex_at`).
    pub fn bytes(vertices: usize) -> (u64, u64) {
        (8 * vertices as u64, 4 * vertices as u64)
    }

    /// The order by the degrees of `offsets` (a counting sort over degree classes).
    pub fn by_degree(offsets: &[u64]) -> SourceOrder {
        let n = offsets.len() - 1;
        let class = |v: usize| 64 - (offsets[v + 1] - offsets[v]).leading_zeros() as usize;
        let mut starts = [0u32; 66];
        for v in 0..n {
            starts[64 - class(v) + 1] += 1;
        }
        for c in 1..starts.len() {
            starts[c] += starts[c - 1];
        }
        let (mut slot_of, mut vertex_at) = (vec![0u32; n], vec![0u32; n]);
        for v in 0..n {
            let slot = &mut starts[64 - class(v)];
            slot_of[v] = *slot;
            vertex_at[*slot as usize] = v as u32;
            *slot += 1;
        }
        SourceOrder { slot_of, vertex_at }
    }
}

/// What the pull of one buffer needs to see.
pub struct Pull<'a, P: VertexProgram> {
    pub program: &'a P,
    pub values: &'a [P::Value],
    pub frontier: &'a IndexedBitmap,
    /// Every vertex is active (no need to look at `frontier`).
    pub all_active: bool,
    pub out_offsets: &'a [u64],
    /// Offsets of the reverse layout, the one streamed.
    pub offsets: &'a [u64],
    /// The sources' messages, for programs with uniform messages.
    pub sources: Option<&'a Sources<P::Msg>>,
    /// Source ids are u64 (|V| >= 2^32) rather than u32.
    pub wide: bool,
}

/// What the pull of one buffer did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Pulled {
    /// Arcs looked at.
    pub edges: u64,
    /// A source id out of range (a damaged store).
    pub bad_source: Option<u64>,
}

impl Pulled {
    fn add(self, other: Pulled) -> Pulled {
        Pulled { edges: self.edges + other.edges, bad_source: self.bad_source.or(other.bad_source) }
    }
}

impl<P: VertexProgram> Pull<'_, P> {
    /// Folds every piece of `buffer` into the targets' slots `msgs`, setting their bits in
    /// `received` (the words of the accumulator's bitmap; its index is rebuilt by the caller).
    pub fn buffer(&self, buffer: &EdgeBuffer, msgs: &mut [P::Msg], received: &mut [u64]) -> Pulled {
        let mut pulled = Pulled::default();
        for piece in &buffer.pieces {
            let width = if self.wide { 8 } else { 4 };
            let ids = &buffer.targets[piece.target_pos..piece.target_pos + piece.edges() as usize * width];
            let weights = match (&buffer.weights, self.sources) {
                (Some(w), None) => Some(&w[piece.weight_pos..piece.weight_pos + piece.edges() as usize * 8]),
                _ => None,
            };
            let edges = Edges { first: piece.first_edge, end: piece.end_edge, ids, weights };
            pulled = pulled.add(if self.wide {
                self.piece::<true>(&edges, msgs, received)
            } else {
                self.piece::<false>(&edges, msgs, received)
            });
        }
        pulled
    }

    /// Folds one piece: its targets in tasks of [`TARGETS_PER_TASK`], in parallel.
    fn piece<const WIDE: bool>(&self, edges: &Edges<'_>, msgs: &mut [P::Msg], received: &mut [u64]) -> Pulled {
        // The targets whose lists meet the piece: [first, end).
        let first = self.offsets.partition_point(|&o| o <= edges.first) - 1;
        let end = self.offsets.partition_point(|&o| o < edges.end);
        let (lo, hi) = (first / TARGETS_PER_TASK, end.div_ceil(TARGETS_PER_TASK));
        let (n, words) = (msgs.len(), TARGETS_PER_TASK / 64);
        let msgs = &mut msgs[lo * TARGETS_PER_TASK..(hi * TARGETS_PER_TASK).min(n)];
        let received = &mut received[lo * words..(hi * words).min(n.div_ceil(64))];
        msgs.par_chunks_mut(TARGETS_PER_TASK)
            .zip(received.par_chunks_mut(words))
            .enumerate()
            .map(|(i, (msgs, received))| {
                let base = (lo + i) * TARGETS_PER_TASK;
                let targets = first.max(base)..end.min(base + msgs.len());
                self.task::<WIDE>(edges, base, targets, msgs, received)
            })
            .reduce(Pulled::default, Pulled::add)
    }

    /// Folds the lists of `targets` (within the piece) into their slots.
    fn task<const WIDE: bool>(
        &self,
        edges: &Edges<'_>,
        base: usize,
        targets: std::ops::Range<usize>,
        msgs: &mut [P::Msg],
        received: &mut [u64],
    ) -> Pulled {
        let mut pulled = Pulled::default();
        for t in targets {
            if !self.program.pull_wants(&self.values[t]) {
                continue;
            }
            let local = t - base;
            let got = received[local / 64] >> (local % 64) & 1 == 1;
            if got && self.program.pull_satisfied(&msgs[local]) {
                continue;
            }
            let from = self.offsets[t].max(edges.first);
            let to = self.offsets[t + 1].min(edges.end);
            let fold =
                Fold { acc: if got { msgs[local] } else { self.program.identity() }, any: got, edges: 0, bad: None };
            let fold = match self.sources {
                Some(sources) if sources.all => self.fold_lanes::<WIDE>(edges, from, to, fold, sources, None),
                Some(sources) if !self.program.pull_stops_early() => {
                    self.fold_lanes::<WIDE>(edges, from, to, fold, sources, Some(&sources.senders))
                }
                Some(sources) => self.fold::<WIDE>(
                    edges,
                    from,
                    to,
                    fold,
                    |s| sources.ahead(s),
                    |s, _| (sources.senders[s / 64] >> (s % 64) & 1 == 1).then(|| sources.sent[s]),
                ),
                None => self.fold::<WIDE>(
                    edges,
                    from,
                    to,
                    fold,
                    |_| {},
                    |s, weight| {
                        if !self.all_active && !self.frontier.get(s) {
                            return None;
                        }
                        let source_out_degree = self.out_offsets[s + 1] - self.out_offsets[s];
                        let edge = EdgeRef { source: s as u64, target: t as u64, weight, source_out_degree };
                        self.program.scatter(&self.values[s], edge)
                    },
                ),
            };
            pulled.edges += fold.edges;
            pulled.bad_source = pulled.bad_source.or(fold.bad);
            if fold.any {
                msgs[local] = fold.acc;
                received[local / 64] |= 1 << (local % 64);
            }
        }
        pulled
    }

    /// Folds the messages of edges `[from, to)` onto `fold`, in order, until satisfied;
    /// `ahead` is told the source [`PREFETCH_DISTANCE`] edges ahead, to prefetch its message.
    #[inline(always)]
    fn fold<const WIDE: bool>(
        &self,
        edges: &Edges<'_>,
        from: u64,
        to: u64,
        mut fold: Fold<P::Msg>,
        ahead: impl Fn(usize),
        message: impl Fn(usize, f64) -> Option<P::Msg>,
    ) -> Fold<P::Msg> {
        let width = if WIDE { 8 } else { 4 };
        let (a, b) = ((from - edges.first) as usize, (to - edges.first) as usize);
        let n = self.values.len() as u64;
        let mut later = edges.ids_ahead::<WIDE>(a);
        for (k, id) in edges.ids[a * width..b * width].chunks_exact(width).enumerate() {
            if let Some(later) = later.next() {
                ahead(decode::<WIDE>(later) as usize);
            }
            let source = decode::<WIDE>(id);
            fold.edges += 1;
            if source >= n {
                fold.bad = Some(source);
                continue;
            }
            let weight = match edges.weights {
                Some(w) => f64::from_le_bytes(w[(a + k) * 8..(a + k) * 8 + 8].try_into().unwrap()),
                None => 1.0,
            };
            if let Some(msg) = message(source as usize, weight) {
                fold.acc = self.program.combine(fold.acc, msg);
                fold.any = true;
                if self.program.pull_satisfied(&fold.acc) {
                    break;
                }
            }
        }
        fold
    }

    /// Folds the messages of edges `[from, to)` into [`LANES`] partial folds, arc `k` into lane
    /// `k % LANES`, combined at the end: when every source sends (PageRank, `senders` None),
    /// or when the program does not [stop pulls early](VertexProgram::pull_stops_early)
    /// (pr-delta). An inactive source's slot holds the identity, which folds to nothing, so the
    /// loop has no branch on the sender; `senders` only tells whether any source sent.
    ///
    /// **Why.** Folding into one accumulator makes every arc wait for the arc before it
    /// (a floating-point add takes 4 cycles), however fast its message loads; independent lanes
    /// let the CPU overlap them. `combine` is associative and commutative, so the result is
    /// the same up to rounding, and the same in every run. A fold is never cut short here:
    /// past [`pull_satisfied`](VertexProgram::pull_satisfied) further messages change nothing
    /// `apply` sees.
    #[inline(always)]
    fn fold_lanes<const WIDE: bool>(
        &self,
        edges: &Edges<'_>,
        from: u64,
        to: u64,
        mut fold: Fold<P::Msg>,
        sources: &Sources<P::Msg>,
        senders: Option<&[u64]>,
    ) -> Fold<P::Msg> {
        let width = if WIDE { 8 } else { 4 };
        let (a, b) = ((from - edges.first) as usize, (to - edges.first) as usize);
        if a == b {
            return fold;
        }
        let sent = sources.sent.as_slice();
        let mut later = edges.ids_ahead::<WIDE>(a);
        let mut lanes = [self.program.identity(); LANES];
        // Bits of the sources that sent, ORed: any of them set says a message arrived.
        let mut sent_any = 0u64;
        let mut fold_into = |lane: &mut P::Msg, id: &[u8]| {
            if let Some(later) = later.next() {
                sources.ahead(decode::<WIDE>(later) as usize);
            }
            let s = decode::<WIDE>(id) as usize;
            match sent.get(s) {
                Some(&msg) => {
                    *lane = self.program.combine(*lane, msg);
                    if let Some(senders) = senders {
                        sent_any |= senders[s / 64] >> (s % 64);
                    }
                }
                None => fold.bad = Some(s as u64),
            }
        };
        let mut groups = edges.ids[a * width..b * width].chunks_exact(LANES * width);
        for group in &mut groups {
            for (lane, id) in lanes.iter_mut().zip(group.chunks_exact(width)) {
                fold_into(lane, id);
            }
        }
        for (lane, id) in lanes.iter_mut().zip(groups.remainder().chunks_exact(width)) {
            fold_into(lane, id);
        }
        fold.edges += (b - a) as u64;
        let [l0, l1, l2, l3] = lanes;
        let combine = |x, y| self.program.combine(x, y);
        if senders.is_none() || sent_any & 1 == 1 {
            fold.acc = combine(fold.acc, combine(combine(l0, l1), combine(l2, l3)));
            fold.any = true;
        }
        fold
    }
}

/// Partial folds of [`Pull::fold_lanes`].
const LANES: usize = 4;

/// The edges of one piece: `[first, end)` of the reverse layout.
struct Edges<'a> {
    first: u64,
    end: u64,
    ids: &'a [u8],
    weights: Option<&'a [u8]>,
}

impl<'a> Edges<'a> {
    /// The piece's ids from edge `a + PREFETCH_DISTANCE` on, one per edge folded from `a`:
    /// the sources to prefetch (they run past a list into the next targets' lists, whose
    /// messages are wanted next).
    #[inline(always)]
    fn ids_ahead<const WIDE: bool>(&self, a: usize) -> std::slice::ChunksExact<'a, u8> {
        let width = if WIDE { 8 } else { 4 };
        self.ids.get((a + PREFETCH_DISTANCE) * width..).unwrap_or_default().chunks_exact(width)
    }
}

/// An id of a piece: 8 bytes little-endian when `WIDE`, else 4.
#[inline(always)]
fn decode<const WIDE: bool>(id: &[u8]) -> u64 {
    if WIDE {
        u64::from_le_bytes(id.try_into().unwrap())
    } else {
        u32::from_le_bytes(id.try_into().unwrap()) as u64
    }
}

/// A target's fold in progress.
struct Fold<M> {
    acc: M,
    /// A message was folded (now or in an earlier piece).
    any: bool,
    edges: u64,
    bad: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_order_puts_busy_vertices_first_and_is_a_permutation() {
        // Degrees 1, 0, 9, 3, 2, 9, 1: classes 1, 0, 4, 2, 2, 4, 1.
        let degrees = [1u64, 0, 9, 3, 2, 9, 1];
        let sums = degrees.iter().scan(0, |sum, d| {
            *sum += d;
            Some(*sum)
        });
        let offsets: Vec<u64> = std::iter::once(0).chain(sums).collect();
        let order = SourceOrder::by_degree(&offsets);
        assert_eq!(order.vertex_at, [2, 5, 3, 4, 0, 6, 1]);
        for (slot, &v) in order.vertex_at.iter().enumerate() {
            assert_eq!(order.slot_of[v as usize] as usize, slot);
        }
    }
}
