//! The figures of a run, as `--stats-json` writes them: [`RunStats`] (the whole run) with one
//! [`IterationStats`] per iteration, each carrying the figures of the engine that ran it as
//! typed fields ([`IterationFigures`], [`RunFigures`]). This file is the schema of the stats
//! file: every key an engine writes is a documented field here, and serde writes each struct's
//! fields flat beside the common ones, as the keys of a stats file have always been.
//!
//! Readers in Rust use the fields, `run_report` included: the types read a stats file back
//! (fields an older file lacks take their defaults). Readers of the JSON (Python, scripts)
//! read the keys, which the test `stats_keys.rs` fixes per engine.

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::nwsm::gather::GatherStats;
use super::nwsm::MemoryPlan as NwsmMemoryPlan;
use super::planner;
use super::pregel::partition::Naming;
use super::shards::{DelayedDelivery, DynamicPolicy, ShardValues, StepKind};
use crate::runtime::LedgerFigures;

/// Figures of one iteration (superstep, or query for nwsm).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
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
    /// The figures of the engine (and kind of program) that ran the iteration, written as keys
    /// of the iteration beside the ones above.
    #[serde(flatten)]
    pub figures: IterationFigures,
}

/// Push (active vertices scatter along their arcs) or pull (vertices that want messages scan
/// their reverse arcs for active sources): Beamer's direction optimisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    Push,
    Pull,
}

/// An iteration's engine figures: one variant per engine and kind of program run, each
/// serialised as its fields (no tag: the run's `engine` says which).
/// (Unboxed: a run keeps one per iteration, and nwsm's 496 bytes are nothing beside that.)
#[derive(Debug, Clone, Default, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)]
pub enum IterationFigures {
    /// No engine figures (inmem's neighborhood query).
    #[default]
    None,
    /// A vertex program on inmem.
    InMemory(InMemoryIteration),
    /// A Pregel program on inmem.
    InMemoryPregel(InMemoryPregelIteration),
    /// A vertex program on stream.
    Stream(StreamIteration),
    /// An edge pass (on inmem, stream or cache): one iteration for the whole pass.
    EdgePass(EdgePassIteration),
    /// A vertex program on cache.
    Cache(CacheIteration),
    /// A step of shards with vertex values on disk (PSW).
    Shards(ShardsIteration),
    /// A step of shards with vertex values in memory.
    ShardsMemory(ShardsMemoryIteration),
    /// A superstep of pregel (this rank's figures, and some summed over the ranks).
    Pregel(PregelIteration),
    /// One neighborhood query on nwsm (summed over the ranks).
    Nwsm(NwsmQuery),
}

macro_rules! variant_accessors {
    ($($name:ident => $variant:ident($ty:ty);)*) => {
        impl IterationFigures {
            $(
                #[doc = concat!("The figures if the iteration ran as [`IterationFigures::", stringify!($variant), "`].")]
                pub fn $name(&self) -> Option<&$ty> {
                    match self {
                        IterationFigures::$variant(figures) => Some(figures),
                        _ => None,
                    }
                }
            )*
        }
    };
}

variant_accessors! {
    in_memory => InMemory(InMemoryIteration);
    in_memory_pregel => InMemoryPregel(InMemoryPregelIteration);
    stream => Stream(StreamIteration);
    edge_pass => EdgePass(EdgePassIteration);
    cache => Cache(CacheIteration);
    shards => Shards(ShardsIteration);
    shards_memory => ShardsMemory(ShardsMemoryIteration);
    pregel => Pregel(PregelIteration);
    nwsm => Nwsm(NwsmQuery);
}

/// How an engine read a layout: through the kernel's page cache or around it (`O_DIRECT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadMode {
    #[default]
    Buffered,
    Direct,
}

impl ReadMode {
    pub fn of(direct: bool) -> ReadMode {
        if direct {
            ReadMode::Direct
        } else {
            ReadMode::Buffered
        }
    }
}

/// A vertex program's iteration on inmem.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct InMemoryIteration {
    /// Vertices whose `apply` ran.
    pub applied: u64,
    /// Tasks the push split the frontier into (0 for a pull).
    pub push_tasks: u64,
}

/// A Pregel program's superstep on inmem.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct InMemoryPregelIteration {
    /// Messages sent in the superstep.
    pub messages: u64,
    /// Rayon threads that computed at least one chunk of the superstep's vertices.
    pub threads: u64,
}

