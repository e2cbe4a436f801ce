//! The cache engine (`--engine cache`): semi-external vertex-centric processing with an
//! engine-managed page cache and BASC, the BFS-aware static cache (Lee et al., "Pre-Select
//! Static Caching and Neighborhood Ordering for BFS-like Algorithms on Disk-based Graph
//! Engines", ATC '19; DESIGN.md "cache").
//!
//! **Model** (paper §2.1). Vertex state lives in memory (values, combined messages, frontier
//! bitmaps, and the CSR offsets that say where each list lies); adjacency lists stay on disk
//! in `csr-out` (and `csr-in` for programs that send along in-edges) and are read, for the
//! active vertices only, in fixed-size pages (`page_size`, 8 KiB by default as in the paper).
//! Iterations are bulk-synchronous and follow the same semantics as the in-memory engine
//! (`engine/inmem.rs`), so every program gives the same results on both.
//!
//! **One iteration.** Active vertices are visited in ascending id, so the byte ranges of their
//! lists, and hence their pages, come sorted. They are cut into batches of at most half the
//! page cache's frames: for each batch the distinct pages are looked up (a page shared by
//! several active vertices is requested once), missing ones get frames by clock replacement,
//! and runs of adjacent missing pages are merged into one `preadv` (`requests.rs`). Batches are
//! pipelined: while the compute thread scatters batch *i*, the reader threads fill batch
//! *i + 1*, several requests in flight at once. Frames are pinned from lookup to the end of
//! their batch's computation, so no page is evicted under a reader or the scatter.
//!
//! **Static cache** (§3). A share of the cache memory (`static_cache_share`, default 0.8: the
//! paper's standard configuration, 5 % of the graph as page cache plus 20 % as BASC, §5.1 and
//! §5.3; Figure 7 shows the time falling steadily as the BASC share grows to 90 %) holds whole
//! lists of pre-selected vertices of `csr-out`, fixed for the run. A vertex found there is
//! scattered without any page lookup, from all threads before the page pipeline runs
//! (`parts.rs`). The selection (`selection.rs`: GVS, HighD, LowD,
//! Random) is computed once per store, page size and size, saved in the store and reused. GVS
//! reads every list in each of its K rounds: when the memory it is lent holds the whole
//! `csr-out` targets file, it reads the file once and keeps it, and the static cache then takes
//! its lists from that copy, so a first run reads the adjacency once before its iterations.
//!
//! **Memory.** From `--memory` the engine first reserves the program's state per vertex (its
//! value and message, the flags, and a message array per scatter part: 19 bytes for BFS on two
//! threads, whose parts only mark targets, parts.rs; `state_bytes_per_vertex` fixes it
//! instead), then the offsets of the layouts the program reads (8 bytes per vertex each:
//! csr-out's always, csr-in's on a directed store only for programs that read in-edges, or
//! under a fixed reservation) and the page table; what remains is the cache, split between static
//! cache and page-cache frames ([`MemoryPlan`]: the planner's parts, and the engine's charges to
//! the run's ledger, held while the engine lives; the selection's working memory, resident
//! lists included, is charged while it runs and until the static cache is filled, before the
//! vertex state and the caches exist). Caches live in the [`Runner`] and persist across the program
//! runs of one algorithm (diameter sweeps, the phases of betweenness), as a graph engine's
//! caches do; a later program that keeps more state than the engine reserved, or reads the
//! in-edges it holds no offsets for, rebuilds it ([`memory::Reservation`]). Until
//! stop 44 the reservation was a fixed 64 bytes per vertex: on RMAT-22 at 384 MiB that left
//! BFS 60 MiB of cache for 249 MiB of lists, where its own 19 bytes leave 240 MiB.
//!
//! **Figures** (per iteration in [`CacheIteration`], cumulative in [`CacheRun`]):
//! page-cache hits and misses (distinct pages per batch), static-cache hits (lists served),
//! page utilisation (paper §5.1), bytes read, requests issued, merged requests (requests that
//! cover more than one page), evictions, and the selection's and loading's cost.

