//! The shards engine against the in-memory reference engine: every vertex-program algorithm
//! under `--dynamic off|ads|ods` on a directed RMAT and an undirected Erdős–Rényi graph with
//! budgets that force many intervals, the Graphalytics validation graphs, the `shards-P`
//! layout itself, the paper's u → v → w delay case (Table 2), and a run whose vertex values
//! alone exceed the budget — all with values on disk (`ShardValues::Disk`); then the memory
//! mode (values in memory, topology-only steps) against inmem with its byte counters, and the
//! choice between the modes. Figures are bytes and counters, never times.

mod inmem_support;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::shards::{
    DelayedDelivery, DynamicPolicy, ShardFiles, ShardLayout, ShardValues, ShardsOptions, StepKind,
};
use outcore::engine::{EngineKind, IterationStats, RunOptions, RunStats, Runner, ShardsIteration, ShardsRun};
use outcore::generate::{generate_into_store, EdgeGenerator, ErdosRenyi, ErdosRenyiConfig, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::{Direction, Store};
use outcore::Error;

struct TestGraph {
    name: &'static str,
    _dir: tempfile::TempDir,
    store: Store,
    source: String,
    sources: Vec<String>,
}

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
    let sources = vec![original(busiest), original(0), original(n / 3), original(n - 1)];
    TestGraph { name, _dir: dir, source: original(busiest), sources, store }
}

/// Graph500 RMAT, scale 10, edge factor 8, directed, weighted.
fn rmat_graph() -> TestGraph {
    let config = RmatConfig { scale: 10, edge_factor: 8, seed: 7, weights: true, ..RmatConfig::default() };
    graph("rmat-10", Rmat::new(config).unwrap(), false)
}

/// G(1000, 6000), undirected, weighted.
fn er_graph() -> TestGraph {
    let config = ErdosRenyiConfig { vertices: 1000, edges: 6000, seed: 11, self_loops: true, weights: true };
    graph("er-1000", ErdosRenyi::new(config).unwrap(), true)
}

fn params(g: &TestGraph, algorithm: &str) -> AlgorithmParams {
    let mut p = AlgorithmParams::default();
    if matches!(algorithm, "bfs" | "sssp") {
        p.source = Some(g.source.clone());
    }
    if matches!(algorithm, "mssp" | "bc" | "heat" | "bp") {
        p.sources = g.sources.clone();
    }
    match algorithm {
        "pr" => p.iterations = Some(10),
        "bp" => p.iterations = Some(20),
        // Looser than the defaults (1e-9) to keep the test fast; the bounds below follow.
        "pr-delta" | "heat" => p.tolerance = Some(1e-6),
        _ => {}
    }
    p
}

/// The fully external mode (values on disk, per-edge records), which these tests exercise.
fn shards_options(memory: u64, shards: Option<usize>, dynamic: Option<DynamicPolicy>) -> RunOptions {
    values_options(memory, shards, dynamic, ShardValues::Disk)
}

fn values_options(
    memory: u64,
    shards: Option<usize>,
    dynamic: Option<DynamicPolicy>,
    values: ShardValues,
) -> RunOptions {
    RunOptions {
        engine: EngineKind::Shards,
        memory: MemoryBudget::new(memory),
        // A small delay-buffer limit so that the tests see several shadow iterations.
        shards: ShardsOptions { shards, dynamic, values, delay_buffer_bytes: 2 << 10, ..ShardsOptions::default() },
        ..RunOptions::default()
    }
}

fn run(
    store: &Store,
    options: RunOptions,
    algorithm: &str,
    p: &AlgorithmParams,
) -> outcore::Result<(AlgorithmResult, RunStats)> {
    let runner = Runner::new(store, options);
    let result = run_algorithm(&runner, algorithm, p)?;
    Ok((result, runner.finish(algorithm)))
}

fn inmem(store: &Store, algorithm: &str, p: &AlgorithmParams) -> AlgorithmResult {
    let options =
        RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() };
    run(store, options, algorithm, p).unwrap().0
}

/// Exact equality for selective programs; pr and bc relative 1e-9; pr-delta and heat: both
/// runs end within their tolerance's bound (L1) of the fixed point; bp within 1e-4.
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
                let l1: f64 = e.iter().zip(g).map(|(a, b)| (a - b).abs()).sum();
                assert!(l1 <= 2.0 * 1e-6 * 0.85 / 0.15, "{what}: L1 distance {l1}");
            }
            (ValueColumn::Float(e), ValueColumn::Float(g)) if algorithm == "heat" => {
                // Every vertex ends with at most tolerance (1e-6) unpassed and α = 0.5, so each
                // run is within n·tolerance (L1) of the steady state.
                let l1: f64 = e.iter().zip(g).map(|(a, b)| (a - b).abs()).sum();
                assert!(l1 <= 2.0 * 1e-6 * e.len() as f64, "{what}: L1 distance {l1}");
            }
            (ValueColumn::Float(e), ValueColumn::Float(g)) if algorithm == "bp" => {
                for (v, (a, b)) in e.iter().zip(g).enumerate() {
                    assert!((a - b).abs() <= 1e-4, "{what}: vertex {v}: {a} vs {b}");
                }
            }
            _ => assert!(ec == gc, "{what}: column {en} differs"),
        }
    }
}

