//! The in-memory reference engine: the oracle every other engine is tested against.
//!
//! It loads `csr-out` (and `csr-in` when the program reads in-edges) whole with
//! [`CsrLayout::load`](crate::store::CsrLayout::load) and runs programs in the plainest way, one
//! vertex after another in dense-id order, so that results are deterministic and the code can
//! be checked by reading it.
//!
//! **Vertex programs** run in iterations `i = 0, 1, ...`:
//! 1. `global_sum` = Σ over all vertices of `global_contribution(v, value, out_degree)` (0,
//!    without a pass, for programs that [have none](VertexProgram::has_global_contributions));
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
//! **Direction optimisation** (Beamer et al., SC'12; Ligra, PPoPP'13 §4): a program that
//! [supports pull](crate::program::VertexProgram::supports_pull) has iteration `i` delivered by
//! *pull* instead when the frontier's vertices plus arcs exceed `arcs / 20` and both layouts
//! fit the budget: every vertex that wants messages folds the messages of its active
//! reverse-neighbours, in ascending source order, until satisfied (blocks of targets in
//! parallel: each target's fold is its own, so the result does not depend on the threads). The
//! program promises the same `apply` results either way; each iteration's [`Delivery`] is in its
//! stats. With [uniform messages](crate::program::VertexProgram::sends_uniform_messages) each
//! active source's message is computed once, before the pull, so a block of targets never reads
//! another's values and applies its own at once: one pass, no message buffer (and with
//! [one message per iteration](crate::program::VertexProgram::sends_one_message_per_iteration),
//! BFS, an arc costs a bit test only). By the same
//! promise a sparse push skips the targets a pull would skip (BFS: reached vertices). The
//! frontier is a bit per vertex (cache-resident for a pull's test of every arc) and an
//! ascending list, and the message buffers live for the whole run and are reset only where
//! touched, so a sparse iteration costs its frontier, not `n`.
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
//! returns [`Control::Stop`]. Supersteps run their awake vertices in parallel chunks and build
//! the next inbox as a CSR in sender order, so the results are those of a run one vertex after
//! another (see `inmem/pregel.rs`).
//!
//! Before loading anything the engine checks its estimate of the memory it needs against the
//! budget and fails with [`Error::MemoryBudget`] when the graph does not fit.

use std::time::Instant;

use rayon::prelude::*;

use super::inmem_plan::{InMemorySizing, Load};
use super::planner::{GraphCounts, ProgramShape};
use super::{Delivery, InMemoryIteration, IterationFigures, IterationStats, Runner, PULL_DIVISOR};
use crate::error::{Error, Result};
use crate::program::{add_global_sums, global_contributions, Control, EdgeDirection, IterationContext, VertexProgram};
use crate::runtime::{format_size, Charge, ProgressUnit};
use crate::store::{Direction, InMemoryCsr, Store};
use crate::VertexId;

mod pregel;
mod pull;
mod push;

pub use pregel::run_pregel;
use pull::{pull, pull_and_apply, Sent};
use push::{push, push_wanted, Inbox, PUSH_CHUNK};

pub(super) use pregel::state_bytes as pregel_state_bytes;

/// Checks the run's sizing against the budget (saying what the graph needs and which
/// `--memory` would do), then charges its parts to the run's ledger for as long as the run
/// holds them.
fn charge(runner: &Runner, sizing: &InMemorySizing) -> Result<Vec<Charge>> {
    check_budget(runner, sizing.total())?;
    runner.ledger().charge_parts(&sizing.parts())
}

fn check_budget(runner: &Runner, needed: u64) -> Result<()> {
    let budget = runner.memory();
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
    fn load(store: &Store, load: Load) -> Result<Adjacency> {
        let out = store.csr(Direction::Out)?.load_with(load.weights)?;
        let inn = if load.in_edges && store.is_directed() {
            Some(store.csr(Direction::In)?.load_with(load.weights)?)
        } else {
            None
        };
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

/// One bit per vertex: `n / 8` bytes, so that a pull's test of each arc's source stays in the
/// processor's cache while the arcs stream past (a byte per vertex would not, at millions of
/// vertices).
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    #[inline]
    fn get(&self, i: VertexId) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 != 0
    }

    fn set(&mut self, i: VertexId) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }

    fn unset(&mut self, i: VertexId) {
        self.0[(i / 64) as usize] &= !(1 << (i % 64));
    }
}