mod frontier;
mod memory;
pub mod page_cache;
mod parts;
pub mod plan;
pub mod requests;
mod saved_selection;
pub mod selection;
pub mod static_cache;

use std::time::Instant;

pub use memory::{budget_for_cache_bytes, ASSUMED_STATE_BYTES_PER_VERTEX};
pub(crate) use memory::{page_numbering, paged_files, MemoryPlan};
use memory::{store_pages, Reservation};
pub(crate) use saved_selection::{gvs_holds_lists, selection_names};

use self::frontier::{Bitmap, Frontier};
pub use selection::SelectionMethod;

use self::page_cache::PageCache;
use self::parts::{Parallel, Parts, ScatterContext, Serial, Sink};
use self::requests::PagedFile;
use self::static_cache::StaticCache;
use super::planner::ProgramShape;
use super::{CacheIteration, CacheRun, IterationFigures, IterationStats, Runner, StaticCacheLoad};
use crate::error::{Error, Result};
use crate::program::{add_global_sums, global_contributions, Control, EdgeDirection, IterationContext, VertexProgram};
use crate::runtime::{Charge, ProgressUnit};
use crate::store::order::read_all_offsets;
use crate::store::Direction;

/// Options of the cache engine (`outcore run --engine cache ...`).
#[derive(Debug, Clone, PartialEq)]
pub struct CacheOptions {
    /// Bytes per page (`--page-size`); a multiple of 512. Default 8 KiB (paper §5).
    pub page_size: u64,
    /// Share of the cache memory given to the static cache (`--static-cache-share`).
    pub static_cache_share: f64,
    /// How the static cache is filled (`--static-cache-select`); `None` disables it.
    pub selection: SelectionMethod,
    /// GVS rounds K (`--gvs-rounds`). The paper finds the gain saturating around K = 50 and GVS
    /// already ahead of LowD at K = 1 (Figure 10); 16 keeps selection time moderate.
    pub gvs_rounds: usize,
    /// Seed of the `random` selection.
    pub seed: u64,
    /// Reader threads issuing requests.
    pub io_threads: usize,
    /// Largest merged request in bytes.
    pub max_request_bytes: u64,
    /// Bytes per vertex reserved for program values, messages and the scatter's per-thread
    /// copies. `None` (the default): what the program keeps (its value and message, flags, and
    /// a message array per scatter part) and the offsets of the layouts it reads, so the caches
    /// get the rest of the budget.
    /// `Some(bytes)`: a fixed reservation, with every layout's offsets whatever the program
    /// reads, as benchmarks comparing configurations at equal cache memory want; a program that
    /// keeps more is refused.
    pub state_bytes_per_vertex: Option<u64>,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            page_size: 8 << 10,
            static_cache_share: 0.8,
            selection: SelectionMethod::Gvs,
            gvs_rounds: 16,
            seed: 0,
            io_threads: 4,
            max_request_bytes: 256 << 10,
            state_bytes_per_vertex: None,
        }
    }
}

/// One CSR layout as the engine reads it: offsets in memory, lists in paged files.
struct Adjacency {
    offsets: Vec<u64>,
    target_bytes: u64,
    /// Indices into the engine's file table.
    targets: usize,
    weights: Option<usize>,
    /// Whether the static cache (built over csr-out) serves this layout.
    static_cached: bool,
}

/// Cumulative counters of the engine besides the page cache's own.
#[derive(Debug, Clone, Copy, Default)]
struct EngineCounters {
    static_hits: u64,
    /// Lists (or parts of lists) read through the page cache.
    paged_lists: u64,
    requests: u64,
    merged_requests: u64,
    pages_requested: u64,
}

/// The engine's persistent state: files, offsets, caches, counters.
pub struct CacheEngine {
    options: CacheOptions,
    vertices: u64,
    files: Vec<PagedFile>,
    out: Adjacency,
    inn: Option<Adjacency>,
    page_cache: PageCache,
    static_cache: Option<StaticCache>,
    counters: EngineCounters,
    /// The set-up figures, completed with the counters for the run's stats.
    figures: CacheRun,
    /// The programs' state and the offsets held ([`memory::Reservation`]).
    reservation: Reservation,
    /// The ledger charges of the engine's memory, held while it lives in the runner.
    _charges: Vec<Charge>,
}

