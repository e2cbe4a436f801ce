//! The `outcore` binary end to end: the README's commands, exit codes and messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn outcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcore")).args(args).output().expect("outcore runs")
}

fn ok(args: &[&str]) -> String {
    let out = outcore(args);
    assert!(out.status.success(), "outcore {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn graphalytics() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../outcore/tests/data/graphalytics")
}

#[test]
fn generate_import_run_and_summarise() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&["generate", "rmat", "--scale", "10", "--seed", "3", "--output", &p("g.el")]);
    ok(&["import", &p("g.el"), "--store", &p("s"), "--memory", "16MiB", "--quiet"]);
    let info = ok(&["info", "--store", &p("s"), "--json"]);
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["edges"], 16 * 1024);
    let first = std::fs::read_to_string(p("g.el")).unwrap();
    let source = first.split_whitespace().next().unwrap().to_string();
    ok(&[
        "run",
        "bfs",
        "--store",
        &p("s"),
        "--source",
        &source,
        "-o",
        &p("bfs.txt"),
        "--stats-json",
        &p("bfs.json"),
        "-q",
    ]);
    ok(&[
        "run",
        "pr",
        "--store",
        &p("s"),
        "--iterations",
        "5",
        "-o",
        &p("pr.csv"),
        "--stats-json",
        &p("pr.json"),
        "-q",
    ]);
    ok(&["run", "wcc", "--store", &p("s"), "-o", &p("wcc.txt"), "--stats-json", &p("wcc.json"), "-q"]);
    // one line per vertex, sorted by original id; csv by extension with a header
    let bfs = std::fs::read_to_string(p("bfs.txt")).unwrap();
    let ids: Vec<u64> = bfs.lines().map(|l| l.split(' ').next().unwrap().parse().unwrap()).collect();
    assert_eq!(ids.len() as u64, info["vertices"].as_u64().unwrap());
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(bfs.contains(&format!("{source} 0\n")));
    assert!(std::fs::read_to_string(p("pr.csv")).unwrap().starts_with("vertex,"));
    let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p("pr.json")).unwrap()).unwrap();
    for key in [
        "algorithm",
        "engine",
        "vertices",
        "edges",
        "iterations",
        "wall_seconds",
        "bytes_read",
        "bytes_written",
        "peak_rss_bytes",
        "per_iteration",
        "summary",
    ] {
        assert!(stats.get(key).is_some(), "stats lack {key}: {stats}");
    }
    assert_eq!(stats["iterations"], 5);
    let summary = ok(&["summary", &p("bfs.json"), &p("pr.json"), &p("wcc.json")]);
    assert!(summary.contains("top 10") && summary.contains("groups") && summary.contains("reached"), "{summary}");
}

#[test]
fn generate_into_a_store_directly() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("grid");
    let s = store.to_str().unwrap();
    ok(&["generate", "grid", "--rows", "4", "--cols", "5", "--store", s, "--memory", "8MiB"]);
    let info: serde_json::Value = serde_json::from_str(&ok(&["info", "--store", s, "--json"])).unwrap();
    assert_eq!(info["vertices"], 20);
    assert_eq!(info["edges"], 4 * 4 + 3 * 5);
    assert_eq!(info["directed"], false);
}

#[test]
fn validate_passes_on_graphalytics_and_the_table_says_so() {
    let out = ok(&["validate", "--graphalytics", graphalytics().to_str().unwrap(), "--engine", "inmem", "-q"]);
    assert!(out.contains("24 of 24 passed"), "{out}");
}

#[test]
fn validate_fails_with_a_non_zero_exit_on_a_wrong_expectation() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["example-directed.properties", "example-directed.v", "example-directed.e", "example-directed-BFS"] {
        std::fs::copy(graphalytics().join(f), dir.path().join(f)).unwrap();
    }
    // corrupt one expected depth
    let bfs = dir.path().join("example-directed-BFS");
    let text = std::fs::read_to_string(&bfs).unwrap().replacen("3 1\n", "3 2\n", 1);
    assert!(text.contains("3 2\n"));
    std::fs::write(&bfs, text).unwrap();
    let out = outcore(&["validate", "--graphalytics", dir.path().to_str().unwrap(), "--engine", "inmem", "-q"]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAIL") || stdout.contains("fail"), "{stdout}");
}