/// A vertex program's iteration on stream.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamIteration {
    /// Arcs of the active vertices (summed over the layouts read).
    pub active_edges: u64,
    /// Chunks the scheduler asked the reader for.
    pub chunks_read: u64,
    /// Read requests issued to the kernel.
    pub read_requests: u64,
    /// Buffers filled by the reader thread.
    pub buffer_fills: u64,
    /// Bytes of the iteration's layouts not read (skipped gaps, resident prefix).
    pub bytes_skipped: u64,
    /// Arcs folded from the resident prefix in memory instead of read.
    pub resident_edges: u64,
    /// Whether the pulled layout's sources were renumbered by degree (`pull::SourceOrder`).
    pub sources_ordered: bool,
    /// Seconds the compute threads waited for buffers.
    pub io_wait_seconds: f64,
    /// Seconds of scatter and apply.
    pub compute_seconds: f64,
    /// How the layouts were read.
    pub io_mode: ReadMode,
    /// Whether the iteration read its layouts densely (every list) rather than selectively.
    pub dense: bool,
}

/// An edge pass (`stream/edge_pass.rs`): one streamed read of csr-out.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EdgePassIteration {
    /// Seconds the compute threads waited for buffers.
    pub io_wait_seconds: f64,
    /// Seconds of visiting arcs.
    pub compute_seconds: f64,
    /// Read requests issued to the kernel.
    pub read_requests: u64,
    /// How csr-out was read.
    pub io_mode: ReadMode,
}

/// A vertex program's iteration on cache (counters over the iteration only).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheIteration {
    /// Distinct pages per batch found in the page cache.
    pub page_cache_hits: u64,
    /// Distinct pages per batch that had to be read.
    pub page_cache_misses: u64,
    /// Pages evicted for new ones.
    pub page_cache_evictions: u64,
    /// Lists served whole by the static cache.
    pub static_cache_hits: u64,
    /// Read requests issued (after merging).
    pub requests_issued: u64,
    /// Requests that cover more than one page.
    pub merged_requests: u64,
}

/// A step of shards with values on disk (PSW over static and dynamic shards).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ShardsIteration {
    /// The shards the step loaded.
    pub kind: StepKind,
    /// Always `disk` here.
    pub shards_values: ShardValues,
    /// Bytes of static shards read.
    pub static_bytes_read: u64,
    /// Bytes of static shards written back (changed blocks).
    pub static_bytes_written: u64,
    /// Bytes of dynamic shards read.
    pub dynamic_bytes_read: u64,
    /// Bytes of dynamic shards written.
    pub dynamic_bytes_written: u64,
    /// Edge records loaded.
    pub edges_loaded: u64,
    /// Edge records whose message changed.
    pub dirty_edges: u64,
    /// `dirty_edges / edges_loaded` (0 when nothing was loaded).
    pub edge_utilisation: f64,
    /// Vertices that entered the delay buffer in this step.
    pub delayed_vertices_added: u64,
    /// Delayed vertices whose messages went out in this step.
    pub delayed_vertices_delivered: u64,
    /// Bytes the delay buffer holds after the step.
    pub delay_buffer_bytes: u64,
    /// Vertices whose missing edges were read from the adjacency lists (`direct.rs`).
    pub directly_served_vertices: u64,
    /// Messages delivered along those edges.
    pub direct_messages: u64,
    /// Of those, messages spilled to sorted runs.
    pub direct_messages_spilled: u64,
    /// Bytes of adjacency lists read for direct delivery.
    pub adjacency_bytes_read: u64,
    /// Edges of the dynamic shards built in this step, when it built them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_shard_edges: Option<u64>,
    /// The share of updated edges that decided the dynamic shards, when a policy decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_updated_share: Option<f64>,
}

/// A step of shards with values in memory (static shards, read once a step).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ShardsMemoryIteration {
    /// Always `static`.
    pub kind: StepKind,
    /// Always `memory`.
    pub shards_values: ShardValues,
    /// Bytes of shard topology read.
    pub static_bytes_read: u64,
    /// Always 0: nothing is written back.
    pub static_bytes_written: u64,
    /// Edges of the shards read.
    pub edges_loaded: u64,
    /// Messages folded into the accumulators.
    pub messages: u64,
}

