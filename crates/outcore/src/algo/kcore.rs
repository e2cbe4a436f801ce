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
//! The same iteration runs as rounds of one-level neighborhood queries ([`KcoreRound`],
//! TurboGraph++ §2.3 with k = 1) on the engines that run them (nwsm, inmem): each vertex takes
//! the h-index of the estimates of its full list, stored nowhere but in the estimate column.
//! Estimates start above every degree, so the first round gives the degrees. Full lists hold a
//! neighbour once, so this form runs only on graphs without duplicate arcs or self-loops
//! ([`super::simple_graph_out_degrees`]); on others the Runner chooses the Pregel program.
//!
//! Directions are ignored. On a directed store a vertex's neighbours are its in- and
//! out-neighbours with one entry per arc, so its degree is in-degree + out-degree and a
//! neighbour joined both ways counts twice — what networkx's `core_number` does on a
//! `DiGraph`. Self-loops are skipped (networkx refuses them); duplicate arcs count once each.

use std::cell::RefCell;

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::Result;
use crate::program::{send_to_neighbors, Along, Control, GraphInfo, PregelContext, PregelProgram};
use crate::program::{Emitter, Nbr, NeighborhoodQuery, NeighborhoodView};
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

/// Estimate caps up to which [`h_index`] counts in a stack array; larger ones count in a
/// per-thread scratch vector, so that no vertex allocates in any superstep.
const STACK_COUNTS: usize = 64;

