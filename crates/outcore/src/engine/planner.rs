//! The planner behind `--engine auto`: one interface every engine answers before it runs, and
//! the choice of the fastest engine expected within the memory budget.
//!
//! Every engine implements [`Engine`]: which program forms it runs ([`Engine::refuses`]) and
//! a [`Plan`] for a program of a given [`ProgramShape`] on a store within a budget — the memory
//! it will use, split by part, the bytes it expects to read and write, the iterations where
//! they are known, the layouts it would build first, and the seconds all this should take
//! under the [`CostModel`]. The Runner asks every engine (for `auto`), ranks the plans that fit
//! by expected seconds, and runs the first; `--explain` prints the whole table.
//!
//! The cost model is deliberately simple: a run costs its bytes over the device's sequential
//! bandwidth, its random reads times the device's latency (both from `outcore calibrate`, or
//! the figures of PLATFORM.md when the device was never calibrated), layout builds, and its
//! edge visits times a compute rate per edge — measured on this machine by `outcore calibrate`
//! for the in-memory engine, scaled for each engine by the ratios measured in the speed issues
//! (see [`EngineRates`]). The planner only has to rank engines that differ by factors, not to
//! predict seconds.
//!
//! Algorithms with more than one form (pr, wcc, sssp as vertex programs or one-level
//! neighborhood queries; lcc as a Pregel program or a two-level query) hand all their shapes to
//! [`Runner::choose_form`](super::Runner::choose_form): the Runner, not the algorithm, decides
//! which form an engine runs.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::shards::layout::ShardLayoutFacts;
use super::EngineKind;
use crate::program::{EdgeDirection, MessageKind, PregelProgram, VertexProgram};
use crate::runtime::format_size;
use crate::store::Store;

/// The forms a program can take (`program.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramForm {
    /// A push-style [`VertexProgram`].
    Vertex,
    /// A [`PregelProgram`] (messages not combinable).
    Pregel,
    /// A k-walk neighborhood query (`NeighborhoodQuery`).
    Neighborhood,
    /// One pass over every arc into concurrent per-vertex state ([`EdgePass`](crate::program::EdgePass)).
    EdgePass,
}

impl ProgramForm {
    pub fn name(self) -> &'static str {
        match self {
            ProgramForm::Vertex => "vertex program",
            ProgramForm::Pregel => "Pregel program",
            ProgramForm::Neighborhood => "neighborhood query",
            ProgramForm::EdgePass => "edge pass",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            ProgramForm::Vertex => "vertex programs",
            ProgramForm::Pregel => "Pregel programs",
            ProgramForm::Neighborhood => "neighborhood queries",
            ProgramForm::EdgePass => "edge passes",
        }
    }

    /// An engine's refusal of `form` when it runs only `only`.
    pub fn refused_by(self, only: ProgramForm) -> Option<String> {
        (self != only).then(|| format!("does not run {}, only {}", self.plural(), only.plural()))
    }
}

/// What the planner knows about a program: its form and the facts that decide where it can run
/// and what it costs. Built from a program by [`ProgramShape::vertex`], [`ProgramShape::pregel`]
/// or [`ProgramShape::query`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProgramShape {
    pub form: ProgramForm,
    /// Bytes of a vertex value and of a message.
    pub value_bytes: u64,
    pub msg_bytes: u64,
    /// Bytes of an optional message (`Option<Msg>`): a slot of the arrays messages fold into.
    pub msg_slot_bytes: u64,
    /// Messages to one target fold into one: every vertex program, and Pregel programs with a
    /// combiner.
    pub combines: bool,
    /// Along which edges messages travel (vertex programs; `Out` for the others).
    pub direction: EdgeDirection,
    /// The program reads in-edges (Pregel `needs_in_edges`, `Both`/`In` vertex programs).
    pub in_edges: bool,
    pub uses_weights: bool,
    /// Values and messages have a `Wire` encoding, so they can travel between ranks (pregel).
    pub wire: bool,
    /// Every vertex applies every iteration (PageRank): full passes, no dynamic shards.
    pub applies_to_all: bool,
    pub tolerates_delays: bool,
    pub message_kind: MessageKind,
    /// Iterations (supersteps) when the program fixes them, or their cap.
    pub max_iterations: Option<usize>,
    /// Iterations a run that ends by convergence is expected to take, when the program can
    /// tell ([`VertexProgram::expected_iterations`]); `max_iterations` is then only a cap.
    pub expected_iterations: Option<f64>,
    /// Levels k of a neighborhood query (0 for the other forms).
    pub levels: usize,
    /// The vertex program allows dense pull iterations (`VertexProgram::supports_pull`).
    pub supports_pull: bool,
    /// A pull stops most lists at their first satisfying source
    /// (`VertexProgram::pull_stops_early`: BFS).
    pub pull_stops_early: bool,
    /// Its messages depend on the source only (`VertexProgram::sends_uniform_messages`).
    pub sends_uniform_messages: bool,
    /// Every active source sends the same message
    /// (`VertexProgram::sends_one_message_per_iteration`).
    pub sends_one_message: bool,
    /// Vertex programs: scatter or the global sums read out-degrees, which an engine pushing
    /// along csr-in takes from csr-out's offsets ([`VertexProgram::reads_out_degrees`]).
    pub out_degrees: bool,
    /// Bytes per vertex of the column a one-level query reads for any vertex
    /// (`NeighborhoodQuery::column`; 0 when it has none), which nwsm keeps in its own order.
    pub column_bytes: u64,
    /// Bytes per vertex the algorithm itself keeps beside the engine while this form runs
    /// (the last round's labels of query rounds, PageRank's ranks and degrees): every engine's
    /// plan counts them as the part "algorithm state" and plans within the rest of the budget,
    /// and [`Runner::run_forms`](super::Runner::run_forms) reserves them before the form runs.
    pub state_bytes: u64,
}

