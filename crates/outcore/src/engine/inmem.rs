//! The in-memory reference engine: the oracle every other engine is tested against.
//!
//! It loads `csr-out` (and `csr-in` when the program reads in-edges) whole with
//! [`CsrLayout::load`](crate::store::CsrLayout::load) and runs programs in the plainest way, one
//! vertex after another in dense-id order, so that results are deterministic and the code can
//! be checked by reading it.
//!
//! **Vertex programs** run in iterations `i = 0, 1, ...`:
//! 1. `global_sum` = Σ over all vertices of `global_contribution(v, value, out_degree)` (0,
//!    without a pass, for programs that [have none](VertexProgram::has_global_contributions));
//! 2. scatter: every active vertex `v` calls `scatter` on each of its out-arcs `v → t`
//!    (`EdgeRef { source: v, target: t, .. }`) and, for [`EdgeDirection::Both`] on a directed
//!    store, on each in-arc `u → v` reversed (`EdgeRef { source: v, target: u, .. }`, with the
//!    weight of the arc and `source_out_degree = outdeg(v)`); an undirected store already holds
//!    both arcs of every edge, so there `Both` is the same as `Out`. Messages to one target are
//!    folded with `combine`, starting from `identity()`;
//! 3. apply: `apply` runs for every vertex that received a message (every vertex when
//!    `applies_to_all()`, with `identity()` if it received none); the vertices for which it
//!    returns true are the active set of iteration `i + 1`.
//!
//! **Direction optimisation** (Beamer et al., SC'12; Ligra, PPoPP'13 §4): a program that
//! [supports pull](crate::program::VertexProgram::supports_pull) has iteration `i` delivered by
//! *pull* instead when the frontier's vertices plus arcs exceed `arcs / 20` and both layouts
//! fit the budget: every vertex that wants messages folds the messages of its active
//! reverse-neighbours, in ascending source order, until satisfied (blocks of targets in
//! parallel: each target's fold is its own, so the result does not depend on the threads). The
//! program promises the same `apply` results either way; each iteration's [`Delivery`] is in its
//! stats. With [uniform messages](crate::program::VertexProgram::sends_uniform_messages) each
//! active source's message is computed once, before the pull, so a block of targets never reads
//! another's values and applies its own at once: one pass, no message buffer (and with
//! [one message per iteration](crate::program::VertexProgram::sends_one_message_per_iteration),
//! BFS, an arc costs a bit test only). By the same
//! promise a sparse push skips the targets a pull would skip (BFS: reached vertices). The
//! frontier is a bit per vertex (cache-resident for a pull's test of every arc) and an
//! ascending list, and the message buffers live for the whole run and are reset only where
//! touched, so a sparse iteration costs its frontier, not `n`.
//!
//! The run stops when no vertex is active, after `max_iterations()` iterations, or when
//! `end_iteration(i, active_next)` returns [`Control::Stop`] (`active_next` is the number of
//! vertices active in iteration `i + 1`).
//!
//! **Pregel programs** run in supersteps: a vertex computes in superstep 0 and afterwards when
//! it has not voted to halt or has received messages (which wakes it); messages sent in
//! superstep `s` are delivered in `s + 1`, in the order they were sent (folded with the
//! program's combiner when it has one). The aggregates of superstep `s` (`aggregate_width()`
//! slots, each folded with `aggregate` in vertex order, 0 when nobody contributed) are
//! `previous_aggregates()` in `s + 1`. The run stops when every vertex has halted and no message
//! is in flight, after `max_supersteps()`, or when `end_superstep_aggregates(s, aggregates)`
//! returns [`Control::Stop`]. Supersteps run their awake vertices in parallel chunks and build
//! the next inbox as a CSR in sender order, so the results are those of a run one vertex after
//! another (see `inmem/pregel.rs`).
//!
//! Before loading anything the engine checks its estimate of the memory it needs against the
//! budget and fails with [`Error::MemoryBudget`] when the graph does not fit.

use std::time::Instant;

use rayon::prelude::*;

use super::inmem_plan::{InMemorySizing, Load};
use super::planner::{GraphCounts, ProgramShape};
use super::{Delivery, InMemoryIteration, IterationFigures, IterationStats, Runner, PULL_DIVISOR};
use crate::error::{Error, Result};
use crate::program::{
    add_global_sums, global_contributions, Control, EdgeDirection, EdgeRef, IterationContext, VertexProgram,
};
use crate::runtime::{format_size, prefetch, Charge, ProgressUnit};
use crate::store::{Direction, InMemoryCsr, Store};
use crate::VertexId;

mod pregel;
pub use pregel::run_pregel;

pub(super) use pregel::state_bytes as pregel_state_bytes;

/// Checks the run's sizing against the budget (saying what the graph needs and which
/// `--memory` would do), then charges its parts to the run's ledger for as long as the run
/// holds them.
fn charge(runner: &Runner, sizing: &InMemorySizing) -> Result<Vec<Charge>> {
    check_budget(runner, sizing.total())?;
    runner.ledger().charge_parts(&sizing.parts())
}

fn check_budget(runner: &Runner, needed: u64) -> Result<()> {
    let budget = runner.memory();
    if needed > budget.bytes() {
        return Err(Error::MemoryBudget(format!(
            "the in-memory engine needs about {} for this graph ({} vertices, {} arcs) but the budget is {}; \
             raise it with --memory {}",
            format_size(needed),
            runner.store().num_vertices(),
            runner.store().num_arcs(),
            budget,
            format_size(needed.next_power_of_two()).replace(".00 ", "").replace(' ', ""),
        )));
    }
    Ok(())
}

/// The loaded adjacency: out-arcs, and in-arcs when asked for (`None` on undirected stores,
/// whose out-arcs already hold both directions, and when not needed).
struct Adjacency {
    out: InMemoryCsr,
    inn: Option<InMemoryCsr>,
    /// 1.0 repeated, for the weights of unweighted stores.
    ones: Vec<f64>,
}

