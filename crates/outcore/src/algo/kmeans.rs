//! k-means clustering (Lloyd's algorithm) over points stored as vertices, as GraphD runs it
//! (`../shared/papers/graphd-distributed-out-of-core-pregel.md` §6.9): each point's coordinates
//! are its out-edge stream, so the pregel engine streams them from S^E every superstep, and the
//! k centres travel as the aggregator, not as vertex state.
//!
//! **Input format.** A directed, weighted store in which point `v` has one arc `v → j` of weight
//! `x_j` for every dimension `j = 0..d−1`: the target is the dimension index and the weight the
//! coordinate. The importer keeps zero weights and sorts out-lists by target, so a point's
//! out-list is its coordinate vector in dimension order. Every vertex is a point and every
//! point needs the same `d` (so there must be at least `d` points: the dimension indices are
//! vertices too); a point with another number of arcs stops the run with an error naming it.
//! `outcore import points.txt --format points --store DIR` builds it from one point
//! `x_1 … x_d` per line ([`crate::ingest::InputFormat::Points`]); an edge list of
//! `point dimension coordinate` lines imported with `--weighted` is the same store.
//!
//! **Supersteps.** In superstep 0 the initial centres (the first k points in original-id order,
//! or k points sampled with `seed`) add their coordinates to the aggregator. In every later
//! superstep each point reads the centres from the previous aggregates (centre c = its sums /
//! its count; a centre that lost all its points keeps its place, carried by vertex 0 in extra
//! slots), assigns itself to the nearest one (squared Euclidean distance, the smallest index on
//! ties), and adds its coordinates and a count to its centre's slots, and 1 to the "changed"
//! slot if its assignment moved. The run stops after a superstep in which no assignment changed,
//! or after `max_iterations` assignment steps. Output: the cluster index per point.
//!
//! Sums are folded in vertex order (inmem) or per rank and then in rank order (pregel), so
//! engines agree bit for bit when the sums are exact in f64 (e.g. integer or dyadic coordinates);
//! otherwise centres may differ in the last bits and a point exactly between two centres may
//! fall either way.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{Control, GraphInfo, PregelContext, PregelProgram};
use crate::VertexId;

/// k-means parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Number of clusters. Default 2.
    pub k: usize,
    /// Assignment steps at most. Default 100.
    pub max_iterations: usize,
    /// `None` (default): the first k points (in original-id order) are the initial centres;
    /// `Some(seed)`: k distinct points sampled with this seed.
    pub seed: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config { k: 2, max_iterations: 100, seed: None }
    }
}

/// Cluster index (0..k) per point, in dense-id order; empty on the ranks other than 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KMeansOutput {
    pub cluster: Vec<u64>,
    pub k: usize,
    pub dimensions: usize,
}

const UNASSIGNED: u64 = u64::MAX;
const WRONG_DIMENSION: u64 = u64::MAX - 1;

struct KMeans {
    k: usize,
    d: usize,
    max_iterations: usize,
    initial: Vec<VertexId>,
}

impl KMeans {
    // Aggregate slots: sums [0, kd), counts [kd, kd + k), changed, wrong dimension, carried centres.
    fn changed_slot(&self) -> usize {
        self.k * (self.d + 1)
    }
    fn carried_slot(&self) -> usize {
        self.changed_slot() + 2
    }
}

impl PregelProgram for KMeans {
    type Value = u64;
    type Msg = u64;

