//! Core numbers (k-core decomposition; networkx `core_number`, igraph `coreness`): the core
//! number of v is the largest k such that v belongs to a subgraph in which every vertex has
//! degree at least k. The k-core itself is the set of vertices of core number ≥ k.
//!
//! The distributed h-index iteration of Montresor, De Pellegrini and Miorandi ("Distributed
//! k-Core Decomposition", IEEE TPDS 2013, §3, Algorithm 1): every vertex's estimate starts at
//! its degree and becomes the h-index of its neighbours' estimates (the largest i ≤ the old
//! estimate with at least i neighbours estimating ≥ i) until no estimate changes (Theorem 1:
//! the fixed point is the core number). Estimates only decrease, so the run ends.
//!
//! The h-index needs the multiset of neighbour estimates, which no combiner can fold, so this
//! is a Pregel program: in every superstep each vertex sends its estimate to all its
//! neighbours, and superstep s ≥ 1 takes the h-index of the estimates sent in superstep s − 1.
//! The aggregate counts the estimates that dropped; the run stops after the first superstep
//! s ≥ 1 in which none did (the next one would receive the same estimates again).
//!
//! Directions are ignored. On a directed store a vertex's neighbours are its in- and
//! out-neighbours with one entry per arc, so its degree is in-degree + out-degree and a
//! neighbour joined both ways counts twice — what networkx's `core_number` does on a
//! `DiGraph`. Self-loops are skipped (networkx refuses them); duplicate arcs count once each.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::Result;
use crate::program::{Control, GraphInfo, PregelContext, PregelProgram};
use crate::VertexId;

/// k-core has no parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config;

/// Core number per vertex, in dense-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KcoreOutput {
    pub core: Vec<u64>,
}

struct Kcore;

/// The largest i ≤ `cap` such that at least i of `estimates` are ≥ i.
fn h_index(estimates: &[u64], cap: u64) -> u64 {
    let cap = cap as usize;
    // count[i] = estimates equal to i, with everything above `cap` counted at `cap`.
    let mut count = vec![0u64; cap + 1];
    for &e in estimates {
        count[(e as usize).min(cap)] += 1;
    }
    let mut at_least = 0;
    for i in (1..=cap).rev() {
        at_least += count[i];
        if at_least >= i as u64 {
            return i as u64;
        }
    }
    0
}

impl PregelProgram for Kcore {
    type Value = u64;
    type Msg = u64;

    fn init(&self, _: VertexId, _: &GraphInfo) -> u64 {
        0
    }
    fn needs_in_edges(&self) -> bool {
        true
    }
    fn compute(&self, ctx: &mut dyn PregelContext<u64>, estimate: &mut u64, estimates: &[u64]) {
        let v = ctx.vertex();
        let mut neighbors: Vec<VertexId> = ctx.out_neighbors().iter().copied().filter(|&u| u != v).collect();
        if ctx.graph().directed {
            neighbors.extend(ctx.in_neighbors().iter().copied().filter(|&u| u != v));
        }
        if ctx.superstep() == 0 {
            *estimate = neighbors.len() as u64;
        } else {
            let h = h_index(estimates, *estimate);
            if h < *estimate {
                *estimate = h;
                ctx.aggregate(1.0);
            }
        }
        for u in neighbors {
            ctx.send(u, *estimate);
        }
    }
    fn end_superstep(&self, superstep: usize, dropped: f64) -> Control {
        if superstep >= 1 && dropped == 0.0 {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

pub fn run(runner: &Runner, _config: &Config) -> Result<KcoreOutput> {
    Ok(KcoreOutput { core: runner.run_pregel_wire(&Kcore)? })
}

impl From<KcoreOutput> for AlgorithmResult {
    fn from(out: KcoreOutput) -> Self {
        let degeneracy = out.core.iter().max().copied().unwrap_or(0);
        single_column("kcore", "core", ValueColumn::Count(out.core), [("degeneracy", degeneracy.into())])
    }
}

#[cfg(test)]
mod tests {
    use super::h_index;

    #[test]
    fn h_index_is_capped_and_counts_values_at_least_i() {
        assert_eq!(h_index(&[], 3), 0);
        assert_eq!(h_index(&[5, 5, 5, 5], 2), 2);
        assert_eq!(h_index(&[3, 1, 2, 3], 4), 2);
        assert_eq!(h_index(&[3, 3, 3, 1], 4), 3);
        assert_eq!(h_index(&[0, 0], 2), 0);
    }
}
