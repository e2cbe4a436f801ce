//! Which engines run which algorithm, generated from the code: every algorithm runs once on a
//! small probe graph while the Runner records the program forms it offered
//! ([`Runner::requested_forms`]); an engine runs the algorithm when it runs one of the offered
//! forms of every program the algorithm ran ([`Engine::refuses`]). `outcore algorithms` prints
//! the matrix, and refusals name the engines that do run an algorithm.
//!
//! [`Engine::refuses`]: crate::engine::planner::Engine::refuses

use super::{run_algorithm, AlgorithmParams, ALGORITHMS};
use crate::engine::planner::{self, PlanGraph, ProgramShape};
use crate::engine::{EngineKind, RunOptions, Runner};
use crate::error::{Error, Result};
use crate::runtime::MemoryBudget;
use crate::store::{build_in_memory, InMemoryGraph, OriginalIds};

/// The engines that run one algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct AlgorithmSupport {
    pub name: &'static str,
    pub description: &'static str,
    /// Every engine but `auto`, in [`planner::engines`] order, with whether it runs the algorithm.
    pub engines: Vec<(EngineKind, bool)>,
    /// The forms of the algorithm's first program (its alternatives, in preference order).
    pub forms: Vec<ProgramShape>,
}

/// Parameters every algorithm accepts on the probe graph (vertices are named 0..).
fn probe_params() -> AlgorithmParams {
    AlgorithmParams {
        source: Some("0".into()),
        sources: vec!["0".into(), "1".into()],
        iterations: Some(2),
        // Loose enough for the iterations above to converge (katz fails when they do not).
        tolerance: Some(1.0),
        k: Some(2),
        ..AlgorithmParams::default()
    }
}

/// The matrix for every algorithm of [`ALGORITHMS`].
pub fn support_matrix() -> Result<Vec<AlgorithmSupport>> {
    let dir = std::env::temp_dir().join(format!("outcore-probe-{}-{}", std::process::id(), unique()));
    let outcome = probe_all(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn unique() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn probe_all(dir: &std::path::Path) -> Result<Vec<AlgorithmSupport>> {
    // A small directed graph with a triangle, a tail and two components (unweighted: weighted
    // stores add refusals of their own, e.g. sssp's one-level queries carry no weights).
    let edges = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (5, 6), (6, 5)];
    let graph = InMemoryGraph {
        vertices: OriginalIds::U64((0..7).collect()),
        edges: edges.iter().map(|&(s, t)| (s, t, 1.0)).collect(),
        directed: true,
        weighted: false,
    };
    // Points for algorithms over points (kmeans: every vertex one arc per dimension).
    let points = InMemoryGraph {
        vertices: OriginalIds::U64((0..4).collect()),
        edges: (0..4).flat_map(|v| (0..2).map(move |d| (v, d, (v * 2 + d) as f64))).collect(),
        directed: true,
        weighted: true,
    };
    // The same graph undirected, for algorithms that refuse directed stores (louvain).
    let undirected = InMemoryGraph { directed: false, ..graph.clone() };
    let stores = [
        build_in_memory(&dir.join("probe"), &graph)?,
        build_in_memory(&dir.join("points"), &points)?,
        build_in_memory(&dir.join("undirected"), &undirected)?,
    ];
    let plan_graph = PlanGraph::of(&stores[0]);
    let mut matrix = Vec::new();
    for &(name, description) in ALGORITHMS {
        let mut requested = None;
        let mut failures = Vec::new();
        for store in &stores {
            let options = RunOptions {
                engine: EngineKind::InMemory,
                memory: MemoryBudget::new(256 << 20),
                ..RunOptions::default()
            };
            let runner = Runner::new(store, options);
            match run_algorithm(&runner, name, &probe_params()) {
                Ok(_) => {
                    requested = Some(runner.requested_forms());
                    break;
                }
                Err(e) => failures.push(e.to_string()),
            }
        }
        let requested = requested.ok_or_else(|| {
            Error::invalid(format!("probing {name} on the probe graphs failed: {}", failures.join("; ")))
        })?;
        let engines = planner::engines()
            .into_iter()
            .map(|engine| {
                let runs = requested
                    .iter()
                    .all(|alternatives| alternatives.iter().any(|shape| engine.refuses(shape, &plan_graph).is_none()));
                (engine.kind(), runs)
            })
            .collect();
        let forms = requested.into_iter().next().unwrap_or_default();
        matrix.push(AlgorithmSupport { name, description, engines, forms });
    }
    Ok(matrix)
}
