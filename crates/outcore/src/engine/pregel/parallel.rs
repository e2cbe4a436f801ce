//! A rank's vertices computed on all its cores, with the results of one vertex after another
//! (issue 16: a rank used one thread, 6.6× slower than `stream` on PageRank).
//!
//! A step is cut into *waves* of consecutive vertices, each small enough that what it sends fits
//! in the rank's compute buffers (a budget part, [`super::sizing::RankMemory`]). The messages of a
//! wave's vertices are collected first (from A_r or the merged batch files, in vertex order).
//! When the rank's edge lists are resident ([`ResidentEdges`]: read once, reused by every step)
//! the wave is split in chunks of about equal arcs, computed on rayon's threads; each chunk
//! writes into its own [`Sink`]: records per destination rank, and — when messages to the
//! rank's own vertices are combined in memory — (position, message) pairs per *bucket* of
//! positions. Streamed edge lists make a wave one chunk, on this thread, as GraphD reads them.
//!
//! Delivering a wave folds the buckets in parallel, each bucket taking the chunks' pieces in
//! chunk order, and appends the chunks' records to the outgoing streams in chunk order; the
//! chunks' sums and aggregate contributions are replayed in vertex order too. Every slot, file
//! and float sum therefore sees its inputs in the very order of the sequential loop, so results
//! do not depend on the number of threads.

use rayon::prelude::*;

use super::pull::Offers;
use super::rank::{StepProgram, Totals};
use crate::error::{Error, Result};
use crate::program::Wire;

/// Where a message goes: the destination rank and the target's position there. Shifts and
/// masks when W is a power of two (W = 1 included: every name is a position), no division.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub rank: usize,
    ranks: u64,
    /// `log2(W)` when W is a power of two.
    ranks_shift: Option<u32>,
    /// Messages to this rank's own vertices are combined in memory (recoded with a combiner).
    pub combines_locally: bool,
    pub n_local: u64,
    /// Positions per bucket: `1 << bucket_shift`.
    pub bucket_shift: u32,
    /// The rank pulls: vertices offer their one message instead of sending it along each arc
    /// ([`super::pull`]).
    pub pulls: bool,
}

impl Route {
    /// `slot`: bytes of one slot of the array messages are folded into.
    pub fn new(
        rank: usize,
        ranks: usize,
        combines_locally: bool,
        n_local: usize,
        threads: usize,
        slot: usize,
    ) -> Route {
        let ranks_shift = ranks.is_power_of_two().then(|| ranks.trailing_zeros());
        // Four buckets per thread at least, so buckets fold in parallel, and buckets of at most
        // 4 MiB of slots, which a core's cache and TLB hold, so that folding a message does
        // not miss; not so many that a sink spreads its messages over too many buffers.
        let bucket = n_local.div_ceil(4 * threads.max(1)).min((4 << 20) / slot.max(1)).max(4096);
        let bucket_shift = bucket.next_power_of_two().trailing_zeros().min(31);
        Route {
            rank,
            ranks: ranks as u64,
            ranks_shift,
            combines_locally,
            n_local: n_local as u64,
            bucket_shift,
            pulls: false,
        }
    }

    #[inline]
    fn split(&self, name: u64) -> (usize, u64) {
        match self.ranks_shift {
            Some(s) => ((name & (self.ranks - 1)) as usize, name >> s),
            None => ((name % self.ranks) as usize, name / self.ranks),
        }
    }

    pub fn buckets(&self) -> usize {
        (self.n_local >> self.bucket_shift) as usize + 1
    }

    fn ranks(&self) -> usize {
        self.ranks as usize
    }
}

/// What one chunk of a wave sent and contributed, kept (with its capacity) from wave to wave.
pub struct Sink<M> {
    route: Route,
    /// Encoded records `name · message` per destination rank.
    remote: Vec<Vec<u8>>,
    /// Per bucket: positions inside the bucket and messages, in sending order.
    local: Vec<(Vec<u32>, Vec<M>)>,
    /// On a pulling rank: the positions that offered a message, and the message.
    offers: Vec<(usize, M)>,
    /// `Totals::sum` terms and aggregate contributions, in call order.
    sums: Vec<f64>,
    aggregates: Vec<(usize, f64)>,
    width: usize,
    awake: u64,
    sent: u64,
    combined_locally: u64,
    pub(crate) computed: u64,
    pub(crate) failure: Option<Error>,
    /// The rayon thread that computed the chunk (None: the rank's own thread).
    pub(crate) thread: Option<usize>,
}

impl<M: Wire> Sink<M> {
    pub fn new(route: Route, width: usize) -> Sink<M> {
        Sink {
            route,
            remote: vec![Vec::new(); route.ranks()],
            local: (0..if route.combines_locally { route.buckets() } else { 0 })
                .map(|_| (Vec::new(), Vec::new()))
                .collect(),
            offers: Vec::new(),
            sums: Vec::new(),
            aggregates: Vec::new(),
            width,
            awake: 0,
            sent: 0,
            combined_locally: 0,
            computed: 0,
            failure: None,
            thread: None,
        }
    }

