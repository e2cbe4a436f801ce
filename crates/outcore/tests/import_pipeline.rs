//! The import pipeline against the in-memory store builder, under tiny memory budgets, with
//! failures injected at every stage, and with a real peak-RSS measurement in a child process.

use std::path::{Path, PathBuf};
use std::process::Command;

use outcore::engine::shards::busiest_vertex;
use outcore::ingest::{import_records, ImportOptions, ImportReport, InputInfo, InputRecord, RawId, RecordSource};
use outcore::runtime::{CancelToken, MemoryBudget, NoProgress, Progress, ProgressBar, ProgressUnit};
use outcore::store::{build_in_memory, Direction, IdType, InMemoryGraph, OriginalId, OriginalIds, Store};
use outcore::{Error, Result};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Record sources

/// Serves records from a vector in batches; can be told to fail at a given batch.
struct VecSource {
    records: Vec<InputRecord>,
    next: usize,
    batches_served: usize,
    fail_at_batch: Option<usize>,
}

impl VecSource {
    fn new(records: Vec<InputRecord>) -> Self {
        VecSource { records, next: 0, batches_served: 0, fail_at_batch: None }
    }
    fn failing_at_batch(records: Vec<InputRecord>, batch: usize) -> Self {
        VecSource { fail_at_batch: Some(batch), ..VecSource::new(records) }
    }
}

impl RecordSource for VecSource {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize) -> Result<bool> {
        if self.fail_at_batch == Some(self.batches_served) {
            return Err(Error::input("edges.txt", Some(self.next as u64 + 1), "injected failure"));
        }
        self.batches_served += 1;
        let end = (self.next + max).min(self.records.len());
        out.extend_from_slice(&self.records[self.next..end]);
        self.next = end;
        Ok(self.next < self.records.len())
    }
    fn bytes_consumed(&self) -> u64 {
        self.next as u64 * 12
    }
}

/// splitmix64: a tiny deterministic generator for synthetic graphs.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Generates `edges` weighted edges among about `vertices` sparse u64 ids, without storing them.
struct SyntheticSource {
    edges: u64,
    vertices: u64,
    next: u64,
}

impl SyntheticSource {
    fn vertex(&self, draw: u64) -> RawId {
        // Sparse ids: a scrambled image of 0..vertices.
        RawId::U64(mix(draw % self.vertices) >> 8)
    }
}

impl RecordSource for SyntheticSource {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize) -> Result<bool> {
        let end = (self.next + max as u64).min(self.edges);
        for i in self.next..end {
            let r = mix(i);
            let (src, dst) = (self.vertex(r), self.vertex(r.rotate_left(32)));
            out.push(InputRecord::Edge { src, dst, weight: Some((i % 7) as f64 + 0.5) });
        }
        self.next = end;
        Ok(self.next < self.edges)
    }
    fn bytes_consumed(&self) -> u64 {
        self.next * 20
    }
}

fn info() -> InputInfo {
    InputInfo {
        format_description: "test records".into(),
        files: vec![PathBuf::from("edges.txt")],
        total_bytes: 0,
        ..InputInfo::default()
    }
}

fn options(budget: u64) -> ImportOptions {
    ImportOptions { memory: MemoryBudget::new(budget), ..ImportOptions::default() }
}

fn import(records: Vec<InputRecord>, dir: &Path, opts: &ImportOptions) -> Result<(Store, ImportReport)> {
    import_records(Box::new(VecSource::new(records)), info(), dir, opts, &NoProgress, &CancelToken::new())
}

fn edge(src: u64, dst: u64) -> InputRecord {
    InputRecord::Edge { src: RawId::U64(src), dst: RawId::U64(dst), weight: None }
}

// ---------------------------------------------------------------------------------------------
// The oracle: the same cleaning rules applied in memory, then build_in_memory.

#[derive(Debug, Clone, Copy)]
struct Rules {
    directed: bool,
    weighted: bool,
    dedup: bool,
    drop_self_loops: bool,
}

