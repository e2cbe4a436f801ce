//! Helpers shared by `tests/cache_engine.rs` and `tests/orderings.rs`: deterministic graph
//! generators (RMAT, Erdős–Rényi, grid), runners on the cache and in-memory engines, and result
//! comparison keyed by original ids.
#![allow(dead_code)]

use std::path::Path;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::cache::{budget_for_cache_bytes, CacheOptions, SelectionMethod, ASSUMED_STATE_BYTES_PER_VERTEX};
use outcore::engine::{CacheRun, EngineKind, NwsmQuery, RunOptions, Runner};
use outcore::runtime::MemoryBudget;
use outcore::store::order::SplitMix64;
use outcore::store::{build_in_memory, InMemoryGraph, OriginalIds, Store};

/// Edges `(source, target, weight)` over vertices `0..n`.
pub struct Graph {
    pub n: u64,
    pub edges: Vec<(u64, u64, f64)>,
    pub directed: bool,
    pub weighted: bool,
}

/// Graph500-style RMAT (a = 0.57, b = c = 0.19): `2^scale` vertices, `edge_factor · 2^scale`
/// edges, self-loops dropped, duplicates kept.
pub fn rmat(scale: u32, edge_factor: u64, seed: u64, directed: bool) -> Graph {
    let n = 1u64 << scale;
    let mut rng = SplitMix64::new(seed);
    let mut edges = Vec::new();
    for _ in 0..edge_factor * n {
        let (mut s, mut t) = (0u64, 0u64);
        for _ in 0..scale {
            let r = rng.below(100);
            let (bs, bt) = if r < 57 {
                (0, 0)
            } else if r < 76 {
                (0, 1)
            } else if r < 95 {
                (1, 0)
            } else {
                (1, 1)
            };
            s = s * 2 + bs;
            t = t * 2 + bt;
        }
        if s != t {
            edges.push((s, t, 1.0));
        }
    }
    Graph { n, edges, directed, weighted: false }
}

/// G(n, m) with uniform weights in [0.1, 10.1) when `weighted`; no self-loops.
pub fn erdos_renyi(n: u64, m: u64, seed: u64, directed: bool, weighted: bool) -> Graph {
    let mut rng = SplitMix64::new(seed);
    let mut edges = Vec::new();
    while (edges.len() as u64) < m {
        let (s, t) = (rng.below(n), rng.below(n));
        if s != t {
            let w = if weighted { 0.1 + rng.below(10_000) as f64 / 1000.0 } else { 1.0 };
            edges.push((s, t, w));
        }
    }
    Graph { n, edges, directed, weighted }
}

/// The same graph without self-loops or duplicate arcs (edges in both directions count as one
/// on an undirected graph), as the one-level query forms of pr, cdlp and kcore need.
pub fn simple(mut g: Graph) -> Graph {
    let mut seen = std::collections::BTreeSet::new();
    g.edges.retain(|&(s, t, _)| s != t && seen.insert(if g.directed { (s, t) } else { (s.min(t), s.max(t)) }));
    g
}

/// An undirected `width × height` grid (vertex `y · width + x`).
pub fn grid(width: u64, height: u64) -> Graph {
    let mut edges = Vec::new();
    for y in 0..height {
        for x in 0..width {
            let v = y * width + x;
            if x + 1 < width {
                edges.push((v, v + 1, 1.0));
            }
            if y + 1 < height {
                edges.push((v, v + width, 1.0));
            }
        }
    }
    Graph { n: width * height, edges, directed: false, weighted: false }
}

/// An undirected random tree (each vertex joins a random earlier one).
pub fn random_tree(n: u64, seed: u64) -> Graph {
    let mut rng = SplitMix64::new(seed);
    let edges = (1..n).map(|v| (rng.below(v), v, 1.0)).collect();
    Graph { n, edges, directed: false, weighted: false }
}

/// Builds the store with original ids `3 · i + 10` (not the dense ids, so the id map is used).
pub fn build(dir: &Path, g: &Graph) -> Store {
    let ids: Vec<u64> = (0..g.n).map(|i| 3 * i + 10).collect();
    let edges = g.edges.iter().map(|&(s, t, w)| (s as usize, t as usize, w)).collect();
    build_in_memory(
        dir,
        &InMemoryGraph { vertices: OriginalIds::U64(ids), edges, directed: g.directed, weighted: g.weighted },
    )
    .unwrap()
}

/// The original id the tests give vertex `i` (see [`build`]).
pub fn original(i: u64) -> String {
    (3 * i + 10).to_string()
}

pub fn inmem_runner(store: &Store) -> Runner {
    Runner::new(
        store,
        RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() },
    )
}

