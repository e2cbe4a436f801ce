//! Store generations and leftovers under concurrent use and kills (issue 17).
//!
//! * Concurrency: runs (inmem, stream, shards and pregel building their layouts) loop on a store path while
//!   imports of two different graphs replace it again and again: every run's output must be
//!   exactly one generation's result, byte for byte, never a mix, a failure or a panic.
//! * Kill-at-random: the long commands (an import over the store, each derived-layout build,
//!   runs with checkpoints and work files) are SIGKILLed at random moments; afterwards the store
//!   verifies, nothing is left in `tmp/` or as hidden work directories, and the next command
//!   gives the right result.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_outcore"))
}

fn outcore(args: &[&str]) -> Output {
    bin().args(args).output().expect("outcore runs")
}

fn ok(args: &[&str]) {
    let out = outcore(args);
    assert!(out.status.success(), "outcore {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// xorshift64*: reproducible kill moments without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `import EDGES --store STORE --order random`: a new generation with other dense ids.
fn import_args<'a>(edges: &'a str, store: &'a str) -> Vec<&'a str> {
    vec!["import", edges, "--store", store, "--order", "random", "--memory", "64MiB", "-q"]
}

type RunCase = (&'static str, &'static [&'static str]);
const RUNS: &[RunCase] = &[
    ("inmem", &["pr", "--iterations", "5"]),
    ("stream", &["wcc"]),
    ("shards", &["pr", "--iterations", "3", "--shards", "4"]),
    // Builds its partition in each new generation, then holds it while its rank reads it.
    ("pregel", &["pr", "--iterations", "3"]),
];

fn run_args<'a>(store: &'a str, out: &'a str, case: &'a RunCase) -> Vec<&'a str> {
    let mut args = vec!["run", case.1[0], "--store", store, "--engine", case.0, "--memory", "64MiB", "-q", "-o", out];
    args.extend(&case.1[1..]);
    args
}

/// Hidden work entries, `tmp/` work files and generations other than the current one (older
/// ones nobody holds, or one a killed commit renamed into place but never published) anywhere
/// in a store.
fn leftovers(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    let current = std::fs::read_to_string(root.join("CURRENT")).unwrap_or_default().trim().to_string();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with("gen-") {
            if name != current {
                found.push(entry.path());
            }
            dirs.push(entry.path());
        }
    }
    for dir in dirs {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                found.push(entry.path());
            }
        }
        if let Ok(tmp) = std::fs::read_dir(dir.join("tmp")) {
            found.extend(tmp.flatten().map(|e| e.path()).filter(|p| !p.to_string_lossy().ends_with(".lock")));
        }
    }
    found
}

#[test]
fn runs_during_imports_each_see_exactly_one_generation() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let edges = [p("a.txt"), p("b.txt")];
    for (file, seed) in edges.iter().zip(["1", "2"]) {
        ok(&["generate", "rmat", "--scale", "11", "--seed", seed, "--output", s(file)]);
    }
    // The expected output of every run case on each graph, from stores of their own.
    let mut expected: Vec<Vec<Vec<u8>>> = Vec::new();
    for (g, file) in edges.iter().enumerate() {
        let store = p(&format!("expected-{g}"));
        ok(&import_args(s(file), s(&store)));
        let mut outputs = Vec::new();
        for (c, case) in RUNS.iter().enumerate() {
            let out = p(&format!("expected-{g}-{c}.txt"));
            ok(&run_args(s(&store), s(&out), case));
            outputs.push(std::fs::read(&out).unwrap());
        }
        assert!(outputs.iter().zip(&expected.first().cloned().unwrap_or_default()).all(|(a, b)| a != b) || g == 0);
        expected.push(outputs);
    }
    let store = p("live");
    ok(&import_args(s(&edges[0]), s(&store)));
    let imports_done = AtomicBool::new(false);
    let imports = 30;
    let (mut runs, mut seen) = (0usize, [0usize; 2]);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..imports {
                ok(&import_args(s(&edges[(i + 1) % 2]), s(&store)));
            }
            imports_done.store(true, Ordering::SeqCst);
        });
        let readers: Vec<_> = (0..RUNS.len())
            .map(|c| {
                let (store, expected, done) = (&store, &expected, &imports_done);
                let out = p(&format!("got-{c}.txt"));
                scope.spawn(move || {
                    let (mut n, mut seen) = (0usize, [0usize; 2]);
                    while !done.load(Ordering::SeqCst) || n < 3 {
                        let r = outcore(&run_args(s(store), s(&out), &RUNS[c]));
                        let stderr = String::from_utf8_lossy(&r.stderr);
                        assert!(r.status.success(), "{:?} during imports failed:\n{stderr}", RUNS[c]);
                        let got = std::fs::read(&out).unwrap();
                        let g = (0..2).find(|&g| got == expected[g][c]);
                        let g = g.unwrap_or_else(|| panic!("{:?}: the output is neither generation's result", RUNS[c]));
                        seen[g] += 1;
                        n += 1;
                    }
                    (n, seen)
                })
            })
            .collect();
        for reader in readers {
            let (n, by_generation) = reader.join().unwrap();
            runs += n;
            seen[0] += by_generation[0];
            seen[1] += by_generation[1];
        }
    });
    eprintln!(
        "concurrency: {imports} imports, {runs} runs during them ({} of graph A, {} of graph B), 0 mixed, 0 failed, 0 panics",
        seen[0], seen[1]
    );
    assert!(seen[0] > 0 && seen[1] > 0, "the runs saw only one graph: {seen:?}");
    // Nobody reads the old generations any more: only the current one is left, and no work files.
    let generations = std::fs::read_dir(&store)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("gen-"))
        .count();
    ok(&["info", "--store", s(&store), "--verify"]);
    assert_eq!(generations, 1, "old generations were not retired");
    assert!(leftovers(&store).is_empty(), "{:?}", leftovers(&store));
}