/// The kind of shards each step loaded, values on disk or in memory.
fn kinds(stats: &RunStats) -> Vec<String> {
    stats.per_iteration.iter().map(|i| step(i).0.name().to_string()).collect()
}

/// Where each step held the vertex values.
fn values_modes(stats: &RunStats) -> Vec<String> {
    stats.per_iteration.iter().map(|i| step(i).1.name().to_string()).collect()
}

fn step(i: &IterationStats) -> (StepKind, ShardValues) {
    match (i.figures.shards(), i.figures.shards_memory()) {
        (Some(disk), _) => (disk.kind, disk.shards_values),
        (_, Some(memory)) => (memory.kind, memory.shards_values),
        _ => panic!("not a shards step: {:?}", i.figures),
    }
}

/// One figure of every step of a run with values on disk.
fn disk_steps<T>(stats: &RunStats, figure: impl Fn(&ShardsIteration) -> T) -> Vec<T> {
    stats.per_iteration.iter().map(|i| figure(i.figures.shards().expect("a step with values on disk"))).collect()
}

/// The run's shards figures.
fn run_figures(stats: &RunStats) -> &ShardsRun {
    stats.figures.shards.as_ref().expect("the shards figures")
}

#[test]
fn every_algorithm_equals_inmem_under_each_policy_with_many_shards_on_rmat() {
    every_algorithm_equals_inmem(rmat_graph());
}

#[test]
fn every_algorithm_equals_inmem_under_each_policy_with_many_shards_on_erdos_renyi() {
    every_algorithm_equals_inmem(er_graph());
}

fn every_algorithm_equals_inmem(g: TestGraph) {
    {
        for algorithm in ["pr-delta", "heat", "bp", "sssp", "wcc", "mssp", "bfs", "pr", "bc"] {
            let p = params(&g, algorithm);
            let expected = inmem(&g.store, algorithm, &p);
            use DelayedDelivery::{Adjacency, Shadow};
            let policies: &[(Option<DynamicPolicy>, DelayedDelivery)] = if matches!(algorithm, "pr" | "bc") {
                &[(None, Adjacency)]
            } else {
                &[
                    (Some(DynamicPolicy::Off), Adjacency),
                    (Some(DynamicPolicy::Ads), Adjacency),
                    (Some(DynamicPolicy::Ods), Adjacency),
                    (Some(DynamicPolicy::Ads), Shadow),
                    (Some(DynamicPolicy::Ods), Shadow),
                ]
            };
            for &(policy, delivery) in policies {
                let what = format!("{} {algorithm} {policy:?} {delivery:?}", g.name);
                let mut options = shards_options(512 << 10, None, policy);
                options.shards.delayed_delivery = delivery;
                let (got, stats) = run(&g.store, options, algorithm, &p).unwrap();
                let shards = run_figures(&stats).shards;
                assert!(shards >= 8, "{what}: the budget must force many intervals, got {shards}");
                assert_same(algorithm, &expected, &got, &what);
                assert_eq!(stats.engine, "shards");
                if policy == Some(DynamicPolicy::Off) || policy.is_none() {
                    assert!(kinds(&stats).iter().all(|k| k == "static"), "{what}");
                }
                if algorithm == "pr-delta" && policy != Some(DynamicPolicy::Off) {
                    let kinds = kinds(&stats);
                    assert!(kinds.iter().any(|k| k == "dynamic"), "{what}: no dynamic step in {kinds:?}");
                    assert!(kinds.iter().any(|k| k == "shadow"), "{what}: no shadow step in {kinds:?}");
                    // Vertices lacking edges on the dynamic shards are served at once (their
                    // messages spill when 1/32 of this small budget is full), or all wait.
                    let served: u64 = disk_steps(&stats, |i| i.directly_served_vertices).iter().sum();
                    let delayed: u64 = disk_steps(&stats, |i| i.delayed_vertices_added).iter().sum();
                    match delivery {
                        Adjacency => assert!(served > 0 && delayed == 0, "{what}: {served} served, {delayed} delayed"),
                        Shadow => assert!(served == 0 && delayed > 0, "{what}: {served} served, {delayed} delayed"),
                    }
                }
            }
        }
    }
}

