//! Pregel supersteps on the in-memory engine, in parallel, with the results of a sequential run.
//!
//! A superstep computes its awake vertices (an ascending list, so a superstep with few awake
//! vertices costs them, not `n`) in contiguous chunks on rayon's threads. A chunk appends what
//! it sends to its own buffers, one per *bucket* of consecutive targets, and logs its aggregate
//! contributions. The next inbox is then built one bucket per task: the bucket's pieces are
//! taken in chunk order, so in sender order, and placed by target as a CSR (a counting sort that
//! moves each message once, or a stable sort when the bucket has few messages for its range). Every vertex therefore reads
//! its messages in the very order a run one vertex after another delivers them, the program's
//! combiner folds them in that order into the first one, and the aggregate contributions are
//! folded in vertex order too — so results, floating-point sums and tie-breaks included, do not
//! depend on the number of threads and equal those of the sequential engine this replaced.

use std::collections::BTreeSet;
use std::time::Instant;

use rayon::prelude::*;

use super::{charge, Adjacency};
use crate::engine::inmem_plan::InMemorySizing;
use crate::engine::planner::{GraphCounts, ProgramShape};
use crate::engine::{InMemoryPregelIteration, IterationFigures, IterationStats, Runner};
use crate::error::Result;
use crate::program::{Aggregates, Control, GraphInfo, PregelContext, PregelProgram};
use crate::runtime::chunks::{self, Cut};
use crate::runtime::ProgressUnit;
use crate::VertexId;

/// How a superstep is cut up: awake vertices per chunk at least, chunks at most, and targets
/// per bucket of the inbox.
#[derive(Debug, Clone, Copy)]
pub(super) struct Split {
    pub grain: usize,
    pub max_chunks: usize,
    pub bucket: usize,
}

impl Split {
    /// Four chunks and four buckets per thread of the current rayon pool, so that stealing
    /// evens out uneven chunks; chunks of at least 256 vertices and buckets of at least 4096
    /// targets, so that small graphs are not cut into pieces that cost more than they hold.
    pub fn for_pool(n: usize) -> Split {
        let tasks = 4 * rayon::current_num_threads().max(1);
        let bucket = n.div_ceil(tasks).clamp(4096, 1 << 31);
        Split { grain: 256, max_chunks: tasks, bucket }
    }

    /// Chunks of `awake` vertices: one per `grain` of them, `max_chunks` at most, one at least.
    fn chunks(&self, awake: usize) -> usize {
        awake.div_ceil(self.grain).clamp(1, self.max_chunks.max(1))
    }

    fn buckets(&self, n: usize) -> usize {
        n.div_ceil(self.bucket).max(1)
    }

    /// The targets bucket `b` holds.
    fn range(&self, n: usize, b: usize) -> usize {
        self.bucket.min(n - b * self.bucket)
    }
}

/// One vertex of the awake list, with where its messages are in the inbox (bucket, index).
#[derive(Debug, Clone, Copy)]
struct Awake {
    vertex: VertexId,
    inbox: Option<(u32, u32)>,
}

/// What one chunk sent to one bucket, in sending order (targets local to the bucket).
struct Outgoing<M> {
    targets: Vec<u32>,
    msgs: Vec<M>,
}

impl<M> Default for Outgoing<M> {
    fn default() -> Self {
        Outgoing { targets: Vec::new(), msgs: Vec::new() }
    }
}

/// One bucket of the inbox, a CSR over the targets that have messages: those targets
/// (ascending, local to the bucket), where each one's messages end, and the messages.
struct Bucket<M> {
    targets: Vec<u32>,
    ends: Vec<usize>,
    msgs: Vec<M>,
}

impl<M> Bucket<M> {
    fn messages(&self, i: usize) -> &[M] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.msgs[start..self.ends[i]]
    }
}

