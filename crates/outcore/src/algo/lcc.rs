//! Local clustering coefficient (LDBC Graphalytics LCC, specification §2.3.4). For a vertex v
//! let N(v) = N_in(v) ∪ N_out(v) \ {v} and d = |N(v)|. LCC(v) = 0 when d ≤ 1, otherwise the
//! number of ordered pairs (u, w) of neighbours in N(v) with an arc u → w, divided by d(d − 1).
//! Duplicate arcs and self-loops do not count. On an undirected store both arcs of an edge are
//! stored, so this is the usual 2·|edges among N(v)| / (d(d − 1)).
//!
//! A Pregel program counting each neighbour pair once, at its higher-ranked end, where rank is
//! (d, id) — the degree ordering of triangle listing (Schank and Wagner 2005; TurboGraph++'s
//! partial order), so that a vertex of huge degree never ships its list to all its neighbours:
//! * superstep 0: every vertex sends its degree d to each neighbour in N(v);
//! * superstep 1: every vertex sends N(v) to each neighbour of higher rank;
//! * superstep 2: vertex x, receiving N(w) from a lower-ranked neighbour w, counts the arcs
//!   a between w and x (w → x and x → w: 1 or 2) and sends `a` to every common neighbour
//!   c ∈ N(w) ∩ N(x): the pairs (w, x) and (x, w) of c's neighbours hold a arcs;
//! * superstep 3: each vertex sums what it received and divides by d(d − 1).
//!
//! On engines that run neighborhood queries (nwsm) the same count is a two-level query
//! ([`LccQuery`], TurboGraph++ Figure 19 extended): every triangle u < v < w is found once, and
//! each corner gathers the arcs between the two others (1 or 2, read from the direction bits of
//! the list entries), so the numerator is the same integer and the quotient the same float.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::nwsm::{Emitter, Nbr, NeighborhoodQuery, NeighborhoodView};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::Result;
use crate::program::{GraphInfo, PregelContext, PregelProgram};
use crate::VertexId;

/// LCC has no parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config;

/// Local clustering coefficient per vertex, in dense-id order.
#[derive(Debug, Clone, PartialEq)]
pub struct LccOutput {
    pub lcc: Vec<f64>,
}

#[derive(Debug, Clone)]
enum Msg {
    Degree(VertexId, usize),
    Neighbors(VertexId, Vec<VertexId>),
    ClosedArcs(u64),
}

struct Lcc;

fn sorted_unique(ids: impl Iterator<Item = VertexId>, without: VertexId) -> Vec<VertexId> {
    let mut v: Vec<VertexId> = ids.filter(|&u| u != without).collect();
    v.sort_unstable();
    v.dedup();
    v
}

impl PregelProgram for Lcc {
    type Value = f64;
    type Msg = Msg;

    fn init(&self, _: VertexId, _: &GraphInfo) -> f64 {
        0.0
    }
    fn needs_in_edges(&self) -> bool {
        true
    }
    fn compute(&self, ctx: &mut dyn PregelContext<Msg>, lcc: &mut f64, messages: &[Msg]) {
        // Lists, `send` and the messages name vertices as `name()` does (not the dense id).
        let v = ctx.name();
        let neighbors = sorted_unique(ctx.out_neighbors().iter().chain(ctx.in_neighbors()).copied(), v);
        let d = neighbors.len();
        match ctx.superstep() {
            0 => neighbors.iter().for_each(|&u| ctx.send(u, Msg::Degree(v, d))),
            1 => {
                for msg in messages {
                    if let Msg::Degree(u, du) = *msg {
                        if (d, v) < (du, u) {
                            ctx.send(u, Msg::Neighbors(v, neighbors.clone()));
                        }
                    }
                }
            }
            2 => {
                let out = sorted_unique(ctx.out_neighbors().iter().copied(), v);
                let inn = sorted_unique(ctx.in_neighbors().iter().copied(), v);
                for msg in messages {
                    if let Msg::Neighbors(w, their) = msg {
                        let arcs = out.binary_search(w).is_ok() as u64 + inn.binary_search(w).is_ok() as u64;
                        for &c in their.iter().filter(|c| neighbors.binary_search(c).is_ok()) {
                            ctx.send(c, Msg::ClosedArcs(arcs));
                        }
                    }
                }
            }
            _ => {
                let closed: u64 = messages.iter().map(|m| if let Msg::ClosedArcs(a) = m { *a } else { 0 }).sum();
                *lcc = if d <= 1 { 0.0 } else { closed as f64 / (d as f64 * (d as f64 - 1.0)) };
            }
        }
        ctx.vote_to_halt();
    }
    fn combine(&self, a: &Msg, b: &Msg) -> Option<Msg> {
        match (a, b) {
            (Msg::ClosedArcs(x), Msg::ClosedArcs(y)) => Some(Msg::ClosedArcs(x + y)),
            _ => None,
        }
    }
    fn has_combiner(&self) -> bool {
        true
    }
    fn max_supersteps(&self) -> Option<usize> {
        Some(4)
    }
}

/// LCC as a neighborhood query: triangles as in `tc.rs`, each corner gathering the arcs that
/// join the other two.
struct LccQuery;

impl NeighborhoodQuery for LccQuery {
    type Value = u64;
    type Output = f64;

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
            adj.iter().filter(|v| u < v.id()).for_each(|v| out.mark(2, v.id()));
            return;
        }
        let v = u;
        let mut closed_at_v = 0;
        for parent in view.parent_list(1, v).iter().filter(|p| p.id() < v) {
            let u = parent.id();
            let mut closed_at_u = 0;
            view.common_neighbors_after(u, v, v).for_each(|(w_of_u, w_of_v)| {
                out.update(w_of_u.id(), parent.arcs());
                closed_at_u += w_of_v.arcs();
                closed_at_v += w_of_u.arcs();
            });
            if closed_at_u > 0 {
                out.update(u, closed_at_u);
            }
        }
        if closed_at_v > 0 {
            out.update(v, closed_at_v);
        }
    }
    fn vertex_gather(&self, gathered: u64, update: u64) -> u64 {
        gathered + update
    }
    fn vertex_apply(&self, _: VertexId, d: u64, closed: u64) -> f64 {
        if d <= 1 {
            0.0
        } else {
            closed as f64 / (d as f64 * (d as f64 - 1.0))
        }
    }
}

pub fn run(runner: &Runner, _config: &Config) -> Result<LccOutput> {
    // The query first: every engine that runs both prefers it (it intersects lists instead of
    // sending them as messages).
    let forms = [ProgramShape::query(2, 8), ProgramShape::pregel(&Lcc, false)];
    let lcc = runner.run_forms(&forms, |form| match form {
        0 => Ok(runner.run_neighborhood_query(&LccQuery)?.values),
        _ => runner.run_pregel(&Lcc),
    })?;
    Ok(LccOutput { lcc })
}

impl From<LccOutput> for AlgorithmResult {
    fn from(out: LccOutput) -> Self {
        let mean = if out.lcc.is_empty() { 0.0 } else { out.lcc.iter().sum::<f64>() / out.lcc.len() as f64 };
        single_column("lcc", "lcc", ValueColumn::Float(out.lcc), [("mean", mean.into())])
    }
}
