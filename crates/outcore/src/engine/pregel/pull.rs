//! A single rank pulls uniform messages instead of pushing them (issue 16: pregel PageRank at
//! W = 1 spent three quarters of its time bucketing 65 M messages and folding them into their
//! targets' slots, 3× the time of `stream`).
//!
//! When every awake vertex sends one message along all its out-arcs, every step
//! ([`StepProgram::sends_dense_uniform_messages`]: PageRank, Katz, unweighted eigenvector), a
//! vertex only *offers* its message: one slot per position in [`Offers`]. After the step's last
//! wave each target folds the offers of its in-neighbours, reading its resident in-list (the
//! out-lists are not needed at all), into the array of messages to the rank's own vertices —
//! what push would have folded there, as Pregel+'s mirrors fan one value out to a rank's
//! targets (Yan et al., "Effective techniques for message reduction and load balancing in
//! distributed graph computation", §4). Targets are cut into chunks of about equal in-arcs,
//! folded on all cores, each target's messages in in-list order, so the result does not depend
//! on the number of threads.
//!
//! Only a single rank pulls: with W > 1 an in-list names sources of other ranks, whose offers
//! are not here.

use std::ops::Range;

use rayon::prelude::*;

use super::lists::{Names, ResidentColumn};
use super::rank::{StepProgram, VertexRecord};
use crate::program::Wire;
use crate::runtime::chunks::{self, Cut};
use crate::runtime::prefetch;

/// How many arcs ahead a pull asks for the offer it will fold.
const PREFETCH_AHEAD: usize = 16;

/// Targets, their lists' arcs, and the targets' message slots: one chunk of a pull.
type PullJob<'a, M> = (Range<usize>, Range<usize>, &'a mut [Option<M>]);

/// One message slot per position of the rank, and which positions offered one this step.
pub struct Offers<M> {
    /// By slot: a position's slot is its rank by out-degree, so that the offers most lists
    /// name share cache lines (as `stream` orders its sources); the lists name slots.
    values: Vec<M>,
    present: Vec<u64>,
    /// The slot of each position.
    slot_of: Vec<u32>,
}

impl<M: Wire + Clone + Send + Sync> Offers<M> {
    /// No offer yet, for the positions of `vertices`, slotted by out-degree.
    pub fn new(vertices: &[VertexRecord]) -> Offers<M> {
        let n = vertices.len();
        // Slots without an offer are never read; any value fills them.
        let filler = M::get(&vec![0u8; M::BYTES]);
        // Descending out-degree (capped below 2^32), then position: one u64 key per position.
        let mut by_degree: Vec<u64> = vertices
            .par_iter()
            .enumerate()
            .map(|(pos, v)| (u32::MAX as u64 - v.out_degree.min(u32::MAX as u64)) << 32 | pos as u64)
            .collect();
        by_degree.par_sort_unstable();
        let mut slot_of = vec![0u32; n];
        by_degree.iter().enumerate().for_each(|(slot, &key)| slot_of[key as u32 as usize] = slot as u32);
        Offers { values: vec![filler; n], present: vec![0; n.div_ceil(64)], slot_of }
    }

    /// Bytes of the offers of `n` positions.
    pub fn bytes(n: u64) -> u64 {
        n * (std::mem::size_of::<M>() as u64 + 4) + n.div_ceil(64) * 8
    }

    /// Whether a rank of `n` positions can pull (slots are 4 bytes).
    pub fn fits(n: u64) -> bool {
        n <= u32::MAX as u64
    }

    /// Makes freshly read `lists` name slots instead of positions. Fails with a name beyond
    /// the positions, if any (a corrupt partition is an error, not a panic).
    pub fn renumber(&self, lists: &mut ResidentColumn) -> std::result::Result<(), u64> {
        if let Some(name) = lists.max_name().filter(|&name| name >= self.values.len() as u64) {
            return Err(name);
        }
        lists.rename(|pos| self.slot_of[pos as usize] as u64);
        Ok(())
    }

    /// Position `pos` sends `msg` along all its out-arcs this step.
    pub fn offer(&mut self, pos: usize, msg: M) {
        let slot = self.slot_of[pos] as usize;
        self.values[slot] = msg;
        self.present[slot / 64] |= 1 << (slot % 64);
    }

    /// Folds into `local[t]`, for every position t, the offers of its in-neighbours, read from
    /// `lists` (position t's list holds `in_degree(&vertices[t])` names, in position order),
    /// and withdraws every offer. Returns the arcs read. The lists name slots
    /// ([`Offers::renumber`]).
    pub fn pull_into<S: StepProgram<Msg = M>>(
        &mut self,
        program: &S,
        lists: &ResidentColumn,
        vertices: &[VertexRecord],
        in_degree: impl Fn(&VertexRecord) -> u64 + Sync,
        local: &mut [Option<M>],
    ) -> u64 {
        let count = 4 * rayon::current_num_threads().max(1);
        let ranges = chunks::balanced(vertices.len(), |t| 1 + in_degree(&vertices[t]), count, Cut::Shares);
        let mut jobs: Vec<PullJob<M>> = Vec::with_capacity(ranges.len());
        let (mut rest, mut arc) = (local, 0usize);
        for range in ranges {
            let (slots, tail) = std::mem::take(&mut rest).split_at_mut(range.len());
            let arcs = vertices[range.clone()].iter().map(&in_degree).sum::<u64>() as usize;
            jobs.push((range, arc..arc + arcs, slots));
            (rest, arc) = (tail, arc + arcs);
        }
        let offers = &*self;
        jobs.into_par_iter().for_each(|(targets, arcs, slots)| {
            let targets = &vertices[targets];
            match lists.names(arcs.start, arcs.len()) {
                Names::Narrow(names) => offers.fold_chunk(program, names, targets, &in_degree, slots),
                Names::Wide(names) => offers.fold_chunk(program, names, targets, &in_degree, slots),
            }
        });
        self.present.iter_mut().for_each(|word| *word = 0);
        arc as u64
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
        let mut at = 0;
        for (vertex, slot) in targets.iter().zip(slots) {
            let end = at + in_degree(vertex) as usize;
            // The offers `PREFETCH_AHEAD` arcs on, in this list or the next ones, are asked for
            // now: sources are anywhere in `values`.
            for i in at..end.min(names.len().saturating_sub(PREFETCH_AHEAD)) {
                prefetch(self.values.as_ptr().wrapping_add(names[i + PREFETCH_AHEAD].into() as usize));
            }
            if let Some(msg) = self.fold(program, &names[at..end]) {
                *slot = Some(match slot.take() {
                    Some(old) => program.combine(&old, &msg),
                    None => msg,
                });
            }
            at = end;
        }
    }

    /// The offers of `names`, combined in their order.
    #[inline]
    fn fold<S: StepProgram<Msg = M>, N: Copy + Into<u64>>(&self, program: &S, names: &[N]) -> Option<M> {
        let mut folded: Option<M> = None;
        for &name in names {
            let pos = name.into() as usize;
            if self.present[pos / 64] & (1 << (pos % 64)) != 0 {
                let msg = &self.values[pos];
                folded = Some(match folded {
                    Some(acc) => program.combine(&acc, msg),
                    None => msg.clone(),
                });
            }
        }
        folded
    }
}
