//! `--engine auto` from the command line as a new user meets it: no `--engine`, a budget far
//! below what the in-memory engine needs, the one line saying what was chosen, `--explain`'s
//! table, `--stats-json`'s plan, and `outcore algorithms`.

use std::process::{Command, Output};

fn outcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcore")).args(args).output().expect("outcore runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn without_an_engine_a_small_budget_runs_out_of_core_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let out = outcore(&["generate", "rmat", "--scale", "14", "--store", &p("s"), "--memory", "64MiB"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // RMAT-14 needs about 4.3 MiB in memory: 2 MiB leaves only the out-of-core engines.
    let out = outcore(&[
        "run",
        "pr",
        "--store",
        &p("s"),
        "--memory",
        "2MiB",
        "-o",
        &p("pr.txt"),
        "--stats-json",
        &p("pr.json"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err.lines().find(|l| l.starts_with("auto: ")).unwrap_or_else(|| panic!("no auto line: {err}"));
    assert!(line.contains("over the budget: inmem"), "{line}");
    let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p("pr.json")).unwrap()).unwrap();
    assert_ne!(stats["engine"], "inmem");
    assert!(stats["engine_reason"].as_str().unwrap().starts_with("auto: "));
    assert!(stats["plan"]["memory"].as_array().is_some_and(|parts| !parts.is_empty()));
    assert!(stats["plan"]["seconds"].as_f64().unwrap() > 0.0);

    // --explain: a row per engine, the chosen one marked, the refusal of inmem said.
    let out = outcore(&["run", "pr", "--store", &p("s"), "--memory", "2MiB", "--explain", "-q", "-o", &p("pr2.txt")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for engine in ["inmem", "stream", "cache", "shards", "pregel", "nwsm"] {
        assert!(err.lines().any(|l| l.split_whitespace().nth(1) == Some(engine)), "no {engine} row:\n{err}");
    }
    assert!(err.lines().any(|l| l.starts_with("-   inmem") && l.contains("does not fit")), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with('*')).count(), 1, "{err}");
    assert_eq!(std::fs::read(p("pr.txt")).unwrap(), std::fs::read(p("pr2.txt")).unwrap());
}

#[test]
fn an_engine_that_does_not_run_an_algorithm_names_those_that_do() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let out = outcore(&["generate", "grid", "--rows", "4", "--cols", "4", "--store", s.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = outcore(&["run", "tc", "--store", s.to_str().unwrap(), "--engine", "stream"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(stderr(&out).contains("engines that run it: inmem, nwsm"), "{}", stderr(&out));
}

#[test]
fn algorithms_prints_the_matrix() {
    let out = outcore(&["algorithms"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.starts_with("algorithm") && header.contains("nwsm"), "{header}");
    let row = |name: &str| text.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap().to_string();
    assert!(row("tc").contains("neighborhood query"));
    // Every algorithm runs on some engine beyond inmem.
    for (name, _) in outcore::algo::ALGORITHMS {
        let cells: Vec<String> = row(name).split_whitespace().skip(2).take(5).map(str::to_string).collect();
        assert!(cells.iter().any(|c| c == "yes"), "{name} runs only in memory: {cells:?}");
    }
}