impl Adjacency {
    fn load(store: &Store, load: Load) -> Result<Adjacency> {
        let out = store.csr(Direction::Out)?.load_with(load.weights)?;
        let inn = if load.in_edges && store.is_directed() {
            Some(store.csr(Direction::In)?.load_with(load.weights)?)
        } else {
            None
        };
        let max_degree = |c: &InMemoryCsr| (0..c.num_vertices()).map(|v| c.degree(v)).max().unwrap_or(0);
        let max = max_degree(&out).max(inn.as_ref().map_or(0, max_degree));
        Ok(Adjacency { out, inn, ones: vec![1.0; max as usize] })
    }

    fn weights<'a>(&'a self, csr: &'a InMemoryCsr, v: VertexId) -> &'a [f64] {
        csr.weights_of(v).unwrap_or(&self.ones[..csr.degree(v) as usize])
    }

    /// In-neighbours: the in-arcs on a directed store, the out-arcs on an undirected one.
    fn in_csr(&self) -> &InMemoryCsr {
        self.inn.as_ref().unwrap_or(&self.out)
    }
}

/// One bit per vertex: `n / 8` bytes, so that a pull's test of each arc's source stays in the
/// processor's cache while the arcs stream past (a byte per vertex would not, at millions of
/// vertices).
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    #[inline]
    fn get(&self, i: VertexId) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 != 0
    }

    fn set(&mut self, i: VertexId) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }

    fn unset(&mut self, i: VertexId) {
        self.0[(i / 64) as usize] &= !(1 << (i % 64));
    }
}

/// The active vertices: a bit per vertex (what pull iterations test) and the list of them in
/// ascending order (what push iterations walk), so a sparse frontier costs its size, not `n`.
struct Frontier {
    active: Bits,
    list: Vec<VertexId>,
}

impl Frontier {
    fn push(&mut self, v: VertexId) {
        self.active.set(v);
        self.list.push(v);
    }

    /// Unsets the listed bits, or zeroes every word when that is fewer stores.
    fn clear(&mut self) {
        if self.list.len() > self.active.0.len() {
            self.active.0.fill(0);
        } else {
            for &v in &self.list {
                self.active.unset(v);
            }
        }
        self.list.clear();
    }
}

/// What each active source sends in a pull of uniform messages
/// ([`VertexProgram::sends_uniform_messages`]): `sends` has the active sources whose `scatter`
/// gave a message, and `msg[s]` is that message — or, where the program
/// [sends one per iteration](VertexProgram::sends_one_message_per_iteration), `one` is and
/// `msg` stays empty, so a pull never loads a message from a source's random address. Refilled
/// for the active sources only, so a pull costs `n / 64` words plus its frontier here.
struct Sent<M> {
    msg: Vec<M>,
    sends: Bits,
    one: Option<M>,
}

impl<M: Copy + Send + Sync> Sent<M> {
    fn new<P: VertexProgram<Msg = M>>(program: &P, n: usize) -> Sent<M> {
        let per_source = if program.sends_one_message_per_iteration() { 0 } else { n };
        Sent { msg: vec![program.identity(); per_source], sends: Bits::new(n), one: None }
    }

    fn fill<P: VertexProgram<Msg = M>>(&mut self, program: &P, adj: &Adjacency, values: &[P::Value], active: &Bits) {
        const WORDS: usize = PULL_BLOCK / 64;
        let mut msg_blocks: Vec<Option<&mut [M]>> = if self.msg.is_empty() {
            (0..self.sends.0.len().div_ceil(WORDS)).map(|_| None).collect()
        } else {
            self.msg.chunks_mut(PULL_BLOCK).map(Some).collect()
        };
        let blocks = self.sends.0.par_chunks_mut(WORDS).zip(msg_blocks.par_iter_mut());
        let firsts: Vec<Option<M>> = blocks
            .enumerate()
            .map(|(b, (sends, msgs))| {
                let mut first = None;
                for (w, sends) in sends.iter_mut().enumerate() {
                    let (mut word, mut sent) = (active.0[b * WORDS + w], 0);
                    while word != 0 {
                        let bit = word.trailing_zeros() as usize;
                        word &= word - 1;
                        let s = (b * PULL_BLOCK + w * 64 + bit) as u64;
                        let edge = EdgeRef { source: s, target: s, weight: 1.0, source_out_degree: adj.out.degree(s) };
                        if let Some(msg) = program.scatter(&values[s as usize], edge) {
                            if let Some(msgs) = msgs.as_deref_mut() {
                                msgs[w * 64 + bit] = msg;
                            }
                            first.get_or_insert(msg);
                            sent |= 1 << bit;
                        }
                    }
                    *sends = sent;
                }
                first
            })
            .collect();
        self.one = if self.msg.is_empty() { firsts.into_iter().flatten().next() } else { None };
    }
}

/// One iteration's combined messages, allocated once per run: only the `touched` targets are
/// reset after each iteration.
struct Inbox<M> {
    acc: Vec<M>,
    received: Vec<bool>,
    /// Targets that received a message, ascending after [`Inbox::sort_touched`].
    touched: Vec<VertexId>,
}

