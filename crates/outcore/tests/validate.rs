//! The Graphalytics validator: all 14 validation graphs and 24 reference outputs on the
//! in-memory engine, and each comparison rule failing where it must.

mod inmem_support;

use std::path::{Path, PathBuf};

use outcore::engine::{EngineKind, RunOptions};
use outcore::runtime::{MemoryBudget, NoProgress};
use outcore::validate::{
    check_epsilon, check_equivalent, check_exact, validate_graphalytics, validate_graphalytics_with, ValidationReport,
};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graphalytics")
}

fn options() -> RunOptions {
    RunOptions { engine: EngineKind::InMemory, memory: MemoryBudget::new(1 << 30), ..RunOptions::default() }
}

fn validate_with_reference_loader(dir: &Path) -> ValidationReport {
    let work = tempfile::tempdir().unwrap();
    validate_graphalytics_with(dir, &options(), work.path(), &NoProgress, &inmem_support::load_graphalytics).unwrap()
}

#[test]
fn all_graphalytics_references_pass_on_inmem() {
    let report = validate_with_reference_loader(&data_dir());
    println!("{report}");
    assert!(report.all_passed(), "{report}");
    assert_eq!(report.rows.len(), 24, "{report}");
    let mut graphs: Vec<&str> = report.rows.iter().map(|r| r.graph.as_str()).collect();
    graphs.dedup();
    assert_eq!(graphs.len(), 14);
    for algorithm in ["bfs", "cdlp", "lcc", "pr", "sssp", "wcc"] {
        assert_eq!(report.rows.iter().filter(|r| r.algorithm == algorithm).count(), 4, "{algorithm}");
    }
    assert!(report.rows.iter().all(|r| r.engine == "inmem" && r.vertices > 0));
}

/// The same through the real import pipeline (`ingest::import` of the `.properties` file).
#[test]

fn all_graphalytics_references_pass_through_import() {
    let work = tempfile::tempdir().unwrap();
    let report = validate_graphalytics(&data_dir(), &options(), work.path(), &NoProgress).unwrap();
    println!("{report}");
    assert!(report.all_passed(), "{report}");
    assert_eq!(report.rows.len(), 24);
}

#[test]
fn a_wrong_reference_value_fails_only_its_row() {
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(data_dir()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, copy.path().join(path.file_name().unwrap())).unwrap();
    }
    // vertex 3 is at depth 1 from vertex 1 in example-directed; claim 2
    let bfs = copy.path().join("example-directed-BFS");
    let text = std::fs::read_to_string(&bfs).unwrap();
    assert!(text.contains("\n3 1\n"));
    std::fs::write(&bfs, text.replace("\n3 1\n", "\n3 2\n")).unwrap();
    // and drop a vertex from a PR reference
    let pr = copy.path().join("test-pr-directed-PR");
    let text = std::fs::read_to_string(&pr).unwrap();
    let kept: Vec<&str> = text.lines().skip(1).collect();
    std::fs::write(&pr, kept.join("\n")).unwrap();

    let report = validate_with_reference_loader(copy.path());
    let failed: Vec<(&str, &str, &str)> =
        report.failures().map(|r| (r.graph.as_str(), r.algorithm.as_str(), r.mismatch.as_deref().unwrap())).collect();
    assert_eq!(failed.len(), 2, "{report}");
    assert_eq!(failed[0], ("example-directed", "bfs", "vertex 3: expected 2, got 1"));
    assert_eq!(failed[1].0, "test-pr-directed");
    assert!(failed[1].2.contains("is in the result but not in the expected output"), "{}", failed[1].2);
    assert!(!report.all_passed());
    assert!(report.to_string().ends_with("22 of 24 passed"));
}

#[test]
fn an_import_failure_is_a_failed_row() {
    let work = tempfile::tempdir().unwrap();
    let broken = |_: &Path, _: &Path| -> outcore::Result<outcore::store::Store> {
        Err(outcore::Error::invalid("no such format"))
    };
    let report = validate_graphalytics_with(&data_dir(), &options(), work.path(), &NoProgress, &broken).unwrap();
    assert_eq!(report.rows.len(), 24);
    assert!(report.rows.iter().all(|r| !r.passed && r.mismatch.as_deref() == Some("import failed: no such format")));
}

