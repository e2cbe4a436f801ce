//! Katz centrality against networkx (`katz_centrality`, same iteration and stopping rule) and
//! against scipy's exact solution of (I − αAᵀ)x = β; eigenvector centrality against networkx's
//! `eigenvector_centrality` (defaults, a tight tolerance, weights) and its ARPACK-based
//! `eigenvector_centrality_numpy` (reference values written into
//! `tests/data/reference/bc-*.json` by `scripts/reference/centrality_reference.py`); the
//! out-of-core engines (stream, shards, cache, pregel) equal to inmem under budgets that force
//! their out-of-core paths; HITS against networkx's power iteration (`_hits_python`: defaults,
//! unnormalised, weights) and its ARPACK-based `hits`, on inmem, stream, shards and cache; and a
//! run that cannot converge is an error, as in networkx.

mod inmem_support;

use std::path::Path;
use std::sync::Arc;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::cache::{budget_for_cache_bytes, CacheOptions};
use outcore::engine::pregel::PregelOptions;
use outcore::engine::shards::{ShardValues, ShardsOptions};
use outcore::engine::stream::StreamOptions;
use outcore::engine::{Delivery, EngineKind, RunOptions, Runner};
use outcore::generate::{generate_into_store, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::Store;
use outcore::transport::InProcessTransport;

/// A reference graph with networkx's values, as a store.
struct Reference {
    name: String,
    store: Store,
    doc: serde_json::Value,
    _dir: tempfile::TempDir,
}

/// The weights of the weighted eigenvector reference (the script's `weight_of`).
fn weight_of(s: u64, t: u64) -> f64 {
    1.0 + ((s + t) % 4) as f64
}

fn references() -> Vec<Reference> {
    reference_stores(false)
}

/// The reference graphs as stores; `weighted`: with the weights of [`weight_of`].
fn reference_stores(weighted: bool) -> Vec<Reference> {
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
            .map(|e| (e[0].as_u64().unwrap(), e[1].as_u64().unwrap()))
            .map(|(s, t)| (s, t, if weighted { weight_of(s, t) } else { 1.0 }))
            .collect();
        let tmp = tempfile::tempdir().unwrap();
        let directed = doc["directed"].as_bool().unwrap();
        let store = inmem_support::store_with_ids(&tmp.path().join("s"), ids, &edges, directed, weighted);
        out.push(Reference { name: doc["name"].as_str().unwrap().to_string(), store, doc, _dir: tmp });
    }
    assert!(out.len() >= 5, "reference files missing: run scripts/reference/networkx_reference.py");
    out
}

fn katz(store: &Store, options: RunOptions, params: &AlgorithmParams) -> outcore::Result<Vec<f64>> {
    floats(store, options, "katz", params)
}

fn eigenvector(store: &Store, options: RunOptions, params: &AlgorithmParams) -> outcore::Result<Vec<f64>> {
    floats(store, options, "eigenvector", params)
}

fn floats(store: &Store, options: RunOptions, algorithm: &str, params: &AlgorithmParams) -> outcore::Result<Vec<f64>> {
    let result: AlgorithmResult = run_algorithm(&Runner::new(store, options), algorithm, params)?;
    match &result.columns[0].1 {
        ValueColumn::Float(values) => Ok(values.clone()),
        other => panic!("{algorithm} gives floats, got {other:?}"),
    }
}

fn inmem() -> RunOptions {
    RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 30), ..RunOptions::default() }
}

/// `values` (dense order) against the reference `key`, vertex by vertex.
fn check(reference: &Reference, values: &[f64], key: &str, tolerance: f64) {
    let ids = reference.store.ids().unwrap().all_u64().unwrap();
    assert_eq!(values.len(), ids.len());
    for (dense, &value) in values.iter().enumerate() {
        let want = reference.doc[key][ids[dense].to_string()].as_f64().unwrap();
        assert!(
            (value - want).abs() <= tolerance,
            "{} {key}: vertex {}: {value} vs {want} (tolerance {tolerance})",
            reference.name,
            ids[dense]
        );
    }
}

