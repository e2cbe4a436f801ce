//! The stream engine against the in-memory reference engine: every algorithm it runs, on
//! random RMAT (directed) and Erdős–Rényi (undirected) graphs, under each schedule and both
//! I/O modes, with buffers small enough to be refilled many times per iteration; the
//! Graphalytics validation graphs; the memory-budget failure; and the I/O figures that show
//! selective scheduling at work (bytes counted, never times).

mod inmem_support;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::stream::{IoMode, Schedule, StreamOptions};
use outcore::engine::{Delivery, EngineKind, ReadMode, RunOptions, RunStats, Runner, StreamIteration, StreamRun};
use outcore::generate::{generate_into_store, EdgeGenerator, ErdosRenyi, ErdosRenyiConfig, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::{Direction, Store};
use outcore::Error;
use proptest::prelude::*;

struct TestGraph {
    name: &'static str,
    _dir: tempfile::TempDir,
    store: Store,
    /// The vertex with most out-edges (source of bfs, sssp).
    source: String,
    /// Sources of mssp (original ids).
    sources: Vec<String>,
}

/// Imports a generated graph (weights uniform in (0, 1]) through the import pipeline.
fn graph<G: EdgeGenerator + 'static>(name: &'static str, generator: G, undirected: bool) -> TestGraph {
    let dir = tempfile::tempdir().unwrap();
    let options =
        ImportOptions { undirected: Some(undirected), memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let (store, _) =
        generate_into_store(generator, &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    let offsets = store.csr(Direction::Out).unwrap().load().unwrap().offsets;
    let busiest = (0..store.num_vertices()).max_by_key(|&v| offsets[v as usize + 1] - offsets[v as usize]).unwrap();
    let ids = store.ids().unwrap();
    let n = store.num_vertices();
    let original = |d: u64| ids.original(d).unwrap().to_string();
    let sources = vec![original(busiest), original(0), original(17), original(n / 3), original(n - 1)];
    TestGraph { name, _dir: dir, source: original(busiest), sources, store }
}

/// Graph500 RMAT, scale 12, edge factor 16, directed.
fn rmat_graph() -> TestGraph {
    let config = RmatConfig { scale: 12, edge_factor: 16, seed: 7, weights: true, ..RmatConfig::default() };
    graph("rmat-12", Rmat::new(config).unwrap(), false)
}

/// G(4000, 40 000), undirected (80 000 arcs less self-loops).
fn er_graph() -> TestGraph {
    let config = ErdosRenyiConfig { vertices: 4000, edges: 40_000, seed: 11, self_loops: true, weights: true };
    graph("er-4000", ErdosRenyi::new(config).unwrap(), true)
}

fn params(g: &TestGraph, algorithm: &str) -> AlgorithmParams {
    let mut p = AlgorithmParams::default();
    match algorithm {
        "bfs" | "sssp" => p.source = Some(g.source.clone()),
        "mssp" => {
            p.sources = g.sources.clone();
        }
        "pr" => p.iterations = Some(10),
        // Label propagation: the schedules and buffers under test are those of iterations
        // (tests/wcc_union_find.rs covers the one-pass union-find).
        "wcc" => p.method = Some("propagation".into()),
        _ => {}
    }
    p
}

fn stream_options(memory: u64, schedule: Schedule, io: IoMode, max_buffer_bytes: u64) -> RunOptions {
    RunOptions {
        engine: EngineKind::Stream,
        memory: MemoryBudget::new(memory),
        stream: StreamOptions {
            schedule,
            io,
            // Small enough that selective iterations really split the file into chunks.
            gap_threshold: Some(4096),
            // Every pass reads from disk, so that the schedules' reads compare (resident edges
            // have tests of their own).
            resident_edges: false,
            block_bytes: 16 << 10,
            max_buffer_bytes,
            ..StreamOptions::default()
        },
        ..RunOptions::default()
    }
}

/// [`stream_options`] at 64 MiB, selective, with edges kept in memory (`stream/resident.rs`).
fn resident_options(io: IoMode, max_buffer_bytes: u64) -> RunOptions {
    let mut options = stream_options(64 << 20, Schedule::Selective, io, max_buffer_bytes);
    options.stream.resident_edges = true;
    options
}

fn run(
    store: &Store,
    options: RunOptions,
    algorithm: &str,
    params: &AlgorithmParams,
) -> outcore::Result<(AlgorithmResult, RunStats)> {
    let runner = Runner::new(store, options);
    let result = run_algorithm(&runner, algorithm, params)?;
    Ok((result, runner.finish(algorithm)))
}

fn inmem(store: &Store, algorithm: &str, params: &AlgorithmParams) -> AlgorithmResult {
    let options =
        RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() };
    run(store, options, algorithm, params).unwrap().0
}

/// Exact equality, except pr and bc (relative 1e-9) and pr-delta (within its tolerance).
fn assert_same(algorithm: &str, expected: &AlgorithmResult, got: &AlgorithmResult, what: &str) {
    assert_eq!(expected.columns.len(), got.columns.len(), "{what}");
    for ((en, ec), (gn, gc)) in expected.columns.iter().zip(&got.columns) {
        assert_eq!(en, gn, "{what}");
        match (ec, gc) {
            (ValueColumn::Float(e), ValueColumn::Float(g)) if algorithm == "pr" || algorithm == "bc" => {
                for (v, (a, b)) in e.iter().zip(g).enumerate() {
                    assert!((a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-15, "{what}: vertex {v}: {a} vs {b}");
                }
            }
            (ValueColumn::Float(e), ValueColumn::Float(g)) if algorithm == "pr-delta" => {
                // Each run ends within tolerance·d/(1−d) (L1) of the fixed point.
                let l1: f64 = e.iter().zip(g).map(|(a, b)| (a - b).abs()).sum();
                assert!(l1 <= 2.0 * 1e-9 * 0.85 / 0.15, "{what}: L1 distance {l1}");
            }
            _ => assert!(ec == gc, "{what}: column {en} differs"),
        }
    }
}

/// One figure of every iteration (all stream iterations).
fn per_iteration<T>(stats: &RunStats, figure: impl Fn(&StreamIteration) -> T) -> Vec<T> {
    stats.per_iteration.iter().map(|i| figure(i.figures.stream().expect("a stream iteration"))).collect()
}

/// The run's stream set-up.
fn setup(stats: &RunStats) -> &StreamRun {
    stats.figures.stream.as_ref().expect("the stream set-up")
}

const ALGORITHMS: [&str; 6] = ["bfs", "sssp", "wcc", "pr", "pr-delta", "mssp"];

/// Bytes of the edge files the program reads (targets, plus weights for weighted programs),
/// for one layout.
fn layout_bytes(stats: &RunStats) -> u64 {
    setup(stats).edge_file_bytes
}

#[test]
fn equals_inmem_for_every_algorithm_schedule_and_io_mode() {
    for g in [rmat_graph(), er_graph()] {
        for algorithm in ALGORITHMS {
            let p = params(&g, algorithm);
            let expected = inmem(&g.store, algorithm, &p);
            let mut total_read = std::collections::BTreeMap::new();
            for schedule in [Schedule::Selective, Schedule::Full, Schedule::Block] {
                for io in [IoMode::Buffered, IoMode::Direct] {
                    let what = format!("{} {algorithm} {} {}", g.name, schedule.name(), io.name());
                    // A generous budget (two accumulators, so the parallel fold is used) but
                    // 64 KiB buffers, refilled many times per pass over the file.
                    let options = stream_options(64 << 20, schedule, io, 64 << 10);
                    let (got, stats) = run(&g.store, options, algorithm, &p).unwrap();
                    assert_same(algorithm, &expected, &got, &what);
                    assert_eq!(stats.engine, "stream");
                    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2) as u64;
                    assert!(setup(&stats).accumulators >= threads, "{what}");
                    let mode = ReadMode::of(io == IoMode::Direct);
                    assert!(per_iteration(&stats, |i| i.io_mode).iter().all(|&m| m == mode), "{what}: I/O mode");
                    let bytes: Vec<u64> = stats.per_iteration.iter().map(|i| i.bytes_read).collect();
                    let fills = per_iteration(&stats, |i| i.buffer_fills);
                    let file = layout_bytes(&stats);
                    let buffer = setup(&stats).buffer_bytes;
                    if schedule == Schedule::Full || algorithm == "pr" {
                        // Every edge every iteration: at least the whole file, in many buffers.
                        for (i, (&b, &f)) in bytes.iter().zip(&fills).enumerate() {
                            assert!(b >= file, "{what}: iteration {i} read {b} of {file}");
                            assert!(f >= 4 && f >= file / buffer, "{what}: iteration {i} filled {f} buffers");
                        }
                    }
                    *total_read.entry((schedule.name(), io.name())).or_insert(0) += bytes.iter().sum::<u64>();
                }
            }
            let read = |s: &str| total_read[&(s, "buffered")];
            if algorithm == "pr" {
                assert_eq!(read("selective"), read("full"), "{} pr: dense iterations stream whole", g.name);
            } else {
                // Shrinking frontiers: selective reads less than full streaming, and no more
                // than fixed blocks.
                assert!(read("selective") < read("full"), "{} {algorithm}: {total_read:?}", g.name);
                assert!(read("selective") <= read("block"), "{} {algorithm}: {total_read:?}", g.name);
            }
        }
    }
}

fn pulled(stats: &RunStats) -> usize {
    stats.per_iteration.iter().filter(|i| i.delivery == Some(Delivery::Pull)).count()
}

/// Dense iterations of pr and bfs pull (`engine/stream/pull.rs`): they stream the reverse
/// layout (csr-in of the directed graph, csr-out of the undirected one) in 64 KiB buffers, so
/// lists span buffers, and give inmem's results, as push-only runs do. PageRank pulls in every
/// iteration; BFS pushes its sparse first and last levels and stops scanning a list at the
/// first parent, so its pull iterations scan fewer arcs than the graph has.
#[test]
fn dense_iterations_pull_and_equal_push_only_runs() {
    for g in [rmat_graph(), er_graph()] {
        let reverse = if g.store.is_directed() { "csr-in" } else { "csr-out" };
        let arcs = g.store.num_arcs();
        for algorithm in ["pr", "bfs"] {
            let p = params(&g, algorithm);
            let expected = inmem(&g.store, algorithm, &p);
            for pull in [true, false] {
                let what = format!("{} {algorithm} pull {pull}", g.name);
                let mut options = stream_options(64 << 20, Schedule::Selective, IoMode::Buffered, 64 << 10);
                options.stream.pull = pull;
                let (got, stats) = run(&g.store, options, algorithm, &p).unwrap();
                assert_same(algorithm, &expected, &got, &what);
                if !pull {
                    assert!(stats.per_iteration.iter().all(|i| i.delivery.is_none()), "{what}");
                    assert!(setup(&stats).pull_layout.is_none(), "{what}");
                    continue;
                }
                assert_eq!(setup(&stats).pull_layout, Some(reverse), "{what}");
                let iterations = stats.per_iteration.len();
                match algorithm {
                    "pr" => assert_eq!(pulled(&stats), iterations, "{what}"),
                    _ => {
                        assert!(pulled(&stats) >= 1 && pulled(&stats) < iterations, "{what}");
                        assert_eq!(stats.per_iteration[0].delivery, Some(Delivery::Push), "{what}");
                    }
                }
                let fills = per_iteration(&stats, |i| i.buffer_fills);
                for i in stats.per_iteration.iter().filter(|i| i.delivery == Some(Delivery::Pull)) {
                    assert!(i.bytes_read >= layout_bytes(&stats), "{what}: a pull reads the whole reverse layout");
                    assert!(fills[i.iteration] >= 4, "{what}: {fills:?}");
                    if algorithm == "bfs" {
                        assert!(i.edges_processed < arcs, "{what}: iteration {} scanned every arc", i.iteration);
                    }
                }
            }
        }
    }
}

/// BFS keeps csr-in in memory for its later pulls but does not renumber its sources by degree
/// (`stream/run.rs`, `pull_iteration`): a BFS pull folds one bit per source, so the order buys
/// nothing, while renumbering every id as it is copied cost a quarter of a run on RMAT-22.
#[test]
fn bfs_keeps_pulled_edges_in_memory_without_ordering_sources() {
    let g = rmat_graph();
    let p = params(&g, "bfs");
    let expected = inmem(&g.store, "bfs", &p);
    let options = resident_options(IoMode::Buffered, 64 << 10);
    let (got, stats) = run(&g.store, options, "bfs", &p).unwrap();
    assert_same("bfs", &expected, &got, "bfs from memory");
    let pulls: Vec<_> = stats.per_iteration.iter().filter(|i| i.delivery == Some(Delivery::Pull)).collect();
    assert!(pulls.len() >= 2, "the test needs two pulls: {} iterations", stats.per_iteration.len());
    assert!(pulls.iter().all(|i| !i.figures.stream().expect("a stream iteration").sources_ordered));
    assert!(pulls[0].bytes_read > 0 && pulls[1..].iter().all(|i| i.bytes_read == 0), "later pulls from memory");
}

/// What the budget leaves after the plan keeps a prefix of the layout dense passes read
/// (`engine/stream/resident.rs`): with room for all of it, pr reads csr-in once; with room for
/// about half, every later pass takes that half from memory and reads the rest; results equal
/// inmem's either way and the plan stays within the budget.
#[test]
fn edges_of_dense_passes_stay_in_memory_when_the_budget_has_room() {
    let g = rmat_graph();
    let p = params(&g, "pr");
    let expected = inmem(&g.store, "pr", &p);
    let arcs = g.store.num_arcs();
    let mut options = resident_options(IoMode::Buffered, 64 << 10);
    let (got, stats) = run(&g.store, options.clone(), "pr", &p).unwrap();
    assert_same("pr", &expected, &got, "all resident");
    let resident = per_iteration(&stats, |i| i.resident_edges);
    let file = layout_bytes(&stats);
    assert_eq!(resident[0], 0, "the first pass reads everything");
    assert!(stats.per_iteration[0].bytes_read >= file);
    assert!(resident[1..].iter().all(|&r| r == arcs), "{resident:?}");
    assert!(stats.per_iteration[1..].iter().all(|i| i.bytes_read == 0));
    // All of csr-in stays in memory, as the plan foresees: from the first pull on, sources are
    // ordered by degree (the first pass renumbers the ids as it copies them), and since every
    // target folds its edges in the same order, the ranks are bit for bit those of a run that
    // reads every pass from disk.
    let ordered = per_iteration(&stats, |i| i.sources_ordered);
    assert!(ordered.iter().all(|&o| o), "{ordered:?}");
    let mut from_disk = options.clone();
    from_disk.stream.resident_edges = false;
    let (unordered, stats_from_disk) = run(&g.store, from_disk, "pr", &p).unwrap();
    assert!(per_iteration(&stats_from_disk, |i| i.sources_ordered).iter().all(|&o| !o));
    assert_eq!(format!("{got:?}"), format!("{unordered:?}"), "ordered sources changed the ranks");

    // The planner foresees the resident edges: its plan has them as a part, and it expects
    // one read of the layout, not one per iteration.
    let plan = stats.plan.as_ref().expect("a run records its plan");
    let part = plan.memory.iter().find(|p| p.part == "resident edges").map(|p| p.bytes);
    let room = setup(&stats).resident_room_bytes;
    assert_eq!(part, Some(room), "room {room}, layout {file}: {:?}", plan.memory);
    assert!(room >= file, "room {room} for a {file}-byte layout");
    assert!(plan.bytes_read < 2 * file, "{} bytes planned for a {file}-byte layout: {plan:?}", plan.bytes_read);

    let planned = setup(&stats).planned_bytes;
    let budget = planned + file / 2;
    options.memory = MemoryBudget::new(budget);
    let (got, stats) = run(&g.store, options, "pr", &p).unwrap();
    assert_same("pr", &expected, &got, "half resident");
    let resident = per_iteration(&stats, |i| i.resident_edges);
    assert!(per_iteration(&stats, |i| i.sources_ordered).iter().all(|&o| !o), "half resident: never ordered");
    let room = setup(&stats).resident_room_bytes;
    assert!(room <= file / 2 && room + setup(&stats).planned_bytes <= budget);
    for (i, iteration) in stats.per_iteration.iter().enumerate().skip(1) {
        assert!(resident[i] > arcs / 4 && resident[i] < arcs, "iteration {i}: {resident:?}");
        assert!(iteration.bytes_read > 0 && iteration.bytes_read < file * 3 / 4, "iteration {i}");
        assert_eq!(iteration.edges_processed, arcs, "iteration {i}: every arc is folded once");
    }
}

/// A budget a little short of room for all of csr-in takes the difference from the read
/// buffers (`stream::lend_read_buffers`), which serve only the first pass when the layout
/// stays whole: with `O_DIRECT` reads (whose kept copies hold aligned tails too), pr reads
/// csr-in once, orders its sources, and stays within the budget.
#[test]
fn read_buffers_shrink_so_that_the_whole_pulled_layout_stays_in_memory() {
    let g = rmat_graph();
    let p = params(&g, "pr");
    let expected = inmem(&g.store, "pr", &p);
    let mut options = resident_options(IoMode::Direct, 4 << 20);
    let (_, ample) = run(&g.store, options.clone(), "pr", &p).unwrap();
    let (planned, room) = (setup(&ample).planned_bytes, setup(&ample).resident_room_bytes);
    assert_eq!(setup(&ample).buffer_bytes, 4 << 20);
    let budget = planned + room - (1 << 20);
    options.memory = MemoryBudget::new(budget);
    let (got, stats) = run(&g.store, options, "pr", &p).unwrap();
    assert_same("pr", &expected, &got, "lent buffers");
    let arcs = g.store.num_arcs();
    let lent = setup(&stats);
    assert!(lent.buffer_bytes < 4 << 20 && lent.buffer_bytes >= 1 << 20, "{lent:?}");
    assert!(lent.planned_bytes + lent.resident_room_bytes <= budget, "{lent:?} over {budget}");
    assert!(lent.resident_room_bytes >= layout_bytes(&stats));
    assert!(stats.per_iteration[1..].iter().all(|i| i.bytes_read == 0), "later passes from memory");
    assert!(per_iteration(&stats, |i| i.resident_edges)[1..].iter().all(|&r| r == arcs));
    assert!(per_iteration(&stats, |i| i.sources_ordered).iter().all(|&o| o));
    assert!(stats.memory_ledger.peak_bytes <= budget, "{:?} over {budget}", stats.memory_ledger);
}

/// Once csr-in is all in memory, a sparse BFS level (under Ligra's arcs / 20) whose push would
/// read much of csr-out from disk pulls from memory instead, reading nothing; depths stay
/// those of inmem, directed and undirected.
#[test]
fn a_sparse_level_pulls_from_memory_when_its_push_would_read_much_of_the_disk() {
    for g in [rmat_graph(), er_graph()] {
        let p = params(&g, "bfs");
        let expected = inmem(&g.store, "bfs", &p);
        let options = resident_options(IoMode::Buffered, 64 << 10);
        let (got, stats) = run(&g.store, options, "bfs", &p).unwrap();
        assert_same("bfs", &expected, &got, g.name);
        let arcs = g.store.num_arcs();
        let active_edges = per_iteration(&stats, |i| i.active_edges);
        let from_memory: Vec<usize> = (0..stats.per_iteration.len())
            .filter(|&i| {
                let it = &stats.per_iteration[i];
                it.delivery == Some(Delivery::Pull) && it.active_vertices + active_edges[i] <= arcs / 20
            })
            .collect();
        assert!(!from_memory.is_empty(), "{}: {:?}", g.name, stats.per_iteration);
        assert!(from_memory.iter().all(|&i| stats.per_iteration[i].bytes_read == 0), "{}", g.name);
    }
}

/// Once a dense push has kept the whole push layout in memory, the sparse pushes after it fold
/// the frontier's edges from memory and read nothing (pr-delta: everything is active in the
/// first iteration, a shrinking frontier after; pulls are off, so its dense iterations push);
/// results equal inmem's.
#[test]
fn sparse_pushes_fold_from_memory_once_the_layout_is_resident() {
    let g = rmat_graph();
    let p = params(&g, "pr-delta");
    let expected = inmem(&g.store, "pr-delta", &p);
    let mut options = resident_options(IoMode::Buffered, 64 << 10);
    options.stream.pull = false;
    let (got, stats) = run(&g.store, options, "pr-delta", &p).unwrap();
    assert_same("pr-delta", &expected, &got, "resident");
    let dense = per_iteration(&stats, |i| i.dense);
    assert!(dense[0], "the first iteration pushes every vertex");
    let sparse: Vec<usize> = (1..dense.len()).filter(|&i| !dense[i]).collect();
    assert!(!sparse.is_empty(), "{dense:?}");
    let arcs = g.store.num_arcs();
    for i in sparse {
        let it = &stats.per_iteration[i];
        assert_eq!(it.bytes_read, 0, "sparse iteration {i} read from disk");
        assert_eq!(per_iteration(&stats, |i| i.resident_edges)[i], arcs, "iteration {i}");
    }
}

/// Pull needs the reverse layout's offsets and the sources' messages beside everything push
/// needs: at the smallest budget push runs in, pr pushes, with the same ranks.
#[test]
fn a_budget_without_room_to_pull_pushes() {
    let g = rmat_graph();
    let p = params(&g, "pr");
    let expected = inmem(&g.store, "pr", &p);
    let mut budget = 64u64 << 10;
    let (got, stats) = loop {
        match run(&g.store, stream_options(budget, Schedule::Selective, IoMode::Auto, 16 << 20), "pr", &p) {
            Ok(done) => break done,
            Err(Error::MemoryBudget(_)) => budget = budget * 21 / 20,
            Err(other) => panic!("{other}"),
        }
    };
    assert_same("pr", &expected, &got, &format!("pr at {budget} B"));
    assert!(stats.per_iteration.iter().all(|i| i.delivery.is_none()), "pr at {budget} B pulled");
    let (got, stats) =
        run(&g.store, stream_options(budget * 2, Schedule::Selective, IoMode::Auto, 16 << 20), "pr", &p).unwrap();
    assert_same("pr", &expected, &got, &format!("pr at {} B", budget * 2));
    assert_eq!(pulled(&stats), stats.per_iteration.len(), "pr at twice the smallest budget");
    assert!(setup(&stats).planned_bytes <= budget * 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Push-only and direction-optimised BFS give identical depths on random graphs, directed
    /// and undirected, from every kind of source (isolated, hub, anywhere).
    #[test]
    fn direction_optimised_bfs_equals_push_only(
        n in 2u64..400,
        density in 1u64..6,
        seed in any::<u64>(),
        directed in any::<bool>(),
    ) {
        let mut state = seed | 1;
        let mut next = move || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; state };
        let edges: Vec<(u64, u64, f64)> = (0..n * density).map(|_| (next() % n, next() % n, 1.0)).collect();
        let dir = tempfile::tempdir().unwrap();
        let store = inmem_support::store(dir.path(), n, &edges, directed, false);
        let p = AlgorithmParams { source: Some((seed % n).to_string()), ..AlgorithmParams::default() };
        let mut depths = Vec::new();
        for pull in [true, false] {
            let mut options = stream_options(8 << 20, Schedule::Selective, IoMode::Buffered, 64 << 10);
            options.stream.pull = pull;
            depths.push(run(&store, options, "bfs", &p).unwrap().0);
        }
        prop_assert_eq!(&depths[0].columns, &depths[1].columns);
    }
}

/// The other vertex programs of the registry, among them the two that send along in-edges
/// ([`outcore::program::EdgeDirection::In`]: bc's backward sweep, diameter's backward sweeps),
/// which read csr-in alone.
#[test]
fn in_edge_and_multi_source_programs_equal_inmem() {
    for g in [rmat_graph(), er_graph()] {
        for algorithm in ["bc", "diameter", "msbfs"] {
            let p =
                AlgorithmParams { num_sources: Some(4), seed: Some(9), sweeps: Some(4), ..AlgorithmParams::default() };
            let expected = inmem(&g.store, algorithm, &p);
            for schedule in [Schedule::Selective, Schedule::Full, Schedule::Block] {
                for io in [IoMode::Buffered, IoMode::Direct] {
                    let what = format!("{} {algorithm} {} {}", g.name, schedule.name(), io.name());
                    let (got, stats) =
                        run(&g.store, stream_options(64 << 20, schedule, io, 64 << 10), algorithm, &p).unwrap();
                    assert_same(algorithm, &expected, &got, &what);
                    assert_eq!(stats.engine, "stream");
                }
            }
        }
    }
}

/// The smallest budget the engine accepts for pr on the RMAT graph, found by trying: below it
/// the run fails before reading anything, with the memory needed; at it, the results are
/// still exact and the buffers are refilled many times per iteration.
#[test]
fn tight_budget_refills_buffers_and_keeps_results() {
    let g = rmat_graph();
    for algorithm in ["pr", "wcc", "sssp"] {
        let p = params(&g, algorithm);
        let expected = inmem(&g.store, algorithm, &p);
        let mut budget = 64u64 << 10;
        let (got, stats) = loop {
            let options = stream_options(budget, Schedule::Selective, IoMode::Auto, 16 << 20);
            match run(&g.store, options, algorithm, &p) {
                Ok(done) => break done,
                Err(Error::MemoryBudget(message)) => {
                    assert!(message.contains("--engine shards") && message.contains("raise --memory"), "{message}");
                    assert!(budget < 8 << 20, "{algorithm} needs more than 8 MiB on a 4096-vertex graph: {message}");
                    budget = budget * 21 / 20;
                }
                Err(other) => panic!("{algorithm}: {other}"),
            }
        };
        assert_same(algorithm, &expected, &got, &format!("{algorithm} at {budget} B"));
        let planned = setup(&stats).planned_bytes;
        assert!(planned <= budget, "{algorithm}: planned {planned} over the budget {budget}");
        let fills = per_iteration(&stats, |i| i.buffer_fills);
        let most = *fills.iter().max().unwrap();
        let buffer = setup(&stats).buffer_bytes;
        let file = layout_bytes(&stats);
        assert!(buffer <= 128 << 10, "{algorithm} at {budget} B: buffers of {buffer} B");
        assert!(
            most >= 4 && most >= file / buffer,
            "{algorithm} at {budget} B: fills per iteration {fills:?}, file {file} B"
        );
    }
}

#[test]
fn budget_below_the_vertex_state_fails_before_starting() {
    let g = er_graph();
    let options = stream_options(20_000, Schedule::Selective, IoMode::Auto, 16 << 20);
    let runner = Runner::new(&g.store, options);
    let err = run_algorithm(&runner, "wcc", &AlgorithmParams::default()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::MemoryBudget(_)), "{text}");
    assert!(text.contains("4000 vertices"), "{text}");
    assert!(text.contains("raise --memory to at least"), "{text}");
    assert!(text.contains("--engine shards"), "{text}");
    assert_eq!(runner.io_snapshot().bytes_read, 0, "nothing is read before the budget check");
}

