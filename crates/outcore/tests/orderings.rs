//! Orderings (`store/order.rs`): every ordering is a bijection, Norder lowers the BASC paper's
//! cost model against a random order, a reordered store holds the same graph in original ids,
//! and every algorithm gives the same results (in original ids) before and after reordering,
//! on the in-memory and the cache engines.

mod cache_support;
mod inmem_support;

use std::collections::BTreeSet;

use cache_support::*;
use outcore::algo::AlgorithmParams;
use outcore::engine::cache::SelectionMethod;
use outcore::engine::Runner;
use outcore::runtime::{MemoryBudget, NoProgress};
use outcore::store::order::{order_cost, permutation, reorder, reorder_into, VertexOrder};
use outcore::store::{Direction, Store};

const ORDERS: [VertexOrder; 4] =
    [VertexOrder::None, VertexOrder::Degree, VertexOrder::Random { seed: 11 }, VertexOrder::Norder];

fn budget() -> MemoryBudget {
    MemoryBudget::new(256 << 20)
}

/// The arcs of a store as (original source, original target, weight bits), sorted.
fn arcs_in_original_ids(store: &Store, direction: Direction) -> Vec<(u64, u64, u64)> {
    let ids = store.ids().unwrap().all_u64().unwrap();
    let csr = store.csr(direction).unwrap().load().unwrap();
    let mut arcs = Vec::new();
    for v in 0..csr.num_vertices() {
        let weights = csr.weights_of(v).map(|w| w.to_vec()).unwrap_or_else(|| vec![1.0; csr.degree(v) as usize]);
        for (&t, w) in csr.neighbors(v).iter().zip(weights) {
            arcs.push((ids[v as usize], ids[t as usize], w.to_bits()));
        }
    }
    arcs.sort_unstable();
    arcs
}

#[test]
fn every_ordering_is_a_bijection() {
    for (name, graph) in
        [("rmat", rmat(11, 6, 1, true)), ("grid", grid(30, 20)), ("er", erdos_renyi(1500, 4000, 2, false, false))]
    {
        let tmp = tempfile::tempdir().unwrap();
        let store = build(&tmp.path().join("s"), &graph);
        for order in ORDERS {
            let p = permutation(&store, order, budget()).unwrap();
            let distinct: BTreeSet<u64> = p.iter().copied().collect();
            assert_eq!(p.len() as u64, store.num_vertices(), "{name} {}", order.name());
            assert_eq!(distinct.len(), p.len(), "{name} {}: not injective", order.name());
            assert_eq!(
                distinct.last().copied(),
                Some(store.num_vertices() - 1),
                "{name} {}: not onto 0..n",
                order.name()
            );
        }
        // `none` on an unreordered store is the identity.
        assert!(permutation(&store, VertexOrder::None, budget())
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, &p)| p == i as u64));
    }
}

#[test]
fn norder_lowers_the_cost_model_against_a_random_order() {
    for (name, graph) in [
        ("rmat directed", rmat(12, 8, 3, true)),
        ("rmat undirected", rmat(12, 6, 4, false)),
        ("er", erdos_renyi(4000, 16_000, 5, true, false)),
        ("grid", grid(60, 50)),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let original = build(&tmp.path().join("original"), &graph);
        // Start from a random order, so that the input order's own locality does not help.
        let shuffled =
            reorder_into(&original, &tmp.path().join("random"), VertexOrder::Random { seed: 1 }, budget(), &NoProgress)
                .unwrap();
        let norder =
            reorder_into(&shuffled, &tmp.path().join("norder"), VertexOrder::Norder, budget(), &NoProgress).unwrap();
        let degree =
            reorder_into(&shuffled, &tmp.path().join("degree"), VertexOrder::Degree, budget(), &NoProgress).unwrap();
        let (random_cost, norder_cost, degree_cost) =
            (order_cost(&shuffled).unwrap(), order_cost(&norder).unwrap(), order_cost(&degree).unwrap());
        assert!(
            norder_cost.cost < random_cost.cost,
            "{name}: norder {} vs random {}",
            norder_cost.cost,
            random_cost.cost
        );
        eprintln!(
            "{name}: normalised cost random {:.4}, degree {:.4}, norder {:.4}",
            random_cost.normalized, degree_cost.normalized, norder_cost.normalized
        );
        // A random order sits near the normalised cost 1.
        assert!(
            (0.8..1.2).contains(&random_cost.normalized),
            "{name}: random normalised cost {}",
            random_cost.normalized
        );
    }
}