#[test]
fn katz_equals_networkx_and_scipy() {
    let defaults = AlgorithmParams::default();
    let raw = AlgorithmParams {
        alpha: Some(0.05),
        beta: Some(2.0),
        tolerance: Some(1e-9),
        unnormalized: true,
        ..AlgorithmParams::default()
    };
    for reference in references() {
        let values = katz(&reference.store, inmem(), &defaults).unwrap();
        // The same iterations as networkx: equal up to the order of floating-point sums.
        check(&reference, &values, "katz", 1e-12);
        // networkx's tolerance (1e-6 per vertex in L1) from the exact vector.
        check(&reference, &values, "katz_scipy", 1e-6);
        check(&reference, &katz(&reference.store, inmem(), &raw).unwrap(), "katz_raw", 1e-12);
    }
}

#[test]
fn katz_that_cannot_converge_is_an_error() {
    let karate = references().into_iter().find(|r| r.name == "karate").expect("the karate reference");
    // alpha above 1/λ_max (karate: λ_max ≈ 6.7) diverges.
    let p = AlgorithmParams { alpha: Some(0.5), iterations: Some(50), ..AlgorithmParams::default() };
    let err = katz(&karate.store, inmem(), &p).unwrap_err().to_string();
    assert!(err.contains("did not converge in 50 iterations"), "{err}");
    // Far above: the values overflow, and the error says so.
    let p = AlgorithmParams { alpha: Some(1.0), ..AlgorithmParams::default() };
    let err = katz(&karate.store, inmem(), &p).unwrap_err().to_string();
    assert!(err.contains("katz diverged"), "{err}");
    let p = AlgorithmParams { tolerance: Some(0.0), ..AlgorithmParams::default() };
    assert!(katz(&karate.store, inmem(), &p).unwrap_err().to_string().contains("positive tolerance"));
}

#[test]
fn katz_out_of_core_equals_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let store = rmat_store(dir.path(), false);
    // alpha below 1/λ_max of this R-MAT graph (about 1/45).
    let p = AlgorithmParams { alpha: Some(0.01), tolerance: Some(1e-10), ..AlgorithmParams::default() };
    let expected = katz(&store, inmem(), &p).unwrap();
    for (name, options) in out_of_core_engines(&store) {
        let got = katz(&store, options, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(name, &got, &expected);
    }
    assert_close("pregel", &pregel(&store, "katz", &p).unwrap(), &expected);
}

/// Katz and eigenvector centrality sum every in-neighbour's value, so inmem and stream pull
/// them (as PageRank): every iteration folds in-arcs, with one message per source when the
/// message does not depend on the arc (katz; eigenvector unweighted), and by arc otherwise.
#[test]
fn katz_and_eigenvector_pull_on_inmem_and_stream() {
    let dir = tempfile::tempdir().unwrap();
    for weighted in [false, true] {
        let store = rmat_store(&dir.path().join(format!("w{weighted}")), weighted);
        let stream = out_of_core_engines(&store).swap_remove(0).1;
        let runs = [
            ("katz", AlgorithmParams { alpha: Some(0.01), ..AlgorithmParams::default() }),
            ("eigenvector", AlgorithmParams { weighted, ..AlgorithmParams::default() }),
        ];
        for (algorithm, params) in runs {
            for options in [inmem(), stream.clone()] {
                let what = format!("{algorithm} on {:?}, weighted store {weighted}", options.engine);
                let runner = Runner::new(&store, options);
                run_algorithm(&runner, algorithm, &params).unwrap_or_else(|e| panic!("{what}: {e}"));
                let stats = runner.finish(algorithm);
                assert!(stats.iterations > 2, "{what}");
                let pulled = stats.per_iteration.iter().all(|i| i.delivery == Some(Delivery::Pull));
                assert!(pulled, "{what}: {:?}", stats.per_iteration.iter().map(|i| i.delivery).collect::<Vec<_>>());
            }
        }
    }
}

