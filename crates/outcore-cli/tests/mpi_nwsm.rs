//! The nwsm engine under a real `mpirun` (feature `mpi`; `make test` runs it): `outcore run tc`
//! and `lcc` with 2 ranks, one MPI process each, equal the in-memory engine. Every mpirun has
//! a `timeout`, so a hang fails the test instead of blocking CI.
#![cfg(feature = "mpi")]

use std::process::{Command, Output};

fn outcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcore")).args(args).output().expect("outcore runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn tc_and_lcc_over_mpi_equal_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let out = outcore(&["generate", "rmat", "--scale", "10", "--seed", "7", "--store", &p("s"), "--memory", "64MiB"]);
    assert!(out.status.success(), "{}", text(&out));
    for algorithm in ["tc", "lcc"] {
        let expected = outcore(&["run", algorithm, "--store", &p("s"), "--engine", "inmem", "-q"]);
        assert!(expected.status.success(), "{}", text(&expected));
        let result = p(&format!("{algorithm}.txt"));
        let stats = p(&format!("{algorithm}.json"));
        let out = Command::new("timeout")
            .args(["120", "mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"])
            .arg(env!("CARGO_BIN_EXE_outcore"))
            .args(["run", algorithm, "--store", &p("s"), "--engine", "nwsm", "--memory", "200KiB"])
            .args(["--page-size", "1KiB", "-q", "-o", &result, "--stats-json", &stats])
            .output()
            .expect("run mpirun (is openmpi-bin installed?)");
        assert!(out.status.success(), "{algorithm} under mpirun: {}", text(&out));
        assert_eq!(
            std::fs::read_to_string(&result).unwrap(),
            String::from_utf8(expected.stdout).unwrap(),
            "{algorithm}"
        );
        let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(stats["nwsm_ranks"], 2);
        assert!(stats["nwsm_remote_pages"].as_u64().unwrap() > 0, "{stats}");
        assert!(stats["nwsm_updates_to_other_ranks"].as_u64().unwrap() > 0, "{stats}");
    }
}
