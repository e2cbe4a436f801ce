//! The stream engine from the command line: `run` flags, `calibrate`, `bench stream`.

use std::process::{Command, Output};

fn outcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcore")).args(args).output().expect("outcore runs")
}

fn ok(args: &[&str]) -> String {
    let out = outcore(args);
    assert!(out.status.success(), "outcore {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn run_flags_select_schedule_and_io_and_results_match_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&["generate", "rmat", "--scale", "11", "--seed", "5", "--store", &p("s"), "--memory", "64MiB"]);
    ok(&["run", "wcc", "--store", &p("s"), "--engine", "inmem", "-o", &p("inmem.txt"), "-q"]);
    let expected = std::fs::read_to_string(p("inmem.txt")).unwrap();
    for schedule in ["selective", "full", "block"] {
        for io in ["buffered", "direct"] {
            let out = p(&format!("{schedule}-{io}.txt"));
            let stats = p(&format!("{schedule}-{io}.json"));
            ok(&[
                "run",
                "wcc",
                "--method",
                "propagation",
                "--store",
                &p("s"),
                "--engine",
                "stream",
                "--memory",
                "2MiB",
                "--schedule",
                schedule,
                "--io",
                io,
                "--gap-threshold",
                "8KiB",
                "-o",
                &out,
                "--stats-json",
                &stats,
                "-q",
            ]);
            assert_eq!(std::fs::read_to_string(&out).unwrap(), expected, "{schedule} {io}");
            let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
            assert_eq!(stats["engine"], "stream");
            assert_eq!(stats["stream"]["schedule"], schedule);
            assert_eq!(stats["stream"]["gap_threshold_bytes"], 8192);
            assert_eq!(stats["stream"]["gap_threshold_source"], "option");
            let iterations = stats["per_iteration"].as_array().unwrap();
            assert!(iterations.iter().all(|i| i["io_mode"] == io), "{schedule} {io}");
            assert!(iterations.iter().all(|i| i["chunks_read"].as_u64().is_some() && i["io_wait_seconds"].is_f64()));
        }
    }
    let bad = outcore(&["run", "wcc", "--store", &p("s"), "--engine", "stream", "--schedule", "sometimes"]);
    assert_eq!(bad.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown schedule 'sometimes'"));
    // Without --method, stream finds the components in one edge pass, with the same output.
    let (out, stats) = (p("union-find.txt"), p("union-find.json"));
    ok(&[
        "run",
        "wcc",
        "--store",
        &p("s"),
        "--engine",
        "stream",
        "--memory",
        "2MiB",
        "-o",
        &out,
        "--stats-json",
        &stats,
        "-q",
    ]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expected);
    let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(stats["iterations"], 1);
    assert!(stats["edge_pass"]["edge_file_bytes"].as_u64().unwrap() > 0, "{stats}");
}

#[test]
fn calibrate_measures_and_saves_where_runs_find_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("calibration.json");
    let out = Command::new(env!("CARGO_BIN_EXE_outcore"))
        .args(["calibrate", "--dir", dir.path().to_str().unwrap(), "--size", "8MiB", "--random-reads", "50", "--json"])
        .env("OUTCORE_CALIBRATION", &config)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let figures: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = figures["gap_threshold_bytes"].as_u64().unwrap();
    assert!(l >= 4096 && l.is_multiple_of(4096));
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(saved["devices"][figures["device"].as_str().unwrap()]["gap_threshold_bytes"], l);
    // A run on a store of that device picks it up.
    let store = dir.path().join("s");
    ok(&["generate", "rmat", "--scale", "8", "--store", store.to_str().unwrap(), "--memory", "16MiB"]);
    let stats = dir.path().join("stats.json");
    let run = Command::new(env!("CARGO_BIN_EXE_outcore"))
        .args([
            "run",
            "wcc",
            "--method",
            "propagation",
            "--store",
            store.to_str().unwrap(),
            "--engine",
            "stream",
            "-q",
            "-o",
        ])
        .arg(dir.path().join("wcc.txt"))
        .arg("--stats-json")
        .arg(&stats)
        .env("OUTCORE_CALIBRATION", &config)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(stats["stream"]["gap_threshold_source"], "calibrated");
    assert_eq!(stats["stream"]["gap_threshold_bytes"], l);
}

#[test]
fn bench_stream_runs_every_schedule_and_prints_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let json = dir.path().join("bench.json");
    let out = ok(&[
        "bench",
        "stream",
        "--store",
        store.to_str().unwrap(),
        "--generate-rmat",
        "10",
        "--memory",
        "32MiB",
        "--algorithms",
        "bfs,pr",
        "--pr-iterations",
        "3",
        "--io",
        "buffered",
        "--json",
        json.to_str().unwrap(),
    ]);
    for line in [
        "bfs        selective",
        "bfs        full",
        "bfs        block",
        "pr         block",
        "selective/full",
        "selective/block",
    ] {
        assert!(out.contains(line), "missing '{line}' in:\n{out}");
    }
    let runs: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let bytes = |alg: &str, schedule: &str| {
        runs.iter().find(|r| r["algorithm"] == alg && r["schedule"] == schedule).unwrap()["stats"]["bytes_read"]
            .as_u64()
            .unwrap()
    };
    assert!(bytes("bfs", "selective") < bytes("bfs", "full"));
    assert_eq!(bytes("pr", "selective"), bytes("pr", "full"));
    for run in runs {
        assert!(run["stats"]["peak_rss_bytes"].as_u64().unwrap() < (32 << 20) + (64 << 20));
        // What the engine charged to the run's memory ledger stays within the budget itself.
        let charged = run["stats"]["memory_ledger"]["peak_bytes"].as_u64().unwrap();
        assert!(charged > 0 && charged <= 32 << 20, "{charged}");
    }
}