impl ProgramShape {
    /// The shape of a vertex program whose values and messages cannot travel between ranks.
    pub fn vertex<P: VertexProgram>(program: &P) -> ProgramShape {
        ProgramShape {
            form: ProgramForm::Vertex,
            value_bytes: std::mem::size_of::<P::Value>() as u64,
            msg_bytes: std::mem::size_of::<P::Msg>() as u64,
            msg_slot_bytes: std::mem::size_of::<Option<P::Msg>>() as u64,
            combines: true,
            direction: program.direction(),
            in_edges: program.direction() != EdgeDirection::Out,
            uses_weights: program.uses_weights(),
            wire: false,
            applies_to_all: program.applies_to_all(),
            tolerates_delays: program.tolerates_delays(),
            message_kind: program.message_kind(),
            max_iterations: program.max_iterations(),
            expected_iterations: program.expected_iterations(),
            levels: 0,
            supports_pull: program.supports_pull(),
            pull_stops_early: program.pull_stops_early(),
            sends_uniform_messages: program.sends_uniform_messages(),
            sends_one_message: program.sends_one_message_per_iteration(),
            out_degrees: program.reads_out_degrees() || program.has_global_contributions(),
            column_bytes: 0,
            state_bytes: 0,
        }
    }

    /// The same, for programs whose values and messages are `Wire` (they also run on pregel).
    pub fn vertex_wire<P: VertexProgram>(program: &P) -> ProgramShape {
        ProgramShape { wire: true, ..ProgramShape::vertex(program) }
    }

    /// The shape of a Pregel program (`wire`: its values and messages are `Wire`).
    pub fn pregel<P: PregelProgram>(program: &P, wire: bool) -> ProgramShape {
        ProgramShape {
            form: ProgramForm::Pregel,
            value_bytes: std::mem::size_of::<P::Value>() as u64,
            msg_bytes: std::mem::size_of::<P::Msg>() as u64,
            msg_slot_bytes: std::mem::size_of::<Option<P::Msg>>() as u64,
            combines: program.has_combiner(),
            direction: EdgeDirection::Out,
            in_edges: program.needs_in_edges(),
            uses_weights: program.uses_weights(),
            wire,
            applies_to_all: true,
            tolerates_delays: false,
            message_kind: MessageKind::Value,
            max_iterations: program.max_supersteps(),
            expected_iterations: None,
            levels: 0,
            supports_pull: false,
            pull_stops_early: false,
            sends_uniform_messages: false,
            sends_one_message: false,
            out_degrees: false,
            column_bytes: 0,
            state_bytes: 0,
        }
    }

    /// The shape of one k-level neighborhood query with `output_bytes` of output per vertex.
    pub fn query(levels: usize, output_bytes: u64) -> ProgramShape {
        ProgramShape::query_rounds(levels, output_bytes, Some(1))
    }

    /// The shape of an algorithm run as `rounds` queries (`None`: until stable, count unknown),
    /// such as PageRank's one-level rounds.
    pub fn query_rounds(levels: usize, output_bytes: u64, rounds: Option<usize>) -> ProgramShape {
        ProgramShape {
            form: ProgramForm::Neighborhood,
            value_bytes: output_bytes,
            msg_bytes: 8,
            msg_slot_bytes: 16,
            combines: true,
            direction: EdgeDirection::Both,
            in_edges: true,
            uses_weights: false,
            wire: true,
            applies_to_all: true,
            tolerates_delays: false,
            message_kind: MessageKind::Delta,
            max_iterations: rounds,
            expected_iterations: None,
            levels,
            supports_pull: false,
            pull_stops_early: false,
            sends_uniform_messages: false,
            sends_one_message: false,
            out_degrees: false,
            column_bytes: 0,
            state_bytes: 0,
        }
    }