/// Returns the graph `build_in_memory` should produce, with (self-loops dropped, duplicates
/// dropped).
fn expected_graph(records: &[InputRecord], rules: Rules) -> (InMemoryGraph, u64, u64) {
    let mut ids: Vec<RawId> = Vec::new();
    for r in records {
        match r {
            InputRecord::Edge { src, dst, .. } => {
                ids.push(src.clone());
                ids.push(dst.clone());
            }
            InputRecord::Vertex(v) => ids.push(v.clone()),
        }
    }
    ids.sort();
    ids.dedup();
    let index = |id: &RawId| ids.binary_search(id).unwrap();
    let mut edges: Vec<(usize, usize, f64)> = Vec::new();
    let mut self_loops = 0;
    for r in records {
        if let InputRecord::Edge { src, dst, weight } = r {
            if rules.drop_self_loops && src == dst {
                self_loops += 1;
                continue;
            }
            let w = if rules.weighted { weight.unwrap_or(1.0) } else { 1.0 };
            edges.push((index(src), index(dst), w));
        }
    }
    let before = edges.len() as u64;
    if rules.dedup {
        let key = |&(s, t, _): &(usize, usize, f64)| if rules.directed { (s, t) } else { (s.min(t), s.max(t)) };
        let mut best: std::collections::BTreeMap<(usize, usize), (usize, usize, f64)> = Default::default();
        for e in &edges {
            best.entry(key(e))
                .and_modify(|b| {
                    if e.2 < b.2 {
                        *b = *e
                    }
                })
                .or_insert(*e);
        }
        edges = best.into_values().collect();
    }
    let duplicates = before - edges.len() as u64;
    let vertices = if ids.iter().all(|id| matches!(id, RawId::U64(_))) {
        OriginalIds::U64(ids.iter().map(|id| if let RawId::U64(v) = id { *v } else { unreachable!() }).collect())
    } else {
        OriginalIds::Str(ids.iter().map(|id| if let RawId::Str(s) = id { s.clone() } else { unreachable!() }).collect())
    };
    (InMemoryGraph { vertices, edges, directed: rules.directed, weighted: rules.weighted }, self_loops, duplicates)
}

fn originals(store: &Store) -> Vec<OriginalId> {
    let ids = store.ids().unwrap();
    (0..ids.len()).map(|d| ids.original(d).unwrap()).collect()
}

fn assert_same_store(actual: &Store, expected: &Store) {
    let (a, e) = (actual.manifest(), expected.manifest());
    assert_eq!(
        (a.vertices, a.arcs, a.edges, a.max_degree, a.directed, a.weights, a.id_type),
        (e.vertices, e.arcs, e.edges, e.max_degree, e.directed, e.weights, e.id_type),
        "manifest counts"
    );
    assert_eq!(originals(actual), originals(expected), "id map");
    for direction in [Direction::Out, Direction::In] {
        let (a, e) = (actual.csr(direction).unwrap().load().unwrap(), expected.csr(direction).unwrap().load().unwrap());
        assert_eq!(a, e, "{direction:?} adjacency");
    }
    assert_eq!(
        actual.manifest().layouts.keys().collect::<Vec<_>>(),
        expected.manifest().layouts.keys().collect::<Vec<_>>()
    );
    actual.verify().unwrap();
}

/// Dense -> original -> dense is the identity.
fn assert_ids_round_trip(store: &Store) {
    let ids = store.ids().unwrap();
    for dense in 0..ids.len() {
        let original = ids.original(dense).unwrap();
        assert_eq!(ids.dense(&original).unwrap(), Some(dense), "{original}");
    }
}

fn leftovers(parent: &Path) -> Vec<String> {
    std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|name| name.starts_with('.'))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Equivalence with build_in_memory

fn raw_id(value: u64, as_string: bool) -> RawId {
    if as_string {
        // Decimal text: byte order differs from numeric order (10 < 9).
        RawId::Str(format!("{value}"))
    } else {
        RawId::U64(value)
    }
}

