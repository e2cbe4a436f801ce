//! Belief propagation (`bp`) on a pairwise Markov random field with [`STATES`] states per
//! vertex — BeliefPropagation of "Load the Edges You Need" (Vora et al., ATC 2016, Table 1:
//! aggregation `product`), after the graph-mining BP of Kang et al. (2010).
//!
//! **Model.** Every vertex is a variable with states `0..S` (S = [`STATES`] = 2). Node
//! potential φ_v: vertices chosen as *evidence* (`--sources ID,...`, or `--num-sources K`
//! sampled with `--seed`, default 16) are observed in state `rank mod S` (rank = position in
//! the sorted evidence list) with probability `0.9`; all others have a uniform prior. Edge
//! potential: the homophily (Potts) matrix ψ(x, y) = `1 + h` when x = y, else `1 − h`, with
//! `h` = `--damping` (default 0.2), on every arc in the arc's direction. A vertex's belief is
//!
//! ```text
//! b_v(x) ∝ φ_v(x) · Π_{u → v} m_u(x),    m_u(x) = Σ_y ψ(y, x) · b_u(y)
//! ```
//! This is the product form of the paper's Table 1 *without* the cavity (the message from u
//! to v does not divide out v's own message — the simplification that makes BP a push-style
//! program with a combinable aggregation, as in the accumulation-based model).
//!
//! **As a vertex program** (log domain, so the product is a sum): a vertex keeps its
//! log-belief and the belief it last sent; an active vertex sends along each out-edge the
//! *change* of its log-message, `log m(b_now) − log m(b_sent_before)`, computed once when the
//! vertex decides to send (not once per arc: the logarithms were most of an iteration's time
//! on RMAT-20); `combine` adds the
//! per-state vectors (product of message ratios); `apply` adds the sum to the log-belief and
//! the vertex stays active while its normalised belief moved by more than `--tolerance`
//! (default 1e-6, max-norm) since it last sent. Delayed changes of one vertex telescope under
//! `+`, so the program is distributive and runs with dynamic shards. `--iterations` caps the
//! run (default 50). Output: the probability of state 1 per vertex.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::ASSUMED_CONVERGENCE_ITERATIONS;
use crate::engine::Runner;
use crate::error::{Error, Result};
use crate::program::{EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::VertexId;

/// States per variable.
pub const STATES: usize = 2;
/// Default number of sampled evidence vertices.
pub const DEFAULT_NUM_EVIDENCE: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Dense ids of the evidence vertices.
    pub evidence: Vec<VertexId>,
    /// Homophily h in [0, 1): ψ = 1 ± h. Default 0.2.
    pub homophily: f64,
    /// Belief change (max-norm) below which a vertex stops sending. Default 1e-6.
    pub tolerance: f64,
    /// Iteration cap. Default 50.
    pub max_iterations: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BpOutput {
    /// P(state 1) per vertex.
    pub belief: Vec<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Belief {
    /// Unnormalised log-belief: log φ plus the sum of received message changes.
    log_belief: [f64; STATES],
    /// The normalised belief last sent.
    sent: [f64; STATES],
    /// What the vertex sends along every out-edge: the change of its log-message from the
    /// belief sent before `sent` to `sent`.
    change: [f64; STATES],
}

struct Bp<'a> {
    config: &'a Config,
    /// Evidence vertex and its observed state, sorted by vertex.
    evidence: &'a [(VertexId, usize)],
}

fn normalised(log_belief: &[f64; STATES]) -> [f64; STATES] {
    let max = log_belief.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut b = log_belief.map(|l| (l - max).exp());
    let sum: f64 = b.iter().sum();
    b.iter_mut().for_each(|x| *x /= sum);
    b
}

impl Bp<'_> {
    fn log_message(&self, belief: &[f64; STATES]) -> [f64; STATES] {
        let h = self.config.homophily;
        std::array::from_fn(|x| {
            let m: f64 = (0..STATES).map(|y| if x == y { 1.0 + h } else { 1.0 - h } * belief[y]).sum();
            m.ln()
        })
    }

    /// The change of the log-message when the sent belief moves from `before` to `now`.
    fn message_change(&self, now: &[f64; STATES], before: &[f64; STATES]) -> [f64; STATES] {
        let (now, before) = (self.log_message(now), self.log_message(before));
        std::array::from_fn(|x| now[x] - before[x])
    }
}

