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
//! **Memory.** From `--memory` the engine first reserves `state_bytes_per_vertex` (64 by
//! default) per vertex for program and algorithm state, then the offsets of the layouts (8
//! bytes per vertex each) and the page table; what remains is the cache, split between static
//! cache and page-cache frames ([`MemoryPlan`]: the planner's parts, and the engine's charges to
//! the run's ledger, held while the engine lives; the selection's working memory, resident
//! lists included, is charged while it runs and until the static cache is filled, before the
//! vertex state and the caches exist). Caches live in the [`Runner`] and persist across the program
//! runs of one algorithm (diameter sweeps, the phases of betweenness), as a graph engine's
//! caches do.
//!
//! **Figures** (per iteration in [`CacheIteration`], cumulative in [`CacheRun`]):
//! page-cache hits and misses (distinct pages per batch), static-cache hits (lists served),
//! page utilisation (paper §5.1), bytes read, requests issued, merged requests (requests that
//! cover more than one page), evictions, and the selection's and loading's cost.

pub mod page_cache;
mod parts;
pub mod plan;
pub mod requests;
pub mod selection;
pub mod static_cache;

use std::collections::VecDeque;
use std::time::Instant;

use crossbeam_channel::Receiver;
use serde_json::{json, Map};

pub use selection::SelectionMethod;

use self::page_cache::PageCache;
use self::parts::{ListRun, Parallel, Parts, ScatterContext, Serial, Sink};
use self::requests::{merge_requests, perform, PagedFile, ReadJob, MAX_PAGES_PER_REQUEST};
use self::selection::{chunk_edges_within, select, working_bytes, Lists, SelectionInput};
use self::static_cache::StaticCache;
use super::{CacheIteration, CacheRun, CacheSelection, IterationFigures, IterationStats, Runner, StaticCacheLoad};
use crate::error::{Error, Result};
use crate::program::{add_global_sums, global_contributions, Control, EdgeDirection, IterationContext, VertexProgram};
use crate::runtime::{format_size, Charge, MemoryPart, ProgressUnit};
use crate::store::manifest::{FileEntry, LayoutEntry, Manifest, MANIFEST_FILE};
use crate::store::order::{in_degrees, read_all_offsets};
use crate::store::{Direction, Store, StoreFileWriter};

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
    /// Bytes per vertex reserved for program values, messages and algorithm state.
    pub state_bytes_per_vertex: u64,
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
            state_bytes_per_vertex: 64,
        }
    }
}

/// Batches in flight (one computing, the next being read).
const PIPELINE_DEPTH: usize = 2;
/// Upper bound on the pages of one batch, so that computation starts early.
const MAX_BATCH_PAGES: usize = 1024;
/// The fewest page frames the engine runs with (two batches of at least 4 pages).
pub(crate) const MIN_FRAMES: u64 = 8;
/// Bookkeeping not sized per vertex or per page (batches, request lists, thread stacks' use).
pub(crate) const FIXED_OVERHEAD_BYTES: u64 = 4 << 20;

/// A bit per vertex.
#[derive(Debug, Clone)]
struct Bitmap {
    words: Vec<u64>,
}

impl Bitmap {
    fn new(n: u64) -> Bitmap {
        Bitmap { words: vec![0; n.div_ceil(64) as usize] }
    }
    fn set(&mut self, v: u64) {
        self.words[(v / 64) as usize] |= 1 << (v % 64);
    }
    fn count(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }
    fn clear(&mut self) {
        self.words.fill(0);
    }
    /// The first set bit at or after `from`.
    fn next_one(&self, from: u64) -> Option<u64> {
        let mut word = (from / 64) as usize;
        if word >= self.words.len() {
            return None;
        }
        let mut bits = self.words[word] & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some(word as u64 * 64 + bits.trailing_zeros() as u64);
            }
            word += 1;
            if word >= self.words.len() {
                return None;
            }
            bits = self.words[word];
        }
    }
    fn iter_ones(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                Some(i as u64 * 64 + b)
            })
        })
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
    /// The ledger charges of the engine's memory, held while it lives in the runner.
    _charges: Vec<Charge>,
}

