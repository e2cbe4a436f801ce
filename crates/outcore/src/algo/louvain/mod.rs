//! Louvain community detection (Blondel, Guillaume, Lambiotte and Lefebvre, "Fast unfolding of
//! communities in large networks", J. Stat. Mech. 2008): local moving of vertices between
//! communities while modularity rises, then the same on the graph of communities, level after
//! level, until a level gains no more than `threshold` — networkx's `louvain_communities`
//! (resolution γ, threshold, max_level, seed) and igraph's multilevel.
//!
//! Level 1 runs on the stored graph as a Pregel program ([`moving`]): community state in
//! memory, O(|V|), the adjacency streamed by the engine (inmem, or the out-of-core pregel
//! engine), moves decided in synchronous rounds (Lu et al. 2015's parallel variant with the
//! minimum-label rule; see that module). Its community graph has at most as many arcs as the
//! store and usually far fewer; it is collected in one more pass and every later level runs
//! in memory exactly as networkx's `_one_level` does, sequentially ([`coarse`]).
//!
//! Semantics: undirected stores only — a directed store is refused (networkx uses Leicht and
//! Newman's directed modularity on a `DiGraph`, a different objective). Arc weights from the
//! store when it is weighted, else 1; a self-loop counts twice in its vertex's degree, as in
//! networkx. The result gives each vertex its community's smallest original id, so it is
//! deterministic: level 1 does not depend on visiting order, and later levels visit vertices
//! in id order, or shuffled by `seed`.
//!
//! Memory: the level-1 state ([`moving::STATE_BYTES_PER_VERTEX`] bytes a vertex) and the
//! community graph must fit half the budget, which the run reserves
//! ([`Runner::reserve_memory`]); the engine plans its own buffers within the other half.

pub mod coarse;
pub mod moving;

use std::sync::Mutex;

use super::{AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::runtime::format_size;
use crate::VertexId;
use coarse::{renumber, visit_order, CommunityArcs, WeightedGraph, ENTRY_BYTES};
use moving::{LocalMoving, STATE_BYTES_PER_VERTEX};

/// Parameters, with networkx's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// γ > 0: below 1 favours larger communities, above 1 smaller ones (default 1).
    pub resolution: f64,
    /// A level must raise modularity by more than this for the next one to run (default 1e-7).
    pub threshold: f64,
    /// The most levels (default: no limit).
    pub max_level: Option<usize>,
    /// Shuffles the visiting order of the in-memory levels (default: ascending ids).
    pub seed: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config { resolution: 1.0, threshold: 1e-7, max_level: None, seed: None }
    }
}

impl Config {
    /// Refuses meaningless parameters before any work.
    pub fn validate(&self) -> Result<()> {
        if !(self.resolution > 0.0 && self.resolution.is_finite()) {
            return Err(Error::invalid(format!(
                "louvain: --resolution must be a positive number (got {})",
                self.resolution
            )));
        }
        if !(self.threshold >= 0.0 && self.threshold.is_finite()) {
            return Err(Error::invalid(format!("louvain: --threshold must be 0 or more (got {})", self.threshold)));
        }
        if self.max_level == Some(0) {
            return Err(Error::invalid("louvain: --max-level must be a positive integer"));
        }
        Ok(())
    }
}

/// The communities found.
#[derive(Debug, Clone, PartialEq)]
pub struct LouvainOutput {
    /// Per vertex (dense-id order), its community's smallest vertex (a dense id).
    pub community: Vec<VertexId>,
    /// Modularity of the partition with the run's resolution.
    pub modularity: f64,
    pub communities: u64,
    /// Levels whose partition is in the result (networkx's yielded partitions).
    pub levels: usize,
    /// Rounds of level 1 (passes over the stored arcs).
    pub level1_rounds: usize,
}

/// Partition state across levels: each vertex's community index and the best modularity.
struct Levels {
    partition: Vec<u32>,
    communities: usize,
    modularity: f64,
    levels: usize,
}

