//! A single rank pulls uniform messages instead of pushing them (issue 16: pregel PageRank at
//! W = 1 spent three quarters of its time bucketing 65 M messages and folding them into their
//! targets' slots, 3× the time of `stream`).
//!
//! When every awake vertex sends one message along all its out-arcs, every step, and the
//! program's combiner has an identity ([`StepProgram::dense_uniform_identity`]: PageRank,
//! Katz, unweighted eigenvector), a vertex only *offers* its message: one slot per position in
//! [`Offers`]. After the step's last wave each target folds the offers of its in-neighbours,
//! reading its resident in-list (the out-lists are not needed at all), into the array of
//! messages to the rank's own vertices — what push would have folded there, as Pregel+'s
//! mirrors fan one value out to a rank's targets (Yan et al., "Effective techniques for message
//! reduction and load balancing in distributed graph computation", §4).
//!
//! The fold is `stream`'s pull (`stream/pull.rs`): slots are ordered by out-degree and the
//! in-lists renamed to slots once, so the offers most lists name share cache lines; a slot that
//! offered nothing holds the identity, so the fold reads every name without a test, into four
//! interleaved partial folds. A target with an in-list therefore always gets a message (the
//! identity when no in-neighbour offered), which the programs that pull cannot tell apart
//! from none: they apply at every vertex. Targets are cut into chunks of about equal in-arcs,
//! folded on all cores, so the result does not depend on the number of threads.
//!
//! **Several ranks** (W > 1) pull too, each over its own targets' in-lists, which name sources
//! of every rank: after its waves each rank sends its offers to all the others
//! ([`Offers::exchange`], an all-gather of one message per vertex), so every rank holds a copy
//! of every vertex's offer — Pregel+'s mirrors, for all vertices at once. A slot is then a
//! recoded name (W·pos + rank), which the in-lists already hold: nothing is renamed, and a rank
//! holds W·(largest rank's vertices) offers, O(|V|) rather than GraphD's O(|V|/W), which is why
//! the rank pulls only when its budget holds them ([`super::sizing::size_rank`]) and all
//! ranks agree; otherwise it pushes through A_s and the message files. At W = 2 on RMAT-22 a
//! pushed step wrote and read back 249 MiB of message files per rank.

use std::ops::Range;

use rayon::prelude::*;

use super::lists::{Names, ResidentColumn};
use super::rank::{StepProgram, VertexRecord};
use crate::error::{Error, Result};
use crate::program::Wire;
use crate::runtime::chunks::{self, Cut};
use crate::runtime::prefetch;
use crate::transport::{Tag, Transport};

/// The offers of a step, sent by every rank to every other ([`Offers::exchange`]).
const TAG_OFFERS: Tag = 130;

/// How many arcs ahead a pull asks for the offer it will fold (`stream`'s pull measured 48
/// best; see `stream/pull.rs`).
const PREFETCH_AHEAD: usize = 48;
/// Partial folds of one list.
const LANES: usize = 4;

/// Targets, their lists' arcs, and the targets' message slots: one chunk of a pull.
type PullJob<'a, M> = (Range<usize>, Range<usize>, &'a mut [Option<M>]);

/// The chunks of a pull: targets and their lists' arcs, cut once per run.
type PullChunks = Vec<(Range<usize>, Range<usize>)>;

/// Bytes of the offers of a rank of `n` positions in a job of `ranks` ranks whose largest rank
/// has `max_n`, of messages of `msg_bytes`: a slot of each position, a value per slot, and
/// at W > 1 the offers sent and those received from one rank ([`Offers::exchange`]).
pub fn offers_bytes(ranks: u64, n: u64, max_n: u64, msg_bytes: u64) -> u64 {
    let exchanged = if ranks > 1 { (n + max_n) * msg_bytes } else { 0 };
    4 * n + msg_bytes * slots(ranks, n, max_n) + exchanged
}

/// Slots of the offers: one per position of a single rank, one per name of every rank's
/// vertices otherwise.
fn slots(ranks: u64, n: u64, max_n: u64) -> u64 {
    if ranks == 1 {
        n
    } else {
        ranks * max_n
    }
}

/// Whether a rank of `n` positions, whose largest rank has `max_n`, can pull (slots are 4
/// bytes).
pub fn fits(ranks: u64, n: u64, max_n: u64) -> bool {
    slots(ranks, n, max_n) <= u32::MAX as u64
}

