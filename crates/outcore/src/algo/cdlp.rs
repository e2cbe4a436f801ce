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
//! A Pregel program, since the mode needs the multiset of labels (no combiner): superstep s
//! computes iteration s from the labels sent in superstep s − 1, then sends the new label along
//! every out-edge and, on directed graphs, every in-edge; superstep `iterations` only computes.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::Result;
use crate::program::{GraphInfo, PregelContext, PregelProgram};
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

/// The most frequent label, the smallest among equally frequent ones.
fn most_frequent(labels: &[VertexId]) -> Option<VertexId> {
    let mut sorted = labels.to_vec();
    sorted.sort_unstable();
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
        let targets: Vec<VertexId> = if ctx.graph().directed {
            ctx.out_neighbors().iter().chain(ctx.in_neighbors()).copied().collect()
        } else {
            ctx.out_neighbors().to_vec()
        };
        for t in targets {
            ctx.send(t, *label);
        }
    }
    fn max_supersteps(&self) -> Option<usize> {
        Some(self.iterations + 1)
    }
    fn checkpoint_key(&self) -> String {
        format!("iterations {}", self.iterations)
    }
}

pub fn run(runner: &Runner, config: &Config) -> Result<CdlpOutput> {
    let rank = runner.original_ranks()?;
    let labels = runner.run_pregel_wire(&Cdlp { iterations: config.iterations, rank: rank.as_deref() })?;
    Ok(CdlpOutput { label: super::ranks_to_dense(rank.as_deref(), labels) })
}

impl From<CdlpOutput> for AlgorithmResult {
    fn from(out: CdlpOutput) -> Self {
        let mut distinct = out.label.clone();
        distinct.sort_unstable();
        distinct.dedup();
        single_column("cdlp", "label", ValueColumn::Label(out.label), [("communities", distinct.len().into())])
    }
}