/// `values` against the reference `key`, or, where networkx failed to converge (null), the
/// same failure as an error.
fn check_or_failure(reference: &Reference, values: outcore::Result<Vec<f64>>, key: &str, iterations: usize) {
    if reference.doc[key].is_null() {
        let err = values.expect_err(&format!("{} {key}: networkx did not converge", reference.name)).to_string();
        assert!(err.contains(&format!("did not converge in {iterations} iterations")), "{err}");
    } else {
        check(reference, &values.unwrap_or_else(|e| panic!("{} {key}: {e}", reference.name)), key, 1e-12);
    }
}

#[test]
fn eigenvector_equals_networkx() {
    let tight = AlgorithmParams { tolerance: Some(1e-10), iterations: Some(1000), ..AlgorithmParams::default() };
    let mut failures = 0;
    for reference in references() {
        let values = eigenvector(&reference.store, inmem(), &AlgorithmParams::default());
        failures += reference.doc["eigenvector"].is_null() as usize;
        // The same iterations as networkx: equal up to the order of floating-point sums.
        check_or_failure(&reference, values, "eigenvector", 100);
        let values = eigenvector(&reference.store, inmem(), &tight);
        // An independent solver (ARPACK) where the leading eigenvector is unique.
        if let (Ok(values), false) = (&values, reference.doc["eigenvector_numpy"].is_null()) {
            check(&reference, values, "eigenvector_numpy", 1e-7);
        }
        check_or_failure(&reference, values, "eigenvector_tight", 1000);
    }
    assert!(failures > 0, "no reference graph exercises the failure to converge");
    let weighted = AlgorithmParams { weighted: true, ..AlgorithmParams::default() };
    for reference in reference_stores(true) {
        let values = eigenvector(&reference.store, inmem(), &weighted);
        check_or_failure(&reference, values, "eigenvector_weighted", 100);
    }
}

#[test]
fn eigenvector_parameters_are_checked() {
    let karate = references().into_iter().find(|r| r.name == "karate").expect("the karate reference");
    let run = |p: AlgorithmParams| eigenvector(&karate.store, inmem(), &p).unwrap_err().to_string();
    assert!(run(AlgorithmParams { tolerance: Some(0.0), ..AlgorithmParams::default() }).contains("positive finite"));
    assert!(run(AlgorithmParams { iterations: Some(0), ..AlgorithmParams::default() }).contains("at least one"));
    assert!(run(AlgorithmParams { weighted: true, ..AlgorithmParams::default() }).contains("needs a weighted store"));
    // Too few iterations for karate: networkx's PowerIterationFailedConvergence.
    let err = run(AlgorithmParams { iterations: Some(3), ..AlgorithmParams::default() });
    assert!(err.contains("did not converge in 3 iterations"), "{err}");
}