/// The message each position offers this step, by slot.
pub struct Offers<M> {
    /// By slot: a position's slot is its rank by out-degree; the identity where no offer.
    values: Vec<M>,
    identity: M,
    /// The slot of each position.
    slot_of: Vec<u32>,
    /// The chunks of the pull, once cut.
    chunks: Option<PullChunks>,
    /// Some position offered this step (a step that offered nothing, such as the last one
    /// of a run with a fixed number of iterations, folds nothing).
    offered: bool,
    /// Ranks of the job, and this one (W > 1: slots are recoded names).
    ranks: usize,
    rank: usize,
}

impl<M: Wire + Clone + Send + Sync> Offers<M> {
    /// No offer yet, for the positions of `vertices`, this rank's in a job of `ranks` whose
    /// largest rank has `max_n` vertices: slotted by out-degree at W = 1, by recoded name
    /// (W·pos + rank) otherwise.
    pub fn new(vertices: &[VertexRecord], identity: M, ranks: usize, rank: usize, max_n: usize) -> Offers<M> {
        if ranks > 1 {
            let slot_of = (0..vertices.len()).map(|pos| (ranks * pos + rank) as u32).collect();
            let values = vec![identity.clone(); ranks * max_n];
            return Offers { values, identity, slot_of, chunks: None, offered: false, ranks, rank };
        }
        let n = vertices.len();
        // Descending out-degree (capped below 2^32), then position: one u64 key per position.
        let mut by_degree: Vec<u64> = vertices
            .par_iter()
            .enumerate()
            .map(|(pos, v)| (u32::MAX as u64 - v.out_degree.min(u32::MAX as u64)) << 32 | pos as u64)
            .collect();
        by_degree.par_sort_unstable();
        let mut slot_of = vec![0u32; n];
        by_degree.iter().enumerate().for_each(|(slot, &key)| slot_of[key as u32 as usize] = slot as u32);
        Offers { values: vec![identity.clone(); n], identity, slot_of, chunks: None, offered: false, ranks: 1, rank: 0 }
    }

    /// Makes freshly read `lists` name slots instead of positions (at W > 1 their recoded names
    /// are the slots already). Fails with a name beyond the slots, if any (a corrupt partition
    /// is an error, not a panic).
    pub fn renumber(&self, lists: &mut ResidentColumn) -> std::result::Result<(), u64> {
        if self.ranks > 1 {
            return lists.check_below(self.values.len() as u64);
        }
        lists.rename_by(&self.slot_of)
    }

    /// Sends this rank's offers to every other rank and takes theirs, so that every slot holds
    /// its vertex's offer wherever the vertex lives (W > 1; every rank calls it once a step,
    /// and the steps are parted by a barrier). Some rank offered if any did.
    pub fn exchange(&mut self, t: &dyn Transport) -> Result<()> {
        let (ranks, rank) = (self.ranks, self.rank);
        let mut mine = Vec::with_capacity(1 + self.slot_of.len() * M::BYTES);
        mine.push(self.offered as u8);
        self.slot_of.iter().for_each(|&slot| self.values[slot as usize].put(&mut mine));
        let others: Vec<usize> = (0..ranks).filter(|&to| to != rank).collect();
        for (k, &to) in others.iter().enumerate() {
            let payload = if k + 1 == others.len() { std::mem::take(&mut mine) } else { mine.clone() };
            t.send(to, TAG_OFFERS, payload)?;
        }
        for _ in 1..ranks {
            let envelope = t.recv(TAG_OFFERS)?;
            let from = envelope.from;
            let malformed = || Error::Remote { rank: Some(from), message: "malformed offers".into() };
            let (&offered, offers) = envelope.payload.split_first().ok_or_else(malformed)?;
            if from == rank || offers.len() % M::BYTES != 0 || ranks * (offers.len() / M::BYTES) > self.values.len() {
                return Err(malformed());
            }
            self.offered |= offered == 1;
            for (pos, bytes) in offers.chunks_exact(M::BYTES).enumerate() {
                self.values[ranks * pos + from] = M::get(bytes);
            }
        }
        Ok(())
    }

    /// Position `pos` sends `msg` along all its out-arcs this step.
    pub fn offer(&mut self, pos: usize, msg: M) {
        self.values[self.slot_of[pos] as usize] = msg;
        self.offered = true;
    }

