//! WCC by union-find in one edge pass (`algo/wcc.rs`, `engine/stream/edge_pass.rs`) against
//! label propagation and an independent breadth-first reference: random graphs (directed and
//! undirected, with self-loops and duplicate arcs) on inmem and stream, budgets small enough
//! that the pass reads csr-out in many buffers, and reordered stores whose labels must still be
//! the smallest original id of each component.

mod inmem_support;

use std::collections::VecDeque;

use inmem_support::store;
use outcore::algo::wcc::{self, Method};
use outcore::engine::{EngineKind, RunOptions, RunStats, Runner};
use outcore::runtime::{MemoryBudget, NoProgress};
use outcore::store::order::{reorder, VertexOrder};
use outcore::store::Store;
use proptest::prelude::*;

/// Components by breadth-first search over the arcs taken both ways; label = smallest id.
fn reference(n: u64, arcs: &[(u64, u64)]) -> Vec<u64> {
    let mut adj = vec![Vec::new(); n as usize];
    for &(s, t) in arcs {
        adj[s as usize].push(t);
        adj[t as usize].push(s);
    }
    let mut label = vec![u64::MAX; n as usize];
    for start in 0..n {
        if label[start as usize] != u64::MAX {
            continue;
        }
        label[start as usize] = start;
        let mut queue = VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for &t in &adj[v as usize] {
                if label[t as usize] == u64::MAX {
                    label[t as usize] = start;
                    queue.push_back(t);
                }
            }
        }
    }
    label
}

fn run(store: &Store, engine: EngineKind, memory: u64, method: Method) -> (Vec<u64>, RunStats) {
    let runner = Runner::new(store, RunOptions { engine, memory: MemoryBudget::new(memory), ..RunOptions::default() });
    let labels = wcc::run(&runner, &wcc::Config { method }).unwrap().component;
    (labels, runner.finish("wcc"))
}

fn build(dir: &std::path::Path, n: u64, arcs: &[(u64, u64)], directed: bool) -> Store {
    let edges: Vec<(u64, u64, f64)> = arcs.iter().map(|&(s, t)| (s, t, 1.0)).collect();
    store(dir, n, &edges, directed, false)
}

/// Sparse random arcs: many small components, some self-loops and duplicates.
fn random_arcs(seed: u64, n: u64, m: usize) -> Vec<(u64, u64)> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..m).map(|_| (next() % n, next() % n)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Union-find and propagation give the reference labels on both engines, directed and
    /// undirected; the union-find run is one edge pass.
    #[test]
    fn union_find_equals_propagation_and_the_reference(
        n in 1u64..300,
        density in 0usize..3,
        seed in any::<u64>(),
        directed in any::<bool>(),
    ) {
        let arcs = random_arcs(seed, n, n as usize * density / 2 + (seed % 7) as usize);
        let dir = tempfile::tempdir().unwrap();
        let s = build(dir.path(), n, &arcs, directed);
        let want = reference(n, &arcs);
        for engine in [EngineKind::InMemory, EngineKind::Stream, EngineKind::Cache] {
            // 8 MiB: the cache engine's propagation needs 4 MiB of bookkeeping plus its pages.
            let (got, stats) = run(&s, engine, 8 << 20, Method::UnionFind);
            prop_assert_eq!(&got, &want, "union-find on {}", engine.name());
            prop_assert_eq!(stats.per_iteration.len(), 1);
            prop_assert!(stats.figures.edge_pass.is_some());
            let (got, stats) = run(&s, engine, 8 << 20, Method::Propagation);
            prop_assert_eq!(&got, &want, "propagation on {}", engine.name());
            prop_assert!(stats.figures.edge_pass.is_none());
        }
    }
}

/// With the smallest budget the pass reads csr-out in many buffers (the slices of each are
/// visited in parallel) and still finds the components; `auto` and an asked-for stream engine
/// both choose the edge pass.
#[test]
fn a_pass_over_many_buffers_finds_the_components() {
    let n = 60_000;
    let arcs = random_arcs(7, n, 150_000);
    let dir = tempfile::tempdir().unwrap();
    let s = build(dir.path(), n, &arcs, true);
    let want = reference(n, &arcs);
    let (got, stats) = run(&s, EngineKind::Stream, 1 << 20, Method::Auto);
    assert_eq!(got, want);
    assert!(stats.figures.edge_pass.is_some(), "stream chose the edge pass");
    let requests = stats.per_iteration[0].figures.edge_pass().unwrap().read_requests;
    assert!(requests >= 4, "csr-out ({} arcs) read in {requests} requests", arcs.len());
    assert_eq!(stats.per_iteration[0].edges_processed, arcs.len() as u64);
    let (got, stats) = run(&s, EngineKind::Auto, 64 << 20, Method::Auto);
    assert_eq!(got, want);
    assert!(stats.figures.edge_pass.is_some(), "auto chose the edge pass: {}", stats.engine_reason);
    // The cache engine keeps vertex state in memory too: one streamed pass, not six rounds of
    // page requests, with the same components.
    let (got, stats) = run(&s, EngineKind::Cache, 1 << 20, Method::Auto);
    assert_eq!(got, want);
    assert!(stats.figures.edge_pass.is_some(), "cache chose the edge pass");
    assert_eq!(stats.per_iteration.len(), 1);
    let read = stats.per_iteration[0].bytes_read;
    let csr_out = s.manifest().files["csr-out/targets"].bytes;
    assert!(read >= csr_out && read < csr_out + csr_out / 4, "one pass over csr-out: {read} bytes for {csr_out}");
}

/// On a reordered store dense ids no longer follow original ids: the label is still the
/// smallest original id of the component, whichever method runs.
#[test]
fn reordered_stores_keep_the_smallest_original_id() {
    let n = 500;
    let arcs = random_arcs(3, n, 400);
    let dir = tempfile::tempdir().unwrap();
    let plain = build(&dir.path().join("plain"), n, &arcs, false);
    let want = run(&plain, EngineKind::InMemory, 64 << 20, Method::Propagation).0;
    assert_eq!(want, reference(n, &arcs));
    let shuffled = build(&dir.path().join("shuffled"), n, &arcs, false);
    let shuffled =
        reorder(&shuffled, VertexOrder::Random { seed: 5 }, MemoryBudget::new(64 << 20), &NoProgress).unwrap();
    let ids = shuffled.ids().unwrap().all_u64().unwrap();
    for method in [Method::UnionFind, Method::Propagation] {
        for engine in [EngineKind::InMemory, EngineKind::Stream, EngineKind::Cache] {
            let (labels, _) = run(&shuffled, engine, 64 << 20, method);
            // In original ids: vertex ids[v] is labelled ids[labels[v]].
            let mut got = vec![0; n as usize];
            for (v, &label) in labels.iter().enumerate() {
                got[ids[v] as usize] = ids[label as usize];
            }
            assert_eq!(got, want, "{method:?} on {}", engine.name());
        }
    }
}
