//! `mpirun -n W outcore partition` and `mpirun -n W outcore run ALGO --engine pregel` (feature
//! `mpi`; `make test-mpi` runs it): the partition written by W MPI ranks in parallel, basic and
//! recoded, is byte for byte the in-process job's, and the results of 2 and 4 MPI ranks on it
//! equal the in-memory engine's; a `--ranks` that is not the world size is a clear error; a
//! failing rank ends the job with a non-zero exit within seconds. Every mpirun runs under
//! `timeout`.
#![cfg(feature = "mpi")]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The directory of the store's current generation (where its layouts are).
fn current_gen(store: &str) -> std::path::PathBuf {
    Path::new(store).join(std::fs::read_to_string(Path::new(store).join("CURRENT")).unwrap().trim())
}
fn outcore(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_outcore")).args(args).output().expect("outcore runs");
    assert!(output.status.success(), "outcore {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    output
}

fn mpirun(ranks: usize, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["120", "mpirun", "--allow-run-as-root", "--oversubscribe", "-n", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_outcore"))
        .args(args)
        .output()
        .expect("run mpirun (is openmpi-bin installed? scripts/install-deps.sh installs it)")
}

/// A directed RMAT graph (scale 9) imported into `dir/store`.
fn store(dir: &Path) -> String {
    let edges = dir.join("rmat.el");
    let store = dir.join("store");
    outcore(&[
        "generate",
        "rmat",
        "--scale",
        "9",
        "--edge-factor",
        "8",
        "--seed",
        "3",
        "--output",
        edges.to_str().unwrap(),
    ]);
    outcore(&["import", edges.to_str().unwrap(), "--store", store.to_str().unwrap(), "--memory", "64MiB"]);
    store.to_str().unwrap().to_string()
}

fn values(path: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let (v, x) = l.split_once(' ').unwrap();
            (v.to_string(), x.to_string())
        })
        .collect()
}

fn assert_close(expected: &HashMap<String, String>, got: &HashMap<String, String>, what: &str) {
    assert_eq!(expected.len(), got.len(), "{what}");
    for (v, e) in expected {
        let g = &got[v];
        match (e.parse::<f64>(), g.parse::<f64>()) {
            (Ok(a), Ok(b)) if a.is_finite() => {
                assert!((a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-12, "{what}: vertex {v}: {a} vs {b}")
            }
            _ => assert_eq!(e, g, "{what}: vertex {v}"),
        }
    }
}

/// Every file under `dir` (relative path → bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            out.extend(files(&path).into_iter().map(|(k, v)| (format!("{name}/{k}"), v)));
        } else {
            out.insert(name, std::fs::read(&path).unwrap());
        }
    }
    out
}