    /// The same query shape, reading a column of 8 bytes per vertex
    /// ([`NeighborhoodQuery::column`](crate::program::NeighborhoodQuery::column)).
    pub fn with_column(self) -> ProgramShape {
        ProgramShape { column_bytes: 8, ..self }
    }

    /// The same shape, with `bytes` per vertex of state the algorithm keeps beside the engine
    /// ([`state_bytes`](Self::state_bytes)).
    pub fn with_state(self, bytes: u64) -> ProgramShape {
        ProgramShape { state_bytes: bytes, ..self }
    }

    /// The shape of an [`EdgePass`](crate::program::EdgePass) whose state in the engine is
    /// `value_bytes` per vertex (`EdgePass::state_bytes_per_vertex`): one pass over csr-out.
    pub fn edge_pass(value_bytes: u64) -> ProgramShape {
        ProgramShape {
            form: ProgramForm::EdgePass,
            value_bytes,
            msg_bytes: 0,
            msg_slot_bytes: 0,
            combines: false,
            direction: EdgeDirection::Out,
            in_edges: false,
            uses_weights: false,
            wire: false,
            applies_to_all: false,
            tolerates_delays: false,
            message_kind: MessageKind::Value,
            max_iterations: Some(1),
            expected_iterations: None,
            levels: 0,
            supports_pull: false,
            pull_stops_early: false,
            sends_uniform_messages: false,
            sends_one_message: false,
            out_degrees: false,
            column_bytes: 0,
            state_bytes: 0,
        }
    }

    /// How many adjacency layouts the program reads: csr-out, plus csr-in when it reads
    /// in-edges of a directed store (an undirected store's csr-out already holds both).
    pub fn layouts(&self, directed: bool) -> u64 {
        if self.in_edges && directed && self.direction != EdgeDirection::In {
            2
        } else {
            1
        }
    }
}

/// The work a program is expected to do, whatever the engine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Workload {
    /// Iterations (supersteps, query rounds).
    pub iterations: f64,
    /// True when the program fixes the iteration count; else `iterations` is an estimate.
    pub iterations_known: bool,
    /// Arcs scattered over the whole run (each direction counted).
    pub edge_visits: f64,
}

/// Iterations assumed for programs that run until no vertex is active, when nothing else is
/// known: R-MAT and social graphs have small diameters (BFS and WCC on RMAT-22 take 7–10).
pub const ASSUMED_ITERATIONS: f64 = 10.0;

/// Iterations assumed for a program that ends when a tolerance is met at a rate the planner
/// cannot know before the run: a power iteration converges as the ratio of the adjacency
/// matrix's two largest eigenvalues, Katz as alpha times the largest, belief propagation as the
/// homophily allows. Such programs return it from [`VertexProgram::expected_iterations`], so
/// that their `max_iterations` (100 for eigenvector, 1000 for katz) counts as the cap it is.
/// Iterations run, on RMAT-18 and RMAT-22 (Norder): eigenvector 6 and 8; bp from 16 evidence
/// vertices 11 and 11; katz at alpha 1e-4 7 and 8; on the planner tests' RMAT-10 and G(800,
/// 4000) graphs 9 to 23. Before, plans counted the caps: 102 and 1001 iterations.
pub const ASSUMED_CONVERGENCE_ITERATIONS: f64 = 10.0;

