//! The keys of `--stats-json` per engine (`engine/stats.rs`): each engine runs a small graph,
//! its `RunStats` is serialised as the CLI writes it, and the keys with their JSON types must
//! equal a golden list (taken from the files written before the figures were typed, so readers
//! of the files — Python, scripts, `run_report` — see the same keys). The typed figures must
//! also agree with each other (per-iteration counters against the run's).

#[path = "cache_support/mod.rs"]
mod cache_support;

use std::collections::BTreeSet;

use cache_support::*;
use outcore::algo::AlgorithmParams;
use outcore::engine::cache::{CacheOptions, SelectionMethod};
use outcore::engine::shards::{DynamicPolicy, ShardValues, ShardsOptions};
use outcore::engine::{EngineKind, RunOptions, RunStats, Runner};
use outcore::runtime::MemoryBudget;
use outcore::store::Store;
use serde_json::Value;

/// Keys every stats file has (`plan` and the CLI's `summary` are left out of the comparison);
/// `delivery` is in iterations whose engine chose push or pull.
const COMMON: &[&str] = &[
    ":object",
    ".algorithm:str",
    ".bytes_read:int",
    ".bytes_verified:int",
    ".bytes_written:int",
    ".edges:int",
    ".engine:str",
    ".engine_reason:str",
    ".iterations:int",
    ".memory_budget_bytes:int",
    ".memory_ledger:object",
    ".memory_ledger.parts:list",
    ".memory_ledger.parts[]:object",
    ".memory_ledger.parts[].part:str",
    ".memory_ledger.parts[].peak_bytes:int",
    ".memory_ledger.peak_bytes:int",
    ".peak_rss_bytes:int",
    ".per_iteration:list",
    ".per_iteration[]:object",
    ".per_iteration[].active_vertices:int",
    ".per_iteration[].bytes_read:int",
    ".per_iteration[].bytes_written:int",
    ".per_iteration[].delivery:str",
    ".per_iteration[].edges_processed:int",
    ".per_iteration[].iteration:int",
    ".per_iteration[].seconds:float",
    ".read_requests:int",
    ".vertices:int",
    ".wall_seconds:float",
];

const IN_MEMORY: &[&str] = &[".per_iteration[].applied:int", ".per_iteration[].push_tasks:int"];

const IN_MEMORY_PREGEL: &[&str] = &[".per_iteration[].messages:int", ".per_iteration[].threads:int"];

const STREAM: &[&str] = &[
    ".per_iteration[].active_edges:int",
    ".per_iteration[].buffer_fills:int",
    ".per_iteration[].bytes_skipped:int",
    ".per_iteration[].chunks_read:int",
    ".per_iteration[].compute_seconds:float",
    ".per_iteration[].dense:bool",
    ".per_iteration[].io_mode:str",
    ".per_iteration[].io_wait_seconds:float",
    ".per_iteration[].read_requests:int",
    ".per_iteration[].resident_edges:int",
    ".per_iteration[].sources_ordered:bool",
    ".stream:object",
    ".stream.accumulators:int",
    ".stream.buffer_bytes:int",
    ".stream.buffers:int",
    ".stream.direct_io_supported:bool",
    ".stream.edge_file_bytes:int",
    ".stream.gap_threshold_bytes:int",
    ".stream.gap_threshold_source:str",
    ".stream.io:str",
    ".stream.layouts:list",
    ".stream.layouts[]:str",
    ".stream.page_cache_estimate_bytes:int",
    ".stream.planned_bytes:int",
    ".stream.pull_layout:str?",
    ".stream.resident_room_bytes:int",
    ".stream.schedule:str",
    ".stream.vertex_state_bytes:int",
];

const EDGE_PASS: &[&str] = &[
    ".edge_pass:object",
    ".edge_pass.buffer_bytes:int",
    ".edge_pass.buffers:int",
    ".edge_pass.edge_file_bytes:int",
    ".edge_pass.io:str",
    ".edge_pass.offsets_bytes:int",
    ".edge_pass.planned_bytes:int",
    ".edge_pass.state_bytes:int",
    ".per_iteration[].compute_seconds:float",
    ".per_iteration[].io_mode:str",
    ".per_iteration[].io_wait_seconds:float",
    ".per_iteration[].read_requests:int",
];

