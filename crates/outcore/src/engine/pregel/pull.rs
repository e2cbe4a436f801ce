//! Recoded ranks pull uniform messages instead of pushing them (issue 16: pregel PageRank at
//! W = 1 spent three quarters of its time bucketing 65 M messages and folding them into their
//! targets' slots, 3× the time of `stream`).
//!
//! When every awake vertex sends one message along all its out-arcs, every step, and the
//! program's combiner has an identity ([`StepProgram::dense_uniform_identity`]: PageRank,
//! Katz, unweighted eigenvector), a vertex only *offers* its message: one slot per vertex in
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
//! ([`Offers::exchange`], one message per vertex), so every rank holds a copy of every
//! vertex's offer — Pregel+'s mirrors, for all vertices at once. The ranks exchange their
//! out-degrees once, so that every rank slots all the job's vertices alike. A rank then holds
//! one offer and one slot per vertex of the job, O(|V|) rather than GraphD's O(|V|/W), which
//! is why it pulls only when its budget holds them ([`super::sizing::size_rank`]) and all
//! ranks agree; otherwise they push through A_s and the message files. At W = 2 on RMAT-22 a
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
/// has `max_n`, of messages of `msg_bytes`: the slot of each name and a value per slot, and
/// at W > 1 the offers sent and those received from one rank ([`Offers::exchange`]).
/// (Recoded names run up to W·`max_n`, the positions of a single rank.)
pub fn offers_bytes(ranks: u64, n: u64, max_n: u64, msg_bytes: u64) -> u64 {
    let exchanged = if ranks > 1 { (n + max_n) * msg_bytes } else { 0 };
    (4 + msg_bytes) * ranks * max_n + exchanged
}

/// Whether the ranks of a job whose largest rank has `max_n` vertices can pull (names and
/// slots are 4 bytes, `u32::MAX` marking a name without a vertex).
pub fn fits(ranks: u64, max_n: u64) -> bool {
    ranks * max_n < u32::MAX as u64
}

/// The message each vertex of the job offers this step, by slot.
pub struct Offers<M> {
    /// By slot: a vertex's slot is its rank by out-degree among all the job's vertices; the
    /// identity where no offer.
    values: Vec<M>,
    identity: M,
    /// The slot of each recoded name W·pos + rank (`u32::MAX` where no vertex has the name).
    slot_of_name: Vec<u32>,
    /// Vertices of each rank.
    counts: Vec<usize>,
    /// The chunks of the pull, once cut.
    chunks: Option<PullChunks>,
    /// Some position offered this step (a step that offered nothing, such as the last one
    /// of a run with a fixed number of iterations, folds nothing).
    offered: bool,
    /// Ranks of the job, and this one.
    ranks: usize,
    rank: usize,
}

impl<M: Wire + Clone + Send + Sync> Offers<M> {
    /// No offer yet, for the vertices of every rank (this rank's are `vertices`), slotted by
    /// descending out-degree then recoded name: the ranks send each other their out-degrees
    /// (a collective: every rank calls it), so every rank slots every vertex alike.
    pub fn new(vertices: &[VertexRecord], identity: M, t: &dyn Transport) -> Result<Offers<M>> {
        let (ranks, rank) = (t.ranks(), t.rank());
        let degrees = vertices.iter().flat_map(|v| (v.out_degree.min(u32::MAX as u64) as u32).to_le_bytes()).collect();
        let all = if ranks == 1 { vec![degrees] } else { t.all_gather(degrees)? };
        let counts: Vec<usize> = all.iter().map(|degrees| degrees.len() / 4).collect();
        if let Some(from) = all.iter().position(|degrees| degrees.len() % 4 != 0) {
            return Err(Error::Remote { rank: Some(from), message: "malformed out-degrees".into() });
        }
        let slot_of_name = slots_by_degree(&all, &counts, ranks);
        let values = vec![identity.clone(); counts.iter().sum()];
        Ok(Offers { values, identity, slot_of_name, counts, chunks: None, offered: false, ranks, rank })
    }

    /// The slot of position `pos` of rank `rank`.
    fn slot(&self, rank: usize, pos: usize) -> usize {
        self.slot_of_name[self.ranks * pos + rank] as usize
    }

    /// Makes freshly read `lists` name slots instead of recoded names. Fails with a name no
    /// vertex has, if any (a corrupt partition is an error, not a panic).
    pub fn renumber(&self, lists: &mut ResidentColumn) -> std::result::Result<(), u64> {
        lists.rename_by(&self.slot_of_name)
    }