fn records_strategy() -> impl Strategy<Value = (Vec<InputRecord>, bool)> {
    (
        proptest::collection::vec(any::<u64>(), 1..60),
        proptest::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0u8..5, any::<bool>()),
            0..1500,
        ),
        proptest::collection::vec(any::<u64>(), 0..20),
        any::<bool>(),
    )
        .prop_map(|(pool, edges, isolated, as_string)| {
            let mut records: Vec<InputRecord> = edges
                .iter()
                .map(|(s, t, w, has_weight)| InputRecord::Edge {
                    src: raw_id(pool[s.index(pool.len())], as_string),
                    dst: raw_id(pool[t.index(pool.len())], as_string),
                    weight: has_weight.then_some(*w as f64 * 0.75 - 0.5),
                })
                .collect();
            for (i, v) in isolated.iter().enumerate() {
                records.insert((i * 37) % (records.len() + 1), InputRecord::Vertex(raw_id(*v, as_string)));
            }
            (records, as_string)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn tiny_budget_import_equals_in_memory_build(
        (records, as_string) in records_strategy(),
        undirected in any::<bool>(),
        weighted in any::<bool>(),
        dedup in any::<bool>(),
        drop_self_loops in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let opts = ImportOptions {
            undirected: Some(undirected),
            weighted: Some(weighted),
            dedup,
            drop_self_loops,
            ids: if as_string { IdType::String } else { IdType::U64 },
            // 16 KiB: runs of a few hundred records, 2-way merges, several merge passes.
            memory: MemoryBudget::new(16 << 10),
            ..ImportOptions::default()
        };
        let rules = Rules { directed: !undirected, weighted, dedup, drop_self_loops };
        let (graph, self_loops, duplicates) = expected_graph(&records, rules);
        let expected = build_in_memory(&dir.path().join("expected"), &graph).unwrap();

        let edges_in = records.iter().filter(|r| matches!(r, InputRecord::Edge { .. })).count();
        let (store, report) = import(records.clone(), &dir.path().join("imported"), &opts).unwrap();
        assert_same_store(&store, &expected);
        prop_assert_eq!(report.self_loops_dropped, self_loops);
        prop_assert_eq!(report.duplicates_dropped, duplicates);
        prop_assert_eq!(report.input_records, records.len() as u64);
        prop_assert_eq!((report.vertices, report.edges, report.arcs), (store.num_vertices(), store.manifest().edges, store.num_arcs()));
        // Edges dropped as self-loops never reach a sorter, so only the kept ones must spill.
        if edges_in as u64 - report.self_loops_dropped > 1000 {
            prop_assert!(report.sort_runs > 0, "a 16 KiB budget must spill: {report:?}");
        }
        if as_string {
            assert_ids_round_trip(&store);
        }
        prop_assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        prop_assert!(!store.dir().join("tmp").exists());
    }
}

// ---------------------------------------------------------------------------------------------
// The in-memory path writes the same store as the external path, byte for byte

/// Every file of a store's generation (relative path, bytes), the manifest without its
/// `created` record (which names the memory budget).
fn store_files(store: &Store) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().to_string();
            let mut bytes = std::fs::read(&path).unwrap();
            if rel == "manifest.json" {
                let mut manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                manifest.as_object_mut().unwrap().remove("created");
                bytes = serde_json::to_vec(&manifest).unwrap();
            }
            out.push((rel, bytes));
        }
    }
    let mut files = Vec::new();
    walk(store.dir(), store.dir(), &mut files);
    files.sort();
    files
}

/// Ids of three kinds: numeric in a narrow range (the in-memory path's rank bitmap), numeric
/// and sparse (its sorted id map), and strings.
fn id_of(value: u64, kind: u8) -> RawId {
    match kind {
        0 => RawId::U64(1_000_000 + value % 700),
        1 => RawId::U64(value),
        _ => RawId::Str(format!("v{}", value % 5000)),
    }
}

