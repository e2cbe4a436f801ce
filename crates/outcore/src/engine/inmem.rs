//! The in-memory reference engine: the oracle every other engine is tested against.
//!
//! It loads `csr-out` (and `csr-in` when the program reads in-edges) whole with
//! [`CsrLayout::load`](crate::store::CsrLayout::load) and runs programs in the plainest way, one
//! vertex after another in dense-id order, so that results are deterministic and the code can
//! be checked by reading it.
//!
//! **Vertex programs** run in iterations `i = 0, 1, ...`:
//! 1. `global_sum` = Σ over all vertices of `global_contribution(v, value, out_degree)`;
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
//! returns [`Control::Stop`].
//!
//! Before loading anything the engine checks its estimate of the memory it needs against the
//! budget and fails with [`Error::MemoryBudget`] when the graph does not fit.

use std::time::Instant;

use super::{IterationStats, Runner};
use crate::error::{Error, Result};
use crate::program::{
    Aggregates, Control, EdgeDirection, EdgeRef, GraphInfo, IterationContext, PregelContext, PregelProgram,
    VertexProgram,
};
use crate::runtime::{format_size, ProgressUnit};
use crate::store::{Direction, InMemoryCsr, Store};
use crate::VertexId;

/// Bytes one loaded CSR layout takes in memory (targets decoded to u64, weights as f64).
fn csr_bytes(store: &Store) -> u64 {
    let arcs = store.num_arcs();
    let weights = if store.is_weighted() { arcs * 8 } else { 0 };
    (store.num_vertices() + 1) * 8 + arcs * 8 + weights
}

/// Memory the engine needs for a run: the layouts it loads, `per_vertex` bytes of state and
/// `per_arc` bytes of messages.
fn needed_bytes(store: &Store, in_edges: bool, per_vertex: u64, per_arc: u64) -> u64 {
    let layouts = if in_edges && store.is_directed() { 2 } else { 1 };
    layouts * csr_bytes(store) + store.num_vertices() * per_vertex + store.num_arcs() * per_arc
}

/// What `auto` compares with the budget: both layouts and 32 bytes of state per vertex.
pub fn estimated_memory_bytes(store: &Store) -> u64 {
    needed_bytes(store, true, 32, 0)
}