thread_local! {
    /// [`h_index`]'s counts for caps of at least [`STACK_COUNTS`], reused across calls.
    static SCRATCH_COUNTS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// The largest i ≤ `cap` such that at least i of `estimates` are ≥ i.
///
/// Runs every superstep on every vertex, so it does not allocate: most estimates no longer
/// change late in a run, and one pass that finds `cap` estimates ≥ `cap` settles those;
/// otherwise it counts in a zeroed array of `cap + 1` (on the stack or in per-thread scratch).
fn h_index(estimates: &[u64], cap: u64) -> u64 {
    // At most `estimates.len()` estimates can be ≥ i, so larger caps answer the same.
    let cap = cap.min(estimates.len() as u64);
    if estimates.iter().filter(|&&e| e >= cap).count() as u64 >= cap {
        return cap;
    }
    let cap = cap as usize;
    if cap < STACK_COUNTS {
        h_index_counting(&mut [0; STACK_COUNTS][..=cap], estimates)
    } else {
        SCRATCH_COUNTS.with_borrow_mut(|count| {
            count.clear();
            count.resize(cap + 1, 0);
            h_index_counting(count, estimates)
        })
    }
}

/// [`h_index`] with cap `count.len() − 1`, counting in `count` (all zeros on entry).
fn h_index_counting(count: &mut [u64], estimates: &[u64]) -> u64 {
    let cap = count.len() - 1;
    // count[i] = estimates equal to i, with everything above `cap` counted at `cap`.
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
    /// Every vertex sends its estimate every superstep, changed or not: a vertex keeps no copy
    /// of its neighbours' estimates (8 bytes a vertex, not a table per arc), so the h-index
    /// needs all of them in each superstep's messages.
    fn compute(&self, ctx: &mut dyn PregelContext<u64>, estimate: &mut u64, estimates: &[u64]) {
        // Self-loops are found by the name lists use, not the dense id (the pregel engine's differ).
        let v = ctx.name();
        let along = if ctx.graph().directed { Along::OutAndIn } else { Along::Out };
        if ctx.superstep() == 0 {
            let out = ctx.out_neighbors().iter().filter(|&&u| u != v).count();
            let inward =
                if along == Along::OutAndIn { ctx.in_neighbors().iter().filter(|&&u| u != v).count() } else { 0 };
            *estimate = (out + inward) as u64;
        } else {
            let h = h_index(estimates, *estimate);
            if h < *estimate {
                *estimate = h;
                ctx.aggregate(1.0);
            }
        }
        send_to_neighbors(ctx, along, Some(v), *estimate);
    }
    fn end_superstep(&self, superstep: usize, dropped: f64) -> Control {
        if superstep >= 1 && dropped == 0.0 {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

/// One round of the h-index iteration as a one-level neighborhood query: every vertex with
/// neighbours sends itself the h-index of their `estimates` (store order, read as the query's
/// column), capped by its own, as h + 1, so that 0, the gather identity, means "no
/// neighbours: core 0".
struct KcoreRound<'a> {
    estimates: &'a [u64],
    directed: bool,
}

impl NeighborhoodQuery for KcoreRound<'_> {
    type Value = u64;
    type Output = u64;

    fn levels(&self) -> usize {
        1
    }
    fn adj_scatter(&self, _: usize, view: &dyn NeighborhoodView, out: &mut dyn Emitter<u64>, u: u64, adj: &[Nbr]) {
        let h = super::with_neighbor_values(view, adj, self.directed, |estimates| h_index(estimates, view.column(u)));
        out.update(u, h + 1);
    }
    fn vertex_gather(&self, gathered: u64, update: u64) -> u64 {
        gathered.max(update)
    }
    fn vertex_apply(&self, _: VertexId, _: u64, gathered: u64) -> u64 {
        gathered.saturating_sub(1)
    }
    fn column(&self) -> Option<&[u64]> {
        Some(self.estimates)
    }
}

fn run_rounds(runner: &Runner) -> Result<Vec<u64>> {
    super::simple_graph_out_degrees(runner, "kcore")?;
    let graph = runner.graph_info();
    let unbounded = vec![u64::MAX; graph.num_vertices as usize];
    super::until_stable(unbounded, |estimates| {
        Ok(runner.run_neighborhood_query(&KcoreRound { estimates, directed: graph.directed })?.values)
    })
}

pub fn run(runner: &Runner, _config: &Config) -> Result<KcoreOutput> {
    // The rounds keep the last estimates beside the engine.
    let forms =
        [ProgramShape::pregel(&Kcore, true), ProgramShape::query_rounds(1, 8, None).with_column().with_state(8)];
    let core = runner.run_forms(&forms, |form| match form {
        0 => runner.run_pregel_wire(&Kcore),
        _ => run_rounds(runner),
    })?;
    Ok(KcoreOutput { core })
}

impl From<KcoreOutput> for AlgorithmResult {
    fn from(out: KcoreOutput) -> Self {
        let degeneracy = out.core.iter().max().copied().unwrap_or(0);
        single_column("kcore", "core", ValueColumn::Count(out.core), [("degeneracy", degeneracy.into())])
    }
}

#[cfg(test)]
mod tests {
    use super::{h_index, STACK_COUNTS};

    #[test]
    fn h_index_is_capped_and_counts_values_at_least_i() {
        assert_eq!(h_index(&[], 3), 0);
        assert_eq!(h_index(&[5, 5, 5, 5], 2), 2);
        assert_eq!(h_index(&[3, 1, 2, 3], 4), 2);
        assert_eq!(h_index(&[3, 3, 3, 1], 4), 3);
        assert_eq!(h_index(&[0, 0], 2), 0);
    }

    /// The definition, directly: the largest i ≤ cap with at least i estimates ≥ i.
    fn by_definition(estimates: &[u64], cap: u64) -> u64 {
        (0..=cap).rev().find(|&i| estimates.iter().filter(|&&e| e >= i).count() as u64 >= i).unwrap()
    }

    #[test]
    fn h_index_matches_the_definition_on_both_sides_of_the_stack_buffer() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for round in 0..2000 {
            let len = next(3 * STACK_COUNTS as u64) as usize;
            let spread = 1 + next(4 * STACK_COUNTS as u64);
            let estimates: Vec<u64> = (0..len).map(|_| next(spread)).collect();
            // Caps below, at and above the number of estimates and the stack buffer.
            let cap = if round % 3 == 0 { len as u64 } else { next(4 * STACK_COUNTS as u64) };
            assert_eq!(h_index(&estimates, cap), by_definition(&estimates, cap), "{estimates:?} cap {cap}");
        }
    }
}