#[test]
fn mssp_beyond_one_pass_equals_single_source_runs() {
    let g = er_graph();
    let mut p = AlgorithmParams { num_sources: Some(40), seed: Some(3), ..AlgorithmParams::default() };
    let options = stream_options(64 << 20, Schedule::Selective, IoMode::Buffered, 64 << 10);
    let (got, stats) = run(&g.store, options, "mssp", &p).unwrap();
    assert_eq!(got.columns.len(), 40);
    assert_eq!(got.summary["passes"], 2);
    assert_eq!(stats.figures.mssp_passes, Some(2));
    let expected = inmem(&g.store, "mssp", &p);
    assert_same("mssp", &expected, &got, "mssp 40 sources");
    // Each column is the sssp of its source.
    for (name, column) in got.columns.iter().take(3) {
        p = AlgorithmParams { source: Some(name.clone()), ..AlgorithmParams::default() };
        let sssp = inmem(&g.store, "sssp", &p);
        assert_eq!(&sssp.columns[0].1, column, "source {name}");
    }
}

#[test]
fn pagerank_is_deterministic_across_runs() {
    let g = rmat_graph();
    let p = params(&g, "pr");
    let options = || stream_options(64 << 20, Schedule::Selective, IoMode::Buffered, 64 << 10);
    let (a, _) = run(&g.store, options(), "pr", &p).unwrap();
    let (b, _) = run(&g.store, options(), "pr", &p).unwrap();
    assert_eq!(a, b, "same budget, same slices, same fold order: bitwise equal");
}