impl<M: Copy> Inbox<M> {
    /// Ascending order: sorts a small set, rescans the flags for a large one.
    fn sort_touched(&mut self) {
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
fn deliver<P: VertexProgram, const TRACK: bool>(
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
fn push<P: VertexProgram, const TRACK: bool>(
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
fn scatter_frontier<P: VertexProgram, const TRACK: bool>(
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
const PUSH_CHUNK: usize = 2048;

/// A sparse push of a program that [supports pull](VertexProgram::supports_pull), in parallel:
/// chunks of the frontier list, each on its own thread, gather the messages for the targets
/// that [want them](VertexProgram::pull_wants) (BFS: unreached vertices, a few among many arcs);
/// the gathered messages are then delivered in frontier order, so every target folds them in
/// the order a sequential push would. Returns the arcs scanned.
fn push_wanted<P: VertexProgram>(
    program: &P,
    adj: &Adjacency,
    lists: [Option<&InMemoryCsr>; 2],
    values: &[P::Value],
    frontier: &[VertexId],
    inbox: &mut Inbox<P::Msg>,
) -> u64 {
    let gathered: Vec<(u64, Vec<(VertexId, P::Msg)>)> = frontier
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

/// Targets per task of a parallel pull.
const PULL_BLOCK: usize = 4096;

/// Pull: every vertex that wants messages scans its `reverse` arcs for active sources, folding
/// in ascending source order until satisfied (see [`VertexProgram::supports_pull`]); returns
/// the arcs scanned. Blocks of targets run in parallel — each target's fold is its own, in the
/// same order whatever the threads — and their `touched` lists are joined in block order, so
/// `touched` comes out sorted. Programs with uniform messages pull by [`pull_and_apply`].
fn pull<P: VertexProgram>(
    program: &P,
    adj: &Adjacency,
    reverse: &InMemoryCsr,
    values: &[P::Value],
    active: &Bits,
    inbox: &mut Inbox<P::Msg>,
) -> u64 {
    let blocks: Vec<(u64, Vec<VertexId>)> = inbox
        .acc
        .par_chunks_mut(PULL_BLOCK)
        .zip(inbox.received.par_chunks_mut(PULL_BLOCK))
        .enumerate()
        .map(|(b, (acc, received))| {
            let first = (b * PULL_BLOCK) as u64;
            let mut edges = 0u64;
            let mut touched = Vec::new();
            for (i, (slot, flag)) in acc.iter_mut().zip(received.iter_mut()).enumerate() {
                let t = first + i as u64;
                prefetch_list(reverse, t + PREFETCH_AHEAD);
                if !program.pull_wants(&values[t as usize]) {
                    continue;
                }
                let (folded, scanned) = fold_active_sources(program, adj, reverse, values, active, t);
                edges += scanned;
                if let Some(msg) = folded {
                    *slot = program.combine(*slot, msg);
                    if !*flag {
                        *flag = true;
                        touched.push(t);
                    }
                }
            }
            (edges, touched)
        })
        .collect();
    let mut edges = 0;
    for (scanned, touched) in blocks {
        edges += scanned;
        inbox.touched.extend(touched);
    }
    edges
}

/// A pull of uniform messages with [`apply`] fused in, over blocks of targets in parallel:
/// folds come from `sent` (filled for this iteration, [`Sent::fill`]), never from `values`, so a
/// block may apply its own targets while other blocks still pull — one pass instead of a pull,
/// a message array and an apply. An arc costs a bit test (and a message load unless the program
/// sends one message per iteration). `frontier` comes cleared and leaves with the vertices
/// `apply` activated, ascending. Returns the arcs scanned and the vertices applied.
fn pull_and_apply<P: VertexProgram>(
    program: &P,
    ctx: &IterationContext,
    reverse: &InMemoryCsr,
    values: &mut [P::Value],
    sent: &Sent<P::Msg>,
    frontier: &mut Frontier,
) -> (u64, u64) {
    let (identity, all) = (program.identity(), program.applies_to_all());
    let blocks = values.par_chunks_mut(PULL_BLOCK).zip(frontier.active.0.par_chunks_mut(PULL_BLOCK / 64));
    let done: Vec<(u64, u64, Vec<VertexId>)> = blocks
        .enumerate()
        .map(|(b, (values, words))| {
            let first = (b * PULL_BLOCK) as u64;
            let (mut edges, mut applied, mut next) = (0, 0, Vec::new());
            for (i, value) in values.iter_mut().enumerate() {
                let t = first + i as u64;
                prefetch_list(reverse, t + PREFETCH_AHEAD);
                let folded = if program.pull_wants(value) {
                    let (folded, scanned) = fold_sent(program, reverse, sent, t);
                    edges += scanned;
                    folded
                } else {
                    None
                };
                if folded.is_none() && !all {
                    continue;
                }
                applied += 1;
                // As a push's slot would hold it: the identity combined with the fold.
                let msg = folded.map_or(identity, |m| program.combine(identity, m));
                if program.apply(t, value, msg, ctx) {
                    words[i / 64] |= 1 << (i % 64);
                    next.push(t);
                }
            }
            (edges, applied, next)
        })
        .collect();
    let (mut edges, mut applied) = (0, 0);
    for (scanned, count, next) in done {
        edges += scanned;
        applied += count;
        frontier.list.extend(next);
    }
    (edges, applied)
}

/// How far ahead (targets of a pull, frontier vertices or arcs of a sparse push) the engine asks
/// for the memory it will need.
const PREFETCH_AHEAD: u64 = 16;

/// [`prefetch`] of the first arcs of `v`'s list in `csr`, when `v` is a vertex with arcs.
#[inline(always)]
fn prefetch_list(csr: &InMemoryCsr, v: VertexId) {
    if let Some(first) = csr.offsets.get(v as usize).and_then(|&o| csr.targets.get(o as usize)) {
        prefetch(first);
    }
}

/// The messages of `t`'s active reverse-neighbours folded in ascending source order, stopping
/// once the program is satisfied; and the arcs scanned.
#[inline]
fn fold_active_sources<P: VertexProgram>(
    program: &P,
    adj: &Adjacency,
    reverse: &InMemoryCsr,
    values: &[P::Value],
    active: &Bits,
    t: VertexId,
) -> (Option<P::Msg>, u64) {
    let mut folded = None;
    let mut scanned = 0;
    for (&source, &weight) in reverse.neighbors(t).iter().zip(adj.weights(reverse, t)) {
        scanned += 1;
        if !active.get(source) {
            continue;
        }
        let source_out_degree = adj.out.degree(source);
        let edge = EdgeRef { source, target: t, weight, source_out_degree };
        if let Some(msg) = program.scatter(&values[source as usize], edge) {
            let fold = program.combine(folded.unwrap_or(program.identity()), msg);
            folded = Some(fold);
            if program.pull_satisfied(&fold) {
                break;
            }
        }
    }
    (folded, scanned)
}

/// [`fold_active_sources`] for uniform messages: `sent` holds what each active source sends.
#[inline]
fn fold_sent<P: VertexProgram>(
    program: &P,
    reverse: &InMemoryCsr,
    sent: &Sent<P::Msg>,
    t: VertexId,
) -> (Option<P::Msg>, u64) {
    let (from, to) = (reverse.offsets[t as usize] as usize, reverse.offsets[t as usize + 1] as usize);
    let sources = &reverse.targets[from..to];
    match sent.one {
        Some(one) => fold_sent_by(program, sources, &[], &sent.sends, |_| {}, |_| one),
        None => {
            // The sources further on (into the next targets' lists), whose messages are wanted next.
            let later = reverse.targets.get(from + MESSAGE_PREFETCH..).unwrap_or_default();
            let ahead = |s: VertexId| prefetch(sent.msg.as_ptr().wrapping_add(s as usize));
            fold_sent_by(program, sources, later, &sent.sends, ahead, |s| sent.msg[s as usize])
        }
    }
}

/// How many arcs ahead a pull asks for the messages of the sources: a fold's loop is short, so
/// it runs further ahead than [`PREFETCH_AHEAD`] (the stream engine's pull measured the same).
const MESSAGE_PREFETCH: usize = 48;

/// The fold of the messages (`msg_of`) of those of `sources` that `sends` has, in order, until
/// satisfied; and the arcs scanned. `ahead` is told `later[i]` at arc `i`, to prefetch.
#[inline(always)]
fn fold_sent_by<P: VertexProgram>(
    program: &P,
    sources: &[VertexId],
    later: &[VertexId],
    sends: &Bits,
    ahead: impl Fn(VertexId),
    msg_of: impl Fn(VertexId) -> P::Msg,
) -> (Option<P::Msg>, u64) {
    let mut folded = None;
    for (i, &source) in sources.iter().enumerate() {
        if let Some(&next) = later.get(i) {
            ahead(next);
        }
        if sends.get(source) {
            let fold = program.combine(folded.unwrap_or(program.identity()), msg_of(source));
            folded = Some(fold);
            if program.pull_satisfied(&fold) {
                return (folded, i as u64 + 1);
            }
        }
    }
    (folded, sources.len() as u64)
}

/// Vertices per task of a parallel apply (a multiple of 64: one task owns whole frontier words).
const APPLY_BLOCK: usize = 4096;

/// Apply, over blocks of vertices in parallel (each vertex's `apply` is its own, so the result
/// does not depend on the threads): to every vertex when `applies_to_all()`, else to the
/// targets of `inbox.touched` when `listed` (a sparse iteration: its cost is theirs), else to
/// the flagged ones (a dense push flags without listing). Each message is taken out of its
/// slot, leaving the identity, so no reset pass follows; the vertices `apply` activates form
/// the (cleared) `frontier`, in ascending order. Returns how many vertices were applied.
fn apply<P: VertexProgram>(
    program: &P,
    ctx: &IterationContext,
    values: &mut [P::Value],
    inbox: &mut Inbox<P::Msg>,
    listed: bool,
    frontier: &mut Frontier,
) -> u64 {
    let (identity, all) = (program.identity(), program.applies_to_all());
    let touched = &inbox.touched;
    let block_of = |b: usize| touched.partition_point(|&t| (t as usize) < b * APPLY_BLOCK);
    let blocks = values
        .par_chunks_mut(APPLY_BLOCK)
        .zip(inbox.acc.par_chunks_mut(APPLY_BLOCK))
        .zip(inbox.received.par_chunks_mut(APPLY_BLOCK))
        .zip(frontier.active.0.par_chunks_mut(APPLY_BLOCK / 64));
    let activated: Vec<(u64, Vec<VertexId>)> = blocks
        .enumerate()
        .map(|(b, (((values, acc), received), words))| {
            let (first, len) = (b * APPLY_BLOCK, values.len());
            let (mut applied, mut next) = (0, Vec::new());
            let mut apply_one = |i: usize| {
                applied += 1;
                let v = (first + i) as u64;
                if program.apply(v, &mut values[i], std::mem::replace(&mut acc[i], identity), ctx) {
                    words[i / 64] |= 1 << (i % 64);
                    next.push(v);
                }
            };
            if all {
                (0..len).for_each(&mut apply_one);
                received.fill(false);
            } else if listed {
                for &t in &touched[block_of(b)..block_of(b + 1)] {
                    received[t as usize - first] = false;
                    apply_one(t as usize - first);
                }
            } else {
                for i in 0..len {
                    if std::mem::take(&mut received[i]) {
                        apply_one(i);
                    }
                }
            }
            (applied, next)
        })
        .collect();
    inbox.touched.clear();
    let mut applied = 0;
    for (count, next) in activated {
        applied += count;
        frontier.list.extend(next);
    }
    applied
}

/// Runs a vertex program to completion; values in dense-id order. Programs that
/// [support pull](VertexProgram::supports_pull) switch per iteration between push and pull
/// (recorded as [`Delivery`] in the iteration's stats) when both layouts fit the budget.
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let direction = program.direction();
    let store = runner.store();
    let sizing = InMemorySizing::of(&ProgramShape::vertex(program), GraphCounts::of(store), runner.memory().bytes());
    let _charges = charge(runner, &sizing)?;
    let (can_pull, load) = (sizing.pulls, sizing.load);
    let info = runner.graph_info();
    let adj = Adjacency::load(store, load)?;
    // The lists an active vertex sends along (`In`: its in-arcs, reversed), and those a pull
    // iteration scans (their reverse).
    let (lists, reverse): ([Option<&InMemoryCsr>; 2], &InMemoryCsr) = match direction {
        EdgeDirection::Out => ([Some(&adj.out), None], adj.in_csr()),
        EdgeDirection::Both => ([Some(&adj.out), adj.inn.as_ref()], &adj.out),
        EdgeDirection::In => ([Some(adj.in_csr()), None], &adj.out),
    };
    let n = info.num_vertices as usize;

    let mut values: Vec<P::Value> = (0..n as u64).map(|v| program.init(v, &info)).collect();
    let mut frontier = Frontier { active: Bits::new(n), list: Vec::new() };
    (0..n as u64).filter(|&v| program.initially_active(v, &info)).for_each(|v| frontier.push(v));
    let mut inbox = Inbox { acc: vec![program.identity(); n], received: vec![false; n], touched: Vec::new() };
    let mut sent = (can_pull && program.sends_uniform_messages()).then(|| Sent::new(program, n));
    let bar = runner.progress().start(
        "iterations (inmem)",
        program.max_iterations().map(|m| m as u64),
        ProgressUnit::Iterations,
    );
    let mut iteration = 0;
    loop {
        runner.cancel_token().check()?;
        let active_vertices = frontier.list.len() as u64;
        if active_vertices == 0 || program.max_iterations().is_some_and(|max| iteration >= max) {
            break;
        }
        let started = Instant::now();
        let [global_sum, second_global_sum] = if program.has_global_contributions() {
            (0..n)
                .map(|v| global_contributions(program, v as u64, &values[v], adj.out.degree(v as u64)))
                .fold([0.0; 2], add_global_sums)
        } else {
            [0.0; 2]
        };

        let frontier_arcs: u64 =
            frontier.list.par_iter().map(|&v| lists.iter().flatten().map(|c| c.degree(v)).sum::<u64>()).sum();
        let dense = active_vertices + frontier_arcs > info.num_arcs / PULL_DIVISOR;
        let delivery = can_pull.then_some(if dense { Delivery::Pull } else { Delivery::Push });
        let ctx = IterationContext { iteration, graph: info, global_sum, second_global_sum };
        // Tasks of a parallel sparse push ([`push_wanted`]); 0 when the push ran on one thread.
        let mut push_tasks = 0;
        let (edges_processed, applied) = match (delivery, sent.as_mut()) {
            (Some(Delivery::Pull), Some(sent)) => {
                sent.fill(program, &adj, &values, &frontier.active);
                frontier.clear();
                pull_and_apply(program, &ctx, reverse, &mut values, sent, &mut frontier)
            }
            _ => {
                let edges = match delivery {
                    Some(Delivery::Pull) => pull(program, &adj, reverse, &values, &frontier.active, &mut inbox),
                    _ if dense => push::<P, false>(program, &adj, lists, &values, &frontier.list, &mut inbox),
                    _ => {
                        let edges = if program.supports_pull() && frontier.list.len() > PUSH_CHUNK {
                            push_tasks = frontier.list.len().div_ceil(PUSH_CHUNK) as u64;
                            push_wanted(program, &adj, lists, &values, &frontier.list, &mut inbox)
                        } else {
                            push::<P, true>(program, &adj, lists, &values, &frontier.list, &mut inbox)
                        };
                        inbox.sort_touched();
                        edges
                    }
                };
                // A dense push flagged its targets without listing them: apply sweeps the flags.
                let listed = delivery == Some(Delivery::Pull) || !dense;
                frontier.clear();
                (edges, apply(program, &ctx, &mut values, &mut inbox, listed, &mut frontier))
            }
        };
        runner.record_iteration(IterationStats {
            iteration,
            active_vertices,
            edges_processed,
            seconds: started.elapsed().as_secs_f64(),
            delivery,
            figures: IterationFigures::InMemory(InMemoryIteration {
                applied: applied as u64,
                push_tasks: push_tasks as u64,
            }),
            ..IterationStats::default()
        });
        bar.inc(1);
        let active_next = frontier.list.len() as u64;
        iteration += 1;
        if program.end_iteration(iteration - 1, active_next) == Control::Stop {
            break;
        }
    }
    bar.finish();
    Ok(values)
}

/// Runs a neighborhood query on the whole graph in memory (`nwsm::query::run_in_memory`, the
/// oracle of the nwsm engine): both layouts plus the full lists (4 bytes per arc) and an output
/// and a gathered value per vertex.
pub fn run_neighborhood_query<Q: super::nwsm::NeighborhoodQuery>(
    runner: &Runner,
    query: &Q,
) -> Result<super::nwsm::QueryResult<Q::Output>> {
    let store = runner.store();
    super::nwsm::query::check_vertex_count(store)?;
    let shape = ProgramShape::query(query.levels(), std::mem::size_of::<Q::Output>() as u64);
    let _charges = charge(runner, &InMemorySizing::of(&shape, GraphCounts::of(store), runner.memory().bytes()))?;
    let out = store.csr(crate::store::Direction::Out)?.load()?;
    let inn = if store.is_directed() { Some(store.csr(crate::store::Direction::In)?.load()?) } else { None };
    let started = Instant::now();
    let result = super::nwsm::query::run_in_memory(&out, inn.as_ref(), query)?;
    runner.record_iteration(IterationStats {
        iteration: 0,
        active_vertices: store.num_vertices(),
        edges_processed: store.num_arcs(),
        seconds: started.elapsed().as_secs_f64(),
        ..IterationStats::default()
    });
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineKind, RunOptions};
    use crate::program::{GraphInfo, MessageKind, PregelContext, PregelProgram};
    use crate::runtime::MemoryBudget;
    use crate::store::{build_in_memory, InMemoryGraph, OriginalIds};

    pub(super) fn with_graph<T>(n: u64, edges: &[(usize, usize)], directed: bool, f: impl FnOnce(&Runner) -> T) -> T {
        let dir = tempfile::tempdir().unwrap();
        let graph = InMemoryGraph {
            vertices: OriginalIds::U64((0..n).collect()),
            edges: edges.iter().map(|&(s, t)| (s, t, 1.0)).collect(),
            directed,
            weighted: false,
        };
        let store = build_in_memory(&dir.path().join("g"), &graph).unwrap();
        f(&Runner::new(
            &store,
            RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 30), ..RunOptions::default() },
        ))
    }

    /// Counts the messages each vertex receives in one iteration, along out- or both directions.
    struct CountMessages(EdgeDirection);

    impl VertexProgram for CountMessages {
        type Value = u64;
        type Msg = u64;
        fn message_kind(&self) -> MessageKind {
            MessageKind::Delta
        }
        fn direction(&self) -> EdgeDirection {
            self.0
        }
        fn init(&self, _: VertexId, _: &GraphInfo) -> u64 {
            0
        }
        fn scatter(&self, _: &u64, _: EdgeRef) -> Option<u64> {
            Some(1)
        }
        fn combine(&self, a: u64, b: u64) -> u64 {
            a + b
        }
        fn identity(&self) -> u64 {
            0
        }
        fn apply(&self, _: VertexId, value: &mut u64, msg: u64, _: &IterationContext) -> bool {
            *value = msg;
            false
        }
    }

    #[test]
    fn both_directions_on_directed_and_undirected_stores() {
        let edges = [(0, 1), (0, 2)];
        assert_eq!(
            with_graph(3, &edges, true, |r| r.run_vertex_program(&CountMessages(EdgeDirection::Out))).unwrap(),
            [0, 1, 1]
        );
        assert_eq!(
            with_graph(3, &edges, true, |r| r.run_vertex_program(&CountMessages(EdgeDirection::Both))).unwrap(),
            [2, 1, 1]
        );
        // an undirected store already holds both arcs: Both is Out
        assert_eq!(
            with_graph(3, &edges, false, |r| r.run_vertex_program(&CountMessages(EdgeDirection::Both))).unwrap(),
            [2, 1, 1]
        );
        assert_eq!(
            with_graph(3, &edges, false, |r| r.run_vertex_program(&CountMessages(EdgeDirection::Out))).unwrap(),
            [2, 1, 1]
        );
    }

    /// `P` with its pull form hidden: the push-only reference of the direction-optimised runs.
    struct PushOnly<P>(P);

    impl<P: VertexProgram> VertexProgram for PushOnly<P> {
        type Value = P::Value;
        type Msg = P::Msg;
        fn message_kind(&self) -> MessageKind {
            self.0.message_kind()
        }
        fn direction(&self) -> EdgeDirection {
            self.0.direction()
        }
        fn init(&self, v: VertexId, graph: &GraphInfo) -> P::Value {
            self.0.init(v, graph)
        }
        fn initially_active(&self, v: VertexId, graph: &GraphInfo) -> bool {
            self.0.initially_active(v, graph)
        }
        fn scatter(&self, value: &P::Value, edge: EdgeRef) -> Option<P::Msg> {
            self.0.scatter(value, edge)
        }
        fn combine(&self, a: P::Msg, b: P::Msg) -> P::Msg {
            self.0.combine(a, b)
        }
        fn identity(&self) -> P::Msg {
            self.0.identity()
        }
        fn apply(&self, v: VertexId, value: &mut P::Value, msg: P::Msg, ctx: &IterationContext) -> bool {
            self.0.apply(v, value, msg, ctx)
        }
        fn applies_to_all(&self) -> bool {
            self.0.applies_to_all()
        }
        fn global_contribution(&self, v: VertexId, value: &P::Value, out_degree: u64) -> f64 {
            self.0.global_contribution(v, value, out_degree)
        }
        fn second_global_contribution(&self, v: VertexId, value: &P::Value, out_degree: u64) -> f64 {
            self.0.second_global_contribution(v, value, out_degree)
        }
        fn max_iterations(&self) -> Option<usize> {
            self.0.max_iterations()
        }
        fn end_iteration(&self, iteration: usize, active_vertices: u64) -> Control {
            self.0.end_iteration(iteration, active_vertices)
        }
    }

    fn bfs(source: VertexId, backward: bool) -> crate::algo::bfs::Bfs {
        let direction = if backward { EdgeDirection::In } else { EdgeDirection::Out };
        crate::algo::bfs::Bfs { source, direction }
    }

    fn deliveries(r: &Runner) -> Vec<Option<Delivery>> {
        r.finish("bfs").per_iteration.iter().map(|i| i.delivery).collect()
    }

    #[test]
    fn bfs_pulls_on_dense_frontiers_and_pushes_on_sparse_ones() {
        // 0 → 1..=50 → 51..=100 → 101 → a chain to 300: 301 arcs, so a frontier pulls when its
        // vertices and arcs exceed 15.
        let mut edges: Vec<(usize, usize)> = (1..=50).flat_map(|i| [(0, i), (i, i + 50)]).collect();
        edges.push((51, 101));
        edges.extend((101..300).map(|i| (i, i + 1)));
        for directed in [true, false] {
            let (pushed, pulled, stats) = with_graph(301, &edges, directed, |r| {
                let pushed = r.run_vertex_program(&PushOnly(bfs(0, false))).unwrap();
                let first = deliveries(r);
                assert!(first.iter().all(|d| d.is_none()));
                let pulled = r.run_vertex_program(&bfs(0, false)).unwrap();
                // the runner's stats hold both runs
                (pushed, pulled, deliveries(r)[first.len()..].to_vec())
            });
            assert_eq!(pushed, pulled);
            assert_eq!(pulled[300], 202);
            assert_eq!(stats[..3], [Some(Delivery::Pull); 3], "directed {directed}");
            assert!(stats[3..].iter().all(|&d| d == Some(Delivery::Push)), "directed {directed}: {stats:?}");
        }
    }

    fn in_memory(i: &IterationStats) -> &InMemoryIteration {
        match &i.figures {
            IterationFigures::InMemory(figures) => figures,
            other => panic!("not an inmem vertex iteration: {other:?}"),
        }
    }

    fn applied(r: &Runner) -> Vec<u64> {
        r.finish("bfs").per_iteration.iter().map(|i| in_memory(i).applied).collect()
    }

    #[test]
    fn a_pull_of_one_message_per_iteration_keeps_no_message_per_source() {
        // 0 → 1..=3, 3 → 4: the frontier {1, 3} at depth 1 sends depth 2; vertex 2 sends nothing
        // in this made-up frontier because it is not active.
        with_graph(5, &[(0, 1), (0, 2), (0, 3), (3, 4)], true, |r| {
            let adj = Adjacency::load(r.store(), Load { in_edges: true, weights: true }).unwrap();
            let program = bfs(0, false);
            let mut sent = Sent::new(&program, 5);
            assert!(sent.msg.is_empty());
            let mut active = Bits::new(5);
            active.set(1);
            active.set(3);
            sent.fill(&program, &adj, &[0, 1, 1, 1, 2], &active);
            assert_eq!(sent.one, Some(2));
            assert_eq!(sent.sends.0, active.0);
            // PageRank's messages differ per source: one slot each, no single message.
            let pr = crate::algo::pagerank::PageRank { damping: 0.85, iterations: 20 };
            let mut sent = Sent::new(&pr, 5);
            sent.fill(&pr, &adj, &[0.2; 5], &active);
            assert_eq!((sent.msg.len(), sent.one), (5, None));
        });
    }

    #[test]
    fn a_wide_sparse_frontier_pushes_from_all_threads_in_frontier_order() {
        // 0 → 1..=3000 → 3001..=6000, each leaf also pointing back at 0 and at its neighbour
        // leaf, beside a 250,000-arc chain never reached: the frontiers of 3000 vertices (and
        // 9000 arcs, then none) stay under arcs / 20, so they push sparsely, from two tasks.
        let mut edges: Vec<(usize, usize)> = (1..=3000).flat_map(|i| [(0, i), (i, i + 3000), (i, 0)]).collect();
        edges.extend((1..3000).map(|i| (i, i + 1)));
        edges.extend((6001..256_001).map(|i| (i, i + 1)));
        let (pushed, optimised, tasks) = with_graph(256_002, &edges, true, |r| {
            let pushed = r.run_vertex_program(&PushOnly(bfs(0, false))).unwrap();
            let first = deliveries(r).len();
            let optimised = r.run_vertex_program(&bfs(0, false)).unwrap();
            let stats = r.finish("bfs");
            let tasks: Vec<u64> = stats.per_iteration[first..].iter().map(|i| in_memory(i).push_tasks).collect();
            (pushed, optimised, tasks)
        });
        assert_eq!(pushed, optimised);
        assert_eq!(
            (optimised[2], optimised[3000], optimised[6000], optimised[6001]),
            (1, 1, 2, crate::algo::bfs::UNREACHABLE)
        );
        assert_eq!(tasks, [0, 2, 2]);
    }

    #[test]
    fn sparse_push_skips_reached_targets() {
        // a path with arcs both ways, 0 ⇄ 1 ⇄ … ⇄ 199: every frontier is one vertex with two
        // arcs (far below the pull threshold), one of them back to a reached vertex
        let edges: Vec<(usize, usize)> = (0..199).flat_map(|i| [(i, i + 1), (i + 1, i)]).collect();
        let (pushed, optimised) = with_graph(200, &edges, true, |r| {
            let pushed = (r.run_vertex_program(&PushOnly(bfs(0, false))).unwrap(), applied(r));
            let first = applied(r).len();
            let optimised = r.run_vertex_program(&bfs(0, false)).unwrap();
            assert!(deliveries(r)[first..].iter().all(|&d| d == Some(Delivery::Push)));
            (pushed, (optimised, applied(r)[first..].to_vec()))
        });
        assert_eq!(pushed.0, optimised.0);
        assert_eq!(optimised.0[199], 199);
        // the push-only form applies the reached predecessor too; BFS skips it (and the last
        // vertex, 199, has only its predecessor to send to)
        assert_eq!(pushed.1[..3], [1, 2, 2]);
        assert_eq!(pushed.1.len(), 200);
        let mut expected = vec![1; 199];
        expected.push(0);
        assert_eq!(optimised.1, expected);
    }

    #[test]
    fn no_pull_when_the_budget_holds_only_one_layout() {
        let edges: Vec<(usize, usize)> = (1..100).map(|i| (0, i)).collect();
        let dir = tempfile::tempdir().unwrap();
        let graph = InMemoryGraph {
            vertices: OriginalIds::U64((0..100).collect()),
            edges: edges.iter().map(|&(s, t)| (s, t, 1.0)).collect(),
            directed: true,
            weighted: false,
        };
        let store = build_in_memory(&dir.path().join("g"), &graph).unwrap();
        // one layout (101 offsets + 99 targets, 8 bytes each) and 34 bytes per vertex
        let budget = MemoryBudget::new(200 * 8 + 100 * 34);
        let r =
            Runner::new(&store, RunOptions { engine: EngineKind::InMemory, memory: budget, ..RunOptions::default() });
        assert_eq!(r.run_vertex_program(&bfs(0, false)).unwrap()[99], 1);
        // the hub's iteration and the leaves' would pull (100 > 99 / 20), but push is the
        // only form without csr-in: no choice recorded
        assert_eq!(deliveries(&r), [None; 2]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn direction_optimised_bfs_equals_push_only(
            n in 1usize..80,
            raw in proptest::collection::vec((0usize..80, 0usize..80), 0..400),
            directed in proptest::bool::ANY,
            backward in proptest::bool::ANY,
            pick in 0usize..80,
        ) {
            let edges: Vec<(usize, usize)> = raw.into_iter().filter(|&(s, t)| s < n && t < n).collect();
            let source = (pick % n) as u64;
            let (pushed, optimised) = with_graph(n as u64, &edges, directed, |r| {
                let pushed = r.run_vertex_program(&PushOnly(bfs(source, backward))).unwrap();
                (pushed, r.run_vertex_program(&bfs(source, backward)).unwrap())
            });
            proptest::prop_assert_eq!(pushed, optimised);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// PageRank pulls (uniform messages, computed once per source) and gets the very bits a
        /// push in vertex order gets.
        #[test]
        fn pulled_pagerank_is_bit_identical_to_pushed(
            n in 1usize..60,
            raw in proptest::collection::vec((0usize..60, 0usize..60), 0..300),
            directed in proptest::bool::ANY,
        ) {
            let edges: Vec<(usize, usize)> = raw.into_iter().filter(|&(s, t)| s < n && t < n).collect();
            let program = crate::algo::pagerank::PageRank { damping: 0.85, iterations: 6 };
            let (pushed, pulled, stats) = with_graph(n as u64, &edges, directed, |r| {
                let pushed = r.run_vertex_program(&PushOnly(crate::algo::pagerank::PageRank { ..program })).unwrap();
                let first = deliveries(r);
                let pulled = r.run_vertex_program(&program).unwrap();
                (pushed, pulled, deliveries(r)[first.len()..].to_vec())
            });
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&pushed), bits(&pulled));
            if directed && !edges.is_empty() {
                proptest::prop_assert!(stats.iter().all(|&d| d == Some(Delivery::Pull)), "{:?}", stats);
            }
        }
    }

    /// Every vertex stays active; records the global sum and stops via `end_iteration`.
    struct Globals;

    impl VertexProgram for Globals {
        type Value = (usize, f64);
        type Msg = u64;
        fn message_kind(&self) -> MessageKind {
            MessageKind::Value
        }
        fn init(&self, v: VertexId, _: &GraphInfo) -> (usize, f64) {
            (0, v as f64)
        }
        fn scatter(&self, _: &(usize, f64), _: EdgeRef) -> Option<u64> {
            None
        }
        fn combine(&self, a: u64, _: u64) -> u64 {
            a
        }
        fn identity(&self) -> u64 {
            0
        }
        fn applies_to_all(&self) -> bool {
            true
        }
        fn global_contribution(&self, _: VertexId, value: &(usize, f64), out_degree: u64) -> f64 {
            value.1 * out_degree as f64
        }
        fn apply(&self, _: VertexId, value: &mut (usize, f64), _: u64, ctx: &IterationContext) -> bool {
            *value = (ctx.iteration + 1, ctx.global_sum);
            true
        }
        fn end_iteration(&self, iteration: usize, active: u64) -> Control {
            assert_eq!(active, 3);
            if iteration == 2 {
                Control::Stop
            } else {
                Control::Continue
            }
        }
    }

    #[test]
    fn global_sum_applies_to_all_and_end_iteration() {
        // out-degrees 2, 1, 0: global sum of iteration 0 = 0*2 + 1*1 + 2*0 = 1
        let values = with_graph(3, &[(0, 1), (0, 2), (1, 2)], true, |r| {
            let values = r.run_vertex_program(&Globals).unwrap();
            assert_eq!(r.finish("globals").iterations, 3);
            values
        });
        // iteration 1: every value is 1.0, sum 2 + 1 = 3; iteration 2: every value 3.0, sum 9
        assert_eq!(values, [(3, 9.0), (3, 9.0), (3, 9.0)]);
    }

    /// Superstep 0: aggregate 1, send own id along out-edges, halt. Later: record.
    struct Wake {
        combiner: bool,
        stop_after_first: bool,
    }

    #[derive(Clone, Debug, Default, PartialEq)]
    struct Seen {
        supersteps: Vec<usize>,
        messages: Vec<u64>,
        previous_aggregate: f64,
    }

    impl PregelProgram for Wake {
        type Value = Seen;
        type Msg = u64;
        fn init(&self, _: VertexId, _: &GraphInfo) -> Seen {
            Seen::default()
        }
        fn compute(&self, ctx: &mut dyn PregelContext<u64>, seen: &mut Seen, messages: &[u64]) {
            seen.supersteps.push(ctx.superstep());
            seen.messages.extend_from_slice(messages);
            seen.previous_aggregate = ctx.previous_aggregate();
            if ctx.superstep() == 0 {
                ctx.aggregate(1.0);
                for t in ctx.out_neighbors().to_vec() {
                    ctx.send(t, ctx.vertex() + 10);
                }
            }
            ctx.vote_to_halt();
        }
        fn combine(&self, a: &u64, b: &u64) -> Option<u64> {
            Some(a + b)
        }
        fn has_combiner(&self) -> bool {
            self.combiner
        }
        fn end_superstep(&self, _: usize, _: f64) -> Control {
            if self.stop_after_first {
                Control::Stop
            } else {
                Control::Continue
            }
        }
    }

    #[test]
    fn pregel_wakes_on_messages_aggregates_and_combines() {
        let edges = [(0, 2), (1, 2), (2, 3)];
        let run = |combiner, stop_after_first| {
            with_graph(4, &edges, true, |r| r.run_pregel(&Wake { combiner, stop_after_first }).unwrap())
        };
        let plain = run(false, false);
        assert_eq!(plain[0], Seen { supersteps: vec![0], messages: vec![], previous_aggregate: 0.0 });
        assert_eq!(plain[2], Seen { supersteps: vec![0, 1], messages: vec![10, 11], previous_aggregate: 4.0 });
        assert_eq!(plain[3], Seen { supersteps: vec![0, 1], messages: vec![12], previous_aggregate: 4.0 });
        let combined = run(true, false);
        assert_eq!(combined[2].messages, vec![21]);
        let stopped = run(false, true);
        assert!(stopped.iter().all(|s| s.supersteps == [0]));
    }
}
