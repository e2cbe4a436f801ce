//! A vertex program's run on the stream engine, step by step: open the layouts a program reads
//! ([`RunLayouts`]), then, per iteration, schedule (push or pull, dense or selective, direct or
//! buffered: [`Step`]), stream the edges through the scatter or the pull, apply, and record
//! the iteration's figures. The state one iteration leaves to the next is [`RunState`].

use std::time::Instant;

use rayon::prelude::*;

use super::{
    apply, calibrate, fill_frontier, global_sums, open_layout, order_charge, pass, plan_memory, pull,
    pull_from_memory_is_cheaper, push_plan, resident, will_order_first_pull, Accumulator, ChunkPlan, ChunkReader,
    EdgeBuffer, FirstPull, IndexedBitmap, IoMode, LayoutFiles, MemoryPlan, ResidentSizing, Scatter, Schedule,
    StreamLayout, StreamOptions, Streamed, SOURCE_ORDER,
};
use crate::engine::planner::ProgramShape;
use crate::engine::{Delivery, IterationFigures, IterationStats, ReadMode, Runner, StreamIteration, StreamRun};
use crate::error::{Error, Result};
use crate::program::{Control, EdgeDirection, IterationContext, VertexProgram};
use crate::runtime::{format_size, Charge, ProgressUnit};
use crate::store::csr::target_bytes_for;
use crate::store::Direction;

/// Runs a vertex program on the stream engine; values in dense-id order.
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let options = runner.options().stream.clone();
    let (memory, layouts) = RunLayouts::open(runner, program, &options)?;
    let plan = memory.plan;
    let info = runner.graph_info();
    let gap = calibrate::resolve_gap_threshold(options.gap_threshold, runner.store().dir());
    let mut values: Vec<P::Value> = (0..info.num_vertices).into_par_iter().map(|v| program.init(v, &info)).collect();
    let mut state = RunState::new(runner, program, memory, &layouts, &options)?;
    let run = Run { runner, program, options: &options, plan: &plan, layouts: &layouts, gap };
    let (mut active_vertices, mut active_edges) =
        fill_frontier(&mut state.frontier, &layouts.offsets()[..layouts.push_layouts], |v| {
            program.initially_active(v, &info)
        });
    record_setup(&run, &state);

    let bar = runner.progress().start(
        "iterations (stream)",
        program.max_iterations().map(|m| m as u64),
        ProgressUnit::Iterations,
    );
    let mut iteration = 0usize;
    loop {
        runner.cancel_token().check()?;
        if active_vertices == 0 || program.max_iterations().is_some_and(|max| iteration >= max) {
            break;
        }
        let started = Instant::now();
        let io_before = runner.io_snapshot();
        let global = global_sums(program, &values, layouts.out_offsets());
        let step = Step::schedule(&run, &state, active_vertices, &active_edges);
        let passed = if step.pulling {
            pull_iteration(&run, &mut state, &values, &step, active_vertices)?
        } else {
            push_iteration(&run, &mut state, &values, &step)?
        };
        let edges_processed = state.take_scattered_edges(runner)?;

        // Apply, building the next frontier.
        let applying = Instant::now();
        let ctx = IterationContext { iteration, graph: info, global_sum: global[0], second_global_sum: global[1] };
        state.next.clear();
        let (next_vertices, next_edges) = apply(
            program,
            &ctx,
            &mut values,
            &mut state.accumulators,
            &mut state.next,
            &layouts.offsets()[..layouts.push_layouts],
        );
        std::mem::swap(&mut state.frontier, &mut state.next);
        let compute_seconds = passed.scatter_seconds + applying.elapsed().as_secs_f64();

        let io = runner.io_snapshot().since(&io_before);
        let record = IterationRecord {
            iteration,
            active_vertices,
            edges_processed,
            compute_seconds,
            started,
            bytes_read: io.bytes_read,
            bytes_written: io.bytes_written,
        };
        record_iteration(&run, &state, &step, &passed, &active_edges, &record);
        bar.set_message(&format!(
            "iteration {iteration}: {active_vertices} active, {} read in {} chunks ({}), io wait {:.2}s, compute {:.2}s",
            format_size(io.bytes_read),
            passed.streamed.reader.chunks,
            if step.direct { "direct" } else { "buffered" },
            passed.streamed.io_wait_seconds,
            compute_seconds
        ));
        bar.inc(1);
        active_vertices = next_vertices;
        active_edges = next_edges;
        iteration += 1;
        if program.end_iteration(iteration - 1, active_vertices) == Control::Stop {
            break;
        }
    }
    bar.finish();
    Ok(values)
}

