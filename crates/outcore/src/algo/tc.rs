//! Triangle counting: the total number of triangles and the triangles through each vertex, in
//! the simple undirected graph under the store (directions ignored, self-loops and duplicate
//! arcs dropped).
//!
//! A two-level neighborhood query, as TurboGraph++'s Figure 19 (Ko and Han, SIGMOD '18,
//! Appendix A.1): level 1 marks the neighbours `v` of each vertex `u` with `u < v`
//! (`EnumOneHopNbr`); level 2 takes each marked `v`, its parents `u` in the level-1 window, and
//! the common neighbours `w` of `u` and `v` with `v < w` (`FindTriangles`; the constraint `v < w` is applied before intersecting, to the tails of both lists). The partial order
//! `u < v < w` finds every triangle exactly once; on the nwsm engine ids are in descending
//! degree order per rank, which keeps the intersected lists short. Each triangle adds one to
//! the total and one to each of its three corners.

use super::{AlgorithmResult, ValueColumn};
use crate::engine::nwsm::{Emitter, Nbr, NeighborhoodQuery, NeighborhoodView};
use crate::engine::Runner;
use crate::error::Result;
use crate::VertexId;

/// Triangle counting has no parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config;

/// Triangles per vertex (dense-id order) and in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcOutput {
    pub triangles: Vec<u64>,
    pub total: u64,
}

struct TriangleCounting;

impl NeighborhoodQuery for TriangleCounting {
    type Value = u64;
    type Output = u64;

    fn levels(&self) -> usize {
        2
    }

    fn adj_scatter(
        &self,
        level: usize,
        view: &dyn NeighborhoodView,
        out: &mut dyn Emitter<u64>,
        u: VertexId,
        adj: &[Nbr],
    ) {
        if level == 1 {
            // EnumOneHopNbr
            adj.iter().filter(|v| u < v.id()).for_each(|v| out.mark(2, v.id()));
            return;
        }
        // FindTriangles: here `u` is the level-2 vertex v of Figure 19. Corners u and v get
        // one update per pair rather than one per triangle.
        let v = u;
        let mut through_v = 0;
        for parent in view.parent_list(1, v).iter().filter(|p| p.id() < v) {
            let u = parent.id();
            let mut through_pair = 0;
            view.common_neighbors_after(u, v, v).for_each(|(w, _)| {
                out.update(w.id(), 1);
                through_pair += 1;
            });
            if through_pair > 0 {
                out.update(u, through_pair);
                out.aggregate(through_pair);
                through_v += through_pair;
            }
        }
        if through_v > 0 {
            out.update(v, through_v);
        }
    }

    fn vertex_gather(&self, gathered: u64, update: u64) -> u64 {
        gathered + update
    }

    fn vertex_apply(&self, _: VertexId, _: u64, gathered: u64) -> u64 {
        gathered
    }
}

pub fn run(runner: &Runner, _config: &Config) -> Result<TcOutput> {
    let result = runner.run_neighborhood_query(&TriangleCounting)?;
    Ok(TcOutput { triangles: result.values, total: result.aggregate })
}

impl From<TcOutput> for AlgorithmResult {
    fn from(out: TcOutput) -> Self {
        super::single_column("tc", "triangles", ValueColumn::Count(out.triangles), [("triangles", out.total.into())])
    }
}
