//! The LDBC Graphalytics validator (`outcore validate`): runs the algorithms of the
//! Graphalytics validation graphs on an engine and compares the results with the reference
//! outputs by the rules of the Graphalytics specification (§4.4, "Output validation"):
//!
//! * BFS and CDLP: exact match ([`check_exact`]);
//! * WCC: equivalence — the same partition of the vertices, whatever the labels
//!   ([`check_equivalent`]);
//! * PR, LCC and SSSP: `|ref − got| ≤ 1e-4 · |ref|` for every vertex, so a reference 0 needs an
//!   exact 0 and an infinite reference an infinite result ([`check_epsilon`]);
//! * and for all: every vertex of the reference exactly once in the result, nothing else.
//!
//! A validation directory holds, per graph NAME, `NAME.properties` (Java properties: whether
//! the graph is directed, its algorithms and their parameters), `NAME.v`, `NAME.e` and one
//! reference output `NAME-ALG` per algorithm (`vertex value` lines, ALG in upper case).

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::algo::{run_algorithm, AlgorithmParams, AlgorithmResult, ValueColumn};
use crate::engine::{RunOptions, Runner};
use crate::error::{Error, IoContext, Result};
use crate::ingest::{ImportOptions, InputFormat};
use crate::runtime::{CancelToken, Progress, ProgressUnit};
use crate::store::Store;

/// Relative tolerance of the epsilon rule.
pub const EPSILON: f64 = 1e-4;

/// Graphalytics' value for a vertex BFS does not reach (`i64::MAX`).
pub const BFS_UNREACHABLE: u64 = i64::MAX as u64;

/// One graph × algorithm comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationRow {
    pub graph: String,
    pub algorithm: String,
    pub engine: String,
    pub vertices: u64,
    pub passed: bool,
    /// The engine does not run this algorithm (e.g. a Pregel program on the stream engine):
    /// the row is reported but neither passes nor fails; `mismatch` says why.
    pub skipped: bool,
    /// Why it failed: the first mismatch, or the error the run or the import gave.
    pub mismatch: Option<String>,
    pub seconds: f64,
}

/// The result of a validation run: one row per graph × algorithm.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ValidationReport {
    pub rows: Vec<ValidationRow>,
}

impl ValidationReport {
    /// True when at least one row ran and every row that ran passed.
    pub fn all_passed(&self) -> bool {
        self.rows.iter().any(|r| !r.skipped) && self.failures().next().is_none()
    }

    pub fn failures(&self) -> impl Iterator<Item = &ValidationRow> {
        self.rows.iter().filter(|r| !r.passed && !r.skipped)
    }

    pub fn skipped(&self) -> impl Iterator<Item = &ValidationRow> {
        self.rows.iter().filter(|r| r.skipped)
    }
}

impl fmt::Display for ValidationReport {
    /// A plain-text table, one line per row, and a closing count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = |title: &str, cell: &dyn Fn(&ValidationRow) -> usize| {
            self.rows.iter().map(cell).max().unwrap_or(0).max(title.len())
        };
        let g = width("graph", &|r| r.graph.len());
        let a = width("algorithm", &|r| r.algorithm.len());
        let e = width("engine", &|r| r.engine.len());
        writeln!(
            f,
            "{:<g$}  {:<a$}  {:<e$}  {:>8}  {:<6}  {:>9}  details",
            "graph", "algorithm", "engine", "vertices", "result", "seconds"
        )?;
        for r in &self.rows {
            let result = if r.skipped {
                "skip"
            } else if r.passed {
                "pass"
            } else {
                "FAIL"
            };
            let details = r.mismatch.as_deref().unwrap_or("");
            writeln!(
                f,
                "{:<g$}  {:<a$}  {:<e$}  {:>8}  {:<6}  {:>9.4}  {details}",
                r.graph, r.algorithm, r.engine, r.vertices, result, r.seconds
            )?;
        }
        let passed = self.rows.iter().filter(|r| r.passed).count();
        let skipped = self.skipped().count();
        write!(f, "{passed} of {} passed", self.rows.len() - skipped)?;
        if skipped > 0 {
            write!(f, " ({skipped} skipped: not run by this engine)")?;
        }
        Ok(())
    }
}