#[test]
fn graphalytics_validation_passes_on_the_stream_engine() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graphalytics");
    for schedule in [Schedule::Selective, Schedule::Full, Schedule::Block] {
        for io in [IoMode::Buffered, IoMode::Direct] {
            let work = tempfile::tempdir().unwrap();
            let options = stream_options(1 << 20, schedule, io, 16 << 10);
            // Stores built by the real import pipeline, as `outcore validate` does.
            let report = outcore::validate::validate_graphalytics(&data, &options, work.path(), &NoProgress).unwrap();
            let ours: Vec<_> =
                report.rows.iter().filter(|r| matches!(r.algorithm.as_str(), "bfs" | "pr" | "sssp" | "wcc")).collect();
            assert_eq!(ours.len(), 16, "{report}");
            for row in &ours {
                assert!(
                    row.passed,
                    "{} {} ({} {}): {:?}",
                    row.graph,
                    row.algorithm,
                    schedule.name(),
                    io.name(),
                    row.mismatch
                );
                assert_eq!(row.engine, "stream");
            }
            // cdlp and lcc are Pregel programs, which this engine does not run: they are
            // skipped with a message saying so rather than silently running elsewhere.
            for row in report.rows.iter().filter(|r| matches!(r.algorithm.as_str(), "cdlp" | "lcc")) {
                assert!(row.skipped, "{row:?}");
                assert!(row.mismatch.as_deref().unwrap_or("").contains("does not run Pregel programs"), "{row:?}");
            }
            assert!(report.all_passed(), "{report}");
        }
    }
}