const CACHE: &[&str] = &[
    ".cache_gvs_rounds:int",
    ".cache_io_mode:str",
    ".cache_memory_bytes:int",
    ".cache_offsets_bytes:int",
    ".cache_page_size:int",
    ".cache_page_table_bytes:int",
    ".cache_reserved_state_bytes:int",
    ".cache_selection:str",
    ".cache_static_share:float",
    ".merged_requests:int",
    ".page_bytes_read:int",
    ".page_cache_bytes:int",
    ".page_cache_evictions:int",
    ".page_cache_frames:int",
    ".page_cache_hit_ratio:float",
    ".page_cache_hits:int",
    ".page_cache_misses:int",
    ".page_utilisation:float?",
    ".page_utilisation_pages:int",
    ".pages_read:int",
    ".per_iteration[].merged_requests:int",
    ".per_iteration[].page_cache_evictions:int",
    ".per_iteration[].page_cache_hits:int",
    ".per_iteration[].page_cache_misses:int",
    ".per_iteration[].requests_issued:int",
    ".per_iteration[].static_cache_hits:int",
    ".requests_issued:int",
    ".scatter_parts:int",
    ".selection_bytes_read:int",
    ".selection_seconds:float",
    ".selection_source:str",
    ".static_cache_budget_bytes:int",
    ".static_cache_bytes:int",
    ".static_cache_edges:int",
    ".static_cache_hit_ratio:float",
    ".static_cache_hits:int",
    ".static_cache_load_bytes:int",
    ".static_cache_load_seconds:float",
    ".static_cache_vertices:int",
];

/// Both values modes of shards.
const SHARDS_RUN: &[&str] = &[
    ".delayed_delivery:str",
    ".dynamic_policy:str",
    ".dynamic_policy_reason:str",
    ".dynamic_set_directories:int",
    ".dynamic_sets_built:int",
    ".engine_peak_rss_bytes:int",
    ".shadow_iterations:int",
    ".shards:int",
    ".shards_values:str",
];

const SHARDS_DISK: &[&str] = &[
    ".per_iteration[].adjacency_bytes_read:int",
    ".per_iteration[].delay_buffer_bytes:int",
    ".per_iteration[].delayed_vertices_added:int",
    ".per_iteration[].delayed_vertices_delivered:int",
    ".per_iteration[].direct_messages:int",
    ".per_iteration[].direct_messages_spilled:int",
    ".per_iteration[].directly_served_vertices:int",
    ".per_iteration[].dirty_edges:int",
    ".per_iteration[].dynamic_bytes_read:int",
    ".per_iteration[].dynamic_bytes_written:int",
    ".per_iteration[].dynamic_shard_edges:int",
    ".per_iteration[].dynamic_updated_share:float",
    ".per_iteration[].edge_utilisation:float",
    ".per_iteration[].edges_loaded:int",
    ".per_iteration[].kind:str",
    ".per_iteration[].shards_values:str",
    ".per_iteration[].static_bytes_read:int",
    ".per_iteration[].static_bytes_written:int",
];

const SHARDS_MEMORY: &[&str] = &[
    ".per_iteration[].edges_loaded:int",
    ".per_iteration[].kind:str",
    ".per_iteration[].messages:int",
    ".per_iteration[].shards_values:str",
    ".per_iteration[].static_bytes_read:int",
    ".per_iteration[].static_bytes_written:int",
    ".shards_accumulators:int",
    ".shards_topology_bytes:int",
    ".shards_values_bytes:int",
];

const PREGEL: &[&str] = &[
    ".per_iteration[].awake_after:int",
    ".per_iteration[].batches_received:int",
    ".per_iteration[].edge_stream_seeks:int",
    ".per_iteration[].message_bytes_received:int",
    ".per_iteration[].message_files:int",
    ".per_iteration[].messages_combined_locally:int",
    ".per_iteration[].messages_sent:int",
    ".per_iteration[].messages_sent_all_ranks:int",
    ".per_iteration[].threads:int",
    ".pregel:object",
    ".pregel.message_file_size:int",
    ".pregel.naming:str",
    ".pregel.per_rank:list",
    ".pregel.per_rank[]:object",
    ".pregel.per_rank[].message_bytes_sent:int",
    ".pregel.per_rank[].message_files_sent:int",
    ".pregel.per_rank[].partition_bytes_on_disk:int",
    ".pregel.per_rank[].peak_rss_bytes:int",
    ".pregel.per_rank[].rank:int",
    ".pregel.per_rank[].vertices:int",
    ".pregel.rank:int",
    ".pregel.ranks:int",
    ".pregel.recoded:bool",
];