#[test]
fn bad_input_names_file_line_and_text_with_the_data_error_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("edges.txt");
    std::fs::write(&input, "1 2\n# comment\n3 four\n").unwrap();
    let store = dir.path().join("s");
    let out = outcore(&["import", input.to_str().unwrap(), "--store", store.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(65));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("edges.txt:3") && err.contains("four"), "{err}");
    assert!(!store.exists(), "a failed import must leave no store");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "temporary files left: {leftovers:?}");
}

#[test]
fn missing_store_and_unknown_vertex_have_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let out = outcore(&["run", "pr", "--store", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(66));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    let store = dir.path().join("s");
    ok(&["generate", "grid", "--rows", "2", "--cols", "2", "--store", store.to_str().unwrap()]);
    let out = outcore(&["run", "bfs", "--store", store.to_str().unwrap(), "--source", "77"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'77' is not in the graph"));
    let out = outcore(&["run", "nosuch", "--store", store.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bfs"), "unknown algorithm lists the available ones");
}

#[test]
fn the_memory_budget_is_enforced_with_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    ok(&["generate", "rmat", "--scale", "10", "--store", store.to_str().unwrap()]);
    let out = outcore(&["run", "pr", "--store", store.to_str().unwrap(), "--engine", "inmem", "--memory", "4KiB"]);
    assert_eq!(out.status.code(), Some(75));
    assert!(String::from_utf8_lossy(&out.stderr).contains("memory budget"));
}

/// The README's k-means recipe: points as `point dimension coordinate` lines, imported weighted,
/// `run kmeans --k` on inmem and on the pregel engine; a point with a missing coordinate is a
/// usage error naming it.
#[test]
fn kmeans_from_an_edge_list_of_points_on_inmem_and_pregel() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // Two groups in 2-d around (0, 0) and (10, 10); point ids 0..6.
    let points = [[0.0, 0.0], [10.0, 10.0], [0.5, 0.0], [9.5, 10.0], [0.0, 1.0], [10.0, 9.0]];
    let text: String = points
        .iter()
        .enumerate()
        .flat_map(|(i, x)| x.iter().enumerate().map(move |(j, c)| format!("{i} {j} {c}\n")))
        .collect();
    std::fs::write(p("points.el"), text).unwrap();
    ok(&["import", &p("points.el"), "--weighted", "--store", &p("s"), "--quiet"]);
    ok(&["run", "kmeans", "--k", "2", "--store", &p("s"), "-o", &p("inmem.txt"), "--stats-json", &p("k.json"), "-q"]);
    assert_eq!(std::fs::read_to_string(p("inmem.txt")).unwrap(), "0 0\n1 1\n2 0\n3 1\n4 0\n5 1\n");
    let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p("k.json")).unwrap()).unwrap();
    assert_eq!(stats["summary"]["cluster_sizes"], serde_json::json!([3, 3]), "{stats}");
    ok(&["partition", "--store", &p("s"), "--ranks", "1", "--quiet"]);
    ok(&["run", "kmeans", "--k", "2", "--store", &p("s"), "--engine", "pregel", "-o", &p("pregel.txt"), "-q"]);
    assert_eq!(std::fs::read_to_string(p("pregel.txt")).unwrap(), std::fs::read_to_string(p("inmem.txt")).unwrap());

    std::fs::write(p("bad.el"), "0 0 1\n0 1 2\n1 0 3\n1 1 4\n2 0 5\n2 1 6\n2 2 7\n3 0 8\n").unwrap();
    ok(&["import", &p("bad.el"), "--weighted", "--store", &p("bad"), "--quiet"]);
    let out = outcore(&["run", "kmeans", "--k", "2", "--store", &p("bad"), "-q", "-o", &p("bad.txt")]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("point 2 has 3 coordinates"), "{out:?}");
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_output_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let out = dir.path().join("pr.parquet");
    ok(&["generate", "grid", "--rows", "3", "--cols", "3", "--store", store.to_str().unwrap()]);
    ok(&["run", "pr", "--store", store.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..4], b"PAR1");
    assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
}