/// Every engine counts the bytes whose block checksums it verified (`RunStats::bytes_verified`):
/// the edge engines at least csr-out's targets (each pr iteration reads them all), every block
/// at most once per run, and nothing that is not in the store.
#[test]
fn every_engine_verifies_the_store_bytes_it_reads_each_block_once_per_run() {
    let g = rmat_graph();
    let p = params(&g, "pr");
    let targets = g.store.manifest().files["csr-out/targets"].bytes;
    for engine in [EngineKind::InMemory, EngineKind::Stream, EngineKind::Cache, EngineKind::Shards, EngineKind::Pregel]
    {
        let options = RunOptions { engine, memory: MemoryBudget::new(64 << 20), ..RunOptions::default() };
        let runner = Runner::new(&g.store, options);
        run_algorithm(&runner, "pr", &p).unwrap();
        let stats = runner.finish("pr");
        // Derived layouts the run built (pregel's partition included) are in the generation too.
        let all = bytes_under(g.store.dir());
        let what = format!("{engine:?}: {} bytes verified, {} read", stats.bytes_verified, stats.bytes_read);
        eprintln!("checksums: pr on {what} (csr-out/targets: {targets})");
        if cfg!(feature = "unchecked-blocks") {
            assert_eq!(stats.bytes_verified, 0, "{what}");
            continue;
        }
        assert!(stats.bytes_verified <= all, "{what}, more than the store holds ({all})");
        match engine {
            EngineKind::InMemory | EngineKind::Stream => assert!(stats.bytes_verified >= targets, "{what}"),
            _ => assert!(stats.bytes_verified > 0, "{what}"),
        }
    }
}

