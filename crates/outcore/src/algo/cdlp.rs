//! Community detection by label propagation (LDBC Graphalytics CDLP, specification §2.3.5,
//! after Raghavan et al. 2007): every vertex starts with its own id as label; in each of a
//! fixed number of synchronous iterations every vertex takes the label that is most frequent
//! among its neighbours' labels of the previous iteration, the smallest such label on ties,
//! and keeps its label when it has no neighbour. On a directed graph a vertex receives the
//! label of a neighbour along each of its in- and out-edges, so a neighbour linked both ways
//! counts twice; on an undirected graph each neighbour counts once per edge.
//!
//! Labels are dense ids; dense ids follow ascending original ids, so "smallest label" is the
//! smallest original id and outputs print labels as original ids. On a reordered store labels
//! are original-id ranks ([`Runner::original_ranks`]) while propagating, so ties still go to
//! the smallest original id, and are mapped back to dense ids at the end.
//!
//! Two forms. A Pregel program, since the mode needs the multiset of labels (no combiner):
//! superstep s computes iteration s from the labels sent in superstep s − 1, then sends the new
//! label along every out-edge and, on directed graphs, every in-edge; superstep `iterations`
//! only computes. And rounds of one-level neighborhood queries ([`CdlpRound`], TurboGraph++
//! §2.3 with k = 1): each vertex reads the previous labels of its full list, an entry joined
//! both ways counting twice on a directed graph. No message is stored, so the engines that run
//! queries (nwsm with its pages, inmem) need memory for the labels and one window only, where
//! the Pregel form stores every arc's message. A full list holds a neighbour once and no
//! self-loop, so the query form runs on graphs without duplicate arcs or self-loops only
//! ([`super::simple_graph_out_degrees`]); on others the Runner chooses the Pregel form.

use std::cell::RefCell;

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::Result;
use crate::program::{send_to_neighbors, Along, GraphInfo, PregelContext, PregelProgram};
use crate::program::{Emitter, Nbr, NeighborhoodQuery, NeighborhoodView};
use crate::VertexId;

/// CDLP parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Number of label-propagation iterations. Default 10 (as in the Graphalytics data sets).
    pub iterations: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { iterations: 10 }
    }
}

/// Community label (a dense id) per vertex, in dense-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdlpOutput {
    pub label: Vec<VertexId>,
}

struct Cdlp<'a> {
    iterations: usize,
    /// Original-id rank per dense id on reordered stores.
    rank: Option<&'a [u64]>,
}

thread_local! {
    /// [`most_frequent`]'s sorted copy of the labels, reused across calls.
    static SCRATCH_LABELS: RefCell<Vec<VertexId>> = const { RefCell::new(Vec::new()) };
}

/// The most frequent label, the smallest among equally frequent ones.
///
/// Runs on every vertex in every iteration, so it does not allocate: one or two labels settle
/// at once (two different ones are equally frequent, so the smaller wins), more are sorted in
/// a per-thread scratch vector and the longest run taken.
fn most_frequent(labels: &[VertexId]) -> Option<VertexId> {
    match *labels {
        [] => None,
        [a] => Some(a),
        [a, b] => Some(a.min(b)),
        _ => SCRATCH_LABELS.with_borrow_mut(|sorted| {
            sorted.clear();
            sorted.extend_from_slice(labels);
            sorted.sort_unstable();
            longest_run(sorted)
        }),
    }
}

/// The value of the longest run of equal values in `sorted`, the first such run on ties.
fn longest_run(sorted: &[VertexId]) -> Option<VertexId> {
    let mut best: Option<(usize, VertexId)> = None;
    for run in sorted.chunk_by(|a, b| a == b) {
        match best {
            Some((count, _)) if count >= run.len() => {}
            _ => best = Some((run.len(), run[0])),
        }
    }
    best.map(|(_, label)| label)
}

impl PregelProgram for Cdlp<'_> {
    type Value = VertexId;
    type Msg = VertexId;

    fn init(&self, v: VertexId, _: &GraphInfo) -> VertexId {
        self.rank.map_or(v, |rank| rank[v as usize])
    }
    fn needs_in_edges(&self) -> bool {
        true
    }
    fn compute(&self, ctx: &mut dyn PregelContext<VertexId>, label: &mut VertexId, labels: &[VertexId]) {
        if let Some(mode) = most_frequent(labels) {
            *label = mode;
        }
        if ctx.superstep() == self.iterations {
            ctx.vote_to_halt();
            return;
        }
        let along = if ctx.graph().directed { Along::OutAndIn } else { Along::Out };
        send_to_neighbors(ctx, along, None, *label);
    }
    fn max_supersteps(&self) -> Option<usize> {
        Some(self.iterations + 1)
    }
    fn checkpoint_key(&self) -> String {
        format!("iterations {}", self.iterations)
    }
}

