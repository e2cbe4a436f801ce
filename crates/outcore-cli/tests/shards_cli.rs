//! The shards engine from the command line: `run` flags and `bench shards`.

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
fn run_flags_select_shards_and_policy_and_results_match_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&["generate", "rmat", "--scale", "10", "--seed", "5", "--store", &p("s"), "--memory", "64MiB"]);
    ok(&["run", "wcc", "--store", &p("s"), "--engine", "inmem", "-o", &p("inmem.txt"), "-q"]);
    let expected = std::fs::read_to_string(p("inmem.txt")).unwrap();
    for (policy, delivery) in [("off", "adjacency"), ("ads", "adjacency"), ("ods", "adjacency"), ("ods", "shadow")] {
        let (out, stats) = (p(&format!("{policy}-{delivery}.txt")), p(&format!("{policy}-{delivery}.json")));
        ok(&[
            "run",
            "wcc",
            "--store",
            &p("s"),
            "--engine",
            "shards",
            "--memory",
            "8MiB",
            "--shards",
            "8",
            "--dynamic",
            policy,
            "--shadow-edge-share",
            "0.5",
            "--delay-buffer",
            "4KiB",
            "--delayed-delivery",
            delivery,
            "-o",
            &out,
            "--stats-json",
            &stats,
            "-q",
        ]);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), expected, "{policy}");
        let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(stats["engine"], "shards");
        assert_eq!(stats["shards"], 8);
        assert_eq!(stats["dynamic_policy"], policy);
        assert_eq!(stats["delayed_delivery"], delivery);
        // Static steps keep the values in memory (8 MiB holds them); dynamic policies do not.
        assert_eq!(stats["shards_values"], if policy == "off" { "memory" } else { "disk" });
        let iterations = stats["per_iteration"].as_array().unwrap();
        assert!(iterations.iter().all(|i| i["kind"].is_string() && i["edges_loaded"].as_u64().is_some()));
    }
    let bad = outcore(&["run", "wcc", "--store", &p("s"), "--engine", "shards", "--dynamic", "sometimes"]);
    assert_eq!(bad.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown --dynamic policy 'sometimes'"));
    let bad = outcore(&["run", "wcc", "--store", &p("s"), "--engine", "shards", "--shards-values", "somewhere"]);
    assert_eq!(bad.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown --shards-values 'somewhere'"));
    let bad = outcore(&["run", "pr", "--store", &p("s"), "--engine", "shards", "--dynamic", "ods"]);
    assert_eq!(bad.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("use --dynamic off"));
    let bad = outcore(&["run", "wcc", "--store", &p("s"), "--engine", "shards", "--delayed-delivery", "later"]);
    assert_eq!(bad.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown --delayed-delivery 'later'"));
}

#[test]
fn bench_shards_runs_every_policy_and_prints_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let json = dir.path().join("bench.json");
    let out = ok(&[
        "bench",
        "shards",
        "--store",
        store.to_str().unwrap(),
        "--generate-rmat",
        "9",
        "--memory",
        "4MiB",
        "--algorithms",
        "pr-delta,wcc",
        "--policies",
        "off,ads,ods,ods:shadow",
        "--tolerance",
        "1e-4",
        "--json",
        json.to_str().unwrap(),
    ]);
    for line in [
        "pr-delta  off",
        "pr-delta  ads",
        "pr-delta  ods",
        "pr-delta  ods:shadow",
        "wcc       ods",
        "off/ods",
        "off/ads",
    ] {
        assert!(out.contains(line), "missing '{line}' in:\n{out}");
    }
    let runs: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 8);
    for run in runs {
        let stats = &run["stats"];
        let (policy, delivery) =
            run["policy"].as_str().unwrap().split_once(':').unwrap_or((run["policy"].as_str().unwrap(), "adjacency"));
        assert_eq!(stats["dynamic_policy"], policy);
        assert_eq!(stats["delayed_delivery"], delivery);
        assert!(stats["peak_rss_bytes"].as_u64().unwrap() < (4 << 20) + (64 << 20));
        let charged = stats["memory_ledger"]["peak_bytes"].as_u64().unwrap();
        assert!(charged > 0 && charged <= 4 << 20, "{charged}");
        assert!(stats["bytes_read"].as_u64().unwrap() > 0);
    }
}