/// Runs `program` on the cache engine of `runner` (created on first use).
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let mut reservation = Reservation::for_program(
        &runner.options().cache,
        runner.store().is_directed(),
        &ProgramShape::vertex(program),
        rayon::current_num_threads(),
    )
    .map_err(Error::MemoryBudget)?;
    let mut slot = runner.cache_engine_slot().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(engine) = slot.as_ref().filter(|engine| !engine.reservation.covers(&reservation)) {
        // Sized for an earlier program of this algorithm that keeps less state or reads no
        // in-edges: release its memory and build the engine again, caches included, for both.
        reservation = engine.reservation.union(&reservation);
        *slot = None;
    }
    if slot.is_none() {
        *slot = Some(CacheEngine::new(runner, reservation)?);
    }
    let engine = slot.as_mut().unwrap();
    let result = engine.run(runner, program);
    if result.is_err() {
        // A failed run may leave frames pinned or half read: start the next run with an
        // empty page cache.
        *slot = None;
        return result;
    }
    engine.record_run_figures(runner);
    result
}

impl CacheEngine {
    fn new(runner: &Runner, reservation: Reservation) -> Result<CacheEngine> {
        let options = runner.options().cache.clone();
        let store = runner.store();
        let page_size = options.page_size;
        if page_size < 512 || !page_size.is_multiple_of(512) || page_size > (64 << 20) {
            return Err(Error::invalid(format!(
                "page size must be a multiple of 512 bytes up to 64 MiB, not {page_size}"
            )));
        }
        if !(0.0..=1.0).contains(&options.static_cache_share) {
            return Err(Error::invalid(format!(
                "static cache share must be between 0 and 1, not {}",
                options.static_cache_share
            )));
        }
        let n = store.num_vertices();
        let weighted = store.is_weighted();

        let (rels, sizes, total_pages) = store_pages(store, page_size);
        let out_layout = store.csr(Direction::Out)?;
        let target_bytes = out_layout.target_bytes;
        let edge_bytes = target_bytes + if weighted { 8 } else { 0 };
        let every_list = StaticCache::every_list_bytes(n, store.num_arcs(), edge_bytes);
        let plan = MemoryPlan::new(n, total_pages, every_list, runner.memory().bytes(), &reservation, &options)?;
        let mut charges = runner.ledger().charge_parts(&plan.fixed_parts())?;
        let mut figures = CacheRun {
            cache_page_size: page_size,
            cache_static_share: options.static_cache_share,
            cache_selection: options.selection.name(),
            cache_gvs_rounds: options.gvs_rounds as u64,
            cache_memory_bytes: plan.cache,
            cache_reserved_state_bytes: plan.reserved_state,
            cache_offsets_bytes: plan.offsets,
            cache_page_table_bytes: plan.page_table,
            static_cache_budget_bytes: plan.static_cache,
            page_cache_frames: plan.frames as u64,
            page_cache_bytes: plan.frames as u64 * page_size,
            ..CacheRun::default()
        };

        let out_offsets = read_all_offsets(&out_layout)?;

        // The static cache: select (or load the saved selection), then load the lists.
        let static_cache = if options.selection != SelectionMethod::None && plan.static_cache > 0 {
            let chosen = Self::selection(runner, &out_layout, &out_offsets, plan, edge_bytes)?;
            figures.selection = Some(chosen.figures);
            let (resident, _working) = chosen.resident.unzip();
            let (cache, report) = StaticCache::load(&out_layout, &out_offsets, &chosen.vertices, weighted, resident)?;
            figures.static_cache = Some(StaticCacheLoad {
                static_cache_vertices: cache.len() as u64,
                static_cache_edges: cache.edges(),
                static_cache_bytes: cache.bytes(),
                static_cache_load_seconds: report.seconds,
                static_cache_load_bytes: report.bytes_read,
            });
            Some(cache)
        } else {
            None
        };
        drop(out_layout);
        // The selection is done: its memory goes to the vertex state and the caches.
        charges.extend(runner.ledger().charge_parts(&plan.cache_parts())?);

        let mut files = Vec::new();
        for (rel, &first_page) in rels.iter().zip(&sizes) {
            let mut file = PagedFile::open(store.file(rel)?, first_page, page_size)?;
            if rel.ends_with("/targets") && page_size.is_multiple_of(target_bytes) {
                file.ids = Some((target_bytes, n));
            }
            files.push(file);
        }
        figures.cache_io_mode = files[0].mode.name();
        let out = Adjacency {
            offsets: out_offsets,
            target_bytes,
            targets: 0,
            weights: weighted.then_some(1),
            static_cached: static_cache.is_some(),
        };
        let inn = if reservation.in_offsets {
            let offsets = read_all_offsets(&store.csr(Direction::In)?)?;
            let base = if weighted { 2 } else { 1 };
            Some(Adjacency {
                offsets,
                target_bytes,
                targets: base,
                weights: weighted.then_some(base + 1),
                static_cached: false,
            })
        } else {
            None
        };
        let page_cache = PageCache::new(page_size as usize, plan.frames, total_pages)?;
        Ok(CacheEngine {
            options,
            vertices: n,
            files,
            out,
            inn,
            page_cache,
            static_cache,
            counters: EngineCounters::default(),
            figures,
            reservation,
            _charges: charges,
        })
    }