impl Workload {
    pub fn of(shape: &ProgramShape, graph: &PlanGraph) -> Workload {
        let arcs = graph.arcs as f64 * shape.layouts(graph.directed) as f64;
        let known = shape.max_iterations.map(|i| i as f64);
        match shape.form {
            ProgramForm::EdgePass => Workload { iterations: 1.0, iterations_known: true, edge_visits: arcs },
            ProgramForm::Neighborhood => {
                // One pass over full lists per level; a level-2 query intersects lists, which
                // costs about the average degree per arc.
                let degree = if graph.vertices > 0 { graph.arcs as f64 / graph.vertices as f64 } else { 0.0 };
                let per_round = if shape.levels >= 2 { arcs * (1.0 + degree) } else { arcs };
                let rounds = known.unwrap_or(ASSUMED_ITERATIONS);
                Workload { iterations: rounds, iterations_known: known.is_some(), edge_visits: per_round * rounds }
            }
            _ => {
                // A count the program expects (convergence) is capped by the one it fixes.
                let (iterations, iterations_known) = match shape.expected_iterations {
                    Some(expected) => (known.map_or(expected, |cap| expected.min(cap)), false),
                    None if shape.applies_to_all => (known.unwrap_or(ASSUMED_ITERATIONS * 2.0), known.is_some()),
                    None => (known.unwrap_or(ASSUMED_ITERATIONS).min(ASSUMED_ITERATIONS * 4.0), known.is_some()),
                };
                // Every vertex scatters every iteration; else a selective program (min/max)
                // scatters along an arc a few times at most, and an accumulative one keeps most
                // vertices active for many iterations: heat and bp visit an arc 0.54 and 0.23
                // times an iteration on RMAT-22 (Norder). pr-delta keeps 84 % active: its
                // pushes visit an arc 0.82 times an iteration, and a dense iteration that pulls
                // reads every arc (inmem and stream pulled 141 of its 148).
                let per_arc = match (shape.applies_to_all, shape.message_kind) {
                    (true, _) => iterations,
                    (false, MessageKind::Value) => 2.0,
                    (false, MessageKind::Delta) if shape.supports_pull => iterations,
                    (false, MessageKind::Delta) => iterations / 2.0,
                };
                Workload { iterations, iterations_known, edge_visits: arcs * per_arc }
            }
        }
    }
}

/// Facts about the store the plans are made for.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanGraph {
    pub vertices: u64,
    pub arcs: u64,
    pub directed: bool,
    pub weighted: bool,
    /// On-disk bytes of csr-out (offsets, targets, weights).
    pub csr_out_bytes: u64,
    /// On-disk bytes of csr-in (0 when absent).
    pub csr_in_bytes: u64,
    /// Names of the derived layouts already built (`shards-16`, `parts-1`, `bbp-1-4`...).
    pub layouts: Vec<String>,
    /// The most in- plus out-arcs of one vertex ([`PlanGraph::max_degree`]).
    max_degree: MaxDegree,
    /// Bytes of each file of the store by its path in the store (`csr-out/targets`...), as the
    /// paged engines number their pages.
    pub file_bytes: BTreeMap<String, u64>,
    /// The built `shards-P` layouts' largest interval and shard (the shards engine's memory
    /// mode is sized from them).
    pub shard_layouts: Vec<ShardLayoutFacts>,
    /// The built `bbp-P-Q` layouts (nwsm sizes a run from the one it reads).
    pub bbp_layouts: Vec<super::nwsm::BbpFacts>,
    /// Figures of `shards-P` layouts not built ([`PlanGraph::shard_facts`]).
    shard_floors: ShardFloors,
}

/// The counts of a store that engines size their memory from: read from a [`Store`] at run
/// time for nothing, and part of the [`PlanGraph`] at planning time, so that a plan's parts and
/// the run's charges come from one sizing function of the same figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphCounts {
    pub vertices: u64,
    pub arcs: u64,
    pub directed: bool,
    pub weighted: bool,
}

impl GraphCounts {
    pub fn of(store: &Store) -> GraphCounts {
        GraphCounts {
            vertices: store.num_vertices(),
            arcs: store.num_arcs(),
            directed: store.is_directed(),
            weighted: store.is_weighted(),
        }
    }
}

impl PlanGraph {
    pub fn counts(&self) -> GraphCounts {
        GraphCounts { vertices: self.vertices, arcs: self.arcs, directed: self.directed, weighted: self.weighted }
    }

