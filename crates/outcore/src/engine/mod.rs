//! Engines: the strategies that run a program over a store within a memory budget.
//!
//! An algorithm hands its program to a [`Runner`]; the runner picks the engine (`--engine`,
//! or `auto`), runs it, and collects [`RunStats`]. Engines never parse arguments or print:
//! they report through [`Progress`] and record per-iteration figures with
//! [`Runner::record_iteration`].

pub mod cache;
pub mod inmem;
pub mod nwsm;
pub mod pregel;
pub mod shards;
pub mod stream;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::program::{GraphInfo, PregelProgram, VertexProgram, Wire};
use crate::runtime::io::IoSnapshot;
use crate::runtime::{peak_rss_bytes, CancelToken, IoCounters, MemoryBudget, NoProgress, Progress};
use crate::store::Store;
use crate::VertexId;

/// The engines a user can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// Choose from the program kind and the graph's size against the budget.
    Auto,
    /// The reference engine: everything in memory, simple and obviously correct.
    InMemory,
    /// Semi-external edge-centric streaming with dynamic selective scheduling (Redio).
    Stream,
    /// Semi-external vertex-centric with page cache, BASC static cache and Norder.
    Cache,
    /// Fully external parallel sliding windows with dynamic shards (GraphChi + Vora et al.).
    Shards,
    /// Distributed out-of-core Pregel over W ranks (GraphD; `mpirun -n W`).
    Pregel,
    /// Nested windowed streaming for neighborhood queries (TurboGraph++): tc, lcc.
    Nwsm,
}

impl EngineKind {
    pub const NAMES: &'static [&'static str] = &["auto", "inmem", "stream", "cache", "shards", "pregel", "nwsm"];

    pub fn parse(name: &str) -> Result<EngineKind> {
        match name {
            "auto" => Ok(EngineKind::Auto),
            "inmem" | "in-memory" => Ok(EngineKind::InMemory),
            "stream" => Ok(EngineKind::Stream),
            "cache" => Ok(EngineKind::Cache),
            "shards" => Ok(EngineKind::Shards),
            "pregel" => Ok(EngineKind::Pregel),
            "nwsm" => Ok(EngineKind::Nwsm),
            other => Err(Error::invalid(format!("unknown engine '{other}' (available: {})", Self::NAMES.join(", ")))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Auto => "auto",
            EngineKind::InMemory => "inmem",
            EngineKind::Stream => "stream",
            EngineKind::Cache => "cache",
            EngineKind::Shards => "shards",
            EngineKind::Pregel => "pregel",
            EngineKind::Nwsm => "nwsm",
        }
    }
}

/// Options common to every engine.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub engine: EngineKind,
    pub memory: MemoryBudget,
    /// Options of the stream engine (schedule, gap threshold, I/O mode).
    pub stream: stream::StreamOptions,
    /// Options of the cache engine (page size, static cache).
    pub cache: cache::CacheOptions,
    /// Options of the shards engine (intervals, dynamic-shard policy).
    pub shards: shards::ShardsOptions,
    /// Options of the pregel engine (message file size, recoded mode; the ranks are the
    /// runner's transport, [`Runner::with_transport`]).
    pub pregel: pregel::PregelOptions,
    /// Options of the nwsm engine (page size, ranks).
    pub nwsm: nwsm::NwsmOptions,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            engine: EngineKind::Auto,
            memory: MemoryBudget::default_for_machine(),
            stream: stream::StreamOptions::default(),
            cache: cache::CacheOptions::default(),
            shards: shards::ShardsOptions::default(),
            pregel: pregel::PregelOptions::default(),
            nwsm: nwsm::NwsmOptions::default(),
        }
    }
}

/// Figures of one iteration (superstep). Engine-specific figures go into `extra`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IterationStats {
    pub iteration: usize,
    pub active_vertices: u64,
    pub edges_processed: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub seconds: f64,
    /// How the iteration delivered messages, where the engine chose
    /// ([`VertexProgram::supports_pull`](crate::program::VertexProgram::supports_pull)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Push (active vertices scatter along their arcs) or pull (vertices that want messages scan
/// their reverse arcs for active sources): Beamer's direction optimisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    Push,
    Pull,
}