    fn run<P: VertexProgram>(&mut self, runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
        let info = runner.graph_info();
        let n = self.vertices;
        let directions: &[Direction] = match (program.direction(), info.directed) {
            (EdgeDirection::Out, _) | (EdgeDirection::Both, false) => &[Direction::Out],
            (EdgeDirection::In, _) => &[Direction::In],
            (EdgeDirection::Both, true) => &[Direction::Out, Direction::In],
        };
        let with_weights = program.uses_weights() && info.weighted;
        let marks_only = parts::marks_only(program);
        let parts =
            parts::parts_within::<P>(self.reservation.state_per_vertex, rayon::current_num_threads(), marks_only);
        self.figures.scatter_parts = parts as u64;
        let mut parts = (parts > 1).then(|| Parts::new(parts, n, program.identity(), marks_only));

        let mut values: Vec<P::Value> = (0..n).map(|v| program.init(v, &info)).collect();
        let mut acc: Vec<P::Msg> = vec![program.identity(); n as usize];
        let mut received = Bitmap::new(n);
        let mut active = Bitmap::new(n);
        for v in 0..n {
            if program.initially_active(v, &info) {
                active.set(v);
            }
        }
        let bar = runner.progress().start(
            "iterations (cache)",
            program.max_iterations().map(|m| m as u64),
            ProgressUnit::Iterations,
        );
        let mut iteration = 0;
        loop {
            runner.cancel_token().check()?;
            let active_vertices = active.count();
            if active_vertices == 0 || program.max_iterations().is_some_and(|max| iteration >= max) {
                break;
            }
            let started = Instant::now();
            let io_before = runner.io_snapshot();
            let cache_before = self.page_cache.counters();
            let counters_before = self.counters;
            let [global_sum, second_global_sum] = (0..n)
                .map(|v| global_contributions(program, v, &values[v as usize], self.out_degree(v)))
                .fold([0.0; 2], add_global_sums);

            let mut edges_processed = 0u64;
            for &direction in directions {
                let adjacency = match direction {
                    Direction::Out => &self.out,
                    // Held whenever a directed store's program reads in-edges (the
                    // reservation); csr-out serves both directions of an undirected store.
                    Direction::In => self.inn.as_ref().unwrap_or(&self.out),
                };
                let static_cache = if adjacency.static_cached { self.static_cache.as_ref() } else { None };
                let context = ScatterContext {
                    program,
                    values: &values,
                    out_offsets: &self.out.offsets,
                    width: adjacency.target_bytes as usize,
                };
                // All threads: the cached lists first, by source range; the pipeline then
                // delivers only the paged ones (parts.rs).
                let (mut serial, mut parallel);
                let (sink, static_scattered): (&mut dyn Sink, bool) = match parts.as_mut() {
                    Some(parts) => {
                        parallel = Parallel { context, parts, edges: 0 };
                        if let Some(cache) = static_cache {
                            self.counters.static_hits += parallel.static_lists(cache, &active, with_weights);
                        }
                        (&mut parallel, static_cache.is_some())
                    }
                    None => {
                        serial = Serial { context, acc: &mut acc, received: &mut received, edges: 0 };
                        (&mut serial, false)
                    }
                };
                let mut frontier = Frontier {
                    options: &self.options,
                    page_cache: &mut self.page_cache,
                    files: &self.files,
                    adjacency,
                    static_cache,
                    static_scattered,
                    with_weights,
                    counters: &mut self.counters,
                };
                frontier.scatter(&active, sink)?;
                edges_processed += sink.edges();
            }
            if let Some(parts) = parts.as_mut() {
                parts.fold_into(program, &mut acc, &mut received);
            }

            let ctx = IterationContext { iteration, graph: info, global_sum, second_global_sum };
            let mut next = Bitmap::new(0);
            std::mem::swap(&mut next, &mut active);
            next.clear();
            let mut next_active = next;
            if program.applies_to_all() {
                for v in 0..n {
                    let msg = std::mem::replace(&mut acc[v as usize], program.identity());
                    if program.apply(v, &mut values[v as usize], msg, &ctx) {
                        next_active.set(v);
                    }
                }
            } else {
                for v in received.iter_ones() {
                    let msg = std::mem::replace(&mut acc[v as usize], program.identity());
                    if program.apply(v, &mut values[v as usize], msg, &ctx) {
                        next_active.set(v);
                    }
                }
            }
            received.clear();
            active = next_active;

            let io = runner.io_snapshot().since(&io_before);
            let cache_now = self.page_cache.counters();
            let stats = IterationStats {
                iteration,
                active_vertices,
                edges_processed,
                bytes_read: io.bytes_read,
                bytes_written: io.bytes_written,
                seconds: started.elapsed().as_secs_f64(),
                delivery: None,
                figures: IterationFigures::Cache(CacheIteration {
                    page_cache_hits: cache_now.hits - cache_before.hits,
                    page_cache_misses: cache_now.misses - cache_before.misses,
                    page_cache_evictions: cache_now.evictions - cache_before.evictions,
                    static_cache_hits: self.counters.static_hits - counters_before.static_hits,
                    requests_issued: self.counters.requests - counters_before.requests,
                    merged_requests: self.counters.merged_requests - counters_before.merged_requests,
                }),
            };
            runner.record_iteration(stats);
            bar.inc(1);
            iteration += 1;
            if program.end_iteration(iteration - 1, active.count()) == Control::Stop {
                break;
            }
        }
        bar.finish();
        Ok(values)
    }

