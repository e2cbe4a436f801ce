//! The cache engine against the in-memory engine (the oracle) and against independent
//! references: Graphalytics graphs and generated graphs, 512-byte and 8 KiB pages, every static
//! cache selection, budgets small enough that pages are evicted (asserted from the run's
//! figures); betweenness exactly against networkx (reference files made by
//! `scripts/reference/networkx_reference.py`); diameter against exact diameters.

mod cache_support;
mod inmem_support;

use std::path::Path;

use cache_support::*;
use outcore::algo::{AlgorithmParams, ValueColumn};
use outcore::engine::cache::SelectionMethod;
use outcore::store::Store;

const SELECTIONS: [SelectionMethod; 5] = [
    SelectionMethod::None,
    SelectionMethod::Gvs,
    SelectionMethod::LowD,
    SelectionMethod::HighD,
    SelectionMethod::Random,
];

/// The algorithms of the cache engine with their parameters for a graph (sources as original ids).
fn workload(source: &str, weighted: bool) -> Vec<(&'static str, AlgorithmParams)> {
    let mut list = vec![
        ("bfs", AlgorithmParams { source: Some(source.into()), ..params() }),
        ("wcc", params()),
        ("diameter", AlgorithmParams { sweeps: Some(3), seed: Some(7), ..params() }),
        ("bc", AlgorithmParams { num_sources: Some(4), seed: Some(3), ..params() }),
        ("msbfs", AlgorithmParams { num_sources: Some(70), seed: Some(5), ..params() }),
    ];
    if weighted {
        list.push(("sssp", AlgorithmParams { source: Some(source.into()), ..params() }));
    }
    list
}

/// Runs the workload on the in-memory engine and on the cache engine for both page sizes and
/// every selection, with `cache_fraction` of the adjacency bytes as cache; returns the most
/// evictions seen in one configuration.
fn check_against_inmem(store: &Store, source: &str, cache_fraction: f64, context: &str) -> f64 {
    let weighted = store.is_weighted();
    let work = workload(source, weighted);
    let inmem = inmem_runner(store);
    let expected: Vec<_> = work.iter().map(|(name, p)| run(&inmem, name, p)).collect();
    let adjacency_bytes: u64 =
        store.manifest().files.iter().filter(|(k, _)| k.starts_with("csr-")).map(|(_, f)| f.bytes).sum();
    let mut most_evictions = 0.0f64;
    for page_size in [512u64, 8192] {
        for selection in SELECTIONS {
            let cache_bytes = ((adjacency_bytes as f64 * cache_fraction) as u64).max(1);
            let runner = cache_runner(store, page_size, selection, cache_bytes);
            for ((name, p), want) in work.iter().zip(&expected) {
                let got = run(&runner, name, p);
                assert_same(
                    &got,
                    want,
                    &format!("{context}: {name}, page {page_size}, selection {}", selection.name()),
                );
            }
            most_evictions = most_evictions.max(cache_figures(&runner).page_cache_evictions as f64);
            let misses = cache_figures(&runner).page_cache_misses;
            assert!(misses > 0 || selection != SelectionMethod::None, "{context}: no page was read");
        }
    }
    most_evictions
}

#[test]
fn graphalytics_graphs_match_inmem() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graphalytics");
    let mut graphs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "properties"))
        .collect();
    graphs.sort();
    assert!(graphs.len() >= 10, "Graphalytics graphs missing in {}", dir.display());
    for properties in graphs {
        let name = properties.file_stem().unwrap().to_string_lossy().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let store = inmem_support::load_graphalytics(&properties, &tmp.path().join("s")).unwrap();
        let first = store.ids().unwrap().original(0).unwrap().to_string();
        check_against_inmem(&store, &first, 0.3, &name);
    }
}

#[test]
fn generated_graphs_match_inmem_with_evictions() {
    let cases = [
        ("rmat-13 directed", rmat(13, 8, 1, true)),
        ("er undirected weighted", erdos_renyi(3000, 12_000, 2, false, true)),
        ("er directed weighted", erdos_renyi(2500, 15_000, 3, true, true)),
        ("grid 60x40", grid(60, 40)),
    ];
    for (name, graph) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let store = build(&tmp.path().join("s"), &graph);
        let evictions = check_against_inmem(&store, &original(1), 0.1, name);
        assert!(evictions > 0.0, "{name}: the budget should force evictions");
    }
}

