//! k-means (`algo::kmeans`) checked independently of the engines' agreement: points written as
//! an edge list (`point dimension coordinate`, zero coordinates included) and imported with the
//! real importer; well separated blobs give back their generating labels (up to relabelling), a
//! random set gives exactly what a plain Lloyd's iteration written here gives from the same
//! initial centres, on inmem and on the pregel engine; bad inputs are clear errors.

use std::sync::Arc;

use outcore::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use outcore::engine::pregel::{partition, PregelOptions};
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::ingest::{import, ImportOptions, InputFormat};
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress};
use outcore::store::Store;
use outcore::transport::InProcessTransport;
use outcore::Error;

/// A tiny deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Imports points (one arc `i → j` of weight `x_j` per coordinate) through an edge-list file.
fn points_store(dir: &tempfile::TempDir, points: &[Vec<f64>]) -> Store {
    let text: String = points
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.iter().enumerate().map(move |(j, x)| format!("{i} {j} {x}\n")))
        .collect();
    let path = dir.path().join("points.el");
    std::fs::write(&path, text).unwrap();
    let options =
        ImportOptions { weighted: Some(true), memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    import(&[path], &dir.path().join("store"), &options, &NoProgress, &CancelToken::new()).unwrap().0
}

fn kmeans_params(k: usize, seed: Option<u64>) -> AlgorithmParams {
    AlgorithmParams { k: Some(k), seed, ..AlgorithmParams::default() }
}

fn inmem(store: &Store, params: &AlgorithmParams) -> outcore::Result<AlgorithmResult> {
    let options =
        RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 30), ..RunOptions::default() };
    run_algorithm(&Runner::new(store, options), "kmeans", params)
}

fn pregel(store: &Store, ranks: usize, recoded: bool, params: &AlgorithmParams) -> outcore::Result<AlgorithmResult> {
    partition::partition(store, ranks, recoded, MemoryBudget::new(64 << 20), &NoProgress, &CancelToken::new())?;
    let mut results = InProcessTransport::run(ranks, |t| {
        let options = RunOptions {
            engine: EngineKind::Pregel,
            memory: MemoryBudget::new(64 << 20),
            pregel: PregelOptions { message_file_size: Some(64 << 10), recoded, ..PregelOptions::default() },
            ..RunOptions::default()
        };
        run_algorithm(&Runner::new(store, options).with_transport(Arc::new(t.clone())), "kmeans", params)
    })?;
    Ok(results.swap_remove(0))
}

fn clusters(result: &AlgorithmResult) -> Vec<u64> {
    match &result.columns[0] {
        (name, ValueColumn::Count(c)) if name == "cluster" => c.clone(),
        other => panic!("unexpected column {other:?}"),
    }
}

/// Plain Lloyd's iteration: the first k points are the centres; assign to the nearest (smallest
/// index on ties), stop when nothing changes; centres are means, an empty cluster keeps its centre.
fn lloyd(points: &[Vec<f64>], k: usize, max_iterations: usize) -> Vec<u64> {
    let d = points[0].len();
    let mut centres: Vec<Vec<f64>> = points[..k].to_vec();
    let mut assignment = vec![u64::MAX; points.len()];
    for _ in 0..max_iterations {
        let mut changed = false;
        for (p, a) in points.iter().zip(assignment.iter_mut()) {
            let distance = |c: &Vec<f64>| p.iter().zip(c).map(|(x, m)| (x - m) * (x - m)).sum::<f64>();
            let mut best = 0;
            for c in 1..k {
                if distance(&centres[c]) < distance(&centres[best]) {
                    best = c;
                }
            }
            changed |= *a != best as u64;
            *a = best as u64;
        }
        if !changed {
            break;
        }
        for (c, centre) in centres.iter_mut().enumerate() {
            let members: Vec<&Vec<f64>> =
                points.iter().zip(&assignment).filter(|(_, &a)| a == c as u64).map(|(p, _)| p).collect();
            if !members.is_empty() {
                for j in 0..d {
                    let sum = members.iter().map(|p| p[j]).fold(None, |s: Option<f64>, x| Some(s.map_or(x, |s| s + x)));
                    centre[j] = sum.unwrap() / members.len() as f64;
                }
            }
        }
    }
    assignment
}

/// Four blobs in 3-d, 100 apart, coordinates within ±10 in steps of 1/4 (sums exact in f64).
/// The first four points come from different blobs, so first-k initial centres separate them.
fn blobs(n: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<usize>) {
    let centres = [[0.0, 0.0, 0.0], [100.0, 0.0, 0.0], [0.0, 100.0, 0.0], [0.0, 0.0, 100.0]];
    let mut rng = Rng(seed);
    let labels: Vec<usize> = (0..n).map(|i| if i < 4 { 3 - i } else { rng.below(4) as usize }).collect();
    let points =
        labels.iter().map(|&l| centres[l].iter().map(|c| c + (rng.below(81) as f64 - 40.0) / 4.0).collect()).collect();
    (points, labels)
}

