//! The planner behind `--engine auto` (engine/planner.rs): on stores of several kinds and
//! budgets from ample to far below what the in-memory engine needs, `auto` runs every
//! algorithm, equals the in-memory engine, chooses what its own explanation ranks first, and
//! plans within the budget; engines that do not run an algorithm refuse it naming the engines
//! that do; the pregel engine builds its partition on first use; the max degree the plans
//! read is the manifest's, or the offsets' in stores without it.

mod cache_support;

use cache_support::assert_same;
use outcore::algo::support::support_matrix;
use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::cache::{budget_for_cache_bytes, CacheOptions};
use outcore::engine::nwsm::NwsmOptions;
use outcore::engine::planner::PlanGraph;
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::generate::{generate_into_store, EdgeGenerator, ErdosRenyi, ErdosRenyiConfig, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::order::{reorder, VertexOrder};
use outcore::store::{build_in_memory, InMemoryGraph, OriginalIds, Store};
use outcore::Error;

struct TestStore {
    name: &'static str,
    _dir: tempfile::TempDir,
    store: Store,
}

fn generated<G: EdgeGenerator + 'static>(name: &'static str, generator: G, undirected: bool) -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let options = ImportOptions {
        undirected: Some(undirected),
        dedup: true,
        drop_self_loops: true,
        memory: MemoryBudget::new(64 << 20),
        ..ImportOptions::default()
    };
    let (store, _) =
        generate_into_store(generator, &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    TestStore { name, _dir: dir, store }
}

/// RMAT-10 directed and weighted, RMAT-10 undirected unweighted, G(800, 4000) undirected.
fn stores() -> Vec<TestStore> {
    let rmat = |weights| Rmat::new(RmatConfig { scale: 10, edge_factor: 8, seed: 5, weights, ..RmatConfig::default() });
    let er = ErdosRenyiConfig { vertices: 800, edges: 4000, seed: 3, self_loops: false, weights: false };
    vec![
        generated("rmat-10 directed weighted", rmat(true).unwrap(), false),
        generated("rmat-10 undirected", rmat(false).unwrap(), true),
        generated("er-800 undirected", ErdosRenyi::new(er).unwrap(), true),
    ]
}

/// Points for kmeans: 60 points in 2 dimensions, in three clusters.
fn points_store() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let edges = (0..60usize)
        .flat_map(|p| (0..2usize).map(move |d| (p, d, (p % 3 * 10) as f64 + (p * 7 + d) as f64 % 5.0 / 10.0)))
        .collect();
    let graph = InMemoryGraph { vertices: OriginalIds::U64((0..60).collect()), edges, directed: true, weighted: true };
    let store = build_in_memory(&dir.path().join("points"), &graph).unwrap();
    TestStore { name: "points", _dir: dir, store }
}

fn params(store: &Store, algorithm: &str) -> AlgorithmParams {
    let ids = store.ids().unwrap();
    let id = |d: u64| ids.original(d).unwrap().to_string();
    let mut p = AlgorithmParams { seed: Some(1), ..AlgorithmParams::default() };
    match algorithm {
        "bfs" | "sssp" | "bfs-parents" => p.source = Some(id(0)),
        "mssp" | "heat" | "bp" => p.sources = vec![id(0), id(1)],
        "bc" | "msbfs" => p.num_sources = Some(4),
        "pr" | "cdlp" => p.iterations = Some(5),
        "pr-delta" => p.tolerance = Some(1e-9),
        "kmeans" => p.k = Some(3),
        // Below 1/λ_max of these graphs, so that the iteration converges.
        "katz" => p.alpha = Some(0.01),
        _ => {}
    }
    p
}

fn run(store: &Store, engine: EngineKind, memory: u64, algorithm: &str) -> (outcore::Result<AlgorithmResult>, Runner) {
    // Small nwsm pages, so that the budgets of these small graphs leave it room.
    let nwsm = NwsmOptions { page_size: 4096, ..NwsmOptions::default() };
    let options = RunOptions { engine, memory: MemoryBudget::new(memory), nwsm, ..RunOptions::default() };
    let runner = Runner::new(store, options);
    let result = run_algorithm(&runner, algorithm, &params(store, algorithm));
    (result, runner)
}