#[test]
fn page_cache_figures_are_consistent() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &rmat(12, 8, 4, true));
    let runner = cache_runner(&store, 512, SelectionMethod::None, 64 << 10);
    run(&runner, "bfs", &AlgorithmParams { source: Some(original(0)), ..params() });
    let stats = runner.finish("bfs");
    let cache = stats.figures.cache.as_ref().expect("the cache figures");
    let misses = cache.page_cache_misses;
    assert!(misses > 0);
    // Every miss is a page read: the pages read and the bytes the requests moved agree.
    assert_eq!(cache.pages_read, misses);
    let requests = cache.requests_issued;
    assert!(requests > 0 && requests <= misses);
    assert!(cache.merged_requests <= requests);
    let util = cache.page_utilisation.expect("pages were used");
    assert!(util > 0.0 && util <= 1.0, "utilisation {util}");
    assert_eq!(cache.static_cache_hits, 0);
    // Per-iteration figures add up to the totals.
    let per_iteration: u64 = stats.per_iteration.iter().map(|it| it.figures.cache().unwrap().page_cache_misses).sum();
    assert_eq!(per_iteration, misses);
    let bytes: u64 = stats.per_iteration.iter().map(|it| it.bytes_read).sum();
    assert!(bytes <= misses * 512 && bytes > 0);
}

#[test]
fn static_cache_serves_lists_and_selection_is_saved_and_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &rmat(12, 8, 5, true));
    let bfs = AlgorithmParams { source: Some(original(0)), ..params() };
    let first = cache_runner(&store, 512, SelectionMethod::Gvs, 200 << 10);
    run(&first, "bfs", &bfs);
    let stats = first.finish("bfs");
    let cache = stats.figures.cache.as_ref().unwrap();
    assert_eq!(cache.selection.as_ref().unwrap().selection_source, "computed");
    assert!(cache.static_cache_hits > 0);
    let vertices = cache.static_cache.as_ref().unwrap().static_cache_vertices;
    assert!(vertices > 0);
    let store = Store::open(store.dir()).unwrap();
    assert!(store.manifest().layouts.keys().any(|k| k.starts_with("static-cache-selection/gvs-p512-")));
    let second = cache_runner(&store, 512, SelectionMethod::Gvs, 200 << 10);
    run(&second, "bfs", &bfs);
    let stats2 = second.finish("bfs");
    let cache2 = stats2.figures.cache.as_ref().unwrap();
    assert_eq!(cache2.selection.as_ref().unwrap().selection_source, "loaded from the store");
    assert_eq!(cache2.static_cache.as_ref().unwrap().static_cache_vertices, vertices);
    // Same memory without a static cache: every list goes through the page cache.
    let plain = cache_runner(&store, 512, SelectionMethod::None, 200 << 10);
    run(&plain, "bfs", &bfs);
    assert_eq!(cache_figures(&plain).static_cache_hits, 0);
}

/// A first GVS run with room for the lists reads them once for the selection, not once per
/// round (cache_runner: 4 rounds), and the static cache takes its lists from that copy; with
/// less room every round reads them, and the static cache reads its lists again.
#[test]
fn gvs_reads_the_lists_once_when_they_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &rmat(10, 32, 3, true));
    let targets = store.manifest().files["csr-out/targets"].bytes;
    let bfs = AlgorithmParams { source: Some(original(0)), ..params() };
    let first_run = |cache_bytes| {
        let runner = cache_runner(&store, 512, SelectionMethod::Gvs, cache_bytes);
        run(&runner, "bfs", &bfs);
        let figures = cache_figures(&runner);
        let selection = figures.selection.unwrap();
        assert_eq!(selection.selection_source, "computed");
        (selection.selection_bytes_read.unwrap(), figures.static_cache.unwrap())
    };
    let (read, cache) = first_run(targets);
    assert!(read >= targets && read < 2 * targets, "the selection read {read} bytes of {targets}");
    assert!(cache.static_cache_vertices > 0);
    assert_eq!(cache.static_cache_load_bytes, 0);
    let (read, cache) = first_run(targets / 8);
    assert!(read >= 4 * targets, "the selection read {read} bytes of {targets}");
    assert!(cache.static_cache_vertices > 0 && cache.static_cache_load_bytes > 0);
}

