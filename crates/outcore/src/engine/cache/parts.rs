//! Where the cache engine's scatter puts messages: one accumulator (one thread), or one part per
//! thread folded at the end of the iteration (issue 16: cache within 1.5× of stream).
//!
//! With Norder and GVS the static cache serves almost every list a BFS-like iteration visits,
//! and the page cache most of the rest: the iterations are compute-bound, and the scatter ran
//! on one thread while the stream engine scatters from every core. With [`Parts`] each batch of
//! lists the page pipeline delivers is cut into one contiguous group per part, balanced by
//! edges, and the static cache's lists into one contiguous source range per part, balanced by
//! the edges of the active sources it holds ([`balanced_ranges`]); each part
//! folds into its own messages and flags. At the end of the iteration the parts are folded
//! into the accumulator in part order, and emptied on the way, so results depend on the number
//! of parts, never on timing.
//!
//! **One message per iteration** (BFS: every frontier vertex sends its level's depth + 1, and
//! min folds it once or many times alike; [`VertexProgram::sends_one_message_per_iteration`]).
//! A part then keeps no messages: a run computes its source's message once, keeps it as the
//! part's, and only marks its targets in the part's flags, a bitmap of |V| bits (512 KiB on
//! RMAT-22) that stays in the CPU's caches where the array of |V| messages (32 MiB) did not:
//! RMAT-22's second BFS level, 27.8 M arcs, took 0.64 s of random read-modify-writes. The fold
//! gives every marked target the part's message.
//!
//! Memory: a part's messages (none with one message per iteration) and flags per vertex, within
//! the engine's reserved state per vertex ([`parts_within`]); when not even two parts fit there
//! the scatter runs on one thread.

use rayon::prelude::*;

use super::static_cache::StaticCache;
use super::Bitmap;
use crate::program::{EdgeRef, VertexProgram};
use crate::runtime::{prefetch, PREFETCH_DISTANCE};

/// Whether the scatter's parts only mark targets (see the module doc, "One message per
/// iteration").
pub(super) fn marks_only<P: VertexProgram>(program: &P) -> bool {
    program.sends_uniform_messages() && program.sends_one_message_per_iteration()
}

/// Bytes per vertex every program keeps on the engine: its value, the accumulator's message
/// and the iteration's flags (bitmaps, counted as one byte).
pub(super) fn own_bytes(value_bytes: u64, msg_bytes: u64) -> u64 {
    value_bytes + msg_bytes + 1
}

/// Bytes per vertex of one part: its flag (a bit, counted as a byte) and, unless it only marks,
/// its message.
pub(super) fn part_bytes(msg_bytes: u64, marks_only: bool) -> u64 {
    if marks_only {
        1
    } else {
        msg_bytes + 1
    }
}

/// How many parts fit `reserved` bytes per vertex beside the program's value and message and
/// the iteration's flag (at most `threads`; 1 — no parts — when fewer than two fit).
pub(super) fn parts_within<P: VertexProgram>(reserved: u64, threads: usize, marks_only: bool) -> usize {
    let msg = std::mem::size_of::<P::Msg>() as u64;
    let base = own_bytes(std::mem::size_of::<P::Value>() as u64, msg);
    let fit = (reserved.saturating_sub(base) / part_bytes(msg, marks_only)) as usize;
    if fit >= 2 && threads >= 2 {
        fit.min(threads)
    } else {
        1
    }
}

/// A run of one vertex's list: raw targets (`width` bytes each) and, when the program reads
/// them, weights.
pub(super) struct ListRun<'a> {
    pub source: u64,
    pub targets: &'a [u8],
    pub weights: Option<&'a [u8]>,
}