/// A superstep of pregel: this rank's figures unless named for all ranks.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PregelIteration {
    /// Messages this rank sent.
    pub messages_sent: u64,
    /// Messages all ranks sent.
    pub messages_sent_all_ranks: u64,
    /// Messages to the rank's own vertices combined as generated (recoded mode).
    pub messages_combined_locally: u64,
    /// Message files this rank wrote.
    pub message_files: u64,
    /// Message batches this rank received.
    pub batches_received: u64,
    /// Bytes of messages this rank received.
    pub message_bytes_received: u64,
    /// Seeks in the edge streams (skipped halted vertices).
    pub edge_stream_seeks: u64,
    /// Vertices awake after the step, over all ranks.
    pub awake_after: u64,
    /// Threads that computed a chunk of the rank's vertices (several only with resident lists).
    pub threads: u64,
}

/// One neighborhood query on nwsm, summed over the ranks. The run repeats the last query's
/// figures with the prefix `nwsm_` ([`RunFigures::nwsm`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NwsmQuery {
    /// The `bbp-P-Q` layout read.
    pub layout: String,
    /// Ranks (P).
    pub ranks: u64,
    /// Chunks per rank and level (Q).
    pub q: u64,
    /// Bytes of a slotted page.
    pub page_size: u64,
    /// Whether this query built a finer layout than the one the store had.
    pub repartitioned: bool,
    /// Seconds spent finding or building the layout.
    pub partition_seconds: f64,
    /// Bytes read while building the layout.
    pub partition_bytes_read: u64,
    /// Bytes written while building the layout (0 when it existed).
    pub partition_bytes_written: u64,
    /// The memory plan the ranks ran under.
    pub memory_plan: NwsmMemoryPlan,
    /// Σ deg² of the graph (Theorem 4.1's bound on the level-2 work).
    pub sum_degree_squared: u64,
    /// Level-1 windows streamed.
    pub level1_window_slides: u64,
    /// Level-2 windows streamed.
    pub level2_window_slides: u64,
    /// Both.
    pub window_slides: u64,
    /// Vertices marked as of interest for level 2.
    pub vertices_of_interest_marked: u64,
    /// Adjacency entries materialised in windows.
    pub adjacency_entries_loaded: u64,
    /// Page lookups found in the buffer manager.
    pub page_hits: u64,
    /// Page lookups that read the page.
    pub page_misses: u64,
    /// Pages evicted.
    pub page_evictions: u64,
    /// Bytes of pages read locally.
    pub page_bytes_read: u64,
    /// Pages asked of other ranks.
    pub remote_pages: u64,
    /// Pages served to other ranks.
    pub pages_served: u64,
    /// Bytes sent over the transport.
    pub network_bytes_sent: u64,
    /// Most bytes of update batches in flight at once.
    pub max_update_bytes_in_flight: u64,
    /// Largest page reply in bytes.
    pub max_page_reply_bytes: u64,
    /// Times a sender waited for update credit.
    pub update_credit_waits: u64,
    /// Bytes the plan charged: resident part plus every rank's share.
    pub memory_charged_bytes: u64,
    /// Bytes of the one-level query's column copied into BBP order; 0 when the query has none,
    /// or the budget held no copy and neighbours' entries were read through their store ids.
    pub column_copy_bytes: u64,
    /// The gather counters, summed over the ranks, as keys of the query.
    #[serde(flatten)]
    pub gather: GatherStats,
    /// Pages read ahead for the next level-1 window.
    pub prefetched_pages: u64,
    /// Seconds the read-ahead thread read.
    pub busy_prefetch_read_seconds: f64,
    /// Seconds of disk reads, read-ahead included.
    pub busy_disk_read_seconds: f64,
    /// Seconds of scatter (the query's own work).
    pub busy_compute_seconds: f64,
    /// Seconds of transport sends and receives.
    pub busy_network_seconds: f64,
    /// Seconds of applying gathered values.
    pub busy_apply_seconds: f64,
    /// Seconds from the first scatter to the last apply.
    pub scatter_gather_apply_seconds: f64,
    /// The query's aggregate (e.g. the triangle count).
    pub aggregate: u64,
}