/// Lists are scattered from all threads (`cache/parts.rs`): with three threads the
/// run records three parts, and bfs and pr give what one thread gives (bfs exactly, pr within
/// rounding: the parts fold in a fixed order), with the same lists served by the static cache.
#[test]
fn cached_lists_are_scattered_from_every_thread_with_the_same_results() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &rmat(12, 8, 7, true));
    let cases = [
        ("bfs", AlgorithmParams { source: Some(original(0)), ..params() }),
        ("pr", AlgorithmParams { iterations: Some(5), ..params() }),
    ];
    // Small pages with a static cache, and 8 KiB pages without one (batches of the whole
    // graph's 32 Ki edges, cut into groups per part).
    let setups = [(512, SelectionMethod::Gvs, 64 << 10), (8192, SelectionMethod::None, 1 << 20)];
    for ((name, p), (page, selection, cache)) in cases.iter().flat_map(|c| setups.iter().map(move |s| (c, s))) {
        let context = format!("{name}, page {page}, {}", selection.name());
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let runner = cache_runner(&store, *page, *selection, *cache);
                let result = run(&runner, name, p);
                (result, runner.finish(name))
            })
        };
        let (one, one_stats) = on(1);
        let (three, three_stats) = on(3);
        let (one_cache, three_cache) = (one_stats.figures.cache.unwrap(), three_stats.figures.cache.unwrap());
        assert_eq!(one_cache.scatter_parts, 1, "{context}");
        assert_eq!(three_cache.scatter_parts, 3, "{context}");
        assert_eq!(one_cache.static_cache_hits, three_cache.static_cache_hits, "{context}");
        assert_eq!(one_cache.pages_read, three_cache.pages_read, "{context}");
        assert!(three_cache.pages_read > 0, "{context}");
        if *selection != SelectionMethod::None {
            assert!(three_cache.static_cache_hits > 0, "{context}");
        }
        assert_same(&three, &one, &format!("{context}: 3 parts against 1"));
        assert_same(&three, &run(&inmem_runner(&store), name, p), &format!("{context}: 3 parts against inmem"));
    }
}

#[test]
fn gvs_reads_fewer_bytes_than_page_cache_alone_at_equal_memory() {
    // The paper's claim (§5.1) at small scale, judged by bytes read (deterministic), not time.
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &rmat(13, 8, 6, false));
    let cache_bytes = store.manifest().layout_bytes("csr-out") / 4;
    let diameter = AlgorithmParams { sweeps: Some(4), seed: Some(1), ..params() };
    let bytes = |selection| {
        let r = cache_runner(&store, 8192, selection, cache_bytes);
        run(&r, "diameter", &diameter);
        let s = r.finish("diameter");
        s.per_iteration.iter().map(|it| it.bytes_read).sum::<u64>()
    };
    let (plain, gvs) = (bytes(SelectionMethod::None), bytes(SelectionMethod::Gvs));
    assert!(gvs < plain, "GVS read {gvs} bytes, page cache alone {plain}");
}

#[test]
fn too_small_a_budget_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &grid(10, 10));
    let runner = outcore::engine::Runner::new(
        &store,
        outcore::engine::RunOptions {
            engine: outcore::engine::EngineKind::Cache,
            memory: outcore::runtime::MemoryBudget::new(10_000),
            ..Default::default()
        },
    );
    let err = outcore::algo::run_algorithm(&runner, "wcc", &params()).unwrap_err();
    assert!(matches!(err, outcore::Error::MemoryBudget(_)), "{err}");
}