/// pr-delta under ODS on 16 shards with the default delay buffer and the given delivery.
fn ods_pr_delta(g: &TestGraph, delivery: DelayedDelivery) -> (AlgorithmResult, RunStats) {
    let p = params(g, "pr-delta");
    let mut options = shards_options(1 << 20, Some(16), Some(DynamicPolicy::Ods));
    options.shards.delay_buffer_bytes = ShardsOptions::default().delay_buffer_bytes;
    options.shards.delayed_delivery = delivery;
    run(&g.store, options, "pr-delta", &p).unwrap()
}

/// The step of the first shadow iteration, the edges of the dynamic shards it built, and every
/// step's dirty edges.
fn first_dynamic_set(stats: &RunStats) -> (usize, u64, Vec<u64>) {
    let first_shadow = kinds(stats).iter().position(|k| k == "shadow").unwrap();
    let built = stats.per_iteration[first_shadow].figures.shards().unwrap().dynamic_shard_edges.unwrap();
    (first_shadow, built, disk_steps(stats, |i| i.dirty_edges))
}

#[test]
fn dynamic_steps_load_only_a_subset_of_the_edges_of_static_steps() {
    let g = rmat_graph();
    let (_, stats) = ods_pr_delta(&g, DelayedDelivery::Adjacency);
    let kinds = kinds(&stats);
    let loaded = disk_steps(&stats, |i| i.edges_loaded);
    let static_loaded = loaded[kinds.iter().position(|k| k == "static").unwrap()];
    assert_eq!(static_loaded, loaded[kinds.iter().position(|k| k == "shadow").unwrap()]);
    let dynamic: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == "dynamic").collect();
    assert!(!dynamic.is_empty(), "{kinds:?}");
    for &i in &dynamic {
        assert!(loaded[i] < static_loaded, "step {i}: {} of {static_loaded} edges", loaded[i]);
        let it = &stats.per_iteration[i];
        assert!(it.bytes_read < stats.per_iteration[0].bytes_read, "step {i} read {}", it.bytes_read);
        assert_eq!(it.figures.shards().unwrap().static_bytes_read, 0, "dynamic steps read no static shard");
    }
    // With direct delivery the first dynamic shards hold the edges updated in the shadow.
    let (first_shadow, built, dirty) = first_dynamic_set(&stats);
    assert_eq!(built, dirty[first_shadow], "edges built in the first shadow");
}

/// Under the paper's delivery (vertices lacking edges wait for a shadow) the first dynamic
/// shards hold the edges updated in the two steps up to the first shadow (§5.1), at its p.
#[test]
fn under_shadow_delivery_the_first_dynamic_shards_hold_two_steps_of_updated_edges() {
    let g = rmat_graph();
    let (got, stats) = ods_pr_delta(&g, DelayedDelivery::Shadow);
    let p = params(&g, "pr-delta");
    assert_same("pr-delta", &inmem(&g.store, "pr-delta", &p), &got, "ods:shadow");
    let (first_shadow, built, dirty) = first_dynamic_set(&stats);
    let share = DelayedDelivery::Shadow.default_shadow_edge_share();
    assert_eq!(share, 0.30, "the paper's p");
    let shares: Vec<f64> = dirty.iter().map(|&d| d as f64 / g.store.num_arcs() as f64).collect();
    assert!(shares[first_shadow - 1] < share, "{shares:?}");
    assert!(shares[..first_shadow - 1].iter().all(|&s| s >= share), "{shares:?}");
    assert!(built >= dirty[first_shadow].max(dirty[first_shadow - 1]), "{built} edges built");
    assert!(built <= dirty[first_shadow] + dirty[first_shadow - 1]);
}

/// Dynamic shard sets come and go every few steps (every step under ADS); the files of a
/// retired set are overwritten by the next one in place rather than deleted and created again,
/// so the run creates only as many set directories as sets alive at once (the one read and the
/// one written), whatever the number of sets built — and the reused, possibly longer files
/// change no result.
#[test]
fn retired_dynamic_shard_sets_hand_their_directories_to_the_next_set() {
    let g = rmat_graph();
    let p = params(&g, "pr-delta");
    let expected = inmem(&g.store, "pr-delta", &p);
    for policy in [DynamicPolicy::Ads, DynamicPolicy::Ods] {
        let what = format!("pr-delta {policy:?}");
        let options = shards_options(512 << 10, None, Some(policy));
        assert_eq!(options.shards.delayed_delivery, DelayedDelivery::Adjacency);
        let (got, stats) = run(&g.store, options, "pr-delta", &p).unwrap();
        assert_same("pr-delta", &expected, &got, &what);
        let figures = run_figures(&stats);
        let built = figures.dynamic_sets_built.unwrap();
        let directories = figures.dynamic_set_directories.unwrap();
        assert!(built > 2, "{what}: only {built} dynamic shard sets built");
        assert!((1..=2).contains(&directories), "{what}: {directories} directories for {built} sets");
    }
}