impl VertexProgram for Bp<'_> {
    type Value = Belief;
    type Msg = [f64; STATES];

    fn message_kind(&self) -> MessageKind {
        MessageKind::Delta
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> Belief {
        let uniform = [1.0 / STATES as f64; STATES];
        let i = self.evidence.partition_point(|&(s, _)| s < v);
        let prior = match self.evidence.get(i) {
            Some(&(s, state)) if s == v => {
                std::array::from_fn(|x| if x == state { 0.9 } else { 0.1 / (STATES - 1) as f64 })
            }
            _ => uniform,
        };
        let log_belief = prior.map(f64::ln);
        let sent = normalised(&log_belief);
        Belief { log_belief, sent, change: self.message_change(&sent, &uniform) }
    }
    fn initially_active(&self, v: VertexId, _: &GraphInfo) -> bool {
        self.evidence.binary_search_by_key(&v, |&(s, _)| s).is_ok()
    }
    fn scatter(&self, b: &Belief, _: EdgeRef) -> Option<[f64; STATES]> {
        Some(b.change)
    }
    fn combine(&self, a: [f64; STATES], b: [f64; STATES]) -> [f64; STATES] {
        std::array::from_fn(|x| a[x] + b[x])
    }
    fn identity(&self) -> [f64; STATES] {
        [0.0; STATES]
    }
    fn apply(&self, _: VertexId, b: &mut Belief, change: [f64; STATES], _: &IterationContext) -> bool {
        for (l, c) in b.log_belief.iter_mut().zip(change) {
            *l += c;
        }
        let now = normalised(&b.log_belief);
        let moved = now.iter().zip(&b.sent).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        let send = moved > self.config.tolerance;
        if send {
            b.change = self.message_change(&now, &b.sent);
            b.sent = now;
        }
        send
    }
    fn max_iterations(&self) -> Option<usize> {
        Some(self.config.max_iterations)
    }
    /// Vertices stop sending once their beliefs settle, at a rate the homophily and the graph
    /// set: `max_iterations` is the cap, and the planner assumes a count.
    fn expected_iterations(&self) -> Option<f64> {
        Some(ASSUMED_CONVERGENCE_ITERATIONS)
    }
}

pub fn run(runner: &Runner, config: &Config) -> Result<BpOutput> {
    if !(0.0..1.0).contains(&config.homophily) {
        return Err(Error::invalid(format!("bp needs a homophily in [0, 1), got {}", config.homophily)));
    }
    if config.tolerance.is_nan() || config.tolerance <= 0.0 {
        return Err(Error::invalid(format!("bp needs a positive tolerance, got {}", config.tolerance)));
    }
    let mut sorted = config.evidence.clone();
    sorted.sort_unstable();
    sorted.dedup();
    let evidence: Vec<(VertexId, usize)> = sorted.iter().enumerate().map(|(rank, &v)| (v, rank % STATES)).collect();
    let beliefs = runner.run_vertex_program(&Bp { config, evidence: &evidence })?;
    Ok(BpOutput { belief: beliefs.iter().map(|b| normalised(&b.log_belief)[1]).collect() })
}

impl From<BpOutput> for AlgorithmResult {
    fn from(out: BpOutput) -> Self {
        let mean = if out.belief.is_empty() { 0.0 } else { out.belief.iter().sum::<f64>() / out.belief.len() as f64 };
        single_column("bp", "belief", ValueColumn::Float(out.belief), [("mean_belief", mean.into())])
    }
}