/// Builds the store of one validation graph: `(properties file, store directory) -> store`.
pub type GraphLoader<'a> = dyn Fn(&Path, &Path) -> Result<Store> + 'a;

/// Validates every graph of `dir` on the engine of `options`, importing each graph with
/// [`crate::ingest::import`] into a store under `work_dir`.
pub fn validate_graphalytics(
    dir: &Path,
    options: &RunOptions,
    work_dir: &Path,
    progress: &dyn Progress,
) -> Result<ValidationReport> {
    let import = |properties: &Path, store_dir: &Path| -> Result<Store> {
        let import_options =
            ImportOptions { format: InputFormat::Graphalytics, memory: options.memory, ..ImportOptions::default() };
        let inputs = [properties.to_path_buf()];
        Ok(crate::ingest::import(&inputs, store_dir, &import_options, progress, &CancelToken::new())?.0)
    };
    validate_graphalytics_with(dir, options, work_dir, progress, &import)
}

/// [`validate_graphalytics`] with another way to build the stores (tests of the validator
/// and of engines that need stores built with special options).
pub fn validate_graphalytics_with(
    dir: &Path,
    options: &RunOptions,
    work_dir: &Path,
    progress: &dyn Progress,
    load: &GraphLoader<'_>,
) -> Result<ValidationReport> {
    let mut property_files: Vec<PathBuf> = std::fs::read_dir(dir)
        .context(|| format!("reading the validation directory {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "properties"))
        .collect();
    property_files.sort();
    if property_files.is_empty() {
        return Err(Error::invalid(format!(
            "{} holds no *.properties file (not a Graphalytics validation directory)",
            dir.display()
        )));
    }
    let bar = progress.start("validating", Some(property_files.len() as u64), ProgressUnit::Items);
    let mut report = ValidationReport::default();
    for path in &property_files {
        let graph = path.file_stem().unwrap_or_default().to_string_lossy().to_string();
        bar.set_message(&graph);
        let properties = read_properties(path)?;
        let algorithms: Vec<String> = properties
            .get(&format!("graph.{graph}.algorithms"))
            .map(|list| list.split(',').map(|a| a.trim().to_ascii_lowercase()).filter(|a| !a.is_empty()).collect())
            .unwrap_or_default();
        let with_reference: Vec<(String, PathBuf)> = algorithms
            .into_iter()
            .map(|alg| {
                let reference = dir.join(format!("{graph}-{}", alg.to_ascii_uppercase()));
                (alg, reference)
            })
            .filter(|(_, reference)| reference.is_file())
            .collect();
        if with_reference.is_empty() {
            bar.inc(1);
            continue;
        }
        let store = load(path, &work_dir.join(&graph));
        for (algorithm, reference) in with_reference {
            let mut row = ValidationRow {
                graph: graph.clone(),
                algorithm: algorithm.clone(),
                engine: options.engine.name().to_string(),
                vertices: 0,
                passed: false,
                skipped: false,
                mismatch: None,
                seconds: 0.0,
            };
            match &store {
                Err(e) => row.mismatch = Some(format!("import failed: {e}")),
                Ok(store) => {
                    let params = params_for(&properties, &graph, &algorithm, path)?;
                    let runner = Runner::new(store, options.clone());
                    row.engine = runner.engine().name().to_string();
                    row.vertices = store.num_vertices();
                    let started = Instant::now();
                    let result = run_algorithm(&runner, &algorithm, &params);
                    row.seconds = started.elapsed().as_secs_f64();
                    let outcome = match result {
                        Err(Error::Unsupported(why)) => {
                            row.skipped = true;
                            Err(why)
                        }
                        Err(e) => Err(format!("run failed: {e}")),
                        Ok(result) => compare(&algorithm, &reference, &result, store)?,
                    };
                    row.passed = outcome.is_ok();
                    row.mismatch = outcome.err();
                }
            }
            if let (Some(why), false) = (&row.mismatch, row.skipped) {
                progress.note(&format!("{graph} {algorithm}: FAIL: {why}"));
            }
            report.rows.push(row);
        }
        bar.inc(1);
    }
    bar.finish();
    Ok(report)
}

/// Reads a Java properties file (`key = value` or `key: value`, `#` and `!` comments).
pub fn read_properties(path: &Path) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).context(|| format!("reading {}", path.display()))?;
    let mut map = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let (key, value) = line.split_once(['=', ':']).unwrap_or((line, ""));
        map.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(map)
}