/// Receives the lists of an iteration, a batch at a time.
pub(super) trait Sink {
    fn lists(&mut self, runs: &[ListRun<'_>]);
    /// Edges scattered so far.
    fn edges(&self) -> u64;
}

/// What every sink needs to scatter a run.
pub(super) struct ScatterContext<'a, P: VertexProgram> {
    pub program: &'a P,
    pub values: &'a [P::Value],
    pub out_offsets: &'a [u64],
    /// Bytes per target.
    pub width: usize,
}

impl<P: VertexProgram> ScatterContext<'_, P> {
    /// Computes `run`'s source's one message of the iteration and marks its targets in
    /// `received`, keeping the message in `one` (see the module doc); returns its edges.
    fn mark(&self, run: &ListRun<'_>, received: &mut Bitmap, one: &mut Option<P::Msg>) -> u64 {
        let (program, source, width) = (self.program, run.source, self.width);
        let source_out_degree = self.out_offsets[source as usize + 1] - self.out_offsets[source as usize];
        let count = run.targets.len() / width;
        let edge = EdgeRef { source, target: source, weight: 1.0, source_out_degree };
        let Some(msg) = program.scatter(&self.values[source as usize], edge) else { return count as u64 };
        *one = Some(msg);
        if width == 4 {
            for raw in run.targets.chunks_exact(4) {
                received.set(u32::from_le_bytes(raw.try_into().unwrap()) as u64);
            }
        } else {
            for raw in run.targets.chunks_exact(width) {
                received.set(u64::from_le_bytes(raw.try_into().unwrap()));
            }
        }
        count as u64
    }

    /// Scatters one run into `msgs`/`received`; returns its edges.
    fn run(&self, run: &ListRun<'_>, msgs: &mut [P::Msg], received: &mut Bitmap) -> u64 {
        if self.width == 4 {
            self.run_of_width::<4>(run, msgs, received)
        } else {
            self.run_of_width::<8>(run, msgs, received)
        }
    }

    /// [`run`](Self::run) for targets of `WIDTH` bytes. The messages are random accesses into
    /// an array far larger than the CPU's caches: the slot of the edge [`PREFETCH_DISTANCE`]
    /// ahead is asked for now, so that its miss overlaps the work on this one (as stream's
    /// scatter does).
    fn run_of_width<const WIDTH: usize>(&self, run: &ListRun<'_>, msgs: &mut [P::Msg], received: &mut Bitmap) -> u64 {
        let (program, source) = (self.program, run.source);
        let value = &self.values[source as usize];
        let source_out_degree = self.out_offsets[source as usize + 1] - self.out_offsets[source as usize];
        let targets = run.targets;
        let count = targets.len() / WIDTH;
        let target_at = |i: usize| {
            let raw = &targets[i * WIDTH..i * WIDTH + WIDTH];
            if WIDTH == 4 {
                u32::from_le_bytes(raw.try_into().unwrap()) as u64
            } else {
                u64::from_le_bytes(raw.try_into().unwrap())
            }
        };
        for i in 0..count {
            if i + PREFETCH_DISTANCE < count {
                prefetch(msgs.as_ptr().wrapping_add(target_at(i + PREFETCH_DISTANCE) as usize));
            }
            let target = target_at(i);
            let weight = run.weights.map_or(1.0, |w| f64::from_le_bytes(w[i * 8..i * 8 + 8].try_into().unwrap()));
            if let Some(msg) = program.scatter(value, EdgeRef { source, target, weight, source_out_degree }) {
                let t = target as usize;
                msgs[t] = program.combine(msgs[t], msg);
                received.set(target);
            }
        }
        count as u64
    }
}

/// One thread: straight into the iteration's accumulator.
pub(super) struct Serial<'a, P: VertexProgram> {
    pub context: ScatterContext<'a, P>,
    pub acc: &'a mut [P::Msg],
    pub received: &'a mut Bitmap,
    pub edges: u64,
}

impl<P: VertexProgram> Sink for Serial<'_, P> {
    fn lists(&mut self, runs: &[ListRun<'_>]) {
        for run in runs {
            self.edges += self.context.run(run, self.acc, self.received);
        }
    }
    fn edges(&self) -> u64 {
        self.edges
    }
}

/// One part's messages and the targets it touched.
struct Part<M> {
    /// Empty when the part only marks (see the module doc).
    msgs: Vec<M>,
    received: Bitmap,
    /// The iteration's one message, once a run of this part sent it (when it only marks).
    one: Option<M>,
    marks_only: bool,
}