/// What one chunk of a superstep produced.
struct ChunkOut<M> {
    /// By bucket.
    outgoing: Vec<Outgoing<M>>,
    /// The chunk's vertices that did not vote to halt, ascending.
    running: Vec<VertexId>,
    /// `aggregate_at(slot, value)` calls in call order.
    contributions: Vec<(usize, f64)>,
    messages: u64,
    edges: u64,
    thread: Option<usize>,
}

/// What every chunk of one superstep reads.
struct Step<'a, P: PregelProgram> {
    program: &'a P,
    adj: &'a Adjacency,
    in_edges: bool,
    info: &'a GraphInfo,
    superstep: usize,
    split: Split,
    inbox: &'a [Bucket<P::Msg>],
    previous: &'a [f64],
}

/// What one vertex's `compute` sees.
struct Context<'a, P: PregelProgram> {
    step: &'a Step<'a, P>,
    vertex: VertexId,
    out_neighbors: &'a [VertexId],
    out_weights: &'a [f64],
    in_neighbors: &'a [VertexId],
    out: &'a mut ChunkOut<P::Msg>,
    halted: bool,
}

impl<P: PregelProgram> PregelContext<P::Msg> for Context<'_, P> {
    fn vertex(&self) -> VertexId {
        self.vertex
    }
    fn superstep(&self) -> usize {
        self.step.superstep
    }
    fn graph(&self) -> &GraphInfo {
        self.step.info
    }
    fn out_neighbors(&self) -> &[VertexId] {
        self.out_neighbors
    }
    fn out_weights(&self) -> &[f64] {
        self.out_weights
    }
    fn in_neighbors(&self) -> &[VertexId] {
        self.in_neighbors
    }
    fn send(&mut self, target: VertexId, message: P::Msg) {
        let n = self.step.info.num_vertices;
        assert!(target < n, "message sent to vertex {target}, which does not exist");
        self.out.messages += 1;
        let bucket = self.step.split.bucket as u64;
        let outgoing = &mut self.out.outgoing[(target / bucket) as usize];
        outgoing.targets.push((target % bucket) as u32);
        outgoing.msgs.push(message);
    }
    fn vote_to_halt(&mut self) {
        self.halted = true;
    }
    fn aggregate_at(&mut self, slot: usize, value: f64) {
        let width = self.step.previous.len();
        assert!(slot < width, "aggregate slot {slot} is outside the program's aggregate_width() of {width}");
        self.out.contributions.push((slot, value));
    }
    fn previous_aggregates(&self) -> &[f64] {
        self.step.previous
    }
}

/// Computes one chunk of awake vertices; `values` starts at the chunk's first vertex.
fn compute_chunk<P: PregelProgram>(step: &Step<P>, awake: &[Awake], values: &mut [P::Value]) -> ChunkOut<P::Msg> {
    let n = step.info.num_vertices as usize;
    let buckets = step.split.buckets(n);
    let mut out = ChunkOut {
        outgoing: (0..buckets).map(|_| Outgoing::default()).collect(),
        running: Vec::new(),
        contributions: Vec::new(),
        messages: 0,
        edges: 0,
        thread: rayon::current_thread_index(),
    };
    let first = awake.first().map_or(0, |a| a.vertex);
    for a in awake {
        let v = a.vertex;
        let messages: &[P::Msg] = match a.inbox {
            Some((b, i)) => step.inbox[b as usize].messages(i as usize),
            None => &[],
        };
        let in_neighbors: &[VertexId] = if step.in_edges { step.adj.in_csr().neighbors(v) } else { &[] };
        let out_neighbors = step.adj.out.neighbors(v);
        out.edges += (out_neighbors.len() + in_neighbors.len()) as u64;
        let out_weights = step.adj.weights(&step.adj.out, v);
        let mut ctx =
            Context { step, vertex: v, out_neighbors, out_weights, in_neighbors, out: &mut out, halted: false };
        step.program.compute(&mut ctx, &mut values[(v - first) as usize], messages);
        if !ctx.halted {
            out.running.push(v);
        }
    }
    out
}