/// Figures of a whole run, written by `--stats-json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
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
    /// Bytes of store files (and derived layouts) whose block checksums this run verified, each
    /// block once per run (`store::blocks`); 0 in a build with the `unchecked-blocks` feature.
    pub bytes_verified: u64,
    pub peak_rss_bytes: u64,
    /// What the run's memory ledger held (`runtime::ledger`): the peak of the bytes charged
    /// against the budget at once and each part's peak, to read beside `peak_rss_bytes` and the
    /// plan's parts.
    pub memory_ledger: LedgerFigures,
    /// The plan of the engine that ran (memory by part, expected bytes and seconds).
    /// Not read back: `run_report` reads the plan's figures itself.
    #[serde(skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub plan: Option<planner::Plan>,
    pub per_iteration: Vec<IterationStats>,
    /// The engines' run-level figures, written as keys of the run beside the ones above.
    #[serde(flatten)]
    pub figures: RunFigures,
}

/// The run-level figures, one section per engine or kind of program run (several when a run
/// mixes them: cache runs edge passes as stream does). A section is absent (no keys) until
/// its engine records it; a later program run of the same engine replaces it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunFigures {
    /// Stream's set-up for its vertex programs: the `stream` object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamRun>,
    /// The set-up of an edge pass: the `edge_pass` object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge_pass: Option<EdgePassRun>,
    /// Cache's set-up and cumulative counters, as keys of the run.
    #[serde(flatten)]
    pub cache: Option<CacheRun>,
    /// Shards' configuration and totals, as keys of the run.
    #[serde(flatten)]
    pub shards: Option<ShardsRun>,
    /// The pregel job: the `pregel` object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pregel: Option<PregelRun>,
    /// The superstep a pregel run resumed from a checkpoint at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pregel_resumed_at_superstep: Option<u64>,
    /// The last nwsm query's figures, as keys of the run prefixed `nwsm_`.
    #[serde(flatten, serialize_with = "nwsm_prefixed", deserialize_with = "nwsm_unprefixed")]
    pub nwsm: Option<NwsmQuery>,
    /// Passes of multi-source SSSP (one per group of sources that fits the budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mssp_passes: Option<u64>,
}

/// Stream's set-up of a vertex program run (`stream/run.rs`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamRun {
    /// The scheduler (`selective`, `full`, `block`).
    #[serde(deserialize_with = "static_name")]
    pub schedule: Name,
    /// The I/O option asked for (`auto`, `direct`, `buffered`).
    #[serde(deserialize_with = "static_name")]
    pub io: Name,
    /// Whether the layouts' files support `O_DIRECT`.
    pub direct_io_supported: bool,
    /// The gap rule's threshold l in bytes.
    pub gap_threshold_bytes: u64,
    /// Where l came from (calibration file, option, default).
    #[serde(deserialize_with = "static_name")]
    pub gap_threshold_source: Name,
    /// The layouts pushed from.
    #[serde(deserialize_with = "static_names")]
    pub layouts: Vec<Name>,
    /// The layout pulled from, if the program has a pull form and it fits (else null).
    #[serde(deserialize_with = "static_name_or_null")]
    pub pull_layout: Option<Name>,
    /// Bytes of all layouts' edge files.
    pub edge_file_bytes: u64,
    /// Bytes of vertex state planned.
    pub vertex_state_bytes: u64,
    /// Per-worker accumulators.
    pub accumulators: u64,
    /// Edge buffers.
    pub buffers: u64,
    /// Bytes of one buffer.
    pub buffer_bytes: u64,
    /// Bytes of the whole plan.
    pub planned_bytes: u64,
    /// Bytes the resident prefix may take: what the budget leaves after the plan, up to the
    /// whole layout (`stream::ResidentSizing`).
    pub resident_room_bytes: u64,
    /// The kernel page cache the engine expects to have.
    pub page_cache_estimate_bytes: u64,
}

/// An edge pass's set-up (`stream/edge_pass.rs`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EdgePassRun {
    /// How csr-out was read.
    pub io: ReadMode,
    /// Bytes of csr-out's targets.
    pub edge_file_bytes: u64,
    /// Bytes of the pass's own state.
    pub state_bytes: u64,
    /// Bytes of csr-out's offsets in memory.
    pub offsets_bytes: u64,
    /// Edge buffers.
    pub buffers: u64,
    /// Bytes of one buffer.
    pub buffer_bytes: u64,
    /// Bytes of the whole plan.
    pub planned_bytes: u64,
}