#[test]
fn well_separated_blobs_give_back_their_labels_on_inmem_and_pregel() {
    let dir = tempfile::tempdir().unwrap();
    let (points, labels) = blobs(400, 11);
    assert!(points.iter().flatten().any(|&x| x == 0.0), "zero coordinates are part of the test");
    let store = points_store(&dir, &points);
    assert_eq!(store.num_arcs(), 400 * 3, "the importer keeps zero weights");
    for result in
        [inmem(&store, &kmeans_params(4, None)).unwrap(), pregel(&store, 3, true, &kmeans_params(4, None)).unwrap()]
    {
        let got = clusters(&result);
        // Up to relabelling: a bijection label -> cluster.
        let mut map = [None; 4];
        for (&l, &c) in labels.iter().zip(&got) {
            assert_eq!(*map[l].get_or_insert(c), c, "blob {l} split over clusters");
        }
        let mut images: Vec<u64> = map.iter().map(|m| m.unwrap()).collect();
        images.sort_unstable();
        assert_eq!(images, [0, 1, 2, 3]);
        assert_eq!(result.summary["dimensions"], 3);
    }
}

#[test]
fn a_random_set_equals_plain_lloyd_on_inmem_and_pregel() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    // 90 points in 2-d, coordinates multiples of 1/8 in [0, 16): overlapping clusters, many steps.
    let points: Vec<Vec<f64>> = (0..90).map(|_| (0..2).map(|_| rng.below(128) as f64 / 8.0).collect()).collect();
    let store = points_store(&dir, &points);
    for k in [1, 3, 5] {
        let expected = lloyd(&points, k, 100);
        let got = clusters(&inmem(&store, &kmeans_params(k, None)).unwrap());
        assert_eq!(got, expected, "inmem k = {k}");
        for (ranks, recoded) in [(2, false), (3, true)] {
            let got = clusters(&pregel(&store, ranks, recoded, &kmeans_params(k, None)).unwrap());
            assert_eq!(got, expected, "pregel k = {k} W = {ranks} recoded = {recoded}");
        }
    }
    // A cap on iterations stops early, the same on both.
    let capped = AlgorithmParams { iterations: Some(2), ..kmeans_params(5, None) };
    let got = clusters(&inmem(&store, &capped).unwrap());
    assert_eq!(got, lloyd(&points, 5, 2));
    assert_eq!(clusters(&pregel(&store, 2, false, &capped).unwrap()), got);
    // Seeded initial centres: the same on both engines, and deterministic.
    let seeded = kmeans_params(4, Some(9));
    let a = clusters(&inmem(&store, &seeded).unwrap());
    assert_eq!(a, clusters(&inmem(&store, &seeded).unwrap()));
    assert_eq!(a, clusters(&pregel(&store, 4, false, &seeded).unwrap()));
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Point 2 has three coordinates and point 5 one (2 each expected: 12 arcs over 6 points).
    let mut points: Vec<Vec<f64>> = (0..6).map(|i| vec![i as f64, 1.0]).collect();
    points[2].push(4.0);
    points[5].pop();
    let store = points_store(&dir, &points);
    for err in [
        inmem(&store, &kmeans_params(2, None)).unwrap_err(),
        pregel(&store, 2, false, &kmeans_params(2, None)).unwrap_err(),
    ] {
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains("point 2 has 3 coordinates"), "{err}");
    }
    let err = inmem(&store, &kmeans_params(7, None)).unwrap_err();
    assert!(err.to_string().contains("k <= the number of points (6)"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let uneven = points_store(&dir, &[vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]]);
    let err = inmem(&uneven, &kmeans_params(2, None)).unwrap_err();
    assert!(err.to_string().contains("same number of coordinates"), "{err}");
}

#[test]
fn the_points_format_imports_the_same_store_and_names_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (points, _) = blobs(60, 3);
    let by_edges = points_store(&dir, &points);
    let mut text = String::from("# x y z\n");
    for p in &points {
        text.push_str(&format!("{} {},{}\n\n", p[0], p[1], p[2]));
    }
    std::fs::write(dir.path().join("points.txt"), text).unwrap();
    let options =
        ImportOptions { format: InputFormat::Points, memory: MemoryBudget::new(64 << 20), ..ImportOptions::default() };
    let import_points = |name: &str, out: &str| {
        import(&[dir.path().join(name)], &dir.path().join(out), &options, &NoProgress, &CancelToken::new())
    };
    let (store, report) = import_points("points.txt", "from-points").unwrap();
    assert!(report.format.contains("points"), "{}", report.format);
    assert!(store.is_directed() && store.is_weighted());
    assert_eq!((store.num_vertices(), store.num_arcs()), (60, 180));
    let expected = clusters(&inmem(&by_edges, &kmeans_params(4, None)).unwrap());
    assert_eq!(clusters(&inmem(&store, &kmeans_params(4, None)).unwrap()), expected);

    std::fs::write(dir.path().join("bad.txt"), "1 2\n3 4\n5\n").unwrap();
    let err = import_points("bad.txt", "bad").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("bad.txt") && text.contains('3') && text.contains("point 2 has 1 coordinates"), "{text}");
    assert!(!dir.path().join("bad").exists(), "nothing half-written");
}
