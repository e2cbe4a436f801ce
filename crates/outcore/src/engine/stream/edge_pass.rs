//! One pass over every arc of `csr-out`, for an [`EdgePass`] program (union-find
//! connectivity): the semi-external way to compute what label propagation needs many passes
//! for. With the program's per-vertex state in memory, each arc is read once from disk and
//! handed to the program from all threads at once; there are no messages, no frontier and no
//! second pass (issue 15: "semi-external connectivity: one pass, not six").
//!
//! Both `stream` and `inmem` run edge passes here: loading a layout to visit each arc once
//! would be the same read plus a copy, so inmem streams it through the page cache as well.
//! The pass reads csr-out only: an undirected store holds both arcs of every edge there, and
//! for a directed one each arc is one edge of the undirected graph.
//!
//! Memory ([`EdgePassMemory`], the plan's parts and the run's ledger charges): the program's
//! state, csr-out's offsets (8 bytes per vertex, to know each arc's source) and the read
//! buffers of [`super::reader`].

use std::time::Instant;

use rayon::prelude::*;

use super::reader::{ChunkReader, EdgeBuffer};
use super::{open_layout, stream_buffers, ChunkPlan, IoMode, MIN_BUFFER_BYTES};
use crate::engine::{EdgePassIteration, EdgePassRun, IterationFigures, IterationStats, ReadMode, Runner};
use crate::error::{Error, Result};
use crate::program::EdgePass;
use crate::runtime::{format_size, MemoryPart, DIRECT_ALIGN};
use crate::store::csr::target_bytes_for;
use crate::store::Direction;
use crate::VertexId;

/// How an edge pass spends the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgePassMemory {
    /// The program's own state.
    pub state: u64,
    /// csr-out's offsets.
    pub offsets: u64,
    pub buffer_bytes: u64,
    pub buffers: usize,
}

impl EdgePassMemory {
    /// Sizes the buffers from what the state and offsets leave of `budget`.
    pub fn new(vertices: u64, state_per_vertex: u64, budget: u64, options: &super::StreamOptions) -> Result<Self> {
        let state = vertices * state_per_vertex;
        let offsets = (vertices + 1) * 8;
        let buffers = options.buffers.max(2);
        let needed = state + offsets + buffers as u64 * MIN_BUFFER_BYTES;
        if needed > budget {
            return Err(Error::MemoryBudget(format!(
                "one pass over the edges keeps {} of vertex state and {} of offsets in memory for {vertices} \
                 vertices, plus at least {} of read buffers, but the budget is {}; raise --memory to at least {}, \
                 or use the fully external engine (--engine shards), which keeps only one interval of vertices \
                 in memory",
                format_size(state),
                format_size(offsets),
                format_size(buffers as u64 * MIN_BUFFER_BYTES),
                format_size(budget),
                format_size(needed),
            )));
        }
        let per_buffer = (budget - state - offsets) / buffers as u64;
        let buffer_bytes =
            per_buffer.min(options.max_buffer_bytes.max(MIN_BUFFER_BYTES)) / DIRECT_ALIGN as u64 * DIRECT_ALIGN as u64;
        Ok(EdgePassMemory { state, offsets, buffer_bytes, buffers })
    }

    pub fn total(&self) -> u64 {
        self.state + self.offsets + self.buffer_bytes * self.buffers as u64
    }

    /// The parts the plan shows and the run charges to the ledger.
    pub fn parts(&self) -> [MemoryPart; 3] {
        [
            MemoryPart::new("vertex state", self.state),
            MemoryPart::new("offsets", self.offsets),
            MemoryPart::new("read buffers", self.buffer_bytes * self.buffers as u64),
        ]
    }
}