impl<M: Copy> Part<M> {
    fn scatter<P: VertexProgram<Msg = M>>(&mut self, context: &ScatterContext<'_, P>, run: &ListRun<'_>) -> u64 {
        if self.marks_only {
            context.mark(run, &mut self.received, &mut self.one)
        } else {
            context.run(run, &mut self.msgs, &mut self.received)
        }
    }
}

/// The parts of a run: allocated once, emptied by every [`fold_into`](Parts::fold_into).
pub(super) struct Parts<M> {
    parts: Vec<Part<M>>,
}

impl<M: Copy + Send + Sync> Parts<M> {
    pub fn new(parts: usize, vertices: u64, identity: M, marks_only: bool) -> Parts<M> {
        let part = || Part {
            msgs: if marks_only { Vec::new() } else { vec![identity; vertices as usize] },
            received: Bitmap::new(vertices),
            one: None,
            marks_only,
        };
        Parts { parts: (0..parts).map(|_| part()).collect() }
    }

    pub fn count(&self) -> usize {
        self.parts.len()
    }

    /// Folds every part into `acc`/`received` in part order and empties the parts, 64
    /// vertices (one flag word) at a time, blocks of words in parallel.
    pub fn fold_into<P: VertexProgram<Msg = M>>(&mut self, program: &P, acc: &mut [M], received: &mut Bitmap) {
        const WORDS: usize = 1024;
        let identity = program.identity();
        let ones: Vec<Option<M>> = self.parts.iter_mut().map(|p| p.one.take()).collect();
        // Per part, its blocks of flags, each with its block of messages unless it only marks.
        let mut part_blocks: Vec<_> = self
            .parts
            .iter_mut()
            .map(|p| {
                let mut msgs = p.msgs.chunks_mut(64 * WORDS);
                let blocks: Vec<_> = p.received.words.chunks_mut(WORDS).map(|flags| (msgs.next(), flags)).collect();
                blocks.into_iter()
            })
            .collect();
        // Block b of every part beside block b of the accumulator.
        let mut blocks = Vec::new();
        for (acc, words) in acc.chunks_mut(64 * WORDS).zip(received.words.chunks_mut(WORDS)) {
            let parts: Vec<_> = part_blocks.iter_mut().map(|it| it.next().expect("parts cover every vertex")).collect();
            blocks.push((acc, words, parts));
        }
        blocks.into_par_iter().for_each(|(acc, words, mut parts)| {
            for (w, word) in words.iter_mut().enumerate() {
                for ((msgs, flags), one) in parts.iter_mut().zip(&ones) {
                    let mut bits = std::mem::take(&mut flags[w]);
                    *word |= bits;
                    while bits != 0 {
                        let v = w * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let msg = match msgs {
                            Some(msgs) => std::mem::replace(&mut msgs[v], identity),
                            None => one.expect("a part marks a target only once it holds the message"),
                        };
                        acc[v] = program.combine(acc[v], msg);
                    }
                }
            }
        });
    }
}

/// All threads: each batch cut into one group of runs per part.
pub(super) struct Parallel<'a, P: VertexProgram> {
    pub context: ScatterContext<'a, P>,
    pub parts: &'a mut Parts<P::Msg>,
    pub edges: u64,
}

/// Batches with fewer edges than this run on the first part alone.
const MIN_PARALLEL_EDGES: usize = 1 << 14;

impl<P: VertexProgram> Sink for Parallel<'_, P> {
    fn lists(&mut self, runs: &[ListRun<'_>]) {
        let width = self.context.width;
        let total: usize = runs.iter().map(|r| r.targets.len() / width).sum();
        let count = self.parts.count();
        let context = &self.context;
        if total < MIN_PARALLEL_EDGES || count == 1 {
            let part = &mut self.parts.parts[0];
            for run in runs {
                self.edges += part.scatter(context, run);
            }
            return;
        }
        // Group k: the runs after k/count of the batch's edges, up to (k+1)/count.
        let mut groups = Vec::with_capacity(count);
        let (mut start, mut seen) = (0, 0);
        for k in 1..=count {
            let limit = total * k / count;
            let mut end = start;
            while end < runs.len() && (seen < limit || k == count) {
                seen += runs[end].targets.len() / width;
                end += 1;
            }
            groups.push(&runs[start..end]);
            start = end;
        }
        let edges: u64 = self
            .parts
            .parts
            .par_iter_mut()
            .zip(groups)
            .map(|(part, group)| group.iter().map(|run| part.scatter(context, run)).sum::<u64>())
            .sum();
        self.edges += edges;
    }
    fn edges(&self) -> u64 {
        self.edges
    }
}

