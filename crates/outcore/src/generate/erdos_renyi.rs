//! Erdős–Rényi random graphs, G(n, m) variant.
//!
//! Each of the `m` edges is an independent uniform pair of the `n` vertices (Erdős and Rényi,
//! "On random graphs I", 1959, draw edges uniformly; drawing them independently, as here, can
//! repeat a pair, which at the densities anyone runs out of core is a vanishing fraction and
//! keeps generation embarrassingly parallel and streamable). Self-loops are excluded unless
//! asked for; duplicates are kept (import with `--dedup` for a simple graph). The degree
//! distribution is binomial, the opposite of R-MAT's skew, which makes it a useful contrast in
//! tests and benchmarks.

use super::rng::{derive_key, EdgeRng};
use super::{clamp_range, Edge, EdgeGenerator};
use crate::error::{Error, Result};

/// Parameters of a G(n, m) graph. `Default`: 1024 vertices, 16384 edges, seed 1.
#[derive(Debug, Clone, PartialEq)]
pub struct ErdosRenyiConfig {
    /// Number of vertices `n`.
    pub vertices: u64,
    /// Number of edges `m`.
    pub edges: u64,
    pub seed: u64,
    /// Allow an edge to join a vertex to itself (off by default).
    pub self_loops: bool,
    /// Give every edge a weight uniform in (0, 1].
    pub weights: bool,
}

impl Default for ErdosRenyiConfig {
    fn default() -> Self {
        ErdosRenyiConfig { vertices: 1024, edges: 16 * 1024, seed: 1, self_loops: false, weights: false }
    }
}

/// A validated G(n, m) generator.
#[derive(Debug, Clone, PartialEq)]
pub struct ErdosRenyi {
    config: ErdosRenyiConfig,
    edge_key: u64,
}

impl ErdosRenyi {
    pub fn new(config: ErdosRenyiConfig) -> Result<ErdosRenyi> {
        let needed = if config.self_loops { 1 } else { 2 };
        if config.edges > 0 && config.vertices < needed {
            return Err(Error::invalid(format!(
                "erdos-renyi: {} edges need at least {needed} vertices{} (got {})",
                config.edges,
                if config.self_loops { "" } else { " without self-loops" },
                config.vertices
            )));
        }
        Ok(ErdosRenyi { edge_key: derive_key(config.seed, 3), config })
    }

    pub fn config(&self) -> &ErdosRenyiConfig {
        &self.config
    }

    #[inline]
    fn edge(&self, index: u64) -> Edge {
        let n = self.config.vertices;
        let mut rng = EdgeRng::new(self.edge_key, index);
        let src = rng.below(n);
        let dst = if self.config.self_loops {
            rng.below(n)
        } else {
            // Uniform over the n - 1 other vertices: draw below n - 1 and skip over src.
            let other = rng.below(n - 1);
            if other >= src {
                other + 1
            } else {
                other
            }
        };
        let weight = self.config.weights.then(|| rng.unit_weight());
        Edge { src, dst, weight }
    }
}

impl EdgeGenerator for ErdosRenyi {
    fn name(&self) -> &'static str {
        "erdos-renyi"
    }

    fn description(&self) -> String {
        let c = &self.config;
        format!(
            "erdos-renyi (n {}, m {}, seed {}{}{})",
            c.vertices,
            c.edges,
            c.seed,
            if c.self_loops { ", self-loops allowed" } else { "" },
            if c.weights { ", weighted" } else { "" }
        )
    }

    fn num_vertices(&self) -> u64 {
        self.config.vertices
    }

    fn num_edges(&self) -> u64 {
        self.config.edges
    }

    fn weighted(&self) -> bool {
        self.config.weights
    }

    fn edges_in(&self, first: u64, count: u64, out: &mut Vec<Edge>) {
        let range = clamp_range(first, count, self.config.edges);
        out.reserve(range.end.saturating_sub(range.start) as usize);
        out.extend(range.map(|index| self.edge(index)));
    }
}