#[test]
fn graphalytics_validation_passes_on_the_shards_engine() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graphalytics");
    for policy in [DynamicPolicy::Off, DynamicPolicy::Ads, DynamicPolicy::Ods] {
        let work = tempfile::tempdir().unwrap();
        let options = shards_options(1 << 20, Some(8), Some(policy));
        let report = outcore::validate::validate_graphalytics(&data, &options, work.path(), &NoProgress).unwrap();
        let ours: Vec<_> =
            report.rows.iter().filter(|r| matches!(r.algorithm.as_str(), "bfs" | "sssp" | "wcc")).collect();
        assert_eq!(ours.len(), 12, "{report}");
        for row in &ours {
            assert!(row.passed, "{} {} ({}): {:?}", row.graph, row.algorithm, policy.name(), row.mismatch);
            assert_eq!(row.engine, "shards");
        }
        // pr applies to every vertex each iteration: it needs --dynamic off.
        for row in report.rows.iter().filter(|r| r.algorithm == "pr") {
            assert_eq!(row.passed, policy == DynamicPolicy::Off, "{row:?}");
        }
    }
}

#[test]
fn layout_holds_every_arc_once_sorted_by_source_in_its_interval_and_is_reused() {
    let g = rmat_graph();
    let layout = ShardLayout::open_or_build(&g.store, 8, 1 << 20, &NoProgress).unwrap();
    let csr = g.store.csr(Direction::Out).unwrap().load().unwrap();
    let mut arcs: Vec<(u64, u64, u64)> = Vec::new();
    for j in 0..8 {
        let section = ShardFiles::static_shard(&layout, j, [None, None], true, 24).load(0, 8).unwrap();
        assert!(section.sources.windows(2).all(|w| w[0] <= w[1]), "shard {j} sorted by source");
        for e in 0..section.len() {
            assert_eq!(layout.interval_of(section.targets[e]), j, "target in the shard's interval");
        }
        for i in 0..8 {
            for e in section.block(i) {
                assert_eq!(layout.interval_of(section.sources[e]), i, "block {i} of shard {j}");
            }
        }
        arcs.extend((0..section.len()).map(|e| (section.sources[e], section.targets[e], section.weights[e].to_bits())));
    }
    let mut want: Vec<(u64, u64, u64)> = Vec::new();
    for v in 0..csr.num_vertices() {
        for (&t, &w) in csr.neighbors(v).iter().zip(csr.weights_of(v).unwrap()) {
            want.push((v, t, w.to_bits()));
        }
    }
    arcs.sort_unstable();
    want.sort_unstable();
    assert_eq!(arcs, want);
    // Balanced by in-edges: no interval holds more than twice its share (plus one hub).
    let share = g.store.num_arcs() / 8;
    for j in 0..8 {
        assert!(layout.shard_edges(j) <= 2 * share + 2000, "shard {j}: {} edges", layout.shard_edges(j));
    }
    // Built once: a run with the same P finds it in the manifest and reads, not writes, it.
    let before = std::fs::metadata(g.store.path("shards-8/intervals")).unwrap().modified().unwrap();
    let (_, stats) =
        run(&g.store, shards_options(64 << 20, Some(8), None), "wcc", &AlgorithmParams::default()).unwrap();
    assert_eq!(run_figures(&stats).shards, 8);
    assert_eq!(std::fs::metadata(g.store.path("shards-8/intervals")).unwrap().modified().unwrap(), before);
    // No run files are left behind (only this process's owner lock, removed once it ends).
    let leftovers: Vec<_> = std::fs::read_dir(g.store.path("tmp"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|name| !name.starts_with("owner@"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A delta program that halves what it passes on: value += m, send m/2, active while m ≥ eps.
/// Values are sums of powers of two, so every order of summation gives the same bits.
struct Halving;

impl VertexProgram for Halving {
    type Value = (f64, f64);
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn init(&self, v: u64, _: &GraphInfo) -> (f64, f64) {
        if v == 0 {
            (1.0, 1.0)
        } else {
            (0.0, 0.0)
        }
    }
    fn initially_active(&self, v: u64, _: &GraphInfo) -> bool {
        v == 0
    }
    fn scatter(&self, value: &(f64, f64), _: EdgeRef) -> Option<f64> {
        Some(value.1 / 2.0)
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn identity(&self) -> f64 {
        0.0
    }
    fn apply(&self, _: u64, value: &mut (f64, f64), m: f64, _: &IterationContext) -> bool {
        value.0 += m;
        value.1 = m;
        m >= 1.0 / 1024.0
    }
}

/// The paper's u → v → w (Table 2) as x → x, x → v, v → w (dense ids 0, 1, 2): x keeps
/// sending to v, and v → w is written only when v is active. Returns the store and the
/// reference engine's [`Halving`] values on it.
fn table2_graph(dir: &std::path::Path) -> (Store, Vec<(f64, f64)>) {
    let edges = [(0, 0, 1.0), (0, 1, 1.0), (1, 2, 1.0)];
    let store = inmem_support::store(dir, 3, &edges, true, false);
    let reference = Runner::new(
        &store,
        RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 30), ..RunOptions::default() },
    );
    let want = reference.run_vertex_program(&Halving).unwrap();
    (store, want)
}

#[test]
fn a_vertex_whose_out_edge_is_missing_is_delayed_and_the_shadow_delivers_its_folded_message() {
    // x → x, x → v, v → w (dense ids 0, 1, 2): x keeps sending to v; v's edge to w was never
    // written, so it is missing from every dynamic shard (the paper's u → v → w, Table 2).
    let dir = tempfile::tempdir().unwrap();
    let (store, want) = table2_graph(dir.path());
    for policy in [DynamicPolicy::Ads, DynamicPolicy::Ods] {
        let mut options = shards_options(64 << 20, Some(3), Some(policy));
        // Shadow iterations only when nothing else is left, so v is delayed several times.
        options.shards.delay_buffer_bytes = 1 << 20;
        options.shards.shadow_edge_share = Some(0.9);
        options.shards.delayed_delivery = DelayedDelivery::Shadow;
        let runner = Runner::new(&store, options);
        let got = runner.run_vertex_program(&Halving).unwrap();
        let stats = runner.finish("halving");
        // Totals are sums of powers of two: equal bits in any order. (The last increment of
        // w differs by design: delayed messages arrive folded.)
        let totals = |x: &[(f64, f64)]| x.iter().map(|v| v.0).collect::<Vec<_>>();
        assert_eq!(totals(&got), totals(&want), "{policy:?}");
        if policy == DynamicPolicy::Ods {
            // ODS builds its dynamic shards in a shadow iteration in which v also sent along
            // v → w, so nothing is missing here; ADS drops v → w from the first dynamic shards.
            continue;
        }
        let kinds = kinds(&stats);
        let added = disk_steps(&stats, |i| i.delayed_vertices_added);
        let delivered = disk_steps(&stats, |i| i.delayed_vertices_delivered);
        let shadow = kinds.iter().rposition(|k| k == "shadow").unwrap();
        assert!(
            delivered[shadow] >= 2,
            "{policy:?}: v entered the buffer more than once: {kinds:?} {added:?} {delivered:?}"
        );
        let before: u64 = added[..shadow].iter().sum();
        assert_eq!(before, delivered[shadow], "{policy:?}: every delayed entry is delivered");
        assert!(got[2].0 > 0.0, "w received v's folded message");
    }
}

#[test]
fn a_vertex_whose_out_edge_is_missing_is_served_from_its_adjacency_list_at_once() {
    // The same graph as above under ADS, whose first dynamic shards lack v → w: with direct
    // delivery v reads its adjacency list, sends along v → w in the same step, and nothing
    // waits for a shadow iteration.
    let dir = tempfile::tempdir().unwrap();
    let (store, want) = table2_graph(dir.path());
    let mut options = shards_options(64 << 20, Some(3), Some(DynamicPolicy::Ads));
    options.shards.delay_buffer_bytes = 1 << 20;
    assert_eq!(options.shards.delayed_delivery, DelayedDelivery::Adjacency, "the default");
    let runner = Runner::new(&store, options);
    let got = runner.run_vertex_program(&Halving).unwrap();
    let stats = runner.finish("halving");
    // Every message travels in the step it would on static shards: the values equal bit for bit.
    assert_eq!(got, want);
    let plain = Runner::new(&store, shards_options(64 << 20, Some(3), Some(DynamicPolicy::Off)));
    plain.run_vertex_program(&Halving).unwrap();
    assert_eq!(stats.iterations, plain.finish("halving").iterations, "as many steps as static shards");
    let served = disk_steps(&stats, |i| i.directly_served_vertices);
    let messages = disk_steps(&stats, |i| i.direct_messages);
    let kinds = kinds(&stats);
    assert!(served.iter().sum::<u64>() >= 2, "v was served more than once: {served:?}");
    assert_eq!(served, messages, "one missing edge (v → w) per service");
    assert_eq!(disk_steps(&stats, |i| i.delayed_vertices_added).iter().sum::<u64>(), 0);
    assert_eq!(kinds.iter().filter(|k| *k == "shadow").count(), 1, "only ADS's initial shadow: {kinds:?}");
    assert!(disk_steps(&stats, |i| i.adjacency_bytes_read).iter().sum::<u64>() > 0);
}

#[test]
fn vertex_values_larger_than_the_budget_run_fully_external() {
    // 30 000 vertices of 24 bytes of pr-delta state (720 KB) under a 512 KiB budget.
    let config = ErdosRenyiConfig { vertices: 30_000, edges: 45_000, seed: 5, self_loops: false, weights: false };
    let g = graph("er-30000", ErdosRenyi::new(config).unwrap(), false);
    let p = AlgorithmParams { tolerance: Some(1e-6), ..AlgorithmParams::default() };
    let expected = inmem(&g.store, "pr-delta", &p);
    let (got, stats) =
        run(&g.store, shards_options(512 << 10, None, Some(DynamicPolicy::Ods)), "pr-delta", &p).unwrap();
    assert!(g.store.num_vertices() * 24 > 512 << 10);
    assert!(run_figures(&stats).shards >= 8);
    let (ValueColumn::Float(e), ValueColumn::Float(o)) = (&expected.columns[0].1, &got.columns[0].1) else {
        panic!("float columns")
    };
    let l1: f64 = e.iter().zip(o).map(|(a, b)| (a - b).abs()).sum();
    assert!(l1 <= 2.0 * 1e-6 * 0.85 / 0.15, "L1 distance {l1}");
}

#[test]
fn dynamic_policies_are_refused_for_programs_that_apply_to_every_vertex() {
    let g = er_graph();
    let p = params(&g, "pr");
    let err = run(&g.store, shards_options(1 << 20, None, Some(DynamicPolicy::Ods)), "pr", &p).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)) && err.to_string().contains("--dynamic off"), "{err}");
    let err = run(&g.store, shards_options(1 << 20, Some(1), None), "wcc", &p).unwrap_err();
    assert!(matches!(err, Error::MemoryBudget(_)), "{err}");
}

