//! Louvain communities against networkx's `louvain_communities` (reference partitions and
//! modularities for ten seeds, written into `tests/data/louvain/*.json` by
//! `scripts/reference/louvain_reference.py`): the same partition on graphs with clear structure,
//! modularity within 0.02 of networkx's on random ones; the reported modularity equal to one
//! recomputed here by brute force; the out-of-core pregel engine under a small budget equal to
//! inmem; bad parameters and directed stores refused.

mod inmem_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::pregel::PregelOptions;
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::runtime::MemoryBudget;
use outcore::store::Store;
use outcore::Error;

/// A reference graph as a store, with networkx's results.
struct Reference {
    name: String,
    ids: Vec<u64>,
    edges: Vec<(u64, u64, f64)>,
    store: Store,
    doc: serde_json::Value,
    _dir: tempfile::TempDir,
}

fn reference(name: &str) -> Reference {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/louvain/{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run scripts/reference/louvain_reference.py", path.display()));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ids: Vec<u64> = doc["vertices"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let edges: Vec<(u64, u64, f64)> = doc["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e[0].as_u64().unwrap(), e[1].as_u64().unwrap(), e[2].as_f64().unwrap()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let weighted = doc["weighted"].as_bool().unwrap();
    let store = inmem_support::store_with_ids(&dir.path().join("s"), ids.clone(), &edges, false, weighted);
    Reference { name: name.to_string(), ids, edges, store, doc, _dir: dir }
}

/// A partition as sets of original ids, and the reported modularity.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    partition: BTreeSet<BTreeSet<u64>>,
    labels: Vec<u64>,
    modularity: f64,
}

fn found(reference: &Reference, result: AlgorithmResult) -> Found {
    let ValueColumn::Label(labels) = &result.columns[0].1 else { panic!("louvain gives labels") };
    let mut groups: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for (v, &label) in labels.iter().enumerate() {
        groups.entry(label).or_default().insert(reference.ids[v]);
        // The label is the community's smallest member.
        assert!(reference.ids[label as usize] <= reference.ids[v]);
    }
    for (&label, members) in &groups {
        assert_eq!(
            members.first(),
            Some(&reference.ids[label as usize]),
            "{}: label is the smallest member",
            reference.name
        );
    }
    Found {
        partition: groups.into_values().collect(),
        labels: labels.clone(),
        modularity: result.summary["modularity"].as_f64().unwrap(),
    }
}

fn params(resolution: f64) -> AlgorithmParams {
    AlgorithmParams { resolution: Some(resolution), ..AlgorithmParams::default() }
}

fn inmem(reference: &Reference, params: &AlgorithmParams) -> Found {
    let runner = inmem_support::runner(&reference.store);
    found(reference, run_algorithm(&runner, "louvain", params).unwrap())
}

/// The pregel engine (one rank, out of core) with a small budget and 4 KiB message files.
fn pregel(reference: &Reference, params: &AlgorithmParams, memory: u64) -> Found {
    let options = RunOptions {
        engine: EngineKind::Pregel,
        memory: MemoryBudget::new(memory),
        pregel: PregelOptions { message_file_size: Some(4096), ..PregelOptions::default() },
        ..RunOptions::default()
    };
    let runner = Runner::new(&reference.store, options);
    let result = run_algorithm(&runner, "louvain", params).unwrap();
    assert_eq!(runner.engine(), EngineKind::Pregel);
    // Half the budget is reserved for the community state and graph: the engine planned
    // within the other half.
    assert_eq!(runner.memory().bytes(), memory - memory / 2);
    let planned: u64 = runner.finish("louvain").plan.map_or(0, |p| p.memory.iter().map(|m| m.bytes).sum());
    assert!(planned <= memory / 2, "the engine planned {planned} bytes of a {memory}-byte budget");
    found(reference, result)
}

/// Modularity recomputed from the edge list: Σ_c L_c/m − γ (d_c/2m)², self-loops counting
/// twice in degrees (networkx's `modularity`).
fn brute_force_modularity(reference: &Reference, partition: &BTreeSet<BTreeSet<u64>>, resolution: f64) -> f64 {
    let community: BTreeMap<u64, usize> =
        partition.iter().enumerate().flat_map(|(i, members)| members.iter().map(move |&v| (v, i))).collect();
    let m: f64 = reference.edges.iter().map(|e| e.2).sum();
    let (mut inside, mut degree) = (vec![0.0; partition.len()], vec![0.0; partition.len()]);
    for &(s, t, w) in &reference.edges {
        degree[community[&s]] += w;
        degree[community[&t]] += w;
        if community[&s] == community[&t] {
            inside[community[&s]] += w;
        }
    }
    inside.iter().zip(&degree).map(|(l, d)| l / m - resolution * (d / (2.0 * m)).powi(2)).sum()
}

/// networkx's partitions and modularities for the ten seeds.
fn networkx_runs(reference: &Reference, key: &str) -> Vec<(BTreeSet<BTreeSet<u64>>, f64)> {
    reference.doc[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let partition = run["partition"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect())
                .collect();
            (partition, run["modularity"].as_f64().unwrap())
        })
        .collect()
}

const ALL: [&str; 7] =
    ["two_cliques", "caveman", "connected_caveman", "karate", "planted", "rmat10", "weighted_planted"];

#[test]
fn reported_modularity_equals_brute_force() {
    for name in ALL {
        let r = reference(name);
        for resolution in [1.0, 0.5, 2.0] {
            let f = inmem(&r, &params(resolution));
            let brute = brute_force_modularity(&r, &f.partition, resolution);
            assert!(
                (f.modularity - brute).abs() < 1e-9,
                "{name} γ={resolution}: reported {} brute force {brute}",
                f.modularity
            );
        }
    }
}

