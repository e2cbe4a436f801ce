//! The parallel Pregel superstep against the sequential one it replaced (kept here, verbatim
//! but for stats and progress, as the oracle): same values, bit for bit, on random graphs.

use super::super::tests::with_graph;
use super::super::{Adjacency, Load};
use super::*;
use crate::engine::Runner;

/// What one vertex's `compute` sees in the sequential engine.
struct SeqContext<'a, P: PregelProgram> {
    program: &'a P,
    vertex: VertexId,
    superstep: usize,
    graph: &'a GraphInfo,
    out_neighbors: &'a [VertexId],
    out_weights: &'a [f64],
    in_neighbors: &'a [VertexId],
    outbox: &'a mut Vec<Vec<P::Msg>>,
    messages_sent: &'a mut u64,
    halted: bool,
    aggregates: &'a mut Aggregates,
    previous_aggregates: &'a [f64],
}

impl<P: PregelProgram> PregelContext<P::Msg> for SeqContext<'_, P> {
    fn vertex(&self) -> VertexId {
        self.vertex
    }
    fn superstep(&self) -> usize {
        self.superstep
    }
    fn graph(&self) -> &GraphInfo {
        self.graph
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
        assert!(target < self.graph.num_vertices, "message sent to vertex {target}, which does not exist");
        *self.messages_sent += 1;
        let inbox = &mut self.outbox[target as usize];
        if self.program.has_combiner() && !inbox.is_empty() {
            if let Some(folded) = self.program.combine(&inbox[0], &message) {
                inbox[0] = folded;
                return;
            }
        }
        inbox.push(message);
    }
    fn vote_to_halt(&mut self) {
        self.halted = true;
    }
    fn aggregate_at(&mut self, slot: usize, value: f64) {
        self.aggregates.add(slot, value, |a, b| self.program.aggregate(a, b));
    }
    fn previous_aggregates(&self) -> &[f64] {
        self.previous_aggregates
    }
}

/// The sequential engine: one vertex after another in dense-id order.
fn sequential<P: PregelProgram>(runner: &Runner, program: &P) -> Vec<P::Value> {
    let in_edges = program.needs_in_edges();
    let info = runner.graph_info();
    let adj = Adjacency::load(runner.store(), Load { in_edges, weights: program.uses_weights() }).unwrap();
    let n = info.num_vertices as usize;

    let mut values: Vec<P::Value> = (0..n as u64).map(|v| program.init(v, &info)).collect();
    let mut halted = vec![false; n];
    let mut inbox: Vec<Vec<P::Msg>> = vec![Vec::new(); n];
    let mut previous = Aggregates::new(program.aggregate_width());
    let mut superstep = 0;
    loop {
        let awake: Vec<bool> = (0..n).map(|v| !halted[v] || !inbox[v].is_empty()).collect();
        let active_vertices = awake.iter().filter(|&&a| a).count() as u64;
        if active_vertices == 0 || program.max_supersteps().is_some_and(|max| superstep >= max) {
            break;
        }
        let mut outbox: Vec<Vec<P::Msg>> = vec![Vec::new(); n];
        let mut aggregates = Aggregates::new(program.aggregate_width());
        let mut messages_sent = 0u64;
        for v in (0..n).filter(|&v| awake[v]) {
            let messages = std::mem::take(&mut inbox[v]);
            let in_neighbors: &[VertexId] = if in_edges { adj.in_csr().neighbors(v as u64) } else { &[] };
            let mut ctx = SeqContext {
                program,
                vertex: v as u64,
                superstep,
                graph: &info,
                out_neighbors: adj.out.neighbors(v as u64),
                out_weights: adj.weights(&adj.out, v as u64),
                in_neighbors,
                outbox: &mut outbox,
                messages_sent: &mut messages_sent,
                halted: false,
                aggregates: &mut aggregates,
                previous_aggregates: previous.values(),
            };
            program.compute(&mut ctx, &mut values[v], &messages);
            halted[v] = ctx.halted;
        }
        inbox = outbox;
        previous = aggregates;
        superstep += 1;
        if program.end_superstep_aggregates(superstep - 1, previous.values()) == Control::Stop {
            break;
        }
    }
    values
}

/// A program whose results depend on the order of every fold: labels by the most frequent
/// message, ties to the first received (as CDLP); ranks summed in floating point; two aggregate
/// slots folded by a non-commutative `aggregate`; vertices halting on a pattern and woken by
/// messages; optionally a combiner that folds only messages of the same parity.
struct Mixed {
    combiner: bool,
    halt_every: u64,
}

/// (label, rank, supersteps computed).
type MixedValue = (u64, f64, u64);