/// Belief propagation keeps more than 64 bytes per vertex (on two threads 48 of beliefs, a
/// message of two states and one per scatter part: 99), which the engine's former fixed
/// reservation refused. With the default options the engine reserves what it keeps and runs
/// it, through a page cache small enough to evict, within bp's tolerance of inmem (messages
/// fold in another order); a fixed reservation of 64 bytes still refuses it with a budget
/// error that names the option.
#[test]
fn programs_keeping_more_than_64_bytes_run_on_their_own_state() {
    use outcore::engine::cache::{budget_for_cache_bytes, CacheOptions};
    use outcore::engine::{EngineKind, RunOptions, Runner};
    use outcore::runtime::MemoryBudget;
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &rmat(10, 8, 3, true));
    let n = store.num_vertices();
    let p = AlgorithmParams { sources: vec![original(0), original(1)], iterations: Some(10), ..params() };
    let fixed = CacheOptions {
        page_size: 512,
        selection: SelectionMethod::None,
        state_bytes_per_vertex: Some(64),
        ..CacheOptions::default()
    };
    // 8 KiB of caches beside 99 bytes per vertex.
    let memory = budget_for_cache_bytes(&store, &fixed, 8 << 10) + (99 - 64) * n;
    let runner = |cache| {
        let options =
            RunOptions { engine: EngineKind::Cache, memory: MemoryBudget::new(memory), cache, ..RunOptions::default() };
        Runner::new(&store, options)
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| {
        let sized = runner(CacheOptions { state_bytes_per_vertex: None, ..fixed.clone() });
        let got = run(&sized, "bp", &p);
        let stats = sized.finish("bp");
        assert_eq!(stats.memory_ledger.part("vertex state"), 99 * n, "{:?}", stats.memory_ledger);
        assert!(stats.figures.cache.as_ref().unwrap().page_cache_evictions > 0, "pages are evicted");
        let want = run(&inmem_runner(&store), "bp", &p);
        for ((name, a), (_, b)) in got.columns.iter().zip(&want.columns) {
            let (ValueColumn::Float(a), ValueColumn::Float(b)) = (a, b) else { panic!("{name}: beliefs are floats") };
            let l1: f64 = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum();
            assert!(l1 <= 1e-5, "{name}: L1 distance {l1} from inmem");
        }
        let err = outcore::algo::run_algorithm(&runner(fixed), "bp", &p).unwrap_err();
        assert!(matches!(&err, outcore::Error::MemoryBudget(why) if why.contains("state_bytes_per_vertex")), "{err}");
    });
}

#[test]
fn msbfs_equals_the_sum_of_single_bfs_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &rmat(10, 6, 7, true));
    let runner = cache_runner(&store, 512, SelectionMethod::Gvs, 16 << 10);
    let sources: Vec<String> = (0..80).map(|i| original(i * 7)).collect();
    let multi = run(&runner, "msbfs", &AlgorithmParams { sources: sources.clone(), ..params() });
    let n = store.num_vertices() as usize;
    let (mut reach, mut sum) = (vec![0u64; n], vec![0u64; n]);
    for s in &sources {
        let bfs = run(&runner, "bfs", &AlgorithmParams { source: Some(s.clone()), ..params() });
        let ValueColumn::Hops(depth) = &bfs.columns[0].1 else { panic!("bfs gives hops") };
        for (v, &d) in depth.iter().enumerate() {
            if d != u64::MAX {
                reach[v] += 1;
                sum[v] += d;
            }
        }
    }
    assert_eq!(multi.columns[0].1, ValueColumn::Count(reach));
    assert_eq!(multi.columns[1].1, ValueColumn::Count(sum));
}

/// networkx's reference file for one graph.
struct Reference {
    store: Store,
    doc: serde_json::Value,
    _dir: tempfile::TempDir,
}

fn references() -> Vec<(String, Reference)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let ids: Vec<u64> = doc["vertices"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let edges: Vec<(u64, u64, f64)> = doc["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e[0].as_u64().unwrap(), e[1].as_u64().unwrap(), 1.0))
            .collect();
        let tmp = tempfile::tempdir().unwrap();
        let directed = doc["directed"].as_bool().unwrap();
        let store = inmem_support::store_with_ids(&tmp.path().join("s"), ids, &edges, directed, false);
        out.push((doc["name"].as_str().unwrap().to_string(), Reference { store, doc, _dir: tmp }));
    }
    assert!(out.len() >= 5, "reference files missing: run scripts/reference/networkx_reference.py");
    out
}

fn check_bc(reference: &Reference, runner: &outcore::engine::Runner, key: &str, p: &AlgorithmParams, context: &str) {
    let result = run(runner, "bc", p);
    let ValueColumn::Float(values) = &result.columns[0].1 else { panic!("bc gives floats") };
    let ids = reference.store.ids().unwrap().all_u64().unwrap();
    for (dense, &value) in values.iter().enumerate() {
        let want = reference.doc[key][ids[dense].to_string()].as_f64().unwrap();
        assert!(
            close(value, want) || (value - want).abs() < 1e-12,
            "{context} {key}: vertex {}: {value} vs networkx {want}",
            ids[dense]
        );
    }
}

