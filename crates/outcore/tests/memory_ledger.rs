//! The memory ledger (`runtime/ledger.rs`) against the planner: on every engine, a run charges
//! each part of its sizing to the run's ledger, and the peak of every part equals the part of
//! the plan the run recorded (`RunStats::plan`), with budgets small enough that stream keeps
//! only part of its edges resident, cache evicts pages, shards splits the graph in several
//! shards and nwsm in several ranges. A run never charges more than the budget.

#[path = "cache_support/mod.rs"]
mod cache_support;

use std::collections::BTreeMap;

use cache_support::{build, erdos_renyi, rmat, simple, Graph};
use outcore::algo::{cdlp, run_algorithm, wcc, AlgorithmParams};
use outcore::engine::cache::{budget_for_cache_bytes, CacheOptions, SelectionMethod, ASSUMED_STATE_BYTES_PER_VERTEX};
use outcore::engine::nwsm::NwsmOptions;
use outcore::engine::shards::{DynamicPolicy, ShardValues, ShardsOptions};
use outcore::engine::{EngineKind, RunOptions, RunStats, Runner};
use outcore::runtime::{MemoryBudget, MemoryPart, NoProgress};
use outcore::store::order::{reorder, VertexOrder};
use outcore::store::Store;

struct TestGraph {
    _dir: tempfile::TempDir,
    store: Store,
}

fn store_of(g: &Graph) -> TestGraph {
    let dir = tempfile::tempdir().unwrap();
    let store = build(&dir.path().join("g"), g);
    TestGraph { _dir: dir, store }
}

fn options(engine: EngineKind, memory: u64) -> RunOptions {
    RunOptions { engine, memory: MemoryBudget::new(memory), ..RunOptions::default() }
}

fn params(algorithm: &str) -> AlgorithmParams {
    let mut p = AlgorithmParams { source: Some(cache_support::original(1)), ..AlgorithmParams::default() };
    match algorithm {
        "pr" => p.iterations = Some(4),
        "wcc-union-find" => p.method = Some("union-find".into()),
        "wcc" => p.method = Some("propagation".into()),
        _ => {}
    }
    p
}

fn run(store: &Store, options: RunOptions, algorithm: &str) -> RunStats {
    let runner = Runner::new(store, options);
    let name = algorithm.strip_suffix("-union-find").unwrap_or(algorithm);
    run_algorithm(&runner, name, &params(algorithm)).unwrap_or_else(|e| panic!("{algorithm}: {e}"));
    runner.finish(name)
}

/// The peak of every part the run charged equals the part of its plan, and the peak of all
/// charges stays within the budget.
fn assert_ledger_is_plan(what: &str, stats: &RunStats) {
    let plan = stats.plan.as_ref().unwrap_or_else(|| panic!("{what}: a run records its plan"));
    let planned: BTreeMap<String, u64> = plan.memory.iter().map(|p| (p.part.to_string(), p.bytes)).collect();
    let charged: BTreeMap<String, u64> =
        stats.memory_ledger.parts.iter().map(|p| (p.part.clone(), p.peak_bytes)).collect();
    assert_eq!(charged, planned, "{what}: the ledger's peaks against the plan's parts");
    let peak = stats.memory_ledger.peak_bytes;
    assert!(peak > 0 && peak <= stats.memory_budget_bytes, "{what}: peak {peak} of {}", stats.memory_budget_bytes);
    assert!(peak <= plan.memory_total(), "{what}: peak {peak}, planned {}", plan.memory_total());
}

#[test]
fn inmem_charges_its_plan_for_every_program_form() {
    for directed in [true, false] {
        let g = store_of(&rmat(10, 8, 3, directed));
        // pr and bfs are vertex programs (bfs pulls with both layouts loaded), lcc a Pregel
        // program, tc a neighborhood query, wcc by union-find an edge pass.
        for algorithm in ["pr", "bfs", "lcc", "tc", "wcc-union-find"] {
            let stats = run(&g.store, options(EngineKind::InMemory, 64 << 20), algorithm);
            assert_ledger_is_plan(&format!("inmem {algorithm} directed={directed}"), &stats);
        }
    }
}

