//! The `pregel` engine: GraphD's distributed out-of-core Pregel (Yan et al., "GraphD: Distributed
//! Vertex-Centric Graph Processing Beyond the Memory Limit", TPDS 2017; `../shared/papers/
//! graphd-distributed-out-of-core-pregel.md`).
//!
//! W ranks (threads under `cargo test`, processes under `mpirun -n W`; see [`crate::transport`])
//! each own the vertices with hash(name) = name mod W of a partitioned store
//! ([`partition`]: `outcore partition --store DIR --ranks W [--recode]`, itself a W-rank job; the
//! recoded names come from GraphD §5's 3-superstep recoding job, [`recode`]). Per rank (§3):
//! - the state array A of its vertices stays in memory: O(|V|/W);
//! - the edge stream S^E (adjacency lists in the order of A) is read sequentially through a
//!   64 KiB buffer, and `skip(k)` over vertices that do not compute seeks only when it leaves the
//!   buffer ([`streams::EdgeStream`]);
//! - outgoing messages go to one stream per destination, cut into files of at most
//!   `--message-file-size` (default 8 MiB); received batches are sorted by target, written, and
//!   merged into the incoming stream S^I, read in one pass with A and S^E.
//!
//! Computation, sending and receiving overlap (§4, [`rank`]): a sending unit ships finished files
//! (in a ring order that starts after the rank's own id, so ranks do not all send to rank 0
//! first) while the computing unit goes on; end tags close every step; aggregators and halting
//! are decided right after computation. With a combiner, files are sorted and combined before
//! sending. In recoded mode (§5) names are W·pos + rank, so combining happens in memory on both
//! sides (A_s, A_r) and no external sort or S^I is needed; messages to the rank's own vertices
//! are combined as they are generated and never reach a file (one rank writes no message at all).
//!
//! Both program kinds run here. Pregel programs run as written (their `out_neighbors` and
//! `in_neighbors` are *names*, which `send` accepts, as is `name()`; `vertex()` is the dense id). A
//! [`VertexProgram`] iteration `i` becomes superstep `i`: a vertex applies the combined messages of
//! iteration `i - 1`, adds its global contribution, and scatters if active; the decision to stop
//! (`end_iteration`, no active vertex, `max_iterations`) is taken right after the step, and the
//! messages of a step after which the run stops are dropped unapplied, so the values equal the
//! in-memory engine's. `combine` is the combiner. Values and messages must be [`Wire`] (fixed-size
//! encodings) to travel between ranks: algorithms reach this engine through
//! [`Runner::run_vertex_program_wire`](crate::engine::Runner::run_vertex_program_wire) and
//! [`Runner::run_pregel_wire`](crate::engine::Runner::run_pregel_wire).
//!
//! Aggregators: a Pregel program's `aggregate_width()` slots are folded per rank during compute,
//! then all-gathered right after computation and folded in rank order, so every rank sees the
//! same `previous_aggregates()` in the next step and takes the same stop decision (k-means
//! carries its centres this way, GraphD §6.9).
//!
//! Checkpoints ([`checkpoint`]): every `--checkpoint-every N` supersteps each rank saves its
//! values, halted flags and received messages; `--resume` goes on from there, after checking
//! that the checkpoint was taken by the same program with the same parameters and partition.
//!
//! Results: rank 0 gathers every value and returns them in dense-id order; the other ranks return
//! an empty vector (the front ends write results on rank 0 only).

mod checkpoint;
mod compute;
mod lists;
mod parallel;
pub mod partition;
pub mod plan;
mod pull;
mod rank;
mod recode;
mod sizing;
mod streams;
mod units;

use crate::engine::Runner;
use crate::error::Result;
use crate::program::{
    global_contributions, Control, EdgeDirection, EdgeRef, GraphInfo, IterationContext, PregelContext, PregelProgram,
    VertexProgram, Wire,
};
use crate::transport::{InProcessTransport, Transport};
use crate::VertexId;
use lists::ListCursor;
use parallel::Sink;
use rank::{RankSettings, StepProgram, Totals, VertexRecord};
pub use units::{KIND_DATA, SEND_WINDOW, TAG_MESSAGES};

/// The default size of a message file (GraphD's B).
pub const DEFAULT_MESSAGE_FILE_SIZE: u64 = 8 << 20;