/// Runs `pass` over every arc of csr-out, reading as `io` says (`Auto`: O_DIRECT when csr-out
/// will not fit the page cache).
pub fn run<P: EdgePass>(runner: &Runner, pass: &P, io: IoMode) -> Result<()> {
    let store = runner.store();
    let options = &runner.options().stream;
    let n = store.num_vertices();
    let memory = EdgePassMemory::new(n, pass.state_bytes_per_vertex(), runner.memory().bytes(), options)?;
    let _charges = runner.ledger().charge_parts(&memory.parts())?;
    let (layout, files) = open_layout(store, Direction::Out, false, io != IoMode::Buffered)?;
    let files = [files];
    let total_bytes = files[0].bytes();
    let direct = files[0].supports_direct()
        && match io {
            IoMode::Buffered => false,
            IoMode::Direct => true,
            IoMode::Auto => total_bytes > super::page_cache_estimate(runner.memory().bytes()),
        };
    let wide = target_bytes_for(n) == 8;
    let mut pool = EdgeBuffer::pool(memory.buffers, memory.buffer_bytes, if wide { 8 } else { 4 }, false)?;
    let setup = EdgePassRun {
        io: ReadMode::of(direct),
        edge_file_bytes: total_bytes,
        state_bytes: memory.state,
        offsets_bytes: memory.offsets,
        buffers: memory.buffers as u64,
        buffer_bytes: memory.buffer_bytes,
        planned_bytes: memory.total(),
    };
    runner.record_figures(|figures| figures.edge_pass = Some(setup));
    let started = Instant::now();
    let io_before = runner.io_snapshot();
    let reader = ChunkReader { layouts: &files, direct, cancel: runner.cancel_token() };
    let plans = vec![(0, ChunkPlan::whole(*layout.offsets.last().unwrap_or(&0)))];
    let threads = rayon::current_num_threads().max(1);
    let mut compute_seconds = 0.0;
    // Arcs visited since `between_batches` last ran: it runs once they reach the vertex count,
    // so that its work (union-find's compression: O(|V|)) stays within that of the arcs.
    let mut since_batch_end = 0;
    let streamed = stream_buffers(&reader, plans, &mut pool, |buffer| {
        let computing = Instant::now();
        let visit = Visit { pass, offsets: &layout.offsets, n };
        let outcome = if wide { visit.buffer::<true>(buffer, threads) } else { visit.buffer::<false>(buffer, threads) };
        since_batch_end += buffer.edges();
        if since_batch_end >= n {
            pass.between_batches();
            since_batch_end = 0;
        }
        compute_seconds += computing.elapsed().as_secs_f64();
        outcome.map_err(|target| {
            Error::store(
                files[0].targets.path(),
                format!("an edge points to vertex {target}, beyond the {n} vertices: the adjacency files are damaged"),
            )
        })
    })?;
    let io = runner.io_snapshot().since(&io_before);
    let figures = EdgePassIteration {
        io_wait_seconds: streamed.io_wait_seconds,
        compute_seconds,
        read_requests: streamed.reader.requests,
        io_mode: ReadMode::of(direct),
    };
    runner.record_iteration(IterationStats {
        iteration: 0,
        active_vertices: n,
        edges_processed: store.num_arcs(),
        bytes_read: io.bytes_read,
        bytes_written: io.bytes_written,
        seconds: started.elapsed().as_secs_f64(),
        delivery: None,
        figures: IterationFigures::EdgePass(figures),
    });
    Ok(())
}

/// The visit of one buffer's arcs.
struct Visit<'a, P> {
    pass: &'a P,
    offsets: &'a [u64],
    n: u64,
}

impl<P: EdgePass> Visit<'_, P> {
    /// Hands every arc of `buffer` to the program, its edges cut into `parts` equal slices run
    /// in parallel; `Err(target)` for a target beyond the vertex count.
    fn buffer<const WIDE: bool>(&self, buffer: &EdgeBuffer, parts: usize) -> std::result::Result<(), u64> {
        let mut slices = Vec::new();
        for piece in &buffer.pieces {
            let edges = piece.edges();
            for k in 0..parts as u64 {
                let (first, end) = (edges * k / parts as u64, edges * (k + 1) / parts as u64);
                if first < end {
                    slices.push((piece, piece.first_edge + first, piece.first_edge + end));
                }
            }
        }
        slices.par_iter().try_for_each(|&(piece, first, end)| {
            let width = if WIDE { 8 } else { 4 };
            let bytes = &buffer.targets[piece.target_pos + (first - piece.first_edge) as usize * width..];
            self.range::<WIDE>(bytes, first, end)
        })
    }

    /// The arcs `[first, end)`, whose targets start at `bytes`.
    fn range<const WIDE: bool>(&self, bytes: &[u8], first: u64, end: u64) -> std::result::Result<(), u64> {
        let mut source = self.offsets.partition_point(|&o| o <= first) as VertexId - 1;
        let mut source_end = self.offsets[source as usize + 1];
        let targets = decode::<WIDE>(bytes, (end - first) as usize);
        for (edge, target) in (first..end).zip(targets) {
            while edge >= source_end {
                source += 1;
                source_end = self.offsets[source as usize + 1];
            }
            if target >= self.n {
                return Err(target);
            }
            self.pass.arc(source, target);
        }
        Ok(())
    }
}

/// The first `count` targets of `bytes`, little-endian u64 (`WIDE`) or u32.
fn decode<const WIDE: bool>(bytes: &[u8], count: usize) -> impl Iterator<Item = u64> + '_ {
    let width = if WIDE { 8 } else { 4 };
    bytes[..count * width].chunks_exact(width).map(|b| {
        if WIDE {
            u64::from_le_bytes(b.try_into().unwrap())
        } else {
            u32::from_le_bytes(b.try_into().unwrap()) as u64
        }
    })
}

/// The plan of an edge pass on `engine` (inmem and stream run the same pass; `rate` is the
/// engine's compute rate): state, offsets and buffers in memory, csr-out read once, reading
/// overlapped with the visits.
pub fn plan(
    engine: crate::engine::EngineKind,
    shape: &crate::engine::planner::ProgramShape,
    ctx: &crate::engine::planner::PlanContext,
    rate: f64,
) -> crate::engine::planner::Plan {
    use crate::engine::planner::{Plan, Workload};
    let graph = ctx.graph;
    let work = Workload::of(shape, graph);
    let memory = match EdgePassMemory::new(graph.vertices, shape.value_bytes, ctx.budget, &ctx.options.stream) {
        Ok(m) => m,
        Err(e) => return Plan::refused(engine, &work, e.to_string()),
    };
    let mut plan = Plan::new(engine, &work).with_parts(memory.parts());
    plan.bytes_read = graph.csr_out_bytes;
    plan.seconds = ctx.model.transfer(plan.bytes_read).max(ctx.model.compute(work.edge_visits, rate));
    plan.single_process(ctx)
}
