//! Engines: the strategies that run a program over a store within a memory budget.
//!
//! An algorithm hands its program to a [`Runner`]; the runner picks the engine (`--engine`,
//! or `auto`), runs it, and collects [`RunStats`]. Engines never parse arguments or print:
//! they report through [`Progress`] and record per-iteration figures with
//! [`Runner::record_iteration`].

pub mod cache;
pub mod inmem;
mod inmem_plan;
pub mod layouts;
pub mod nwsm;
pub mod planner;
pub mod pregel;
pub mod shards;
pub mod stats;
pub mod stream;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::program::{GraphInfo, PregelProgram, VertexProgram, Wire};
use crate::runtime::io::IoSnapshot;
use crate::runtime::{
    format_size, peak_rss_bytes, CancelToken, Charge, IoCounters, MemoryBudget, MemoryLedger, NoProgress, Progress,
};
use crate::store::Store;
use crate::VertexId;
use planner::{CostModel, Explanation, PlanContext, PlanGraph, ProgramShape};
pub use stats::{
    CacheIteration, CacheRun, CacheSelection, Delivery, EdgePassIteration, EdgePassRun, InMemoryIteration,
    InMemoryPregelIteration, IterationFigures, IterationStats, NwsmQuery, PregelIteration, PregelRankFigures,
    PregelRun, ReadMode, RunFigures, RunStats, ShardsIteration, ShardsMemoryIteration, ShardsMemorySizing, ShardsRun,
    StaticCacheLoad, StreamIteration, StreamRun,
};

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

/// Ligra's switch (PPoPP'13 §4, after Beamer et al. SC'12), shared by the engines that pull: an
/// iteration pulls when the frontier's vertices plus their arcs exceed `arcs / PULL_DIVISOR`.
pub const PULL_DIVISOR: u64 = 20;

/// Runs programs on a store with one engine and budget, and collects the run's figures.
pub struct Runner {
    store: Store,
    options: RunOptions,
    /// The engine asked for (`Auto`: the planner chooses at the first program run).
    requested: EngineKind,
    /// The engine that runs, once chosen, with why and the planner's table.
    chosen: Mutex<Option<Chosen>>,
    /// Print the planner's table when choosing (`--explain`).
    explain: bool,
    /// The forms each program run offered, in order (see [`requested_forms`](Self::requested_forms)).
    requests: Mutex<Vec<Vec<ProgramShape>>>,
    /// Set by [`choose_form`](Self::choose_form): the next program run is the chosen form,
    /// already recorded among the alternatives.
    form_chosen: std::sync::atomic::AtomicBool,
    /// Engines that refused at run time under `auto`, with why: not chosen again.
    failed: Mutex<Vec<(EngineKind, String)>>,
    /// The store as the planner sees it, read at the first choice.
    plan_graph: std::sync::OnceLock<PlanGraph>,
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
    /// Bytes of the budget an algorithm holds itself beside the engine (see
    /// [`reserve_memory`](Self::reserve_memory)); engines plan within the rest.
    reserved: std::sync::atomic::AtomicU64,
    /// The run's memory ledger over the whole budget: engines charge the parts they hold,
    /// reservations their state ([`ledger`](Self::ledger)).
    ledger: MemoryLedger,
    /// The ledger charges of [`reserve_memory`](Self::reserve_memory), held for the run.
    reservations: Mutex<Vec<Charge>>,
}

impl Runner {
    /// A runner over `store`; reads are counted from now on in fresh counters.
    pub fn new(store: &Store, options: RunOptions) -> Runner {
        let counters = IoCounters::new();
        let store = store.with_counters(counters.clone());
        let requested = options.engine;
        let ledger = MemoryLedger::new(options.memory);
        let stats = RunStats {
            engine: requested.name().to_string(),
            memory_budget_bytes: options.memory.bytes(),
            vertices: store.num_vertices(),
            edges: store.manifest().edges,
            ..RunStats::default()
        };
        Runner {
            store,
            options,
            requested,
            chosen: Mutex::new(None),
            explain: false,
            requests: Mutex::new(Vec::new()),
            form_chosen: std::sync::atomic::AtomicBool::new(false),
            plan_graph: std::sync::OnceLock::new(),
            failed: Mutex::new(Vec::new()),
            progress: Arc::new(NoProgress),
            cancel: CancelToken::new(),
            started: Instant::now(),
            io_at_start: counters.snapshot(),
            stats: Mutex::new(stats),
            cache_engine: Mutex::new(None),
            transport: None,
            reserved: std::sync::atomic::AtomicU64::new(0),
            ledger,
            reservations: Mutex::new(Vec::new()),
        }
    }