/// Results agree: exactly, floats within 1e-9 relative, and pr-delta and bp within their
/// tolerance (engines fold messages in different orders).
fn assert_equal(algorithm: &str, expected: &AlgorithmResult, got: &AlgorithmResult, context: &str) {
    if matches!(algorithm, "pr-delta" | "bp" | "heat") {
        for ((name, e), (_, g)) in expected.columns.iter().zip(&got.columns) {
            match (e, g) {
                (ValueColumn::Float(e), ValueColumn::Float(g)) => {
                    let l1: f64 = e.iter().zip(g).map(|(a, b)| (a - b).abs()).sum();
                    assert!(l1 <= 1e-5, "{context}: {name}: L1 distance {l1}");
                }
                _ => assert_eq!(e, g, "{context}: {name}"),
            }
        }
        return;
    }
    // Columns within 1e-9 relative; summary figures too (float sums differ in the last bits
    // between engines that add in different orders).
    let (mut e, mut g) = (expected.clone(), got.clone());
    for (key, value) in &expected.summary {
        let (a, b) = (value.as_f64(), got.summary.get(key).and_then(|v| v.as_f64()));
        match (a, b) {
            (Some(a), Some(b)) => assert!(cache_support::close(a, b), "{context}: summary {key}: {a} vs {b}"),
            _ => assert_eq!(Some(value), got.summary.get(key), "{context}: summary {key}"),
        }
    }
    e.summary.clear();
    g.summary.clear();
    assert_same(&e, &g, context);
}

/// The budget the in-memory engine needs for an algorithm, from its own plan.
fn inmem_need(store: &Store, algorithm: &str) -> u64 {
    let (result, runner) = run(store, EngineKind::InMemory, 1 << 30, algorithm);
    result.unwrap();
    let explanation = runner.explanation().unwrap();
    explanation.rows.iter().find(|r| r.plan.engine == "inmem").unwrap().plan.memory_total()
}

#[test]
fn auto_runs_every_algorithm_within_every_budget_and_equals_inmem() {
    let mut stores = stores();
    stores.push(points_store());
    let algorithms: Vec<&str> = outcore::algo::ALGORITHMS.iter().map(|&(name, _)| name).collect();
    let mut chosen = std::collections::BTreeSet::new();
    for s in &stores {
        for &algorithm in &algorithms {
            if (s.name == "points") != (algorithm == "kmeans") {
                continue;
            }
            // louvain refuses directed stores (tests/louvain.rs).
            if algorithm == "louvain" && s.store.is_directed() {
                continue;
            }
            let (expected, _) = run(&s.store, EngineKind::InMemory, 1 << 30, algorithm);
            let expected = expected.unwrap_or_else(|e| panic!("{algorithm} on {}: inmem: {e}", s.name));
            let need = inmem_need(&s.store, algorithm);
            for budget in [1 << 30, need / 2, need / 8] {
                let context = format!("{algorithm} on {} with {budget} B", s.name);
                let (result, runner) = run(&s.store, EngineKind::Auto, budget, algorithm);
                // louvain checks its in-memory community state against the budget before any
                // program runs, so no engine is planned when that does not fit.
                if let Err(Error::MemoryBudget(why)) = &result {
                    if algorithm == "louvain" && why.contains("community state") {
                        continue;
                    }
                }
                let explanation = runner.explanation().expect("auto explains its choice");
                let ranking = explanation.ranking();
                let result = match result {
                    Ok(result) => result,
                    // auto may refuse only with a budget error, and only when no engine can
                    // run the algorithm within the budget when asked for by name.
                    Err(Error::MemoryBudget(why)) => {
                        for engine in EngineKind::NAMES.iter().skip(1).map(|n| EngineKind::parse(n).unwrap()) {
                            let (alone, _) = run(&s.store, engine, budget, algorithm);
                            assert!(
                                matches!(alone, Err(Error::MemoryBudget(_)) | Err(Error::Unsupported(_))),
                                "{context}: auto refused ({why}) but {} runs it\n{explanation}",
                                engine.name()
                            );
                        }
                        continue;
                    }
                    Err(e) => panic!("{context}: {e}\n{explanation}"),
                };
                assert_equal(algorithm, &expected, &result, &context);
                let first = &explanation.rows[ranking[0]].plan;
                assert_eq!(
                    runner.engine().name(),
                    first.engine,
                    "{context}: ran what the table ranks first\n{explanation}"
                );
                assert!(first.memory_total() <= budget, "{context}: plan within budget\n{explanation}");
                let stats = runner.finish(algorithm);
                // `need` is what inmem needs to load the graph; an edge pass streams it instead.
                if budget < need && stats.figures.edge_pass.is_none() {
                    assert_ne!(runner.engine(), EngineKind::InMemory, "{context}: inmem does not fit\n{explanation}");
                }
                assert_eq!(stats.engine, first.engine, "{context}");
                assert!(stats.engine_reason.starts_with("auto: "), "{context}: {}", stats.engine_reason);
                chosen.insert(stats.engine);
            }
        }
    }
    // The budgets really move auto off the in-memory engine, onto several others.
    for engine in ["inmem", "stream", "nwsm"] {
        assert!(chosen.contains(engine), "auto never chose {engine}: {chosen:?}");
    }
}