/// An nwsm query's figures: each is a key of the query's iteration, and of the run with the
/// prefix `nwsm_`.
const NWSM_QUERY: &[&str] = &[
    "adjacency_entries_loaded:int",
    "aggregate:int",
    "busy_apply_seconds:float",
    "busy_compute_seconds:float",
    "busy_disk_read_seconds:float",
    "busy_gather_seconds:float",
    "busy_network_seconds:float",
    "busy_prefetch_read_seconds:float",
    "layout:str",
    "level1_window_slides:int",
    "level2_window_slides:int",
    "max_page_reply_bytes:int",
    "max_update_bytes_in_flight:int",
    "memory_charged_bytes:int",
    "column_copy_bytes:int",
    "memory_plan:object",
    "memory_plan.apply_chunk_vertices:int",
    "memory_plan.frames:int",
    "memory_plan.global_gather_bytes:int",
    "memory_plan.local_gather_records:int",
    "memory_plan.output_share_bytes:int",
    "memory_plan.output_share_vertices:int",
    "memory_plan.page_reply_bytes:int",
    "memory_plan.per_rank_bytes:int",
    "memory_plan.prefetch_pages:int",
    "memory_plan.q:int",
    "memory_plan.remote_batch_pages:int",
    "memory_plan.resident_bytes:int",
    "memory_plan.spill_buffer_bytes:int",
    "memory_plan.update_flight_bytes:int",
    "memory_plan.update_window_bytes:int",
    "memory_plan.voi_bytes:int",
    "memory_plan.window1_bytes:int",
    "memory_plan.window2_bytes:int",
    "network_bytes_sent:int",
    "page_bytes_read:int",
    "page_evictions:int",
    "page_hits:int",
    "page_misses:int",
    "page_size:int",
    "pages_served:int",
    "partition_bytes_read:int",
    "partition_bytes_written:int",
    "partition_seconds:float",
    "prefetched_pages:int",
    "q:int",
    "ranks:int",
    "remote_pages:int",
    "repartitioned:bool",
    "scatter_gather_apply_seconds:float",
    "spill_bytes_read:int",
    "spill_bytes_written:int",
    "sum_degree_squared:int",
    "update_credit_waits:int",
    "updates_gathered_in_memory:int",
    "updates_sent:int",
    "updates_spilled:int",
    "updates_to_other_ranks:int",
    "vertices_of_interest_marked:int",
    "window_slides:int",
];

/// Per-iteration keys that only some iterations have.
const SOMETIMES: &[&str] = &["delivery", "dynamic_shard_edges", "dynamic_updated_share"];

/// `path:type` of every key in `value` (arrays by `[]`, their elements merged), as the golden
/// lists write them.
fn shape(value: &Value, path: &str, out: &mut BTreeSet<String>) {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(items) => {
            items.iter().for_each(|item| shape(item, &format!("{path}[]"), out));
            "list"
        }
        Value::Object(map) => {
            map.iter().for_each(|(key, item)| shape(item, &format!("{path}.{key}"), out));
            "object"
        }
    };
    out.insert(format!("{path}:{kind}"));
}

/// Checks the stats' keys and types against `COMMON` plus `golden` (a `type?` in the golden
/// list also admits null), and that every iteration has every per-iteration key but those
/// in `SOMETIMES`.
fn assert_keys(what: &str, stats: &RunStats, golden: &[&str]) -> Value {
    let json = serde_json::to_value(stats).unwrap();
    let mut actual = BTreeSet::new();
    shape(&json, "", &mut actual);
    actual.retain(|line| !line.starts_with(".plan"));
    let want: BTreeSet<String> = COMMON.iter().chain(golden).map(|s| s.to_string()).collect();
    // A nullable key matches its type or null.
    let actual: BTreeSet<String> = actual
        .into_iter()
        .map(|line| {
            let (path, kind) = line.rsplit_once(':').unwrap();
            want.iter()
                .find(|w| {
                    w.strip_suffix('?')
                        .and_then(|w| w.rsplit_once(':'))
                        .is_some_and(|(p, k)| p == path && (k == kind || kind == "null"))
                })
                .cloned()
                .unwrap_or(line)
        })
        .collect();
    let delivery = ".per_iteration[].delivery:str".to_string();
    let missing: Vec<_> = want.difference(&actual).filter(|line| **line != delivery).collect();
    let unexpected: Vec<_> = actual.difference(&want).collect();
    assert!(missing.is_empty() && unexpected.is_empty(), "{what}: missing {missing:?}, unexpected {unexpected:?}");
    let every: Vec<&str> = want
        .iter()
        .filter_map(|line| line.strip_prefix(".per_iteration[]."))
        .map(|line| line.split([':', '.']).next().unwrap())
        .filter(|key| !SOMETIMES.contains(key))
        .collect();
    for iteration in json["per_iteration"].as_array().unwrap() {
        for key in &every {
            assert!(iteration.get(key).is_some(), "{what}: iteration {} lacks {key}", iteration["iteration"]);
        }
    }
    json
}

