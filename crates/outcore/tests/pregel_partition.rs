//! `outcore partition` for the pregel engine as a W-rank job (threads over the in-process
//! transport, the code path of `mpirun -n W`): for W = 1..4, basic and recoded (GraphD §5's
//! 3-superstep recoding), its files are byte for byte those of the single-process, table-based
//! partitioner (rebuilt here in memory as the reference) on graphs of every naming: original u64
//! ids (dense and sparse), string ids; the recoding's sorts spill when their buffers are small;
//! a failing rank leaves no valid-looking partition and keeps the older one.

use std::io::Write;

use outcore::engine::pregel::partition::{self, PartitionJob};
use outcore::generate::{generate_into_store, EdgeGenerator, ErdosRenyi, ErdosRenyiConfig, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::{Direction, IdType, InMemoryCsr, Store};
use outcore::transport::{InProcessTransport, Transport};
use outcore::Error;

struct TestGraph {
    name: &'static str,
    _dir: tempfile::TempDir,
    store: Store,
}

fn generated<G: EdgeGenerator + 'static>(name: &'static str, generator: G, undirected: bool) -> TestGraph {
    let dir = tempfile::tempdir().unwrap();
    let options =
        ImportOptions { undirected: Some(undirected), memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let (store, _) =
        generate_into_store(generator, &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    TestGraph { name, _dir: dir, store }
}

fn rmat(scale: u32) -> TestGraph {
    let config = RmatConfig { scale, edge_factor: 16, seed: 5, weights: true, ..RmatConfig::default() };
    generated("rmat", Rmat::new(config).unwrap(), false)
}

fn er() -> TestGraph {
    let config = ErdosRenyiConfig { vertices: 300, edges: 1500, seed: 3, self_loops: false, weights: true };
    generated("er", ErdosRenyi::new(config).unwrap(), true)
}

/// An imported edge list: sparse u64 ids (original names far from dense ids), or string ids.
fn edge_list(name: &'static str, ids: IdType) -> TestGraph {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edges.txt");
    let mut file = std::fs::File::create(&path).unwrap();
    let mut x = 12345u64;
    for _ in 0..900 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let (a, b) = ((x >> 33) % 150, (x >> 13) % 150);
        match ids {
            IdType::U64 => writeln!(file, "{} {}", 1000 + 7919 * a, 1000 + 7919 * b).unwrap(),
            IdType::String => writeln!(file, "v{a} v{b}").unwrap(),
        }
    }
    drop(file);
    let options = ImportOptions { ids, memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let (store, _) =
        outcore::ingest::import(&[path], &dir.path().join("g"), &options, &NoProgress, &CancelToken::new()).unwrap();
    TestGraph { name, _dir: dir, store }
}

/// Every rank's `[vertices, edges-out, edges-in]` as the single-process partitioner wrote them:
/// a table of every vertex's name, the recoded names W·pos + rank counted along the ranks' arrays
/// (4 bytes in the edge streams when W·(|V| + 1) < 2^32, 8 bytes otherwise and for basic names).
fn reference(store: &Store, ranks: usize, recoded: bool) -> Vec<[Vec<u8>; 3]> {
    let n = store.num_vertices();
    let ids = store.ids().unwrap();
    let original_order = store.manifest().orderings.last().is_none_or(|o| o == "none");
    let basic: Vec<u64> =
        if original_order && ids.id_type() == IdType::U64 { ids.all_u64().unwrap() } else { (0..n).collect() };
    let w = ranks as u64;
    let mut next_position = vec![0u64; ranks];
    let names: Vec<u64> = if recoded {
        basic
            .iter()
            .map(|&b| {
                let rank = b % w;
                next_position[rank as usize] += 1;
                w * (next_position[rank as usize] - 1) + rank
            })
            .collect()
    } else {
        basic.clone()
    };
    let name_bytes = if recoded && w * (n + 1) < 1 << 32 { 4 } else { 8 };
    let out = store.csr(Direction::Out).unwrap().load().unwrap();
    let inn = store.is_directed().then(|| store.csr(Direction::In).unwrap().load().unwrap());
    let list = |csr: &InMemoryCsr, v: usize, bytes: &mut Vec<u8>| {
        let (start, end) = (csr.offsets[v] as usize, csr.offsets[v + 1] as usize);
        for e in start..end {
            bytes.extend_from_slice(&names[csr.targets[e] as usize].to_le_bytes()[..name_bytes]);
            if let Some(weights) = &csr.weights {
                bytes.extend_from_slice(&weights[e].to_le_bytes());
            }
        }
        (end - start) as u64
    };
    let mut files = vec![[Vec::new(), Vec::new(), Vec::new()]; ranks];
    for v in 0..n as usize {
        let f = &mut files[(basic[v] % w) as usize];
        let out_degree = list(&out, v, &mut f[1]);
        let in_degree = inn.as_ref().map_or(0, |csr| list(csr, v, &mut f[2]));
        for x in [names[v], v as u64, out_degree, in_degree] {
            f[0].extend_from_slice(&x.to_le_bytes());
        }
    }
    files
}

fn assert_matches_reference(g: &TestGraph, ranks: usize, recoded: bool) {
    let what = format!("{} W={ranks} recoded={recoded}", g.name);
    let dir = partition::partition_dir(&g.store, ranks, recoded);
    let info = partition::open(&g.store, ranks, recoded).unwrap();
    for (rank, expected) in reference(&g.store, ranks, recoded).iter().enumerate() {
        let rd = partition::rank_dir(&dir, rank);
        for (file, bytes) in ["vertices", "edges-out", "edges-in"].iter().zip(expected) {
            match std::fs::read(rd.join(file)) {
                Ok(got) => assert!(got == *bytes, "{what}: rank {rank} {file} differs"),
                Err(_) => assert!(*file == "edges-in" && !g.store.is_directed(), "{what}: rank {rank} lacks {file}"),
            }
        }
        let part = &info.parts[rank];
        assert_eq!(part.vertices * 32, expected[0].len() as u64, "{what}");
        assert_eq!((part.out_arcs + part.in_arcs) * info.arc_bytes(), (expected[1].len() + expected[2].len()) as u64);
    }
    let leftovers: Vec<_> = std::fs::read_dir(g.store.dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".parts"))
        .collect();
    assert!(leftovers.is_empty(), "{what}: {leftovers:?}");
}

#[test]
fn the_w_rank_job_writes_the_bytes_of_the_table_based_partitioner() {
    let graphs = [rmat(8), er(), edge_list("sparse-u64", IdType::U64), edge_list("string-ids", IdType::String)];
    for g in &graphs {
        for ranks in 1..=4 {
            for recoded in [false, true] {
                let job = PartitionJob {
                    store: &g.store,
                    recoded,
                    memory: MemoryBudget::new(64 << 20),
                    sort_buffer_bytes: None,
                    progress: &NoProgress,
                    cancel: &CancelToken::new(),
                };
                let outcomes = partition::partition_in_process(&job, ranks).unwrap();
                assert_eq!(outcomes.len(), ranks);
                assert_matches_reference(g, ranks, recoded);
                let arcs = g.store.num_arcs() * if g.store.is_directed() { 2 } else { 1 };
                for o in &outcomes {
                    assert_eq!(o.figures.csr_arcs_read, arcs, "every rank streams the whole CSR");
                }
                let asked: u64 = outcomes.iter().map(|o| o.figures.requests_sent).sum();
                let answered: u64 = outcomes.iter().map(|o| o.figures.requests_answered).sum();
                assert_eq!((asked, answered), if recoded { (arcs, arcs) } else { (0, 0) }, "{}", g.name);
            }
        }
    }
}

#[test]
fn recoding_sorts_spill_and_merge_when_they_exceed_their_buffers() {
    let g = rmat(10);
    for ranks in [1, 3] {
        let job = PartitionJob {
            store: &g.store,
            recoded: true,
            memory: MemoryBudget::new(64 << 20),
            sort_buffer_bytes: Some(16 << 10),
            progress: &NoProgress,
            cancel: &CancelToken::new(),
        };
        let outcomes = partition::partition_in_process(&job, ranks).unwrap();
        // ~32k requests per direction into buffers of ~680 records: dozens of runs per sort.
        for o in &outcomes {
            assert!(o.figures.sort_runs_spilled >= 20, "W={ranks}: {:?}", o.figures);
        }
        assert_matches_reference(&g, ranks, true);
    }
}

#[test]
fn a_failing_rank_leaves_no_valid_looking_partition_and_keeps_the_older_one() {
    let g = rmat(8);
    let budget = MemoryBudget::new(64 << 20);
    partition::partition(&g.store, 3, false, budget, &NoProgress, &CancelToken::new()).unwrap();
    let before = partition::open(&g.store, 3, false).unwrap();
    for recoded in [false, true] {
        let (running, stopped) = (CancelToken::new(), CancelToken::new());
        stopped.cancel();
        let err = InProcessTransport::run(3, |t| {
            // Rank 2 is interrupted at its first check; the others must not publish anything.
            let cancel = if t.rank() == 2 { &stopped } else { &running };
            let job = PartitionJob {
                store: &g.store,
                recoded,
                memory: MemoryBudget::new(16 << 20),
                sort_buffer_bytes: None,
                progress: &NoProgress,
                cancel,
            };
            partition::partition_rank(&job, t)
        })
        .unwrap_err();
        assert!(matches!(err, Error::Interrupted), "{err}");
        let leftovers: Vec<_> = std::fs::read_dir(g.store.dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|name| name.starts_with(".parts"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
    assert_eq!(partition::open(&g.store, 3, false).unwrap(), before, "the older partition stays");
    assert!(!partition::partition_dir(&g.store, 3, true).exists());
    assert_matches_reference(&g, 3, false);
}

#[test]
fn a_budget_too_small_for_a_rank_is_a_clear_error() {
    let g = er();
    let err = partition::partition(&g.store, 4, true, MemoryBudget::new(8 << 20), &NoProgress, &CancelToken::new())
        .unwrap_err();
    assert!(matches!(err, Error::MemoryBudget(_)), "{err}");
    assert!(err.to_string().contains("per rank"), "{err}");
    let err = partition::partition(&g.store, 0, false, MemoryBudget::new(8 << 20), &NoProgress, &CancelToken::new())
        .unwrap_err();
    assert!(err.to_string().contains("--ranks"), "{err}");
}
