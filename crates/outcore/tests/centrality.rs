//! Katz centrality against networkx (`katz_centrality`, same iteration and stopping rule) and
//! against scipy's exact solution of (I − αAᵀ)x = β (reference values written into
//! `tests/data/reference/bc-*.json` by `scripts/reference/centrality_reference.py`); the
//! out-of-core engines (stream, shards, cache) equal to inmem under budgets that force their
//! out-of-core paths; and a run that cannot converge is an error, as in networkx.

mod inmem_support;

use std::path::Path;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::cache::{budget_for_cache_bytes, CacheOptions};
use outcore::engine::shards::ShardsOptions;
use outcore::engine::stream::StreamOptions;
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::generate::{generate_into_store, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::Store;

/// A reference graph with networkx's values, as a store.
struct Reference {
    name: String,
    store: Store,
    doc: serde_json::Value,
    _dir: tempfile::TempDir,
}

fn references() -> Vec<Reference> {
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
        out.push(Reference { name: doc["name"].as_str().unwrap().to_string(), store, doc, _dir: tmp });
    }
    assert!(out.len() >= 5, "reference files missing: run scripts/reference/networkx_reference.py");
    out
}

fn katz(store: &Store, options: RunOptions, params: &AlgorithmParams) -> outcore::Result<Vec<f64>> {
    let result: AlgorithmResult = run_algorithm(&Runner::new(store, options), "katz", params)?;
    match &result.columns[0].1 {
        ValueColumn::Float(values) => Ok(values.clone()),
        other => panic!("katz gives floats, got {other:?}"),
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
    let rmat = RmatConfig { scale: 10, edge_factor: 8, seed: 3, weights: false, ..RmatConfig::default() };
    let options = ImportOptions { memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let (store, _) = generate_into_store(
        Rmat::new(rmat).unwrap(),
        &dir.path().join("g"),
        &options,
        &NoProgress,
        &CancelToken::new(),
    )
    .unwrap();
    // alpha below 1/λ_max of this R-MAT graph (about 1/45).
    let p = AlgorithmParams { alpha: Some(0.01), tolerance: Some(1e-10), ..AlgorithmParams::default() };
    let expected = katz(&store, inmem(), &p).unwrap();
    let stream = RunOptions {
        engine: EngineKind::Stream,
        memory: MemoryBudget::new(64 << 20),
        stream: StreamOptions { block_bytes: 16 << 10, max_buffer_bytes: 16 << 10, ..StreamOptions::default() },
        ..RunOptions::default()
    };
    let shards = RunOptions {
        engine: EngineKind::Shards,
        memory: MemoryBudget::new(512 << 10),
        shards: ShardsOptions::default(),
        ..RunOptions::default()
    };
    let cache_options = CacheOptions { page_size: 512, ..CacheOptions::default() };
    let cache = RunOptions {
        engine: EngineKind::Cache,
        memory: MemoryBudget::new(budget_for_cache_bytes(&store, &cache_options, 16 << 10)),
        cache: cache_options,
        ..RunOptions::default()
    };
    for (name, options) in [("stream", stream), ("shards", shards), ("cache", cache)] {
        let got = katz(&store, options, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
        let worst = got.iter().zip(&expected).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-12, "{name}: differs from inmem by up to {worst}");
    }
}