/// The parameters of `algorithm` on `graph` from its properties.
fn params_for(
    properties: &BTreeMap<String, String>,
    graph: &str,
    algorithm: &str,
    path: &Path,
) -> Result<AlgorithmParams> {
    let get = |key: &str| properties.get(&format!("graph.{graph}.{algorithm}.{key}")).cloned();
    fn parse<T: std::str::FromStr>(value: Option<String>, key: &str, path: &Path) -> Result<Option<T>> {
        value
            .map(|v| {
                v.parse::<T>().map_err(|_| Error::input(path, None, format!("{key} = '{v}' is not a valid value")))
            })
            .transpose()
    }
    let mut params = AlgorithmParams::default();
    match algorithm {
        "bfs" | "sssp" => params.source = get("source-vertex"),
        "cdlp" => params.iterations = parse(get("max-iterations"), "cdlp.max-iterations", path)?,
        "pr" => {
            params.iterations = parse(get("num-iterations"), "pr.num-iterations", path)?;
            params.damping = parse(get("damping-factor"), "pr.damping-factor", path)?;
        }
        _ => {}
    }
    Ok(params)
}

/// Compares one result with its reference file; `Ok(Err(why))` is a mismatch.
fn compare(algorithm: &str, reference: &Path, result: &AlgorithmResult, store: &Store) -> Result<Result<(), String>> {
    let expected = read_reference(reference)?;
    let original = store.ids()?.all_u64()?;
    let Some((_, column)) = result.columns.first() else {
        return Ok(Err("the result has no column".into()));
    };
    let as_u64 = |values: &[u64], map: &dyn Fn(u64) -> u64| -> Vec<(u64, u64)> {
        original.iter().zip(values).map(|(&v, &x)| (v, map(x))).collect()
    };
    let integers = match column {
        ValueColumn::Hops(h) => Some(as_u64(h, &|d| if d == u64::MAX { BFS_UNREACHABLE } else { d })),
        ValueColumn::Label(l) => Some(as_u64(l, &|label| original[label as usize])),
        ValueColumn::Count(c) => Some(as_u64(c, &|c| c)),
        ValueColumn::Float(_) => None,
    };
    let parse_u64 = |(line, v, text): &(u64, u64, String)| {
        text.parse::<u64>()
            .map(|x| (*v, x))
            .map_err(|_| Error::input(reference, Some(*line), format!("'{text}' is not an integer")))
    };
    let parse_f64 = |(line, v, text): &(u64, u64, String)| {
        parse_real(text)
            .map(|x| (*v, x))
            .ok_or_else(|| Error::input(reference, Some(*line), format!("'{text}' is not a number")))
    };
    Ok(match (algorithm, integers, column) {
        ("wcc", Some(got), _) => check_equivalent(&expected.iter().map(parse_u64).collect::<Result<Vec<_>>>()?, &got),
        ("bfs" | "cdlp", Some(got), _) => {
            check_exact(&expected.iter().map(parse_u64).collect::<Result<Vec<_>>>()?, &got)
        }
        ("pr" | "lcc" | "sssp", None, ValueColumn::Float(values)) => {
            let got: Vec<(u64, f64)> = original.iter().copied().zip(values.iter().copied()).collect();
            check_epsilon(&expected.iter().map(parse_f64).collect::<Result<Vec<_>>>()?, &got)
        }
        _ => Err(format!("no validation rule for {algorithm} with a {} column", column_kind(column))),
    })
}