#[test]
fn engines_refuse_what_they_do_not_run_naming_the_engines_that_do() {
    // Unweighted and without duplicate arcs: the one-level query forms run on it.
    let s = &stores()[1];
    let matrix = support_matrix().unwrap();
    let mut refusals = 0;
    for row in &matrix {
        if row.name == "kmeans" {
            continue;
        }
        let runners: Vec<&str> = row.engines.iter().filter(|(_, runs)| *runs).map(|(e, _)| e.name()).collect();
        assert!(runners.len() >= 2, "{}: some engine beside inmem runs it: {runners:?}", row.name);
        for &(engine, runs) in &row.engines {
            let (result, _) = run(&s.store, engine, 1 << 30, row.name);
            match (runs, result) {
                (true, Ok(_)) => {}
                (false, Err(Error::Unsupported(why))) => {
                    refusals += 1;
                    let named = why.split("engines that run it: ").nth(1).unwrap_or("");
                    for runner in &runners {
                        assert!(
                            named.contains(runner),
                            "{} on {}: refusal names {runner}: {why}",
                            row.name,
                            engine.name()
                        );
                    }
                    assert!(!named.contains(engine.name()), "{} on {}: {why}", row.name, engine.name());
                }
                (runs, result) => {
                    panic!("{} on {}: matrix says {runs}, run gave {:?}", row.name, engine.name(), result.err())
                }
            }
        }
    }
    assert!(refusals >= 20, "only {refusals} refusals checked");
}

#[test]
fn pregel_builds_its_partition_on_first_use() {
    let s = &stores()[1];
    assert!(!s.store.dir().join("parts-1").exists());
    let (expected, _) = run(&s.store, EngineKind::InMemory, 1 << 30, "wcc");
    let (got, runner) = run(&s.store, EngineKind::Pregel, 256 << 20, "wcc");
    assert_same(&expected.unwrap(), &got.unwrap(), "wcc on pregel");
    assert!(s.store.dir().join("parts-1").join("partition.json").exists());
    let plan = runner.finish("wcc").plan.unwrap();
    assert_eq!(plan.builds.as_deref(), Some("parts-1"), "the plan said it would build the partition");
    // The second run finds it and plans no build.
    let (_, runner) = run(&s.store, EngineKind::Pregel, 256 << 20, "wcc");
    assert_eq!(runner.finish("wcc").plan.unwrap().builds, None);
}

/// The cache engine selects its static cache on a store's first run and saves the selection
/// as a layout: its plan names that build, and prices the selection's reads, until a run has
/// saved it; then the plan and the run read less.
#[test]
fn cache_plans_its_static_cache_selection_until_one_is_saved() {
    let s = &stores()[1];
    // 48 KiB of caches beside the 64 bytes per vertex the budget counts; BFS's own state, 19 to
    // 21 bytes, leaves them about 45 KiB more: about 100 KiB, below csr-out's 64 KiB of lists
    // and GVS's arrays together, so that GVS reads the lists once per round.
    let budget = budget_for_cache_bytes(&s.store, &CacheOptions::default(), 48 << 10);
    let first_run = || {
        let (result, runner) = run(&s.store, EngineKind::Cache, budget, "bfs");
        result.unwrap();
        let stats = runner.finish("bfs");
        (stats.plan.clone().unwrap(), stats.bytes_read)
    };
    let (plan, read) = first_run();
    let layout = plan.builds.clone().expect("the first plan selects");
    assert!(layout.starts_with("static-cache-selection/"), "{layout}");
    let saved = Store::open(s.store.dir()).unwrap();
    assert!(saved.manifest().layouts.contains_key(&layout), "the run saved {layout}");
    let (again, read_again) = first_run();
    assert_eq!(again.builds, None, "the second plan loads the saved selection");
    assert!(again.bytes_read < plan.bytes_read, "planned {} then {}", plan.bytes_read, again.bytes_read);
    assert!(read_again < read, "read {read} then {read_again}");
}