/// What every step of a run reads and none changes.
struct Run<'a, P> {
    runner: &'a Runner,
    program: &'a P,
    options: &'a StreamOptions,
    plan: &'a MemoryPlan,
    layouts: &'a RunLayouts,
    gap: calibrate::GapThreshold,
}

/// The run's memory: its plan, what it keeps of the edges, and the ledger charges of both,
/// taken before anything is allocated.
struct RunMemory {
    plan: MemoryPlan,
    resident: ResidentSizing,
    charges: Vec<Charge>,
}

/// The layouts a run reads, opened once: offsets in memory, edge files on disk.
struct RunLayouts {
    layouts: Vec<StreamLayout>,
    files: Vec<LayoutFiles>,
    /// The layouts a push iteration reads come first.
    push_layouts: usize,
    /// The layout a pull iteration reads (None when the run never pulls).
    reverse_index: Option<usize>,
    /// csr-out's offsets, kept for out-degrees when only csr-in is read (else empty).
    out_degree_offsets: Vec<u64>,
    direct_supported: bool,
    /// Bytes of the edge files a push iteration reads.
    total_bytes: u64,
    /// Ids are u64 (|V| >= 2^32) rather than u32.
    wide: bool,
    /// The program reads the weights of a weighted store.
    weights: bool,
}

impl RunLayouts {
    /// Plans the run's memory, charges it, and opens what it reads: an undirected store's
    /// csr-out already holds both directions.
    fn open<P: VertexProgram>(runner: &Runner, program: &P, options: &StreamOptions) -> Result<(RunMemory, Self)> {
        let store = runner.store();
        let directions: &[Direction] = match (program.direction(), store.is_directed()) {
            (EdgeDirection::Out, _) | (_, false) => &[Direction::Out],
            (EdgeDirection::In, true) => &[Direction::In],
            (EdgeDirection::Both, true) => &[Direction::Out, Direction::In],
        };
        // Out-degrees (`EdgeRef::source_out_degree`, `global_contribution`) come from csr-out's
        // offsets, kept as well when only csr-in is read and the program reads them.
        let degrees_apart = directions[0] != Direction::Out && ProgramShape::vertex(program).out_degrees;
        let use_weights = program.uses_weights() && store.is_weighted();
        let (plan, reverse) = plan_memory(runner, program, directions, degrees_apart, options)?;
        let memory = charge_memory(
            runner,
            plan,
            use_weights,
            options.resident_edges && (reverse.is_some() || directions.len() == 1),
            !program.sends_one_message_per_iteration(),
        )?;
        let want_direct = options.io != IoMode::Buffered;
        // The layouts' offsets (19 MB each on RMAT-22, read and checksummed) and the
        // out-degrees load side by side.
        let opened: Vec<Direction> =
            directions.iter().chain(reverse.filter(|d| !directions.contains(d)).as_ref()).copied().collect();
        let (opened, out_degree_offsets) = rayon::join(
            || {
                opened
                    .into_par_iter()
                    .map(|direction| open_layout(store, direction, use_weights, want_direct))
                    .collect::<Result<Vec<_>>>()
            },
            || -> Result<Vec<u64>> {
                if !degrees_apart {
                    return Ok(Vec::new());
                }
                let csr = store.csr(Direction::Out)?;
                let mut offsets = vec![0u64; csr.vertices as usize + 1];
                csr.read_offsets(0, &mut offsets)?;
                Ok(offsets)
            },
        );
        let (layouts, files): (Vec<_>, Vec<_>) = opened?.into_iter().unzip();
        let out_degree_offsets = out_degree_offsets?;
        let push_layouts = directions.len();
        let reverse_index = reverse.map(|d| if d == directions[0] { 0 } else { layouts.len() - 1 });
        let direct_supported = files.iter().all(LayoutFiles::supports_direct);
        if options.io == IoMode::Direct && !direct_supported {
            let why = files.iter().find_map(LayoutFiles::direct_refused).unwrap_or("no direct handle");
            runner.progress().note(&format!("stream: no O_DIRECT ({why}); reading through the page cache"));
        }
        let total_bytes = files[..push_layouts].iter().map(LayoutFiles::bytes).sum();
        let wide = target_bytes_for(runner.graph_info().num_vertices) == 8;
        let layouts = RunLayouts {
            layouts,
            files,
            push_layouts,
            reverse_index,
            out_degree_offsets,
            direct_supported,
            total_bytes,
            wide,
            weights: use_weights,
        };
        Ok((memory, layouts))
    }