/// Stream with all of csr-in resident (its sources ordered for pulls: the order is a part),
/// then with a budget that keeps half of it (buffers too small to lend it the rest); and an edge pass.
#[test]
fn stream_charges_its_plan_with_all_or_part_of_the_edges_resident() {
    let g = store_of(&rmat(10, 8, 3, true));
    let stats = run(&g.store, options(EngineKind::Stream, 64 << 20), "pr");
    assert_ledger_is_plan("stream pr, all resident", &stats);
    let setup = stats.figures.stream.clone().unwrap();
    let layout = setup.resident_room_bytes;
    assert!(stats.memory_ledger.part("source order") > 0, "{:?}", stats.memory_ledger);

    // Read buffers of 1 MiB lend nothing to the resident edges (`stream::LENT_BUFFER_FLOOR`).
    let mut half = options(EngineKind::Stream, 64 << 20);
    half.stream.max_buffer_bytes = 1 << 20;
    let planned = run(&g.store, half.clone(), "pr").figures.stream.unwrap().planned_bytes;
    half.memory = MemoryBudget::new(planned + layout / 2);
    let stats = run(&g.store, half, "pr");
    assert_ledger_is_plan("stream pr, half resident", &stats);
    let resident = stats.memory_ledger.part("resident edges");
    assert!(resident > 0 && resident < layout, "{resident} of {layout}");
    assert_eq!(stats.memory_ledger.part("source order"), 0);

    let stats = run(&g.store, options(EngineKind::Stream, 1 << 20), "wcc-union-find");
    assert_ledger_is_plan("stream edge pass", &stats);
}

/// Cache with a few pages of cache: the first run computes the static-cache selection (its
/// working memory charged while it runs, before the caches), the next loads it.
#[test]
fn cache_charges_its_plan_and_the_selection_while_it_runs() {
    let g = store_of(&erdos_renyi(2000, 12_000, 7, true, false));
    let cache = CacheOptions {
        page_size: 4096,
        selection: SelectionMethod::Gvs,
        gvs_rounds: 2,
        state_bytes_per_vertex: Some(ASSUMED_STATE_BYTES_PER_VERTEX),
        ..CacheOptions::default()
    };
    let memory = budget_for_cache_bytes(&g.store, &cache, 96 << 10);
    let cache_options = RunOptions { cache, ..options(EngineKind::Cache, memory) };
    let first = run(&g.store, cache_options.clone(), "bfs");
    assert!(first.memory_ledger.part("static cache selection") > 0, "{:?}", first.memory_ledger);
    assert!(first.memory_ledger.peak_bytes <= memory);
    let stats = run(&g.store, cache_options, "bfs");
    assert_ledger_is_plan("cache bfs", &stats);
    let figures = stats.figures.cache.as_ref().unwrap();
    assert!(figures.page_cache_evictions > 0, "the cache is small enough to evict");
}