#[test]
fn the_explanation_has_a_row_per_engine_and_marks_the_choice() {
    let s = &stores()[0];
    let (result, runner) = run(&s.store, EngineKind::Auto, 1 << 30, "pr");
    result.unwrap();
    let explanation = runner.explanation().unwrap();
    let engines: Vec<&str> = explanation.rows.iter().map(|r| r.plan.engine).collect();
    assert_eq!(engines, ["inmem", "stream", "cache", "shards", "pregel", "nwsm"]);
    let text = explanation.to_string();
    assert_eq!(text.lines().filter(|l| l.starts_with('*')).count(), 1, "{text}");
    // A budget nothing fits: every row says why.
    let (result, runner) = run(&s.store, EngineKind::Auto, 4 << 10, "pr");
    let Err(Error::MemoryBudget(why)) = result else { panic!("4 KiB must not fit: {:?}", result.map(|_| ())) };
    for engine in ["inmem", "stream", "cache", "shards", "pregel", "nwsm"] {
        assert!(why.contains(&format!("{engine}: ")), "{why}");
    }
    assert!(runner.explanation().is_none() || runner.explanation().unwrap().ranking().is_empty());
}

/// The in-memory engine loads a weighted store's weights only for programs that read them,
/// and reads what its plan said: PageRank reads csr-out and csr-in without their weights,
/// heat diffusion (weighted) reads csr-out whole.
#[test]
fn inmem_reads_the_weights_only_for_programs_that_use_them() {
    let s = &stores()[0];
    let read = |algorithm: &str| {
        let (result, runner) = run(&s.store, EngineKind::InMemory, 1 << 30, algorithm);
        result.unwrap();
        let explanation = runner.explanation().unwrap();
        let planned = explanation.rows.iter().find(|r| r.plan.engine == "inmem").unwrap().plan.bytes_read;
        (runner.finish(algorithm).bytes_read, planned)
    };
    let (pr, pr_planned) = read("pr");
    let (heat, heat_planned) = read("heat");
    assert_eq!(pr, pr_planned, "the plan's bytes are the run's bytes");
    assert_eq!(heat_planned, manifest_bytes(&s.store, "csr-out"));
    let (out, inn) = (manifest_bytes(&s.store, "csr-out"), manifest_bytes(&s.store, "csr-in"));
    // PageRank pulls, so it loads both layouts; heat loads csr-out with its weights (and reads
    // a few bytes more to resolve its sources).
    assert_eq!(pr, out + inn - 2 * s.store.num_arcs() * 8);
    assert!((out..out + 4096).contains(&heat), "heat read {heat} bytes of a {out}-byte csr-out");
}

fn manifest_bytes(store: &Store, layout: &str) -> u64 {
    store.manifest().layout_bytes(layout)
}

/// The most in- plus out-arcs of one vertex, as the shards engine finds it in the offsets.
fn busiest(store: &Store) -> u64 {
    outcore::engine::shards::busiest_vertex(store).unwrap().1
}