/// Algorithms for the memory mode: pr, wcc (`Both` on a directed store), bfs, sssp (weighted),
/// bc (`In` on a directed store).
const MEMORY_MODE_ALGORITHMS: [&str; 5] = ["pr", "wcc", "bfs", "sssp", "bc"];

fn values_in_memory_equal_inmem(g: TestGraph) {
    for algorithm in MEMORY_MODE_ALGORITHMS {
        let p = params(&g, algorithm);
        let expected = inmem(&g.store, algorithm, &p);
        let what = format!("{} {algorithm} values in memory", g.name);
        // 128 KiB: all values fit, but not the whole topology beside them: several shards.
        let options = values_options(128 << 10, None, Some(DynamicPolicy::Off), ShardValues::Memory);
        let (got, stats) = run(&g.store, options, algorithm, &p).unwrap();
        assert_same(algorithm, &expected, &got, &what);
        assert_eq!(run_figures(&stats).shards_values.name(), "memory", "{what}");
        assert!(run_figures(&stats).shards >= 2, "{what}: {:?}", run_figures(&stats).shards);
        let topology = run_figures(&stats).memory.as_ref().unwrap().shards_topology_bytes;
        assert!(topology > 0, "{what}");
        assert!(values_modes(&stats).iter().all(|m| m == "memory"), "{what}");
        for it in &stats.per_iteration {
            assert_eq!(it.bytes_written, 0, "{what}: step {} wrote", it.iteration);
            assert!(it.bytes_read <= topology, "{what}: step {} read {} > {topology}", it.iteration, it.bytes_read);
            assert_eq!(it.figures.shards_memory().unwrap().static_bytes_written, 0, "{what}");
        }
        // A step that scatters reads every shard's topology exactly once.
        assert_eq!(stats.per_iteration[0].bytes_read, topology, "{what}");
        assert_eq!(stats.per_iteration[0].edges_processed, g.store.num_arcs(), "{what}");
        assert!(run_figures(&stats).memory.as_ref().unwrap().shards_values_bytes <= 128 << 10, "{what}");
    }
}