/// A cache-engine runner whose caches get `cache_bytes` in total: the vertex state is the
/// fixed reservation [`budget_for_cache_bytes`] counts, whatever the program and thread count.
pub fn cache_runner(store: &Store, page_size: u64, selection: SelectionMethod, cache_bytes: u64) -> Runner {
    let cache = CacheOptions {
        page_size,
        selection,
        io_threads: 3,
        gvs_rounds: 4,
        state_bytes_per_vertex: Some(ASSUMED_STATE_BYTES_PER_VERTEX),
        ..CacheOptions::default()
    };
    let memory = budget_for_cache_bytes(store, &cache, cache_bytes);
    Runner::new(
        store,
        RunOptions { engine: EngineKind::Cache, memory: MemoryBudget::new(memory), cache, ..RunOptions::default() },
    )
}

pub fn run(runner: &Runner, algorithm: &str, params: &AlgorithmParams) -> AlgorithmResult {
    run_algorithm(runner, algorithm, params).unwrap_or_else(|e| panic!("{algorithm} on {:?}: {e}", runner.engine()))
}

/// Relative closeness for floats (exact for integers, infinities and NaN alike).
pub fn close(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Asserts two results have the same columns and values (floats within 1e-9 relative).
pub fn assert_same(a: &AlgorithmResult, b: &AlgorithmResult, context: &str) {
    assert_eq!(a.columns.len(), b.columns.len(), "{context}: column count");
    for ((name_a, col_a), (name_b, col_b)) in a.columns.iter().zip(&b.columns) {
        assert_eq!(name_a, name_b, "{context}");
        match (col_a, col_b) {
            (ValueColumn::Float(x), ValueColumn::Float(y)) => {
                assert_eq!(x.len(), y.len(), "{context}: {name_a} length");
                for (v, (p, q)) in x.iter().zip(y).enumerate() {
                    assert!(close(*p, *q), "{context}: {name_a}[{v}] = {p} vs {q}");
                }
            }
            _ => assert_eq!(col_a, col_b, "{context}: column {name_a}"),
        }
    }
    assert_eq!(a.summary, b.summary, "{context}: summary");
}

/// One value of a result with labels resolved to original ids.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell {
    Int(u64),
    Float(f64),
}

/// A result's columns as (original id, value) sorted by original id, labels as original ids.
pub fn by_original(store: &Store, result: &AlgorithmResult) -> Vec<(String, Vec<(u64, Cell)>)> {
    let ids = store.ids().unwrap().all_u64().unwrap();
    result
        .columns
        .iter()
        .map(|(name, column)| {
            let cells: Vec<Cell> = match column {
                ValueColumn::Hops(v) | ValueColumn::Count(v) => v.iter().map(|&x| Cell::Int(x)).collect(),
                ValueColumn::Label(v) => v.iter().map(|&l| Cell::Int(ids[l as usize])).collect(),
                ValueColumn::Float(v) => v.iter().map(|&x| Cell::Float(x)).collect(),
            };
            let mut keyed: Vec<(u64, Cell)> = ids.iter().copied().zip(cells).collect();
            keyed.sort_by_key(|&(id, _)| id);
            (name.clone(), keyed)
        })
        .collect()
}

/// Asserts two results on two stores of the same graph agree vertex by vertex (original ids).
pub fn assert_same_by_original(sa: &Store, a: &AlgorithmResult, sb: &Store, b: &AlgorithmResult, context: &str) {
    let (ka, kb) = (by_original(sa, a), by_original(sb, b));
    assert_eq!(ka.len(), kb.len(), "{context}");
    for ((name, ca), (_, cb)) in ka.iter().zip(&kb) {
        assert_eq!(ca.len(), cb.len(), "{context}: {name}");
        for (&(ia, xa), &(ib, xb)) in ca.iter().zip(cb) {
            assert_eq!(ia, ib, "{context}");
            let same = match (xa, xb) {
                (Cell::Float(p), Cell::Float(q)) => close(p, q),
                _ => xa == xb,
            };
            assert!(same, "{context}: {name} of vertex {ia}: {xa:?} vs {xb:?}");
        }
    }
}

/// The cache engine's figures of the run so far (default, all 0, before it recorded any).
#[allow(dead_code)]
pub fn cache_figures(runner: &Runner) -> CacheRun {
    runner.finish("test").figures.cache.unwrap_or_default()
}

/// The last nwsm query's figures.
#[allow(dead_code)]
pub fn nwsm_figures(runner: &Runner) -> NwsmQuery {
    runner.finish("test").figures.nwsm.expect("an nwsm query ran")
}

pub fn params() -> AlgorithmParams {
    AlgorithmParams::default()
}