/// Imports record the store's max degree in its manifest, by the in-memory path and by the
/// external sorts, and reorderings keep it; the planner takes it from there.
#[test]
fn imports_and_reorderings_record_the_max_degree_the_offsets_give() {
    let mut cases = stores();
    let dir = tempfile::tempdir().unwrap();
    let rmat = Rmat::new(RmatConfig { scale: 10, edge_factor: 8, seed: 9, ..RmatConfig::default() }).unwrap();
    let options =
        ImportOptions { undirected: Some(false), memory: MemoryBudget::new(64 << 10), ..ImportOptions::default() };
    let (store, report) =
        generate_into_store(rmat, &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    assert!(!report.in_memory && report.sort_runs > 0, "{report:?}");
    cases.push(TestStore { name: "rmat-10 directed, external sorts", _dir: dir, store });
    for t in &cases {
        let expected = busiest(&t.store);
        assert!(expected > 0, "{}", t.name);
        assert_eq!(t.store.manifest().max_degree, Some(expected), "{}", t.name);
        assert_eq!(PlanGraph::of(&t.store).max_degree(), expected, "{}", t.name);
        let reordered = reorder(&t.store, VertexOrder::Degree, MemoryBudget::new(64 << 20), &NoProgress).unwrap();
        assert_eq!(busiest(&reordered), expected, "{} reordered", t.name);
        assert_eq!(reordered.manifest().max_degree, Some(expected), "{} reordered", t.name);
    }
}

/// Removes `max_degree` from the manifest of `store`'s generation, as stores built before it
/// was recorded lack it (the manifest has no checksum of its own), and opens the store again.
fn without_recorded_max_degree(store: &Store) -> Store {
    let path = store.dir().join("manifest.json");
    let mut manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(manifest.as_object_mut().unwrap().remove("max_degree").is_some());
    std::fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    Store::open(store.root()).unwrap()
}

/// A store whose manifest lacks the max degree still opens and plans with the one the offsets
/// give; reordering it records the figure.
#[test]
fn stores_without_a_recorded_max_degree_plan_with_the_one_the_offsets_give() {
    for t in stores() {
        let expected = busiest(&t.store);
        let old = without_recorded_max_degree(&t.store);
        assert_eq!(old.manifest().max_degree, None, "{}", t.name);
        assert_eq!(PlanGraph::of(&old).max_degree(), expected, "{}", t.name);
        let order = VertexOrder::Random { seed: 4 };
        let reordered = reorder(&old, order, MemoryBudget::new(64 << 20), &NoProgress).unwrap();
        assert_eq!(reordered.manifest().max_degree, Some(expected), "{} reordered", t.name);
    }
}

/// pr-delta runs until the mass left is below its tolerance. Its plan expects the iterations
/// that take (the mass shrinks by the damping factor an iteration), not the ten assumed of
/// programs that cannot tell, and does not call the count known. The runs take that or a
/// little more on every engine that runs it.
#[test]
fn pr_delta_plans_the_iterations_its_tolerance_asks_for() {
    let expected = ((1e-9f64 / 0.15).ln() / 0.85f64.ln()).ceil();
    for test in stores() {
        for engine in [EngineKind::Stream, EngineKind::Cache, EngineKind::Shards] {
            let (result, runner) = run(&test.store, engine, 8 << 20, "pr-delta");
            result.unwrap();
            let stats = runner.finish("pr-delta");
            let plan = stats.plan.as_ref().expect("the run records its plan");
            let context = format!("{} on {engine:?}", test.name);
            assert_eq!(plan.iterations, expected, "{context}");
            assert!(!plan.iterations_known, "{context}");
            let ran = stats.iterations as f64;
            assert!((0.8 * expected..=1.5 * expected).contains(&ran), "{context}: ran {ran}, expected {expected}");
        }
    }
}

/// eigenvector, katz and bp end at a tolerance at a rate no plan can know: their
/// `max_iterations` is a cap (100, 1000, 50), and their plans assume a count rather than call
/// the cap known. The runs take about as many as assumed, far below the caps.
#[test]
fn convergent_programs_plan_an_assumed_count_not_their_cap() {
    let assumed = outcore::engine::planner::ASSUMED_CONVERGENCE_ITERATIONS;
    for test in stores() {
        for (algorithm, extra) in [("eigenvector", 2.0), ("katz", 1.0), ("bp", 0.0)] {
            let (result, runner) = run(&test.store, EngineKind::Stream, 8 << 20, algorithm);
            result.unwrap();
            let stats = runner.finish(algorithm);
            let plan = stats.plan.as_ref().expect("the run records its plan");
            let context = format!("{algorithm} on {}", test.name);
            assert_eq!(plan.iterations, assumed + extra, "{context}");
            assert!(!plan.iterations_known, "{context}");
            let ran = stats.iterations as f64;
            assert!((1.0..=3.0 * (assumed + extra)).contains(&ran), "{context}: ran {ran}, assumed {assumed}");
        }
    }
}