fn path_records_strategy() -> impl Strategy<Value = (Vec<InputRecord>, u8)> {
    (
        proptest::collection::vec(any::<u64>(), 1..120),
        proptest::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0u8..5, any::<bool>()),
            1200..2500,
        ),
        proptest::collection::vec(any::<u64>(), 0..20),
        0u8..3,
    )
        .prop_map(|(pool, edges, isolated, kind)| {
            let mut records: Vec<InputRecord> = edges
                .iter()
                .map(|(s, t, w, has_weight)| InputRecord::Edge {
                    src: id_of(pool[s.index(pool.len())], kind),
                    dst: id_of(pool[t.index(pool.len())], kind),
                    weight: has_weight.then_some(*w as f64 * 0.75 - 1.5),
                })
                .collect();
            for (i, v) in isolated.iter().enumerate() {
                records.insert((i * 41) % (records.len() + 1), InputRecord::Vertex(id_of(*v, kind)));
            }
            (records, kind)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn in_memory_and_external_paths_write_identical_stores(
        (records, kind) in path_records_strategy(),
        undirected in any::<bool>(),
        weighted in any::<bool>(),
        dedup in any::<bool>(),
        drop_self_loops in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let with_budget = |bytes: u64| ImportOptions {
            undirected: Some(undirected),
            weighted: Some(weighted),
            dedup,
            drop_self_loops,
            ids: if kind == 2 { IdType::String } else { IdType::U64 },
            memory: MemoryBudget::new(bytes),
            ..ImportOptions::default()
        };
        let (external, spilled) = import(records.clone(), &dir.path().join("external"), &with_budget(16 << 10)).unwrap();
        let (held, in_memory) = import(records.clone(), &dir.path().join("held"), &with_budget(64 << 20)).unwrap();
        // 1200+ edges of 16+ bytes are more than a 16 KiB budget holds: that import spilled.
        prop_assert!(!spilled.in_memory && spilled.sort_runs > 0 && spilled.temp_bytes_written > 0, "{spilled:?}");
        prop_assert!(in_memory.in_memory, "{in_memory:?}");
        prop_assert_eq!((in_memory.sort_runs, in_memory.temp_bytes_written, in_memory.temp_bytes_read), (0, 0, 0));
        let (a, b) = (store_files(&external), store_files(&held));
        prop_assert_eq!(a.iter().map(|f| &f.0).collect::<Vec<_>>(), b.iter().map(|f| &f.0).collect::<Vec<_>>());
        for ((name, external_bytes), (_, held_bytes)) in a.iter().zip(&b) {
            prop_assert!(external_bytes == held_bytes, "{} differs", name);
        }
        prop_assert_eq!(
            (spilled.vertices, spilled.edges, spilled.arcs, spilled.self_loops_dropped, spilled.duplicates_dropped),
            (in_memory.vertices, in_memory.edges, in_memory.arcs, in_memory.self_loops_dropped, in_memory.duplicates_dropped)
        );
        // And both are the store the simple in-memory builder makes.
        let rules = Rules { directed: !undirected, weighted, dedup, drop_self_loops };
        let (graph, _, _) = expected_graph(&records, rules);
        assert_same_store(&held, &build_in_memory(&dir.path().join("expected"), &graph).unwrap());
        // The max degree recorded (by each path, the files being equal) is the offsets'.
        prop_assert_eq!(held.manifest().max_degree, Some(busiest_vertex(&held).unwrap().1));
        prop_assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }
}

/// The in-memory path falls back to the external sorts in the middle of the input, without
/// reading it again, when the edges outgrow its share of the budget.
#[test]
fn the_in_memory_path_hands_its_edges_to_the_sorts_when_they_outgrow_it() {
    let dir = tempfile::tempdir().unwrap();
    // 1 MiB: about 870 KiB for the in-memory path, whose peak is ~40 bytes per edge here.
    let records = many_edges(60_000);
    let (store, report) = import(records.clone(), &dir.path().join("fallback"), &options(1 << 20)).unwrap();
    assert!(!report.in_memory && report.sort_runs > 0, "{report:?}");
    let (held, held_report) = import(records, &dir.path().join("held"), &options(256 << 20)).unwrap();
    assert!(held_report.in_memory);
    assert_eq!(store_files(&store), store_files(&held));
    let steps: Vec<&str> = held_report.step_seconds.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        steps,
        ["read input", "assign dense ids", "map ids", "sort csr-out", "write csr-out, sort csr-in", "write csr-in"]
    );
}