/// The active vertices: a bit per vertex (what pull iterations test) and the list of them in
/// ascending order (what push iterations walk), so a sparse frontier costs its size, not `n`.
struct Frontier {
    active: Bits,
    list: Vec<VertexId>,
}

impl Frontier {
    fn push(&mut self, v: VertexId) {
        self.active.set(v);
        self.list.push(v);
    }

    /// Unsets the listed bits, or zeroes every word when that is fewer stores.
    fn clear(&mut self) {
        if self.list.len() > self.active.0.len() {
            self.active.0.fill(0);
        } else {
            for &v in &self.list {
                self.active.unset(v);
            }
        }
        self.list.clear();
    }
}

/// Vertices per task of a parallel apply (a multiple of 64: one task owns whole frontier words).
const APPLY_BLOCK: usize = 4096;

/// Apply, over blocks of vertices in parallel (each vertex's `apply` is its own, so the result
/// does not depend on the threads): to every vertex when `applies_to_all()`, else to the
/// targets of `inbox.touched` when `listed` (a sparse iteration: its cost is theirs), else to
/// the flagged ones (a dense push flags without listing). Each message is taken out of its
/// slot, leaving the identity, so no reset pass follows; the vertices `apply` activates form
/// the (cleared) `frontier`, in ascending order. Returns how many vertices were applied.
fn apply<P: VertexProgram>(
    program: &P,
    ctx: &IterationContext,
    values: &mut [P::Value],
    inbox: &mut Inbox<P::Msg>,
    listed: bool,
    frontier: &mut Frontier,
) -> u64 {
    let (identity, all) = (program.identity(), program.applies_to_all());
    let touched = &inbox.touched;
    let block_of = |b: usize| touched.partition_point(|&t| (t as usize) < b * APPLY_BLOCK);
    let blocks = values
        .par_chunks_mut(APPLY_BLOCK)
        .zip(inbox.acc.par_chunks_mut(APPLY_BLOCK))
        .zip(inbox.received.par_chunks_mut(APPLY_BLOCK))
        .zip(frontier.active.0.par_chunks_mut(APPLY_BLOCK / 64));
    let activated: Vec<(u64, Vec<VertexId>)> = blocks
        .enumerate()
        .map(|(b, (((values, acc), received), words))| {
            let (first, len) = (b * APPLY_BLOCK, values.len());
            let (mut applied, mut next) = (0, Vec::new());
            let mut apply_one = |i: usize| {
                applied += 1;
                let v = (first + i) as u64;
                if program.apply(v, &mut values[i], std::mem::replace(&mut acc[i], identity), ctx) {
                    words[i / 64] |= 1 << (i % 64);
                    next.push(v);
                }
            };
            if all {
                (0..len).for_each(&mut apply_one);
                received.fill(false);
            } else if listed {
                for &t in &touched[block_of(b)..block_of(b + 1)] {
                    received[t as usize - first] = false;
                    apply_one(t as usize - first);
                }
            } else {
                for (i, got) in received.iter_mut().enumerate().take(len) {
                    if std::mem::take(got) {
                        apply_one(i);
                    }
                }
            }
            (applied, next)
        })
        .collect();
    inbox.touched.clear();
    let mut applied = 0;
    for (count, next) in activated {
        applied += count;
        frontier.list.extend(next);
    }
    applied
}