#[test]
fn values_in_memory_equal_inmem_and_steps_read_only_topology_on_rmat() {
    values_in_memory_equal_inmem(rmat_graph());
}

#[test]
fn values_in_memory_equal_inmem_and_steps_read_only_topology_on_erdos_renyi() {
    values_in_memory_equal_inmem(er_graph());
}

/// The memory mode's own sum for pr (8-byte value and message): values, messages, received and
/// active flags, and csr-out's n+1 offsets.
fn pr_vertex_state(n: u64) -> u64 {
    n * (8 + 8 + 1 + 1) + (n + 1) * 8
}

#[test]
fn auto_keeps_values_in_memory_when_they_fit_and_on_disk_when_they_do_not() {
    let config = ErdosRenyiConfig { vertices: 30_000, edges: 45_000, seed: 5, self_loops: false, weights: false };
    let g = graph("er-30000", ErdosRenyi::new(config).unwrap(), false);
    let p = AlgorithmParams { iterations: Some(5), ..AlgorithmParams::default() };
    let expected = inmem(&g.store, "pr", &p);
    let state = pr_vertex_state(g.store.num_vertices());
    // pr runs static steps by default; Auto keeps its values in memory when they fit ...
    let (got, stats) = run(&g.store, values_options(2 * state, None, None, ShardValues::Auto), "pr", &p).unwrap();
    assert_same("pr", &expected, &got, "auto, fits");
    assert_eq!(run_figures(&stats).shards_values.name(), "memory");
    assert!(stats.per_iteration.iter().all(|i| i.bytes_written == 0));
    // ... and on disk one byte short of the values alone, with the same results.
    let (got, stats) = run(&g.store, values_options(state - 1, None, None, ShardValues::Auto), "pr", &p).unwrap();
    assert_same("pr", &expected, &got, "auto, does not fit");
    assert_eq!(run_figures(&stats).shards_values.name(), "disk");
    assert!(values_modes(&stats).iter().all(|m| m == "disk"));
    assert!(stats.per_iteration[0].bytes_written > 0, "the disk mode writes edge records");
    // Asking for memory there is an error naming the option; so is memory with a dynamic policy.
    let err = run(&g.store, values_options(state - 1, None, None, ShardValues::Memory), "pr", &p).unwrap_err();
    assert!(matches!(err, Error::MemoryBudget(_)) && err.to_string().contains("--shards-values"), "{err}");
    let p = params(&g, "wcc");
    let options = values_options(2 * state, None, Some(DynamicPolicy::Ods), ShardValues::Memory);
    let err = run(&g.store, options, "wcc", &p).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)) && err.to_string().contains("--shards-values"), "{err}");
    // Asked-for dynamic policies keep the disk mode under Auto; without one, wcc (which would
    // get ODS on disk) takes static steps in memory, with equal results.
    let expected = inmem(&g.store, "wcc", &p);
    let options = values_options(2 * state, None, Some(DynamicPolicy::Ods), ShardValues::Auto);
    let (got, stats) = run(&g.store, options, "wcc", &p).unwrap();
    assert_eq!(run_figures(&stats).shards_values.name(), "disk");
    assert_eq!(run_figures(&stats).dynamic_policy.name(), "ods");
    assert_same("wcc", &expected, &got, "wcc ods on disk");
    let (got, stats) = run(&g.store, values_options(2 * state, None, None, ShardValues::Auto), "wcc", &p).unwrap();
    assert_eq!(run_figures(&stats).shards_values.name(), "memory");
    assert_eq!(run_figures(&stats).dynamic_policy.name(), "off");
    assert_same("wcc", &expected, &got, "wcc default in memory");
}