#[test]
fn betweenness_equals_networkx_exactly() {
    for (name, reference) in references() {
        let n = reference.store.num_vertices() as usize;
        let sources: Vec<String> =
            reference.doc["sources"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap().to_string()).collect();
        let runners = [
            ("inmem", inmem_runner(&reference.store)),
            ("cache", cache_runner(&reference.store, 512, SelectionMethod::Gvs, 2048)),
        ];
        for (engine, runner) in &runners {
            let context = format!("{name} on {engine}");
            let exact = AlgorithmParams { num_sources: Some(n), ..params() };
            check_bc(&reference, runner, "exact_normalized", &exact, &context);
            check_bc(
                &reference,
                runner,
                "exact_raw",
                &AlgorithmParams { unnormalized: true, ..exact.clone() },
                &context,
            );
            let sampled = AlgorithmParams { sources: sources.clone(), ..params() };
            check_bc(&reference, runner, "sampled_normalized", &sampled, &context);
            check_bc(&reference, runner, "sampled_raw", &AlgorithmParams { unnormalized: true, ..sampled }, &context);
        }
    }
}

fn diameter_of(runner: &outcore::engine::Runner, sweeps: usize, seed: u64) -> u64 {
    run(runner, "diameter", &AlgorithmParams { sweeps: Some(sweeps), seed: Some(seed), ..params() }).summary
        ["diameter_lower_bound"]
        .as_u64()
        .unwrap()
}

#[test]
fn diameter_is_a_lower_bound_and_exact_on_trees_and_grids() {
    for (name, reference) in references() {
        let exact = reference.doc["diameter"].as_u64().unwrap();
        let runner = cache_runner(&reference.store, 512, SelectionMethod::LowD, 2048);
        for seed in 0..4 {
            let found = diameter_of(&runner, 4, seed);
            assert!(found <= exact, "{name}: {found} exceeds the exact diameter {exact}");
            if name == "tree" || name == "grid-6x5" {
                assert_eq!(found, exact, "{name}, seed {seed}");
            }
        }
    }
    for (name, graph, exact) in [
        ("grid 45x17", grid(45, 17), 45 + 17 - 2),
        ("tree", random_tree(3000, 9), 0),
        ("tree 2", random_tree(500, 4), 0),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let store = build(&tmp.path().join("s"), &graph);
        let exact = if exact > 0 { exact } else { tree_diameter(&graph) };
        for (engine, runner) in
            [("inmem", inmem_runner(&store)), ("cache", cache_runner(&store, 512, SelectionMethod::Gvs, 8 << 10))]
        {
            for seed in 0..3 {
                assert_eq!(diameter_of(&runner, 2, seed), exact, "{name} on {engine}, seed {seed}");
            }
        }
    }
}

/// Exact diameter of a tree by an independent double BFS over an adjacency list.
fn tree_diameter(g: &Graph) -> u64 {
    let mut adj = vec![Vec::new(); g.n as usize];
    for &(s, t, _) in &g.edges {
        adj[s as usize].push(t as usize);
        adj[t as usize].push(s as usize);
    }
    let far = |from: usize| {
        let mut dist = vec![u64::MAX; adj.len()];
        let mut queue = std::collections::VecDeque::from([from]);
        dist[from] = 0;
        while let Some(v) = queue.pop_front() {
            for &u in &adj[v] {
                if dist[u] == u64::MAX {
                    dist[u] = dist[v] + 1;
                    queue.push_back(u);
                }
            }
        }
        (0..adj.len()).max_by_key(|&v| dist[v]).map(|v| (v, dist[v])).unwrap()
    };
    far(far(0).0).1
}

#[test]
fn target_and_weight_pages_are_merged_into_fewer_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &erdos_renyi(4000, 40_000, 8, true, true));
    let runner = cache_runner(&store, 512, SelectionMethod::None, 256 << 10);
    run(&runner, "sssp", &AlgorithmParams { source: Some(original(3)), ..params() });
    let cache = cache_figures(&runner);
    let (misses, requests, merged) = (cache.page_cache_misses, cache.requests_issued, cache.merged_requests);
    assert!(merged > 0 && requests < misses / 2, "{misses} pages read in {requests} requests ({merged} merged)");
}