    /// The memory the engines may plan with: the run's budget less what the algorithm
    /// reserved for state it keeps itself.
    pub fn memory(&self) -> MemoryBudget {
        let reserved = self.reserved.load(std::sync::atomic::Ordering::Relaxed);
        MemoryBudget::new(self.options.memory.bytes().saturating_sub(reserved))
    }

    /// Takes `bytes` of the budget for state the algorithm keeps beside the engine (e.g.
    /// Louvain's community arrays), so the engine plans within the rest and the whole run stays
    /// within the budget; `what` names the state in the error when it does not fit.
    pub fn reserve_memory(&self, bytes: u64, what: &str) -> Result<()> {
        let charge = self.hold_memory(bytes, what)?.for_the_run();
        self.reservations.lock().unwrap().extend(charge);
        Ok(())
    }

    /// Takes `bytes` of the budget as [`reserve_memory`](Self::reserve_memory) does, until the
    /// returned reservation is dropped (the state of one of an algorithm's forms).
    fn hold_memory(&self, bytes: u64, what: &str) -> Result<Reservation<'_>> {
        let left = self.memory().bytes();
        if bytes > left {
            return Err(Error::MemoryBudget(format!(
                "{what} needs {}, and {} of the memory budget is left; raise --memory",
                format_size(bytes),
                format_size(left)
            )));
        }
        // Nothing to hold: no charge, so no empty "algorithm state" part in the ledger's figures.
        let charge = if bytes == 0 { None } else { Some(self.ledger.charge("algorithm state", bytes)?) };
        self.reserved.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        Ok(Reservation { reserved: &self.reserved, charge })
    }

    /// The run's memory ledger (`runtime::ledger`): every engine charges the parts of its
    /// sizing against it as it sets them up, and the run's figures report what it held.
    pub fn ledger(&self) -> &MemoryLedger {
        &self.ledger
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

    /// The engine that runs: the one asked for, or under `auto` the planner's choice (still
    /// `Auto` before the first program run).
    pub fn engine(&self) -> EngineKind {
        self.chosen.lock().unwrap().as_ref().map_or(self.requested, |c| c.engine)
    }

    /// Why `auto` chose the engine (empty when chosen by the user or not yet chosen).
    pub fn engine_reason(&self) -> String {
        self.chosen.lock().unwrap().as_ref().map_or(String::new(), |c| c.reason.clone())
    }

    /// The planner's table of the last choice (every engine and form: fits or not, memory,
    /// expected bytes and seconds), once a program has run.
    pub fn explanation(&self) -> Option<Explanation> {
        self.chosen.lock().unwrap().as_ref().map(|c| c.explanation.clone())
    }

    /// The forms every program run of this Runner offered so far, one list per run (an
    /// algorithm's alternatives): an engine runs the algorithm when it runs one form of each.
    pub fn requested_forms(&self) -> Vec<Vec<ProgramShape>> {
        self.requests.lock().unwrap().clone()
    }

    /// Prints the planner's table through [`Progress::note`] when the engine is chosen.
    pub fn with_explain(mut self, explain: bool) -> Runner {
        self.explain = explain;
        self
    }

    /// The planner's view of the store (read once per Runner) and its cost model.
    fn plan_graph_and_model(&self) -> (PlanGraph, CostModel) {
        let graph = self.plan_graph.get_or_init(|| PlanGraph::of(&self.store)).clone();
        (graph, CostModel::for_store(&self.store))
    }

    /// Plans every engine for each of `shapes` (the forms of one algorithm) without running.
    pub fn explain(&self, shapes: &[ProgramShape]) -> Explanation {
        let (graph, model) = self.plan_graph_and_model();
        let ranks = self.transport.as_ref().map_or(1, |t| t.ranks());
        let ctx =
            PlanContext { graph: &graph, budget: self.memory().bytes(), options: &self.options, model: &model, ranks };
        Explanation::new(shapes, &ctx)
    }

    /// Which of an algorithm's forms runs, and on which engine: the Runner decides, not the
    /// algorithm. With an engine asked for, the first form it runs; under `auto`, the form and
    /// engine of the fastest plan within the budget (kept for the rest of the run while the
    /// engine runs the algorithm's later programs). Returns the index into `shapes`.
    pub fn choose_form(&self, shapes: &[ProgramShape]) -> Result<usize> {
        self.requests.lock().unwrap().push(shapes.to_vec());
        let choice = self.choose(shapes)?;
        self.form_chosen.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(choice.form_index)
    }

    /// The engine and form for `shapes` (see [`choose_form`](Self::choose_form)); records the
    /// choice, its reason and plan in the run's figures.
    fn choose(&self, shapes: &[ProgramShape]) -> Result<Choice> {
        let (graph, _) = self.plan_graph_and_model();
        // An engine already running this algorithm keeps running it if it can.
        let failed = self.failed.lock().unwrap().clone();
        if let Some(engine) = self.chosen.lock().unwrap().as_ref().map(|c| c.engine) {
            if let Some(i) =
                first_supported(engine, shapes, &graph).filter(|_| !failed.iter().any(|(e, _)| *e == engine))
            {
                return Ok(Choice { engine, form_index: i });
            }
        }
        let mut explanation = self.explain(shapes);
        explanation.exclude(&failed);
        if self.explain {
            self.progress.note(&explanation.to_string());
        }
        let choice = if self.requested == EngineKind::Auto {
            let ranking = explanation.ranking();
            let Some(&best) = ranking.first() else {
                let error = nothing_fits(&explanation, self.memory().bytes());
                *self.chosen.lock().unwrap() =
                    Some(Chosen { engine: EngineKind::Auto, reason: String::new(), explanation });
                return Err(error);
            };
            let row = &explanation.rows[best];
            Choice { engine: EngineKind::parse(row.plan.engine)?, form_index: row.form_index }
        } else {
            let Some(i) = first_supported(self.requested, shapes, &graph) else {
                return Err(unsupported(self.requested, shapes, &graph));
            };
            Choice { engine: self.requested, form_index: i }
        };
        self.record_choice(choice.engine, choice.form_index, explanation);
        Ok(choice)
    }

    /// Remembers the engine that runs, says why (auto), and keeps its plan for the figures.
    fn record_choice(&self, engine: EngineKind, form_index: usize, explanation: Explanation) {
        let row = explanation.rows.iter().find(|r| r.plan.engine == engine.name() && r.form_index == form_index);
        let plan = row.map(|r| r.plan.clone());
        let reason = if self.requested == EngineKind::Auto {
            let mut chosen = explanation.clone();
            chosen.chosen =
                explanation.rows.iter().position(|r| r.plan.engine == engine.name() && r.form_index == form_index);
            chosen.reason()
        } else {
            String::new()
        };
        if !reason.is_empty() {
            self.progress.note(&reason);
        }
        {
            let mut stats = self.stats.lock().unwrap();
            stats.engine = engine.name().to_string();
            stats.engine_reason = reason.clone();
            stats.plan = plan;
        }
        *self.chosen.lock().unwrap() = Some(Chosen { engine, reason, explanation });
    }

    /// Runs `run` on the chosen engine; under `auto`, an engine that turns out not to fit
    /// (its own budget check is finer than its plan) is excluded and the planner chooses again.
    fn run_on<T>(&self, shape: ProgramShape, run: impl Fn(EngineKind) -> Result<T>) -> Result<T> {
        if !self.form_chosen.swap(false, std::sync::atomic::Ordering::Relaxed) {
            self.requests.lock().unwrap().push(vec![shape]);
        }
        loop {
            let engine = self.choose(&[shape])?.engine;
            match run(engine) {
                Err(Error::MemoryBudget(why)) if self.requested == EngineKind::Auto => {
                    self.refused_when_run(engine, why)
                }
                outcome => return outcome,
            }
        }
    }

    /// Runs an algorithm that has several forms: `run` gets the index of the form the Runner
    /// chose ([`choose_form`](Self::choose_form)). Under `auto`, when every engine of the
    /// chosen form refuses at run time, or the form refuses this graph (pr's one-level queries
    /// on a multigraph), the Runner chooses again among the other forms.
    pub fn run_forms<T>(&self, shapes: &[ProgramShape], run: impl Fn(usize) -> Result<T>) -> Result<T> {
        let mut offered: Vec<usize> = (0..shapes.len()).collect();
        loop {
            let refused_before = self.failed.lock().unwrap().len();
            let subset: Vec<ProgramShape> = offered.iter().map(|&i| shapes[i]).collect();
            let form = offered[self.choose_form(&subset)?];
            let auto = self.requested == EngineKind::Auto;
            let state = shapes[form].state_bytes * self.store.num_vertices();
            // The state is held while the form runs and released when `run` returns.
            match self.hold_memory(state, "the algorithm's own state").and_then(|_state| run(form)) {
                Err(Error::MemoryBudget(_)) if auto && self.failed.lock().unwrap().len() > refused_before => {}
                Err(Error::Unsupported(why)) if auto && offered.len() > 1 => {
                    self.progress
                        .note(&format!("auto: the {} form does not fit this graph ({why})", shapes[form].form.name()));
                    offered.retain(|&i| i != form);
                    *self.chosen.lock().unwrap() = None;
                }
                outcome => return outcome,
            }
        }
    }

    /// Excludes an engine that refused at run time and says so.
    fn refused_when_run(&self, engine: EngineKind, why: String) {
        self.progress.note(&format!("auto: {} did not fit after all ({why}); choosing again", engine.name()));
        self.failed.lock().unwrap().push((engine, why));
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
        self.store.manifest().orderings.last().is_none_or(|o| o == "none")
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
        let by_original = self.dense_id_of_each_rank()?;
        let mut rank = vec![0u64; self.store.num_vertices() as usize];
        for (r, chunk) in by_original.chunks_exact(8).enumerate() {
            rank[u64::from_le_bytes(chunk.try_into().unwrap()) as usize] = r as u64;
        }
        Ok(Some(rank))
    }

    /// Labels that are original-id ranks ([`original_ranks`](Self::original_ranks)) as dense ids,
    /// in place. The store's by-original permutation is the dense id of each rank, so nothing
    /// but its file (8 bytes a vertex) is held: a run need not keep the ranks to its end.
    pub fn ranks_to_dense(&self, mut labels: Vec<VertexId>) -> Result<Vec<VertexId>> {
        if self.dense_order_is_original() {
            return Ok(labels);
        }
        let dense_of_rank = self.dense_id_of_each_rank()?;
        for label in &mut labels {
            let at = *label as usize * 8;
            *label = u64::from_le_bytes(dense_of_rank[at..at + 8].try_into().expect("8 bytes"));
        }
        Ok(labels)
    }

    /// The store's by-original file, whole: the dense id of each original-id rank, 8 bytes
    /// (little-endian) each. A file of another length than 8 bytes a vertex is an error that
    /// names it.
    fn dense_id_of_each_rank(&self) -> Result<Vec<u8>> {
        let bytes = self.store.file(crate::store::ids::BY_ORIGINAL)?.read_all()?;
        let n = self.store.num_vertices();
        if bytes.len() as u64 != n * 8 {
            return Err(Error::store(
                self.store.dir().join(crate::store::ids::BY_ORIGINAL),
                format!("holds {} bytes, not 8 for each of the {n} vertices", bytes.len()),
            ));
        }
        Ok(bytes)
    }

    /// Runs a vertex program to completion and returns the final values in dense-id order.
    pub fn run_vertex_program<P: VertexProgram>(&self, program: &P) -> Result<Vec<P::Value>> {
        self.run_on(ProgramShape::vertex(program), |engine| self.vertex_program_on(engine, program))
    }

    fn vertex_program_on<P: VertexProgram>(&self, engine: EngineKind, program: &P) -> Result<Vec<P::Value>> {
        match engine {
            EngineKind::InMemory | EngineKind::Auto => inmem::run_vertex_program(self, program),
            EngineKind::Stream => stream::run_vertex_program(self, program),
            EngineKind::Cache => cache::run_vertex_program(self, program),
            EngineKind::Shards => shards::run_vertex_program(self, program),
            EngineKind::Nwsm | EngineKind::Pregel => {
                Err(unsupported(engine, &[ProgramShape::vertex(program)], &self.plan_graph_and_model().0))
            }
        }
    }

    /// Runs a vertex program and hands every final value to `visit` in dense-id order, instead
    /// of returning them all. Engines that keep values on disk (`shards`) read them back in
    /// chunks, so a caller that keeps only a projection (mssp keeps one distance per source of
    /// a batch of up to 32) never holds every value at once. Other engines visit their vector.
    pub fn run_vertex_program_visit<P: VertexProgram>(
        &self,
        program: &P,
        visit: impl FnMut(VertexId, &P::Value),
    ) -> Result<()> {
        let visit = Mutex::new(visit);
        self.run_on(ProgramShape::vertex(program), |engine| match engine {
            EngineKind::Shards => {
                shards::run_vertex_program_visit(self, program, |v, value| (visit.lock().unwrap())(v, value))
            }
            _ => {
                let mut visit = visit.lock().unwrap();
                for (v, value) in self.vertex_program_on(engine, program)?.iter().enumerate() {
                    visit(v as VertexId, value);
                }
                Ok(())
            }
        })
    }

    /// [`run_vertex_program`](Self::run_vertex_program) for programs whose values and messages
    /// can travel between ranks: these also run on the distributed `pregel` engine, where rank 0
    /// gets every value and the other ranks an empty vector.
    pub fn run_vertex_program_wire<P: VertexProgram>(&self, program: &P) -> Result<Vec<P::Value>>
    where
        P::Value: Wire,
        P::Msg: Wire,
    {
        self.run_on(ProgramShape::vertex_wire(program), |engine| match engine {
            EngineKind::Pregel => pregel::run_vertex_program(self, program),
            other => self.vertex_program_on(other, program),
        })
    }

    /// [`run_pregel`](Self::run_pregel) for programs whose values and messages can travel between
    /// ranks (see [`run_vertex_program_wire`](Self::run_vertex_program_wire)).
    pub fn run_pregel_wire<P: PregelProgram>(&self, program: &P) -> Result<Vec<P::Value>>
    where
        P::Value: Wire,
        P::Msg: Wire,
    {
        self.run_on(ProgramShape::pregel(program, true), |engine| match engine {
            EngineKind::Pregel => pregel::run_pregel(self, program),
            other => self.pregel_on(other, program),
        })
    }

    /// This process's rank and the number of ranks of the run (0 and 1 except on the pregel
    /// engine under mpirun or with an in-process transport).
    pub fn rank(&self) -> (usize, usize) {
        match (&self.transport, self.engine()) {
            (Some(t), EngineKind::Pregel) => (t.rank(), t.ranks()),
            _ => (0, 1),
        }
    }

    /// Runs a Pregel program to completion and returns the final values in dense-id order.
    pub fn run_pregel<P: PregelProgram>(&self, program: &P) -> Result<Vec<P::Value>> {
        self.run_on(ProgramShape::pregel(program, false), |engine| self.pregel_on(engine, program))
    }

    fn pregel_on<P: PregelProgram>(&self, engine: EngineKind, program: &P) -> Result<Vec<P::Value>> {
        match engine {
            EngineKind::InMemory | EngineKind::Auto => inmem::run_pregel(self, program),
            other => Err(unsupported(other, &[ProgramShape::pregel(program, false)], &self.plan_graph_and_model().0)),
        }
    }

    /// Runs a k-walk neighborhood query (TurboGraph++, [`NeighborhoodQuery`]): with nested
    /// windowed streaming on nwsm, on the whole graph in memory on inmem.
    ///
    /// [`NeighborhoodQuery`]: crate::program::NeighborhoodQuery
    pub fn run_neighborhood_query<Q: crate::program::NeighborhoodQuery>(
        &self,
        query: &Q,
    ) -> Result<nwsm::QueryResult<Q::Output>> {
        let mut shape = ProgramShape::query(query.levels(), std::mem::size_of::<Q::Output>() as u64);
        if query.column().is_some() {
            shape = shape.with_column();
        }
        self.run_on(shape, |engine| match engine {
            EngineKind::Nwsm => nwsm::run_query(self, query),
            EngineKind::InMemory | EngineKind::Auto => inmem::run_neighborhood_query(self, query),
            other => Err(unsupported(other, &[shape], &self.plan_graph_and_model().0)),
        })
    }

    /// Runs an [`EdgePass`](crate::program::EdgePass): every arc of csr-out once, from all
    /// threads (`stream::edge_pass`); streamed from disk on stream and cache, through the page
    /// cache on inmem. The cache engine keeps vertex state in memory as stream does, so a pass
    /// is the same sequential read for it: its page and static caches would only be filled to
    /// serve each page once, and they are dropped first so the pass has the whole budget.
    pub fn run_edge_pass<P: crate::program::EdgePass>(&self, pass: &P) -> Result<()> {
        let shape = ProgramShape::edge_pass(pass.state_bytes_per_vertex());
        self.run_on(shape, |engine| match engine {
            EngineKind::InMemory | EngineKind::Auto => stream::edge_pass::run(self, pass, stream::IoMode::Buffered),
            EngineKind::Stream => stream::edge_pass::run(self, pass, self.options.stream.io),
            EngineKind::Cache => {
                *self.cache_engine.lock().unwrap_or_else(|e| e.into_inner()) = None;
                stream::edge_pass::run(self, pass, self.options.stream.io)
            }
            other => Err(unsupported(other, &[shape], &self.plan_graph_and_model().0)),
        })
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

    /// Records run-level figures: `update` sets its engine's section of the run's figures.
    pub fn record_figures(&self, update: impl FnOnce(&mut RunFigures)) {
        update(&mut self.stats.lock().unwrap().figures);
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
        stats.bytes_verified = io.bytes_verified;
        stats.peak_rss_bytes = peak_rss_bytes();
        stats.memory_ledger = self.ledger.figures();
        stats
    }
}

/// Bytes of the budget an algorithm holds beside the engine ([`Runner::hold_memory`]): engines
/// plan within the rest until it is dropped.
struct Reservation<'a> {
    reserved: &'a std::sync::atomic::AtomicU64,
    charge: Option<Charge>,
}