/// With its default options the cache engine reserves the state the program keeps on the
/// threads it runs on, and the caches get the rest: on two threads BFS's two scatter parts only
/// mark targets (8 + 8 + 1 bytes and a flag per part: 19 per vertex), SSSP's keep a message each
/// (17 + 2 × 9 = 35); both read out-edges only and leave csr-in's offsets to the caches. A
/// runner that goes on from BFS to SSSP builds its engine again with the larger state, and to
/// WCC's label propagation, which reads in-edges, again with csr-in's offsets. All equal inmem;
/// the cache is small enough to evict.
#[test]
fn cache_sizes_the_vertex_state_from_the_program() {
    let g = store_of(&rmat(12, 16, 5, true));
    let n = g.store.num_vertices();
    let fixed = CacheOptions { page_size: 4096, state_bytes_per_vertex: Some(64), ..CacheOptions::default() };
    let cache_bytes = 48 << 10;
    let memory = budget_for_cache_bytes(&g.store, &fixed, cache_bytes);
    let cache = CacheOptions { state_bytes_per_vertex: None, ..fixed };
    let inmem = cache_support::inmem_runner(&g.store);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| {
        let options = RunOptions { cache, ..options(EngineKind::Cache, memory) };
        // The first run selects the static cache (its working memory is no part of the plan).
        run(&g.store, options.clone(), "bfs");
        let runner = Runner::new(&g.store, options);
        let bfs = cache_support::run(&runner, "bfs", &params("bfs"));
        let stats = runner.finish("bfs");
        assert_ledger_is_plan("cache bfs, state sized", &stats);
        assert_eq!(stats.memory_ledger.part("vertex state"), 19 * n);
        let figures = stats.figures.cache.as_ref().unwrap();
        let one_layout = (n + 1) * 8;
        assert_eq!(stats.memory_ledger.part("offsets"), one_layout, "csr-out's offsets only");
        assert_eq!(
            figures.cache_memory_bytes,
            cache_bytes + (64 - 19) * n + one_layout,
            "the caches get what BFS leaves"
        );
        assert_eq!(figures.scatter_parts, 2);
        assert!(figures.page_cache_evictions > 0, "the cache is small enough to evict");
        cache_support::assert_same(&bfs, &cache_support::run(&inmem, "bfs", &params("bfs")), "bfs");

        let sssp = cache_support::run(&runner, "sssp", &params("sssp"));
        let stats = runner.finish("sssp");
        assert_eq!(stats.memory_ledger.part("vertex state"), 35 * n, "built again for SSSP's state");
        assert!(stats.memory_ledger.peak_bytes <= memory);
        cache_support::assert_same(&sssp, &cache_support::run(&inmem, "sssp", &params("sssp")), "sssp");

        let wcc = cache_support::run(&runner, "wcc", &params("wcc"));
        let stats = runner.finish("wcc");
        assert_eq!(stats.memory_ledger.part("offsets"), 2 * one_layout, "built again with csr-in's offsets");
        assert!(stats.memory_ledger.peak_bytes <= memory);
        cache_support::assert_same(&wcc, &cache_support::run(&inmem, "wcc", &params("wcc")), "wcc");
    });
}

/// Shards with values in memory over several shards (the plan reads the built layout's
/// largest interval and shard), and with values on disk, statically and with dynamic shards.
#[test]
fn shards_charges_its_plan_in_memory_and_disk_modes() {
    let g = store_of(&rmat(10, 8, 3, true));
    let shards = |values, dynamic| ShardsOptions { values, dynamic, ..ShardsOptions::default() };
    let memory_mode = RunOptions {
        shards: shards(ShardValues::Memory, Some(DynamicPolicy::Off)),
        ..options(EngineKind::Shards, 128 << 10)
    };
    run(&g.store, memory_mode.clone(), "pr");
    let stats = run(&g.store, memory_mode, "pr");
    assert_ledger_is_plan("shards pr, values in memory", &stats);
    assert!(stats.figures.shards.as_ref().unwrap().shards > 1);

    for (algorithm, dynamic) in [("pr", DynamicPolicy::Off), ("wcc", DynamicPolicy::Ods)] {
        let disk =
            RunOptions { shards: shards(ShardValues::Disk, Some(dynamic)), ..options(EngineKind::Shards, 1 << 20) };
        let stats = run(&g.store, disk, algorithm);
        assert_ledger_is_plan(&format!("shards {algorithm}, values on disk, {dynamic:?}"), &stats);
        assert!(stats.figures.shards.as_ref().unwrap().shards > 1);
    }
}

/// nwsm over several ranges (a budget far below what the lists need at once), once the layout
/// is built (the plan reads its ranges and pages).
#[test]
fn nwsm_charges_its_plan() {
    let g = store_of(&rmat(11, 8, 5, false));
    let nwsm = RunOptions { nwsm: NwsmOptions { page_size: 512, ranks: 2 }, ..options(EngineKind::Nwsm, 160 << 10) };
    run(&g.store, nwsm.clone(), "tc");
    let stats = run(&g.store, nwsm, "tc");
    assert_ledger_is_plan("nwsm tc", &stats);
    assert!(stats.figures.nwsm.as_ref().unwrap().q > 1);
}