    fn offsets(&self) -> Vec<&[u64]> {
        self.layouts.iter().map(|l| l.offsets.as_slice()).collect()
    }

    /// The offsets out-degrees are read from.
    fn out_offsets(&self) -> &[u64] {
        if self.out_degree_offsets.is_empty() {
            &self.layouts[0].offsets
        } else {
            &self.out_degree_offsets
        }
    }

    /// The edges of layout `l`.
    fn edges(&self, l: usize) -> u64 {
        *self.layouts[l].offsets.last().unwrap()
    }
}

/// What one iteration leaves to the next, beside the values.
struct RunState<M> {
    frontier: IndexedBitmap,
    next: IndexedBitmap,
    /// The sources' messages of pulls, for programs with uniform messages.
    sources: Option<pull::Sources<M>>,
    accumulators: Vec<Accumulator<M>>,
    pool: Vec<EdgeBuffer>,
    /// The room for edges of dense passes kept in memory ([`ResidentSizing`]).
    resident_room: u64,
    resident: resident::ResidentEdges,
    /// The layout whose resident ids were renumbered for pulls ([`will_order_first_pull`]).
    renumbered: Option<usize>,
    page_cache: u64,
    /// The ledger charges of the plan and the resident edges.
    _charges: Vec<Charge>,
    /// The ledger charge of the source order, once the first pull builds it (held while the
    /// sources are ordered).
    order: Option<Charge>,
}

impl<M: Copy + Send + Sync> RunState<M> {
    fn new<P: VertexProgram<Msg = M>>(
        runner: &Runner,
        program: &P,
        memory: RunMemory,
        layouts: &RunLayouts,
        options: &StreamOptions,
    ) -> Result<Self> {
        let plan = &memory.plan;
        let n = runner.graph_info().num_vertices as usize;
        let accumulator = || Accumulator {
            msgs: vec![program.identity(); n],
            received: IndexedBitmap::new(n, options.partition_bits),
            edges: 0,
            bad_target: None,
        };
        let room = memory.resident.edges;
        Ok(RunState {
            frontier: IndexedBitmap::new(n, options.partition_bits),
            next: IndexedBitmap::new(n, options.partition_bits),
            sources: (layouts.reverse_index.is_some() && program.sends_uniform_messages())
                .then(|| pull::Sources::new(n, program.identity())),
            accumulators: (0..plan.accumulators).map(|_| accumulator()).collect(),
            pool: EdgeBuffer::pool(plan.buffers, plan.buffer_bytes, if layouts.wide { 8 } else { 4 }, layouts.weights)?,
            resident_room: room,
            resident: resident::ResidentEdges::new(room),
            renumbered: None,
            page_cache: super::page_cache_estimate(runner.memory().bytes()),
            _charges: memory.charges,
            order: None,
        })
    }

    /// The edges the accumulators took this iteration (reset to 0), or the damaged store's
    /// error when one of them met a target beyond |V|.
    fn take_scattered_edges(&mut self, runner: &Runner) -> Result<u64> {
        if let Some(target) = self.accumulators.iter().find_map(|a| a.bad_target) {
            let n = self.accumulators[0].msgs.len();
            return Err(Error::store(
                runner.store().dir(),
                format!("an edge points to vertex {target}, beyond the {n} vertices: the adjacency files are damaged"),
            ));
        }
        Ok(self.accumulators.iter_mut().map(|a| std::mem::take(&mut a.edges)).sum())
    }
}

/// One iteration's schedule.
struct Step {
    /// Pull along the reverse layout (else push).
    pulling: bool,
    /// Read whole layouts rather than the frontier's chunks.
    dense: bool,
    /// Bytes of the layouts this iteration would read whole.
    iteration_bytes: u64,
    direct: bool,
    /// The layout whose resident prefix a dense pass takes from memory.
    dense_layout: Option<usize>,
    /// A sparse push over a layout held whole in memory: it folds the frontier's edges from
    /// the resident buffers (the fold skips inactive sources) and reads nothing.
    from_memory: bool,
}

