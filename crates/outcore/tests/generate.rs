//! Generators (R-MAT, Erdős–Rényi, grid), the edge-file writers and the generated record source.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::sync::Mutex;

use outcore::generate::{write_edges, Edge};
use outcore::generate::{
    EdgeGenerator, ErdosRenyi, ErdosRenyiConfig, GeneratedSource, Generator, Grid, GridConfig, LabelPermutation, Rmat,
    RmatConfig, EDGES_PER_CHUNK,
};
use outcore::ingest::{InputRecord, RawId, RecordSource};
use outcore::runtime::{CancelToken, NoProgress, Progress, ProgressBar, ProgressUnit};

fn rmat(scale: u32, seed: u64) -> Rmat {
    Rmat::new(RmatConfig { seed, ..RmatConfig::with_scale(scale) }).expect("valid rmat config")
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool").install(f)
}

fn all_edges(generator: &dyn EdgeGenerator) -> Vec<Edge> {
    outcore::generate::EdgeStream::new(generator).collect()
}

/// Total (in + out) degree of every vertex.
fn degrees(generator: &dyn EdgeGenerator) -> Vec<u64> {
    let mut degree = vec![0u64; generator.num_vertices() as usize];
    for edge in outcore::generate::EdgeStream::new(generator) {
        degree[edge.src as usize] += 1;
        degree[edge.dst as usize] += 1;
    }
    degree
}

// ---------------------------------------------------------------- R-MAT

#[test]
fn rmat_edge_count_and_id_range_are_exact() {
    let generator = rmat(10, 7);
    assert_eq!(generator.num_vertices(), 1024);
    assert_eq!(generator.num_edges(), 16 * 1024);
    let edges = all_edges(&generator);
    assert_eq!(edges.len(), 16 * 1024);
    assert!(edges.iter().all(|e| e.src < 1024 && e.dst < 1024));
    assert!(edges.iter().all(|e| e.weight.is_none()));

    let custom = Rmat::new(RmatConfig { edge_factor: 3, ..RmatConfig::with_scale(5) }).unwrap();
    assert_eq!(all_edges(&custom).len(), 3 * 32);
}

#[test]
fn rmat_same_seed_same_edges_whatever_the_threads_or_ranges() {
    let generator = rmat(12, 42);
    let sequential = all_edges(&generator);
    // Any sub-range gives the same edges as the full stream.
    for (first, count) in [(0u64, 1u64), (12_345, 777), (EDGES_PER_CHUNK - 3, 10), (sequential.len() as u64 - 5, 100)] {
        let mut part = Vec::new();
        generator.edges_in(first, count, &mut part);
        let end = (first + count).min(sequential.len() as u64) as usize;
        assert_eq!(part, sequential[first as usize..end], "range {first}+{count}");
    }
    // The parallel paths (file writer and store source) give the same bytes/records with 1 and 4 threads.
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.txt");
    let four = dir.path().join("four.txt");
    in_pool(1, || write_edges(&one, &generator, &NoProgress, &CancelToken::new())).unwrap();
    in_pool(4, || write_edges(&four, &generator, &NoProgress, &CancelToken::new())).unwrap();
    let text_one = std::fs::read(&one).unwrap();
    assert_eq!(text_one, std::fs::read(&four).unwrap());
    assert_eq!(read_text_edges(&one), sequential.iter().map(|e| (e.src, e.dst, None)).collect::<Vec<_>>());

    let records_one =
        in_pool(1, || read_all_records(GeneratedSource::new(generator.clone()).with_all_vertices(false), 1000));
    let records_four =
        in_pool(4, || read_all_records(GeneratedSource::new(generator.clone()).with_all_vertices(false), 999));
    assert_eq!(records_one, records_four);
    assert_eq!(records_one.len(), sequential.len());

    // A fresh generator from the same config agrees too.
    assert_eq!(all_edges(&rmat(12, 42)), sequential);
}

