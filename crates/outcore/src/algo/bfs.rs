//! Breadth-first search (LDBC Graphalytics BFS): the hop depth of every vertex from a source,
//! following out-edges (both arcs of an undirected edge). The source has depth 0; vertices the
//! source cannot reach get `u64::MAX`, which outputs print as 9223372036854775807 as the
//! Graphalytics specification (§2.3.1) asks.
//!
//! As a vertex program: the frontier scatters `depth + 1`, `combine` keeps the minimum, and a
//! vertex is in the next frontier when its depth improved — level-synchronous BFS, so a vertex
//! settles in the iteration equal to its depth.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeDirection, EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// Depth of the vertices the source cannot reach.
pub const UNREACHABLE: u64 = u64::MAX;

/// BFS parameters (no defaults: the source is required).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Dense id of the source vertex.
    pub source: VertexId,
}

/// Hop depth per vertex in dense-id order; [`UNREACHABLE`] where not reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfsOutput {
    pub depth: Vec<u64>,
}

/// The level-synchronous BFS program, shared with the diameter's sweeps (which also walk
/// backwards, along in-edges).
pub(crate) struct Bfs {
    pub source: VertexId,
    /// `Out` for plain BFS; `In` for a backward sweep.
    pub direction: EdgeDirection,
}

impl VertexProgram for Bfs {
    type Value = u64;
    type Msg = u64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn checkpoint_key(&self) -> String {
        format!("source {}, direction {:?}", self.source, self.direction)
    }
    fn direction(&self) -> EdgeDirection {
        self.direction
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> u64 {
        if v == self.source {
            0
        } else {
            UNREACHABLE
        }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        v == self.source
    }
    fn scatter(&self, depth: &u64, _: EdgeRef) -> Option<u64> {
        Some(depth + 1)
    }
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    fn identity(&self) -> u64 {
        UNREACHABLE
    }
    fn has_global_contributions(&self) -> bool {
        false
    }
    /// Level-synchronous: every message of one iteration carries the same depth, so one
    /// parent in the frontier settles an unreached vertex, and reached vertices never change.
    fn supports_pull(&self) -> bool {
        true
    }
    fn sends_uniform_messages(&self) -> bool {
        true
    }
    /// Every vertex of the frontier has the level's depth.
    fn sends_one_message_per_iteration(&self) -> bool {
        true
    }
    fn pull_wants(&self, depth: &u64) -> bool {
        *depth == UNREACHABLE
    }
    fn pull_satisfied(&self, candidate: &u64) -> bool {
        *candidate != UNREACHABLE
    }
    fn pull_stops_early(&self) -> bool {
        true
    }
    fn apply(&self, _: VertexId, depth: &mut u64, candidate: u64, _: &IterationContext) -> bool {
        let improved = candidate < *depth;
        if improved {
            *depth = candidate;
        }
        improved
    }
}

pub(crate) fn check_source(runner: &Runner, source: VertexId) -> Result<()> {
    let n = runner.graph_info().num_vertices;
    if source >= n {
        return Err(Error::invalid(format!("source vertex (dense id {source}) is not in the graph ({n} vertices)")));
    }
    Ok(())
}

pub fn run(runner: &Runner, config: &Config) -> Result<BfsOutput> {
    check_source(runner, config.source)?;
    let depth = runner.run_vertex_program_wire(&Bfs { source: config.source, direction: EdgeDirection::Out })?;
    Ok(BfsOutput { depth })
}

impl From<BfsOutput> for AlgorithmResult {
    fn from(out: BfsOutput) -> Self {
        let reached = out.depth.iter().filter(|&&d| d != UNREACHABLE).count();
        let max_depth = out.depth.iter().filter(|&&d| d != UNREACHABLE).max().copied().unwrap_or(0);
        let summary = [("reached", reached.into()), ("max_depth", max_depth.into())];
        single_column("bfs", "depth", ValueColumn::Hops(out.depth), summary)
    }
}