#[test]
fn hand_made_graph_with_everything_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![
        InputRecord::Edge { src: RawId::U64(1000), dst: RawId::U64(5), weight: Some(2.0) },
        InputRecord::Edge { src: RawId::U64(1000), dst: RawId::U64(5), weight: Some(0.5) },
        InputRecord::Edge { src: RawId::U64(5), dst: RawId::U64(5), weight: Some(1.0) },
        InputRecord::Vertex(RawId::U64(77)),
        InputRecord::Edge { src: RawId::U64(5), dst: RawId::U64(1000), weight: Some(3.0) },
    ];
    let opts = ImportOptions { dedup: true, drop_self_loops: true, weighted: Some(true), ..options(1 << 20) };
    let (store, report) = import(records, &dir.path().join("g"), &opts).unwrap();
    // Dense ids by ascending original id: 5 -> 0, 77 -> 1, 1000 -> 2.
    assert_eq!(store.ids().unwrap().all_u64().unwrap(), vec![5, 77, 1000]);
    let out = store.csr(Direction::Out).unwrap().load().unwrap();
    assert_eq!(out.offsets, vec![0, 1, 1, 2]);
    assert_eq!(out.targets, vec![2, 0]);
    assert_eq!(out.weights, Some(vec![3.0, 0.5]));
    let inn = store.csr(Direction::In).unwrap().load().unwrap();
    assert_eq!((inn.offsets, inn.targets), (vec![0, 1, 1, 2], vec![2, 0]));
    assert_eq!((report.vertices, report.edges, report.arcs), (3, 2, 2));
    assert_eq!((report.self_loops_dropped, report.duplicates_dropped), (1, 1));
    let created = &store.manifest().created;
    assert_eq!(created["tool_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(created["inputs"][0], "edges.txt");
    assert_eq!(created["options"]["dedup"], true);
    assert_eq!(created["format"], "test records");
}

#[test]
fn directedness_and_weights_follow_the_input_unless_overridden() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![InputRecord::Edge { src: RawId::U64(1), dst: RawId::U64(2), weight: Some(4.0) }];
    let declared = InputInfo { directed: Some(false), weighted: Some(true), ..info() };
    let run = |opts: &ImportOptions, name: &str| {
        import_records(
            Box::new(VecSource::new(records.clone())),
            declared.clone(),
            &dir.path().join(name),
            opts,
            &NoProgress,
            &CancelToken::new(),
        )
        .unwrap()
        .0
    };
    let from_input = run(&options(1 << 20), "a");
    assert!(!from_input.is_directed() && from_input.is_weighted());
    assert_eq!((from_input.num_arcs(), from_input.manifest().edges), (2, 1));
    let overridden = run(&ImportOptions { undirected: Some(false), weighted: Some(false), ..options(1 << 20) }, "b");
    assert!(overridden.is_directed() && !overridden.is_weighted());
    let plain = import(records.clone(), &dir.path().join("c"), &options(1 << 20)).unwrap().0;
    assert!(plain.is_directed() && !plain.is_weighted(), "no declaration, no option: directed, unweighted");
}

#[test]
fn vertices_without_edges_make_a_valid_store_and_no_records_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (store, report) = import(
        vec![InputRecord::Vertex(RawId::U64(9)), InputRecord::Vertex(RawId::U64(3))],
        &dir.path().join("v"),
        &options(1 << 20),
    )
    .unwrap();
    assert_eq!((store.num_vertices(), store.num_arcs(), report.edges), (2, 0, 0));
    assert_eq!(store.csr(Direction::Out).unwrap().load().unwrap().offsets, vec![0, 0, 0]);

    let err = import(Vec::new(), &dir.path().join("empty"), &options(1 << 20)).unwrap_err();
    assert!(matches!(err, Error::Input { .. }), "{err:?}");
    assert!(err.to_string().contains("input is empty"), "{err}");
    assert!(!dir.path().join("empty").exists());
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

#[test]
fn text_ids_in_a_numeric_import_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![InputRecord::Edge { src: RawId::Str("alice".into()), dst: RawId::U64(2), weight: None }];
    let err = import(records, &dir.path().join("g"), &options(1 << 20)).unwrap_err();
    assert!(err.to_string().contains("'alice'"), "{err}");
    assert!(!dir.path().join("g").exists());
}

#[test]
fn refuses_to_replace_anything_but_a_store_or_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let documents = dir.path().join("documents");
    std::fs::create_dir(&documents).unwrap();
    std::fs::write(documents.join("notes.txt"), "keep me").unwrap();
    let err = import(vec![edge(1, 2)], &documents, &options(1 << 20)).unwrap_err();
    assert!(err.to_string().contains("not an outcore store"), "{err}");
    assert_eq!(std::fs::read_to_string(documents.join("notes.txt")).unwrap(), "keep me");

    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    assert!(import(vec![edge(1, 2)], &file, &options(1 << 20)).unwrap_err().to_string().contains("not a directory"));

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(import(vec![edge(1, 2)], &empty, &options(1 << 20)).unwrap().0.num_vertices(), 2);
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