#[test]
fn rmat_different_seeds_differ() {
    let a = all_edges(&rmat(10, 1));
    let b = all_edges(&rmat(10, 2));
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    // A few coincidences are possible (hub-to-hub edges); most edges must differ.
    assert!(same < a.len() / 100, "{same} of {} edges identical across seeds", a.len());
}

#[test]
fn rmat_degrees_are_heavily_skewed() {
    let generator = rmat(14, 1);
    let degree = degrees(&generator);
    let mean = 2.0 * generator.num_edges() as f64 / generator.num_vertices() as f64;
    let max = *degree.iter().max().unwrap() as f64;
    assert!(max > 30.0 * mean, "max degree {max} vs mean {mean}");
    // And many vertices are isolated, as in Graph500.
    let isolated = degree.iter().filter(|&&d| d == 0).count();
    assert!(isolated > degree.len() / 20, "{isolated} isolated vertices");

    // Erdős–Rényi of the same size is not skewed: a contrast that shows the test can fail.
    let uniform =
        ErdosRenyi::new(ErdosRenyiConfig { vertices: 1 << 14, edges: 16 << 14, ..Default::default() }).unwrap();
    let uniform_max = *degrees(&uniform).iter().max().unwrap() as f64;
    assert!(uniform_max < 3.0 * mean, "erdos-renyi max degree {uniform_max} vs mean {mean}");
}

#[test]
fn rmat_quadrant_probabilities_follow_the_config() {
    // Scale 1 without relabelling: each edge is one quadrant choice.
    let config = RmatConfig { scale: 1, edge_factor: 100_000, permute_labels: false, ..RmatConfig::default() };
    let generator = Rmat::new(config).unwrap();
    let mut counts = [0u64; 4];
    for edge in all_edges(&generator) {
        counts[(edge.src * 2 + edge.dst) as usize] += 1;
    }
    let total = generator.num_edges() as f64;
    for (count, expected) in counts.iter().zip([0.57, 0.19, 0.19, 0.05]) {
        let fraction = *count as f64 / total;
        assert!((fraction - expected).abs() < 0.01, "quadrant fractions {counts:?}");
    }
    // Without relabelling vertex 0 is the hub; with it, the hub moves.
    let raw = Rmat::new(RmatConfig { permute_labels: false, ..RmatConfig::with_scale(12) }).unwrap();
    let raw_degree = degrees(&raw);
    let hub = (0..raw_degree.len()).max_by_key(|&v| raw_degree[v]).unwrap();
    assert_eq!(hub, 0);
    let permuted = rmat(12, 1);
    let permuted_degree = degrees(&permuted);
    let permuted_hub = (0..permuted_degree.len()).max_by_key(|&v| permuted_degree[v]).unwrap() as u64;
    assert_eq!(permuted_hub, permuted.label(0));
    // Relabelling is a bijection, so the degree multiset is unchanged.
    let (mut sorted_raw, mut sorted_permuted) = (raw_degree.clone(), permuted_degree.clone());
    sorted_raw.sort_unstable();
    sorted_permuted.sort_unstable();
    assert_eq!(sorted_raw, sorted_permuted);
}

#[test]
fn label_permutation_is_a_bijection_that_moves_most_labels() {
    for bits in 0..=16u32 {
        for key in [0u64, 1, 0xdead_beef] {
            let permutation = LabelPermutation::new(bits, key);
            let n = 1u64 << bits;
            let mut seen = vec![false; n as usize];
            let mut fixed_points = 0;
            for x in 0..n {
                let y = permutation.apply(x);
                assert!(y < n, "bits {bits}: {x} -> {y} out of range");
                assert!(!seen[y as usize], "bits {bits} key {key}: {y} hit twice");
                seen[y as usize] = true;
                fixed_points += u64::from(x == y);
            }
            if bits >= 8 {
                assert!(fixed_points < n / 16, "bits {bits}: {fixed_points} fixed points");
            }
        }
    }
    // Large domains are cheap and still map into range.
    let big = LabelPermutation::new(40, 9);
    for x in [0u64, 1, (1 << 40) - 1, 123_456_789_012] {
        assert!(big.apply(x) < 1 << 40);
    }
    assert_ne!(LabelPermutation::new(12, 1).apply(5), LabelPermutation::new(12, 2).apply(5));
}