#[test]
fn a_directory_without_graphs_is_an_error() {
    let empty = tempfile::tempdir().unwrap();
    let err = validate_with_reference_loader_result(empty.path()).unwrap_err();
    assert!(err.to_string().contains("no *.properties file"), "{err}");
}

fn validate_with_reference_loader_result(dir: &Path) -> outcore::Result<ValidationReport> {
    let work = tempfile::tempdir().unwrap();
    validate_graphalytics_with(dir, &options(), work.path(), &NoProgress, &inmem_support::load_graphalytics)
}

// ---- the rules ----

const UNREACHABLE: u64 = i64::MAX as u64;

#[test]
fn exact_rule() {
    let expected = [(1, 0), (2, 1), (3, UNREACHABLE)];
    assert_eq!(check_exact(&expected, &[(3, UNREACHABLE), (1, 0), (2, 1)]), Ok(()));
    assert_eq!(check_exact(&expected, &[(1, 0), (2, 2), (3, UNREACHABLE)]), Err("vertex 2: expected 1, got 2".into()));
    assert!(check_exact(&expected, &[(1, 0), (2, 1), (3, 4)]).is_err());
}

#[test]
fn equivalence_rule() {
    let expected = [(1, 1), (2, 1), (3, 3), (4, 3), (5, 5)];
    // other labels, same partition
    assert_eq!(check_equivalent(&expected, &[(1, 9), (2, 9), (3, 4), (4, 4), (5, 1)]), Ok(()));
    // components {3,4} and {5} merged
    let merged = check_equivalent(&expected, &[(1, 1), (2, 1), (3, 3), (4, 3), (5, 3)]).unwrap_err();
    assert!(merged.contains("vertices 3 and 5 are in one component in the result"), "{merged}");
    // component {1,2} split
    let split = check_equivalent(&expected, &[(1, 1), (2, 2), (3, 3), (4, 3), (5, 5)]).unwrap_err();
    assert!(split.contains("vertices 1 and 2 are in one component in the expected output"), "{split}");
}

#[test]
fn epsilon_rule() {
    let inf = f64::INFINITY;
    let expected = [(1, 0.25), (2, 0.0), (3, inf)];
    assert_eq!(check_epsilon(&expected, &[(1, 0.25 * (1.0 + 0.5e-4)), (2, 0.0), (3, inf)]), Ok(()));
    assert!(check_epsilon(&expected, &[(1, 0.25 * (1.0 + 2e-4)), (2, 0.0), (3, inf)])
        .unwrap_err()
        .starts_with("vertex 1:"));
    assert!(check_epsilon(&expected, &[(1, 0.25 * (1.0 - 2e-4)), (2, 0.0), (3, inf)]).is_err());
    // a reference 0 needs an exact 0
    assert!(check_epsilon(&expected, &[(1, 0.25), (2, 1e-300), (3, inf)]).is_err());
    // infinity against a number, both ways
    assert!(check_epsilon(&expected, &[(1, 0.25), (2, 0.0), (3, 1e300)]).unwrap_err().starts_with("vertex 3:"));
    assert!(check_epsilon(&[(1, 5.0)], &[(1, inf)]).is_err());
    assert!(check_epsilon(&[(1, inf)], &[(1, -inf)]).is_err());
    assert!(check_epsilon(&[(1, 5.0)], &[(1, f64::NAN)]).is_err());
}

#[test]
fn every_vertex_exactly_once() {
    let expected = [(1, 1), (2, 2), (3, 3)];
    assert_eq!(check_exact(&expected, &[(1, 1), (2, 2)]), Err("vertex 3 is missing from the result".into()));
    assert_eq!(
        check_exact(&expected, &[(1, 1), (2, 2), (3, 3), (4, 4)]),
        Err("vertex 4 is in the result but not in the expected output".into())
    );
    assert_eq!(
        check_exact(&expected, &[(1, 1), (2, 2), (3, 3), (2, 2)]),
        Err("vertex 2 appears more than once in the result".into())
    );
    assert_eq!(
        check_exact(&[(1, 1), (1, 1)], &[(1, 1)]),
        Err("vertex 1 appears more than once in the expected output".into())
    );
    // the same checks guard the other rules
    assert!(check_equivalent(&expected, &[(1, 1), (2, 2)]).is_err());
    assert!(check_epsilon(&[(1, 1.0)], &[(1, 1.0), (1, 1.0)]).is_err());
    assert!(check_epsilon(&[(1, 1.0)], &[(2, 1.0)]).is_err());
}