    /// Sends `msg` to the vertex named `name` (once per arc: inlined into the program's loop).
    #[inline(always)]
    pub fn send(&mut self, name: u64, msg: M) {
        self.sent += 1;
        let (dest, pos) = self.route.split(name);
        if self.route.combines_locally && dest == self.route.rank {
            if pos >= self.route.n_local {
                return self.beyond(name);
            }
            self.combined_locally += 1;
            let bucket = &mut self.local[(pos >> self.route.bucket_shift) as usize];
            bucket.0.push((pos & ((1 << self.route.bucket_shift) - 1)) as u32);
            bucket.1.push(msg);
        } else {
            let buffer = &mut self.remote[dest];
            name.put(buffer);
            msg.put(buffer);
        }
    }

    /// Whether the rank pulls: a program that sends [dense uniform
    /// messages](super::rank::StepProgram::dense_uniform_identity) then offers them.
    pub fn pulls(&self) -> bool {
        self.route.pulls
    }

    /// The vertex named `name` sends `msg` along all its `arcs` out-arcs (on a pulling rank).
    pub fn offer(&mut self, name: u64, msg: M, arcs: u64) {
        let (_, pos) = self.route.split(name);
        if pos >= self.route.n_local {
            return self.beyond(name);
        }
        self.sent += arcs;
        self.combined_locally += arcs;
        self.offers.push((pos as usize, msg));
    }

    /// Moves the chunk's offers into `offers`.
    pub fn hand_offers(&mut self, offers: &mut Offers<M>)
    where
        M: Clone + Send + Sync,
    {
        self.offers.drain(..).for_each(|(pos, msg)| offers.offer(pos, msg));
    }

    #[cold]
    #[inline(never)]
    fn beyond(&mut self, name: u64) {
        let (rank, message) = (self.route.rank, format!("message for vertex name {name}, beyond its vertices"));
        self.failure.get_or_insert(Error::Remote { rank: Some(rank), message });
    }

    /// Adds a term to the step's global sum.
    pub fn add_sum(&mut self, term: f64) {
        self.sums.push(term);
    }

    /// Contributes `value` to aggregator `slot`.
    pub fn aggregate(&mut self, slot: usize, value: f64) {
        let width = self.width;
        assert!(slot < width, "aggregate slot {slot} is outside the program's aggregate_width() of {width}");
        self.aggregates.push((slot, value));
    }

    /// A vertex stays awake after the step.
    pub fn wake(&mut self) {
        self.awake += 1;
    }

    /// Replays the chunk's contributions into `totals` (in call order) and empties the sink.
    fn settle<S: StepProgram<Msg = M>>(&mut self, program: &S, totals: &mut Totals, figures: &mut WaveFigures) {
        self.sums.drain(..).for_each(|term| totals.sum += term);
        for (slot, value) in self.aggregates.drain(..) {
            totals.aggregates.add(slot, value, |a, b| program.fold_aggregate(a, b));
        }
        totals.awake += std::mem::take(&mut self.awake);
        figures.sent += std::mem::take(&mut self.sent);
        figures.combined_locally += std::mem::take(&mut self.combined_locally);
        figures.computed += std::mem::take(&mut self.computed);
        self.remote.iter_mut().for_each(Vec::clear);
        self.offers.clear();
        for (positions, messages) in &mut self.local {
            positions.clear();
            messages.clear();
        }
    }
}

/// Message and vertex counts of a step, summed over its waves.
#[derive(Debug, Default, Clone, Copy)]
pub struct WaveFigures {
    pub sent: u64,
    pub combined_locally: u64,
    pub computed: u64,
}

/// Delivers what the chunks of a wave sent, in chunk order: the local pieces folded into
/// `local` (buckets in parallel), the records handed to `append(dest, records)`, the sums and
/// aggregates replayed into `totals`. The first failure of a chunk, in chunk order, is returned.
pub fn deliver<S: StepProgram>(
    program: &S,
    sinks: &mut [Sink<S::Msg>],
    local: &mut [Option<S::Msg>],
    totals: &mut Totals,
    figures: &mut WaveFigures,
    append: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    if let Some(e) = sinks.iter_mut().find_map(|s| s.failure.take()) {
        return Err(e);
    }
    if let Some(route) = sinks.first().map(|s| s.route) {
        if route.combines_locally {
            let shared: &[Sink<S::Msg>] = sinks;
            local.par_chunks_mut(1 << route.bucket_shift).enumerate().for_each(|(b, slots)| {
                for sink in shared {
                    let (positions, messages) = &sink.local[b];
                    for (&pos, msg) in positions.iter().zip(messages) {
                        let slot = &mut slots[pos as usize];
                        *slot = Some(match slot.take() {
                            Some(old) => program.combine(&old, msg),
                            None => msg.clone(),
                        });
                    }
                }
            });
        }
    }
    for sink in sinks.iter_mut() {
        for (dest, records) in sink.remote.iter().enumerate() {
            if !records.is_empty() {
                append(dest, records)?;
            }
        }
        sink.settle(program, totals, figures);
    }
    Ok(())
}

/// Bytes a wave may hold per arc it reads (a message sent along it, as a record or a local
/// piece) and per vertex it computes (its messages' slot, sums, aggregates).
pub fn per_arc_bytes<M: Wire>() -> u64 {
    8 + (M::BYTES as u64).max(std::mem::size_of::<M>() as u64)
}

pub fn per_vertex_bytes<M>() -> u64 {
    40 + std::mem::size_of::<M>() as u64
}
