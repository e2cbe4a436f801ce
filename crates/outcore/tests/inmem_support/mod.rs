//! Helpers shared by `tests/algorithms.rs` and `tests/validate.rs`: small stores built with
//! `build_in_memory`, runners on the in-memory engine, and a plain `.v`/`.e` reader.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::runtime::MemoryBudget;
use outcore::store::{build_in_memory, InMemoryGraph, OriginalIds, Store};
use outcore::Result;

/// A store of vertices `0..n` (original ids = dense ids) with the given edges.
pub fn store(dir: &Path, n: u64, edges: &[(u64, u64, f64)], directed: bool, weighted: bool) -> Store {
    store_with_ids(dir, (0..n).collect(), edges, directed, weighted)
}

/// A store whose vertices have the given original ids; edges are in original ids.
pub fn store_with_ids(dir: &Path, ids: Vec<u64>, edges: &[(u64, u64, f64)], directed: bool, weighted: bool) -> Store {
    let position: HashMap<u64, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let index = |id: u64| *position.get(&id).expect("edge endpoint is a vertex");
    let edges = edges.iter().map(|&(s, t, w)| (index(s), index(t), w)).collect();
    build_in_memory(dir, &InMemoryGraph { vertices: OriginalIds::U64(ids.clone()), edges, directed, weighted }).unwrap()
}

/// A runner on the in-memory engine with a budget far above what the tests need.
pub fn runner(store: &Store) -> Runner {
    Runner::new(
        store,
        RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() },
    )
}

/// Builds the store of a Graphalytics graph from its `.properties`, `.v` and `.e` files with
/// `build_in_memory` (a reference loader independent of the import pipeline).
pub fn load_graphalytics(properties: &Path, store_dir: &Path) -> Result<Store> {
    let name = properties.file_stem().unwrap().to_string_lossy().to_string();
    let dir = properties.parent().unwrap();
    let text = std::fs::read_to_string(properties).unwrap();
    let directed = text.lines().any(|l| l.replace(' ', "") == format!("graph.{name}.directed=true"));
    let ids: Vec<u64> = std::fs::read_to_string(dir.join(format!("{name}.v")))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let mut weighted = false;
    let edges: Vec<(u64, u64, f64)> = std::fs::read_to_string(dir.join(format!("{name}.e")))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            weighted |= f.len() > 2;
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f.get(2).map_or(1.0, |w| w.parse().unwrap()))
        })
        .collect();
    Ok(store_with_ids(store_dir, ids, &edges, directed, weighted))
}
