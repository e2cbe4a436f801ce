//! Push delivery (Ligra's sparse edgeMap): active vertices scatter along their lists into one
//! message slot per target, dense over all sources or sparse over an ascending frontier, on
//! all threads with per-task buffers delivered in frontier order.

use rayon::prelude::*;

use super::pull::{prefetch_list, PREFETCH_AHEAD};
use super::Adjacency;
use crate::program::{EdgeRef, VertexProgram};
use crate::runtime::prefetch;
use crate::store::InMemoryCsr;
use crate::VertexId;

/// One iteration's combined messages, allocated once per run: only the `touched` targets are
/// reset after each iteration.
pub(super) struct Inbox<M> {
    pub(super) acc: Vec<M>,
    pub(super) received: Vec<bool>,
    /// Targets that received a message, ascending after [`Inbox::sort_touched`].
    pub(super) touched: Vec<VertexId>,
}

impl<M: Copy> Inbox<M> {
    /// Ascending order: sorts a small set, rescans the flags for a large one.
    pub(super) fn sort_touched(&mut self) {
        if self.touched.len() * 32 > self.received.len() {
            self.touched.clear();
            self.touched.extend((0..self.received.len() as u64).filter(|&v| self.received[v as usize]));
        } else if !self.touched.is_sorted() {
            self.touched.sort_unstable();
        }
    }
}

/// Folds `msg` into `target`'s slot. `TRACK`: lists a first-time target in `touched` (sparse
/// iterations); otherwise only flags it, with no branch per arc, and apply sweeps the flags
/// ([`apply`]) — what dense iterations, where most targets receive something, do
/// faster. The buffers come as slices held in locals, so the hot loop keeps their addresses and
/// lengths in registers (through `&mut Inbox` every store to a flag could have changed them).
#[inline(always)]
pub(super) fn deliver<P: VertexProgram, const TRACK: bool>(
    program: &P,
    acc: &mut [P::Msg],
    received: &mut [bool],
    touched: &mut Vec<VertexId>,
    target: VertexId,
    msg: P::Msg,
) {
    let t = target as usize;
    acc[t] = program.combine(acc[t], msg);
    if !TRACK {
        received[t] = true;
    } else if !received[t] {
        received[t] = true;
        touched.push(target);
    }
}

/// Push: every active vertex scatters along `lists`; returns the arcs scanned. `TRACK`: see
/// [`deliver`] and [`scatter_frontier`].
pub(super) fn push<P: VertexProgram, const TRACK: bool>(
    program: &P,
    adj: &Adjacency,
    lists: [Option<&InMemoryCsr>; 2],
    values: &[P::Value],
    frontier: &[VertexId],
    inbox: &mut Inbox<P::Msg>,
) -> u64 {
    let Inbox { acc, received, touched } = inbox;
    let (acc, received) = (acc.as_mut_slice(), received.as_mut_slice());
    scatter_frontier::<P, TRACK>(program, adj, lists, values, frontier, |target, msg| {
        deliver::<P, TRACK>(program, acc, received, touched, target, msg)
    })
}

/// Hands `emit` the message of every arc of `frontier`'s vertices along `lists`, in frontier
/// order; returns the arcs scanned. `TRACK` (a sparse push): asks ahead for the lists of the
/// frontier and, for a program that [supports pull](VertexProgram::supports_pull), for the
/// values of the targets, and skips the targets that do not
/// [want messages](VertexProgram::pull_wants) — by the program's promise they would neither
/// change nor become active (BFS: reached vertices), so only the targets that matter are
/// listed, flagged and applied ([`prefetch`]).
#[inline(always)]
pub(super) fn scatter_frontier<P: VertexProgram, const TRACK: bool>(
    program: &P,
    adj: &Adjacency,
    lists: [Option<&InMemoryCsr>; 2],
    values: &[P::Value],
    frontier: &[VertexId],
    mut emit: impl FnMut(VertexId, P::Msg),
) -> u64 {
    let skip_settled = TRACK && program.supports_pull();
    let ahead = PREFETCH_AHEAD as usize;
    let mut edges = 0;
    for (k, &v) in frontier.iter().enumerate() {
        let value = &values[v as usize];
        let source_out_degree = adj.out.degree(v);
        for csr in lists.into_iter().flatten() {
            if let (true, Some(&next)) = (TRACK, frontier.get(k + ahead)) {
                prefetch_list(csr, next);
            }
            edges += csr.degree(v);
            let targets = csr.neighbors(v);
            for (j, (&target, &weight)) in targets.iter().zip(adj.weights(csr, v)).enumerate() {
                if skip_settled {
                    if let Some(&next) = targets.get(j + ahead) {
                        prefetch(&values[next as usize]);
                    }
                    if !program.pull_wants(&values[target as usize]) {
                        continue;
                    }
                }
                if let Some(msg) = program.scatter(value, EdgeRef { source: v, target, weight, source_out_degree }) {
                    emit(target, msg);
                }
            }
        }
    }
    edges
}

/// Frontier vertices per task of a parallel sparse push ([`push_wanted`]).
pub(super) const PUSH_CHUNK: usize = 2048;

/// What one chunk of the frontier gathers: the arcs it scanned and its (target, message) pairs.
type ChunkMessages<M> = (u64, Vec<(VertexId, M)>);

/// A sparse push of a program that [supports pull](VertexProgram::supports_pull), in parallel:
/// chunks of the frontier list, each on its own thread, gather the messages for the targets
/// that [want them](VertexProgram::pull_wants) (BFS: unreached vertices, a few among many arcs);
/// the gathered messages are then delivered in frontier order, so every target folds them in
/// the order a sequential push would. Returns the arcs scanned.
pub(super) fn push_wanted<P: VertexProgram>(
    program: &P,
    adj: &Adjacency,
    lists: [Option<&InMemoryCsr>; 2],
    values: &[P::Value],
    frontier: &[VertexId],
    inbox: &mut Inbox<P::Msg>,
) -> u64 {
    let gathered: Vec<ChunkMessages<P::Msg>> = frontier
        .par_chunks(PUSH_CHUNK)
        .map(|chunk| {
            let mut wanted = Vec::new();
            let edges = scatter_frontier::<P, true>(program, adj, lists, values, chunk, |target, msg| {
                wanted.push((target, msg))
            });
            (edges, wanted)
        })
        .collect();
    let Inbox { acc, received, touched } = inbox;
    let mut edges = 0;
    for (scanned, wanted) in gathered {
        edges += scanned;
        for (target, msg) in wanted {
            deliver::<P, true>(program, acc, received, touched, target, msg);
        }
    }
    edges
}