    pub fn of(store: &Store) -> PlanGraph {
        // The manifest as it is now: layouts built since the store was opened (by an earlier
        // run) are listed, and engines that read them are planned over them.
        let fresh = store.reopen().unwrap_or_else(|_| store.clone());
        let store = &fresh;
        let manifest = store.manifest();
        let mut layouts: Vec<String> = manifest.layouts.keys().cloned().collect();
        // Partitions of the pregel engine are directories with their own description file.
        if let Ok(entries) = std::fs::read_dir(store.dir()) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                if name.starts_with("parts-") && entry.path().join("partition.json").exists() {
                    layouts.push(name);
                }
            }
        }
        PlanGraph {
            vertices: store.num_vertices(),
            arcs: store.num_arcs(),
            directed: store.is_directed(),
            weighted: store.is_weighted(),
            csr_out_bytes: manifest.layout_bytes("csr-out"),
            csr_in_bytes: manifest.layout_bytes("csr-in"),
            layouts,
            max_degree: MaxDegree::of(store),
            file_bytes: manifest.files.iter().map(|(rel, entry)| (rel.clone(), entry.bytes)).collect(),
            shard_layouts: super::shards::layout::built_layout_facts(store),
            bbp_layouts: super::nwsm::BbpLayout::all(store).iter().map(|l| l.facts()).collect(),
            shard_floors: ShardFloors(super::shards::IntervalFloors::new(
                &store.with_counters(crate::runtime::IoCounters::new()),
            )),
        }
    }

    /// The figures of `shards-P`: the built layout's, else those read from the offsets
    /// ([`interval_load_floor`](super::shards::layout::interval_load_floor): interval loads
    /// bounded from below, the rest exact), once per P and kept; None when the offsets cannot
    /// be read.
    pub fn shard_facts(&self, shards: usize) -> Option<ShardLayoutFacts> {
        let built = self.shard_layouts.iter().find(|facts| facts.shards == shards);
        built.cloned().or_else(|| self.shard_floors.0.get(shards).ok())
    }

    /// The most in- plus out-arcs of one vertex (a fully external engine must hold one
    /// vertex's edges in an interval); `u64::MAX` when the offsets cannot be read.
    pub fn max_degree(&self) -> u64 {
        self.max_degree.get()
    }

    /// Bytes of the adjacency layouts a program of `shape` reads.
    /// A weighted store's weights (8 bytes an arc in each layout) count only when the program
    /// reads them: engines that stream or page the layouts skip the weights file otherwise.
    pub fn adjacency_bytes(&self, shape: &ProgramShape) -> u64 {
        let unread_weights =
            if self.weighted && !shape.uses_weights { shape.layouts(self.directed) * self.arcs * 8 } else { 0 };
        self.layout_bytes(shape).saturating_sub(unread_weights)
    }

    /// Bytes of the whole layouts (offsets, targets, weights) a program of `shape` reads, as an
    /// engine that loads them (`CsrLayout::load`) reads them.
    pub fn layout_bytes(&self, shape: &ProgramShape) -> u64 {
        match (shape.layouts(self.directed), shape.direction) {
            (2, _) => self.csr_out_bytes + self.csr_in_bytes,
            (_, EdgeDirection::In) if self.directed => self.csr_in_bytes,
            _ => self.csr_out_bytes,
        }
    }

    /// True when a derived layout whose name starts with `prefix` is built.
    pub fn has_layout(&self, prefix: &str) -> bool {
        self.layouts.iter().any(|l| l.starts_with(prefix))
    }
}

/// [`PlanGraph::max_degree`]: the manifest's, recorded when the store was built; for stores
/// built before that, found on first use (only the shards engine's plan asks, and finding it
/// reads both offsets files: 38 MB on RMAT-22, about 30 ms that every run paid before its
/// engine started).
#[derive(Debug, Clone)]
struct MaxDegree {
    store: Store,
    value: std::sync::OnceLock<u64>,
}

impl MaxDegree {
    fn of(store: &Store) -> MaxDegree {
        MaxDegree { store: store.clone(), value: std::sync::OnceLock::new() }
    }

    fn get(&self) -> u64 {
        *self.value.get_or_init(|| max_degree(&self.store).unwrap_or(u64::MAX))
    }
}

impl PartialEq for MaxDegree {
    fn eq(&self, other: &MaxDegree) -> bool {
        self.get() == other.get()
    }
}

/// [`PlanGraph::shard_facts`] of layouts not built, computed when a plan first asks for one P
/// (read through counters of their own: planning is not part of a run's figures).
#[derive(Debug, Clone)]
struct ShardFloors(super::shards::IntervalFloors);

/// Bounds are a function of the store, like the rest of a [`PlanGraph`].
impl PartialEq for ShardFloors {
    fn eq(&self, _: &ShardFloors) -> bool {
        true
    }
}

/// The most in- plus out-arcs of one vertex, as the shards engine takes it for its hub check
/// ([`busiest_degree`](super::shards::busiest_degree)); any reads go through counters of their
/// own: planning is not part of the run's figures.
fn max_degree(store: &Store) -> crate::Result<u64> {
    super::shards::busiest_degree(&store.with_counters(crate::runtime::IoCounters::new()))
}

/// Seconds per edge visit of each engine's compute, relative to the in-memory engine's rate.
/// Measured on RMAT-22 with 2 threads (issues 15 and 16, main at 893c803): PageRank×20 on inmem
/// 5.96 s, stream 6.3 s of compute; pregel PageRank×10 at W = 1 26.9 s; shards PageRank×20
/// compute beside its I/O; cache and nwsm per visit of a list read through their page caches.
/// `stream_pull`: stream's dense pulls of uniform messages over its resident, degree-ordered
/// sources (`stream/pull.rs`), measured at 5edb88a on RMAT-22 PageRank: 0.175 s per iteration
/// against inmem's 0.205 s. `pregel_pull`: a single recoded pregel rank pulling the same
/// (`pregel/pull.rs`), measured at a5fc7d4: PageRank×10 3.45 s against stream's 1.96 s, 1.6×
/// stream_pull's rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EngineRates {
    pub inmem: f64,
    pub stream: f64,
    pub stream_pull: f64,
    pub cache: f64,
    pub shards: f64,
    pub pregel: f64,
    pub pregel_pull: f64,
    pub nwsm: f64,
}