#[test]
fn the_planner_gives_the_memory_mode_its_topology_bytes_and_nothing_written() {
    let g = rmat_graph();
    let p = params(&g, "pr");
    let shards_row = |values: ShardValues| {
        let options = RunOptions { engine: EngineKind::Auto, ..values_options(1 << 20, None, None, values) };
        let runner = Runner::new(&g.store, options);
        run_algorithm(&runner, "pr", &p).unwrap();
        let explanation = runner.explanation().unwrap();
        explanation.rows.iter().find(|r| r.plan.engine == "shards").unwrap().plan.clone()
    };
    let memory = shards_row(ShardValues::Auto);
    assert!(memory.fits(), "{memory:?}");
    assert_eq!(memory.bytes_written, 0, "{memory:?}");
    assert!(memory.memory.iter().any(|part| part.part == "one shard's topology"), "{memory:?}");
    assert!(memory.memory_total() <= 1 << 20, "{memory:?}");
    // The bytes it expects are those the mode reads (its topology every step), within 2×.
    let (_, stats) = run(&g.store, values_options(1 << 20, None, None, ShardValues::Auto), "pr", &p).unwrap();
    assert_eq!(run_figures(&stats).shards_values.name(), "memory");
    let read: u64 = stats.per_iteration.iter().map(|i| i.bytes_read).sum();
    assert!(
        memory.bytes_read <= 2 * read && read <= 2 * memory.bytes_read,
        "planned {} read {read}",
        memory.bytes_read
    );
    // On disk it plans to write records every step, and reads more.
    let disk = shards_row(ShardValues::Disk);
    assert!(disk.bytes_written > 0 && disk.bytes_read > memory.bytes_read, "{disk:?}");
}