/// One CDLP iteration as a one-level neighborhood query: every vertex with neighbours takes the
/// most frequent of their `labels` (store order, read as the query's column), sent to itself
/// as label + 1 so that 0, the gather identity, means "no neighbours: keep the label".
struct CdlpRound<'a> {
    labels: &'a [VertexId],
    directed: bool,
}

impl NeighborhoodQuery for CdlpRound<'_> {
    type Value = u64;
    type Output = u64;

    fn levels(&self) -> usize {
        1
    }
    fn adj_scatter(&self, _: usize, view: &dyn NeighborhoodView, out: &mut dyn Emitter<u64>, u: u64, adj: &[Nbr]) {
        let mode = super::with_neighbor_values(view, adj, self.directed, most_frequent);
        if let Some(mode) = mode {
            out.update(u, mode + 1);
        }
    }
    fn vertex_gather(&self, gathered: u64, update: u64) -> u64 {
        gathered.max(update)
    }
    fn vertex_apply(&self, v: VertexId, _: u64, gathered: u64) -> u64 {
        gathered.checked_sub(1).unwrap_or(self.labels[v as usize])
    }
    fn column(&self) -> Option<&[u64]> {
        Some(self.labels)
    }
}

/// The rounds' labels start as the original-id ranks themselves (dense ids where those are the
/// original order), so no copy of the ranks is kept beside them.
fn run_rounds(runner: &Runner, iterations: usize) -> Result<Vec<VertexId>> {
    super::simple_graph_out_degrees(runner, "cdlp")?;
    let graph = runner.graph_info();
    let mut labels = runner.original_ranks()?.unwrap_or_else(|| (0..graph.num_vertices).collect());
    for _ in 0..iterations {
        labels = runner.run_neighborhood_query(&CdlpRound { labels: &labels, directed: graph.directed })?.values;
    }
    Ok(labels)
}

pub fn run(runner: &Runner, config: &Config) -> Result<CdlpOutput> {
    // On a reordered store the Pregel form keeps the ranks of original ids for its first
    // labels; the rounds start from them as their labels (8 bytes a vertex either way).
    let ranks = if runner.dense_order_is_original() { 0 } else { 8 };
    let shape = Cdlp { iterations: config.iterations, rank: None };
    let forms = [
        ProgramShape::pregel(&shape, true).with_state(ranks),
        ProgramShape::query_rounds(1, 8, Some(config.iterations + 1)).with_column().with_state(8),
    ];
    let labels = runner.run_forms(&forms, |form| match form {
        0 => {
            let rank = runner.original_ranks()?;
            runner.run_pregel_wire(&Cdlp { iterations: config.iterations, rank: rank.as_deref() })
        }
        _ => run_rounds(runner, config.iterations),
    })?;
    Ok(CdlpOutput { label: runner.ranks_to_dense(labels)? })
}

impl From<CdlpOutput> for AlgorithmResult {
    fn from(out: CdlpOutput) -> Self {
        let mut distinct = out.label.clone();
        distinct.sort_unstable();
        distinct.dedup();
        single_column("cdlp", "label", ValueColumn::Label(out.label), [("communities", distinct.len().into())])
    }
}

#[cfg(test)]
mod tests {
    use super::most_frequent;

    /// The definition, directly: the smallest label of the highest count.
    fn by_definition(labels: &[u64]) -> Option<u64> {
        let count = |l: u64| labels.iter().filter(|&&x| x == l).count();
        labels.iter().copied().max_by(|&a, &b| count(a).cmp(&count(b)).then(b.cmp(&a)))
    }

    #[test]
    fn most_frequent_takes_the_smallest_of_the_most_frequent() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for _ in 0..3000 {
            let len = next(12) as usize;
            let spread = 1 + next(8);
            let labels: Vec<u64> = (0..len).map(|_| 100 - next(spread)).collect();
            assert_eq!(most_frequent(&labels), by_definition(&labels), "{labels:?}");
        }
        assert_eq!(most_frequent(&[9, 4]), Some(4));
        assert_eq!(most_frequent(&[5, 3, 5, 3, 1]), Some(3));
    }
}