impl PregelProgram for Mixed {
    type Value = MixedValue;
    type Msg = (u64, f64);
    fn init(&self, v: VertexId, _: &GraphInfo) -> MixedValue {
        (v * 7 % 5, 1.0 / (v + 1) as f64, 0)
    }
    fn needs_in_edges(&self) -> bool {
        true
    }
    fn compute(&self, ctx: &mut dyn PregelContext<(u64, f64)>, value: &mut MixedValue, messages: &[(u64, f64)]) {
        value.2 += 1;
        if !messages.is_empty() {
            value.0 = first_mode(messages.iter().map(|m| m.0));
            let sum: f64 = messages.iter().map(|m| m.1).sum();
            value.1 = 0.15 + 0.85 * sum + 1e-3 * ctx.previous_aggregates()[1];
        }
        ctx.aggregate_at(0, value.1);
        ctx.aggregate_at(1, value.0 as f64 * 0.1 + value.1);
        let (v, s) = (ctx.vertex(), ctx.superstep() as u64);
        if s >= 6 || (v + s) % self.halt_every == 0 {
            ctx.vote_to_halt();
            if s >= 6 {
                return;
            }
        }
        let targets: Vec<VertexId> = ctx.out_neighbors().iter().chain(ctx.in_neighbors()).copied().collect();
        let share = value.1 / targets.len().max(1) as f64;
        for t in targets {
            ctx.send(t, (value.0, share));
        }
    }
    fn combine(&self, a: &(u64, f64), b: &(u64, f64)) -> Option<(u64, f64)> {
        (a.0 % 2 == b.0 % 2).then(|| (a.0.min(b.0), a.1 + b.1))
    }
    fn has_combiner(&self) -> bool {
        self.combiner
    }
    fn aggregate_width(&self) -> usize {
        2
    }
    fn aggregate(&self, a: f64, b: f64) -> f64 {
        a * 0.75 + b
    }
    fn max_supersteps(&self) -> Option<usize> {
        Some(10)
    }
}

/// The most frequent value, ties to the one seen first.
fn first_mode(values: impl Iterator<Item = u64>) -> u64 {
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for x in values {
        match counts.iter_mut().find(|c| c.0 == x) {
            Some(c) => c.1 += 1,
            None => counts.push((x, 1)),
        }
    }
    let best = counts.iter().map(|c| c.1).max().unwrap_or(0);
    counts.iter().find(|c| c.1 == best).map_or(0, |c| c.0)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
}

/// The threads figure of each superstep of the runner's last run.
fn threads(r: &Runner) -> Vec<u64> {
    let stats = r.finish("pregel");
    stats.per_iteration.iter().map(|i| i.figures.in_memory_pregel().expect("inmem pregel figures").threads).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]
    /// Cut into many chunks and buckets on four threads, the run equals the sequential one.
    #[test]
    fn parallel_supersteps_equal_the_sequential_engine(
        n in 1usize..120,
        raw in proptest::collection::vec((0usize..120, 0usize..120), 0..500),
        directed in proptest::bool::ANY,
        combiner in proptest::bool::ANY,
        halt_every in 1u64..5,
        grain in 1usize..9,
        bucket in 1usize..40,
    ) {
        let edges: Vec<(usize, usize)> = raw.into_iter().filter(|&(s, t)| s < n && t < n).collect();
        let program = Mixed { combiner, halt_every };
        let (expected, fine, default) = with_graph(n as u64, &edges, directed, |r| {
            let split = Split { grain, max_chunks: 13, bucket };
            let fine = pool(4).install(|| run_split(r, &program, split).unwrap());
            (sequential(r, &program), fine, run_pregel(r, &program).unwrap())
        });
        proptest::prop_assert_eq!(&expected, &fine);
        proptest::prop_assert_eq!(&expected, &default);
    }
}

/// Sends its id along out-arcs for three supersteps; vertex 0 sleeps in superstep 0 so that
/// other threads take the remaining chunks.
struct Slow;

impl PregelProgram for Slow {
    type Value = u64;
    type Msg = u64;
    fn init(&self, _: VertexId, _: &GraphInfo) -> u64 {
        0
    }
    fn compute(&self, ctx: &mut dyn PregelContext<u64>, value: &mut u64, messages: &[u64]) {
        if ctx.vertex() == 0 && ctx.superstep() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        *value += messages.iter().sum::<u64>();
        if ctx.superstep() < 3 {
            for t in ctx.out_neighbors().to_vec() {
                ctx.send(t, ctx.vertex());
            }
        } else {
            ctx.vote_to_halt();
        }
    }
}

#[test]
fn supersteps_run_on_several_threads() {
    let n = 20_000;
    let edges: Vec<(usize, usize)> = (0..n).map(|v| (v, (v + 1) % n)).collect();
    let (values, threads) = with_graph(n as u64, &edges, true, |r| {
        let values = pool(4).install(|| r.run_pregel(&Slow).unwrap());
        (values, threads(r))
    });
    assert_eq!(values[1], 0);
    assert_eq!(values[5], 3 * 4);
    assert_eq!(threads.len(), 4);
    assert!(threads[0] > 1, "superstep 0 ran on {} thread(s) of 4", threads[0]);
    assert!(threads.iter().all(|&t| (1..=4).contains(&t)), "{threads:?}");
}