#[test]
fn rmat_weights_are_in_the_unit_interval() {
    let generator = Rmat::new(RmatConfig { weights: true, ..RmatConfig::with_scale(8) }).unwrap();
    assert!(generator.weighted());
    let edges = all_edges(&generator);
    assert!(edges.iter().all(|e| matches!(e.weight, Some(w) if w > 0.0 && w <= 1.0)));
    let mean: f64 = edges.iter().map(|e| e.weight.unwrap()).sum::<f64>() / edges.len() as f64;
    assert!((mean - 0.5).abs() < 0.02, "mean weight {mean}");
    // Weights do not change the structure.
    let unweighted = all_edges(&rmat(8, 1));
    assert!(edges.iter().zip(&unweighted).all(|(a, b)| (a.src, a.dst) == (b.src, b.dst)));
}

#[test]
fn rmat_rejects_bad_configs() {
    let bad = [
        RmatConfig { a: 0.6, b: 0.3, c: 0.3, ..RmatConfig::default() },
        RmatConfig { a: -0.1, ..RmatConfig::default() },
        RmatConfig { c: f64::NAN, ..RmatConfig::default() },
        RmatConfig { scale: 49, ..RmatConfig::default() },
        RmatConfig { edge_factor: 0, ..RmatConfig::default() },
        RmatConfig { scale: 48, edge_factor: 1 << 20, ..RmatConfig::default() },
    ];
    for config in bad {
        let message = Rmat::new(config.clone()).expect_err(&format!("{config:?} accepted")).to_string();
        assert!(message.contains("rmat"), "{message}");
    }
    assert!(Rmat::new(RmatConfig::with_scale(0)).is_ok());
}

// ---------------------------------------------------------------- Erdős–Rényi and grid

#[test]
fn erdos_renyi_counts_range_and_self_loops() {
    let config = ErdosRenyiConfig { vertices: 100, edges: 5000, seed: 3, ..Default::default() };
    let generator = ErdosRenyi::new(config.clone()).unwrap();
    let edges = all_edges(&generator);
    assert_eq!(edges.len(), 5000);
    assert!(edges.iter().all(|e| e.src < 100 && e.dst < 100 && e.src != e.dst && e.weight.is_none()));
    // Every vertex is hit with 10000 endpoints over 100 vertices.
    let touched: HashSet<u64> = edges.iter().flat_map(|e| [e.src, e.dst]).collect();
    assert_eq!(touched.len(), 100);
    assert_eq!(all_edges(&ErdosRenyi::new(config.clone()).unwrap()), edges);
    assert_ne!(all_edges(&ErdosRenyi::new(ErdosRenyiConfig { seed: 4, ..config.clone() }).unwrap()), edges);

    let with_loops = ErdosRenyi::new(ErdosRenyiConfig { self_loops: true, weights: true, ..config }).unwrap();
    let edges = all_edges(&with_loops);
    assert!(edges.iter().any(|e| e.src == e.dst));
    assert!(edges.iter().all(|e| matches!(e.weight, Some(w) if w > 0.0 && w <= 1.0)));

    let pair = ErdosRenyi::new(ErdosRenyiConfig { vertices: 2, edges: 100, ..Default::default() }).unwrap();
    assert!(all_edges(&pair).iter().all(|e| (e.src, e.dst) == (0, 1) || (e.src, e.dst) == (1, 0)));
    assert!(ErdosRenyi::new(ErdosRenyiConfig { vertices: 1, edges: 1, ..Default::default() }).is_err());
    assert!(ErdosRenyi::new(ErdosRenyiConfig { vertices: 0, edges: 0, ..Default::default() }).is_ok());
}