/// Figures of a whole run, written by `--stats-json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunStats {
    pub algorithm: String,
    pub engine: String,
    /// Why `auto` chose this engine (empty when chosen by the user).
    pub engine_reason: String,
    pub memory_budget_bytes: u64,
    pub vertices: u64,
    pub edges: u64,
    pub iterations: usize,
    pub wall_seconds: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_requests: u64,
    pub peak_rss_bytes: u64,
    pub per_iteration: Vec<IterationStats>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Runs programs on a store with one engine and budget, and collects the run's figures.
pub struct Runner {
    store: Store,
    options: RunOptions,
    engine: EngineKind,
    engine_reason: String,
    progress: Arc<dyn Progress>,
    cancel: CancelToken,
    started: Instant,
    io_at_start: IoSnapshot,
    stats: Mutex<RunStats>,
    /// The cache engine's files and caches, created on first use and kept across the program
    /// runs of one algorithm.
    cache_engine: Mutex<Option<cache::CacheEngine>>,
    /// The ranks of a distributed run this process belongs to (e.g. under `mpirun`); `None`:
    /// a single process (multi-rank engines then run their ranks in-process).
    transport: Option<Arc<dyn crate::transport::Transport>>,
}

impl Runner {
    /// A runner over `store`; reads are counted from now on in fresh counters.
    pub fn new(store: &Store, options: RunOptions) -> Runner {
        let counters = IoCounters::new();
        let store = store.with_counters(counters.clone());
        let (engine, engine_reason) = choose_engine(&store, &options);
        let stats = RunStats {
            engine: engine.name().to_string(),
            engine_reason: engine_reason.clone(),
            memory_budget_bytes: options.memory.bytes(),
            vertices: store.num_vertices(),
            edges: store.manifest().edges,
            ..RunStats::default()
        };
        Runner {
            store,
            options,
            engine,
            engine_reason,
            progress: Arc::new(NoProgress),
            cancel: CancelToken::new(),
            started: Instant::now(),
            io_at_start: counters.snapshot(),
            stats: Mutex::new(stats),
            cache_engine: Mutex::new(None),
            transport: None,
        }
    }

    /// Makes this process one rank of a distributed run: the pregel and nwsm engines then run
    /// this rank of the job (under `mpirun`, or a thread of an [`InProcessTransport`] job).
    ///
    /// [`InProcessTransport`]: crate::transport::InProcessTransport
    pub fn with_transport(mut self, transport: Arc<dyn crate::transport::Transport>) -> Runner {
        self.transport = Some(transport);
        self
    }

    pub fn transport(&self) -> Option<&Arc<dyn crate::transport::Transport>> {
        self.transport.as_ref()
    }

    pub fn with_progress(mut self, progress: Arc<dyn Progress>) -> Runner {
        self.progress = progress;
        self
    }