impl<P: VertexProgram> Parallel<'_, P> {
    /// Scatters every active vertex's list held in `cache`, part k taking the k-th of
    /// [`balanced_ranges`]; returns the lists scattered.
    pub fn static_lists(&mut self, cache: &StaticCache, active: &Bitmap, with_weights: bool) -> u64 {
        let context = &self.context;
        let offsets = context.out_offsets;
        let cached_edges = |v: u64| if cache.holds(v) { offsets[v as usize + 1] - offsets[v as usize] } else { 0 };
        let bounds = balanced_ranges(active, offsets.len() as u64 - 1, self.parts.count(), cached_edges);
        let (lists, edges) = self
            .parts
            .parts
            .par_iter_mut()
            .enumerate()
            .map(|(k, part)| {
                let (mut lists, mut edges) = (0u64, 0u64);
                let mut next = active.next_one(bounds[k]);
                while let Some(source) = next.filter(|&v| v < bounds[k + 1]) {
                    next = active.next_one(source + 1);
                    let Some((targets, weights)) = cache.get(source) else { continue };
                    let run = ListRun { source, targets, weights: if with_weights { weights } else { None } };
                    edges += part.scatter(context, &run);
                    lists += 1;
                }
                (lists, edges)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        self.edges += edges;
        lists
    }
}

/// `count` contiguous ranges of `vertices` sources (`count + 1` bounds) holding about equal
/// `work` of the active sources (for the static lists, the edges of those `cache` holds). Cut by
/// the graph's edges instead, one part could get most of an iteration's cached lists (a level of
/// SSSP sits where Norder put its vertices; on RMAT-22 its second level took 0.58 s, and 0.36 s
/// with this cut and the scatter's prefetch); cut by the work, each part's share depends on the
/// active set alone, so the results still never depend on timing.
fn balanced_ranges(active: &Bitmap, vertices: u64, count: usize, work: impl Fn(u64) -> u64) -> Vec<u64> {
    let total: u64 = active.iter_ones().map(&work).sum();
    let mut bounds = vec![0];
    let mut seen = 0u64;
    for v in active.iter_ones() {
        // Range k starts at the first source past k/count of the work.
        while bounds.len() < count && seen as u128 * count as u128 >= total as u128 * bounds.len() as u128 {
            bounds.push(v);
        }
        seen += work(v);
    }
    bounds.resize(count + 1, vertices);
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The ranges cover every source in order, and no range holds more work than its
        /// share plus the largest single source's.
        #[test]
        fn balanced_ranges_split_the_active_work_evenly(
            work in proptest::collection::vec(0u64..1000, 1..400),
            active_every in 1usize..4,
            count in 1usize..5,
        ) {
            let n = work.len() as u64;
            let mut active = Bitmap::new(n);
            for v in (0..n).step_by(active_every) {
                active.set(v);
            }
            let work_of = |v: u64| work[v as usize];
            let bounds = balanced_ranges(&active, n, count, work_of);
            prop_assert_eq!(bounds.len(), count + 1);
            prop_assert_eq!((bounds[0], bounds[count]), (0, n));
            prop_assert!(bounds.windows(2).all(|w| w[0] <= w[1]));
            let total: u64 = active.iter_ones().map(work_of).sum();
            let largest = active.iter_ones().map(work_of).max().unwrap_or(0);
            for k in 0..count {
                let range: u64 = active.iter_ones().filter(|&v| bounds[k] <= v && v < bounds[k + 1]).map(work_of).sum();
                prop_assert!(range <= total.div_ceil(count as u64) + largest, "range {} holds {} of {}", k, range, total);
            }
        }
    }
}