#[test]
fn clear_structure_gives_networkx_partition() {
    for name in ["two_cliques", "caveman", "connected_caveman"] {
        let r = reference(name);
        let f = inmem(&r, &params(1.0));
        for (partition, _) in networkx_runs(&r, "resolution_1") {
            assert_eq!(f.partition, partition, "{name}");
        }
    }
    // The planted partition: networkx finds the four planted blocks for 9 seeds of 10.
    let r = reference("planted");
    let f = inmem(&r, &params(1.0));
    let blocks: BTreeSet<BTreeSet<u64>> = (0..4).map(|b| (32 * b..32 * (b + 1)).collect()).collect();
    assert_eq!(f.partition, blocks);
    assert!(networkx_runs(&r, "resolution_1").iter().filter(|(p, _)| *p == blocks).count() >= 9);
}

/// networkx's mean modularity over its ten seeds.
fn networkx_mean(reference: &Reference, key: &str) -> f64 {
    let runs = networkx_runs(reference, key);
    runs.iter().map(|r| r.1).sum::<f64>() / runs.len() as f64
}

#[test]
fn modularity_within_two_hundredths_of_networkx() {
    let mut lines = vec![];
    for (name, key, resolution) in [
        ("karate", "resolution_1", 1.0),
        ("planted", "resolution_1", 1.0),
        ("planted", "resolution_2", 2.0),
        ("rmat10", "resolution_1", 1.0),
        ("weighted_planted", "resolution_1", 1.0),
    ] {
        let r = reference(name);
        let expected = networkx_mean(&r, key);
        for seed in [None, Some(1), Some(7)] {
            let f = inmem(&r, &AlgorithmParams { seed, ..params(resolution) });
            assert!(
                f.modularity >= expected - 0.02,
                "{name} γ={resolution} seed {seed:?}: {} < networkx {expected} − 0.02",
                f.modularity
            );
            lines.push(format!(
                "{name} γ={resolution} seed {seed:?}: {:.4} (networkx mean {expected:.4})",
                f.modularity
            ));
        }
    }
    println!("{}", lines.join("\n"));
}

#[test]
fn pregel_out_of_core_equals_inmem() {
    for name in ["planted", "rmat10", "weighted_planted", "karate"] {
        let r = reference(name);
        let expected = inmem(&r, &params(1.0));
        let got = pregel(&r, &params(1.0), 16 << 20);
        assert_eq!(got, expected, "{name}");
        assert!(got.modularity >= networkx_mean(&r, "resolution_1") - 0.02);
    }
}

/// The pregel engine names vertices by original id: with ids that are not 0..n it still equals
/// inmem (level 1 learns the adjacency in dense ids from its own messages).
#[test]
fn pregel_equals_inmem_when_original_ids_are_not_dense_ids() {
    let mut r = reference("weighted_planted");
    let dir = tempfile::tempdir().unwrap();
    r.ids = r.ids.iter().map(|&v| 3 * v + 7).collect();
    r.edges = r.edges.iter().map(|&(s, t, w)| (3 * s + 7, 3 * t + 7, w)).collect();
    r.store = inmem_support::store_with_ids(&dir.path().join("s"), r.ids.clone(), &r.edges, false, true);
    let expected = inmem(&r, &params(1.0));
    assert_eq!(pregel(&r, &params(1.0), 16 << 20), expected);
    assert!((expected.modularity - brute_force_modularity(&r, &expected.partition, 1.0)).abs() < 1e-9);
}

#[test]
fn max_level_one_stops_after_the_stored_graph() {
    let r = reference("rmat10");
    let runner = inmem_support::runner(&r.store);
    let one = run_algorithm(&runner, "louvain", &AlgorithmParams { max_level: Some(1), ..params(1.0) }).unwrap();
    let all = run_algorithm(&runner, "louvain", &params(1.0)).unwrap();
    assert_eq!(one.summary["levels"], 1);
    assert!(all.summary["levels"].as_u64().unwrap() > 1);
    let (one, all) = (found(&r, one), found(&r, all));
    assert!(one.modularity < all.modularity);
    assert!((one.modularity - brute_force_modularity(&r, &one.partition, 1.0)).abs() < 1e-9);
}

#[test]
fn a_graph_without_edges_is_singletons() {
    let dir = tempfile::tempdir().unwrap();
    let store = inmem_support::store(&dir.path().join("s"), 4, &[], false, false);
    let result = run_algorithm(&inmem_support::runner(&store), "louvain", &params(1.0)).unwrap();
    assert_eq!(result.columns[0].1, ValueColumn::Label(vec![0, 1, 2, 3]));
    assert_eq!(result.summary["modularity"], 0.0);
}

#[test]
fn bad_parameters_and_directed_stores_are_refused() {
    let r = reference("two_cliques");
    let runner = inmem_support::runner(&r.store);
    let bad = [
        (params(0.0), "--resolution"),
        (params(-1.0), "--resolution"),
        (params(f64::NAN), "--resolution"),
        (AlgorithmParams { threshold: Some(-1e-3), ..params(1.0) }, "--threshold"),
        (AlgorithmParams { max_level: Some(0), ..params(1.0) }, "--max-level"),
    ];
    for (params, flag) in bad {
        match run_algorithm(&runner, "louvain", &params) {
            Err(Error::InvalidArgument(message)) => assert!(message.contains(flag), "{message}"),
            other => panic!("{params:?}: {other:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let directed = inmem_support::store(&dir.path().join("d"), 3, &[(0, 1, 1.0), (1, 2, 1.0)], true, false);
    match run_algorithm(&inmem_support::runner(&directed), "louvain", &params(1.0)) {
        Err(Error::InvalidArgument(message)) => assert!(message.contains("undirected"), "{message}"),
        other => panic!("directed: {other:?}"),
    }
}