pub fn run(runner: &Runner, config: &Config) -> Result<LouvainOutput> {
    config.validate()?;
    let info = runner.graph_info();
    if info.directed {
        return Err(Error::invalid(
            "louvain needs an undirected store (networkx's directed modularity is not implemented); import the graph as undirected",
        ));
    }
    let pregel = &runner.options().pregel;
    if runner.transport().is_some() || pregel.resume || pregel.checkpoint_every.is_some() {
        return Err(Error::Unsupported(
            "louvain keeps its community state in one process; run it without mpirun, ranks or checkpoints".into(),
        ));
    }
    let n = info.num_vertices;
    if n > u32::MAX as u64 {
        return Err(Error::invalid(format!("louvain numbers communities in 32 bits; this graph has {n} vertices")));
    }
    let half = runner.memory().bytes() / 2;
    if n * STATE_BYTES_PER_VERTEX > half {
        return Err(Error::MemoryBudget(format!(
            "louvain keeps {} of community state ({STATE_BYTES_PER_VERTEX} bytes per vertex), more than half the memory budget; raise --memory",
            format_size(n * STATE_BYTES_PER_VERTEX)
        )));
    }
    // The community state and the community graph live beside the engine: the engine plans
    // within the other half, so the whole run keeps to the budget.
    runner.reserve_memory(half, "louvain's community state and community graph")?;
    let moving = LocalMoving::new(n as usize, config.resolution, config.threshold);
    runner.run_pregel_wire(&moving)?;
    let level1 = moving.finish();
    let (partition, communities) = renumber(level1.community.iter().copied());
    let mut state = Levels { partition, communities, modularity: level1.modularity, levels: 1 };
    let more = level1.total > 0.0
        && config.max_level != Some(1)
        && level1.modularity - level1.initial_modularity > config.threshold;
    if more {
        let capacity = (half - n * STATE_BYTES_PER_VERTEX) / (2 * ENTRY_BYTES);
        let arcs = CommunityArcs { partition: &state.partition, capacity, sink: Mutex::new(Vec::new()) };
        runner.run_pregel_wire(&arcs)?;
        let graph = arcs.graph(state.communities)?;
        later_levels(&mut state, graph, level1.total, config);
    }
    let community = labels(runner, &state.partition, state.communities)?;
    Ok(LouvainOutput {
        community,
        modularity: state.modularity,
        communities: state.communities as u64,
        levels: state.levels,
        level1_rounds: level1.rounds,
    })
}

/// Levels 2.. in memory, as networkx's `louvain_partitions` after its first yield.
fn later_levels(state: &mut Levels, mut graph: WeightedGraph, total: f64, config: &Config) {
    loop {
        let order = visit_order(graph.vertices(), config.seed);
        let (inner, count, moved) = graph.one_level(&order, total, config.resolution);
        if !moved {
            return;
        }
        state.partition.iter_mut().for_each(|c| *c = inner[*c as usize]);
        state.communities = count;
        state.levels += 1;
        let modularity = graph.modularity(&inner, count, config.resolution);
        let gain = modularity - state.modularity;
        state.modularity = modularity;
        if gain <= config.threshold || config.max_level == Some(state.levels) {
            return;
        }
        graph = graph.coarsen(&inner, count);
    }
}

/// Each vertex's community label: the member of smallest original id, as a dense id.
fn labels(runner: &Runner, partition: &[u32], communities: usize) -> Result<Vec<VertexId>> {
    let ranks = runner.original_ranks()?;
    let rank = |v: usize| ranks.as_ref().map_or(v as u64, |r| r[v]);
    let mut first: Vec<Option<usize>> = vec![None; communities];
    for (v, &c) in partition.iter().enumerate() {
        let slot = &mut first[c as usize];
        if slot.is_none_or(|best| rank(v) < rank(best)) {
            *slot = Some(v);
        }
    }
    Ok(partition.iter().map(|&c| first[c as usize].expect("every community has a member") as VertexId).collect())
}

impl From<LouvainOutput> for AlgorithmResult {
    fn from(out: LouvainOutput) -> Self {
        super::single_column(
            "louvain",
            "community",
            ValueColumn::Label(out.community),
            [
                ("modularity", out.modularity.into()),
                ("communities", out.communities.into()),
                ("levels", (out.levels as u64).into()),
                ("level1_rounds", (out.level1_rounds as u64).into()),
            ],
        )
    }
}
