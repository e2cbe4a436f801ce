//! kcore and bfs-parents: against brute-force references written here (Batagelj–Zaversnik
//! peeling for core numbers, a plain queue BFS taking the smallest parent) on random graphs
//! with self-loops and duplicate arcs, directed and undirected; and every out-of-core engine
//! that runs them (stream, cache, shards for bfs-parents; pregel for both) equal to inmem on
//! generated graphs with budgets small enough to force their out-of-core paths.

mod inmem_support;

use std::collections::VecDeque;
use std::sync::Arc;

use inmem_support::{runner, store};
use outcore::algo::{bfs_parents, kcore, run_algorithm, AlgorithmParams, AlgorithmResult};
use outcore::engine::cache::{budget_for_cache_bytes, CacheOptions};
use outcore::engine::pregel::{partition, PregelOptions};
use outcore::engine::shards::{ShardValues, ShardsOptions};
use outcore::engine::stream::{IoMode, Schedule, StreamOptions};
use outcore::engine::{EngineKind, RunOptions, RunStats, Runner};
use outcore::generate::{generate_into_store, EdgeGenerator, ErdosRenyi, ErdosRenyiConfig, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::Store;
use outcore::transport::InProcessTransport;

/// SplitMix64, for reproducible random graphs.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// `m` random edges over `0..n`, self-loops and duplicates included.
fn random_edges(seed: u64, n: u64, m: usize) -> Vec<(u64, u64, f64)> {
    let mut rng = Rng(seed);
    (0..m).map(|_| (rng.below(n), rng.below(n), 1.0)).collect()
}

/// Core numbers by peeling (Batagelj and Zaversnik 2003): repeatedly remove a vertex of
/// smallest remaining degree; its core number is the largest such degree seen so far. Each
/// edge end counts once per arc (both ends of an undirected edge, in + out on directed);
/// self-loops are skipped.
fn ref_core(n: u64, edges: &[(u64, u64, f64)]) -> Vec<u64> {
    let n = n as usize;
    let mut adj = vec![vec![]; n];
    for &(s, t, _) in edges.iter().filter(|e| e.0 != e.1) {
        adj[s as usize].push(t as usize);
        adj[t as usize].push(s as usize);
    }
    let mut degree: Vec<u64> = adj.iter().map(|a| a.len() as u64).collect();
    let (mut removed, mut core, mut k) = (vec![false; n], vec![0; n], 0);
    for _ in 0..n {
        let v = (0..n).filter(|&v| !removed[v]).min_by_key(|&v| degree[v]).unwrap();
        k = k.max(degree[v]);
        core[v] = k;
        removed[v] = true;
        for &u in &adj[v] {
            degree[u] = degree[u].saturating_sub(1);
        }
    }
    core
}

/// BFS along arcs; parent = the smallest vertex at the previous depth with an arc to it.
fn ref_bfs_tree(n: u64, edges: &[(u64, u64, f64)], directed: bool, source: u64) -> (Vec<u64>, Vec<u64>) {
    let n = n as usize;
    let mut out = vec![vec![]; n];
    for &(s, t, _) in edges {
        out[s as usize].push(t as usize);
        if !directed {
            out[t as usize].push(s as usize);
        }
    }
    let mut depth = vec![u64::MAX; n];
    depth[source as usize] = 0;
    let mut queue = VecDeque::from([source as usize]);
    while let Some(u) = queue.pop_front() {
        for &v in &out[u] {
            if depth[v] == u64::MAX {
                depth[v] = depth[u] + 1;
                queue.push_back(v);
            }
        }
    }
    let mut parent: Vec<u64> = (0..n as u64).collect();
    for v in 0..n {
        if depth[v] != 0 && depth[v] != u64::MAX {
            parent[v] = (0..n)
                .find(|&u| depth[u] != u64::MAX && depth[u] + 1 == depth[v] && out[u].contains(&v))
                .unwrap() as u64;
        }
    }
    (depth, parent)
}

#[test]
fn kcore_and_bfs_tree_match_brute_force_on_random_graphs() {
    for seed in 0..12 {
        for directed in [true, false] {
            let (n, m) = (20 + seed * 7, 40 + seed as usize * 25);
            let edges = random_edges(seed, n, m);
            let dir = tempfile::tempdir().unwrap();
            let s = store(dir.path(), n, &edges, directed, false);
            let r = runner(&s);
            let what = format!("seed {seed}, directed {directed}");
            assert_eq!(kcore::run(&r, &kcore::Config).unwrap().core, ref_core(n, &edges), "{what}");
            let source = seed % n;
            let got = bfs_parents::run(&r, &bfs_parents::Config { source }).unwrap();
            let (depth, parent) = ref_bfs_tree(n, &edges, directed, source);
            assert_eq!((got.depth, got.parent), (depth, parent), "{what}");
        }
    }
}

#[test]
fn kcore_of_a_clique_with_a_tail_and_a_bad_source() {
    // K4 on 0..4, a path 3-4-5, an isolated 6, a self-loop on 6.
    let edges = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (3, 4), (4, 5), (6, 6)];
    let edges: Vec<(u64, u64, f64)> = edges.iter().map(|&(s, t)| (s, t, 1.0)).collect();
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), 7, &edges, false, false);
    let r = runner(&s);
    let result = run_algorithm(&r, "kcore", &AlgorithmParams::default()).unwrap();
    assert_eq!(result.columns[0].1, outcore::algo::ValueColumn::Count(vec![3, 3, 3, 3, 1, 1, 0]));
    assert_eq!(result.summary["degeneracy"], 3);
    let err = run_algorithm(&r, "bfs-parents", &AlgorithmParams::default()).unwrap_err();
    assert!(err.to_string().contains("needs a source"), "{err}");
}