    fn init(&self, _: VertexId, _: &GraphInfo) -> u64 {
        UNASSIGNED
    }
    fn uses_weights(&self) -> bool {
        true
    }
    fn compute(&self, ctx: &mut dyn PregelContext<u64>, cluster: &mut u64, _: &[u64]) {
        let (k, d) = (self.k, self.d);
        let point = ctx.out_weights().to_vec();
        if point.len() != d {
            *cluster = WRONG_DIMENSION;
            return ctx.aggregate_at(self.changed_slot() + 1, 1.0);
        }
        let nearest = if ctx.superstep() == 0 {
            self.initial.iter().position(|&v| v == ctx.vertex())
        } else {
            let previous = ctx.previous_aggregates();
            let centres: Vec<f64> = (0..k * d)
                .map(|i| match previous[k * d + i / d] {
                    count if count > 0.0 => previous[i] / count,
                    _ => previous[self.carried_slot() + i],
                })
                .collect();
            if ctx.vertex() == 0 {
                centres.iter().enumerate().for_each(|(i, &x)| ctx.aggregate_at(self.carried_slot() + i, x));
            }
            let distance = |c: usize| point.iter().zip(&centres[c * d..]).map(|(x, m)| (x - m) * (x - m)).sum::<f64>();
            let distances: Vec<f64> = (0..k).map(distance).collect();
            let best = (1..k).fold(0, |best, c| if distances[c] < distances[best] { c } else { best });
            if *cluster != best as u64 {
                ctx.aggregate_at(self.changed_slot(), 1.0);
            }
            *cluster = best as u64;
            Some(best)
        };
        if let Some(c) = nearest {
            point.iter().enumerate().for_each(|(j, &x)| ctx.aggregate_at(c * d + j, x));
            ctx.aggregate_at(k * d + c, 1.0);
        }
    }
    fn aggregate_width(&self) -> usize {
        self.carried_slot() + self.k * self.d
    }
    fn max_supersteps(&self) -> Option<usize> {
        Some(self.max_iterations + 1)
    }
    fn end_superstep_aggregates(&self, step: usize, aggregates: &[f64]) -> Control {
        let (changed, wrong) = (aggregates[self.changed_slot()], aggregates[self.changed_slot() + 1]);
        if wrong > 0.0 || (step > 0 && changed == 0.0) {
            Control::Stop
        } else {
            Control::Continue
        }
    }
    fn checkpoint_key(&self) -> String {
        format!(
            "k {}, d {}, max iterations {}, initial centres {:?}",
            self.k, self.d, self.max_iterations, self.initial
        )
    }
}

pub fn run(runner: &Runner, config: &Config) -> Result<KMeansOutput> {
    let graph = runner.graph_info();
    let (n, arcs, k) = (graph.num_vertices, graph.num_arcs, config.k);
    if !graph.directed || !graph.weighted {
        return Err(Error::invalid(
            "kmeans needs a directed weighted store: point v has one arc v -> j of weight x_j per dimension j",
        ));
    }
    if k == 0 || k as u64 > n || config.max_iterations == 0 {
        return Err(Error::invalid(format!(
            "kmeans needs 1 <= k <= the number of points ({n}) and at least one iteration, got k = {k}, {} iterations",
            config.max_iterations
        )));
    }
    if arcs % n != 0 {
        return Err(Error::invalid(format!(
            "kmeans needs the same number of coordinates (arcs) for every point: {arcs} arcs over {n} points"
        )));
    }
    let initial = match config.seed {
        Some(seed) => super::msbfs::sample_sources(runner, k, seed)?,
        None => (0..k as u64).map(|r| runner.vertex_at_original_rank(r)).collect::<Result<_>>()?,
    };
    let program = KMeans { k, d: (arcs / n) as usize, max_iterations: config.max_iterations, initial };
    let cluster = runner.run_pregel_wire(&program)?;
    if let Some(v) = cluster.iter().position(|&c| c == WRONG_DIMENSION) {
        let id = runner.store().ids()?.original(v as u64)?;
        let mut offsets = [0u64; 2];
        runner.store().csr(crate::store::Direction::Out)?.read_offsets(v as u64, &mut offsets)?;
        return Err(Error::invalid(format!(
            "kmeans: point {id} has {} coordinates (arcs), but every point needs {} ({arcs} arcs / {n} points)",
            offsets[1] - offsets[0],
            program.d
        )));
    }
    Ok(KMeansOutput { cluster, k, dimensions: program.d })
}

impl From<KMeansOutput> for AlgorithmResult {
    fn from(out: KMeansOutput) -> Self {
        let mut sizes = vec![0u64; out.k];
        out.cluster.iter().for_each(|&c| sizes[c as usize] += 1);
        let summary = [("k", out.k.into()), ("dimensions", out.dimensions.into()), ("cluster_sizes", sizes.into())];
        single_column("kmeans", "cluster", ValueColumn::Count(out.cluster), summary)
    }
}