/// Spawns `outcore args`, SIGKILLs it after `after` (if still running); true if it was killed.
fn kill_after(args: &[&str], after: Duration) -> bool {
    let mut child: Child = bin().args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    while started.elapsed() < after {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let killed = child.try_wait().unwrap().is_none();
    child.kill().ok();
    child.wait().unwrap();
    killed
}

/// Whether two PageRank outputs hold the same vertices with the same values up to rounding (a
/// reordered store sums in another order, so the last digits may differ).
fn same_ranks(a: &Path, b: &Path) -> bool {
    let parse = |p: &Path| -> Vec<(String, f64)> {
        let text = std::fs::read_to_string(p).unwrap();
        text.lines()
            .map(|l| {
                let (v, x) = l.split_once(' ').unwrap();
                (v.to_string(), x.parse().unwrap())
            })
            .collect()
    };
    let (a, b) = (parse(a), parse(b));
    a.len() == b.len()
        && a.iter().zip(&b).all(|((v, x), (w, y))| v == w && (x - y).abs() <= 1e-12 * x.abs().max(y.abs()))
}

/// Drops the cache engine's static-cache selections, so that its next run builds one.
fn drop_cache_selections(store: &Path) {
    let listed = outcore(&["layout", "list", "--store", s(store)]);
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        let name = line.split('\t').next().unwrap_or_default();
        if name.starts_with("static-cache-selection/") {
            ok(&["layout", "drop", "--store", s(store), name]);
        }
    }
}

#[test]
fn commands_killed_at_random_leave_a_store_that_verifies_and_works() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let (edges, store, want, got) = (p("g.txt"), p("s"), p("want.txt"), p("got.txt"));
    ok(&["generate", "rmat", "--scale", "12", "--seed", "7", "--output", s(&edges)]);
    ok(&import_args(s(&edges), s(&store)));
    let check = ["run", "pr", "--store", s(&store), "--engine", "inmem", "--iterations", "3", "-q", "-o"];
    let (check_want, check_got) = ([&check[..], &[s(&want)]].concat(), [&check[..], &[s(&got)]].concat());
    ok(&check_want);
    let commands: Vec<Vec<&str>> = vec![
        import_args(s(&edges), s(&store)),
        vec!["layout", "build", "--store", s(&store), "shards-8", "-q", "--memory", "32MiB"],
        vec!["layout", "build", "--store", s(&store), "bbp-1-2", "-q", "--memory", "32MiB"],
        vec!["layout", "build", "--store", s(&store), "parts-2", "-q", "--memory", "64MiB"],
        vec!["layout", "build", "--store", s(&store), "parts-2-recoded", "-q", "--memory", "64MiB"],
        vec![
            "run",
            "pr",
            "--store",
            s(&store),
            "--engine",
            "shards",
            "--shards",
            "8",
            "--iterations",
            "8",
            "-q",
            "--memory",
            "16MiB",
            "-o",
            s(&got),
        ],
        vec![
            "run",
            "pr",
            "--store",
            s(&store),
            "--engine",
            "pregel",
            "--checkpoint-every",
            "1",
            "--iterations",
            "8",
            "-q",
            "--memory",
            "64MiB",
            "-o",
            s(&got),
        ],
        vec!["run", "tc", "--store", s(&store), "--engine", "nwsm", "-q", "--memory", "8MiB", "-o", s(&got)],
        // Builds its static-cache selection (dropped before each kill, below).
        vec![
            "run",
            "pr",
            "--store",
            s(&store),
            "--engine",
            "cache",
            "--iterations",
            "8",
            "-q",
            "--memory",
            "16MiB",
            "-o",
            s(&got),
        ],
        // Renumbers the store: a new generation, like an import.
        vec!["reorder", "--store", s(&store), "--order", "degree", "-q", "--memory", "64MiB"],
    ];
    let mut rng = Rng(0x6b11_1717);
    let (mut cases, mut killed) = (0, 0);
    for command in &commands {
        // How long the command takes when left alone; kills fall anywhere in that time.
        let started = Instant::now();
        ok(command);
        let full = started.elapsed().as_millis() as u64 + 1;
        for _ in 0..10 {
            // Kills land in the build of the layout the command makes, not in a run that finds it.
            if command[0] == "layout" {
                let _ = outcore(&["layout", "drop", "--store", s(&store), command[4]]);
            }
            if command.contains(&"cache") {
                drop_cache_selections(&store);
            }
            killed += kill_after(command, Duration::from_millis(rng.below(full))) as usize;
            cases += 1;
            let verify = outcore(&["info", "--store", s(&store), "--verify"]);
            assert!(verify.status.success(), "{command:?} killed: {}", String::from_utf8_lossy(&verify.stderr));
            assert!(leftovers(&store).is_empty(), "{command:?} killed: left {:?}", leftovers(&store));
            ok(&check_got);
            assert!(same_ranks(&got, &want), "{command:?} killed: wrong result");
        }
        // And the command itself works afterwards (a pregel run resumes or starts again).
        ok(command);
    }
    eprintln!("kill-at-random: {cases} cases over {} commands, {killed} killed mid-way, {cases} verified stores, 0 leftovers, 0 wrong results, 0 panics", commands.len());
    assert!(killed * 2 >= cases, "too few kills landed mid-way: {killed} of {cases}");
}

