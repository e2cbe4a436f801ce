//! The store layer: in-memory construction, reopening, id lookups, and damage detection.

use outcore::store::{build_in_memory, Direction, InMemoryGraph, OriginalId, OriginalIds, Store};

fn small_graph(directed: bool) -> InMemoryGraph {
    // vertices 40, 10, 30, 20 (unsorted, sparse); 99 isolated
    InMemoryGraph {
        vertices: OriginalIds::U64(vec![40, 10, 30, 20, 99]),
        edges: vec![(1, 0, 1.5), (1, 2, 2.0), (3, 1, 0.5), (0, 0, 7.0)],
        directed,
        weighted: true,
    }
}

#[test]
fn builds_and_reopens_a_directed_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g");
    let store = build_in_memory(&path, &small_graph(true)).unwrap();
    assert_eq!(store.num_vertices(), 5);
    assert_eq!(store.num_arcs(), 4);
    let store = Store::open(&path).unwrap();
    store.verify().unwrap();
    let ids = store.ids().unwrap();
    // dense ids follow original order: 10->0, 20->1, 30->2, 40->3, 99->4
    assert_eq!(ids.all_u64().unwrap(), vec![10, 20, 30, 40, 99]);
    assert_eq!(ids.dense(&OriginalId::U64(30)).unwrap(), Some(2));
    assert_eq!(ids.dense(&OriginalId::U64(31)).unwrap(), None);
    assert!(ids.resolve("31").unwrap_err().to_string().contains("not in the graph"));
    let out = store.csr(Direction::Out).unwrap().load().unwrap();
    // 10->40 (1.5), 10->30 (2.0), 20->10 (0.5), 40->40 (7.0)
    assert_eq!(out.offsets, vec![0, 2, 3, 3, 4, 4]);
    assert_eq!(out.targets, vec![2, 3, 0, 3]);
    assert_eq!(out.weights.unwrap(), vec![2.0, 1.5, 0.5, 7.0]);
    let inn = store.csr(Direction::In).unwrap().load().unwrap();
    assert_eq!(inn.offsets, vec![0, 1, 1, 2, 4, 4]);
    assert_eq!(inn.targets, vec![1, 0, 0, 3]);
}

#[test]
fn undirected_store_keeps_both_directions_in_csr_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = build_in_memory(&dir.path().join("g"), &small_graph(false)).unwrap();
    assert_eq!(store.num_arcs(), 7); // 3 edges twice + a self-loop once
    assert!(!store.manifest().layouts.contains_key("csr-in"));
    let out = store.csr(Direction::Out).unwrap().load().unwrap();
    let inn = store.csr(Direction::In).unwrap().load().unwrap();
    assert_eq!(out, inn);
}

#[test]
fn string_ids_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let graph = InMemoryGraph {
        vertices: OriginalIds::Str(vec!["zoe".into(), "adam".into(), "émile".into()]),
        edges: vec![(0, 1, 1.0), (2, 0, 1.0)],
        directed: true,
        weighted: false,
    };
    let store = build_in_memory(&dir.path().join("g"), &graph).unwrap();
    let ids = store.ids().unwrap();
    for name in ["zoe", "adam", "émile"] {
        let dense = ids.resolve(name).unwrap();
        assert_eq!(ids.original(dense).unwrap(), OriginalId::Str(name.into()));
    }
    let mut seen = Vec::new();
    ids.for_each_by_original(|_, id| {
        seen.push(id.to_string());
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, vec!["adam", "zoe", "émile"]);
}

#[test]
fn rebuilding_replaces_the_old_store_and_leaves_no_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g");
    build_in_memory(&path, &small_graph(true)).unwrap();
    build_in_memory(&path, &small_graph(false)).unwrap();
    assert!(!Store::open(&path).unwrap().is_directed());
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("g")]);
}

#[test]
fn damaged_stores_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g");
    build_in_memory(&path, &small_graph(true)).unwrap();

    // truncated file
    let generation = Store::open(&path).unwrap().dir().to_path_buf();
    let targets = generation.join("csr-out/targets");
    let bytes = std::fs::read(&targets).unwrap();
    std::fs::write(&targets, &bytes[..bytes.len() - 1]).unwrap();
    let err = Store::open(&path).unwrap_err().to_string();
    assert!(err.contains("csr-out/targets") && err.contains("truncated"), "{err}");

    // same size, flipped byte: found by the first read of its block (block checksums), and
    // by a full verification
    let mut flipped = bytes.clone();
    flipped[0] ^= 0xff;
    std::fs::write(&targets, &flipped).unwrap();
    let store = Store::open(&path).unwrap();
    let err = store.csr(Direction::Out).and_then(|c| c.load()).unwrap_err().to_string();
    assert!(err.contains("csr-out/targets") && err.contains("checksum mismatch in bytes 0.."), "{err}");
    let err = store.verify().unwrap_err().to_string();
    assert!(err.contains("csr-out/targets") && err.contains("checksum"), "{err}");

    // missing manifest: not a store
    std::fs::write(&targets, &bytes).unwrap();
    Store::open(&path).unwrap();
    std::fs::remove_file(generation.join("manifest.json")).unwrap();
    let err = Store::open(&path).unwrap_err().to_string();
    assert!(err.contains("manifest.json is missing"), "{err}");

    // a garbled manifest
    std::fs::write(generation.join("manifest.json"), "{ not json").unwrap();
    let err = Store::open(&path).unwrap_err().to_string();
    assert!(err.contains("manifest is not valid"), "{err}");
}

