//! The nwsm engine from the command line: `partition --bbp`, `run tc|lcc --engine nwsm` with
//! ranks, page size and budget, equal to the in-memory engine; clear errors.

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
fn partition_and_run_tc_and_lcc_on_nwsm_equal_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&["generate", "rmat", "--scale", "11", "--seed", "3", "--store", &p("s"), "--memory", "64MiB"]);
    let out = outcore(&[
        "partition",
        "--store",
        &p("s"),
        "--bbp",
        "--ranks",
        "2",
        "--memory",
        "200KiB",
        "--page-size",
        "1KiB",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built bbp-2-"), "{}", String::from_utf8_lossy(&out.stderr));
    let info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.path().join("s").join(std::fs::read_to_string(p("s/CURRENT")).unwrap().trim()).join("manifest.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let layout = info["layouts"].as_object().unwrap().keys().find(|k| k.starts_with("bbp-2-")).unwrap().clone();
    for algorithm in ["tc", "lcc"] {
        let expected = ok(&["run", algorithm, "--store", &p("s"), "--engine", "inmem", "-q"]);
        for ranks in ["1", "2"] {
            let stats = p(&format!("{algorithm}-{ranks}.json"));
            let got = ok(&[
                "run",
                algorithm,
                "--store",
                &p("s"),
                "--engine",
                "nwsm",
                "--ranks",
                ranks,
                "--memory",
                "200KiB",
                "--page-size",
                "1KiB",
                "--stats-json",
                &stats,
                "-q",
            ]);
            assert_eq!(got, expected, "{algorithm} with {ranks} ranks");
            let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
            assert_eq!(stats["engine"], "nwsm");
            assert!(stats["nwsm_window_slides"].as_u64().unwrap() > 2, "{stats}");
            if ranks == "2" {
                assert_eq!(stats["nwsm_layout"], layout.as_str(), "the partitioned layout is used");
                assert_eq!(stats["nwsm_partition_bytes_written"], 0);
            }
        }
    }
}

#[test]
fn clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&["generate", "rmat", "--scale", "8", "--store", &p("s"), "--memory", "64MiB"]);
    // The nwsm-only options need --bbp (without it, `partition` builds the pregel engine's files).
    let out = outcore(&["partition", "--store", &p("s"), "--ranks", "2", "--q", "2"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bbp"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = outcore(&["run", "tc", "--store", &p("s"), "--engine", "nwsm", "--memory", "2KiB", "-q"]);
    assert_eq!(out.status.code(), Some(75), "{}", String::from_utf8_lossy(&out.stderr));
    // Generated R-MAT keeps duplicate arcs: cdlp's one-level queries would merge them.
    let out = outcore(&["run", "cdlp", "--store", &p("s"), "--engine", "nwsm", "-q"]);
    assert_eq!(out.status.code(), Some(64), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("without duplicate arcs"));
    let out = outcore(&["run", "bfs", "--store", &p("s"), "--engine", "nwsm", "--source", "0", "-q"]);
    assert_eq!(out.status.code(), Some(64), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not run vertex programs"));
}