/// `outcore import` reads Parquet natively: a result file the CLI wrote (vertex → component,
/// UINT_64 columns) imports to the same store as the same pairs from text; a null in a column
/// (unreachable BFS depths) is an error naming the file, the row and the column.
#[cfg(feature = "parquet")]
#[test]
fn parquet_import_equals_the_same_edges_from_text() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&["generate", "rmat", "--scale", "8", "--seed", "5", "--output", &p("g.el")]);
    ok(&["import", &p("g.el"), "--store", &p("s"), "--quiet"]);
    ok(&["run", "wcc", "--store", &p("s"), "-o", &p("wcc.parquet"), "-q"]);
    ok(&["run", "wcc", "--store", &p("s"), "-o", &p("wcc.txt"), "-q"]);
    let stats = p("import.json");
    let common = ["--memory", "16MiB", "--quiet"];
    let parquet = [&p("wcc.parquet"), "--store", &p("from-parquet"), "--src-col", "vertex", "--dst-col", "1"];
    ok(&[&["import"], &parquet[..], &common[..], &["--stats-json", &stats]].concat());
    ok(&[&["import", &p("wcc.txt"), "--store", &p("from-text")], &common[..]].concat());
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert!(report.to_string().contains("Parquet (source 'vertex', target 'component'"), "{report}");
    let info = |store: &str| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_str(&ok(&["info", "--store", &p(store), "--json"])).unwrap();
        serde_json::json!([v["vertices"], v["edges"]])
    };
    assert_eq!(info("from-parquet"), info("from-text"));
    assert!(info("from-parquet")[1].as_u64().unwrap() > 200);
    for store in ["from-parquet", "from-text"] {
        ok(&["run", "pr", "--store", &p(store), "--engine", "inmem", "-q", "-o", &p(&format!("{store}.txt"))]);
    }
    let pr = |store: &str| std::fs::read_to_string(p(&format!("{store}.txt"))).unwrap();
    assert_eq!(pr("from-parquet"), pr("from-text"));

    // BFS depths: nullable INT64, null where unreachable.
    let first = std::fs::read_to_string(p("g.el")).unwrap();
    let source = first.split_whitespace().next().unwrap().to_string();
    ok(&["run", "bfs", "--store", &p("s"), "--source", &source, "-o", &p("bfs.parquet"), "-q"]);
    let out = outcore(&["import", &p("bfs.parquet"), "--store", &p("bad"), "--dst-col", "depth", "--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("bfs.parquet") && stderr.contains("column 'depth' is null"),
        "{stderr}"
    );
    let out = outcore(&["import", &p("wcc.parquet"), "--store", &p("bad"), "--src-col", "rank", "--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("wcc.parquet") && stderr.contains("--src-col 'rank'"), "{stderr}");
}

#[test]
fn partition_runs_its_ranks_in_process_and_the_recoded_pregel_run_equals_inmem() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&["generate", "rmat", "--scale", "9", "--seed", "4", "--output", &p("g.el")]);
    ok(&["import", &p("g.el"), "--store", &p("s"), "--memory", "16MiB", "--quiet"]);
    let out = outcore(&["partition", "--store", &p("s"), "--ranks", "3", "--recode", "--memory", "64MiB"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("partitioned into 3 ranks (Recoded names)") && stderr.contains("by 3 in-process ranks"),
        "{stderr}"
    );
    for rank in 0..3 {
        assert!(stderr.contains(&format!("rank {rank}:")) && stderr.contains("requests sent"), "{stderr}");
        let generation = std::fs::read_to_string(dir.path().join("s/CURRENT")).unwrap();
        let parts = dir.path().join("s").join(generation.trim()).join("parts-3-recoded");
        assert!(parts.join(format!("rank-{rank}/edges-out")).exists());
    }
    // One process without mpirun is one rank: the recoded single-rank partition runs here.
    ok(&["partition", "--store", &p("s"), "--recode", "--quiet"]);
    ok(&["run", "pr", "--store", &p("s"), "--engine", "inmem", "--quiet", "-o", &p("inmem.txt")]);
    ok(&["run", "pr", "--store", &p("s"), "--engine", "pregel", "--recode", "--quiet", "-o", &p("pregel.txt")]);
    let read = |name: &str| -> Vec<(String, f64)> {
        std::fs::read_to_string(p(name))
            .unwrap()
            .lines()
            .map(|l| {
                let (v, x) = l.split_once(' ').unwrap();
                (v.to_string(), x.parse().unwrap())
            })
            .collect()
    };
    let (expected, got) = (read("inmem.txt"), read("pregel.txt"));
    assert_eq!(expected.len(), got.len());
    for ((v, a), (w, b)) in expected.iter().zip(&got) {
        assert_eq!(v, w);
        assert!((a - b).abs() <= 1e-9 * a.abs().max(*b), "vertex {v}: {a} vs {b}");
    }
}

/// A failing command's exit code and its one-line message on stderr.
fn fails(args: &[&str]) -> (i32, String) {
    let out = outcore(args);
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn usage_errors_exit_64_before_any_work_with_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(p("t.el"), "1 2\n2 3\n3 1\n").unwrap();
    ok(&["import", &p("t.el"), "--store", &p("s"), "--quiet"]);
    let s = p("s");
    let nope = p("nope/x.txt");
    let (el, fresh, json, missing) = (p("t.el"), p("u"), p("x.json"), p("missing"));
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["run", "pr", "--bogus"], 64, "unexpected argument"),
        (vec!["import", &el, "--store", &fresh, "--ids", "uuid"], 64, "unknown id type 'uuid'"),
        (vec!["run", "bc", "--store", &s, "--num-sources", "0"], 64, "--num-sources must be at least 1"),
        (vec!["run", "pr", "--store", &s, "--iterations", "0"], 64, "--iterations must be at least 1"),
        (vec!["run", "tc", "--engine", "nwsm", "--store", &s, "--page-size", "0"], 64, "--page-size must be"),
        (vec!["run", "pr", "--store", &s, "-o", &nope], 64, "does not exist"),
        (vec!["run", "pr", "--store", &s, "-o", &json], 64, "unknown extension"),
        (vec!["run", "pr", "--store", &missing], 66, "no such store"),
        (vec!["generate", "rmat", "--scale", "4", "--output", &nope], 74, "os error 2"),
    ];
    for (args, code, message) in cases {
        let (got, stderr) = fails(&args);
        assert_eq!(got, code, "outcore {args:?}: {stderr}");
        assert!(stderr.contains(message), "outcore {args:?}: {stderr}");
        // an OS error is told once, not once per cause in the chain
        assert!(stderr.matches("os error").count() <= 1, "outcore {args:?}: {stderr}");
    }
    assert!(!Path::new(&nope).exists());
    assert!(!Path::new(&json).exists());
}