impl Reservation<'_> {
    /// Keeps the bytes reserved for the rest of the run; the charge is the ledger's record.
    fn for_the_run(mut self) -> Option<Charge> {
        self.charge.take()
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(charge) = self.charge.take() {
            self.reserved.fetch_sub(charge.bytes(), std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// The engine and form chosen for one program run.
struct Choice {
    engine: EngineKind,
    form_index: usize,
}

/// The engine that runs this Runner's programs, once chosen.
struct Chosen {
    engine: EngineKind,
    reason: String,
    explanation: Explanation,
}

/// The first of `shapes` that `engine` runs at all.
fn first_supported(engine: EngineKind, shapes: &[ProgramShape], graph: &PlanGraph) -> Option<usize> {
    let engine = planner::engine(engine)?;
    shapes.iter().position(|shape| engine.refuses(shape, graph).is_none())
}

/// The refusal of an engine that runs none of an algorithm's forms: why, and which engines do.
fn unsupported(engine: EngineKind, shapes: &[ProgramShape], graph: &PlanGraph) -> Error {
    let mut reasons: Vec<String> = Vec::new();
    if let Some(e) = planner::engine(engine) {
        for why in shapes.iter().filter_map(|shape| e.refuses(shape, graph)) {
            if !reasons.contains(&why) {
                reasons.push(why);
            }
        }
    }
    let why = if reasons.is_empty() { "does not run this program".to_string() } else { reasons.join(", and it ") };
    let others: Vec<&str> = planner::engines()
        .into_iter()
        .filter(|e| shapes.iter().any(|shape| e.refuses(shape, graph).is_none()))
        .map(|e| e.kind().name())
        .collect();
    Error::Unsupported(format!(
        "the {} engine does not run this algorithm: it {why}; engines that run it: {} (or auto)",
        engine.name(),
        others.join(", ")
    ))
}

/// `auto` found no engine that runs the program within the budget: each engine's reason.
fn nothing_fits(explanation: &Explanation, budget: u64) -> Error {
    let reasons: Vec<String> = explanation
        .rows
        .iter()
        .filter_map(|r| r.plan.refusal.as_ref().map(|why| format!("{}: {why}", r.plan.engine)))
        .collect();
    Error::MemoryBudget(format!(
        "no engine runs this within {}; raise --memory. {}",
        crate::runtime::format_size(budget),
        reasons.join("; ")
    ))
}