/// Runs a vertex program to completion; values in dense-id order. Programs that
/// [support pull](VertexProgram::supports_pull) switch per iteration between push and pull
/// (recorded as [`Delivery`] in the iteration's stats) when both layouts fit the budget.
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let direction = program.direction();
    let store = runner.store();
    let sizing = InMemorySizing::of(&ProgramShape::vertex(program), GraphCounts::of(store), runner.memory().bytes());
    let _charges = charge(runner, &sizing)?;
    let (can_pull, load) = (sizing.pulls, sizing.load);
    let info = runner.graph_info();
    let adj = Adjacency::load(store, load)?;
    // The lists an active vertex sends along (`In`: its in-arcs, reversed), and those a pull
    // iteration scans (their reverse).
    let (lists, reverse): ([Option<&InMemoryCsr>; 2], &InMemoryCsr) = match direction {
        EdgeDirection::Out => ([Some(&adj.out), None], adj.in_csr()),
        EdgeDirection::Both => ([Some(&adj.out), adj.inn.as_ref()], &adj.out),
        EdgeDirection::In => ([Some(adj.in_csr()), None], &adj.out),
    };
    let n = info.num_vertices as usize;

    let mut values: Vec<P::Value> = (0..n as u64).map(|v| program.init(v, &info)).collect();
    let mut frontier = Frontier { active: Bits::new(n), list: Vec::new() };
    (0..n as u64).filter(|&v| program.initially_active(v, &info)).for_each(|v| frontier.push(v));
    let mut inbox = Inbox { acc: vec![program.identity(); n], received: vec![false; n], touched: Vec::new() };
    let mut sent = (can_pull && program.sends_uniform_messages()).then(|| Sent::new(program, n));
    let bar = runner.progress().start(
        "iterations (inmem)",
        program.max_iterations().map(|m| m as u64),
        ProgressUnit::Iterations,
    );
    let mut iteration = 0;
    loop {
        runner.cancel_token().check()?;
        let active_vertices = frontier.list.len() as u64;
        if active_vertices == 0 || program.max_iterations().is_some_and(|max| iteration >= max) {
            break;
        }
        let started = Instant::now();
        let [global_sum, second_global_sum] = if program.has_global_contributions() {
            (0..n)
                .map(|v| global_contributions(program, v as u64, &values[v], adj.out.degree(v as u64)))
                .fold([0.0; 2], add_global_sums)
        } else {
            [0.0; 2]
        };

        let frontier_arcs: u64 =
            frontier.list.par_iter().map(|&v| lists.iter().flatten().map(|c| c.degree(v)).sum::<u64>()).sum();
        let dense = active_vertices + frontier_arcs > info.num_arcs / PULL_DIVISOR;
        let delivery = can_pull.then_some(if dense { Delivery::Pull } else { Delivery::Push });
        let ctx = IterationContext { iteration, graph: info, global_sum, second_global_sum };
        // Tasks of a parallel sparse push ([`push_wanted`]); 0 when the push ran on one thread.
        let mut push_tasks = 0;
        let (edges_processed, applied) = match (delivery, sent.as_mut()) {
            (Some(Delivery::Pull), Some(sent)) => {
                sent.fill(program, &adj, &values, &frontier.active);
                frontier.clear();
                pull_and_apply(program, &ctx, reverse, &mut values, sent, &mut frontier)
            }
            _ => {
                let edges = match delivery {
                    Some(Delivery::Pull) => pull(program, &adj, reverse, &values, &frontier.active, &mut inbox),
                    _ if dense => push::<P, false>(program, &adj, lists, &values, &frontier.list, &mut inbox),
                    _ => {
                        let edges = if program.supports_pull() && frontier.list.len() > PUSH_CHUNK {
                            push_tasks = frontier.list.len().div_ceil(PUSH_CHUNK) as u64;
                            push_wanted(program, &adj, lists, &values, &frontier.list, &mut inbox)
                        } else {
                            push::<P, true>(program, &adj, lists, &values, &frontier.list, &mut inbox)
                        };
                        inbox.sort_touched();
                        edges
                    }
                };
                // A dense push flagged its targets without listing them: apply sweeps the flags.
                let listed = delivery == Some(Delivery::Pull) || !dense;
                frontier.clear();
                (edges, apply(program, &ctx, &mut values, &mut inbox, listed, &mut frontier))
            }
        };
        runner.record_iteration(IterationStats {
            iteration,
            active_vertices,
            edges_processed,
            seconds: started.elapsed().as_secs_f64(),
            delivery,
            figures: IterationFigures::InMemory(InMemoryIteration { applied, push_tasks }),
            ..IterationStats::default()
        });
        bar.inc(1);
        let active_next = frontier.list.len() as u64;
        iteration += 1;
        if program.end_iteration(iteration - 1, active_next) == Control::Stop {
            break;
        }
    }
    bar.finish();
    Ok(values)
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
    let shape = ProgramShape::query(query.levels(), std::mem::size_of::<Q::Output>() as u64);
    let _charges = charge(runner, &InMemorySizing::of(&shape, GraphCounts::of(store), runner.memory().bytes()))?;
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

#[cfg(test)]
mod tests;