#[test]
fn pregel_on_2_and_4_mpi_ranks_equals_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let source =
        std::fs::read_to_string(dir.path().join("rmat.el")).unwrap().split_whitespace().next().unwrap().to_string();
    for ranks in [2, 4] {
        for recode in [false, true] {
            let mut args = vec!["partition", "--store", &store, "--ranks"];
            let w = ranks.to_string();
            args.push(&w);
            if recode {
                args.push("--recode");
            }
            // The in-process job (W threads) and the MPI job (W processes) write the same bytes.
            outcore(&args);
            let dir_name = if recode { format!("parts-{ranks}-recoded") } else { format!("parts-{ranks}") };
            let in_process = files(&current_gen(&store).join(&dir_name));
            assert!(in_process.len() > ranks, "{in_process:?}");
            // Under mpirun, --ranks defaults to the world size.
            let output = mpirun(ranks, &args[..3].iter().chain(&args[5..]).copied().collect::<Vec<_>>());
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            assert!(files(&current_gen(&store).join(&dir_name)) == in_process, "{dir_name}: MPI partition differs");
            for algorithm in ["pr", "wcc", "sssp", "bfs", "cdlp", "pr-delta"] {
                let what = format!("{algorithm} on {ranks} ranks, recode {recode}");
                let expected = dir.path().join(format!("{algorithm}-inmem.txt"));
                let got = dir.path().join(format!("{algorithm}-{ranks}-{recode}.txt"));
                let stats = dir.path().join(format!("{algorithm}-{ranks}-{recode}.json"));
                let mut common = vec!["run", algorithm, "--store", &store, "--quiet"];
                if matches!(algorithm, "sssp" | "bfs") {
                    common.extend(["--source", &source]);
                }
                let mut inmem = common.clone();
                inmem.extend(["--engine", "inmem", "--output", expected.to_str().unwrap()]);
                outcore(&inmem);
                let mut run = common.clone();
                run.extend(["--engine", "pregel", "--message-file-size", "4KiB", "--memory", "256MiB"]);
                run.extend(["--output", got.to_str().unwrap(), "--stats-json", stats.to_str().unwrap()]);
                if recode {
                    run.push("--recode");
                }
                let output = mpirun(ranks, &run);
                assert!(output.status.success(), "{what}: {}", String::from_utf8_lossy(&output.stderr));
                assert_close(&values(&expected), &values(&got), &what);
                let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
                assert_eq!(stats["engine"], "pregel", "{what}");
                assert_eq!(stats["pregel"]["ranks"], ranks, "{what}");
                assert_eq!(stats["pregel"]["per_rank"].as_array().unwrap().len(), ranks, "{what}");
                if algorithm == "pr" {
                    // Recoded ranks pull PageRank over offers they exchange: no message file.
                    let steps = stats["per_iteration"].as_array().unwrap();
                    assert_eq!(steps.iter().all(|step| step["delivery"] == "pull"), recode, "{what}");
                    let per_rank = stats["pregel"]["per_rank"].as_array().unwrap();
                    let files: u64 = per_rank.iter().map(|r| r["message_files_sent"].as_u64().unwrap()).sum();
                    assert_eq!(files == 0, recode, "{what}: {files} message files");
                }
            }
        }
    }
}

/// mpirun binds each of 2 ranks to its own core; once the supersteps are over, rank 0 writes
/// the results on both (the other rank only waits to finalise), and they equal W = 1's.
#[test]
fn rank_zero_writes_the_results_on_the_cpus_of_its_machines_ranks() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("skipped: this machine lets the test run on {cpus} CPU(s); binding 2 ranks needs 2");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    outcore(&["partition", "--store", &store, "--ranks", "2", "--recode"]);
    let alone = dir.path().join("alone.txt");
    let job = dir.path().join("job.txt");
    let common = ["run", "pr", "--store", &store, "--engine", "pregel", "--recode", "--output"];
    outcore(&["partition", "--store", &store, "--ranks", "1", "--recode"]);
    outcore(&[&common[..], &[alone.to_str().unwrap(), "--quiet"]].concat());
    let output = Command::new("timeout")
        .args(["120", "mpirun", "--allow-run-as-root", "--bind-to", "core", "-n", "2"])
        .arg(env!("CARGO_BIN_EXE_outcore"))
        .args(common)
        .arg(&job)
        .output()
        .expect("run mpirun");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("results and figures from rank 0, written on the 2 CPUs of its machine's ranks"),
        "{stderr}"
    );
    assert_close(&values(&alone), &values(&job), "pr on 2 bound ranks against 1");
}

#[test]
fn partition_ranks_other_than_the_world_size_are_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let output = mpirun(2, &["partition", "--store", &store, "--ranks", "3", "--recode"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && output.status.code() != Some(124), "{stderr}");
    assert!(stderr.contains("--ranks 3 but mpirun started 2 ranks"), "{stderr}");
    assert!(
        !current_gen(&store).join("parts-3-recoded").exists() && !current_gen(&store).join("parts-2-recoded").exists()
    );
}

