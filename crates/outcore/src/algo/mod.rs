//! Algorithms: each a short file written only against the program API, with a `Config` of
//! documented defaults and a named output type that converts into an [`AlgorithmResult`].

use crate::VertexId;

pub mod bc;
pub mod diameter;
pub mod msbfs;

/// A per-vertex output column, in dense-id order.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueColumn {
    /// Hop counts; `u64::MAX` means unreachable and prints as 9223372036854775807 (Graphalytics).
    Hops(Vec<u64>),
    /// Real values; infinity prints as `infinity`, others in scientific notation (15 digits).
    Float(Vec<f64>),
    /// Vertex labels given as dense ids; printed as the label vertex's original id.
    Label(Vec<VertexId>),
    /// Plain counts.
    Count(Vec<u64>),
}

impl ValueColumn {
    pub fn len(&self) -> usize {
        match self {
            ValueColumn::Hops(v) | ValueColumn::Count(v) | ValueColumn::Label(v) => v.len(),
            ValueColumn::Float(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a run produces: named per-vertex columns plus scalar figures (e.g. triangle total).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlgorithmResult {
    pub algorithm: String,
    pub columns: Vec<(String, ValueColumn)>,
    pub summary: serde_json::Map<String, serde_json::Value>,
}

/// Parameters of any algorithm, as the CLI, the validator and Python pass them. Each
/// algorithm reads the fields it needs into its own `Config` (with documented defaults) and
/// rejects missing required ones with a clear message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlgorithmParams {
    /// Source vertex (original id as text): bfs, sssp.
    pub source: Option<String>,
    /// Several sources (original ids): mssp, bc, msbfs.
    pub sources: Vec<String>,
    /// Number of sampled sources when `sources` is empty.
    pub num_sources: Option<usize>,
    pub seed: Option<u64>,
    /// Fixed iteration count: pr, cdlp.
    pub iterations: Option<usize>,
    /// PageRank damping factor (default 0.85).
    pub damping: Option<f64>,
    /// Convergence tolerance: pr-delta.
    pub tolerance: Option<f64>,
}