/// Rounds of one-level queries on nwsm: the algorithm's own state beside the engine (pr's
/// ranks and out-degrees, cdlp's labels, kcore's estimates, sssp's distances) is a part of the
/// plan and of the ledger, and the engine plans within the rest of the budget. (cdlp's and
/// kcore's rounds read a column, the degree query before them does not, so their windows are
/// larger then: their parts peak at different queries, and the test checks the budget.)
#[test]
fn nwsm_rounds_charge_the_algorithms_state() {
    let g = simple(erdos_renyi(1500, 6000, 4, true, false));
    let g = store_of(&g);
    let nwsm = RunOptions { nwsm: NwsmOptions { page_size: 512, ranks: 2 }, ..options(EngineKind::Nwsm, 112 << 10) };
    run(&g.store, nwsm.clone(), "tc");
    for (algorithm, state, column) in [("pr", 16, false), ("sssp", 8, false), ("cdlp", 8, true), ("kcore", 8, true)] {
        let stats = run(&g.store, nwsm.clone(), algorithm);
        let what = format!("nwsm {algorithm}");
        let plan = stats.plan.as_ref().unwrap();
        assert_eq!(plan.memory[0], MemoryPart::new("algorithm state", state * 1500), "{what}: {plan:?}");
        assert_eq!(stats.memory_ledger.part("algorithm state"), state * 1500, "{what}");
        if column {
            assert_eq!(stats.memory_ledger.part("query column"), 8 * 1500, "{what}");
            let peak = stats.memory_ledger.peak_bytes;
            assert!(peak <= stats.memory_budget_bytes, "{what}: peak {peak}");
            assert!(plan.memory_total() <= stats.memory_budget_bytes, "{what}: {plan:?}");
        } else {
            assert_ledger_is_plan(&what, &stats);
        }
        let q = stats.figures.nwsm.as_ref().unwrap().q;
        assert!(q > 1, "{what}: {q} range");
    }
}

/// On a reordered store labels are original-id ranks. The rounds of cdlp and wcc start from
/// the ranks as their labels and keep no second copy: their state is 8 bytes a vertex, as on a
/// store in original order, and their labels are inmem's on the store in original order.
#[test]
fn rounds_on_a_reordered_store_keep_the_ranks_as_their_labels() {
    let g = simple(erdos_renyi(1500, 6000, 7, true, false));
    let plain = store_of(&g);
    let dir = tempfile::tempdir().unwrap();
    let shuffled = build(&dir.path().join("shuffled"), &g);
    let shuffled =
        reorder(&shuffled, VertexOrder::Random { seed: 3 }, MemoryBudget::new(64 << 20), &NoProgress).unwrap();
    let nwsm = RunOptions { nwsm: NwsmOptions { page_size: 512, ranks: 2 }, ..options(EngineKind::Nwsm, 112 << 10) };
    for algorithm in ["cdlp", "wcc"] {
        // Labels in original ids: vertex ids[v] is labelled ids[label[v]].
        let labels = |store: &Store, options: RunOptions| {
            let runner = Runner::new(store, options);
            let label = match algorithm {
                "cdlp" => cdlp::run(&runner, &cdlp::Config::default()).unwrap().label,
                _ => wcc::run(&runner, &wcc::Config { method: wcc::Method::Propagation }).unwrap().component,
            };
            let ids = store.ids().unwrap().all_u64().unwrap();
            let original: BTreeMap<u64, u64> =
                label.iter().enumerate().map(|(v, &l)| (ids[v], ids[l as usize])).collect();
            (original, runner.finish(algorithm))
        };
        let (want, _) = labels(&plain.store, options(EngineKind::InMemory, 64 << 20));
        let (got, stats) = labels(&shuffled, nwsm.clone());
        assert_eq!(got, want, "{algorithm}");
        let plan = stats.plan.as_ref().unwrap();
        assert_eq!(plan.memory[0], MemoryPart::new("algorithm state", 8 * 1500), "{algorithm}: {plan:?}");
        assert_eq!(stats.memory_ledger.part("algorithm state"), 8 * 1500, "{algorithm}");
        assert!(stats.memory_ledger.peak_bytes <= stats.memory_budget_bytes, "{algorithm}");
    }
}

