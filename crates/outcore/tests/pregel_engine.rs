//! The pregel engine against the in-memory reference engine: every algorithm it runs with
//! W = 1, 2, 3, 4 ranks (threads over the in-process transport), basic and recoded, on a directed
//! weighted RMAT graph and an undirected Erdős–Rényi graph; message files far smaller than a
//! step's messages, so that splitting, ring sending, merge-sorting and the k-way merge of S^I all
//! happen; a failing rank; the partition files and the budget check.

use std::sync::Arc;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::pregel::{self, partition, PregelOptions};
use outcore::engine::{Delivery, EngineKind, PregelIteration, RunOptions, RunStats, Runner};
use outcore::generate::{generate_into_store, EdgeGenerator, ErdosRenyi, ErdosRenyiConfig, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::program::{GraphInfo, PregelContext, PregelProgram};
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::{Direction, Store};
use outcore::transport::{InProcessTransport, Transport};
use outcore::{Error, VertexId};

const ALGORITHMS: [&str; 6] = ["pr", "pr-delta", "sssp", "bfs", "wcc", "cdlp"];

struct TestGraph {
    _dir: tempfile::TempDir,
    store: Store,
    source: String,
}

fn graph<G: EdgeGenerator + 'static>(generator: G, undirected: bool) -> TestGraph {
    let dir = tempfile::tempdir().unwrap();
    let options =
        ImportOptions { undirected: Some(undirected), memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let (store, _) =
        generate_into_store(generator, &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    let offsets = store.csr(Direction::Out).unwrap().load().unwrap().offsets;
    let busiest = (0..store.num_vertices()).max_by_key(|&v| offsets[v as usize + 1] - offsets[v as usize]).unwrap();
    let source = store.ids().unwrap().original(busiest).unwrap().to_string();
    TestGraph { _dir: dir, store, source }
}

/// RMAT scale 8 (256 vertices, ~4000 arcs), directed, weighted.
fn rmat() -> TestGraph {
    graph(
        Rmat::new(RmatConfig { scale: 8, edge_factor: 16, seed: 5, weights: true, ..RmatConfig::default() }).unwrap(),
        false,
    )
}

/// G(300, 1500), undirected, weighted.
fn er() -> TestGraph {
    let config = ErdosRenyiConfig { vertices: 300, edges: 1500, seed: 3, self_loops: false, weights: true };
    graph(ErdosRenyi::new(config).unwrap(), true)
}

fn params(g: &TestGraph, algorithm: &str) -> AlgorithmParams {
    let mut p = AlgorithmParams::default();
    match algorithm {
        "bfs" | "sssp" => p.source = Some(g.source.clone()),
        "pr" | "cdlp" => p.iterations = Some(10),
        _ => {}
    }
    p
}

fn inmem(store: &Store, algorithm: &str, params: &AlgorithmParams) -> AlgorithmResult {
    let options =
        RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() };
    run_algorithm(&Runner::new(store, options), algorithm, params).unwrap()
}

/// Runs `algorithm` on `ranks` in-process ranks; returns rank 0's result and every rank's stats.
fn pregel(
    store: &Store,
    ranks: usize,
    recoded: bool,
    message_file_size: u64,
    algorithm: &str,
    params: &AlgorithmParams,
) -> outcore::Result<(AlgorithmResult, Vec<RunStats>)> {
    let outcomes = InProcessTransport::run(ranks, |t| {
        let options = RunOptions {
            engine: EngineKind::Pregel,
            memory: MemoryBudget::new(64 << 20),
            pregel: PregelOptions { message_file_size: Some(message_file_size), recoded, ..PregelOptions::default() },
            ..RunOptions::default()
        };
        let runner = Runner::new(store, options).with_transport(Arc::new(t.clone()));
        let result = run_algorithm(&runner, algorithm, params)?;
        Ok((result, runner.finish(algorithm)))
    })?;
    let stats = outcomes.iter().map(|(_, s)| s.clone()).collect();
    Ok((outcomes.into_iter().next().unwrap().0, stats))
}

fn assert_same(algorithm: &str, expected: &AlgorithmResult, got: &AlgorithmResult, what: &str) {
    assert_eq!(expected.columns.len(), got.columns.len(), "{what}");
    for ((en, ec), (gn, gc)) in expected.columns.iter().zip(&got.columns) {
        assert_eq!(en, gn, "{what}");
        match (ec, gc) {
            (ValueColumn::Float(e), ValueColumn::Float(g)) if algorithm == "pr" || algorithm == "eigenvector" => {
                for (v, (a, b)) in e.iter().zip(g).enumerate() {
                    assert!((a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-15, "{what}: vertex {v}: {a} vs {b}");
                }
            }
            (ValueColumn::Float(e), ValueColumn::Float(g)) if algorithm == "pr-delta" => {
                let l1: f64 = e.iter().zip(g).map(|(a, b)| (a - b).abs()).sum();
                assert!(l1 <= 2.0 * 1e-9 * 0.85 / 0.15, "{what}: L1 distance {l1}");
            }
            _ => assert!(ec == gc, "{what}: column {en} differs"),
        }
    }
}

/// The sum of one figure over a rank's supersteps.
fn per_step(stats: &RunStats, figure: impl Fn(&PregelIteration) -> u64) -> u64 {
    stats.per_iteration.iter().map(|i| figure(i.figures.pregel().expect("a pregel superstep"))).sum()
}

/// Every algorithm on W = 1..=4 ranks equals inmem; 4 KiB message files, so every step of pr cuts
/// each destination's stream into several files.
fn equals_inmem_on_1_to_4_ranks(name: &str, g: &TestGraph, recoded: bool) {
    for ranks in 1..=4 {
        partition::partition(&g.store, ranks, recoded, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new())
            .unwrap();
        for algorithm in ALGORITHMS {
            let p = params(g, algorithm);
            let expected = inmem(&g.store, algorithm, &p);
            let (got, stats) = pregel(&g.store, ranks, recoded, 4096, algorithm, &p).unwrap();
            let what = format!("{name} {algorithm} W={ranks} recoded={recoded}");
            assert_same(algorithm, &expected, &got, &what);
            assert_eq!(stats.len(), ranks);
            assert_eq!(stats[0].engine, "pregel");
            let files: u64 = stats.iter().map(|s| per_step(s, |i| i.message_files)).sum();
            let sent: u64 = stats.iter().map(|s| per_step(s, |i| i.messages_sent)).sum();
            // Messages to a rank's own vertices are combined in memory, without files, in
            // recoded mode with a combiner (pr's sum): at W = 1 no file is written at all.
            let local: u64 = stats.iter().map(|s| per_step(s, |i| i.messages_combined_locally)).sum();
            if recoded && algorithm == "pr" {
                assert!(local > 0, "{what}: no message combined locally");
                if ranks == 1 {
                    assert_eq!((files, local), (0, sent), "{what}: files and local messages");
                }
            } else if !recoded {
                assert_eq!(local, 0, "{what}: basic mode combines nothing locally");
            }
            // 16-byte records (name + u64/f64 message): at most 256 in a file of 4 KiB.
            let filed = sent - local;
            assert!(files * 256 >= filed && (filed < 4000 || files > 10), "{what}: {files} files, {filed} messages");
            if ranks > 1 && algorithm == "pr" {
                let received: u64 = stats.iter().map(|s| per_step(s, |i| i.batches_received)).sum();
                assert!(received >= files, "{what}: {received} batches received of {files} files");
                let job = stats[0].figures.pregel.as_ref().unwrap();
                assert_eq!(job.per_rank.len(), ranks, "{what}");
            }
        }
    }
}

#[test]
fn directed_rmat_basic_equals_inmem() {
    equals_inmem_on_1_to_4_ranks("rmat", &rmat(), false);
}

#[test]
fn directed_rmat_recoded_equals_inmem() {
    equals_inmem_on_1_to_4_ranks("rmat", &rmat(), true);
}

#[test]
fn undirected_er_basic_equals_inmem() {
    equals_inmem_on_1_to_4_ranks("er", &er(), false);
}

#[test]
fn undirected_er_recoded_equals_inmem() {
    equals_inmem_on_1_to_4_ranks("er", &er(), true);
}

/// 240 points in 3-d (an arc `i → j` of weight `x_j` per coordinate), coordinates multiples of
/// 1/4 so that the centres' sums are exact whatever order the ranks fold them in.
fn points() -> TestGraph {
    let dir = tempfile::tempdir().unwrap();
    let mut state = 17u64;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % 200
    };
    let text: String = (0..240)
        .flat_map(|i| (0..3).map(move |j| (i, j)))
        .map(|(i, j)| format!("{i} {j} {}\n", next() as f64 / 4.0))
        .collect();
    let path = dir.path().join("points.el");
    std::fs::write(&path, text).unwrap();
    let options =
        ImportOptions { weighted: Some(true), memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let (store, _) =
        outcore::ingest::import(&[path], &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    TestGraph { _dir: dir, store, source: "0".into() }
}

/// kmeans (centres as a vector aggregator, coordinates streamed from S^E) on W = 1..=4 ranks,
/// basic and recoded, equals inmem.
#[test]
fn kmeans_on_1_to_4_ranks_basic_and_recoded_equals_inmem() {
    let g = points();
    for recoded in [false, true] {
        for ranks in 1..=4 {
            partition::partition(
                &g.store,
                ranks,
                recoded,
                MemoryBudget::new(64 << 20),
                &NoProgress,
                &CancelToken::new(),
            )
            .unwrap();
            for (k, seed) in [(3, None), (6, Some(2))] {
                let p = AlgorithmParams { k: Some(k), seed, ..AlgorithmParams::default() };
                let expected = inmem(&g.store, "kmeans", &p);
                let (got, stats) = pregel(&g.store, ranks, recoded, 4096, "kmeans", &p).unwrap();
                let what = format!("kmeans k={k} W={ranks} recoded={recoded}");
                assert_same("kmeans", &expected, &got, &what);
                assert_eq!(expected.summary, got.summary, "{what}");
                assert!(stats[0].iterations > 2, "{what}: {} supersteps", stats[0].iterations);
                let edges: u64 = stats.iter().flat_map(|s| &s.per_iteration).map(|i| i.edges_processed).sum();
                assert_eq!(edges, stats[0].iterations as u64 * 720, "{what}: every step streams every coordinate");
            }
        }
    }
}

/// Recoded ranks pull PageRank and eigenvector centrality (dense uniform messages) over their
/// resident in-lists, directed and undirected, alone and with two or three ranks exchanging
/// their offers, and equal inmem.
#[test]
fn recoded_ranks_pull_pagerank_and_eigenvector_over_their_in_lists() {
    for (name, g) in [("rmat", rmat()), ("er", er())] {
        for ranks in [1, 2, 3] {
            partition::partition(&g.store, ranks, true, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new())
                .unwrap();
            for algorithm in ["pr", "eigenvector"] {
                let p = params(&g, algorithm);
                let expected = inmem(&g.store, algorithm, &p);
                let (got, stats) = pregel(&g.store, ranks, true, 4096, algorithm, &p).unwrap();
                let what = format!("{name} {algorithm} W={ranks}");
                assert_same(algorithm, &expected, &got, &what);
                for rank in &stats {
                    let deliveries: Vec<_> = rank.per_iteration.iter().map(|i| i.delivery).collect();
                    assert!(deliveries.iter().all(|d| *d == Some(Delivery::Pull)), "{what}: deliveries {deliveries:?}");
                    // Every arc of a sending vertex counts as a message, all combined in memory.
                    let sent = per_step(rank, |i| i.messages_sent);
                    let local = per_step(rank, |i| i.messages_combined_locally);
                    let files = per_step(rank, |i| i.message_files);
                    assert_eq!((local, files), (sent, 0), "{what}");
                }
                let sent: u64 = stats.iter().map(|rank| per_step(rank, |i| i.messages_sent)).sum();
                assert!(sent >= g.store.num_arcs(), "{what}: {sent} messages");
                // The ranks together fold every in-arc in a step where something was offered,
                // and none after a step that offered nothing (pr's last superstep).
                let steps = stats[0].per_iteration.len();
                for k in 0..steps {
                    let step = |rank: &RunStats| rank.per_iteration[k].clone();
                    let offered: u64 = stats.iter().map(|r| step(r).figures.pregel().unwrap().messages_sent).sum();
                    let folded: u64 = stats.iter().map(|r| step(r).edges_processed).sum();
                    let expected = if offered > 0 { g.store.num_arcs() } else { 0 };
                    assert_eq!(folded, expected, "{what}: superstep {k} of {steps}");
                }
                let last = stats[0].per_iteration.last().and_then(|s| s.figures.pregel()).map(|s| s.messages_sent);
                assert_eq!(last, Some(0), "{what}: the last step sends nothing");
            }
        }
    }
}

#[test]
fn default_file_size_and_single_rank_without_transport_equal_inmem() {
    let g = rmat();
    partition::partition(&g.store, 1, false, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    for algorithm in ALGORITHMS {
        let p = params(&g, algorithm);
        let options =
            RunOptions { engine: EngineKind::Pregel, memory: MemoryBudget::new(64 << 20), ..RunOptions::default() };
        let got = run_algorithm(&Runner::new(&g.store, options), algorithm, &p).unwrap();
        assert_same(algorithm, &inmem(&g.store, algorithm, &p), &got, algorithm);
    }
}

#[test]
fn a_missing_partition_is_built_by_all_ranks_and_a_small_budget_is_a_clear_error() {
    let g = er();
    let p = params(&g, "pr");
    // No parts-3 yet: the run's three ranks build it (as a partitioning job) and run on it.
    assert!(partition::open(&g.store, 3, false).is_err());
    let (got, stats) = pregel(&g.store, 3, false, 1024, "pr", &p).unwrap();
    assert_same("pr", &inmem(&g.store, "pr", &p), &got, "pr after building parts-3");
    assert_eq!(partition::open(&g.store, 3, false).unwrap().ranks, 3);
    assert_eq!(stats[0].plan.as_ref().unwrap().builds.as_deref(), Some("parts-3"));
    partition::partition(&g.store, 2, true, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    let err = InProcessTransport::run(2, |t| {
        let options = RunOptions {
            engine: EngineKind::Pregel,
            memory: MemoryBudget::new(1 << 20),
            pregel: PregelOptions { message_file_size: Some(8 << 20), recoded: true, ..PregelOptions::default() },
            ..RunOptions::default()
        };
        run_algorithm(&Runner::new(&g.store, options).with_transport(Arc::new(t.clone())), "pr", &p)
    })
    .unwrap_err();
    assert!(matches!(err, Error::MemoryBudget(_)), "{err}");
    assert!(err.to_string().contains("--message-file-size"), "{err}");
}

#[test]
fn partition_files_hold_every_vertex_and_arc_once() {
    let g = rmat();
    let n = g.store.num_vertices();
    for (ranks, recoded) in [(3, false), (3, true)] {
        let info = partition::partition(
            &g.store,
            ranks,
            recoded,
            MemoryBudget::new(64 << 20),
            &NoProgress,
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!(partition::open(&g.store, ranks, recoded).unwrap(), info);
        assert_eq!(info.parts.iter().map(|p| p.vertices).sum::<u64>(), n);
        assert_eq!(info.parts.iter().map(|p| p.out_arcs).sum::<u64>(), g.store.num_arcs());
        assert_eq!(info.parts.iter().map(|p| p.in_arcs).sum::<u64>(), g.store.num_arcs());
        let dir = partition::partition_dir(&g.store, ranks, recoded);
        let mut dense_seen = vec![false; n as usize];
        for rank in 0..ranks {
            let bytes = std::fs::read(partition::rank_dir(&dir, rank).join("vertices")).unwrap();
            let mut previous = None;
            for (pos, r) in bytes.chunks_exact(32).enumerate() {
                let name = u64::from_le_bytes(r[..8].try_into().unwrap());
                let dense = u64::from_le_bytes(r[8..16].try_into().unwrap());
                assert_eq!(name % ranks as u64, rank as u64, "hash(name) = name mod W");
                if recoded {
                    assert_eq!(name, (ranks * pos + rank) as u64, "recoded name = W·pos + rank");
                }
                assert!(previous < Some(name), "names ascend along A");
                previous = Some(name);
                assert!(!std::mem::replace(&mut dense_seen[dense as usize], true));
            }
            let out = std::fs::metadata(partition::rank_dir(&dir, rank).join("edges-out")).unwrap().len();
            let name_bytes = if recoded { 4 } else { 8 };
            assert_eq!(out, info.parts[rank].out_arcs * (name_bytes + 8), "weighted arcs are name + weight");
        }
        assert!(dense_seen.iter().all(|&s| s));
        // No temporary directory is left behind.
        let leftovers: Vec<_> = std::fs::read_dir(g.store.dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

/// Cancels its token once `after` supersteps have finished: a rank that "crashes" mid-run.
struct CrashAfter {
    after: u64,
    cancel: CancelToken,
}

struct CountingBar {
    steps: std::sync::atomic::AtomicU64,
    after: u64,
    cancel: CancelToken,
}

impl outcore::runtime::ProgressBar for CountingBar {
    fn inc(&self, delta: u64) {
        if self.steps.fetch_add(delta, std::sync::atomic::Ordering::SeqCst) + delta >= self.after {
            self.cancel.cancel();
        }
    }
    fn set_position(&self, _: u64) {}
    fn set_message(&self, _: &str) {}
    fn finish(&self) {}
}

impl outcore::runtime::Progress for CrashAfter {
    fn start(
        &self,
        _: &str,
        _: Option<u64>,
        _: outcore::runtime::ProgressUnit,
    ) -> Box<dyn outcore::runtime::ProgressBar> {
        Box::new(CountingBar { steps: 0.into(), after: self.after, cancel: self.cancel.clone() })
    }
    fn note(&self, _: &str) {}
}

#[test]
fn a_run_killed_mid_way_resumes_from_its_checkpoint_with_the_same_result() {
    let g = rmat();
    for (algorithm, recoded) in [("pr", true), ("pr", false), ("cdlp", false), ("cdlp", true)] {
        partition::partition(&g.store, 3, recoded, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new())
            .unwrap();
        let p = params(&g, algorithm);
        let run = |crash_after: Option<u64>, resume: bool| {
            InProcessTransport::run(3, |t| {
                let options = RunOptions {
                    engine: EngineKind::Pregel,
                    memory: MemoryBudget::new(64 << 20),
                    pregel: PregelOptions { message_file_size: Some(4096), recoded, checkpoint_every: Some(3), resume },
                    ..RunOptions::default()
                };
                let cancel = CancelToken::new();
                let mut runner =
                    Runner::new(&g.store, options).with_cancel(cancel.clone()).with_transport(Arc::new(t.clone()));
                // Rank 1 dies after 5 supersteps (a checkpoint was taken after 3: resuming at an odd step
                // also checks that the message tags of the steps' parity line up again).
                if let (Some(after), 1) = (crash_after, t.rank()) {
                    runner = runner.with_progress(Arc::new(CrashAfter { after, cancel }));
                }
                let result = run_algorithm(&runner, algorithm, &p)?;
                Ok((result, runner.finish(algorithm)))
            })
        };
        let what = format!("{algorithm} recoded={recoded}");
        let crashed = run(Some(5), false).unwrap_err();
        assert!(matches!(crashed, Error::Interrupted), "{what}: {crashed}");
        let (resumed, stats) = run(None, true).unwrap().into_iter().next().unwrap();
        assert_eq!(stats.figures.pregel_resumed_at_superstep, Some(3), "{what}");
        assert_eq!(stats.per_iteration.first().unwrap().iteration, 3, "{what}: starts after the checkpoint");
        assert_same(algorithm, &inmem(&g.store, algorithm, &p), &resumed, &what);
        let dir = partition::rank_dir(&partition::partition_dir(&g.store, 3, recoded), 0);
        assert!(!dir.join("checkpoint").exists(), "{what}: a completed run removes its checkpoint");
    }
}

/// A kill between the commit barrier and the last rank's rename leaves one rank a checkpoint
/// behind the others: every rank then resumes from the latest step all of them hold.
#[test]
fn ranks_a_checkpoint_apart_resume_from_the_step_they_all_hold() {
    let g = rmat();
    let p = params(&g, "pr");
    partition::partition(&g.store, 3, false, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    let run = |crash_after: Option<u64>, resume: bool| {
        InProcessTransport::run(3, |t| {
            let options = RunOptions {
                engine: EngineKind::Pregel,
                memory: MemoryBudget::new(64 << 20),
                pregel: PregelOptions {
                    message_file_size: Some(4096),
                    recoded: false,
                    checkpoint_every: Some(3),
                    resume,
                },
                ..RunOptions::default()
            };
            let cancel = CancelToken::new();
            let mut runner =
                Runner::new(&g.store, options).with_cancel(cancel.clone()).with_transport(Arc::new(t.clone()));
            if let (Some(after), 1) = (crash_after, t.rank()) {
                runner = runner.with_progress(Arc::new(CrashAfter { after, cancel }));
            }
            let result = run_algorithm(&runner, "pr", &p)?;
            Ok((result, runner.finish("pr")))
        })
    };
    // Checkpoints after supersteps 3 and 6; then rank 2 is made to look as if it was killed before
    // renaming its checkpoint of step 6 into place.
    assert!(matches!(run(Some(8), false).unwrap_err(), Error::Interrupted));
    let parts = partition::partition_dir(&g.store, 3, false);
    let lagging = partition::rank_dir(&parts, 2);
    assert!(lagging.join("checkpoint.prev/state").exists(), "the replaced checkpoint is kept");
    std::fs::remove_dir_all(lagging.join("checkpoint")).unwrap();
    std::fs::rename(lagging.join("checkpoint.prev"), lagging.join("checkpoint")).unwrap();
    let (resumed, stats) = run(None, true).unwrap().into_iter().next().unwrap();
    assert_eq!(stats.figures.pregel_resumed_at_superstep, Some(3));
    assert_same("pr", &inmem(&g.store, "pr", &p), &resumed, "pr resumed a checkpoint apart");
    for rank in 0..3 {
        let dir = partition::rank_dir(&parts, rank);
        assert!(!dir.join("checkpoint").exists() && !dir.join("checkpoint.prev").exists(), "rank {rank}");
    }
}

/// Checkpoints are keyed by the program and its parameters: resuming pr with another damping or
/// kmeans with another k is refused with a clear error, and the same parameters still resume.
#[test]
fn resuming_with_other_parameters_is_refused() {
    let g = points();
    partition::partition(&g.store, 2, false, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    let run = |algorithm: &str, p: &AlgorithmParams, crash_after: Option<u64>, resume: bool| {
        InProcessTransport::run(2, |t| {
            let options = RunOptions {
                engine: EngineKind::Pregel,
                memory: MemoryBudget::new(64 << 20),
                pregel: PregelOptions {
                    message_file_size: Some(4096),
                    recoded: false,
                    checkpoint_every: Some(2),
                    resume,
                },
                ..RunOptions::default()
            };
            let cancel = CancelToken::new();
            let mut runner =
                Runner::new(&g.store, options).with_cancel(cancel.clone()).with_transport(Arc::new(t.clone()));
            if let (Some(after), 0) = (crash_after, t.rank()) {
                runner = runner.with_progress(Arc::new(CrashAfter { after, cancel }));
            }
            run_algorithm(&runner, algorithm, p)
        })
    };
    let pr = |damping| AlgorithmParams { iterations: Some(10), damping: Some(damping), ..AlgorithmParams::default() };
    let kmeans = |k| AlgorithmParams { k: Some(k), ..AlgorithmParams::default() };
    for (algorithm, first, other) in [("pr", pr(0.85), pr(0.9)), ("kmeans", kmeans(5), kmeans(4))] {
        assert!(matches!(run(algorithm, &first, Some(3), false).unwrap_err(), Error::Interrupted));
        let err = run(algorithm, &other, None, true).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{algorithm}: {err}");
        let text = err.to_string();
        assert!(text.contains("drop --resume") && text.contains("same algorithm, parameters"), "{text}");
        // Another algorithm is refused too.
        let err = run("cdlp", &AlgorithmParams { iterations: Some(10), ..AlgorithmParams::default() }, None, true);
        assert!(err.unwrap_err().to_string().contains("drop --resume"));
        let resumed = run(algorithm, &first, None, true).unwrap().swap_remove(0);
        assert_same(algorithm, &inmem(&g.store, algorithm, &first), &resumed, algorithm);
    }
}

/// Holds rank 0 of a run where its supersteps start (partition open, its files being read)
/// until the test lets it go.
struct PauseAtSupersteps {
    started: std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>,
    go: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl outcore::runtime::Progress for PauseAtSupersteps {
    fn start(
        &self,
        label: &str,
        total: Option<u64>,
        unit: outcore::runtime::ProgressUnit,
    ) -> Box<dyn outcore::runtime::ProgressBar> {
        if label.starts_with("supersteps") {
            if let Some(started) = self.started.lock().unwrap().take() {
                started.send(()).unwrap();
                self.go.lock().unwrap().recv().unwrap();
            }
        }
        outcore::runtime::Progress::start(&NoProgress, label, total, unit)
    }
    fn note(&self, _: &str) {}
}

/// A 2-rank pr job that checkpoints every 2 supersteps, its rank 0 reporting to `progress`.
fn checkpointing_pr(
    g: &TestGraph,
    progress: Option<Arc<dyn outcore::runtime::Progress>>,
) -> outcore::Result<AlgorithmResult> {
    let p = params(g, "pr");
    let outcomes = InProcessTransport::run(2, |t| {
        let options = RunOptions {
            engine: EngineKind::Pregel,
            memory: MemoryBudget::new(64 << 20),
            pregel: PregelOptions { checkpoint_every: Some(2), ..PregelOptions::default() },
            ..RunOptions::default()
        };
        let mut runner = Runner::new(&g.store, options).with_transport(Arc::new(t.clone()));
        if let (Some(progress), 0) = (&progress, t.rank()) {
            runner = runner.with_progress(progress.clone());
        }
        run_algorithm(&runner, "pr", &p)
    })?;
    Ok(outcomes.into_iter().next().unwrap())
}

#[test]
fn a_running_job_holds_its_partition_so_a_repartition_or_drop_is_refused_until_it_ends() {
    let g = rmat();
    let budget = MemoryBudget::new(64 << 20);
    partition::partition(&g.store, 2, false, budget, &NoProgress, &CancelToken::new()).unwrap();
    let description = partition::partition_dir(&g.store, 2, false).join("partition.json");
    let p = params(&g, "pr");
    let want = inmem(&g.store, "pr", &p);
    let (started, started_rx) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel();
    let pause =
        Arc::new(PauseAtSupersteps { started: std::sync::Mutex::new(Some(started)), go: std::sync::Mutex::new(go_rx) });
    std::thread::scope(|scope| {
        let running = scope.spawn(|| checkpointing_pr(&g, Some(pause.clone())));
        started_rx.recv().unwrap();
        let before = std::fs::read(&description).unwrap();
        let refused = partition::partition(&g.store, 2, false, budget, &NoProgress, &CancelToken::new()).unwrap_err();
        assert!(refused.to_string().contains("parts-2") && refused.to_string().contains("being read"), "{refused}");
        let refused = outcore::engine::layouts::drop_layout(&g.store, "parts-2").unwrap_err();
        assert!(refused.to_string().contains("being read by a running pregel job"), "{refused}");
        assert_eq!(std::fs::read(&description).unwrap(), before, "the partition changed under the run");
        // A second job writing checkpoints into the same rank directories is refused; one that
        // only reads the partition runs beside the first.
        let refused = checkpointing_pr(&g, None).unwrap_err();
        assert!(refused.to_string().contains("writing checkpoints into parts-2"), "{refused}");
        let (beside, _) = pregel(&g.store, 2, false, 4096, "pr", &p).unwrap();
        assert_same("pr", &want, &beside, "a job beside the held one");
        go.send(()).unwrap();
        assert_same("pr", &want, &running.join().unwrap().unwrap(), "the job that held its partition");
    });
    // Nobody holds it any more: it is replaced and dropped.
    partition::partition(&g.store, 2, false, budget, &NoProgress, &CancelToken::new()).unwrap();
    outcore::engine::layouts::drop_layout(&g.store, "parts-2").unwrap();
    assert!(!partition::partition_dir(&g.store, 2, false).exists());
}

/// With no `--message-file-size`, a rank sizes its message files from what the budget leaves
/// after its vertex records: 60,000 vertices take 2.5 MB of a 4 MiB budget, where message files
/// sized from the budget alone (a twelfth of it each, six of them) would not fit beside them.
#[test]
fn message_files_shrink_to_fit_beside_the_vertex_records() {
    let config = ErdosRenyiConfig { vertices: 60_000, edges: 120_000, seed: 9, self_loops: false, weights: false };
    let g = graph(ErdosRenyi::new(config).unwrap(), true);
    // The partition is built beforehand: its build needs more than the run's 4 MiB here.
    partition::partition(&g.store, 1, false, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    let budget = 4u64 << 20;
    let outcomes = InProcessTransport::run(1, |t| {
        let options =
            RunOptions { engine: EngineKind::Pregel, memory: MemoryBudget::new(budget), ..RunOptions::default() };
        let runner = Runner::new(&g.store, options).with_transport(Arc::new(t.clone()));
        let result = run_algorithm(&runner, "wcc", &AlgorithmParams::default())?;
        Ok((result, runner.finish("wcc")))
    })
    .unwrap();
    let (got, stats) = &outcomes[0];
    assert_same("wcc", &inmem(&g.store, "wcc", &AlgorithmParams::default()), got, "wcc at 4 MiB");
    let b = stats.figures.pregel.as_ref().unwrap().message_file_size;
    let vertex_records = g.store.num_vertices() * (partition::VERTEX_RECORD_BYTES + 8 + 1);
    assert!(b < budget / 12 && vertex_records + 6 * b <= budget, "B = {b}");
}

/// Sends its name along out-arcs for three supersteps; vertex 0 sleeps in superstep 0 so that
/// other threads take the other chunks of the wave.
struct Slow;

impl PregelProgram for Slow {
    type Value = u64;
    type Msg = u64;
    fn init(&self, _: VertexId, _: &GraphInfo) -> u64 {
        0
    }
    fn compute(&self, ctx: &mut dyn PregelContext<u64>, value: &mut u64, messages: &[u64]) {
        if ctx.vertex() == 0 && ctx.superstep() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // Order-free: engines may deliver a vertex's messages in different orders.
        *value = value.wrapping_mul(31).wrapping_add(messages.iter().fold(0, |a, &m| a.wrapping_add(m * m)));
        if ctx.superstep() < 3 {
            for t in ctx.out_neighbors().to_vec() {
                ctx.send(t, ctx.vertex() + 1);
            }
        } else {
            ctx.vote_to_halt();
        }
    }
}

/// Runs pr (or `Slow`) on one rank of the recoded partition, in a pool of four threads.
fn one_rank(store: &Store, memory: u64, slow: bool) -> (Vec<f64>, Vec<u64>, RunStats) {
    let options = RunOptions {
        engine: EngineKind::Pregel,
        memory: MemoryBudget::new(memory),
        pregel: PregelOptions { message_file_size: Some(4096), recoded: true, ..PregelOptions::default() },
        ..RunOptions::default()
    };
    let runner = Runner::new(store, options);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    if slow {
        let values = pool.install(|| runner.run_pregel_wire(&Slow)).unwrap();
        (Vec::new(), values, runner.finish("slow"))
    } else {
        let p = AlgorithmParams { iterations: Some(10), ..AlgorithmParams::default() };
        let result = pool.install(|| run_algorithm(&runner, "pr", &p)).unwrap();
        let ValueColumn::Float(ranks) = &result.columns[0].1 else { panic!("pr gives floats") };
        (ranks.clone(), Vec::new(), runner.finish("pr"))
    }
}

fn charged(stats: &RunStats, part: &str) -> u64 {
    stats.memory_ledger.parts.iter().find(|p| p.part == part).map_or(0, |p| p.peak_bytes)
}

/// With a budget that holds the rank's lists, they are read at the first superstep only and the
/// rank computes its vertices on several threads; with one that does not, they are streamed
/// every superstep on the rank's own thread. Both equal inmem; the resident run pulls (its
/// in-lists only), the streamed one pushes, so they agree up to the order of the folds.
#[test]
fn resident_lists_are_read_once_and_computed_on_several_threads() {
    let g =
        graph(Rmat::new(RmatConfig { scale: 11, edge_factor: 8, seed: 9, ..RmatConfig::default() }).unwrap(), false);
    partition::partition(&g.store, 1, true, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    let expected = inmem(&g.store, "pr", &AlgorithmParams { iterations: Some(10), ..AlgorithmParams::default() });
    let ValueColumn::Float(expected) = &expected.columns[0].1 else { panic!("pr gives floats") };
    let (resident, _, pulled) = one_rank(&g.store, 64 << 20, false);
    let lists = g.store.num_arcs() * 4;
    assert_eq!(charged(&pulled, "resident edge lists"), lists, "narrow recoded names, 4 bytes an arc");
    let read: Vec<u64> = pulled.per_iteration.iter().map(|i| i.bytes_read).collect();
    // The recoded streams hold 4-byte names too.
    assert!(read[0] >= g.store.num_arcs() * 4, "{read:?}");
    assert!(read[1..].iter().all(|&b| b == 0), "resident lists are read once: {read:?}");
    let (streamed, _, stats) = one_rank(&g.store, 450 << 10, false);
    assert_eq!(charged(&stats, "resident edge lists"), 0);
    let read: Vec<u64> = stats.per_iteration.iter().map(|i| i.bytes_read).collect();
    // Every step but the last, which only applies (pr scatters 10 times) and skips the lists.
    assert!(read[..10].iter().all(|&b| b >= g.store.num_arcs() * 4), "streamed every step: {read:?}");
    assert!(stats.per_iteration.iter().all(|i| i.figures.pregel().unwrap().threads == 1));
    let delivery = |stats: &RunStats| stats.per_iteration.iter().map(|i| i.delivery).collect::<Vec<_>>();
    assert!(delivery(&pulled).iter().all(|d| *d == Some(Delivery::Pull)), "{:?}", delivery(&pulled));
    assert!(delivery(&stats).iter().all(|d| d.is_none()), "streamed lists push: {:?}", delivery(&stats));
    for (v, (a, b)) in resident.iter().zip(&streamed).enumerate() {
        assert!((a - b).abs() <= 1e-12 * a.abs().max(*b), "vertex {v}: pulled {a}, pushed {b}");
    }
    for (v, (a, b)) in expected.iter().zip(&resident).enumerate() {
        assert!((a - b).abs() <= 1e-9 * a.abs().max(*b) + 1e-15, "vertex {v}: {a} vs {b}");
    }
    let (_, slow, stats) = one_rank(&g.store, 64 << 20, true);
    let options = RunOptions { engine: EngineKind::InMemory, ..RunOptions::default() };
    assert_eq!(slow, Runner::new(&g.store, options).run_pregel_wire(&Slow).unwrap());
    let threads = stats.per_iteration[0].figures.pregel().unwrap().threads;
    assert!(threads > 1, "superstep 0 ran on {threads} thread(s) of 4");
}

/// A transport that watches pregel's message batches on their way: it counts, for every sender
/// and receiver, the batches sent but not yet received, and keeps the largest count seen. Its
/// receivers are slow (each batch waits 2 ms before U_r may sort it), so senders that ignored
/// their window would pile a step's batches up in the mailbox.
struct WatchedBatches {
    inner: InProcessTransport,
    waiting: Arc<std::sync::Mutex<WaitingBatches>>,
}

#[derive(Default)]
struct WaitingBatches {
    /// `(from, to)`: batches sent and not yet received.
    now: std::collections::HashMap<(usize, usize), usize>,
    peak: usize,
    batches: u64,
}

fn is_batch(tag: u32, payload: &[u8]) -> bool {
    pregel::TAG_MESSAGES.contains(&tag) && payload.len() > 1 && payload[0] == pregel::KIND_DATA
}

impl Transport for WatchedBatches {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn ranks(&self) -> usize {
        self.inner.ranks()
    }
    fn send(&self, to: usize, tag: u32, payload: Vec<u8>) -> outcore::Result<()> {
        if is_batch(tag, &payload) {
            let mut w = self.waiting.lock().unwrap();
            let n = w.now.entry((self.rank(), to)).or_default();
            *n += 1;
            let n = *n;
            w.peak = w.peak.max(n);
            w.batches += 1;
        }
        self.inner.send(to, tag, payload)
    }
    fn recv(&self, tag: u32) -> outcore::Result<outcore::transport::Envelope> {
        let envelope = self.inner.recv(tag)?;
        if is_batch(tag, &envelope.payload) {
            *self.waiting.lock().unwrap().now.get_mut(&(envelope.from, self.rank())).unwrap() -= 1;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Ok(envelope)
    }
    fn try_recv(&self, tag: u32) -> outcore::Result<Option<outcore::transport::Envelope>> {
        assert!(!pregel::TAG_MESSAGES.contains(&tag), "U_r waits for batches with recv");
        self.inner.try_recv(tag)
    }
    fn abort(&self, error: &Error) {
        self.inner.abort(error)
    }
}

/// U_s keeps at most `SEND_WINDOW` batches in flight to each destination, with and without a
/// combiner, however slow the receiver (CDLP on RMAT-22 used to pile a whole step up in a
/// receiver's mailbox: 922 MiB of RSS for a 384 MiB budget). The runs still equal inmem.
#[test]
fn senders_keep_at_most_the_window_of_batches_in_flight_to_a_slow_receiver() {
    let g = rmat();
    partition::partition(&g.store, 3, false, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    for algorithm in ["pr", "cdlp"] {
        let p = params(&g, algorithm);
        let waiting = Arc::new(std::sync::Mutex::new(WaitingBatches::default()));
        let outcomes = InProcessTransport::run(3, |t| {
            let options = RunOptions {
                engine: EngineKind::Pregel,
                memory: MemoryBudget::new(64 << 20),
                pregel: PregelOptions { message_file_size: Some(1024), ..PregelOptions::default() },
                ..RunOptions::default()
            };
            let watched = WatchedBatches { inner: t.clone(), waiting: Arc::clone(&waiting) };
            let runner = Runner::new(&g.store, options).with_transport(Arc::new(watched));
            run_algorithm(&runner, algorithm, &p)
        })
        .unwrap();
        assert_same(algorithm, &inmem(&g.store, algorithm, &p), &outcomes[0], algorithm);
        let w = waiting.lock().unwrap();
        // Enough batches that an unbounded sender would have run ahead: dozens per rank pair.
        assert!(w.batches > 60 * 6, "{algorithm}: only {} batches", w.batches);
        assert_eq!(w.peak, pregel::SEND_WINDOW, "{algorithm}: batches waiting at one receiver from one sender");
        assert!(w.now.values().all(|&n| n == 0), "{algorithm}: every batch received");
    }
}