// ---------------------------------------------------------------------------------------------
// Failures leave nothing behind

fn many_edges(n: u64) -> Vec<InputRecord> {
    (0..n).map(|i| edge(mix(i) % 5000, mix(i + n) % 5000)).collect()
}

#[test]
fn a_failing_source_leaves_no_store_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("graph");
    let (old, _) = import(vec![edge(1, 2)], &target, &options(1 << 20)).unwrap();
    assert_eq!(old.num_vertices(), 2);
    // 64 KiB budget: 256-record batches, so the failures come after runs were spilled.
    let opts = options(64 << 10);
    for fail_at in [0, 1, 10, 39] {
        let source = VecSource::failing_at_batch(many_edges(10_000), fail_at);
        let err =
            import_records(Box::new(source), info(), &target, &opts, &NoProgress, &CancelToken::new()).unwrap_err();
        assert!(err.to_string().contains("injected failure"), "{err}");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new(), "after a failure at batch {fail_at}");
        let reopened = Store::open(&target).unwrap();
        assert_eq!(reopened.num_vertices(), 2);
        assert_eq!(reopened.ids().unwrap().all_u64().unwrap(), vec![1, 2]);
    }
    let fresh = dir.path().join("fresh");
    let err = import_records(
        Box::new(VecSource::failing_at_batch(many_edges(10_000), 5)),
        info(),
        &fresh,
        &opts,
        &NoProgress,
        &CancelToken::new(),
    );
    assert!(err.is_err());
    assert!(!fresh.exists());
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

/// Cancels the import when a step with the given label starts (a failure after pass 1).
struct CancelAtStep {
    label: &'static str,
    cancel: CancelToken,
    seen: std::sync::Mutex<Vec<String>>,
}

struct QuietBar;
impl ProgressBar for QuietBar {
    fn inc(&self, _: u64) {}
    fn set_position(&self, _: u64) {}
    fn set_message(&self, _: &str) {}
    fn finish(&self) {}
}

impl Progress for CancelAtStep {
    fn start(&self, label: &str, _: Option<u64>, _: ProgressUnit) -> Box<dyn ProgressBar> {
        self.seen.lock().unwrap().push(label.to_string());
        if label == self.label {
            self.cancel.cancel();
        }
        Box::new(QuietBar)
    }
    fn note(&self, _: &str) {}
}

#[test]
fn a_failure_in_any_later_step_leaves_no_store_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("graph");
    import(vec![edge(1, 2)], &target, &options(1 << 20)).unwrap();
    let steps = [
        "reading input",
        "assigning dense ids",
        "mapping edge sources",
        "mapping edge targets",
        "writing csr-out",
        "writing csr-in",
    ];
    for step in steps {
        let progress = CancelAtStep { label: step, cancel: CancelToken::new(), seen: Default::default() };
        let result = import_records(
            Box::new(VecSource::new(many_edges(20_000))),
            info(),
            &target,
            &options(64 << 10),
            &progress,
            &progress.cancel,
        );
        assert!(matches!(result, Err(Error::Interrupted)), "cancelled at {step}: {result:?}");
        assert_eq!(progress.seen.lock().unwrap().last().map(String::as_str), Some(step), "the step was reached");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new(), "cancelled at {step}");
        assert_eq!(Store::open(&target).unwrap().num_vertices(), 2);
    }
    // And without cancellation the same import replaces the old store.
    let (store, _) = import(many_edges(20_000), &target, &options(64 << 10)).unwrap();
    assert!(store.num_vertices() > 2);
    assert_eq!(Store::open(&target).unwrap().num_vertices(), store.num_vertices());
}

// ---------------------------------------------------------------------------------------------
// Damaged stores are refused with the file's name

fn small_store(dir: &Path) -> PathBuf {
    let path = dir.join("g");
    import(many_edges(2000), &path, &options(1 << 20)).unwrap();
    path
}