/// hits holds its hubs (and, while the next hubs are computed, its authorities) beside the
/// engine and says so; its products read no out-degrees, so stream pushing along csr-in keeps
/// csr-in's offsets alone. Its scores are inmem's.
#[test]
fn hits_charges_its_vectors_and_keeps_one_layouts_offsets_on_stream() {
    let g = store_of(&rmat(10, 8, 3, true));
    let n = g.store.num_vertices();
    let scores = |engine| {
        let runner = Runner::new(&g.store, options(engine, 64 << 20));
        let out = outcore::algo::hits::run(&runner, &outcore::algo::hits::Config::default()).unwrap();
        (out, runner.finish("hits"))
    };
    let (want, _) = scores(EngineKind::InMemory);
    let (got, stats) = scores(EngineKind::Stream);
    for (a, b) in want.hubs.iter().zip(&got.hubs).chain(want.authorities.iter().zip(&got.authorities)) {
        assert!((a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-15, "{a} against {b}");
    }
    assert_eq!(stats.memory_ledger.part("algorithm state"), 16 * n);
    assert_eq!(stats.memory_ledger.part("offsets"), 8 * (n + 1));
    assert!(stats.memory_ledger.peak_bytes <= stats.memory_budget_bytes);
}

/// A budget below the state itself: nwsm, asked for, refuses before it runs, and `auto`'s
/// plan of nwsm says why; neither panics nor charges past the budget.
#[test]
fn a_form_whose_state_alone_exceeds_the_budget_is_refused() {
    let g = store_of(&simple(erdos_renyi(1500, 6000, 4, true, false)));
    let runner = Runner::new(&g.store, options(EngineKind::Nwsm, 8 << 10));
    let err = run_algorithm(&runner, "cdlp", &params("cdlp")).unwrap_err();
    assert!(matches!(err, outcore::Error::MemoryBudget(_)), "{err}");
    assert!(err.to_string().contains("the algorithm's own state needs 11.72 KiB"), "{err}");
    let runner = Runner::new(&g.store, options(EngineKind::Auto, 8 << 10));
    run_algorithm(&runner, "cdlp", &params("cdlp")).unwrap_err();
    let table = runner.explanation().expect("auto planned").to_string();
    assert!(table.contains("the algorithm's own state needs 11.72 KiB and the budget is 8.00 KiB"), "{table}");
    assert!(runner.finish("cdlp").memory_ledger.peak_bytes <= 8 << 10);
}

/// Pregel at W = 1: the rank's vertex records and message buffers; recoded, the arrays its
/// messages fold into, and for PageRank, which then pulls, the offers and its in-lists. The
/// plan's bytes are the run's when nothing goes through message files.
#[test]
fn pregel_charges_its_plan_at_one_rank() {
    let g = store_of(&rmat(10, 8, 3, true));
    for (recoded, algorithm) in [(false, "pr"), (true, "pr"), (true, "wcc")] {
        let mut options = options(EngineKind::Pregel, 16 << 20);
        options.pregel.recoded = recoded;
        // The first run builds the partition, which the second's plan then finds.
        run(&g.store, options.clone(), algorithm);
        let stats = run(&g.store, options, algorithm);
        let what = format!("pregel {algorithm}, recoded {recoded}");
        assert_ledger_is_plan(&what, &stats);
        let plan = stats.plan.as_ref().unwrap();
        assert!(plan.builds.is_none(), "{what}: {plan:?}");
        if recoded {
            assert!(stats.memory_ledger.part("A_s and A_r") > 0, "{what}");
            assert_eq!((plan.bytes_read, plan.bytes_written), (stats.bytes_read, stats.bytes_written), "{what}");
        } else {
            assert_eq!(stats.memory_ledger.part("A_s and A_r"), 0, "{what}");
        }
        let pulled = stats.per_iteration.iter().any(|i| i.delivery == Some(outcore::engine::Delivery::Pull));
        assert_eq!(pulled, recoded && algorithm == "pr", "{what}");
    }
}

/// A run whose engine would charge more than the budget is refused with the ledger's or the
/// engine's message, never a panic: an algorithm's reservation leaves too little.
#[test]
fn a_reservation_counts_against_what_engines_may_charge() {
    let g = store_of(&rmat(10, 8, 3, true));
    let runner = Runner::new(&g.store, options(EngineKind::InMemory, 4 << 20));
    runner.reserve_memory((4 << 20) - (16 << 10), "test state").unwrap();
    let err = run_algorithm(&runner, "pr", &params("pr")).unwrap_err();
    assert!(matches!(err, outcore::Error::MemoryBudget(_)), "{err}");
    let stats = runner.finish("pr");
    assert_eq!(stats.memory_ledger.part("algorithm state"), (4 << 20) - (16 << 10));
    assert!(stats.memory_ledger.peak_bytes <= 4 << 20);
}