#[test]
fn a_failing_rank_ends_the_job_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    outcore(&["partition", "--store", &store, "--ranks", "4"]);
    // Rank 2 cannot open its edge stream: it fails in superstep 0 while the others wait for it.
    std::fs::remove_file(current_gen(&store).join("parts-4/rank-2/edges-out")).unwrap();
    let started = Instant::now();
    let output = mpirun(4, &["run", "pr", "--store", &store, "--engine", "pregel", "--quiet", "--output", "/dev/null"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && output.status.code() != Some(124), "{stderr}");
    assert!(stderr.contains("rank 2 of 4") && stderr.contains("edges-out"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}

#[test]
fn a_killed_mpi_run_resumes_from_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    outcore(&["partition", "--store", &store, "--ranks", "2"]);
    let expected = dir.path().join("expected.txt");
    outcore(&[
        "run",
        "pr",
        "--store",
        &store,
        "--engine",
        "inmem",
        "--iterations",
        "400",
        "--quiet",
        "--output",
        expected.to_str().unwrap(),
    ]);
    let got = dir.path().join("got.txt");
    let args = |resume: bool| {
        let mut a = vec!["run", "pr", "--store", &store, "--engine", "pregel", "--iterations", "400", "--quiet"];
        a.extend(["--message-file-size", "4KiB", "--checkpoint-every", "3", "--output", got.to_str().unwrap()]);
        if resume {
            a.push("--resume");
        }
        a
    };
    // Kill the ranks (SIGKILL to mpirun's children) once a checkpoint exists on both.
    let mut job = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .arg(env!("CARGO_BIN_EXE_outcore"))
        .args(args(false))
        .spawn()
        .unwrap();
    let checkpoints = [0, 1].map(|r| current_gen(&store).join(format!("parts-2/rank-{r}/checkpoint/state")));
    let started = Instant::now();
    while !checkpoints.iter().all(|c| c.exists()) {
        assert!(job.try_wait().unwrap().is_none(), "the run ended before its first checkpoint");
        assert!(started.elapsed() < Duration::from_secs(60), "no checkpoint after a minute");
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("pkill").args(["-KILL", "-P", &job.id().to_string()]).status().unwrap();
    let killed = Instant::now();
    while job.try_wait().unwrap().is_none() {
        if killed.elapsed() > Duration::from_secs(30) {
            let _ = job.kill();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!got.exists() || values(&got).is_empty(), "the killed run wrote no results");
    let output = mpirun(2, &args(true));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_close(&values(&expected), &values(&got), "resumed pr");
}

/// kmeans on `mpirun -n 2` and `-n 4`, basic and recoded: the centres travel as the aggregator between the
/// MPI ranks and the clusters equal inmem's.
#[test]
fn kmeans_on_2_and_4_mpi_ranks_equals_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let (points, store) = (dir.path().join("points.el"), dir.path().join("points"));
    let mut state = 5u64;
    let mut text = String::new();
    for i in 0..300 {
        for j in 0..4 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push_str(&format!("{i} {j} {}\n", ((state >> 33) % 400) as f64 / 8.0));
        }
    }
    std::fs::write(&points, text).unwrap();
    let store = store.to_str().unwrap();
    outcore(&["import", points.to_str().unwrap(), "--weighted", "--store", store, "--memory", "64MiB", "--quiet"]);
    let expected = dir.path().join("kmeans-inmem.txt");
    outcore(&["run", "kmeans", "--k", "5", "--store", store, "--quiet", "--output", expected.to_str().unwrap()]);
    for (ranks, recode) in [(2, false), (2, true), (4, false), (4, true)] {
        let ranks_text = ranks.to_string();
        let mut args = vec!["partition", "--store", store, "--ranks", &ranks_text];
        if recode {
            args.push("--recode");
        }
        outcore(&args);
        let got = dir.path().join(format!("kmeans-{ranks}-{recode}.txt"));
        let mut run = vec!["run", "kmeans", "--k", "5", "--store", store, "--engine", "pregel", "--quiet"];
        run.extend(["--output", got.to_str().unwrap()]);
        if recode {
            run.push("--recode");
        }
        let output = mpirun(ranks, &run);
        assert!(output.status.success(), "{ranks} ranks, recode {recode}: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(values(&expected), values(&got), "kmeans on {ranks} ranks, recode {recode}");
    }
}
