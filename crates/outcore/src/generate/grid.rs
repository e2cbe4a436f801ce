//! Two-dimensional grids: the graph whose answers are known in closed form.
//!
//! Vertex `r · cols + c` sits at row `r`, column `c` and is joined to its 4-neighbours. BFS
//! depth from the corner is `r + c`, every vertex of a connected grid has the same component,
//! the diameter is `rows + cols − 2`: tests can check algorithms without a reference
//! implementation, and the grid's large diameter makes iteration counts (and so out-of-core
//! passes) large, the opposite of R-MAT's small world.
//!
//! Edge order: first the horizontal pairs row by row, then the vertical pairs row by row. With
//! `directed: false` (the default) each neighbouring pair is one edge from the smaller id to
//! the larger, and the generator declares the graph undirected, so the import stores both
//! directions. With `directed: true` each pair gives both arcs (smaller → larger first) and the
//! graph is declared directed: a symmetric digraph, for engines that want explicit arcs.

use super::rng::{derive_key, EdgeRng};
use super::{clamp_range, Edge, EdgeGenerator};
use crate::error::{Error, Result};

/// Parameters of a grid. `Default`: 32 × 32, undirected, unweighted, seed 1.
#[derive(Debug, Clone, PartialEq)]
pub struct GridConfig {
    pub rows: u64,
    pub cols: u64,
    /// Emit both arcs of every neighbouring pair and declare the graph directed.
    pub directed: bool,
    /// Give every edge a weight uniform in (0, 1] (from `seed`; both arcs of a pair may differ).
    pub weights: bool,
    /// Only used for weights.
    pub seed: u64,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig { rows: 32, cols: 32, directed: false, weights: false, seed: 1 }
    }
}

/// A validated grid generator.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    config: GridConfig,
    horizontal_pairs: u64,
    pairs: u64,
    weight_key: u64,
}

impl Grid {
    pub fn new(config: GridConfig) -> Result<Grid> {
        let GridConfig { rows, cols, .. } = config;
        let too_big = || Error::invalid(format!("grid {rows} x {cols} is too large"));
        if rows == 0 || cols == 0 {
            return Err(Error::invalid(format!("grid needs at least one row and one column (got {rows} x {cols})")));
        }
        rows.checked_mul(cols).ok_or_else(too_big)?;
        let horizontal_pairs = rows.checked_mul(cols - 1).ok_or_else(too_big)?;
        let vertical_pairs = (rows - 1).checked_mul(cols).ok_or_else(too_big)?;
        let pairs = horizontal_pairs.checked_add(vertical_pairs).ok_or_else(too_big)?;
        if config.directed {
            pairs.checked_mul(2).ok_or_else(too_big)?;
        }
        Ok(Grid { horizontal_pairs, pairs, weight_key: derive_key(config.seed, 4), config })
    }

    pub fn config(&self) -> &GridConfig {
        &self.config
    }

    /// The vertex at `(row, col)`.
    pub fn vertex(&self, row: u64, col: u64) -> u64 {
        row * self.config.cols + col
    }

    #[inline]
    fn edge(&self, index: u64) -> Edge {
        let cols = self.config.cols;
        let (pair, reversed) = if self.config.directed { (index / 2, index % 2 == 1) } else { (index, false) };
        let (low, high) = if pair < self.horizontal_pairs {
            let (row, col) = (pair / (cols - 1), pair % (cols - 1));
            let v = row * cols + col;
            (v, v + 1)
        } else {
            let v = pair - self.horizontal_pairs;
            (v, v + cols)
        };
        let (src, dst) = if reversed { (high, low) } else { (low, high) };
        let weight = self.config.weights.then(|| EdgeRng::new(self.weight_key, index).unit_weight());
        Edge { src, dst, weight }
    }
}

impl EdgeGenerator for Grid {
    fn name(&self) -> &'static str {
        "grid"
    }

    fn description(&self) -> String {
        let c = &self.config;
        format!(
            "grid ({} x {}, {}{})",
            c.rows,
            c.cols,
            if c.directed { "both arcs, directed" } else { "undirected" },
            if c.weights { format!(", weighted, seed {}", c.seed) } else { String::new() }
        )
    }

    fn num_vertices(&self) -> u64 {
        self.config.rows * self.config.cols
    }

    fn num_edges(&self) -> u64 {
        if self.config.directed {
            2 * self.pairs
        } else {
            self.pairs
        }
    }

    fn weighted(&self) -> bool {
        self.config.weights
    }

    fn directed(&self) -> Option<bool> {
        Some(self.config.directed)
    }

    fn edges_in(&self, first: u64, count: u64, out: &mut Vec<Edge>) {
        let range = clamp_range(first, count, self.num_edges());
        out.reserve(range.end.saturating_sub(range.start) as usize);
        out.extend(range.map(|index| self.edge(index)));
    }
}