/// Options of the pregel engine. The ranks of the job are the runner's transport
/// ([`Runner::with_transport`]); without one this process runs alone, as one rank.
#[derive(Debug, Clone, Default)]
pub struct PregelOptions {
    /// Largest outgoing message file (`--message-file-size`); `None`: the default, lowered to
    /// fit the budget ([`message_file_size`]).
    pub message_file_size: Option<u64>,
    /// Run on the recoded partition (`parts-W-recoded`, `--recode`).
    pub recoded: bool,
    /// Checkpoint every N supersteps (`--checkpoint-every N`).
    pub checkpoint_every: Option<usize>,
    /// Go on from the last checkpoint (`--resume`).
    pub resume: bool,
}

fn with_transport<T>(runner: &Runner, run: impl FnOnce(&dyn Transport) -> Result<T>) -> Result<T> {
    let run = |t: &dyn Transport| {
        partition::check_same_generation(runner.store(), t)?;
        ensure_partition(runner, t)?;
        // Held until the run ends: no re-partition or drop replaces the files ranks read.
        let name = partition::layout_name(t.ranks(), runner.options().pregel.recoded);
        let _reading = runner.store().hold_layout(&name)?;
        let _checkpoints = claim_checkpoints(runner, t, &name)?;
        run(t)
    };
    match runner.transport() {
        Some(t) => run(t.as_ref()),
        None => run(&InProcessTransport::single()),
    }
}

/// A run that writes or reads checkpoints (inside the partition's rank directories) is the
/// only one doing so on that partition: rank 0 takes `NAME.checkpoints` exclusively, or every
/// rank fails with the reason.
fn claim_checkpoints(runner: &Runner, t: &dyn Transport, name: &str) -> Result<Option<crate::store::FileLock>> {
    let options = &runner.options().pregel;
    if options.checkpoint_every.is_none() && !options.resume {
        return Ok(None);
    }
    let held = if t.rank() == 0 { runner.store().try_replace_layout(&format!("{name}.checkpoints"))? } else { None };
    let free = t.broadcast(0, vec![(t.rank() != 0 || held.is_some()) as u8])?;
    if free.first() != Some(&1) {
        return Err(crate::error::Error::invalid(format!(
            "another pregel job is writing checkpoints into {name} of {}; run this one when it has finished \
             (or without --checkpoint-every/--resume)",
            runner.store().root().display()
        )));
    }
    Ok(held)
}

/// Builds the partition this run needs when the store has none (or a stale one), as every
/// engine builds its derived layout on first use: a job of all the run's ranks, with one line
/// saying so. Rank 0 decides for all, so every rank takes part in the job or none does.
fn ensure_partition(runner: &Runner, t: &dyn Transport) -> Result<()> {
    let store = runner.store();
    let recoded = runner.options().pregel.recoded;
    let missing = partition::open(store, t.ranks(), recoded).is_err();
    if t.broadcast(0, vec![missing as u8])?.first() != Some(&1) {
        return Ok(());
    }
    let name = partition::partition_dir(store, t.ranks(), recoded);
    if t.rank() == 0 {
        runner.progress().note(&format!(
            "pregel: building the partition {} first (once; `outcore partition` builds it ahead)",
            name.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default()
        ));
    }
    let job = partition::PartitionJob {
        store,
        recoded,
        memory: runner.memory(),
        sort_buffer_bytes: None,
        progress: runner.progress(),
        cancel: runner.cancel_token(),
    };
    partition::partition_rank(&job, t).map(|_| ())
}

/// The message file size B a rank uses: the option when given, else the default lowered (to
/// 64 KiB at least) so that the message buffers of a rank ([`sizing::message_buffers`]) fit in what the budget leaves
/// after the rank's `fixed` memory (vertex records, edge buffers, A_s/A_r), and take at most
/// half of the budget — a small budget still runs, with more, smaller message files.
pub fn message_file_size(options: &PregelOptions, budget: u64, ranks: usize, fixed: u64) -> u64 {
    let room = (budget / 2).min(budget.saturating_sub(fixed));
    let fitting = room / sizing::message_buffers(ranks);
    options.message_file_size.unwrap_or_else(|| DEFAULT_MESSAGE_FILE_SIZE.min(fitting.max(64 << 10)))
}

fn settings<'a>(runner: &Runner, transport: &'a dyn Transport) -> RankSettings<'a> {
    let options = &runner.options().pregel;
    RankSettings {
        transport,
        recoded: options.recoded,
        checkpoint_every: options.checkpoint_every,
        resume: options.resume,
    }
}

/// Runs a vertex program; values in dense-id order on rank 0, empty on the other ranks.
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>>
where
    P::Value: Wire,
    P::Msg: Wire,
{
    let graph = runner.graph_info();
    let adapter = VertexSteps { program, graph };
    with_transport(runner, |t| rank::run_rank(runner, &adapter, &settings(runner, t)))
}