#[test]
fn reordered_store_holds_the_same_graph_and_records_the_ordering() {
    for (directed, weighted) in [(true, true), (false, true), (true, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let graph = erdos_renyi(800, 3000, 6, directed, weighted);
        let store = build(&tmp.path().join("s"), &graph);
        let out_before = arcs_in_original_ids(&store, Direction::Out);
        let in_before = arcs_in_original_ids(&store, Direction::In);
        let mut current = store.clone();
        for order in [VertexOrder::Norder, VertexOrder::Degree, VertexOrder::Random { seed: 3 }, VertexOrder::None] {
            current = reorder(&current, order, budget(), &NoProgress).unwrap();
            current.verify().unwrap();
            assert_eq!(arcs_in_original_ids(&current, Direction::Out), out_before, "{}", order.name());
            assert_eq!(arcs_in_original_ids(&current, Direction::In), in_before, "{}", order.name());
            // Lookups by original id still work (ids/by-original is sorted by original id).
            let ids = current.ids().unwrap();
            for v in [0u64, 17, 799] {
                let text = original(v);
                let dense = ids.resolve(&text).unwrap();
                assert_eq!(ids.original(dense).unwrap().to_string(), text);
            }
        }
        assert_eq!(current.manifest().orderings, vec!["norder", "degree", "random", "none"]);
        // `none` restores the import's order.
        assert_eq!(current.ids().unwrap().all_u64().unwrap(), store.ids().unwrap().all_u64().unwrap());
    }
}

#[test]
fn reordering_within_a_tiny_budget_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = build(&tmp.path().join("s"), &grid(40, 40));
    let err = reorder(&store, VertexOrder::Norder, MemoryBudget::new(1000), &NoProgress).unwrap_err();
    assert!(matches!(err, outcore::Error::MemoryBudget(_)), "{err}");
    // The store is untouched.
    assert!(store.manifest().orderings.is_empty());
    Store::open(store.dir()).unwrap().verify().unwrap();
}

#[test]
fn results_in_original_ids_do_not_depend_on_the_ordering() {
    let graph = rmat(11, 8, 7, true);
    let tmp = tempfile::tempdir().unwrap();
    let base = build(&tmp.path().join("base"), &graph);
    let sources: Vec<String> = [1u64, 5, 9, 100].iter().map(|&i| original(i)).collect();
    let work: Vec<(&str, AlgorithmParams)> = vec![
        ("bfs", AlgorithmParams { source: Some(original(1)), ..params() }),
        ("wcc", params()),
        ("cdlp", params()),
        ("bc", AlgorithmParams { sources: sources.clone(), ..params() }),
        ("msbfs", AlgorithmParams { sources: sources.clone(), ..params() }),
        ("diameter", AlgorithmParams { source: Some(original(1)), sweeps: Some(1), ..params() }),
    ];
    let inmem = inmem_runner(&base);
    let expected: Vec<_> = work.iter().map(|(name, p)| run(&inmem, name, p)).collect();
    for order in [VertexOrder::Norder, VertexOrder::Degree, VertexOrder::Random { seed: 5 }] {
        let dir = tmp.path().join(order.name());
        let reordered = reorder_into(&base, &dir, order, budget(), &NoProgress).unwrap();
        // A runner per algorithm run, as the CLI and Python make them: the cache engine keeps
        // its caches (and their charges) for the rest of its runner's run.
        let runners: [(&str, &dyn Fn() -> Runner); 2] = [
            ("inmem", &|| inmem_runner(&reordered)),
            ("cache", &|| cache_runner(&reordered, 512, SelectionMethod::Gvs, 20 << 10)),
        ];
        for (engine, runner) in runners {
            for ((name, p), want) in work.iter().zip(&expected) {
                if engine == "cache" && *name == "cdlp" {
                    continue; // a Pregel program: the cache engine runs vertex programs only
                }
                let got = run(&runner(), name, p);
                assert_same_by_original(
                    &reordered,
                    &got,
                    &base,
                    want,
                    &format!("{name} on {engine} after {}", order.name()),
                );
            }
        }
    }
}