#[test]
fn grid_has_exactly_the_four_neighbour_edges() {
    let (rows, cols) = (3u64, 4u64);
    let undirected = Grid::new(GridConfig { rows, cols, ..Default::default() }).unwrap();
    assert_eq!(undirected.num_vertices(), 12);
    assert_eq!(undirected.num_edges(), rows * (cols - 1) + (rows - 1) * cols);
    assert_eq!(undirected.directed(), Some(false));
    let edges = all_edges(&undirected);
    let mut pairs = HashSet::new();
    for e in &edges {
        assert!(e.src < e.dst, "{e:?}");
        let (r1, c1, r2, c2) = (e.src / cols, e.src % cols, e.dst / cols, e.dst % cols);
        assert_eq!(r1.abs_diff(r2) + c1.abs_diff(c2), 1, "{e:?} joins non-neighbours");
        assert!(pairs.insert((e.src, e.dst)));
    }
    assert_eq!(pairs.len(), 17);
    // Corner 0 has neighbours 1 and 4; the centre vertex 5 has four.
    let degree = degrees(&undirected);
    assert_eq!(degree[0], 2);
    assert_eq!(degree[5], 4);
    assert_eq!(degree.iter().sum::<u64>(), 2 * 17);

    let directed = Grid::new(GridConfig { rows, cols, directed: true, ..Default::default() }).unwrap();
    assert_eq!(directed.directed(), Some(true));
    let arcs: HashSet<(u64, u64)> = all_edges(&directed).iter().map(|e| (e.src, e.dst)).collect();
    assert_eq!(arcs.len(), 34);
    assert!(pairs.iter().all(|&(a, b)| arcs.contains(&(a, b)) && arcs.contains(&(b, a))));

    let single = Grid::new(GridConfig { rows: 1, cols: 1, ..Default::default() }).unwrap();
    assert_eq!((single.num_vertices(), single.num_edges()), (1, 0));
    let line = Grid::new(GridConfig { rows: 5, cols: 1, ..Default::default() }).unwrap();
    assert_eq!(all_edges(&line).iter().map(|e| (e.src, e.dst)).collect::<Vec<_>>(), [(0, 1), (1, 2), (2, 3), (3, 4)]);
    assert!(Grid::new(GridConfig { rows: 0, cols: 3, ..Default::default() }).is_err());
    assert!(Grid::new(GridConfig { rows: u64::MAX, cols: 3, ..Default::default() }).is_err());
}

#[test]
fn generator_enum_delegates_to_the_chosen_generator() {
    let grid = Grid::new(GridConfig { rows: 2, cols: 3, ..Default::default() }).unwrap();
    let chosen = Generator::from(grid.clone());
    assert_eq!((chosen.name(), chosen.num_vertices(), chosen.num_edges()), ("grid", 6, 7));
    assert_eq!(chosen.directed(), Some(false));
    assert_eq!(chosen.description(), grid.description());
    assert_eq!(all_edges(&chosen), all_edges(&grid));
    let chosen = Generator::from(rmat(6, 9));
    assert_eq!(chosen.name(), "rmat");
    assert!(chosen.description().contains("scale 6") && chosen.description().contains("seed 9"));
    assert_eq!(all_edges(&chosen), all_edges(&rmat(6, 9)));
}

// ---------------------------------------------------------------- writers

type TextEdge = (u64, u64, Option<f64>);

fn parse_text_edges(text: &str) -> Vec<TextEdge> {
    text.lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert!(fields.len() == 2 || fields.len() == 3, "bad line {line:?}");
            let weight = fields.get(2).map(|w| w.parse::<f64>().expect("weight"));
            (fields[0].parse().expect("src"), fields[1].parse().expect("dst"), weight)
        })
        .collect()
}