impl Step {
    /// Pull when the frontier is dense enough (see [`pull`]) or the pull is all in memory and
    /// cheaper, else push; read densely past [`StreamOptions::dense_fraction`]; read directly
    /// when the bytes outgrow the page cache.
    fn schedule<P: VertexProgram>(
        run: &Run<'_, P>,
        state: &RunState<P::Msg>,
        active_vertices: u64,
        active_edges: &[u64],
    ) -> Step {
        let (layouts, options) = (run.layouts, run.options);
        let arcs = run.runner.graph_info().num_arcs;
        let reverse = layouts.reverse_index;
        let pulling = reverse.is_some() && pull::pulls(active_vertices, active_edges.iter().sum(), arcs);
        let pulling = pulling
            || reverse.is_some_and(|r| {
                options.schedule == Schedule::Selective
                    && state.resident.holds_all(r, layouts.edges(r))
                    && pull_from_memory_is_cheaper(
                        &layouts.layouts,
                        &layouts.files,
                        layouts.push_layouts,
                        &state.frontier,
                        options,
                        run.gap.bytes,
                        state.resident.bytes(),
                    )
            });
        // The push layout held whole: the frontier's edges are in memory, wherever they are.
        let from_memory = !pulling
            && layouts.push_layouts == 1
            && state.renumbered != Some(0)
            && state.resident.holds_all(0, layouts.edges(0));
        let active_bytes: u64 = layouts.files.iter().zip(active_edges).map(|(f, &e)| e * f.edge_bytes()).sum();
        let dense = pulling
            || match options.schedule {
                Schedule::Full => true,
                Schedule::Selective => active_bytes as f64 >= options.dense_fraction * layouts.total_bytes as f64,
                Schedule::Block => false,
            };
        let iteration_bytes = match reverse {
            Some(r) if pulling => layouts.files[r].bytes(),
            _ => layouts.total_bytes,
        };
        let expected_bytes = if dense { iteration_bytes } else { active_bytes };
        let direct = layouts.direct_supported
            && match options.io {
                IoMode::Buffered => false,
                IoMode::Direct => true,
                IoMode::Auto => expected_bytes > state.page_cache,
            };
        // A dense pass over one layout takes its resident prefix from memory (see `resident`).
        // (A layout renumbered for pulls no longer serves pushes from memory.)
        let dense_layout = match reverse {
            Some(r) if pulling => Some(r),
            _ => ((dense || from_memory) && layouts.push_layouts == 1 && state.renumbered != Some(0)).then_some(0),
        };
        Step { pulling, dense, iteration_bytes, direct, dense_layout, from_memory }
    }
}

/// What an iteration's pass did.
struct Passed {
    /// Edges taken from memory.
    resident_edges: u64,
    streamed: Streamed,
    scatter_seconds: f64,
}