#[test]
fn a_budget_beyond_the_machine_is_lowered_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(p("t.el"), "1 2\n2 3\n3 1\n").unwrap();
    let out = outcore(&["import", &p("t.el"), "--store", &p("s"), "--memory", "64TiB", "--quiet"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("is more than this machine has").count(), 1, "{stderr}");
    let out = outcore(&["run", "pr", "--store", &p("s"), "--engine", "nwsm", "--memory", "1TB", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);
}

#[test]
fn louvain_runs_on_inmem_and_pregel_and_refuses_bad_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // Two triangles joined by the edge 3-4.
    std::fs::write(p("g.el"), "1 2\n1 3\n2 3\n3 4\n4 5\n4 6\n5 6\n").unwrap();
    ok(&["import", &p("g.el"), "--undirected", "--store", &p("s"), "--quiet"]);
    ok(&["run", "louvain", "--store", &p("s"), "-o", &p("inmem.txt"), "--stats-json", &p("l.json"), "-q"]);
    assert_eq!(std::fs::read_to_string(p("inmem.txt")).unwrap(), "1 1\n2 1\n3 1\n4 4\n5 4\n6 4\n");
    let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p("l.json")).unwrap()).unwrap();
    // Two triangles and a bridge: 2·(3/7 − (7/14)²) = 5/14.
    let q = stats["summary"]["modularity"].as_f64().unwrap();
    assert!((q - 5.0 / 14.0).abs() < 1e-12, "{stats}");
    ok(&[
        "run",
        "louvain",
        "--store",
        &p("s"),
        "--engine",
        "pregel",
        "--memory",
        "16MiB",
        "-o",
        &p("pregel.txt"),
        "-q",
    ]);
    assert_eq!(std::fs::read_to_string(p("pregel.txt")).unwrap(), std::fs::read_to_string(p("inmem.txt")).unwrap());
    for (flag, value) in [("--resolution", "0"), ("--resolution", "-1"), ("--threshold", "-0.1"), ("--max-level", "0")]
    {
        let out = outcore(&["run", "louvain", "--store", &p("s"), &format!("{flag}={value}"), "-q"]);
        assert_eq!(out.status.code(), Some(64), "{flag} {value}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(flag), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