/// A static-cache selection ([`CacheEngine::selection`]).
struct Selected {
    /// The selected vertices, ascending.
    vertices: Vec<u64>,
    figures: CacheSelection,
    /// GVS's resident copy of the `csr-out` targets, when it held one, with its ledger charge.
    resident: Option<(Vec<u8>, Charge)>,
}

/// Runs `program` on the cache engine of `runner` (created on first use).
pub fn run_vertex_program<P: VertexProgram>(runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
    let mut slot = runner.cache_engine_slot().lock().unwrap_or_else(|e| e.into_inner());
    if slot.is_none() {
        *slot = Some(CacheEngine::new(runner)?);
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

/// The files read in pages, in page-numbering order: out targets, out weights, in targets,
/// in weights (those that exist).
pub(crate) fn paged_files(directed: bool, weighted: bool) -> Vec<String> {
    let mut rels: Vec<String> = vec!["csr-out/targets".into()];
    if weighted {
        rels.push("csr-out/weights".into());
    }
    if directed {
        rels.push("csr-in/targets".into());
        if weighted {
            rels.push("csr-in/weights".into());
        }
    }
    rels
}

/// The global number of each file's first page, and the total number of pages, for files of
/// `file_bytes(rel)` bytes.
pub(crate) fn page_numbering(file_bytes: impl Fn(&str) -> u64, rels: &[String], page_size: u64) -> (Vec<u64>, u64) {
    let mut total_pages = 0u64;
    let mut first = Vec::new();
    for rel in rels {
        first.push(total_pages);
        total_pages += file_bytes(rel).div_ceil(page_size);
    }
    (first, total_pages)
}

/// The paged files of `store` and their page numbering.
fn store_pages(store: &Store, page_size: u64) -> (Vec<String>, Vec<u64>, u64) {
    let rels = paged_files(store.is_directed(), store.is_weighted());
    let file_bytes = |rel: &str| store.manifest().files.get(rel).map_or(0, |f| f.bytes);
    let (first, total) = page_numbering(file_bytes, &rels, page_size);
    (rels, first, total)
}

/// The `--memory` budget that leaves `cache_bytes` (static cache plus page-cache frames with
/// their bookkeeping) to the caches of the engine on `store`: how benchmarks and tests give
/// two configurations the same cache memory. At least the engine's minimum (8 page frames) is
/// given.
pub fn budget_for_cache_bytes(store: &Store, options: &CacheOptions, cache_bytes: u64) -> u64 {
    let (_, _, total_pages) = store_pages(store, options.page_size);
    let minimum_cache = MIN_FRAMES * MemoryPlan::frame_bytes(options);
    MemoryPlan::fixed(store.num_vertices(), store.is_directed(), total_pages, options) + cache_bytes.max(minimum_cache)
}

/// How the budget is split (see the module doc): the one sum behind the plan's parts and the
/// engine's ledger charges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoryPlan {
    reserved_state: u64,
    offsets: u64,
    page_table: u64,
    /// Static cache and page-cache frames together (and what is too small for a frame).
    cache: u64,
    static_cache: u64,
    frames: usize,
    frame_bytes: u64,
}

impl MemoryPlan {
    /// Splits `budget` for `vertices` (offsets of two layouts when `directed`) paged in
    /// `total_pages`, checking that something is left for caching.
    pub(crate) fn new(
        vertices: u64,
        directed: bool,
        total_pages: u64,
        budget: u64,
        options: &CacheOptions,
    ) -> Result<MemoryPlan> {
        let reserved_state = vertices * options.state_bytes_per_vertex;
        let offsets = (vertices + 1) * 8 * if directed { 2 } else { 1 };
        let page_table = PageCache::page_table_bytes(total_pages);
        let fixed = MemoryPlan::fixed(vertices, directed, total_pages, options);
        let frame_bytes = MemoryPlan::frame_bytes(options);
        let minimum = fixed + MIN_FRAMES * frame_bytes;
        if budget < minimum {
            return Err(Error::MemoryBudget(format!(
                "the cache engine needs at least {} for this graph ({vertices} vertices: {} of vertex state, {} of \
                 offsets, {} of page table, and 8 pages of cache) but the budget is {}",
                format_size(minimum),
                format_size(reserved_state),
                format_size(offsets),
                format_size(page_table),
                format_size(budget)
            )));
        }
        let cache = budget - fixed;
        let mut static_cache = match options.selection {
            SelectionMethod::None => 0,
            _ => (cache as f64 * options.static_cache_share) as u64,
        };
        static_cache = static_cache.min(cache - MIN_FRAMES * frame_bytes);
        let frames = ((cache - static_cache) / frame_bytes) as usize;
        Ok(MemoryPlan { reserved_state, offsets, page_table, cache, static_cache, frames, frame_bytes })
    }

    /// Memory taken before any cache: reserved vertex state, offsets, page table and fixed
    /// bookkeeping.
    fn fixed(vertices: u64, directed: bool, total_pages: u64, options: &CacheOptions) -> u64 {
        let offsets = (vertices + 1) * 8 * if directed { 2 } else { 1 };
        vertices * options.state_bytes_per_vertex
            + offsets
            + PageCache::page_table_bytes(total_pages)
            + FIXED_OVERHEAD_BYTES
    }

    fn frame_bytes(options: &CacheOptions) -> u64 {
        options.page_size + PageCache::metadata_bytes_per_frame(options.page_size)
    }

    /// What the engine holds before its caches, and keeps for as long as it lives.
    pub(crate) fn fixed_parts(&self) -> [MemoryPart; 3] {
        [
            MemoryPart::new("offsets", self.offsets),
            MemoryPart::new("page table", self.page_table),
            MemoryPart::new("bookkeeping", FIXED_OVERHEAD_BYTES),
        ]
    }

    /// What the engine holds once the static-cache selection is done: the vertex state it
    /// reserves and the caches.
    pub(crate) fn cache_parts(&self) -> [MemoryPart; 3] {
        [
            MemoryPart::new("vertex state", self.reserved_state),
            MemoryPart::new("static cache", self.static_cache),
            MemoryPart::new("page cache", self.frames as u64 * self.frame_bytes),
        ]
    }
}

impl CacheEngine {
    fn new(runner: &Runner) -> Result<CacheEngine> {
        let options = runner.options().cache.clone();
        let store = runner.store();
        let page_size = options.page_size;
        if page_size < 512 || page_size % 512 != 0 || page_size > (64 << 20) {
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
        let directed = store.is_directed();

        let (rels, sizes, total_pages) = store_pages(store, page_size);
        let plan = MemoryPlan::new(n, directed, total_pages, runner.memory().bytes(), &options)?;
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

        let out_layout = store.csr(Direction::Out)?;
        let out_offsets = read_all_offsets(&out_layout)?;
        let target_bytes = out_layout.target_bytes;

        // The static cache: select (or load the saved selection), then load the lists.
        let static_cache = if options.selection != SelectionMethod::None && plan.static_cache > 0 {
            let edge_bytes = target_bytes + if weighted { 8 } else { 0 };
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
            if rel.ends_with("/targets") && page_size % target_bytes == 0 {
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
        let inn = if directed {
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
            _charges: charges,
        })
    }

    /// The saved selection for these parameters, or a new one (saved in the store).
    fn selection(
        runner: &Runner,
        layout: &crate::store::CsrLayout,
        out_offsets: &[u64],
        plan: MemoryPlan,
        edge_bytes: u64,
    ) -> Result<Selected> {
        let options = &runner.options().cache;
        let store = runner.store();
        let method = options.selection;
        let mut key = format!("{}-p{}-b{}-e{}", method.name(), options.page_size, plan.static_cache, edge_bytes);
        match method {
            SelectionMethod::Gvs => key.push_str(&format!("-k{}", options.gvs_rounds)),
            SelectionMethod::Random => key.push_str(&format!("-s{}", options.seed)),
            _ => {}
        }
        let layout_name = format!("static-cache-selection/{key}");
        let rel = format!("cache/selection-{key}.u64");
        if let Some(damaged) = store.damaged_layout(&layout_name) {
            return Err(damaged);
        }
        // Read the manifest afresh: another run may have saved the selection since we opened.
        let manifest = Manifest::read(&store.dir().join(MANIFEST_FILE))?;
        if let (Some(_), Some(entry)) = (manifest.layouts.get(&layout_name), manifest.files.get(&rel)) {
            let started = Instant::now();
            let file = store.file(&rel)?;
            if file.len() == entry.bytes && file.len() % 8 == 0 {
                let selected = crate::store::files::u64s_from_le_bytes(&file.read_all()?);
                if selected.iter().all(|&v| v < store.num_vertices()) {
                    let figures = CacheSelection {
                        selection_source: "loaded from the store",
                        selection_seconds: started.elapsed().as_secs_f64(),
                        selection_bytes_read: None,
                    };
                    return Ok(Selected { vertices: selected, figures, resident: None });
                }
            }
        }
        let started = Instant::now();
        let io_before = store.counters().snapshot();
        // The selection runs before the caches and the program state exist, so it may use
        // their memory: GVS holds the lists too when they fit (selection.rs, "What is
        // resident"), else it streams them once per round.
        let pages = layout.targets.len().div_ceil(options.page_size);
        let available = plan.cache + plan.reserved_state;
        let n = store.num_vertices();
        let targets_bytes = layout.arcs * layout.target_bytes;
        let resident =
            method == SelectionMethod::Gvs && working_bytes(method, n, pages, 0) + targets_bytes <= available;
        let chunk_edges = if resident { 0 } else { chunk_edges_within(n, pages, available) };
        let needed = working_bytes(method, n, pages, chunk_edges) + if resident { targets_bytes } else { 0 };
        if needed > available {
            return Err(Error::MemoryBudget(format!(
                "{} selection needs about {} of working memory but the cache and vertex state have {}",
                method.name(),
                format_size(needed),
                format_size(available)
            )));
        }
        let working = runner.ledger().charge("static cache selection", needed)?;
        let indeg = in_degrees(store)?;
        let bar =
            runner.progress().start(&format!("static cache selection ({})", method.name()), None, ProgressUnit::Items);
        let targets = if resident {
            let all = layout.read_all_encoded_targets()?;
            crate::runtime::direct::drop_from_os_cache(layout.targets.raw(), 0, layout.targets.len());
            Some(all)
        } else {
            None
        };
        let input = SelectionInput {
            layout,
            out_offsets,
            in_degree: &indeg,
            page_size: options.page_size,
            budget_bytes: plan.static_cache,
            edge_bytes,
            rounds: options.gvs_rounds,
            seed: options.seed,
            lists: match &targets {
                Some(all) => Lists::Resident(all),
                None => Lists::Streamed { chunk_edges },
            },
        };
        let selected = select(method, &input)?;
        bar.finish();
        let seconds = started.elapsed().as_secs_f64();
        let figures = CacheSelection {
            selection_source: "computed",
            selection_seconds: seconds,
            selection_bytes_read: Some(store.counters().snapshot().since(&io_before).bytes_read),
        };
        Self::save_selection(store, &layout_name, &rel, &selected, method, options, plan, edge_bytes, seconds)?;
        // The resident lists stay charged until the static cache has taken its lists from them.
        Ok(Selected { vertices: selected, figures, resident: targets.map(|all| (all, working)) })
    }

    #[allow(clippy::too_many_arguments)]
    fn save_selection(
        store: &Store,
        layout_name: &str,
        rel: &str,
        selected: &[u64],
        method: SelectionMethod,
        options: &CacheOptions,
        plan: MemoryPlan,
        edge_bytes: u64,
        seconds: f64,
    ) -> Result<()> {
        let _building = store.lock_builds()?;
        let mut writer = StoreFileWriter::create(&store.path(rel), store.counters().clone())?;
        for &v in selected {
            writer.write_u64(v)?;
        }
        let entry: FileEntry = writer.finish()?;
        let mut params = Map::new();
        params.insert("method".into(), method.name().into());
        params.insert("page_size".into(), options.page_size.into());
        params.insert("budget_bytes".into(), plan.static_cache.into());
        params.insert("edge_bytes".into(), edge_bytes.into());
        params.insert("gvs_rounds".into(), options.gvs_rounds.into());
        params.insert("seed".into(), options.seed.into());
        params.insert("vertices".into(), (selected.len() as u64).into());
        params.insert("seconds".into(), json!(seconds));
        let layout = LayoutEntry { files: vec![rel.to_string()], bytes: entry.bytes, params };
        let mut fresh = store.reopen()?;
        fresh.add_layout(layout_name, layout, vec![(rel.to_string(), entry)])
    }

    fn run<P: VertexProgram>(&mut self, runner: &Runner, program: &P) -> Result<Vec<P::Value>> {
        let per_vertex = (std::mem::size_of::<P::Value>() + std::mem::size_of::<P::Msg>()) as u64 + 1;
        if per_vertex > self.options.state_bytes_per_vertex {
            return Err(Error::MemoryBudget(format!(
                "this program keeps {per_vertex} bytes per vertex but the cache engine reserves {} \
                 (CacheOptions::state_bytes_per_vertex)",
                self.options.state_bytes_per_vertex
            )));
        }
        let info = runner.graph_info();
        let n = self.vertices;
        let directions: &[Direction] = match (program.direction(), info.directed) {
            (EdgeDirection::Out, _) | (EdgeDirection::Both, false) => &[Direction::Out],
            (EdgeDirection::In, _) => &[Direction::In],
            (EdgeDirection::Both, true) => &[Direction::Out, Direction::In],
        };
        let with_weights = program.uses_weights() && info.weighted;
        let parts = parts::parts_within::<P>(self.options.state_bytes_per_vertex, rayon::current_num_threads());
        self.figures.scatter_parts = parts as u64;
        let mut parts = (parts > 1).then(|| Parts::new(parts, n, program.identity()));

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

/// A part of one vertex's list read through the page cache: edges `[first, end)`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    vertex: u64,
    first: u64,
    end: u64,
}

/// The requests of one batch: its segments, the frames it pinned, and where its reads report.
struct Batch {
    segments: Vec<Segment>,
    pinned: Vec<usize>,
    done: Receiver<Result<()>>,
    reads: usize,
}

/// Where the scan of the active vertices stands.
struct Cursor {
    next: Option<u64>,
    /// First edge still to do of `next` when its list was split across batches.
    resume_edge: Option<u64>,
}

/// One scatter pass over the frontier in one direction.
struct Frontier<'a> {
    options: &'a CacheOptions,
    page_cache: &'a mut PageCache,
    files: &'a [PagedFile],
    adjacency: &'a Adjacency,
    static_cache: Option<&'a StaticCache>,
    /// The cached lists were scattered already ([`Parallel::static_lists`]): skip them.
    static_scattered: bool,
    with_weights: bool,
    counters: &'a mut EngineCounters,
}

impl Frontier<'_> {
    fn max_batch_pages(&self) -> usize {
        (self.page_cache.frames() / PIPELINE_DEPTH).clamp(2, MAX_BATCH_PAGES)
    }

    fn scatter(&mut self, active: &Bitmap, sink: &mut dyn Sink) -> Result<()> {
        let threads = self.options.io_threads.max(1);
        let files = self.files;
        std::thread::scope(|scope| {
            let (jobs, queue) = crossbeam_channel::unbounded::<ReadJob>();
            for _ in 0..threads {
                let queue = queue.clone();
                scope.spawn(move || {
                    for job in queue {
                        let result = perform(&files[job.request.file], &job.request);
                        let _ = job.done.send(result);
                    }
                });
            }
            let result = self.pipeline(active, sink, &jobs);
            drop(jobs);
            result
        })
    }

    fn pipeline(
        &mut self,
        active: &Bitmap,
        sink: &mut dyn Sink,
        jobs: &crossbeam_channel::Sender<ReadJob>,
    ) -> Result<()> {
        let mut cursor = Cursor { next: active.next_one(0), resume_edge: None };
        let mut in_flight: VecDeque<Batch> = VecDeque::new();
        loop {
            while in_flight.len() < PIPELINE_DEPTH && cursor.next.is_some() {
                let batch = self.build_batch(active, &mut cursor, sink, jobs)?;
                if !batch.segments.is_empty() {
                    in_flight.push_back(batch);
                }
            }
            let Some(batch) = in_flight.pop_front() else { break };
            let mut failure = None;
            for _ in 0..batch.reads {
                match batch.done.recv() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => failure = Some(e),
                    Err(_) => failure = Some(Error::invalid("a reader thread stopped unexpectedly")),
                }
            }
            if let Some(e) = failure {
                // Wait for the other batches' reads so that no reader still writes a frame.
                for other in &in_flight {
                    for _ in 0..other.reads {
                        let _ = other.done.recv();
                    }
                }
                return Err(e);
            }
            self.compute(&batch, sink);
            for &frame in &batch.pinned {
                self.page_cache.unpin(frame);
            }
        }
        Ok(())
    }

    /// Collects segments until the batch's distinct pages would exceed the limit, pins their
    /// pages, allocates frames for the missing ones and issues the merged reads. Lists in the
    /// static cache are scattered on the spot.
    fn build_batch(
        &mut self,
        active: &Bitmap,
        cursor: &mut Cursor,
        sink: &mut dyn Sink,
        jobs: &crossbeam_channel::Sender<ReadJob>,
    ) -> Result<Batch> {
        let page_size = self.options.page_size;
        let tb = self.adjacency.target_bytes;
        let weights_file = if self.with_weights { self.adjacency.weights } else { None };
        let max_pages = self.max_batch_pages();
        let mut segments = Vec::new();
        let mut pinned = Vec::new();
        let mut missing = Vec::new();
        let mut last_target_page: Option<u64> = None;
        let mut last_weight_page: Option<u64> = None;
        let pages_of = |first: u64, end: u64, width: u64| (first * width / page_size, (end * width - 1) / page_size);
        while let Some(v) = cursor.next {
            let (s, e) = (self.adjacency.offsets[v as usize], self.adjacency.offsets[v as usize + 1]);
            let start = cursor.resume_edge.unwrap_or(s);
            if start == e {
                cursor.next = active.next_one(v + 1);
                cursor.resume_edge = None;
                continue;
            }
            if start == s {
                if let Some((targets, weights)) = self.static_cache.and_then(|c| c.get(v)) {
                    if !self.static_scattered {
                        self.counters.static_hits += 1;
                        sink.lists(&[ListRun {
                            source: v,
                            targets,
                            weights: if self.with_weights { weights } else { None },
                        }]);
                    }
                    cursor.next = active.next_one(v + 1);
                    continue;
                }
            }
            let new_pages = |first: u64, end: u64, last_t: Option<u64>, last_w: Option<u64>| {
                let (t0, t1) = pages_of(first, end, tb);
                let mut count = (t1 - t0 + 1) as usize - (last_t == Some(t0)) as usize;
                if weights_file.is_some() {
                    let (w0, w1) = pages_of(first, end, 8);
                    count += (w1 - w0 + 1) as usize - (last_w == Some(w0)) as usize;
                }
                count
            };
            let mut end = e;
            let batch_pages = pinned.len();
            if batch_pages + new_pages(start, end, last_target_page, last_weight_page) > max_pages {
                if !segments.is_empty() {
                    break;
                }
                // A list larger than a batch: take as many edges as fit, the rest goes on in
                // the next batch.
                let per_edge = tb + if weights_file.is_some() { 8 } else { 0 };
                let fit = ((max_pages as u64).saturating_sub(2) * page_size / per_edge).max(1);
                end = (start + fit).min(e);
                while end > start + 1 && new_pages(start, end, last_target_page, last_weight_page) > max_pages {
                    end = start + (end - start) / 2;
                }
            }
            // Pin (and request) the pages of [start, end).
            let (t0, t1) = pages_of(start, end, tb);
            for page in t0..=t1 {
                if last_target_page != Some(page) {
                    self.need_page(self.adjacency.targets, page, &mut pinned, &mut missing)?;
                    last_target_page = Some(page);
                }
            }
            if let Some(wf) = weights_file {
                let (w0, w1) = pages_of(start, end, 8);
                for page in w0..=w1 {
                    if last_weight_page != Some(page) {
                        self.need_page(wf, page, &mut pinned, &mut missing)?;
                        last_weight_page = Some(page);
                    }
                }
            }
            self.counters.paged_lists += 1;
            segments.push(Segment { vertex: v, first: start, end });
            if end == e {
                cursor.next = active.next_one(v + 1);
                cursor.resume_edge = None;
            } else {
                cursor.resume_edge = Some(end);
                break;
            }
        }
        // Merge adjacent missing pages and issue the reads.
        let max_request_pages = ((self.options.max_request_bytes / page_size) as usize).clamp(1, MAX_PAGES_PER_REQUEST);
        // Target and weight pages were collected interleaved: sort by file and page so that
        // runs of each file merge.
        missing.sort_unstable_by_key(|&(file, page, _, _)| (file, page));
        let requests = merge_requests(&missing, max_request_pages);
        let (done_tx, done) = crossbeam_channel::unbounded();
        let reads = requests.len();
        for request in requests {
            self.counters.requests += 1;
            self.counters.pages_requested += request.frames.len() as u64;
            if request.frames.len() > 1 {
                self.counters.merged_requests += 1;
            }
            jobs.send(ReadJob { request, done: done_tx.clone() })
                .map_err(|_| Error::invalid("the reader threads stopped unexpectedly"))?;
        }
        Ok(Batch { segments, pinned, done, reads })
    }

    /// Looks `page` of `file` up; pins its frame, allocating one (and queueing a read) if absent.
    fn need_page(
        &mut self,
        file: usize,
        page: u64,
        pinned: &mut Vec<usize>,
        missing: &mut Vec<(usize, u64, page_cache::FramePtr, usize)>,
    ) -> Result<()> {
        let paged = &self.files[file];
        let global = paged.first_page + page;
        let frame = match self.page_cache.lookup(global) {
            Some(frame) => frame,
            None => {
                let valid = paged.page_bytes(page);
                let frame = self.page_cache.allocate(global, valid)?;
                missing.push((file, page, self.page_cache.frame_ptr(frame), valid));
                frame
            }
        };
        self.page_cache.pin(frame);
        pinned.push(frame);
        Ok(())
    }

    /// Scatters the segments of a batch whose reads have all completed.
    fn compute(&mut self, batch: &Batch, sink: &mut dyn Sink) {
        let page_size = self.options.page_size;
        let tb = self.adjacency.target_bytes;
        let weights_file = if self.with_weights { self.adjacency.weights } else { None };
        let targets_first_page = self.files[self.adjacency.targets].first_page;
        // First where each run lies (marking the bytes used), then the runs to the sink at once.
        let mut spans = Vec::new();
        for seg in &batch.segments {
            let mut edge = seg.first;
            while edge < seg.end {
                // The run of edges whose targets (and weights) lie in one page each.
                let t_page = edge * tb / page_size;
                let mut run_end = seg.end.min((t_page + 1) * page_size / tb);
                let w_page = edge * 8 / page_size;
                if weights_file.is_some() {
                    run_end = run_end.min((w_page + 1) * page_size / 8);
                }
                let t_frame =
                    self.page_cache.resident_frame(targets_first_page + t_page).expect("pinned page is resident");
                let (ts, te) =
                    ((edge * tb - t_page * page_size) as usize, (run_end * tb - t_page * page_size) as usize);
                self.page_cache.mark_used(t_frame, ts, te);
                let weights_range = weights_file.map(|wf| {
                    let w_frame = self
                        .page_cache
                        .resident_frame(self.files[wf].first_page + w_page)
                        .expect("pinned page is resident");
                    let (ws, we) =
                        ((edge * 8 - w_page * page_size) as usize, (run_end * 8 - w_page * page_size) as usize);
                    self.page_cache.mark_used(w_frame, ws, we);
                    (w_frame, ws, we)
                });
                spans.push((seg.vertex, t_frame, ts, te, weights_range));
                edge = run_end;
            }
        }
        let cache = &*self.page_cache;
        let runs: Vec<ListRun> = spans
            .into_iter()
            .map(|(source, frame, ts, te, weights)| ListRun {
                source,
                targets: &cache.frame_bytes(frame)[ts..te],
                weights: weights.map(|(f, ws, we)| &cache.frame_bytes(f)[ws..we]),
            })
            .collect();
        sink.lists(&runs);
    }
}