/// Cache's set-up and its counters since the engine was created (cumulative over the program
/// runs of the algorithm).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CacheRun {
    /// Bytes per page.
    pub cache_page_size: u64,
    /// Share of the cache memory given to the static cache.
    pub cache_static_share: f64,
    /// How the static cache is filled (`gvs`, `highd`, `lowd`, `random`, `none`).
    #[serde(deserialize_with = "static_name")]
    pub cache_selection: Name,
    /// GVS rounds K.
    pub cache_gvs_rounds: u64,
    /// Bytes of cache memory (static cache plus frames).
    pub cache_memory_bytes: u64,
    /// Bytes reserved for vertex state.
    pub cache_reserved_state_bytes: u64,
    /// Bytes of CSR offsets in memory.
    pub cache_offsets_bytes: u64,
    /// Bytes of the page table.
    pub cache_page_table_bytes: u64,
    /// Bytes the static cache may hold.
    pub static_cache_budget_bytes: u64,
    /// How pages are read (`direct` or `buffered`, `fadvise(DONTNEED)`).
    #[serde(deserialize_with = "static_name")]
    pub cache_io_mode: Name,
    /// Frames of the page cache.
    pub page_cache_frames: u64,
    /// Bytes of the page cache's frames.
    pub page_cache_bytes: u64,
    /// How the static cache's vertices were found, when there is one.
    #[serde(flatten)]
    pub selection: Option<CacheSelection>,
    /// The static cache as loaded, when there is one.
    #[serde(flatten)]
    pub static_cache: Option<StaticCacheLoad>,
    /// Parts of the scatter (message arrays folded in part order) of the last program run.
    pub scatter_parts: u64,
    /// Page lookups found in the page cache.
    pub page_cache_hits: u64,
    /// Page lookups that read the page.
    pub page_cache_misses: u64,
    /// hits / (hits + misses), 0 without lookups.
    pub page_cache_hit_ratio: f64,
    /// Pages evicted.
    pub page_cache_evictions: u64,
    /// The share of a page's bytes that were used, over pages evicted or resident (null
    /// without pages; paper §5.1).
    pub page_utilisation: Option<f64>,
    /// Pages counted in `page_utilisation`.
    pub page_utilisation_pages: u64,
    /// Lists served whole by the static cache.
    pub static_cache_hits: u64,
    /// static hits / all lists scattered, 0 without lists.
    pub static_cache_hit_ratio: f64,
    /// Read requests issued (after merging).
    pub requests_issued: u64,
    /// Requests that cover more than one page.
    pub merged_requests: u64,
    /// Pages read.
    pub pages_read: u64,
    /// `pages_read` times the page size.
    pub page_bytes_read: u64,
}

/// Where a static cache selection came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheSelection {
    /// `computed` or `loaded from the store`.
    #[serde(deserialize_with = "static_name")]
    pub selection_source: Name,
    /// Seconds to compute or load it.
    pub selection_seconds: f64,
    /// Bytes read to compute it (absent when loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection_bytes_read: Option<u64>,
}

/// The static cache as loaded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StaticCacheLoad {
    /// Vertices whose lists it holds.
    pub static_cache_vertices: u64,
    /// Arcs it holds.
    pub static_cache_edges: u64,
    /// Bytes it holds.
    pub static_cache_bytes: u64,
    /// Seconds to load it.
    pub static_cache_load_seconds: f64,
    /// Bytes read to load it.
    pub static_cache_load_bytes: u64,
}

/// Shards' configuration of a run, and its totals once it ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardsRun {
    /// Shards of the layout (P).
    pub shards: u64,
    /// Where the vertex values were (`memory` or `disk`).
    pub shards_values: ShardValues,
    /// The sizing of the values-in-memory mode, when it ran.
    #[serde(flatten)]
    pub memory: Option<ShardsMemorySizing>,
    /// The dynamic-shard policy that ran (`off` with values in memory).
    pub dynamic_policy: DynamicPolicy,
    /// Why that policy (and where the values were).
    pub dynamic_policy_reason: String,
    /// Where delayed vertices' messages went.
    pub delayed_delivery: DelayedDelivery,
    /// Shadow iterations run (absent until the run ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow_iterations: Option<u64>,
    /// Dynamic shard sets built (absent until the run ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_sets_built: Option<u64>,
    /// Directories those sets' files were written in: a retired set's directory (and its
    /// files) is reused by the next set, so this stays at the number of sets alive at once
    /// (absent until the run ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_set_directories: Option<u64>,
    /// The process's peak RSS at the end of the run (absent until the run ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_peak_rss_bytes: Option<u64>,
}

/// The memory of shards' values-in-memory mode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardsMemorySizing {
    /// Bytes of values, messages, flags and one shard's topology.
    pub shards_values_bytes: u64,
    /// Accumulator slices.
    pub shards_accumulators: u64,
    /// Bytes of all shards' topology (read once a step).
    pub shards_topology_bytes: u64,
}