fn decompressed(path: &Path) -> Vec<u8> {
    let file = std::fs::File::open(path).unwrap();
    let mut bytes = Vec::new();
    let name = path.to_string_lossy();
    if name.ends_with(".gz") {
        flate2::read::MultiGzDecoder::new(file).read_to_end(&mut bytes).unwrap();
    } else if name.ends_with(".zst") {
        zstd::Decoder::new(file).unwrap().read_to_end(&mut bytes).unwrap();
    } else {
        std::io::BufReader::new(file).read_to_end(&mut bytes).unwrap();
    }
    bytes
}

fn read_text_edges(path: &Path) -> Vec<TextEdge> {
    parse_text_edges(&String::from_utf8(decompressed(path)).unwrap())
}

fn read_binary_edges(path: &Path, width: usize) -> Vec<(u64, u64)> {
    let bytes = decompressed(path);
    assert_eq!(bytes.len() % (2 * width), 0);
    let id = |b: &[u8]| {
        if width == 4 {
            u32::from_le_bytes(b.try_into().unwrap()) as u64
        } else {
            u64::from_le_bytes(b.try_into().unwrap())
        }
    };
    bytes.chunks(2 * width).map(|pair| (id(&pair[..width]), id(&pair[width..]))).collect()
}

fn only_file_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn text_writers_round_trip_plain_and_compressed() {
    let generator = Rmat::new(RmatConfig { weights: true, ..RmatConfig::with_scale(11) }).unwrap();
    let expected: Vec<TextEdge> = all_edges(&generator).iter().map(|e| (e.src, e.dst, e.weight)).collect();
    for name in ["g.txt", "g.el", "g.tsv.gz", "g.edges.zst", "g"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        let report = write_edges(&path, &generator, &NoProgress, &CancelToken::new()).unwrap();
        assert_eq!(report.edges, generator.num_edges());
        assert_eq!(report.file_bytes, std::fs::metadata(&path).unwrap().len());
        // Weights read back bit for bit (shortest round-trip formatting).
        let read = read_text_edges(&path);
        assert_eq!(read.len(), expected.len(), "{name}");
        assert!(
            read.iter()
                .zip(&expected)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && a.2.map(f64::to_bits) == b.2.map(f64::to_bits)),
            "{name}"
        );
        if name.ends_with(".gz") || name.ends_with(".zst") {
            assert!(report.file_bytes < report.uncompressed_bytes, "{name} not compressed");
        }
        assert_eq!(only_file_in(dir.path()), [name], "temporary files left behind");
    }
}

#[test]
fn binary_writers_round_trip() {
    let generator = rmat(12, 5);
    let expected: Vec<(u64, u64)> = all_edges(&generator).iter().map(|e| (e.src, e.dst)).collect();
    let dir = tempfile::tempdir().unwrap();
    for (name, width) in [("g.bin32", 4), ("g.bin64", 8), ("g.bin32.gz", 4), ("g.bin64.zst", 8)] {
        let path = dir.path().join(name);
        write_edges(&path, &generator, &NoProgress, &CancelToken::new()).unwrap();
        assert_eq!(read_binary_edges(&path, width), expected, "{name}");
    }
    assert_eq!(std::fs::metadata(dir.path().join("g.bin64")).unwrap().len(), 16 * generator.num_edges());
}

#[test]
fn binary_writers_refuse_weights_and_wide_ids() {
    let dir = tempfile::tempdir().unwrap();
    let weighted = Rmat::new(RmatConfig { weights: true, ..RmatConfig::with_scale(4) }).unwrap();
    let error = write_edges(&dir.path().join("w.bin64"), &weighted, &NoProgress, &CancelToken::new()).unwrap_err();
    assert!(error.to_string().contains("weights"), "{error}");
    let wide = Rmat::new(RmatConfig { edge_factor: 1, ..RmatConfig::with_scale(33) }).unwrap();
    let error = write_edges(&dir.path().join("w.bin32"), &wide, &NoProgress, &CancelToken::new()).unwrap_err();
    assert!(error.to_string().contains("32-bit"), "{error}");
    assert!(only_file_in(dir.path()).is_empty());
}

