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

use super::{single_column, AlgorithmResult, ValueColumn};
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
        let v = ctx.vertex();
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

pub fn run(runner: &Runner, _config: &Config) -> Result<LccOutput> {
    Ok(LccOutput { lcc: runner.run_pregel(&Lcc)? })
}

impl From<LccOutput> for AlgorithmResult {
    fn from(out: LccOutput) -> Self {
        let mean = if out.lcc.is_empty() { 0.0 } else { out.lcc.iter().sum::<f64>() / out.lcc.len() as f64 };
        single_column("lcc", "lcc", ValueColumn::Float(out.lcc), [("mean", mean.into())])
    }
}