/// Streams the reverse layout and folds each target's messages (see [`pull`]). The first pull
/// of a run whose reverse layout will stay resident orders the sources by degree as it copies
/// the ids into memory ([`order_for_first_pull`]).
fn pull_iteration<P: VertexProgram>(
    run: &Run<'_, P>,
    state: &mut RunState<P::Msg>,
    values: &[P::Value],
    step: &Step,
    active_vertices: u64,
) -> Result<Passed> {
    let (program, layouts) = (run.program, run.layouts);
    let r = layouts.reverse_index.expect("a pull iteration has a reverse layout");
    let offsets = layouts.offsets();
    let mut scatter_seconds = 0.0f64;
    let mut slot_of: Option<Vec<u32>> = None;
    if state.sources.is_some() {
        let computing = Instant::now();
        // A program whose active sources all send one message (BFS) folds a bit per source, and
        // the 300 KB of bits of RMAT-22 stay in the L2 cache in any order: renumbering 65 M ids
        // as they are copied (a quarter of a BFS's run) would buy nothing.
        if state.renumbered.is_none() && !program.sends_one_message_per_iteration() {
            slot_of = order_first_pull(run, state, r, values.len())?;
        }
        let sources = state.sources.as_mut().expect("checked above");
        sources.prepare(program, values, &state.frontier, layouts.out_offsets());
        scatter_seconds += computing.elapsed().as_secs_f64();
    }
    let pull = pull::Pull {
        program,
        values,
        frontier: &state.frontier,
        all_active: active_vertices == values.len() as u64,
        out_offsets: layouts.out_offsets(),
        offsets: offsets[r],
        sources: state.sources.as_ref(),
        wide: layouts.wide,
    };
    let reader = reader_for(run, step);
    let plans = vec![(r, ChunkPlan::rest(state.resident.prefix(r).1, layouts.edges(r)))];
    let acc = &mut state.accumulators[0];
    let (resident_edges, streamed) = pass(
        &reader,
        plans,
        &mut state.pool,
        &mut state.resident,
        step.dense_layout,
        slot_of.as_deref(),
        &mut |buffer| {
            let computing = Instant::now();
            let pulled = acc.received.update_words(|words| pull.buffer(buffer, &mut acc.msgs, words));
            acc.edges += pulled.edges;
            acc.bad_target = acc.bad_target.or(pulled.bad_source);
            scatter_seconds += computing.elapsed().as_secs_f64();
            Ok(())
        },
    )?;
    if let (Some(_), Some(sources)) = (slot_of, state.sources.as_mut()) {
        if state.resident.holds_all(r, layouts.edges(r)) {
            state.renumbered = Some(r);
        } else if let Some(vertex_at) = sources.unorder() {
            // Not all of the layout stayed in memory (against the prediction): later passes
            // read ids from disk as they are, so the kept prefix gets its ids back.
            state.resident.renumber(&vertex_at);
            state.order = None;
        }
    }
    Ok(Passed { resident_edges, streamed, scatter_seconds })
}

/// Orders the sources by degree for the first pull over layout `r` when all of it will stay
/// resident with room for the order ([`will_order_first_pull`]), charging the order to the
/// ledger ([`order_charge`]: the accumulators pulls do not use give it their memory first when
/// the ledger's free bytes are short); returns the slot of each vertex, for [`pass`] to
/// renumber the copied ids.
fn order_first_pull<P: VertexProgram>(
    run: &Run<'_, P>,
    state: &mut RunState<P::Msg>,
    r: usize,
    n: usize,
) -> Result<Option<Vec<u32>>> {
    let layouts = run.layouts;
    let first = FirstPull { layout: r, edges: layouts.edges(r), edge_bytes: layouts.files[r].edge_bytes() };
    let spare_accumulators = run.plan.accumulator * (state.accumulators.len() as u64 - 1);
    let free = run.runner.ledger().left();
    if !will_order_first_pull(&state.resident, &first, n, layouts.wide, free + spare_accumulators) {
        return Ok(None);
    }
    let order_bytes = pull::SourceOrder::bytes(n).0;
    if free < order_bytes {
        // Accumulators beyond the first serve only parallel pushes: their memory goes to the
        // order (later pushes, if any, scatter on one thread).
        state.accumulators.truncate(1);
    }
    let charged = order_charge(order_bytes, free, spare_accumulators);
    state.order = Some(run.runner.ledger().charge(SOURCE_ORDER, charged)?);
    let sources = state.sources.as_mut().expect("pulls of uniform messages");
    Ok(Some(sources.order_by(pull::SourceOrder::by_degree(layouts.offsets()[0]))))
}

/// Streams the frontier's chunks of the push layouts (all of them when dense) and scatters
/// their messages into the accumulators.
fn push_iteration<P: VertexProgram>(
    run: &Run<'_, P>,
    state: &mut RunState<P::Msg>,
    values: &[P::Value],
    step: &Step,
) -> Result<Passed> {
    let layouts = run.layouts;
    let offsets = layouts.offsets();
    let from = step.dense_layout.map_or(0, |l| state.resident.prefix(l).1);
    let plans: Vec<(usize, ChunkPlan<'_>)> = layouts.layouts[..layouts.push_layouts]
        .iter()
        .zip(&layouts.files)
        .enumerate()
        .map(|(i, (layout, f))| {
            (
                i,
                push_plan(
                    layout,
                    f,
                    &state.frontier,
                    (step.dense || step.from_memory).then_some(from),
                    run.options,
                    run.gap.bytes,
                ),
            )
        })
        .collect();
    let scatter = Scatter {
        program: run.program,
        frontier: &state.frontier,
        values,
        offsets: &offsets,
        out_offsets: layouts.out_offsets(),
        wide: layouts.wide,
        n: values.len() as u64,
    };
    let reader = reader_for(run, step);
    let mut scatter_seconds = 0.0f64;
    let accumulators = &mut state.accumulators;
    let (resident_edges, streamed) =
        pass(&reader, plans, &mut state.pool, &mut state.resident, step.dense_layout, None, &mut |buffer| {
            let computing = Instant::now();
            scatter.buffer(buffer, accumulators);
            scatter_seconds += computing.elapsed().as_secs_f64();
            Ok(())
        })?;
    Ok(Passed { resident_edges, streamed, scatter_seconds })
}

fn reader_for<'a, P>(run: &Run<'a, P>, step: &Step) -> ChunkReader<'a> {
    let runner = run.runner;
    ChunkReader { layouts: &run.layouts.files, direct: step.direct, cancel: runner.cancel_token() }
}