fn generated<G: EdgeGenerator + 'static>(generator: G, undirected: bool) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let options =
        ImportOptions { undirected: Some(undirected), memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let (store, _) =
        generate_into_store(generator, &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    (dir, store)
}

fn test_graphs() -> Vec<(&'static str, tempfile::TempDir, Store)> {
    let rmat = RmatConfig { scale: 9, edge_factor: 8, seed: 5, weights: false, ..RmatConfig::default() };
    let (rd, rs) = generated(Rmat::new(rmat).unwrap(), false);
    let er = ErdosRenyiConfig { vertices: 400, edges: 2000, seed: 3, self_loops: true, weights: false };
    let (ed, es) = generated(ErdosRenyi::new(er).unwrap(), true);
    vec![("rmat-9", rd, rs), ("er-400", ed, es)]
}

fn on(store: &Store, options: RunOptions, algorithm: &str, p: &AlgorithmParams) -> (AlgorithmResult, RunStats) {
    let runner = Runner::new(store, options);
    let result = run_algorithm(&runner, algorithm, p).unwrap_or_else(|e| panic!("{algorithm}: {e}"));
    (result, runner.finish(algorithm))
}

fn pregel(store: &Store, ranks: usize, algorithm: &str, p: &AlgorithmParams) -> AlgorithmResult {
    partition::partition(store, ranks, false, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new()).unwrap();
    let results = InProcessTransport::run(ranks, |t| {
        let options = RunOptions {
            engine: EngineKind::Pregel,
            memory: MemoryBudget::new(64 << 20),
            // Message files far smaller than a step's messages: splitting and merging happen.
            pregel: PregelOptions { message_file_size: Some(4096), ..PregelOptions::default() },
            ..RunOptions::default()
        };
        run_algorithm(&Runner::new(store, options).with_transport(Arc::new(t.clone())), algorithm, p)
    })
    .unwrap();
    results.into_iter().next().unwrap()
}

#[test]
fn out_of_core_engines_equal_inmem() {
    for (name, _dir, store) in test_graphs() {
        let inmem =
            RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 32), ..RunOptions::default() };
        let bfs = AlgorithmParams {
            source: Some(store.ids().unwrap().original(0).unwrap().to_string()),
            ..AlgorithmParams::default()
        };
        let none = AlgorithmParams::default();
        let expected_core = on(&store, inmem.clone(), "kcore", &none).0;
        let expected_tree = on(&store, inmem, "bfs-parents", &bfs).0;
        for ranks in [1, 3] {
            assert_eq!(pregel(&store, ranks, "kcore", &none), expected_core, "{name} kcore pregel {ranks}");
            assert_eq!(pregel(&store, ranks, "bfs-parents", &bfs), expected_tree, "{name} bfs-parents pregel {ranks}");
        }
        let stream = RunOptions {
            engine: EngineKind::Stream,
            memory: MemoryBudget::new(64 << 20),
            stream: StreamOptions {
                schedule: Schedule::Selective,
                io: IoMode::Auto,
                gap_threshold: Some(4096),
                block_bytes: 16 << 10,
                max_buffer_bytes: 16 << 10,
                ..StreamOptions::default()
            },
            ..RunOptions::default()
        };
        assert_eq!(on(&store, stream, "bfs-parents", &bfs).0, expected_tree, "{name} stream");
        let shards = RunOptions {
            engine: EngineKind::Shards,
            memory: MemoryBudget::new(512 << 10),
            // Values on disk: the fully external mechanics over several intervals.
            shards: ShardsOptions {
                delay_buffer_bytes: 2 << 10,
                values: ShardValues::Disk,
                ..ShardsOptions::default()
            },
            ..RunOptions::default()
        };
        let (got, stats) = on(&store, shards, "bfs-parents", &bfs);
        assert!(stats.figures.shards.as_ref().unwrap().shards >= 2, "{name}: the budget must force several shards");
        assert_eq!(got, expected_tree, "{name} shards");
        // A cache of 16 KiB in 512-byte pages: far below the adjacency, so pages are evicted.
        let cache = CacheOptions { page_size: 512, ..CacheOptions::default() };
        let memory = MemoryBudget::new(budget_for_cache_bytes(&store, &cache, 16 << 10));
        let cache = RunOptions { engine: EngineKind::Cache, memory, cache, ..RunOptions::default() };
        assert_eq!(on(&store, cache, "bfs-parents", &bfs).0, expected_tree, "{name} cache");
    }
}