impl Default for EngineRates {
    fn default() -> Self {
        EngineRates {
            inmem: 1.0,
            stream: 1.1,
            stream_pull: 0.85,
            cache: 2.0,
            shards: 3.0,
            pregel: 9.0,
            pregel_pull: 1.4,
            nwsm: 2.0,
        }
    }
}

/// The figures the plans are priced with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CostModel {
    pub sequential_bytes_per_second: f64,
    pub random_read_seconds: f64,
    /// Seconds the in-memory engine spends per edge visit (both cores).
    pub edge_seconds: f64,
    pub rates: EngineRates,
    /// Where the device figures came from ("calibrated" or "defaults").
    #[serde(skip)]
    pub source: &'static str,
}

impl Default for CostModel {
    /// PLATFORM.md's figures for this machine kind (about 2 GB/s sequential with O_DIRECT,
    /// 23k random 4 KiB reads/s) and 4.6 ns per edge visit (inmem PageRank on RMAT-22).
    fn default() -> Self {
        CostModel {
            sequential_bytes_per_second: 2.0e9,
            random_read_seconds: 1.0 / 23_000.0,
            edge_seconds: 4.6e-9,
            rates: EngineRates::default(),
            source: "defaults",
        }
    }
}

impl CostModel {
    /// The figures `outcore calibrate` saved for the device holding `store`, else the defaults.
    pub fn for_store(store: &Store) -> CostModel {
        match super::stream::calibrate::lookup(store.dir()) {
            Some(c) if c.sequential_bytes_per_second > 0.0 && c.random_read_latency_seconds > 0.0 => CostModel {
                sequential_bytes_per_second: c.sequential_bytes_per_second,
                random_read_seconds: c.random_read_latency_seconds,
                edge_seconds: c.edge_seconds.filter(|&s| s > 0.0).unwrap_or(CostModel::default().edge_seconds),
                source: "calibrated",
                ..CostModel::default()
            },
            _ => CostModel::default(),
        }
    }

    /// Seconds to move `bytes` sequentially.
    pub fn transfer(&self, bytes: u64) -> f64 {
        bytes as f64 / self.sequential_bytes_per_second
    }

    /// Seconds of compute for `visits` edge visits at an engine's relative `rate`.
    pub fn compute(&self, visits: f64, rate: f64) -> f64 {
        visits * self.edge_seconds * rate
    }

    /// Seconds to build a derived layout of about `bytes` from the adjacency: read it, sort,
    /// write it.
    pub fn build(&self, bytes: u64, arcs: u64) -> f64 {
        self.transfer(3 * bytes) + self.compute(arcs as f64 * 4.0, 1.0)
    }
}

/// Everything an engine needs to make its plan.
pub struct PlanContext<'a> {
    pub graph: &'a PlanGraph,
    pub budget: u64,
    pub options: &'a super::RunOptions,
    pub model: &'a CostModel,
    /// Ranks of the run (1 without a transport).
    pub ranks: usize,
}

/// One named part of an engine's memory: the parts of a plan are those its run charges to
/// the run's [`MemoryLedger`](crate::runtime::MemoryLedger).
pub use crate::runtime::MemoryPart;

/// What an engine expects to do for one program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub engine: &'static str,
    /// Why the engine cannot run this program within the budget (None: it can).
    pub refusal: Option<String>,
    /// The memory it will use, by part.
    pub memory: Vec<MemoryPart>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub iterations: f64,
    pub iterations_known: bool,
    /// A derived layout it builds first (not yet in the store).
    pub builds: Option<String>,
    pub seconds: f64,
}

impl Plan {
    /// A plan that starts from the workload; engines fill in the rest.
    pub fn new(engine: EngineKind, work: &Workload) -> Plan {
        Plan {
            engine: engine.name(),
            refusal: None,
            memory: Vec::new(),
            bytes_read: 0,
            bytes_written: 0,
            iterations: work.iterations,
            iterations_known: work.iterations_known,
            builds: None,
            seconds: 0.0,
        }
    }

    /// A plan that says the engine cannot run the program.
    pub fn refused(engine: EngineKind, work: &Workload, why: impl Into<String>) -> Plan {
        Plan { refusal: Some(why.into()), ..Plan::new(engine, work) }
    }