fn check_budget(runner: &Runner, needed: u64) -> Result<()> {
    let budget = runner.options().memory;
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
    fn load(store: &Store, in_edges: bool) -> Result<Adjacency> {
        let out = store.csr(Direction::Out)?.load()?;
        let inn = if in_edges && store.is_directed() { Some(store.csr(Direction::In)?.load()?) } else { None };
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

/// Runs a vertex program to completion; values in dense-id order.
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let direction = program.direction();
    let in_edges = direction != EdgeDirection::Out;
    let per_vertex = (std::mem::size_of::<P::Value>() + std::mem::size_of::<P::Msg>() + 2) as u64;
    check_budget(runner, needed_bytes(runner.store(), in_edges, per_vertex, 0))?;
    let info = runner.graph_info();
    let adj = Adjacency::load(runner.store(), in_edges)?;
    // The lists an active vertex sends along (`In`: its in-arcs, reversed).
    let lists: [Option<&InMemoryCsr>; 2] = match direction {
        EdgeDirection::Out => [Some(&adj.out), None],
        EdgeDirection::Both => [Some(&adj.out), adj.inn.as_ref()],
        EdgeDirection::In => [Some(adj.in_csr()), None],
    };
    let n = info.num_vertices as usize;

    let mut values: Vec<P::Value> = (0..n as u64).map(|v| program.init(v, &info)).collect();
    let mut active: Vec<bool> = (0..n as u64).map(|v| program.initially_active(v, &info)).collect();
    let bar = runner.progress().start(
        "iterations (inmem)",
        program.max_iterations().map(|m| m as u64),
        ProgressUnit::Iterations,
    );
    let mut iteration = 0;
    loop {
        runner.cancel_token().check()?;
        let active_vertices = active.iter().filter(|&&a| a).count() as u64;
        if active_vertices == 0 || program.max_iterations().is_some_and(|max| iteration >= max) {
            break;
        }
        let started = Instant::now();
        let global_sum: f64 =
            (0..n).map(|v| program.global_contribution(v as u64, &values[v], adj.out.degree(v as u64))).sum();

        let mut acc: Vec<P::Msg> = vec![program.identity(); n];
        let mut received = vec![false; n];
        let mut edges_processed = 0u64;
        let mut send = |value: &P::Value, edge: EdgeRef| {
            if let Some(msg) = program.scatter(value, edge) {
                let t = edge.target as usize;
                acc[t] = program.combine(acc[t], msg);
                received[t] = true;
            }
        };
        for v in (0..n as u64).filter(|&v| active[v as usize]) {
            let value = &values[v as usize];
            let source_out_degree = adj.out.degree(v);
            for csr in lists.into_iter().flatten() {
                for (&target, &weight) in csr.neighbors(v).iter().zip(adj.weights(csr, v)) {
                    send(value, EdgeRef { source: v, target, weight, source_out_degree });
                    edges_processed += 1;
                }
            }
        }

        let ctx = IterationContext { iteration, graph: info, global_sum };
        let all = program.applies_to_all();
        for v in 0..n {
            active[v] = (all || received[v]) && program.apply(v as u64, &mut values[v], acc[v], &ctx);
        }
        runner.record_iteration(IterationStats {
            iteration,
            active_vertices,
            edges_processed,
            seconds: started.elapsed().as_secs_f64(),
            ..IterationStats::default()
        });
        bar.inc(1);
        let active_next = active.iter().filter(|&&a| a).count() as u64;
        iteration += 1;
        if program.end_iteration(iteration - 1, active_next) == Control::Stop {
            break;
        }
    }
    bar.finish();
    Ok(values)
}

/// What one vertex's `compute` sees in the in-memory engine.
struct Context<'a, P: PregelProgram> {
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

impl<P: PregelProgram> PregelContext<P::Msg> for Context<'_, P> {
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

/// Runs a neighborhood query on the whole graph in memory (`nwsm::query::run_in_memory`, the
/// oracle of the nwsm engine): both layouts plus the full lists (4 bytes per arc) and an output
/// and a gathered value per vertex.
pub fn run_neighborhood_query<Q: super::nwsm::NeighborhoodQuery>(
    runner: &Runner,
    query: &Q,
) -> Result<super::nwsm::QueryResult<Q::Output>> {
    let store = runner.store();
    super::nwsm::query::check_vertex_count(store)?;
    let per_vertex = (std::mem::size_of::<Q::Output>() + 8 + 24) as u64;
    check_budget(runner, needed_bytes(store, true, per_vertex, 4))?;
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

/// Runs a Pregel program to completion; values in dense-id order.
pub fn run_pregel<P: PregelProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let in_edges = program.needs_in_edges();
    let per_vertex = (std::mem::size_of::<P::Value>() + 2 * std::mem::size_of::<Vec<P::Msg>>() + 1) as u64;
    let per_arc = std::mem::size_of::<P::Msg>() as u64;
    check_budget(runner, needed_bytes(runner.store(), in_edges, per_vertex, per_arc))?;
    let info = runner.graph_info();
    let adj = Adjacency::load(runner.store(), in_edges)?;
    let n = info.num_vertices as usize;

    let mut values: Vec<P::Value> = (0..n as u64).map(|v| program.init(v, &info)).collect();
    let mut halted = vec![false; n];
    let mut inbox: Vec<Vec<P::Msg>> = vec![Vec::new(); n];
    let mut previous = Aggregates::new(program.aggregate_width());
    let bar = runner.progress().start(
        "supersteps (inmem)",
        program.max_supersteps().map(|m| m as u64),
        ProgressUnit::Iterations,
    );
    let mut superstep = 0;
    loop {
        runner.cancel_token().check()?;
        let awake: Vec<bool> = (0..n).map(|v| !halted[v] || !inbox[v].is_empty()).collect();
        let active_vertices = awake.iter().filter(|&&a| a).count() as u64;
        if active_vertices == 0 || program.max_supersteps().is_some_and(|max| superstep >= max) {
            break;
        }
        let started = Instant::now();
        let mut outbox: Vec<Vec<P::Msg>> = vec![Vec::new(); n];
        let mut aggregates = Aggregates::new(program.aggregate_width());
        let (mut messages_sent, mut edges_processed) = (0u64, 0u64);
        for v in (0..n).filter(|&v| awake[v]) {
            let messages = std::mem::take(&mut inbox[v]);
            let in_neighbors: &[VertexId] = if in_edges { adj.in_csr().neighbors(v as u64) } else { &[] };
            let mut ctx = Context {
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
            edges_processed += (ctx.out_neighbors.len() + in_neighbors.len()) as u64;
        }
        inbox = outbox;
        previous = aggregates;
        let mut stats = IterationStats {
            iteration: superstep,
            active_vertices,
            edges_processed,
            seconds: started.elapsed().as_secs_f64(),
            ..IterationStats::default()
        };
        stats.extra.insert("messages".into(), messages_sent.into());
        runner.record_iteration(stats);
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
mod tests {
    use super::*;
    use crate::engine::{EngineKind, RunOptions};
    use crate::program::MessageKind;
    use crate::runtime::MemoryBudget;
    use crate::store::{build_in_memory, InMemoryGraph, OriginalIds};

    fn with_graph<T>(n: u64, edges: &[(usize, usize)], directed: bool, f: impl FnOnce(&Runner) -> T) -> T {
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