#[test]
fn a_removed_layout_breaks_only_the_engine_that_needs_it_and_layout_build_restores_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let store = p("s");
    ok(&["generate", "rmat", "--scale", "10", "--seed", "4", "--store", s(&store), "--memory", "64MiB"]);
    let shards = ["run", "pr", "--store", s(&store), "--engine", "shards", "--shards", "4", "--iterations", "3", "-q"];
    ok(&[&shards[..], &["-o", s(&p("want.txt"))]].concat());
    let generation = store.join(std::fs::read_to_string(store.join("CURRENT")).unwrap().trim());
    std::fs::remove_dir_all(generation.join("shards-4")).unwrap();
    // inmem does not need the layout; shards reports it with the command that rebuilds it.
    ok(&["run", "pr", "--store", s(&store), "--engine", "inmem", "--iterations", "3", "-q", "-o", s(&p("inmem.txt"))]);
    let r = outcore(&[&shards[..], &["-o", s(&p("got.txt"))]].concat());
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(66), "{stderr}");
    let command = format!("outcore layout build --store {} shards-4", s(&store));
    assert!(stderr.contains("shards-4/") && stderr.contains(&command), "{stderr}");
    let listed = outcore(&["layout", "list", "--store", s(&store)]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("shards-4\tdamaged"), "{listed:?}");
    assert_eq!(outcore(&["info", "--store", s(&store), "--verify"]).status.code(), Some(66));
    ok(&command.split(' ').skip(1).chain(["-q"]).collect::<Vec<_>>());
    ok(&["info", "--store", s(&store), "--verify"]);
    ok(&[&shards[..], &["-o", s(&p("got.txt"))]].concat());
    assert!(std::fs::read(p("got.txt")).unwrap() == std::fs::read(p("want.txt")).unwrap());
    // drop removes it from the list and the disk; csr-out is not a derived layout.
    ok(&["layout", "drop", "--store", s(&store), "shards-4"]);
    assert!(!generation.join("shards-4").exists());
    assert!(!String::from_utf8_lossy(&outcore(&["layout", "list", "--store", s(&store)]).stdout).contains("shards-4"));
    assert_eq!(outcore(&["layout", "drop", "--store", s(&store), "csr-out"]).status.code(), Some(64));
    assert_eq!(outcore(&["layout", "drop", "--store", s(&store), "shards-4"]).status.code(), Some(64));
}

#[test]
fn a_store_from_before_generations_opens_and_an_import_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let (store, old) = (p("s"), p("old"));
    ok(&["generate", "rmat", "--scale", "10", "--seed", "4", "--store", s(&store)]);
    let run = |out: &str| ok(&["run", "wcc", "--store", s(&old), "--engine", "inmem", "-q", "-o", s(&p(out))]);
    // The files of one generation, directly in the directory: the layout before generations.
    std::fs::rename(store.join("gen-1"), &old).unwrap();
    std::fs::remove_file(old.join("LOCK")).unwrap();
    run("before.txt");
    ok(&["generate", "rmat", "--scale", "10", "--seed", "4", "--store", s(&old)]);
    assert!(old.join("CURRENT").exists() && !old.join("manifest.json").exists());
    run("after.txt");
    assert!(std::fs::read(p("before.txt")).unwrap() == std::fs::read(p("after.txt")).unwrap());
    assert!(std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .all(|e| !e.file_name().to_string_lossy().starts_with('.')));
    // A directory that is not a store is never replaced.
    std::fs::create_dir_all(p("notes")).unwrap();
    std::fs::write(p("notes/todo.txt"), "keep me").unwrap();
    let r = outcore(&["generate", "rmat", "--scale", "8", "--store", s(&p("notes"))]);
    assert_eq!(r.status.code(), Some(64), "{r:?}");
    assert!(p("notes/todo.txt").exists());
}