/// Runs a Pregel program; values in dense-id order on rank 0, empty on the other ranks.
pub fn run_pregel<P: PregelProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>>
where
    P::Value: Wire,
    P::Msg: Wire,
{
    let graph = runner.graph_info();
    let adapter = PregelSteps { program, graph };
    with_transport(runner, |t| rank::run_rank(runner, &adapter, &settings(runner, t)))
}

/// A vertex program seen as supersteps (see the module docs).
struct VertexSteps<'a, P> {
    program: &'a P,
    graph: GraphInfo,
}

impl<P: VertexProgram> StepProgram for VertexSteps<'_, P>
where
    P::Value: Wire,
    P::Msg: Wire,
{
    type Value = P::Value;
    type Msg = P::Msg;

    fn init(&self, dense: VertexId) -> P::Value {
        self.program.init(dense, &self.graph)
    }
    fn has_combiner(&self) -> bool {
        true
    }
    fn combine(&self, a: &P::Msg, b: &P::Msg) -> P::Msg {
        self.program.combine(*a, *b)
    }
    fn reads_out_lists(&self) -> bool {
        self.program.direction() != EdgeDirection::In || !self.graph.directed
    }
    fn reads_in_lists(&self) -> bool {
        self.program.direction() != EdgeDirection::Out && self.graph.directed
    }
    fn dense_uniform_identity(&self) -> Option<P::Msg> {
        let p = self.program;
        let dense = p.sends_uniform_messages() && p.applies_to_all();
        (dense && (p.direction() == EdgeDirection::Out || !self.graph.directed)).then(|| p.identity())
    }
    fn runs_no_step(&self) -> bool {
        false
    }
    fn wakes(&self, _halted: bool, _has_messages: bool) -> bool {
        // Every vertex adds its global contribution, and `applies_to_all` programs apply everywhere.
        true
    }
    fn compute(
        &self,
        step: usize,
        vertex: &VertexRecord,
        value: &mut P::Value,
        messages: &[P::Msg],
        lists: &mut ListCursor,
        previous: &Totals,
        out: &mut Sink<P::Msg>,
    ) -> Result<bool> {
        let p = self.program;
        let active = if step == 0 {
            p.initially_active(vertex.dense, &self.graph)
        } else if !messages.is_empty() || p.applies_to_all() {
            let second_global_sum = previous.aggregates.values().first().copied().unwrap_or(0.0);
            let ctx = IterationContext {
                iteration: step - 1,
                graph: self.graph,
                global_sum: previous.sum,
                second_global_sum,
            };
            p.apply(vertex.dense, value, messages.first().copied().unwrap_or_else(|| p.identity()), &ctx)
        } else {
            false
        };
        let [first, second] = global_contributions(p, vertex.dense, value, vertex.out_degree);
        out.add_sum(first);
        // The second global sum travels as the one aggregate slot of the adapter.
        out.aggregate(0, second);
        if !active {
            return Ok(true);
        }
        out.wake();
        if p.max_iterations().is_some_and(|max| step >= max) {
            return Ok(false);
        }
        // A uniform message is computed once per vertex, not once per arc (PageRank's division).
        let uniform = p.sends_uniform_messages().then(|| {
            let edge = EdgeRef {
                source: vertex.dense,
                target: vertex.dense,
                weight: 1.0,
                source_out_degree: vertex.out_degree,
            };
            p.scatter(value, edge)
        });
        if out.pulls() {
            // Only programs with dense uniform messages run on a pulling rank.
            if let Some(Some(msg)) = uniform {
                out.offer(vertex.name, msg, vertex.out_degree);
            }
            return Ok(false);
        }
        lists.load()?;
        let scatter_along = |names: &[u64], weights: &[f64], out: &mut Sink<P::Msg>| match uniform {
            Some(None) => {}
            Some(Some(msg)) => names.iter().for_each(|&target| out.send(target, msg)),
            None => {
                for (&target, &weight) in names.iter().zip(weights) {
                    let edge = EdgeRef { source: vertex.dense, target, weight, source_out_degree: vertex.out_degree };
                    if let Some(msg) = p.scatter(value, edge) {
                        out.send(target, msg);
                    }
                }
            }
        };
        match (p.direction(), self.graph.directed) {
            (EdgeDirection::Out, _) | (_, false) => scatter_along(lists.out_names(), lists.out_weights(), out),
            (EdgeDirection::Both, true) => {
                scatter_along(lists.out_names(), lists.out_weights(), out);
                scatter_along(lists.in_names(), lists.in_weights(), out);
            }
            (EdgeDirection::In, true) => scatter_along(lists.in_names(), lists.in_weights(), out),
        }
        Ok(false)
    }
    fn aggregate_width(&self) -> usize {
        // One slot: the program's second global sum.
        1
    }
    fn fold_aggregate(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn checkpoint_key(&self) -> String {
        self.program.checkpoint_key()
    }
    fn stop_after(&self, step: usize, global: &Totals) -> bool {
        (step >= 1 && self.program.end_iteration(step - 1, global.awake) == Control::Stop)
            || global.awake == 0
            || self.program.max_iterations().is_some_and(|max| step >= max)
    }
}

/// A Pregel program, run as written.
struct PregelSteps<'a, P> {
    program: &'a P,
    graph: GraphInfo,
}