    pub fn with_cancel(mut self, cancel: CancelToken) -> Runner {
        self.cancel = cancel;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    pub fn engine(&self) -> EngineKind {
        self.engine
    }

    pub fn engine_reason(&self) -> &str {
        &self.engine_reason
    }

    pub fn progress(&self) -> &dyn Progress {
        self.progress.as_ref()
    }

    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    pub fn graph_info(&self) -> GraphInfo {
        GraphInfo {
            num_vertices: self.store.num_vertices(),
            num_arcs: self.store.num_arcs(),
            directed: self.store.is_directed(),
            weighted: self.store.is_weighted(),
        }
    }

    /// The dense id of a vertex given by its original id as the user typed it.
    pub fn resolve_vertex(&self, original: &str) -> Result<VertexId> {
        self.store.ids()?.resolve(original)
    }

    /// Whether dense ids are in ascending original-id order (no ordering applied, or the last
    /// one applied was `none`), so that "smaller dense id" means "smaller original id".
    pub fn dense_order_is_original(&self) -> bool {
        self.store.manifest().orderings.last().map_or(true, |o| o == "none")
    }

    /// The dense id of the vertex whose original id has rank `rank` (0-based) in ascending
    /// original-id order. Lets algorithms sample vertices independently of any reordering.
    pub fn vertex_at_original_rank(&self, rank: u64) -> Result<VertexId> {
        let n = self.store.num_vertices();
        if rank >= n {
            return Err(Error::invalid(format!("rank {rank} out of range ({n} vertices)")));
        }
        if self.dense_order_is_original() {
            return Ok(rank);
        }
        self.store.file(crate::store::ids::BY_ORIGINAL)?.read_u64_at(rank)
    }

    /// `rank[v]`: the rank of each dense id's original id in ascending original-id order, or
    /// `None` when it is the dense id itself ([`dense_order_is_original`](Self::dense_order_is_original)).
    /// Algorithms whose output depends on the order of ids (smallest-label rules of WCC and
    /// CDLP) compare ranks instead of dense ids on reordered stores.
    pub fn original_ranks(&self) -> Result<Option<Vec<u64>>> {
        if self.dense_order_is_original() {
            return Ok(None);
        }
        let by_original = self.store.file(crate::store::ids::BY_ORIGINAL)?.read_all()?;
        let mut rank = vec![0u64; self.store.num_vertices() as usize];
        for (r, chunk) in by_original.chunks_exact(8).enumerate() {
            rank[u64::from_le_bytes(chunk.try_into().unwrap()) as usize] = r as u64;
        }
        Ok(Some(rank))
    }

    /// Runs a vertex program to completion and returns the final values in dense-id order.
    pub fn run_vertex_program<P: VertexProgram>(&self, program: &P) -> Result<Vec<P::Value>> {
        // `EdgeDirection::In` is newer than some engines: those not listed here refuse it
        // rather than silently sending along out-edges.
        let supports_in_edges = matches!(
            self.engine,
            EngineKind::InMemory | EngineKind::Auto | EngineKind::Cache | EngineKind::Stream | EngineKind::Shards
        );
        if program.direction() == crate::program::EdgeDirection::In && !supports_in_edges {
            return Err(not_available(self.engine, "programs that send along in-edges (EdgeDirection::In)"));
        }
        match self.engine {
            EngineKind::InMemory | EngineKind::Auto => inmem::run_vertex_program(self, program),
            EngineKind::Stream => stream::run_vertex_program(self, program),
            EngineKind::Cache => cache::run_vertex_program(self, program),
            EngineKind::Shards => shards::run_vertex_program(self, program),
            EngineKind::Nwsm => Err(not_available(self.engine, "vertex programs")),
            EngineKind::Pregel => Err(not_available(
                self.engine,
                "this algorithm (its values or messages have no Wire encoding to travel between ranks)",
            )),
        }
    }

    /// Runs a vertex program and hands every final value to `visit` in dense-id order, instead
    /// of returning them all. Engines that keep values on disk (`shards`) read them back in
    /// chunks, so a caller that keeps only a projection (mssp keeps one distance per source of
    /// a batch of up to 32) never holds every value at once. Other engines visit their vector.
    pub fn run_vertex_program_visit<P: VertexProgram>(
        &self,
        program: &P,
        mut visit: impl FnMut(VertexId, &P::Value),
    ) -> Result<()> {
        match self.engine {
            EngineKind::Shards => shards::run_vertex_program_visit(self, program, visit),
            _ => {
                for (v, value) in self.run_vertex_program(program)?.iter().enumerate() {
                    visit(v as VertexId, value);
                }
                Ok(())
            }
        }
    }

    /// [`run_vertex_program`](Self::run_vertex_program) for programs whose values and messages
    /// can travel between ranks: these also run on the distributed `pregel` engine, where rank 0
    /// gets every value and the other ranks an empty vector.
    pub fn run_vertex_program_wire<P: VertexProgram>(&self, program: &P) -> Result<Vec<P::Value>>
    where
        P::Value: Wire,
        P::Msg: Wire,
    {
        match self.engine {
            EngineKind::Pregel => pregel::run_vertex_program(self, program),
            _ => self.run_vertex_program(program),
        }
    }

    /// [`run_pregel`](Self::run_pregel) for programs whose values and messages can travel between
    /// ranks (see [`run_vertex_program_wire`](Self::run_vertex_program_wire)).
    pub fn run_pregel_wire<P: PregelProgram>(&self, program: &P) -> Result<Vec<P::Value>>
    where
        P::Value: Wire,
        P::Msg: Wire,
    {
        match self.engine {
            EngineKind::Pregel => pregel::run_pregel(self, program),
            _ => self.run_pregel(program),
        }
    }

    /// This process's rank and the number of ranks of the run (0 and 1 except on the pregel
    /// engine under mpirun or with an in-process transport).
    pub fn rank(&self) -> (usize, usize) {
        match (&self.transport, self.engine) {
            (Some(t), EngineKind::Pregel) => (t.rank(), t.ranks()),
            _ => (0, 1),
        }
    }

    /// Runs a Pregel program to completion and returns the final values in dense-id order.
    pub fn run_pregel<P: PregelProgram>(&self, program: &P) -> Result<Vec<P::Value>> {
        match self.engine {
            EngineKind::InMemory | EngineKind::Auto => inmem::run_pregel(self, program),
            other => Err(not_available(other, "Pregel programs")),
        }
    }

    /// Runs a k-walk neighborhood query (TurboGraph++, [`nwsm::NeighborhoodQuery`]): with nested
    /// windowed streaming on nwsm, on the whole graph in memory on inmem.
    pub fn run_neighborhood_query<Q: nwsm::NeighborhoodQuery>(
        &self,
        query: &Q,
    ) -> Result<nwsm::QueryResult<Q::Output>> {
        match self.engine {
            EngineKind::Nwsm => nwsm::run_query(self, query),
            EngineKind::InMemory | EngineKind::Auto => inmem::run_neighborhood_query(self, query),
            other => Err(not_available(other, "neighborhood queries")),
        }
    }

    /// True when the engine runs neighborhood queries rather than Pregel programs, so that
    /// algorithms with both forms (lcc) choose the query.
    pub fn prefers_neighborhood_queries(&self) -> bool {
        self.engine == EngineKind::Nwsm
    }

    /// The cache engine's state (see [`cache`]).
    pub(crate) fn cache_engine_slot(&self) -> &Mutex<Option<cache::CacheEngine>> {
        &self.cache_engine
    }

    /// Number of iterations recorded so far (the next one's index, for engines that run an
    /// algorithm's iterations as separate queries).
    pub fn iterations_recorded(&self) -> usize {
        self.stats.lock().unwrap().per_iteration.len()
    }

    /// Appends one iteration's figures (engines call this once per iteration).
    pub fn record_iteration(&self, iteration: IterationStats) {
        let mut stats = self.stats.lock().unwrap();
        stats.iterations = stats.iterations.max(iteration.iteration + 1);
        stats.per_iteration.push(iteration);
    }

    /// Adds a run-level figure (e.g. `"page_cache_hits"`).
    pub fn record_extra(&self, key: &str, value: serde_json::Value) {
        self.stats.lock().unwrap().extra.insert(key.to_string(), value);
    }

    /// I/O counted so far in this run.
    pub fn io_snapshot(&self) -> IoSnapshot {
        self.store.counters().snapshot()
    }

    /// Closes the run and returns its figures.
    pub fn finish(&self, algorithm: &str) -> RunStats {
        let mut stats = self.stats.lock().unwrap().clone();
        let io = self.io_snapshot().since(&self.io_at_start);
        stats.algorithm = algorithm.to_string();
        stats.wall_seconds = self.started.elapsed().as_secs_f64();
        stats.bytes_read = io.bytes_read;
        stats.bytes_written = io.bytes_written;
        stats.read_requests = io.read_requests;
        stats.peak_rss_bytes = peak_rss_bytes();
        stats
    }
}

fn not_available(engine: EngineKind, what: &str) -> Error {
    Error::Unsupported(format!("the {} engine does not run {what}; use --engine inmem", engine.name()))
}

/// Resolves `auto` and explains the choice.
fn choose_engine(store: &Store, options: &RunOptions) -> (EngineKind, String) {
    match options.engine {
        EngineKind::Auto => {
            let needed = inmem::estimated_memory_bytes(store);
            (
                EngineKind::InMemory,
                format!(
                    "auto: the in-memory engine needs about {} and the budget is {}",
                    crate::runtime::format_size(needed),
                    options.memory
                ),
            )
        }
        chosen => (chosen, String::new()),
    }
}
