//! Weakly connected components (LDBC Graphalytics WCC): vertices joined by a path when edge
//! directions are ignored share a label, the smallest vertex id of their component. Dense ids
//! are assigned in ascending original-id order at import, so the smallest dense id is the
//! smallest original id, and outputs print the label as that vertex's original id.
//!
//! As a vertex program: minimum-label propagation (the HCC algorithm of Kang et al., also
//! Redio's and GraphD's WCC) along out- and in-edges ([`EdgeDirection::Both`]); a vertex whose
//! label dropped sends it on in the next iteration.
//!
//! On a reordered store (`outcore reorder`, `import --order`) dense ids no longer follow
//! original ids, so labels propagate as original-id *ranks* ([`Runner::original_ranks`]) and
//! are mapped back to the dense id of the component's smallest original id at the end.
//!
//! On engines that run neighborhood queries (nwsm) each propagation round is a one-level
//! query ([`WccRound`], TurboGraph++ §2.3 with k = 1): every vertex of a level-1 window sends
//! its label over its full list (both directions), targets gather the minimum, and apply keeps
//! the smaller of the old label and the gathered one; rounds run until no label drops.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::Result;
use crate::program::{EdgeDirection, EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::program::{Emitter, Min, Nbr, NeighborhoodQuery, NeighborhoodView};
use crate::VertexId;

/// WCC has no parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config;

/// Component label (dense id of the component's smallest vertex) per vertex, in dense-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WccOutput {
    pub component: Vec<VertexId>,
}

impl WccOutput {
    /// Number of components.
    pub fn count(&self) -> usize {
        self.component.iter().enumerate().filter(|&(v, &c)| v as u64 == c).count()
    }
}

struct Wcc<'a> {
    /// Original-id rank per dense id on reordered stores.
    rank: Option<&'a [u64]>,
}

impl VertexProgram for Wcc<'_> {
    type Value = VertexId;
    type Msg = VertexId;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn direction(&self) -> EdgeDirection {
        EdgeDirection::Both
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> VertexId {
        self.rank.map_or(v, |rank| rank[v as usize])
    }
    fn scatter(&self, label: &VertexId, _: EdgeRef) -> Option<VertexId> {
        Some(*label)
    }
    fn combine(&self, a: VertexId, b: VertexId) -> VertexId {
        a.min(b)
    }
    fn identity(&self) -> VertexId {
        VertexId::MAX
    }
    fn apply(&self, _: VertexId, label: &mut VertexId, candidate: VertexId, _: &IterationContext) -> bool {
        let improved = candidate < *label;
        if improved {
            *label = candidate;
        }
        improved
    }
}

/// One round of label propagation as a one-level neighborhood query over full lists.
struct WccRound<'a> {
    labels: &'a [u64],
}

impl NeighborhoodQuery for WccRound<'_> {
    type Value = Min<u64>;
    type Output = u64;

    fn levels(&self) -> usize {
        1
    }
    fn adj_scatter(&self, _: usize, view: &dyn NeighborhoodView, out: &mut dyn Emitter<Min<u64>>, u: u64, adj: &[Nbr]) {
        let label = self.labels[view.store_id(u) as usize];
        adj.iter().for_each(|v| out.update(v.id(), Min(label)));
    }
    fn vertex_gather(&self, gathered: Min<u64>, update: Min<u64>) -> Min<u64> {
        gathered.min(update)
    }
    fn vertex_apply(&self, v: VertexId, _: u64, gathered: Min<u64>) -> u64 {
        self.labels[v as usize].min(gathered.0)
    }
}

pub fn run(runner: &Runner, _config: &Config) -> Result<WccOutput> {
    let rank = runner.original_ranks()?;
    let program = Wcc { rank: rank.as_deref() };
    let forms = [ProgramShape::vertex_wire(&program), ProgramShape::query_rounds(1, 8, None)];
    let labels = runner.run_forms(&forms, |form| match form {
        0 => runner.run_vertex_program_wire(&program),
        _ => {
            let labels: Vec<u64> =
                (0..runner.graph_info().num_vertices).map(|v| rank.as_ref().map_or(v, |r| r[v as usize])).collect();
            super::until_stable(labels, |labels| Ok(runner.run_neighborhood_query(&WccRound { labels })?.values))
        }
    })?;
    Ok(WccOutput { component: super::ranks_to_dense(rank.as_deref(), labels) })
}

impl From<WccOutput> for AlgorithmResult {
    fn from(out: WccOutput) -> Self {
        let count = out.count();
        single_column("wcc", "component", ValueColumn::Label(out.component), [("components", count.into())])
    }
}