#[test]
fn empty_graph_is_a_valid_store() {
    let dir = tempfile::tempdir().unwrap();
    let graph = InMemoryGraph { vertices: OriginalIds::U64(vec![]), edges: vec![], directed: true, weighted: false };
    let store = build_in_memory(&dir.path().join("g"), &graph).unwrap();
    assert_eq!(store.num_vertices(), 0);
    assert_eq!(store.csr(Direction::Out).unwrap().load().unwrap().offsets, vec![0]);
}

#[test]
fn leftovers_of_killed_builds_are_removed_by_the_next_build() {
    let dir = tempfile::tempdir().unwrap();
    // a pid that cannot exist (above the kernel's pid_max limit of 2^22)
    let stale = dir.path().join(".g.building-99999999");
    std::fs::create_dir_all(stale.join("csr-out")).unwrap();
    build_in_memory(&dir.path().join("g"), &small_graph(true)).unwrap();
    assert!(!stale.exists());
}

fn generations_in(root: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("gen-"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_reader_keeps_its_generation_while_an_import_replaces_the_store_and_it_is_retired_after() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g");
    build_in_memory(&path, &small_graph(true)).unwrap();
    let reader = Store::open(&path).unwrap();
    assert_eq!(reader.generation(), Some("gen-1"));
    let before = reader.csr(Direction::Out).unwrap().load().unwrap();

    // The replacement is undirected: another csr-out. The reader still reads gen-1 whole.
    build_in_memory(&path, &small_graph(false)).unwrap();
    assert_eq!(generations_in(&path), ["gen-1", "gen-2"]);
    let fresh = Store::open(&path).unwrap();
    assert_eq!(fresh.generation(), Some("gen-2"));
    assert!(!fresh.is_directed() && reader.is_directed());
    assert_eq!(reader.csr(Direction::Out).unwrap().load().unwrap().offsets, before.offsets);
    reader.verify().unwrap();

    // The last holder of gen-1 goes: gen-1 is retired; gen-2, held, stays.
    let clone = reader.clone();
    drop(reader);
    assert_eq!(generations_in(&path), ["gen-1", "gen-2"]);
    drop(clone);
    assert_eq!(generations_in(&path), ["gen-2"]);
    fresh.verify().unwrap();
}

#[test]
fn a_generation_left_unpublished_by_a_killed_commit_is_removed_on_open_unless_a_commit_is_under_way() {
    use outcore::store::{generation, FileLock};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g");
    build_in_memory(&path, &small_graph(true)).unwrap();
    let reader = Store::open(&path).unwrap();
    build_in_memory(&path, &small_graph(false)).unwrap();
    // The state a commit killed between its rename of gen-2 and its write of CURRENT leaves.
    std::fs::write(path.join(generation::CURRENT_FILE), "gen-1\n").unwrap();
    assert_eq!(generations_in(&path), ["gen-1", "gen-2"]);

    // While a commit holds WRITER.lock, gen-2 may be the one it is publishing: it stays.
    let writer = FileLock::exclusive(&path.join(generation::WRITER_LOCK)).unwrap();
    drop(reader);
    let during = Store::open(&path).unwrap();
    assert_eq!(during.generation(), Some("gen-1"));
    assert_eq!(generations_in(&path), ["gen-1", "gen-2"]);
    drop(during);
    assert_eq!(generations_in(&path), ["gen-1", "gen-2"]);

    // Nobody commits: the next open removes it and reads what CURRENT names.
    drop(writer);
    let after = Store::open(&path).unwrap();
    assert_eq!(generations_in(&path), ["gen-1"]);
    assert!(after.is_directed());
    after.verify().unwrap();
    assert!(std::fs::read_dir(&path).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().starts_with('.')));
    drop(after);
    // The next import publishes gen-2 again.
    build_in_memory(&path, &small_graph(false)).unwrap();
    assert_eq!(generations_in(&path), ["gen-2"]);
    assert!(!Store::open(&path).unwrap().is_directed());
}