#[test]
fn cancelled_write_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancelToken::new();
    cancel.cancel();
    let error = write_edges(&dir.path().join("g.txt"), &rmat(10, 1), &NoProgress, &cancel).unwrap_err();
    assert!(matches!(error, outcore::Error::Interrupted));
    assert!(only_file_in(dir.path()).is_empty());
}

#[derive(Default)]
struct Recorder {
    bars: Mutex<Vec<(String, Option<u64>, ProgressUnit)>>,
    position: std::sync::Arc<Mutex<u64>>,
}

struct RecordingBar(std::sync::Arc<Mutex<u64>>);

impl ProgressBar for RecordingBar {
    fn inc(&self, delta: u64) {
        *self.0.lock().unwrap() += delta;
    }
    fn set_position(&self, position: u64) {
        *self.0.lock().unwrap() = position;
    }
    fn set_message(&self, _: &str) {}
    fn finish(&self) {}
}

impl Progress for Recorder {
    fn start(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressBar> {
        self.bars.lock().unwrap().push((label.to_string(), total, unit));
        Box::new(RecordingBar(self.position.clone()))
    }
    fn note(&self, _: &str) {}
}

#[test]
fn writer_reports_edges_progress() {
    let dir = tempfile::tempdir().unwrap();
    let generator = rmat(13, 1);
    let recorder = Recorder::default();
    write_edges(&dir.path().join("g.txt"), &generator, &recorder, &CancelToken::new()).unwrap();
    let bars = recorder.bars.lock().unwrap();
    assert_eq!(bars.len(), 1);
    assert_eq!((bars[0].1, bars[0].2), (Some(generator.num_edges()), ProgressUnit::Edges));
    assert_eq!(*recorder.position.lock().unwrap(), generator.num_edges());
}

// ---------------------------------------------------------------- record source

fn read_all_records(mut source: impl RecordSource, batch: usize) -> Vec<InputRecord> {
    let mut records = Vec::new();
    loop {
        let before = records.len();
        let more = source.read_batch(&mut records, batch).unwrap();
        assert!(records.len() - before <= batch);
        if !more {
            break;
        }
    }
    // Exhausted stays exhausted.
    assert!(!source.read_batch(&mut records, batch).unwrap());
    records
}

#[test]
fn generated_source_yields_edges_then_every_vertex() {
    let generator = Grid::new(GridConfig { rows: 3, cols: 3, weights: true, ..Default::default() }).unwrap();
    let source = GeneratedSource::new(generator.clone());
    let info = source.info();
    assert_eq!(info.directed, Some(false));
    assert_eq!(info.weighted, Some(true));
    assert!(info.format_description.contains("grid"));
    assert!(info.total_bytes > 0);
    let records = read_all_records(source, 5);
    let edges = all_edges(&generator);
    assert_eq!(records.len(), edges.len() + 9);
    for (record, edge) in records.iter().zip(&edges) {
        assert_eq!(
            *record,
            InputRecord::Edge { src: RawId::U64(edge.src), dst: RawId::U64(edge.dst), weight: edge.weight }
        );
    }
    let vertices: Vec<InputRecord> = (0..9).map(|v| InputRecord::Vertex(RawId::U64(v))).collect();
    assert_eq!(records[edges.len()..], vertices[..]);

    // R-MAT leaves isolated vertices; the source still names all 2^scale of them.
    let generator = rmat(8, 3);
    let mut source = GeneratedSource::new(generator.clone());
    let mut records = Vec::new();
    while source.read_batch(&mut records, 1 << 20).unwrap() {}
    let named: HashSet<u64> = records
        .iter()
        .filter_map(|r| match r {
            InputRecord::Vertex(RawId::U64(v)) => Some(*v),
            _ => None,
        })
        .collect();
    assert_eq!(named.len(), 256);
    assert_eq!(source.bytes_consumed(), source.info().total_bytes);
    assert_eq!(source.info().directed, None);
}
