//! BFS tree (networkx `bfs_edges`/`bfs_tree`/`bfs_predecessors`, igraph `bfs` parents): the hop
//! depth of every vertex from a source along out-edges, as [`super::bfs`], and its parent in a
//! BFS tree. A vertex at depth d ≥ 1 can hang under any in-neighbour at depth d − 1; the parent
//! is the one of smallest original id, so every engine, in whatever order it delivers
//! messages, gives the same tree. The source and the vertices it cannot reach are their own
//! parent (the depth column tells them apart: 0 and unreachable).
//!
//! As a vertex program: the frontier scatters (depth + 1, its original-id rank), `combine`
//! keeps the lexicographic minimum, and `apply` keeps the smaller pair; a vertex joins the next
//! frontier when its depth improved. The minimum is a selection, so messages may arrive late
//! (shards' delayed delivery) and the fixed point is still the smallest (depth, parent).

use super::bfs::{check_source, UNREACHABLE};
use super::{AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::Result;
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// BFS-tree parameters (no defaults: the source is required).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Dense id of the source vertex.
    pub source: VertexId,
}

/// Depth and parent (a dense id) per vertex in dense-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfsTreeOutput {
    /// Hop depth; [`UNREACHABLE`] where not reached.
    pub depth: Vec<u64>,
    /// Parent in the BFS tree; the vertex itself for the source and unreachable vertices.
    pub parent: Vec<VertexId>,
}

struct BfsTree<'a> {
    source: VertexId,
    /// Original-id rank per dense id on reordered stores (dense id = rank otherwise).
    rank: Option<&'a [u64]>,
}

impl BfsTree<'_> {
    fn rank_of(&self, v: VertexId) -> u64 {
        self.rank.map_or(v, |rank| rank[v as usize])
    }
}

impl VertexProgram for BfsTree<'_> {
    /// (depth, original-id rank of the parent).
    type Value = (u64, u64);
    type Msg = (u64, u64);

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn checkpoint_key(&self) -> String {
        format!("source {}", self.source)
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> (u64, u64) {
        if v == self.source {
            (0, self.rank_of(v))
        } else {
            (UNREACHABLE, u64::MAX)
        }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        v == self.source
    }
    fn scatter(&self, value: &(u64, u64), edge: EdgeRef) -> Option<(u64, u64)> {
        Some((value.0 + 1, self.rank_of(edge.source)))
    }
    fn combine(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        a.min(b)
    }
    fn identity(&self) -> (u64, u64) {
        (UNREACHABLE, u64::MAX)
    }
    fn apply(&self, _: VertexId, value: &mut (u64, u64), candidate: (u64, u64), _: &IterationContext) -> bool {
        let deeper = candidate.0 < value.0;
        if candidate < *value {
            *value = candidate;
        }
        deeper
    }
}

pub fn run(runner: &Runner, config: &Config) -> Result<BfsTreeOutput> {
    check_source(runner, config.source)?;
    let rank = runner.original_ranks()?;
    let values = runner.run_vertex_program_wire(&BfsTree { source: config.source, rank: rank.as_deref() })?;
    let (depth, parent_rank): (Vec<u64>, Vec<u64>) = values.into_iter().unzip();
    // Unreached vertices are their own parent: their own rank before mapping ranks back.
    let own_rank = |v: usize| rank.as_ref().map_or(v as u64, |r| r[v]);
    let parent_rank = parent_rank.into_iter().enumerate().map(|(v, p)| if p == u64::MAX { own_rank(v) } else { p });
    let parent_rank = parent_rank.collect();
    drop(rank);
    let parent = runner.ranks_to_dense(parent_rank)?;
    Ok(BfsTreeOutput { depth, parent })
}

impl From<BfsTreeOutput> for AlgorithmResult {
    fn from(out: BfsTreeOutput) -> Self {
        let reached = out.depth.iter().filter(|&&d| d != UNREACHABLE).count();
        AlgorithmResult {
            algorithm: "bfs-parents".to_string(),
            columns: vec![
                ("depth".to_string(), ValueColumn::Hops(out.depth)),
                ("parent".to_string(), ValueColumn::Label(out.parent)),
            ],
            summary: [("reached".to_string(), reached.into())].into_iter().collect(),
        }
    }
}