fn rmat_store(dir: &Path, weights: bool) -> Store {
    let rmat = RmatConfig { scale: 10, edge_factor: 8, seed: 3, weights, ..RmatConfig::default() };
    let options = ImportOptions { memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    generate_into_store(Rmat::new(rmat).unwrap(), &dir.join("g"), &options, &NoProgress, &CancelToken::new()).unwrap().0
}

/// Engines with budgets small enough that their out-of-core paths act on RMAT-10: stream reads
/// 16 KiB buffers, shards splits into many intervals, cache pages 512 B through a 16 KiB cache.
fn out_of_core_engines(store: &Store) -> Vec<(&'static str, RunOptions)> {
    let stream = RunOptions {
        engine: EngineKind::Stream,
        memory: MemoryBudget::new(64 << 20),
        stream: StreamOptions { block_bytes: 16 << 10, max_buffer_bytes: 16 << 10, ..StreamOptions::default() },
        ..RunOptions::default()
    };
    let shards = RunOptions {
        engine: EngineKind::Shards,
        memory: MemoryBudget::new(512 << 10),
        shards: ShardsOptions { values: ShardValues::Disk, ..ShardsOptions::default() },
        ..RunOptions::default()
    };
    let cache_options = CacheOptions { page_size: 512, ..CacheOptions::default() };
    let cache = RunOptions {
        engine: EngineKind::Cache,
        memory: MemoryBudget::new(budget_for_cache_bytes(store, &cache_options, 16 << 10)),
        cache: cache_options,
        ..RunOptions::default()
    };
    vec![("stream", stream), ("shards", shards), ("cache", cache)]
}

/// The pregel engine with 3 ranks in this process and 4 KiB message files (many spills).
fn pregel(store: &Store, algorithm: &str, params: &AlgorithmParams) -> outcore::Result<Vec<f64>> {
    let outcomes = InProcessTransport::run(3, |t| {
        let options = RunOptions {
            engine: EngineKind::Pregel,
            memory: MemoryBudget::new(64 << 20),
            pregel: PregelOptions { message_file_size: Some(4096), ..PregelOptions::default() },
            ..RunOptions::default()
        };
        let runner = Runner::new(store, options).with_transport(Arc::new(t.clone()));
        floats_with(&runner, algorithm, params)
    })?;
    Ok(outcomes.into_iter().next().unwrap())
}

fn floats_with(runner: &Runner, algorithm: &str, params: &AlgorithmParams) -> outcore::Result<Vec<f64>> {
    match run_algorithm(runner, algorithm, params)?.columns.swap_remove(0).1 {
        ValueColumn::Float(values) => Ok(values),
        other => panic!("{algorithm} gives floats, got {other:?}"),
    }
}

fn assert_close(name: &str, got: &[f64], expected: &[f64]) {
    let worst = got.iter().zip(expected).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert_eq!(got.len(), expected.len(), "{name}");
    assert!(worst < 1e-12, "{name}: differs from inmem by up to {worst}");
}

#[test]
fn eigenvector_out_of_core_equals_inmem() {
    let dir = tempfile::tempdir().unwrap();
    for weighted in [false, true] {
        let store = rmat_store(&dir.path().join(format!("w{weighted}")), weighted);
        let p =
            AlgorithmParams { tolerance: Some(1e-9), iterations: Some(1000), weighted, ..AlgorithmParams::default() };
        let expected = eigenvector(&store, inmem(), &p).unwrap();
        for (name, options) in out_of_core_engines(&store) {
            let got = eigenvector(&store, options, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_close(name, &got, &expected);
        }
        assert_close("pregel", &pregel(&store, "eigenvector", &p).unwrap(), &expected);
    }
    // The reference graphs on pregel too: networkx's values, and its failures.
    for reference in references() {
        let values = pregel(&reference.store, "eigenvector", &AlgorithmParams::default());
        check_or_failure(&reference, values, "eigenvector", 100);
    }
}

/// HITS as (hubs, authorities), dense order.
fn hits(store: &Store, options: RunOptions, params: &AlgorithmParams) -> outcore::Result<(Vec<f64>, Vec<f64>)> {
    let result = run_algorithm(&Runner::new(store, options), "hits", params)?;
    let column = |i: usize, name: &str| match &result.columns[i] {
        (n, ValueColumn::Float(values)) if n == name => values.clone(),
        other => panic!("hits column {i} should be {name} floats, got {other:?}"),
    };
    Ok((column(0, "hub"), column(1, "authority")))
}

/// HITS against the reference `key` ({"hub", "authority"}), or networkx's failure (null).
fn check_hits(
    reference: &Reference,
    got: outcore::Result<(Vec<f64>, Vec<f64>)>,
    key: &str,
    iterations: usize,
    tolerance: f64,
) {
    let want = &reference.doc[key];
    if want.is_null() {
        let err = got.expect_err(&format!("{} {key}: networkx did not converge", reference.name)).to_string();
        assert!(err.contains(&format!("hits did not converge in {iterations} iterations")), "{err}");
        return;
    }
    let (hubs, authorities) = got.unwrap_or_else(|e| panic!("{} {key}: {e}", reference.name));
    let ids = reference.store.ids().unwrap().all_u64().unwrap();
    for (column, values) in [("hub", &hubs), ("authority", &authorities)] {
        for (dense, &value) in values.iter().enumerate() {
            let expected = want[column][ids[dense].to_string()].as_f64().unwrap();
            assert!(
                (value - expected).abs() <= tolerance,
                "{} {key} {column}: vertex {}: {value} vs {expected}",
                reference.name,
                ids[dense]
            );
        }
    }
}

#[test]
fn hits_equals_networkx() {
    let raw = AlgorithmParams {
        tolerance: Some(1e-10),
        iterations: Some(1000),
        unnormalized: true,
        ..AlgorithmParams::default()
    };
    let tight = AlgorithmParams { unnormalized: false, ..raw.clone() };
    let mut failures = 0;
    for reference in references() {
        failures += reference.doc["hits"].is_null() as usize;
        // networkx's power iteration: the same steps, equal up to the order of sums.
        check_hits(&reference, hits(&reference.store, inmem(), &AlgorithmParams::default()), "hits", 100, 1e-12);
        check_hits(&reference, hits(&reference.store, inmem(), &raw), "hits_raw", 1000, 1e-12);
        // networkx's public hits (ARPACK's SVD): the same vectors, to about the tolerance.
        if !reference.doc["hits_svd"].is_null() {
            check_hits(&reference, hits(&reference.store, inmem(), &tight), "hits_svd", 1000, 1e-8);
        }
    }
    assert!(failures > 0, "no reference graph exercises the failure to converge");
    let weighted = AlgorithmParams { weighted: true, ..AlgorithmParams::default() };
    for reference in reference_stores(true) {
        check_hits(&reference, hits(&reference.store, inmem(), &weighted), "hits_weighted", 100, 1e-12);
    }
}

#[test]
fn hits_parameters_are_checked() {
    let karate = references().into_iter().find(|r| r.name == "karate").expect("the karate reference");
    let run = |p: AlgorithmParams| hits(&karate.store, inmem(), &p).unwrap_err().to_string();
    assert!(run(AlgorithmParams { tolerance: Some(-1.0), ..AlgorithmParams::default() }).contains("positive finite"));
    assert!(run(AlgorithmParams { iterations: Some(0), ..AlgorithmParams::default() }).contains("at least one"));
    assert!(run(AlgorithmParams { weighted: true, ..AlgorithmParams::default() }).contains("needs a weighted store"));
    let err = run(AlgorithmParams { iterations: Some(2), ..AlgorithmParams::default() });
    assert!(err.contains("hits did not converge in 2 iterations"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let edgeless = inmem_support::store_with_ids(&dir.path().join("e"), vec![1, 2], &[], true, false);
    let err = hits(&edgeless, inmem(), &AlgorithmParams::default()).unwrap_err().to_string();
    assert!(err.contains("without edges"), "{err}");
}

#[test]
fn hits_out_of_core_equals_inmem() {
    let dir = tempfile::tempdir().unwrap();
    for weighted in [false, true] {
        let store = rmat_store(&dir.path().join(format!("w{weighted}")), weighted);
        let p = AlgorithmParams { iterations: Some(1000), weighted, ..AlgorithmParams::default() };
        let (hubs, authorities) = hits(&store, inmem(), &p).unwrap();
        for (name, options) in out_of_core_engines(&store) {
            let got = hits(&store, options, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_close(&format!("{name} hubs"), &got.0, &hubs);
            assert_close(&format!("{name} authorities"), &got.1, &authorities);
        }
    }
}