    /// Folds into `local[t]`, for every position t with an in-list, the offers of its
    /// in-neighbours, read from `lists` (position t's list holds `in_degree(&vertices[t])`
    /// slots, in position order), and withdraws every offer. Returns the arcs read. Without
    /// any offer it folds nothing: every fold would be the identity, which the programs that
    /// pull cannot tell apart from no message.
    pub fn pull_into<S: StepProgram<Msg = M>>(
        &mut self,
        program: &S,
        lists: &ResidentColumn,
        vertices: &[VertexRecord],
        in_degree: impl Fn(&VertexRecord) -> u64 + Sync,
        local: &mut [Option<M>],
    ) -> u64 {
        if !std::mem::take(&mut self.offered) {
            return 0;
        }
        let chunks = self.chunks.get_or_insert_with(|| cut(vertices, &in_degree));
        let mut jobs: Vec<PullJob<M>> = Vec::with_capacity(chunks.len());
        let mut rest = local;
        for (targets, arcs) in chunks.iter() {
            let (slots, tail) = std::mem::take(&mut rest).split_at_mut(targets.len());
            jobs.push((targets.clone(), arcs.clone(), slots));
            rest = tail;
        }
        let arcs = chunks.last().map_or(0, |(_, arcs)| arcs.end);
        let offers = &*self;
        jobs.into_par_iter().for_each(|(targets, arcs, slots)| {
            let targets = &vertices[targets];
            match lists.names(arcs.start, arcs.len()) {
                Names::Narrow(names) => offers.fold_chunk(program, names, targets, &in_degree, slots),
                Names::Wide(names) => offers.fold_chunk(program, names, targets, &in_degree, slots),
            }
        });
        let identity = &self.identity;
        self.values.par_iter_mut().for_each(|value| *value = identity.clone());
        arcs as u64
    }

    /// Folds into each of `slots` the offers of its target's list, the lists of `targets`
    /// following each other in `names`.
    fn fold_chunk<S: StepProgram<Msg = M>, N: Copy + Into<u64>>(
        &self,
        program: &S,
        names: &[N],
        targets: &[VertexRecord],
        in_degree: impl Fn(&VertexRecord) -> u64,
        slots: &mut [Option<M>],
    ) {
        let (values, mut at) = (self.values.as_slice(), 0);
        for (vertex, slot) in targets.iter().zip(slots) {
            let end = at + in_degree(vertex) as usize;
            if end == at {
                continue;
            }
            // The offer `PREFETCH_AHEAD` arcs on, in this list or the next ones, is asked for
            // as each arc is folded: slots are anywhere in `values`.
            let mut ahead = names[(at + PREFETCH_AHEAD).min(names.len())..].iter();
            let mut fold_into = |lane: &mut M, name: N| {
                if let Some(&later) = ahead.next() {
                    prefetch(values.as_ptr().wrapping_add(later.into() as usize));
                }
                *lane = program.combine(lane, &values[name.into() as usize]);
            };
            let mut lanes: [M; LANES] = std::array::from_fn(|_| self.identity.clone());
            let mut groups = names[at..end].chunks_exact(LANES);
            for group in &mut groups {
                lanes.iter_mut().zip(group).for_each(|(lane, &name)| fold_into(lane, name));
            }
            lanes.iter_mut().zip(groups.remainder()).for_each(|(lane, &name)| fold_into(lane, name));
            let [a, b, c, d] = lanes;
            let msg = program.combine(&program.combine(&a, &b), &program.combine(&c, &d));
            *slot = Some(match slot.take() {
                Some(old) => program.combine(&old, &msg),
                None => msg,
            });
            at = end;
        }
    }
}

/// Cuts the targets into chunks of about equal in-arcs, a few per thread, each with the range
/// of its lists' arcs.
fn cut(vertices: &[VertexRecord], in_degree: impl Fn(&VertexRecord) -> u64) -> PullChunks {
    let count = 4 * rayon::current_num_threads().max(1);
    let mut arc = 0usize;
    let ranges = chunks::balanced(vertices.len(), |t| 1 + in_degree(&vertices[t]), count, Cut::Shares);
    let with_arcs = |targets: Range<usize>| {
        let arcs = vertices[targets.clone()].iter().map(&in_degree).sum::<u64>() as usize;
        arc += arcs;
        (targets, arc - arcs..arc)
    };
    ranges.into_iter().map(with_arcs).collect()
}
