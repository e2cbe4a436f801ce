//! Fuzz-style property tests (issue 17): every input parser and `Store::open` (with the reads a
//! run makes next) fed random bytes, thousands of cases: each ends in records or a clean
//! error, never a panic. Each test prints how many cases ran and how many were clean errors.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use outcore::ingest::parse::open_inputs;
use outcore::ingest::{ImportOptions, InputFormat};
use outcore::store::{Direction, IdType, Store};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const CASES: u32 = 1500;

fn runner() -> TestRunner {
    TestRunner::new(Config { cases: CASES, failure_persistence: None, ..Config::default() })
}

/// Bytes that look like text inputs often enough to get past the headers: digits, separators,
/// comment and header characters, and now and then any byte.
fn texty() -> impl Strategy<Value = Vec<u8>> {
    let alphabet: &[u8] = b"0123456789 \t,\n\r#%-.eE+abcxyz%%MatrixMarket coordinate real pattern general symmetric";
    let byte = prop_oneof![8 => proptest::sample::select(alphabet.to_vec()), 1 => any::<u8>()];
    proptest::collection::vec(byte, 0..400)
}

fn parse_all(paths: &[PathBuf], opts: &ImportOptions) -> outcore::Result<u64> {
    let (mut source, _info) = open_inputs(paths, opts)?;
    let mut records = Vec::new();
    let mut n = 0;
    loop {
        records.clear();
        let more = source.read_batch(&mut records, 64)?;
        n += records.len() as u64;
        if !more {
            return Ok(n);
        }
    }
}

#[test]
fn every_parser_survives_random_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let formats: &[(&str, InputFormat)] = &[
        ("g.el", InputFormat::Auto),
        ("g.txt", InputFormat::EdgeList),
        ("g.csv", InputFormat::Csv),
        ("g.mtx", InputFormat::MatrixMarket),
        ("g.bin32", InputFormat::Bin32),
        ("g.bin64", InputFormat::Bin64),
        ("g.e", InputFormat::Graphalytics),
        ("g.gz", InputFormat::Auto),
        ("g.zst", InputFormat::Auto),
    ];
    let (cases, errors) = (Cell::new(0u64), Cell::new(0u64));
    let strategy = (texty(), 0..formats.len(), any::<bool>(), any::<bool>());
    runner()
        .run(&strategy, |(bytes, f, strings, skip)| {
            let (name, format) = formats[f];
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let mut paths = vec![path];
            if name == "g.e" {
                // A Graphalytics pair: the vertex file gets the same bytes.
                let v = dir.path().join("g.v");
                std::fs::write(&v, &bytes).unwrap();
                paths.insert(0, v);
            }
            let opts = ImportOptions {
                format,
                ids: if strings { IdType::String } else { IdType::U64 },
                skip_bad_lines: skip,
                ..ImportOptions::default()
            };
            cases.set(cases.get() + 1);
            if parse_all(&paths, &opts).is_err() {
                errors.set(errors.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    let (cases, errors) = (cases.get(), errors.get());
    eprintln!("parser fuzz: {cases} cases, {errors} clean errors, the rest parsed, 0 panics");
    assert!(cases >= CASES as u64 && errors > 0 && errors < cases);
}

/// Opens the store and makes the reads a run makes first; any outcome but a panic is fine.
fn open_and_read(dir: &Path) -> outcore::Result<()> {
    let store = Store::open(dir)?;
    for direction in [Direction::Out, Direction::In] {
        let csr = store.csr(direction)?;
        csr.load()?;
    }
    let ids = store.ids()?;
    for v in 0..store.num_vertices().min(8) {
        ids.original(v)?;
    }
    Ok(())
}

#[test]
fn store_open_survives_random_bytes_in_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    let el = dir.path().join("g.el");
    std::fs::write(&el, (0..300u64).map(|i| format!("{} {}\n", i % 37, (i * 7) % 41)).collect::<String>()).unwrap();
    let opts = ImportOptions { memory: outcore::runtime::MemoryBudget::new(16 << 20), ..ImportOptions::default() };
    let cancel = outcore::runtime::CancelToken::new();
    outcore::ingest::import(&[el], &pristine, &opts, &outcore::runtime::NoProgress, &cancel).unwrap();
    open_and_read(&pristine).unwrap();
    // The files of its generation, copied below into a store without generations.
    let pristine = outcore::store::Store::open(&pristine).unwrap().dir().to_path_buf();
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in ["", "csr-out", "csr-in", "ids"] {
        for e in std::fs::read_dir(pristine.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                files.push(p.strip_prefix(&pristine).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    let work = dir.path().join("work");
    let (cases, errors) = (Cell::new(0u64), Cell::new(0u64));
    let strategy = (0..files.len(), proptest::collection::vec((any::<u16>(), any::<u8>()), 1..4), any::<u8>());
    runner()
        .run(&strategy, |(f, edits, mode)| {
            let _ = std::fs::remove_dir_all(&work);
            std::fs::create_dir_all(&work).unwrap();
            for sub in ["csr-out", "csr-in", "ids"] {
                std::fs::create_dir_all(work.join(sub)).unwrap();
            }
            for rel in &files {
                std::fs::copy(pristine.join(rel), work.join(rel)).unwrap();
            }
            let target = work.join(&files[f]);
            let mut bytes = std::fs::read(&target).unwrap();
            match mode % 4 {
                // Replace the file by random bytes, truncate it, or write random bytes into it.
                0 => bytes = edits.iter().flat_map(|&(a, b)| [a as u8, (a >> 8) as u8, b]).collect(),
                1 => bytes.truncate(edits[0].0 as usize % (bytes.len() + 1)),
                _ => {
                    for &(at, b) in &edits {
                        if !bytes.is_empty() {
                            let i = at as usize % bytes.len();
                            bytes[i] = b;
                        }
                    }
                }
            }
            std::fs::write(&target, &bytes).unwrap();
            cases.set(cases.get() + 1);
            if open_and_read(&work).is_err() {
                errors.set(errors.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    let (cases, errors) = (cases.get(), errors.get());
    eprintln!("store fuzz: {cases} cases, {errors} clean errors, the rest opened and read without error (undamaged bytes or a manifest-only change), 0 panics");
    assert!(cases >= CASES as u64 && errors > 0);
}