    fn out_degree(&self, v: u64) -> u64 {
        self.out.offsets[v as usize + 1] - self.out.offsets[v as usize]
    }

    /// Records the set-up and the cumulative counters as the run's cache figures.
    fn record_run_figures(&self, runner: &Runner) {
        let pc = self.page_cache.counters();
        let lookups = pc.hits + pc.misses;
        let (utilisation, pages) = self.page_cache.utilisation();
        let lists = self.counters.static_hits + self.counters.paged_lists;
        let figures = CacheRun {
            page_cache_hits: pc.hits,
            page_cache_misses: pc.misses,
            page_cache_hit_ratio: if lookups > 0 { pc.hits as f64 / lookups as f64 } else { 0.0 },
            page_cache_evictions: pc.evictions,
            page_utilisation: utilisation,
            page_utilisation_pages: pages,
            static_cache_hits: self.counters.static_hits,
            static_cache_hit_ratio: if lists > 0 { self.counters.static_hits as f64 / lists as f64 } else { 0.0 },
            requests_issued: self.counters.requests,
            merged_requests: self.counters.merged_requests,
            pages_read: self.counters.pages_requested,
            page_bytes_read: self.counters.pages_requested * self.options.page_size,
            ..self.figures.clone()
        };
        runner.record_figures(|run| run.cache = Some(figures));
    }

    /// The page cache's figures (for tests and benchmarks).
    pub fn page_cache(&self) -> &PageCache {
        &self.page_cache
    }
}