    /// Refuses a single-process engine in a run of several ranks (under mpirun only the
    /// distributed engines share the work; the others would each run the whole graph).
    pub fn single_process(mut self, ctx: &PlanContext) -> Plan {
        if self.refusal.is_none() && ctx.ranks > 1 {
            self.refusal = Some(format!("runs in one process; this run has {} ranks", ctx.ranks));
        }
        self
    }

    pub fn fits(&self) -> bool {
        self.refusal.is_none()
    }

    pub fn memory_total(&self) -> u64 {
        self.memory.iter().map(|p| p.bytes).sum()
    }

    pub fn with_part(mut self, part: &'static str, bytes: u64) -> Plan {
        if bytes > 0 {
            self.memory.push(MemoryPart { part, bytes });
        }
        self
    }

    /// Adds the parts of an engine's sizing (the same parts its run charges), leaving out
    /// empty ones.
    pub fn with_parts(self, parts: impl IntoIterator<Item = MemoryPart>) -> Plan {
        parts.into_iter().fold(self, |plan, p| plan.with_part(p.part, p.bytes))
    }

    /// Refuses when the memory parts add up to more than `budget`.
    pub fn check_budget(mut self, budget: u64) -> Plan {
        if self.refusal.is_none() && self.memory_total() > budget {
            self.refusal = Some(format!(
                "needs about {} ({}), the budget is {}",
                format_size(self.memory_total()),
                self.memory
                    .iter()
                    .map(|p| format!("{} {}", p.part, format_size(p.bytes)))
                    .collect::<Vec<_>>()
                    .join(", "),
                format_size(budget)
            ));
        }
        self
    }
}

/// What every engine answers before it runs: whether it runs programs of a shape at all, and
/// its plan for one within a budget. Running stays in [`Runner`](super::Runner)'s dispatch,
/// since programs are generic.
pub trait Engine: Sync {
    fn kind(&self) -> EngineKind;
    /// Why this engine never runs programs of this shape (None: it does). Independent of the
    /// budget: used for refusals that name the engines that do run an algorithm.
    fn refuses(&self, shape: &ProgramShape, graph: &PlanGraph) -> Option<String>;
    /// The plan for `shape` within `ctx.budget` (refused when it does not fit).
    fn plan(&self, shape: &ProgramShape, ctx: &PlanContext) -> Plan;
}

/// Every engine, in the order ties are broken (the reference engine first).
pub fn engines() -> [&'static dyn Engine; 6] {
    [
        &super::inmem_plan::InMemoryEngine,
        &super::stream::plan::StreamEngine,
        &super::cache::plan::CacheEngine,
        &super::shards::plan::ShardsEngine,
        &super::pregel::plan::PregelEngine,
        &super::nwsm::plan::NwsmEngine,
    ]
}

/// The engine object of a kind (`None` for `auto`).
pub fn engine(kind: EngineKind) -> Option<&'static dyn Engine> {
    engines().into_iter().find(|e| e.kind() == kind)
}

/// The plans of every engine for every form of a program, and the one chosen.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub budget: u64,
    pub cost_source: &'static str,
    /// One row per engine and form the engine runs at all.
    pub rows: Vec<ExplainedPlan>,
    /// Index into `rows` of the chosen plan (None: nothing fits).
    pub chosen: Option<usize>,
}

/// A plan with the form it is for.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainedPlan {
    pub form: ProgramForm,
    /// Index of the form among the shapes the algorithm offered.
    pub form_index: usize,
    #[serde(flatten)]
    pub plan: Plan,
}

/// The engine's plan within the budget left after the state the algorithm keeps beside it
/// ([`ProgramShape::state_bytes`]), with that state as its first part.
fn plan_beside_state(engine: &dyn Engine, shape: &ProgramShape, ctx: &PlanContext) -> Plan {
    let state = shape.state_bytes * ctx.graph.vertices;
    if state == 0 {
        return engine.plan(shape, ctx);
    }
    let left = PlanContext { budget: ctx.budget.saturating_sub(state), ..*ctx };
    let mut plan = engine.plan(shape, &left);
    plan.memory.insert(0, MemoryPart::new("algorithm state", state));
    plan.refusal = match plan.refusal.take() {
        _ if state > ctx.budget => Some(format!(
            "the algorithm's own state needs {} and the budget is {}",
            format_size(state),
            format_size(ctx.budget)
        )),
        Some(why) => Some(format!("{why}, after {} of the algorithm's own state", format_size(state))),
        None => None,
    };
    plan
}