    /// Sends this rank's offers to every other rank and takes theirs, so that every slot holds
    /// its vertex's offer wherever the vertex lives (every rank calls it once a step, and the
    /// steps are parted by a barrier; a single rank has nothing to exchange). Some rank
    /// offered if any did.
    pub fn exchange(&mut self, t: &dyn Transport) -> Result<()> {
        let (ranks, rank) = (self.ranks, self.rank);
        if ranks == 1 {
            return Ok(());
        }
        let mut mine = Vec::with_capacity(1 + self.counts[rank] * M::BYTES);
        mine.push(self.offered as u8);
        (0..self.counts[rank]).for_each(|pos| self.values[self.slot(rank, pos)].put(&mut mine));
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
            if from == rank || offers.len() != self.counts[from] * M::BYTES {
                return Err(malformed());
            }
            self.offered |= offered == 1;
            for (pos, bytes) in offers.chunks_exact(M::BYTES).enumerate() {
                let slot = self.slot(from, pos);
                self.values[slot] = M::get(bytes);
            }
        }
        Ok(())
    }

    /// Position `pos` sends `msg` along all its out-arcs this step.
    pub fn offer(&mut self, pos: usize, msg: M) {
        let slot = self.slot(self.rank, pos);
        self.values[slot] = msg;
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

/// The slot of each recoded name W·pos + rank of a job whose ranks' out-degrees are `all` (4
/// bytes each, by position; `counts` of them): the job's vertices by descending out-degree,
/// then by name, `u32::MAX` where no vertex has the name. A counting sort, linear in the
/// vertices; its 4 bytes per vertex live before the offers' values are made, within what
/// [`offers_bytes`] charges for them. A degree above the number of
/// vertices (a multigraph's hub) counts as that number, such hubs keeping name order among
/// themselves — any order alike on every rank would do, this one keeps hot offers together.
fn slots_by_degree(all: &[Vec<u8>], counts: &[usize], ranks: usize) -> Vec<u32> {
    let total: usize = counts.iter().sum();
    let max_n = counts.iter().copied().max().unwrap_or(0);
    let degree = |from: usize, pos: usize| {
        let bytes = all[from][4 * pos..4 * pos + 4].try_into().expect("4 bytes");
        (u32::from_le_bytes(bytes) as usize).min(total)
    };
    // Vertices of each degree, then the first slot of each: the highest degree first.
    let mut first_slot = vec![0u32; total + 1];
    for (from, &count) in counts.iter().enumerate() {
        (0..count).for_each(|pos| first_slot[degree(from, pos)] += 1);
    }
    let mut slots_before = 0u32;
    for first in first_slot.iter_mut().rev() {
        (*first, slots_before) = (slots_before, slots_before + *first);
    }
    // Names in ascending order (W·pos + rank) take the next slot of their degree.
    let mut slot_of_name = vec![u32::MAX; ranks * max_n];
    for pos in 0..max_n {
        for from in (0..ranks).filter(|&from| pos < counts[from]) {
            let first = &mut first_slot[degree(from, pos)];
            slot_of_name[ranks * pos + from] = *first;
            *first += 1;
        }
    }
    slot_of_name
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots the counting sort gives equal a sort of (descending clamped degree, name),
    /// for one to four ranks of uneven sizes, hubs above the vertex count included.
    #[test]
    fn slots_follow_descending_degree_then_name_on_every_rank_alike() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for ranks in 1..=4usize {
            let counts: Vec<usize> = (0..ranks).map(|_| next(40) as usize).collect();
            let total: usize = counts.iter().sum();
            let all: Vec<Vec<u8>> = counts
                .iter()
                .map(|&count| {
                    let degree = |_| if next(10) == 0 { next(u32::MAX as u64) as u32 } else { next(6) as u32 };
                    (0..count).map(degree).flat_map(u32::to_le_bytes).collect()
                })
                .collect();
            let mut keys: Vec<(usize, usize)> = Vec::new();
            for (from, degrees) in all.iter().enumerate() {
                for (pos, bytes) in degrees.chunks_exact(4).enumerate() {
                    let degree = (u32::from_le_bytes(bytes.try_into().unwrap()) as usize).min(total);
                    keys.push((total - degree, ranks * pos + from));
                }
            }
            keys.sort_unstable();
            let max_n = counts.iter().copied().max().unwrap_or(0);
            let mut expected = vec![u32::MAX; ranks * max_n];
            keys.iter().enumerate().for_each(|(slot, &(_, name))| expected[name] = slot as u32);
            assert_eq!(slots_by_degree(&all, &counts, ranks), expected, "ranks {ranks}, counts {counts:?}");
        }
    }
}
