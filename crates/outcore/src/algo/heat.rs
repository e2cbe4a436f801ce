//! Heat simulation (`heat`): the steady state of heat spreading from sources through a lossy
//! conducting graph — HeatSimulation of "Load the Edges You Need" (Vora et al., ATC 2016,
//! Table 1: aggregation `sum`), written in the accumulation-based model (§4).
//!
//! **Model.** Each source vertex injects one unit of heat. Heat that arrives at a vertex stays
//! there (its temperature is all the heat it ever received) and a share of each new increment
//! flows on: along an edge `u → v` of weight `w` (1 on unweighted stores) the share is
//! `α · c(w) / outdeg(u)`, with conductance `c(w) = w / (1 + w)` ∈ [0, 1) and `α` the
//! conduction factor (`--damping`, default 0.5). Since at most `α` of every increment leaves a
//! vertex, the temperatures converge to
//!
//! ```text
//! T = Σₖ (α Cᵀ)ᵏ b,   C[u][v] = c(w(u,v)) / outdeg(u),   b = 1 on the sources
//! ```
//! **Input.** Any store; sources are `--sources ID,...` or `--num-sources K` sampled with
//! `--seed` (default: 16 sources, seed 0, the same sample as `msbfs`). Negative weights are
//! treated as 0 (no conduction).
//!
//! **As a vertex program.** A vertex keeps its temperature and the increment not yet passed
//! on; an active vertex sends `increment · α · c(w) / outdeg` along each out-edge, `combine`
//! sums, `apply` adds the sum to both, and the vertex stays active while the increment exceeds
//! `--tolerance` (default 1e-9; then the heat left unpassed anywhere is below tolerance per
//! vertex). Accumulative and distributive: delayed increments folded by `+` deliver the same
//! heat, so it runs with dynamic shards.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// Default number of sampled heat sources.
pub const DEFAULT_NUM_SOURCES: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Dense ids of the heat sources (duplicates inject twice).
    pub sources: Vec<VertexId>,
    /// Conduction factor α in [0, 1). Default 0.5.
    pub conduction: f64,
    /// Increment below which a vertex stops passing heat on. Default 1e-9.
    pub tolerance: f64,
    pub max_iterations: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeatOutput {
    pub temperature: Vec<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Cell {
    temperature: f64,
    /// Heat received and not yet passed on.
    pending: f64,
    /// The increment being passed on in this iteration.
    passing: f64,
}

struct Heat<'a> {
    config: &'a Config,
    injected: &'a [(VertexId, f64)],
}

impl Heat<'_> {
    fn injection(&self, v: VertexId) -> f64 {
        let i = self.injected.partition_point(|&(s, _)| s < v);
        self.injected.get(i).filter(|&&(s, _)| s == v).map_or(0.0, |&(_, h)| h)
    }
}

impl VertexProgram for Heat<'_> {
    type Value = Cell;
    type Msg = f64;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn uses_weights(&self) -> bool {
        true
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> Cell {
        let h = self.injection(v);
        Cell { temperature: h, pending: 0.0, passing: h }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        self.injection(v) > 0.0
    }
    fn scatter(&self, cell: &Cell, edge: EdgeRef) -> Option<f64> {
        let w = edge.weight.max(0.0);
        Some(cell.passing * self.config.conduction * (w / (1.0 + w)) / edge.source_out_degree as f64)
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn identity(&self) -> f64 {
        0.0
    }
    fn apply(&self, _: VertexId, cell: &mut Cell, heat: f64, _: &IterationContext) -> bool {
        cell.temperature += heat;
        cell.pending += heat;
        let pass = cell.pending > self.config.tolerance;
        if pass {
            cell.passing = std::mem::take(&mut cell.pending);
        }
        pass
    }
    fn max_iterations(&self) -> Option<usize> {
        self.config.max_iterations
    }
}

pub fn run(runner: &Runner, config: &Config) -> Result<HeatOutput> {
    if !(0.0..1.0).contains(&config.conduction) {
        return Err(Error::invalid(format!("heat needs a conduction factor in [0, 1), got {}", config.conduction)));
    }
    if config.tolerance.is_nan() || config.tolerance <= 0.0 {
        return Err(Error::invalid(format!("heat needs a positive tolerance, got {}", config.tolerance)));
    }
    let mut injected: Vec<(VertexId, f64)> = Vec::new();
    let mut sorted = config.sources.clone();
    sorted.sort_unstable();
    for s in sorted {
        match injected.last_mut() {
            Some((v, h)) if *v == s => *h += 1.0,
            _ => injected.push((s, 1.0)),
        }
    }
    let cells = runner.run_vertex_program(&Heat { config, injected: &injected })?;
    Ok(HeatOutput { temperature: cells.into_iter().map(|c| c.temperature).collect() })
}

impl From<HeatOutput> for AlgorithmResult {
    fn from(out: HeatOutput) -> Self {
        let total: f64 = out.temperature.iter().sum();
        single_column("heat", "temperature", ValueColumn::Float(out.temperature), [("total_heat", total.into())])
    }
}
