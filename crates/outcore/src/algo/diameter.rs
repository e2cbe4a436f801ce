//! Approximate diameter by repeated BFS ("DIAM" in the BASC paper §5: "runs BFS multiple
//! times, first from a random vertex and then from the vertices with the maximum distances in
//! previous runs"; the double-sweep lower bound of Magnien et al.).
//!
//! Each sweep is a level-synchronous BFS along out-edges; its eccentricity (the largest finite
//! depth) is a true shortest-path distance, so the maximum over the sweeps is a **lower bound**
//! of the diameter (the largest finite distance between two vertices). On trees and grids
//! (undirected) two sweeps already give the exact diameter: the farthest vertex from any vertex
//! of a tree is an end of a longest path, and on a grid it is a corner.
//!
//! On directed graphs the sweeps alternate between out-edges and in-edges (the directed
//! 2-sweep of Crescenzi et al.): a forward sweep from `s` finds the vertex `t` farthest from
//! `s`, the backward sweep from `t` finds the vertex farthest *to* `t`, and so on. The farthest
//! vertex of a forward sweep is often a sink, from which a second forward sweep would reach
//! nothing; every backward eccentricity is a distance d(v, t) as well, so the bound stays valid.
//!
//! The first source is a random vertex (`seed`; vertices are drawn by their rank in original-id
//! order, so the choice does not depend on the store's ordering); a vertex whose BFS reaches no
//! other vertex is replaced by another draw (at most 64 draws). Each later sweep starts from the
//! farthest vertex of the previous sweep that has not been a source yet (ties: smallest dense
//! id). `sweeps` BFS runs are made (default 4), fewer when no new source is left.
//!
//! Output: the diameter bound and the sweeps in the summary, and per vertex the largest
//! distance between it and a sweep source found by the sweeps (`eccentricity_lower_bound`; on
//! undirected graphs a lower bound of the vertex's eccentricity), or unreachable when no sweep
//! reached it.

use super::bfs::Bfs;
use super::msbfs::sample_sources;
use super::{AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::EdgeDirection;
use crate::VertexId;

/// Depth of vertices a sweep does not reach.
pub const UNREACHABLE: u64 = u64::MAX;

/// Default number of sweeps.
pub const DEFAULT_SWEEPS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Number of BFS sweeps (at least 1).
    pub sweeps: usize,
    /// Seed of the first, random source.
    pub seed: u64,
    /// Start from this vertex instead of a random one.
    pub first_source: Option<VertexId>,
}

impl Default for Config {
    fn default() -> Self {
        Config { sweeps: DEFAULT_SWEEPS, seed: 0, first_source: None }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiameterOutput {
    /// The largest eccentricity found: a lower bound of the diameter.
    pub diameter: u64,
    /// (source, eccentricity) of each sweep, in order.
    pub sweeps: Vec<(VertexId, u64)>,
    /// Per vertex, the largest distance to it from a sweep source ([`UNREACHABLE`] if none).
    pub eccentricity_lower_bound: Vec<u64>,
}

/// Eccentricity of a sweep and how many vertices it reached.
fn eccentricity(depth: &[u64]) -> (u64, usize) {
    let reached: Vec<u64> = depth.iter().copied().filter(|&d| d != UNREACHABLE).collect();
    (reached.iter().copied().max().unwrap_or(0), reached.len())
}

pub fn run(runner: &Runner, config: &Config) -> Result<DiameterOutput> {
    let n = runner.graph_info().num_vertices;
    let directed = runner.graph_info().directed;
    if n == 0 {
        return Ok(DiameterOutput { diameter: 0, sweeps: Vec::new(), eccentricity_lower_bound: Vec::new() });
    }
    if config.sweeps == 0 {
        return Err(Error::invalid("diameter needs at least one sweep (--sweeps N, N >= 1)"));
    }
    let mut bound = vec![UNREACHABLE; n as usize];
    let mut sweeps: Vec<(VertexId, u64)> = Vec::new();
    let mut record = |source: VertexId, depth: &[u64], sweeps: &mut Vec<(VertexId, u64)>| {
        for (b, &d) in bound.iter_mut().zip(depth) {
            if d != UNREACHABLE && (*b == UNREACHABLE || d > *b) {
                *b = d;
            }
        }
        sweeps.push((source, eccentricity(depth).0));
    };

    // First sweep: a given vertex, or random draws until one reaches another vertex.
    let mut depth;
    let mut source;
    match config.first_source {
        Some(s) if s >= n => return Err(Error::invalid(format!("source vertex (dense id {s}) is not in the graph"))),
        Some(s) => {
            source = s;
            depth = runner.run_vertex_program(&Bfs { source, direction: EdgeDirection::Out })?;
        }
        None => {
            let mut draw = 0u64;
            loop {
                source = sample_sources(runner, 1, config.seed.wrapping_add(draw))?[0];
                depth = runner.run_vertex_program(&Bfs { source, direction: EdgeDirection::Out })?;
                draw += 1;
                if eccentricity(&depth).1 > 1 || draw >= 64 {
                    break;
                }
            }
        }
    }
    record(source, &depth, &mut sweeps);
    while sweeps.len() < config.sweeps {
        // The farthest vertex not used as a source yet.
        let next = depth
            .iter()
            .enumerate()
            .filter(|&(v, &d)| d != UNREACHABLE && !sweeps.iter().any(|&(s, _)| s == v as u64))
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map(|(v, _)| v as VertexId);
        let Some(next) = next else { break };
        let backward = directed && sweeps.len() % 2 == 1;
        let direction = if backward { EdgeDirection::In } else { EdgeDirection::Out };
        depth = runner.run_vertex_program(&Bfs { source: next, direction })?;
        record(next, &depth, &mut sweeps);
    }
    let diameter = sweeps.iter().map(|&(_, e)| e).max().unwrap_or(0);
    Ok(DiameterOutput { diameter, sweeps, eccentricity_lower_bound: bound })
}

impl From<DiameterOutput> for AlgorithmResult {
    fn from(out: DiameterOutput) -> Self {
        let mut summary = serde_json::Map::new();
        summary.insert("diameter_lower_bound".into(), out.diameter.into());
        summary.insert("sweeps".into(), out.sweeps.len().into());
        summary.insert(
            "sweep_eccentricities".into(),
            out.sweeps.iter().map(|&(_, e)| serde_json::Value::from(e)).collect::<Vec<_>>().into(),
        );
        AlgorithmResult {
            algorithm: "diameter".into(),
            columns: vec![("eccentricity_lower_bound".into(), ValueColumn::Hops(out.eccentricity_lower_bound))],
            summary,
        }
    }
}
