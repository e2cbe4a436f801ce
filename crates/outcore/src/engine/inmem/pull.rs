//! Pull delivery (Beamer et al., SC'12; Ligra's dense edgeMap): every vertex that wants
//! messages folds those of its active reverse-neighbours in ascending source order, over blocks
//! of targets in parallel, stopping once satisfied; uniform messages are computed once per
//! source beforehand ([`Sent`]), so a block can apply its own targets at once.

use rayon::prelude::*;

use super::push::Inbox;
use super::{Adjacency, Bits, Frontier};
use crate::program::{EdgeRef, IterationContext, VertexProgram};
use crate::runtime::prefetch;
use crate::store::InMemoryCsr;
use crate::VertexId;

/// What each active source sends in a pull of uniform messages
/// ([`VertexProgram::sends_uniform_messages`]): `sends` has the active sources whose `scatter`
/// gave a message, and `msg[s]` is that message — or, where the program
/// [sends one per iteration](VertexProgram::sends_one_message_per_iteration), `one` is and
/// `msg` stays empty, so a pull never loads a message from a source's random address. Refilled
/// for the active sources only, so a pull costs `n / 64` words plus its frontier here.
pub(super) struct Sent<M> {
    pub(super) msg: Vec<M>,
    pub(super) sends: Bits,
    pub(super) one: Option<M>,
}

impl<M: Copy + Send + Sync> Sent<M> {
    pub(super) fn new<P: VertexProgram<Msg = M>>(program: &P, n: usize) -> Sent<M> {
        let per_source = if program.sends_one_message_per_iteration() { 0 } else { n };
        Sent { msg: vec![program.identity(); per_source], sends: Bits::new(n), one: None }
    }

    pub(super) fn fill<P: VertexProgram<Msg = M>>(
        &mut self,
        program: &P,
        adj: &Adjacency,
        values: &[P::Value],
        active: &Bits,
    ) {
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

/// Targets per task of a parallel pull.
const PULL_BLOCK: usize = 4096;

/// Pull: every vertex that wants messages scans its `reverse` arcs for active sources, folding
/// in ascending source order until satisfied (see [`VertexProgram::supports_pull`]); returns
/// the arcs scanned. Blocks of targets run in parallel — each target's fold is its own, in the
/// same order whatever the threads — and their `touched` lists are joined in block order, so
/// `touched` comes out sorted. Programs with uniform messages pull by [`pull_and_apply`].
pub(super) fn pull<P: VertexProgram>(
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
pub(super) fn pull_and_apply<P: VertexProgram>(
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
pub(super) const PREFETCH_AHEAD: u64 = 16;

/// [`prefetch`] of the first arcs of `v`'s list in `csr`, when `v` is a vertex with arcs.
#[inline(always)]
pub(super) fn prefetch_list(csr: &InMemoryCsr, v: VertexId) {
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