fn bytes_under(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| match e.metadata().unwrap() {
            m if m.is_dir() => bytes_under(&e.path()),
            m => m.len(),
        })
        .sum()
}

/// pr-delta pulls while most vertices are active and pushes once the frontier is small, on
/// stream (every pass read from disk through 64 KiB buffers) and on inmem; either way it ends
/// within its tolerance of a stream run that only pushes.
#[test]
fn pr_delta_pulls_its_dense_iterations_and_pushes_its_sparse_ones() {
    for g in [rmat_graph(), er_graph()] {
        let p = params(&g, "pr-delta");
        let mut push_only = stream_options(64 << 20, Schedule::Selective, IoMode::Buffered, 64 << 10);
        push_only.stream.pull = false;
        let (expected, stats) = run(&g.store, push_only, "pr-delta", &p).unwrap();
        assert!(stats.per_iteration.iter().all(|i| i.delivery != Some(Delivery::Pull)), "{}", g.name);
        let inmem =
            RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() };
        for options in [stream_options(64 << 20, Schedule::Selective, IoMode::Buffered, 64 << 10), inmem] {
            let what = format!("{} pr-delta on {:?}", g.name, options.engine);
            let (got, stats) = run(&g.store, options, "pr-delta", &p).unwrap();
            assert_same("pr-delta", &expected, &got, &what);
            let delivery: Vec<_> = stats.per_iteration.iter().map(|i| i.delivery).collect();
            assert_eq!(delivery[0], Some(Delivery::Pull), "{what}: {delivery:?}");
            assert!(delivery.contains(&Some(Delivery::Push)), "{what}: {delivery:?}");
        }
    }
}