fn column_kind(column: &ValueColumn) -> &'static str {
    match column {
        ValueColumn::Hops(_) => "hops",
        ValueColumn::Float(_) => "float",
        ValueColumn::Label(_) => "label",
        ValueColumn::Count(_) => "count",
    }
}

/// Reads `vertex value` lines as (line number, vertex, value text).
fn read_reference(path: &Path) -> Result<Vec<(u64, u64, String)>> {
    let text = std::fs::read_to_string(path).context(|| format!("reading {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i as u64 + 1;
        let mut fields = line.split_whitespace();
        let (Some(vertex), Some(value), None) = (fields.next(), fields.next(), fields.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(Error::input(path, Some(line_no), format!("expected 'vertex value', got '{line}'")));
        };
        let vertex = vertex.parse::<u64>().map_err(|_| {
            Error::input(path, Some(line_no), format!("vertex id '{vertex}' is not an unsigned integer"))
        })?;
        rows.push((line_no, vertex, value.to_string()));
    }
    Ok(rows)
}

/// Parses a real number, accepting `infinity`/`Infinity`/`inf` (and a leading sign).
pub fn parse_real(text: &str) -> Option<f64> {
    let (sign, magnitude) = match text.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    if magnitude.eq_ignore_ascii_case("infinity") || magnitude.eq_ignore_ascii_case("inf") {
        return Some(sign * f64::INFINITY);
    }
    let value: f64 = magnitude.parse().ok()?;
    value.is_finite().then_some(sign * value)
}

/// Pairs expected and obtained values by vertex, checking that each side lists every vertex
/// exactly once and that both list the same vertices.
pub fn pair_by_vertex<T: Copy>(expected: &[(u64, T)], got: &[(u64, T)]) -> Result<Vec<(u64, T, T)>, String> {
    let mut by_vertex: BTreeMap<u64, (Option<T>, Option<T>)> = BTreeMap::new();
    for &(v, x) in expected {
        let slot = by_vertex.entry(v).or_default();
        if slot.0.replace(x).is_some() {
            return Err(format!("vertex {v} appears more than once in the expected output"));
        }
    }
    for &(v, x) in got {
        let slot = by_vertex.entry(v).or_default();
        if slot.1.replace(x).is_some() {
            return Err(format!("vertex {v} appears more than once in the result"));
        }
    }
    by_vertex
        .into_iter()
        .map(|(v, pair)| match pair {
            (Some(e), Some(g)) => Ok((v, e, g)),
            (Some(_), None) => Err(format!("vertex {v} is missing from the result")),
            _ => Err(format!("vertex {v} is in the result but not in the expected output")),
        })
        .collect()
}

/// Exact rule (BFS, CDLP): every vertex's value equals the reference.
pub fn check_exact(expected: &[(u64, u64)], got: &[(u64, u64)]) -> Result<(), String> {
    for (v, e, g) in pair_by_vertex(expected, got)? {
        if e != g {
            return Err(format!("vertex {v}: expected {e}, got {g}"));
        }
    }
    Ok(())
}

/// Equivalence rule (WCC): two vertices share a label in the result exactly when they share
/// one in the reference.
pub fn check_equivalent(expected: &[(u64, u64)], got: &[(u64, u64)]) -> Result<(), String> {
    // label on one side -> (label on the other side, first vertex seen with it)
    let mut expected_to_got: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut got_to_expected: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (v, e, g) in pair_by_vertex(expected, got)? {
        match expected_to_got.entry(e) {
            Entry::Vacant(slot) => {
                slot.insert((g, v));
            }
            Entry::Occupied(seen) if seen.get().0 != g => {
                let u = seen.get().1;
                return Err(format!(
                    "vertices {u} and {v} are in one component in the expected output (label {e}) \
                     but in different ones in the result (labels {} and {g})",
                    seen.get().0
                ));
            }
            Entry::Occupied(_) => {}
        }
        match got_to_expected.entry(g) {
            Entry::Vacant(slot) => {
                slot.insert((e, v));
            }
            Entry::Occupied(seen) if seen.get().0 != e => {
                let u = seen.get().1;
                return Err(format!(
                    "vertices {u} and {v} are in one component in the result (label {g}) \
                     but in different ones in the expected output (labels {} and {e})",
                    seen.get().0
                ));
            }
            Entry::Occupied(_) => {}
        }
    }
    Ok(())
}

/// Epsilon rule (PR, LCC, SSSP): `|ref − got| ≤ 1e-4 · |ref|`; an infinite reference needs
/// the same infinity, and NaN never matches.
pub fn check_epsilon(expected: &[(u64, f64)], got: &[(u64, f64)]) -> Result<(), String> {
    for (v, e, g) in pair_by_vertex(expected, got)? {
        let ok = if e.is_infinite() { g == e } else { (e - g).abs() <= EPSILON * e.abs() };
        if !ok {
            return Err(format!("vertex {v}: expected {e:e}, got {g:e} (allowed relative error {EPSILON:e})"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reals_like_graphalytics_writes_them() {
        assert_eq!(parse_real("infinity"), Some(f64::INFINITY));
        assert_eq!(parse_real("Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_real("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_real("8.300000000000001e-01"), Some(0.8300000000000001));
        assert_eq!(parse_real("NaN"), None);
        assert_eq!(parse_real("zero"), None);
    }

    #[test]
    fn reads_java_properties() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.properties");
        std::fs::write(&path, "# comment\n! other\ngraph.g.directed = true\ngraph.g.bfs.source-vertex: 7\n\n").unwrap();
        let props = read_properties(&path).unwrap();
        assert_eq!(props.len(), 2);
        assert_eq!(props["graph.g.directed"], "true");
        let params = params_for(&props, "g", "bfs", &path).unwrap();
        assert_eq!(params.source.as_deref(), Some("7"));
    }

    #[test]
    fn report_table_counts_failures() {
        let row = |passed| ValidationRow {
            graph: "g".into(),
            algorithm: "bfs".into(),
            engine: "inmem".into(),
            vertices: 3,
            passed,
            skipped: false,
            mismatch: (!passed).then(|| "vertex 1: expected 1, got 2".into()),
            seconds: 0.0,
        };
        let report = ValidationReport { rows: vec![row(true), row(false)] };
        assert!(!report.all_passed());
        let text = report.to_string();
        assert!(text.contains("FAIL") && text.contains("vertex 1: expected 1, got 2"), "{text}");
        assert!(text.ends_with("1 of 2 passed"));
        assert!(!ValidationReport::default().all_passed());
    }

    #[test]
    fn rows_the_engine_does_not_run_are_skipped_not_failed() {
        let skipped = ValidationRow {
            graph: "g".into(),
            algorithm: "cdlp".into(),
            engine: "stream".into(),
            vertices: 3,
            passed: false,
            skipped: true,
            mismatch: Some("the stream engine does not run Pregel programs".into()),
            seconds: 0.0,
        };
        let passed =
            ValidationRow { algorithm: "bfs".into(), passed: true, skipped: false, mismatch: None, ..skipped.clone() };
        let report = ValidationReport { rows: vec![passed, skipped.clone()] };
        assert!(report.all_passed());
        let text = report.to_string();
        assert!(text.contains("skip") && text.ends_with("1 of 1 passed (1 skipped: not run by this engine)"), "{text}");
        // Nothing that ran is not a pass.
        assert!(!ValidationReport { rows: vec![skipped] }.all_passed());
    }
}