/// The disk mode's plan passes over a built layout whose intervals do not fit its budget, as
/// the engine does, and names the layout it builds: from the largest budget down, the plan
/// names no build exactly when the run took a layout that was already built.
#[test]
fn the_disk_plan_passes_over_built_layouts_whose_intervals_do_not_fit() {
    let g = rmat_graph();
    let p = params(&g, "pr");
    let (mut runs_that_built, mut runs_on_built) = (0, 0);
    for budget in [2u64 << 20, 1 << 20, 768 << 10, 512 << 10, 384 << 10, 256 << 10, 192 << 10, 128 << 10] {
        let built_before: Vec<String> = Store::open(g.store.dir())
            .unwrap()
            .manifest()
            .layouts
            .keys()
            .filter(|l| l.starts_with("shards-"))
            .cloned()
            .collect();
        let options = values_options(budget, None, Some(DynamicPolicy::Off), ShardValues::Disk);
        let Ok((_, stats)) = run(&g.store, options, "pr", &p) else { continue };
        let plan = stats.plan.as_ref().unwrap();
        let used = format!("shards-{}", run_figures(&stats).shards);
        let was_built = built_before.contains(&used);
        assert_eq!(
            plan.builds.is_none(),
            was_built,
            "{budget} B: ran on {used}, built before: {built_before:?}, plan {plan:?}"
        );
        if was_built {
            runs_on_built += 1;
        } else {
            runs_that_built += 1;
        }
    }
    assert!(runs_that_built >= 2 && runs_on_built >= 1, "{runs_that_built} runs built, {runs_on_built} did not");
}

/// Vertices 0..200 with no in-edges and 40 out-edges each, then a ring of 2 000 vertices.
/// Balanced by in-edges, every P puts 0..200 in its first interval, whose step holds their
/// 8 000 out-edges in the other shards' windows however many intervals there are.
fn out_edges_first_store(dir: &std::path::Path) -> Store {
    let ring = 2000u64;
    let mut edges: Vec<(u64, u64, f64)> = (0..ring).map(|i| (200 + i, 200 + (i + 1) % ring, 1.0)).collect();
    edges.extend((0..200u64).flat_map(|s| (0..40u64).map(move |k| (s, 200 + (s * 41 + k * 47) % ring, 1.0))));
    inmem_support::store(dir, 200 + ring, &edges, true, false)
}

#[test]
fn the_offsets_bound_every_interval_load_of_a_layout_from_below() {
    let dir = tempfile::tempdir().unwrap();
    let (rmat, er) = (rmat_graph(), er_graph());
    let stores = [out_edges_first_store(&dir.path().join("skewed")), rmat.store.clone(), er.store.clone()];
    for store in &stores {
        for p in [1, 2, 4, 16, 64] {
            let floor = outcore::engine::shards::layout::interval_load_floor(store, p).unwrap();
            let built = ShardLayout::open_or_build(store, p, 1 << 20, &NoProgress).unwrap().facts();
            assert_eq!(floor.interval_loads.len(), p);
            // The memory mode's figures are exact.
            assert_eq!(floor.max_shard_edges, built.max_shard_edges, "P = {p}");
            assert_eq!(floor.max_interval_vertices, built.max_interval_vertices, "P = {p}");
            for (j, (bound, load)) in floor.interval_loads.iter().zip(&built.interval_loads).enumerate() {
                assert_eq!(bound.0, load.0, "P = {p}, interval {j}: vertices");
                assert!(bound.1 <= load.1, "P = {p}, interval {j}: bound {} above the load {}", bound.1, load.1);
            }
        }
        // The skewed store's first interval holds all 8 000 out-edges at every P.
        if store.num_vertices() == 2200 {
            let floor = outcore::engine::shards::layout::interval_load_floor(store, 1024).unwrap();
            assert!(floor.interval_loads[0].1 >= 8000);
        }
    }
}

/// A budget under which no P fits the skewed store's first interval (by the offsets' bound)
/// while the hub check and the vertex state pass: the plan refuses shards and the engine
/// refuses without building a layout (before, it built shards-P for every P up to 1024 to find
/// that out).
/// The budget of the test below: pr's per-edge bytes in the disk mode put the first interval's
/// 8 000 out-edges above its share, and the rest of the graph within it.
const SKEWED_BUDGET: u64 = 1 << 20;

#[test]
fn intervals_that_cannot_fit_by_the_offsets_are_refused_without_building_a_layout() {
    let dir = tempfile::tempdir().unwrap();
    let store = out_edges_first_store(&dir.path().join("skewed"));
    let p = AlgorithmParams { iterations: Some(3), ..AlgorithmParams::default() };
    let runner = Runner::new(&store, shards_options(SKEWED_BUDGET, None, None));
    let error = run_algorithm(&runner, "pr", &p).expect_err("the engine refuses");
    assert!(matches!(error, Error::MemoryBudget(_)), "{error}");
    assert!(error.to_string().contains("intervals"), "{error}");
    let stats = runner.finish("pr");
    let plan = stats.plan.as_ref().expect("the run records its plan");
    let refusal = plan.refusal.as_deref().expect("the plan refuses shards");
    assert!(refusal.contains("intervals"), "{refusal}");
    let built: Vec<String> = store.reopen().unwrap().manifest().layouts.keys().cloned().collect();
    assert!(built.iter().all(|name| !name.starts_with("shards-")), "built {built:?}");
    let dirs: Vec<String> = std::fs::read_dir(store.dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|name| name.contains("shards"))
        .collect();
    assert!(dirs.is_empty(), "left {dirs:?}");
}