impl Explanation {
    /// Plans every engine that runs any of `shapes`, and picks the fastest that fits.
    pub fn new(shapes: &[ProgramShape], ctx: &PlanContext) -> Explanation {
        // An algorithm lists its forms in its order of preference: each engine runs the first
        // one it supports, and the planner compares engines.
        let mut rows = Vec::new();
        for engine in engines() {
            if let Some((form_index, shape)) =
                shapes.iter().enumerate().find(|(_, shape)| engine.refuses(shape, ctx.graph).is_none())
            {
                rows.push(ExplainedPlan { form: shape.form, form_index, plan: plan_beside_state(engine, shape, ctx) });
            }
        }
        let chosen = ranked(&rows).first().copied();
        Explanation { budget: ctx.budget, cost_source: ctx.model.source, rows, chosen }
    }

    /// Marks the plans of engines that refused when run (their own budget checks are finer
    /// than their plans) as not fitting, and chooses again.
    pub fn exclude(&mut self, failed: &[(EngineKind, String)]) {
        for row in &mut self.rows {
            if let Some((_, why)) = failed.iter().find(|(engine, _)| engine.name() == row.plan.engine) {
                row.plan.refusal = Some(format!("refused when run: {why}"));
            }
        }
        self.chosen = ranked(&self.rows).first().copied();
    }

    /// Indexes of the rows that fit, fastest first (ties: engine order).
    pub fn ranking(&self) -> Vec<usize> {
        ranked(&self.rows)
    }

    pub fn chosen(&self) -> Option<&ExplainedPlan> {
        self.chosen.map(|i| &self.rows[i])
    }

    /// The one line `auto` prints: what it chose and why.
    pub fn reason(&self) -> String {
        let Some(best) = self.chosen() else {
            return format!("auto: no engine runs this within {}", format_size(self.budget));
        };
        let runner_up = self.ranking().get(1).map(|&i| &self.rows[i]);
        let builds = best.plan.builds.as_deref().map(|l| format!(", building {l} first")).unwrap_or_default();
        let versus = match runner_up {
            Some(next) => format!(" (next: {} ~{:.1} s)", next.plan.engine, next.plan.seconds),
            None => String::new(),
        };
        let refused: Vec<&str> = self.rows.iter().filter(|r| !r.plan.fits()).map(|r| r.plan.engine).collect::<Vec<_>>();
        let refused = if refused.is_empty() {
            String::new()
        } else {
            format!("; over the budget: {}", dedup(refused).join(", "))
        };
        format!(
            "auto: {} ({}), expected ~{:.1} s with {} of {} budget{builds}{versus}{refused}; --explain shows every engine",
            best.plan.engine,
            best.form.name(),
            best.plan.seconds,
            format_size(best.plan.memory_total()),
            format_size(self.budget),
        )
    }
}

fn dedup(mut names: Vec<&str>) -> Vec<&str> {
    let mut seen = Vec::new();
    names.retain(|n| {
        let new = !seen.contains(n);
        seen.push(*n);
        new
    });
    names
}

fn ranked(rows: &[ExplainedPlan]) -> Vec<usize> {
    let mut fitting: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].plan.fits()).collect();
    // Stable: equal seconds keep engine order.
    fitting.sort_by(|&a, &b| rows[a].plan.seconds.total_cmp(&rows[b].plan.seconds));
    fitting
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "budget {}; device and compute figures: {}", format_size(self.budget), self.cost_source)?;
        writeln!(
            f,
            "{:<3} {:<7} {:<19} {:>10} {:>10} {:>10} {:>6} {:>9}  notes",
            "", "engine", "form", "memory", "read", "written", "iters", "seconds"
        )?;
        let ranking = self.ranking();
        for (i, row) in self.rows.iter().enumerate() {
            let p = &row.plan;
            let mark = match ranking.iter().position(|&r| r == i) {
                Some(0) => "*".to_string(),
                Some(k) => format!("{}", k + 1),
                None => "-".to_string(),
            };
            let iters =
                if p.iterations_known { format!("{:.0}", p.iterations) } else { format!("~{:.0}", p.iterations) };
            let mut notes = Vec::new();
            if let Some(l) = &p.builds {
                notes.push(format!("builds {l}"));
            }
            if let Some(why) = &p.refusal {
                notes.push(format!("does not fit: {why}"));
            }
            writeln!(
                f,
                "{:<3} {:<7} {:<19} {:>10} {:>10} {:>10} {:>6} {:>9}  {}",
                mark,
                p.engine,
                row.form.name(),
                format_size(p.memory_total()),
                format_size(p.bytes_read),
                format_size(p.bytes_written),
                iters,
                if p.fits() { format!("{:.2}", p.seconds) } else { "-".into() },
                notes.join("; ")
            )?;
        }
        Ok(())
    }
}