/// Charges the run's plan and what it keeps resident (`kept`: one layout is read densely on
/// its own and resident edges are on) to the ledger.
fn charge_memory(runner: &Runner, mut plan: MemoryPlan, weights: bool, kept: bool, ordered: bool) -> Result<RunMemory> {
    let info = runner.graph_info();
    let edge_bytes = target_bytes_for(info.num_vertices) + if weights { 8 } else { 0 };
    let budget = runner.memory().bytes();
    let resident =
        ResidentSizing::new(&mut plan, budget, (info.num_vertices, info.num_arcs), edge_bytes, kept, ordered);
    let mut charges = runner.ledger().charge_parts(&plan.parts())?;
    charges.extend(runner.ledger().charge_parts(&resident.parts()[..1])?);
    Ok(RunMemory { plan, resident, charges })
}

/// The run's set-up, once, in the stats' `stream` section.
fn record_setup<P, M>(run: &Run<'_, P>, state: &RunState<M>) {
    let (options, plan, layouts, gap) = (run.options, run.plan, run.layouts, &run.gap);
    let stream = StreamRun {
        schedule: options.schedule.name(),
        io: options.io.name(),
        direct_io_supported: layouts.direct_supported,
        gap_threshold_bytes: gap.bytes,
        gap_threshold_source: gap.source,
        layouts: layouts.layouts[..layouts.push_layouts].iter().map(|l| l.name).collect(),
        pull_layout: layouts.reverse_index.map(|i| layouts.layouts[i].name),
        edge_file_bytes: layouts.total_bytes,
        vertex_state_bytes: plan.vertex_state(),
        accumulators: plan.accumulators as u64,
        buffers: plan.buffers as u64,
        buffer_bytes: plan.buffer_bytes,
        planned_bytes: plan.total(),
        resident_room_bytes: state.resident_room,
        page_cache_estimate_bytes: state.page_cache,
    };
    run.runner.record_figures(|figures| figures.stream = Some(stream));
}

/// An iteration's own figures, for [`record_iteration`].
struct IterationRecord {
    iteration: usize,
    active_vertices: u64,
    edges_processed: u64,
    compute_seconds: f64,
    started: Instant,
    bytes_read: u64,
    bytes_written: u64,
}

fn record_iteration<P, M>(
    run: &Run<'_, P>,
    state: &RunState<M>,
    step: &Step,
    passed: &Passed,
    active_edges: &[u64],
    record: &IterationRecord,
) {
    let reader = &passed.streamed.reader;
    let figures = StreamIteration {
        active_edges: active_edges.iter().sum(),
        chunks_read: reader.chunks,
        read_requests: reader.requests,
        buffer_fills: reader.buffers_filled,
        bytes_skipped: step.iteration_bytes.saturating_sub(reader.bytes_read),
        resident_edges: passed.resident_edges,
        sources_ordered: state.renumbered.is_some(),
        io_wait_seconds: passed.streamed.io_wait_seconds,
        compute_seconds: record.compute_seconds,
        io_mode: ReadMode::of(step.direct),
        dense: step.dense,
    };
    run.runner.record_iteration(IterationStats {
        iteration: record.iteration,
        active_vertices: record.active_vertices,
        edges_processed: record.edges_processed,
        bytes_read: record.bytes_read,
        bytes_written: record.bytes_written,
        seconds: record.started.elapsed().as_secs_f64(),
        delivery: run.layouts.reverse_index.map(|_| if step.pulling { Delivery::Pull } else { Delivery::Push }),
        figures: IterationFigures::Stream(figures),
    });
}