fn open_error(path: &Path) -> String {
    match Store::open(path) {
        Ok(_) => panic!("a damaged store opened"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn truncated_store_file_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_store(dir.path());
    let targets = Store::open(&path).unwrap().dir().join("csr-out/targets");
    let len = std::fs::metadata(&targets).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&targets).unwrap().set_len(len - 4).unwrap();
    let message = open_error(&path);
    assert!(message.contains("csr-out/targets") && message.contains("truncated"), "{message}");
}

#[test]
fn corrupted_store_file_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_store(dir.path());
    let ids = Store::open(&path).unwrap().dir().join("ids/original");
    let mut bytes = std::fs::read(&ids).unwrap();
    bytes[3] ^= 0x40;
    std::fs::write(&ids, bytes).unwrap();
    // Found by the first read of the damaged block, before any id from it is used.
    let store = Store::open(&path).unwrap();
    let message = store.ids().and_then(|ids| ids.original(0)).unwrap_err().to_string();
    assert!(message.contains("ids/original") && message.contains("checksum"), "{message}");
}

#[test]
fn missing_or_damaged_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_store(dir.path());
    let manifest = Store::open(&path).unwrap().dir().join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, &text[..text.len() / 2]).unwrap();
    let message = open_error(&path);
    assert!(message.contains("manifest.json") && message.contains("not valid"), "{message}");
    std::fs::remove_file(&manifest).unwrap();
    let message = open_error(&path);
    assert!(message.contains("manifest.json is missing"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// Peak memory, measured in a child process

const CHILD_ENV: &str = "OUTCORE_TEST_BOUNDED_MEMORY_DIR";
const CHILD_BUDGET: u64 = 32 << 20;
const CHILD_EDGES: u64 = 5_000_000;

/// Runs in a child process started by `import_peak_rss_stays_within_the_budget`. Also a
/// measuring tool: `OUTCORE_TEST_EDGES` and `OUTCORE_TEST_BUDGET` (bytes) override the size,
/// e.g. `OUTCORE_TEST_BOUNDED_MEMORY_DIR=/tmp/x OUTCORE_TEST_EDGES=50000000
/// OUTCORE_TEST_BUDGET=268435456 cargo test --release --test import_pipeline bounded_memory_child
/// -- --ignored --nocapture`.
#[test]
#[ignore = "run in a child process by import_peak_rss_stays_within_the_budget"]
fn bounded_memory_child() {
    let dir = PathBuf::from(std::env::var(CHILD_ENV).expect("started by the parent test"));
    let setting = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let edges = setting("OUTCORE_TEST_EDGES", CHILD_EDGES);
    let budget = setting("OUTCORE_TEST_BUDGET", CHILD_BUDGET);
    let source = SyntheticSource { edges, vertices: edges / 5, next: 0 };
    let opts = ImportOptions { weighted: Some(true), ..options(budget) };
    let (store, report) =
        import_records(Box::new(source), info(), &dir.join("g"), &opts, &NoProgress, &CancelToken::new()).unwrap();
    assert_eq!(store.num_arcs(), edges);
    println!(
        "CHILD-REPORT vertices={} edges={} sort_runs={} seconds={:.2} edges_per_second={:.0} temp_bytes_written={} peak_rss_bytes={}",
        report.vertices,
        report.edges,
        report.sort_runs,
        report.seconds,
        report.edges as f64 / report.seconds,
        report.temp_bytes_written,
        outcore::runtime::peak_rss_bytes()
    );
    println!("steps: {:?}", report.step_seconds);
}

#[test]
fn import_peak_rss_stays_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "bounded_memory_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .env_remove("OUTCORE_TEST_EDGES")
        .env_remove("OUTCORE_TEST_BUDGET")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find_map(|l| l.find("CHILD-REPORT").map(|at| &l[at..])).expect("the child reports");
    let field = |name: &str| -> f64 {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing in {line}"))
    };
    println!("{line}");
    // The edges alone (24 bytes each in every sort) are far more than the budget: it spilled.
    const _: () = assert!(CHILD_EDGES * 24 > CHILD_BUDGET + (64 << 20));
    assert!(field("sort_runs") >= 4.0, "{line}");
    assert!(field("vertices") > (CHILD_EDGES / 5) as f64 * 0.5, "{line}");
    let peak = field("peak_rss_bytes") as u64;
    assert!(peak > 0);
    assert!(peak <= CHILD_BUDGET + (64 << 20), "peak RSS {} MiB over a {} MiB budget", peak >> 20, CHILD_BUDGET >> 20);
}