/// What every run's figures satisfy: the iterations' bytes are within the run's.
fn assert_counters(what: &str, stats: &RunStats) {
    let read: u64 = stats.per_iteration.iter().map(|i| i.bytes_read).sum();
    let written: u64 = stats.per_iteration.iter().map(|i| i.bytes_written).sum();
    assert!(read <= stats.bytes_read, "{what}: iterations read {read} of the run's {}", stats.bytes_read);
    assert!(written <= stats.bytes_written, "{what}: iterations wrote {written} of the run's {}", stats.bytes_written);
    assert_eq!(stats.iterations, stats.per_iteration.len(), "{what}");
}

fn runner(store: &Store, engine: EngineKind, memory: u64, set: impl FnOnce(&mut RunOptions)) -> Runner {
    let mut options = RunOptions { engine, memory: MemoryBudget::new(memory), ..RunOptions::default() };
    set(&mut options);
    Runner::new(store, options)
}

fn finished(runner: &Runner, algorithm: &str, p: &AlgorithmParams) -> RunStats {
    run(runner, algorithm, p);
    runner.finish(algorithm)
}

#[test]
fn every_engine_writes_its_golden_keys_and_consistent_figures() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(&dir.path().join("directed"), &rmat(9, 8, 3, true));
    let undirected = build(&dir.path().join("undirected"), &rmat(8, 8, 3, false));
    let bfs = AlgorithmParams { source: Some(original(0)), ..params() };
    let arcs = store.num_arcs();

    // inmem: a vertex program, and a Pregel program (Louvain's moving phase).
    let stats = finished(&runner(&store, EngineKind::InMemory, 64 << 20, |_| {}), "bfs", &bfs);
    assert_keys("inmem bfs", &stats, IN_MEMORY);
    assert_counters("inmem bfs", &stats);
    let applied: u64 = stats.per_iteration.iter().map(|i| i.figures.in_memory().unwrap().applied).sum();
    assert!(applied > 0 && applied <= stats.vertices * stats.iterations as u64);
    let stats = finished(&runner(&undirected, EngineKind::InMemory, 64 << 20, |_| {}), "louvain", &params());
    assert_keys("inmem louvain", &stats, IN_MEMORY_PREGEL);
    assert!(stats.per_iteration.iter().all(|i| i.figures.in_memory_pregel().is_some()));

    // stream: a vertex program, and an edge pass (wcc's union-find).
    let stats = finished(&runner(&store, EngineKind::Stream, 64 << 20, |_| {}), "bfs", &bfs);
    assert_keys("stream bfs", &stats, STREAM);
    assert_counters("stream bfs", &stats);
    let setup = stats.figures.stream.as_ref().unwrap();
    let requests: u64 = stats.per_iteration.iter().map(|i| i.figures.stream().unwrap().read_requests).sum();
    assert!(requests <= stats.read_requests, "stream: {requests} requests of the run's {}", stats.read_requests);
    for i in &stats.per_iteration {
        let figures = i.figures.stream().unwrap();
        assert!(figures.active_edges <= arcs && figures.buffer_fills <= figures.read_requests.max(1) * setup.buffers);
    }
    let stats = finished(&runner(&store, EngineKind::Stream, 64 << 20, |_| {}), "wcc", &params());
    assert_keys("stream wcc", &stats, EDGE_PASS);
    assert_counters("stream wcc", &stats);
    let pass = stats.per_iteration[0].figures.edge_pass().unwrap();
    assert_eq!(stats.per_iteration[0].edges_processed, arcs);
    assert!(pass.read_requests >= 1 && pass.read_requests <= stats.read_requests);
    assert!(stats.per_iteration[0].bytes_read >= stats.figures.edge_pass.as_ref().unwrap().edge_file_bytes);

    // cache, with a static cache: the iterations' counters add up to the run's.
    let cache = CacheOptions { page_size: 512, selection: SelectionMethod::Gvs, ..CacheOptions::default() };
    let stats = finished(&runner(&store, EngineKind::Cache, 8 << 20, |o| o.cache = cache), "bfs", &bfs);
    assert_keys("cache bfs", &stats, CACHE);
    assert_counters("cache bfs", &stats);
    let run = stats.figures.cache.as_ref().unwrap();
    let sum = |f: fn(&outcore::engine::CacheIteration) -> u64| -> u64 {
        stats.per_iteration.iter().map(|i| f(i.figures.cache().unwrap())).sum()
    };
    assert_eq!(sum(|i| i.page_cache_hits), run.page_cache_hits);
    assert_eq!(sum(|i| i.page_cache_misses), run.page_cache_misses);
    assert_eq!(sum(|i| i.static_cache_hits), run.static_cache_hits);
    assert_eq!(sum(|i| i.requests_issued), run.requests_issued);
    assert_eq!(sum(|i| i.merged_requests), run.merged_requests);
    assert!(run.page_bytes_read <= stats.bytes_read);

    // shards with values on disk and dynamic shards (ODS), then with values in memory.
    let shards = |values, dynamic| ShardsOptions { shards: Some(8), dynamic, values, ..ShardsOptions::default() };
    let pr_delta = AlgorithmParams { tolerance: Some(1e-4), ..params() };
    let disk = shards(ShardValues::Disk, Some(DynamicPolicy::Ods));
    let stats = finished(&runner(&store, EngineKind::Shards, 1 << 20, |o| o.shards = disk), "pr-delta", &pr_delta);
    let golden: Vec<&str> = SHARDS_RUN.iter().chain(SHARDS_DISK).copied().collect();
    assert_keys("shards on disk", &stats, &golden);
    assert_counters("shards on disk", &stats);
    for i in &stats.per_iteration {
        let f = i.figures.shards().unwrap();
        let shard_bytes = f.static_bytes_read + f.dynamic_bytes_read + f.adjacency_bytes_read;
        assert!(shard_bytes <= i.bytes_read, "shards step {}: {shard_bytes} of {}", i.iteration, i.bytes_read);
        assert!(f.dirty_edges <= f.edges_loaded && (0.0..=1.0).contains(&f.edge_utilisation));
    }
    let memory = shards(ShardValues::Memory, None);
    let stats = finished(&runner(&store, EngineKind::Shards, 64 << 20, |o| o.shards = memory), "bfs", &bfs);
    let golden: Vec<&str> = SHARDS_RUN.iter().chain(SHARDS_MEMORY).copied().collect();
    assert_keys("shards in memory", &stats, &golden);
    assert_counters("shards in memory", &stats);
    let topology = stats.figures.shards.as_ref().unwrap().memory.as_ref().unwrap().shards_topology_bytes;
    assert!(stats.per_iteration.iter().all(|i| i.figures.shards_memory().unwrap().static_bytes_read <= topology));

    // pregel, one rank: this rank's messages are all ranks' messages.
    let stats = finished(&runner(&store, EngineKind::Pregel, 64 << 20, |_| {}), "bfs", &bfs);
    assert_keys("pregel", &stats, PREGEL);
    assert_counters("pregel", &stats);
    for i in &stats.per_iteration {
        let f = i.figures.pregel().unwrap();
        assert_eq!(f.messages_sent, f.messages_sent_all_ranks, "pregel step {}", i.iteration);
    }
    assert_eq!(stats.figures.pregel.as_ref().unwrap().per_rank.len(), 1);

    // nwsm: the run repeats the last query's figures with the prefix nwsm_.
    let stats = finished(&runner(&undirected, EngineKind::Nwsm, 64 << 20, |_| {}), "tc", &params());
    let per_iteration = NWSM_QUERY.iter().map(|k| format!(".per_iteration[].{k}"));
    let run_level = NWSM_QUERY.iter().map(|k| format!(".nwsm_{k}"));
    let golden: Vec<String> = per_iteration.chain(run_level).collect();
    let json = assert_keys("nwsm", &stats, &golden.iter().map(String::as_str).collect::<Vec<_>>());
    assert_counters("nwsm", &stats);
    let last = json["per_iteration"].as_array().unwrap().last().unwrap();
    for key in NWSM_QUERY.iter().map(|k| k.split([':', '.']).next().unwrap()) {
        assert_eq!(json[format!("nwsm_{key}")], last[key], "nwsm_{key}");
    }
}