/// Counts, per vertex, the iterations it received messages in and the messages it received:
/// a third of the vertices send (by id and iteration), a message of 1.0 each, so a vertex
/// that is applied without an active in-neighbour, or misses one, shows in the counts.
struct Deliveries;

impl VertexProgram for Deliveries {
    type Value = (u64, f64);
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn init(&self, _: u64, _: &GraphInfo) -> (u64, f64) {
        (0, 0.0)
    }
    fn initially_active(&self, v: u64, _: &GraphInfo) -> bool {
        v.is_multiple_of(3)
    }
    fn scatter(&self, _: &(u64, f64), _: EdgeRef) -> Option<f64> {
        Some(1.0)
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn identity(&self) -> f64 {
        0.0
    }
    fn apply(&self, v: u64, value: &mut (u64, f64), sum: f64, ctx: &IterationContext) -> bool {
        *value = (value.0 + 1, value.1 + sum);
        !(v as usize + ctx.iteration).is_multiple_of(3)
    }
    fn supports_pull(&self) -> bool {
        true
    }
    fn sends_uniform_messages(&self) -> bool {
        true
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(6)
    }
}

/// A pull in which only some sources send folds their messages in lanes and applies only the
/// targets that one of them reached (`stream/pull.rs`): every vertex is applied in the same
/// iterations, with the same sums, as on inmem.
#[test]
fn pulls_from_some_sources_apply_exactly_the_targets_they_reach() {
    for g in [rmat_graph(), er_graph()] {
        let inmem =
            RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() };
        let expected = Runner::new(&g.store, inmem).run_vertex_program(&Deliveries).unwrap();
        for options in [
            stream_options(64 << 20, Schedule::Selective, IoMode::Buffered, 64 << 10),
            resident_options(IoMode::Direct, 64 << 10),
        ] {
            let runner = Runner::new(&g.store, options);
            let got = runner.run_vertex_program(&Deliveries).unwrap();
            assert_eq!(got, expected, "{}", g.name);
            let stats = runner.finish("deliveries");
            let pulls = stats.per_iteration.iter().filter(|i| i.delivery == Some(Delivery::Pull)).count();
            assert!(pulls >= 4, "{}: {pulls} pulls", g.name);
        }
    }
}
