//! The corruption suite (issue 17): every file of a store and of every derived layout damaged
//! in turn (a flipped byte, a valid vertex id written over another, an out-of-range id, a
//! truncation) and every algorithm family run on every engine. Each run must either fail with
//! exit 66 naming the damaged file, or (an engine that does not read that file) succeed with
//! exactly the output of the undamaged store; never a panic, never another exit code, never a
//! wrong result. Every damaged file must be caught by at least one run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn outcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcore")).args(args).output().expect("outcore runs")
}

/// The directory of the store's current generation (where its files are).
fn current_gen(store: &Path) -> PathBuf {
    store.join(std::fs::read_to_string(store.join("CURRENT")).unwrap().trim())
}

fn ok(args: &[&str]) -> String {
    let out = outcore(args);
    assert!(out.status.success(), "outcore {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// xorshift64*: reproducible offsets without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One engine and algorithm run: (engine, algorithm, extra flags).
type Case = (&'static str, &'static str, &'static [&'static str]);

const CASES: &[Case] = &[
    ("inmem", "pr", &["--iterations", "3"]),
    ("inmem", "bfs", &[]),
    ("inmem", "wcc", &[]),
    ("stream", "pr", &["--iterations", "3"]),
    ("stream", "bfs", &[]),
    ("stream", "wcc", &[]),
    ("cache", "pr", &["--iterations", "3"]),
    ("cache", "wcc", &[]),
    ("shards", "pr", &["--iterations", "3", "--shards", "4"]),
    ("shards", "wcc", &["--shards", "4"]),
    ("pregel", "pr", &["--iterations", "3"]),
    ("pregel", "wcc", &[]),
    ("pregel", "pr", &["--iterations", "3", "--recode"]),
    ("pregel", "wcc", &["--recode"]),
    ("nwsm", "wcc", &[]),
    // Neighborhood queries (the bbp layout's adjacency pages, and inmem's).
    ("nwsm", "tc", &[]),
    ("inmem", "tc", &[]),
];

fn run_case(store: &Path, out: &Path, case: &Case, source: &str) -> Output {
    let (engine, algo, extra) = case;
    let mut args = vec!["run", algo, "--store", store.to_str().unwrap(), "--engine", engine, "-q"];
    args.extend(["--memory", if *engine == "pregel" { "64MiB" } else { "16MiB" }]);
    args.extend(["-o", out.to_str().unwrap()]);
    if *algo == "bfs" {
        args.extend(["--source", source]);
    }
    args.extend(extra.iter());
    outcore(&args)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Damage {
    Flip,
    ValidId,
    OutOfRangeId,
    Truncate,
}

fn damage(path: &Path, how: Damage, rng: &mut Rng, vertices: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    assert!(!bytes.is_empty(), "{} is empty", path.display());
    match how {
        Damage::Flip => {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] ^= 1 << rng.below(8);
        }
        Damage::ValidId | Damage::OutOfRangeId => {
            let id = if matches!(how, Damage::ValidId) { rng.below(vertices) as u32 } else { 0x7fff_ffff };
            let slots = (bytes.len() / 4) as u64;
            let at = rng.below(slots) as usize * 4;
            let old = bytes[at..at + 4].to_vec();
            bytes[at..at + 4].copy_from_slice(&id.to_le_bytes());
            if bytes[at..at + 4] == old[..] {
                bytes[at] ^= 0x80;
            }
        }
        Damage::Truncate => bytes.truncate(bytes.len() / 2),
    }
    std::fs::write(path, bytes).unwrap();
}

/// A store with every derived layout built, and each case's output on it.
fn pristine(dir: &Path, scale: &str) -> (PathBuf, String, Vec<Vec<u8>>) {
    let store = dir.join("pristine");
    let s = store.to_str().unwrap();
    ok(&["generate", "rmat", "--scale", scale, "--seed", "5", "--store", s, "--memory", "64MiB"]);
    ok(&["partition", "--store", s, "--ranks", "1", "-q"]);
    ok(&["partition", "--store", s, "--ranks", "1", "--recode", "-q"]);
    let wcc = dir.join("wcc.txt");
    ok(&["run", "wcc", "--store", s, "-o", wcc.to_str().unwrap(), "-q"]);
    let source = std::fs::read_to_string(&wcc).unwrap().split_whitespace().next().unwrap().to_string();
    let outputs = CASES
        .iter()
        .map(|case| {
            let out = dir.join("out.txt");
            let r = run_case(&store, &out, case, &source);
            assert!(r.status.success(), "{case:?}: {}", String::from_utf8_lossy(&r.stderr));
            std::fs::read(&out).unwrap()
        })
        .collect();
    (store, source, outputs)
}

/// Runs every case on a damaged copy; returns (runs, clean errors naming the file).
fn check_damaged(
    dir: &Path,
    pristine: &(PathBuf, String, Vec<Vec<u8>>),
    rel: &str,
    how: Damage,
    rng: &mut Rng,
    vertices: u64,
) -> (usize, usize) {
    let (template, source, expected) = pristine;
    let store = dir.join("damaged");
    let _ = std::fs::remove_dir_all(&store);
    copy_dir(template, &store);
    damage(&current_gen(&store).join(rel), how, rng, vertices);
    let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
    let mut caught = 0;
    for (case, want) in CASES.iter().zip(expected) {
        let out = dir.join("damaged-out.txt");
        let _ = std::fs::remove_file(&out);
        let r = run_case(&store, &out, case, source);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(!stderr.contains("panicked"), "{rel} {how:?} {case:?} panicked:\n{stderr}");
        match r.status.code() {
            Some(66) => {
                assert!(stderr.contains(name), "{rel} {how:?} {case:?}: exit 66 without naming the file:\n{stderr}");
                caught += 1;
            }
            Some(0) => {
                assert!(std::fs::read(&out).unwrap() == *want, "{rel} {how:?} {case:?}: exit 0 with a wrong result")
            }
            other => panic!("{rel} {how:?} {case:?}: exit {other:?}:\n{stderr}"),
        }
    }
    assert!(caught > 0, "{rel} {how:?}: no run noticed the damage");
    (CASES.len(), caught)
}

fn manifest_files(store: &Path) -> (Vec<String>, u64) {
    let text = std::fs::read_to_string(current_gen(store).join("manifest.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut files: Vec<String> = m["files"].as_object().unwrap().keys().cloned().collect();
    // The block-checksum sidecars and pregel's partition files are read too.
    files.extend(["csr-out/targets.crc32c", "csr-in/offsets.crc32c"].map(String::from));
    for parts in ["parts-1", "parts-1-recoded"] {
        for f in ["vertices", "edges-out", "edges-in"] {
            files.push(format!("{parts}/rank-0/{f}"));
        }
    }
    (files, m["vertices"].as_u64().unwrap())
}

#[test]
fn every_damaged_file_of_every_layout_is_a_clean_error_on_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = pristine(dir.path(), "11");
    let (files, vertices) = manifest_files(&pristine.0);
    assert!(files.iter().any(|f| f.starts_with("shards-4/")) && files.iter().any(|f| f.starts_with("bbp-")));
    assert!(files.iter().any(|f| f.starts_with("cache/")));
    let mut rng = Rng(0x5eed_1717);
    let (mut runs, mut caught, mut damaged) = (0, 0, 0);
    for (i, rel) in files.iter().enumerate() {
        let id = if i % 2 == 0 { Damage::ValidId } else { Damage::OutOfRangeId };
        let kinds: Vec<Damage> = if rel.ends_with(".crc32c") {
            vec![Damage::Flip]
        } else if i % 3 == 0 {
            vec![Damage::Flip, id, Damage::Truncate]
        } else {
            vec![Damage::Flip, id]
        };
        for how in kinds {
            let (r, c) = check_damaged(dir.path(), &pristine, rel, how, &mut rng, vertices);
            runs += r;
            caught += c;
            damaged += 1;
        }
    }
    eprintln!(
        "corruption: {} files, {damaged} damaged stores, {runs} runs, {caught} clean errors (exit 66 naming the file), {} exact results (engines that do not read the file), 0 panics, 0 wrong",
        files.len(),
        runs - caught
    );
}

/// The case: a valid vertex id written into the middle of a `csr-out/targets` bigger
/// than 16 MiB (once checked only by `info --verify`) made pr exit 0 with wrong values.
#[test]
fn a_valid_id_in_a_big_targets_file_is_caught_by_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("big");
    let s = store.to_str().unwrap();
    ok(&[
        "generate",
        "rmat",
        "--scale",
        "17",
        "--edge-factor",
        "36",
        "--seed",
        "2",
        "--store",
        s,
        "--memory",
        "256MiB",
    ]);
    let targets = current_gen(&store).join("csr-out/targets");
    let len = std::fs::metadata(&targets).unwrap().len();
    assert!(len > 16 << 20, "targets are {len} bytes");
    let mut bytes = std::fs::read(&targets).unwrap();
    let mid = (len / 2 / 4 * 4) as usize;
    let new = u32::from_le_bytes(bytes[mid..mid + 4].try_into().unwrap()) ^ 1;
    bytes[mid..mid + 4].copy_from_slice(&new.to_le_bytes());
    std::fs::write(&targets, bytes).unwrap();
    let engines = ["inmem", "stream", "cache", "shards"];
    for engine in engines {
        let out = dir.path().join("pr.txt");
        let mut args = vec![
            "run",
            "pr",
            "--store",
            s,
            "--engine",
            engine,
            "--iterations",
            "2",
            "--memory",
            "64MiB",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ];
        // Stream's pr pulls along csr-in and never reads the damaged csr-out/targets: push, so
        // that it reads the file under test.
        if engine == "stream" {
            args.push("--no-pull");
        }
        let r = outcore(&args);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(66), "{engine}: {stderr}");
        assert!(stderr.contains("csr-out/targets") && stderr.contains("checksum mismatch"), "{engine}: {stderr}");
        assert!(!stderr.contains("panicked"), "{engine}: {stderr}");
        assert!(!out.exists(), "{engine} wrote output");
    }
    eprintln!(
        "corruption (csr-out/targets of {} MiB, a valid id written over another): {} runs, {} clean errors, 0 panics, 0 wrong",
        len >> 20,
        engines.len(),
        engines.len()
    );
}