/// The disjoint pieces of `values` the chunks write: from each chunk's first vertex up to the
/// next chunk's (the last to the end).
fn value_pieces<'a, V>(values: &'a mut [V], firsts: &[usize]) -> Vec<&'a mut [V]> {
    let total = values.len();
    let (mut rest, mut offset) = (values, 0);
    let mut pieces = Vec::with_capacity(firsts.len());
    for (i, &first) in firsts.iter().enumerate() {
        let end = firsts.get(i + 1).copied().unwrap_or(total);
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(first - offset);
        let (piece, tail) = tail.split_at_mut(end - first);
        pieces.push(piece);
        (rest, offset) = (tail, end);
    }
    pieces
}

/// Runs `compute` for every awake vertex, chunks in parallel; the outputs in chunk order.
fn compute_superstep<P: PregelProgram>(
    step: &Step<P>,
    awake: &[Awake],
    values: &mut [P::Value],
) -> Vec<ChunkOut<P::Msg>> {
    let in_csr = step.in_edges.then(|| step.adj.in_csr());
    let arcs = |v| step.adj.out.degree(v) + in_csr.map_or(0, |c| c.degree(v));
    let count = step.split.chunks(awake.len());
    let ranges = chunks::balanced(awake.len(), |i| 1 + arcs(awake[i].vertex), count, Cut::Quantiles);
    let firsts: Vec<usize> = ranges.iter().map(|r| awake[r.start].vertex as usize).collect();
    let pieces = value_pieces(values, &firsts);
    ranges.into_par_iter().zip(pieces).with_max_len(1).map(|(r, piece)| compute_chunk(step, &awake[r], piece)).collect()
}

/// Builds one bucket of the inbox from what the chunks sent it, taken in chunk order: a
/// target's messages stay in sending order, then the combiner folds them into the first one.
fn build_bucket<P: PregelProgram>(program: &P, pieces: Vec<Outgoing<P::Msg>>, range: usize) -> Bucket<P::Msg> {
    let total: usize = pieces.iter().map(|p| p.targets.len()).sum();
    let mut bucket =
        if total * 8 < range { sorted_bucket(pieces, total) } else { counted_bucket(pieces, total, range) };
    if program.has_combiner() {
        combine_in_place(program, &mut bucket);
    }
    bucket
}

/// Few messages for the bucket's range: a stable sort of the messages by target.
fn sorted_bucket<M>(pieces: Vec<Outgoing<M>>, total: usize) -> Bucket<M> {
    let mut sent: Vec<(u32, M)> = Vec::with_capacity(total);
    for piece in pieces {
        sent.extend(piece.targets.into_iter().zip(piece.msgs));
    }
    sent.sort_by_key(|s| s.0);
    let mut bucket = Bucket { targets: Vec::new(), ends: Vec::new(), msgs: Vec::with_capacity(total) };
    for (t, m) in sent {
        if bucket.targets.last() != Some(&t) {
            bucket.targets.push(t);
            bucket.ends.push(0);
        }
        bucket.msgs.push(m);
        *bucket.ends.last_mut().expect("a target") = bucket.msgs.len();
    }
    bucket
}

/// Many messages for the bucket's range: a counting sort that moves each message once, straight
/// from the chunk's buffer to its place.
fn counted_bucket<M>(pieces: Vec<Outgoing<M>>, total: usize, range: usize) -> Bucket<M> {
    let mut starts = vec![0usize; range + 1];
    for &t in pieces.iter().flat_map(|p| &p.targets) {
        starts[t as usize + 1] += 1;
    }
    let mut bucket = Bucket { targets: Vec::new(), ends: Vec::new(), msgs: Vec::with_capacity(total) };
    for t in 0..range {
        if starts[t + 1] > 0 {
            bucket.targets.push(t as u32);
        }
        starts[t + 1] += starts[t];
        if starts[t + 1] > starts[t] {
            bucket.ends.push(starts[t + 1]);
        }
    }
    let slots = &mut bucket.msgs.spare_capacity_mut()[..total];
    for piece in pieces {
        for (t, m) in piece.targets.into_iter().zip(piece.msgs) {
            slots[starts[t as usize]].write(m);
            starts[t as usize] += 1;
        }
    }
    // SAFETY: `starts` counted exactly these messages, so the positions 0..total were each
    // written once above.
    unsafe { bucket.msgs.set_len(total) };
    bucket
}