/// What `compute` sees on this engine.
struct Context<'a, P: PregelProgram> {
    program: &'a P,
    vertex: VertexId,
    /// The vertex's name (what lists hold and `send` takes).
    name: u64,
    superstep: usize,
    graph: &'a GraphInfo,
    lists: &'a ListCursor<'a>,
    out: &'a mut Sink<P::Msg>,
    halted: bool,
    previous_aggregates: &'a [f64],
}

impl<P: PregelProgram> PregelContext<P::Msg> for Context<'_, P>
where
    P::Msg: Wire,
{
    fn vertex(&self) -> VertexId {
        self.vertex
    }
    fn name(&self) -> VertexId {
        self.name
    }
    fn superstep(&self) -> usize {
        self.superstep
    }
    fn graph(&self) -> &GraphInfo {
        self.graph
    }
    fn out_neighbors(&self) -> &[VertexId] {
        self.lists.out_names()
    }
    fn out_weights(&self) -> &[f64] {
        self.lists.out_weights()
    }
    fn in_neighbors(&self) -> &[VertexId] {
        if self.program.needs_in_edges() {
            self.lists.in_names()
        } else {
            &[]
        }
    }
    fn send(&mut self, target: VertexId, message: P::Msg) {
        self.out.send(target, message);
    }
    fn vote_to_halt(&mut self) {
        self.halted = true;
    }
    fn aggregate_at(&mut self, slot: usize, value: f64) {
        self.out.aggregate(slot, value);
    }
    fn previous_aggregates(&self) -> &[f64] {
        self.previous_aggregates
    }
}

impl<P: PregelProgram> StepProgram for PregelSteps<'_, P>
where
    P::Value: Wire,
    P::Msg: Wire,
{
    type Value = P::Value;
    type Msg = P::Msg;

    fn init(&self, dense: VertexId) -> P::Value {
        self.program.init(dense, &self.graph)
    }
    fn has_combiner(&self) -> bool {
        self.program.has_combiner()
    }
    fn combine(&self, a: &P::Msg, b: &P::Msg) -> P::Msg {
        self.program.combine(a, b).expect("has_combiner() programs combine")
    }
    fn reads_out_lists(&self) -> bool {
        true
    }
    fn reads_in_lists(&self) -> bool {
        self.program.needs_in_edges()
    }
    fn runs_no_step(&self) -> bool {
        self.program.max_supersteps() == Some(0)
    }
    fn wakes(&self, halted: bool, has_messages: bool) -> bool {
        !halted || has_messages
    }
    fn compute(
        &self,
        step: usize,
        vertex: &VertexRecord,
        value: &mut P::Value,
        messages: &[P::Msg],
        lists: &mut ListCursor,
        previous: &Totals,
        out: &mut Sink<P::Msg>,
    ) -> Result<bool> {
        lists.load()?;
        let mut ctx = Context {
            program: self.program,
            vertex: vertex.dense,
            name: vertex.name,
            superstep: step,
            graph: &self.graph,
            lists,
            out,
            halted: false,
            previous_aggregates: previous.aggregates.values(),
        };
        self.program.compute(&mut ctx, value, messages);
        let halted = ctx.halted;
        if !halted {
            out.wake();
        }
        Ok(halted)
    }
    fn aggregate_width(&self) -> usize {
        self.program.aggregate_width()
    }
    fn fold_aggregate(&self, a: f64, b: f64) -> f64 {
        self.program.aggregate(a, b)
    }
    fn checkpoint_key(&self) -> String {
        self.program.checkpoint_key()
    }
    fn stop_after(&self, step: usize, global: &Totals) -> bool {
        self.program.end_superstep_aggregates(step, global.aggregates.values()) == Control::Stop
            || (global.awake == 0 && global.messages == 0)
            || self.program.max_supersteps().is_some_and(|max| step + 1 >= max)
    }
}
