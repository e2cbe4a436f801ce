//! The in-memory engine's own checks: directions, push and pull choices, message buffers,
//! global sums and Pregel supersteps.

use super::*;
use crate::engine::{EngineKind, RunOptions};
use crate::program::{EdgeRef, GraphInfo, MessageKind, PregelContext, PregelProgram};
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
    let r = Runner::new(&store, RunOptions { engine: EngineKind::InMemory, memory: budget, ..RunOptions::default() });
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