/// Folds each target's messages, in order, into its first one wherever the combiner folds
/// them (a message it does not fold stays, after the first), as the sequential engine did.
fn combine_in_place<P: PregelProgram>(program: &P, bucket: &mut Bucket<P::Msg>) {
    let mut sent = std::mem::take(&mut bucket.msgs).into_iter();
    let (mut msgs, mut previous_end) = (Vec::with_capacity(sent.len()), 0);
    for end in bucket.ends.iter_mut() {
        let first = msgs.len();
        for (k, m) in sent.by_ref().take(*end - previous_end).enumerate() {
            if k > 0 {
                if let Some(folded) = program.combine(&msgs[first], &m) {
                    msgs[first] = folded;
                    continue;
                }
            }
            msgs.push(m);
        }
        previous_end = *end;
        *end = msgs.len();
    }
    bucket.msgs = msgs;
}

/// The next inbox: the chunks' messages, bucket by bucket in parallel.
fn build_inbox<P: PregelProgram>(
    program: &P,
    outs: &mut [ChunkOut<P::Msg>],
    split: Split,
    n: usize,
) -> Vec<Bucket<P::Msg>> {
    let by_bucket: Vec<Vec<Outgoing<P::Msg>>> =
        (0..split.buckets(n)).map(|b| outs.iter_mut().map(|o| std::mem::take(&mut o.outgoing[b])).collect()).collect();
    by_bucket.into_par_iter().enumerate().map(|(b, pieces)| build_bucket(program, pieces, split.range(n, b))).collect()
}

/// The next awake list: the vertices still running merged with those that have messages,
/// ascending (bucket by bucket in parallel).
fn next_awake<M: Sync>(running: &[VertexId], inbox: &[Bucket<M>], split: Split) -> Vec<Awake> {
    let per_bucket: Vec<Vec<Awake>> = inbox
        .par_iter()
        .enumerate()
        .map(|(b, bucket)| {
            let lo = (b * split.bucket) as VertexId;
            let hi = lo + split.bucket as VertexId;
            let running = &running[running.partition_point(|&v| v < lo)..running.partition_point(|&v| v < hi)];
            merge_bucket(running, bucket, b, lo)
        })
        .collect();
    per_bucket.concat()
}

/// Merges one bucket's running vertices (ascending) with its targets.
fn merge_bucket<M>(running: &[VertexId], bucket: &Bucket<M>, b: usize, lo: VertexId) -> Vec<Awake> {
    let mut merged = Vec::with_capacity(running.len() + bucket.targets.len());
    let (mut r, mut i) = (0, 0);
    while r < running.len() || i < bucket.targets.len() {
        let target = bucket.targets.get(i).map(|&t| lo + t as VertexId);
        let vertex = running.get(r).copied();
        if let Some(t) = target.filter(|_| vertex.is_none() || target <= vertex) {
            merged.push(Awake { vertex: t, inbox: Some((b as u32, i as u32)) });
            r += (vertex == target) as usize;
            i += 1;
        } else {
            merged.push(Awake { vertex: vertex.unwrap(), inbox: None });
            r += 1;
        }
    }
    merged
}