/// The pregel job, as rank 0 (or this rank, under mpirun) saw it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PregelRun {
    /// This process's rank.
    pub rank: u64,
    /// Ranks of the job (W).
    pub ranks: u64,
    /// Whether the recoded partition ran.
    pub recoded: bool,
    /// Bytes of a message file.
    pub message_file_size: u64,
    /// How vertex names were chosen.
    pub naming: Naming,
    /// Every rank's figures, in rank order.
    pub per_rank: Vec<PregelRankFigures>,
}

/// One rank's figures for the whole pregel job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PregelRankFigures {
    pub rank: u64,
    pub peak_rss_bytes: u64,
    pub message_bytes_sent: u64,
    pub message_files_sent: u64,
    /// Bytes of the rank's partition directory.
    pub partition_bytes_on_disk: u64,
    /// Vertices the rank holds.
    pub vertices: u64,
}

impl<'de> Deserialize<'de> for IterationFigures {
    /// Written untagged; read back as the first variant (most specific first) whose own key
    /// the iteration has, or `None` when it has none of them.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use IterationFigures as F;
        let keys = Map::deserialize(deserializer)?;
        let has = |key: &str| keys.contains_key(key);
        let figures = Value::Object(keys.clone());
        Ok(if has("layout") {
            F::Nwsm(from_value(figures)?)
        } else if has("messages_sent") {
            F::Pregel(from_value(figures)?)
        } else if has("dynamic_bytes_read") {
            F::Shards(from_value(figures)?)
        } else if has("shards_values") {
            F::ShardsMemory(from_value(figures)?)
        } else if has("page_cache_hits") {
            F::Cache(from_value(figures)?)
        } else if has("dense") {
            F::Stream(from_value(figures)?)
        } else if has("compute_seconds") {
            F::EdgePass(from_value(figures)?)
        } else if has("applied") {
            F::InMemory(from_value(figures)?)
        } else if has("messages") {
            F::InMemoryPregel(from_value(figures)?)
        } else {
            F::None
        })
    }
}

fn from_value<T: DeserializeOwned, E: serde::de::Error>(value: Value) -> Result<T, E> {
    T::deserialize(value).map_err(E::custom)
}

/// Reads the run's keys prefixed `nwsm_` back into the last query's figures.
fn nwsm_unprefixed<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<NwsmQuery>, D::Error> {
    let keys = Map::deserialize(deserializer)?;
    let query: Map<String, Value> =
        keys.into_iter().filter_map(|(key, value)| Some((key.strip_prefix("nwsm_")?.to_string(), value))).collect();
    if query.is_empty() {
        return Ok(None);
    }
    from_value(Value::Object(query)).map(Some)
}

/// Reads a name the engines write from a `&'static str` (a schedule, a layout). Each distinct
/// name is kept once for the life of the process, as the engines' own names are.
/// A name an engine writes. The alias keeps serde from borrowing it from the input (it would
/// for `&str`): a name read back is [interned](intern).
pub type Name = &'static str;

fn static_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static str, D::Error> {
    Ok(intern(String::deserialize(deserializer)?))
}

fn static_names<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<&'static str>, D::Error> {
    Ok(Vec::<String>::deserialize(deserializer)?.into_iter().map(intern).collect())
}

fn static_name_or_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'static str>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.map(intern))
}

fn intern(name: String) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&known) = names.get(name.as_str()) {
        return known;
    }
    let name: &'static str = Box::leak(name.into_boxed_str());
    names.insert(name);
    name
}

fn nwsm_prefixed<S: Serializer>(query: &Option<NwsmQuery>, serializer: S) -> Result<S::Ok, S::Error> {
    let Some(query) = query else { return serializer.serialize_unit() };
    let Value::Object(keys) = serde_json::to_value(query).map_err(serde::ser::Error::custom)? else {
        return Err(serde::ser::Error::custom("a query's figures are a struct"));
    };
    serializer.collect_map(keys.iter().map(|(key, value)| (format!("nwsm_{key}"), value)))
}

/// Writes a [`Duration`] as its seconds, as the figures write times (`with` of a field).
pub(crate) mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(time: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(time.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        Ok(Duration::try_from_secs_f64(f64::deserialize(deserializer)?).unwrap_or_default())
    }
}