/// Folds the chunks' aggregate contributions in chunk order, so in vertex order.
fn fold_aggregates<P: PregelProgram>(program: &P, outs: &[ChunkOut<P::Msg>]) -> Aggregates {
    let mut aggregates = Aggregates::new(program.aggregate_width());
    for (slot, value) in outs.iter().flat_map(|o| &o.contributions) {
        aggregates.add(*slot, *value, |a, b| program.aggregate(a, b));
    }
    aggregates
}

/// Bytes of state per vertex (value, awake entry, a running id, an inbox target and end) and
/// per message (a chunk's target and message, the placed message, 8 bytes of slack for the
/// buffers' growth, a sparse bucket's sort or a combiner's copy) of a program with values and
/// messages of these sizes; the run holds one message per loaded arc (`InMemorySizing`).
pub(in crate::engine) fn state_bytes(value_bytes: u64, msg_bytes: u64) -> (u64, u64) {
    let size = (std::mem::size_of::<Awake>() + 8 + 4 + 8) as u64;
    (value_bytes + size, 4 + 8 + 2 * msg_bytes)
}

/// Runs a Pregel program to completion; values in dense-id order.
pub fn run_pregel<P: PregelProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    run_split(runner, program, Split::for_pool(runner.store().num_vertices() as usize))
}

/// [`run_pregel`] with the superstep cut up as `split` says (tests cut small graphs finely).
pub(super) fn run_split<P: PregelProgram>(runner: &Runner, program: &P, split: Split) -> Result<Vec<P::Value>> {
    let in_edges = program.needs_in_edges();
    let shape = ProgramShape::pregel(program, false);
    let sizing = InMemorySizing::of(&shape, GraphCounts::of(runner.store()), runner.memory().bytes());
    let _charges = charge(runner, &sizing)?;
    let load = sizing.load;
    let info = runner.graph_info();
    let adj = Adjacency::load(runner.store(), load)?;
    let n = info.num_vertices as usize;

    let mut values: Vec<P::Value> = (0..n as u64).map(|v| program.init(v, &info)).collect();
    let mut awake: Vec<Awake> = (0..n as u64).map(|vertex| Awake { vertex, inbox: None }).collect();
    let mut inbox: Vec<Bucket<P::Msg>> = Vec::new();
    let mut previous = Aggregates::new(program.aggregate_width());
    let bar = runner.progress().start(
        "supersteps (inmem)",
        program.max_supersteps().map(|m| m as u64),
        ProgressUnit::Iterations,
    );
    let mut superstep = 0;
    loop {
        runner.cancel_token().check()?;
        if awake.is_empty() || program.max_supersteps().is_some_and(|max| superstep >= max) {
            break;
        }
        let started = Instant::now();
        let step = Step {
            program,
            adj: &adj,
            in_edges,
            info: &info,
            superstep,
            split,
            inbox: &inbox,
            previous: previous.values(),
        };
        let mut outs = compute_superstep(&step, &awake, &mut values);
        drop(std::mem::take(&mut inbox));
        inbox = build_inbox(program, &mut outs, split, n);
        let running: Vec<VertexId> = outs.iter().flat_map(|o| o.running.iter().copied()).collect();
        let active_vertices = awake.len() as u64;
        awake = next_awake(&running, &inbox, split);
        previous = fold_aggregates(program, &outs);
        runner.record_iteration(IterationStats {
            iteration: superstep,
            active_vertices,
            edges_processed: outs.iter().map(|o| o.edges).sum(),
            seconds: started.elapsed().as_secs_f64(),
            figures: IterationFigures::InMemoryPregel(InMemoryPregelIteration {
                messages: outs.iter().map(|o| o.messages).sum(),
                threads: outs.iter().map(|o| o.thread).collect::<BTreeSet<_>>().len() as u64,
            }),
            ..IterationStats::default()
        });
        bar.inc(1);
        superstep += 1;
        if program.end_superstep_aggregates(superstep - 1, previous.values()) == Control::Stop {
            break;
        }
    }
    bar.finish();
    Ok(values)
}

#[cfg(test)]
mod tests;
