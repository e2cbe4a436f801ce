//! R-MAT / Kronecker graphs as specified by Graph500.
//!
//! The Graph500 benchmark specification (graph500.org, "Graph 500 Benchmark", section 3.1
//! "Generating the edge list", reference generator `make-edgelist`) builds a graph of `2^scale`
//! vertices and `edge_factor · 2^scale` edges: each edge descends `scale` levels of the
//! adjacency matrix, choosing at every level one of the four quadrants with probabilities
//! A = 0.57, B = 0.19, C = 0.19, D = 1 − A − B − C = 0.05; the quadrant gives one bit of the
//! source (row) and one bit of the target (column). Graph500's reference code draws the two
//! bits separately with conditional probabilities; choosing the quadrant from one uniform draw,
//! as here, gives exactly the same distribution. Like the reference generator we add no noise
//! to the probabilities between levels ("noise-free").
//!
//! The recursive choice puts the high-degree vertices at small ids (vertex 0 is the hub), which
//! would flatter any algorithm or partitioning that likes locality. Graph500 therefore relabels
//! the vertices with a random permutation. A shuffled table of `2^scale` labels would cost
//! 128 MiB at scale 24 and more than the machine at scale 32, so [`LabelPermutation`] is a keyed
//! Feistel network over the id bits instead: a bijection computed in a few nanoseconds from
//! nothing but its keys. Graph500 also shuffles the edge order; here every edge is an
//! independent draw from its own random stream, so the order carries no structure to hide.
//!
//! Self-loops and duplicate edges occur, as in Graph500; `outcore import --dedup
//! --drop-self-loops` removes them when an algorithm needs a simple graph.

use super::rng::{derive_key, mix64, EdgeRng};
use super::{clamp_range, Edge, EdgeGenerator};
use crate::error::{Error, Result};

/// Parameters of an R-MAT graph. `Default` is a scale-10 Graph500 graph.
#[derive(Debug, Clone, PartialEq)]
pub struct RmatConfig {
    /// log2 of the number of vertices (0..=48).
    pub scale: u32,
    /// Edges per vertex: the graph has `edge_factor · 2^scale` edges. Graph500 uses 16.
    pub edge_factor: u64,
    /// Everything random derives from this.
    pub seed: u64,
    /// Quadrant probabilities; D is `1 − a − b − c`. Graph500: 0.57, 0.19, 0.19 (D = 0.05).
    pub a: f64,
    pub b: f64,
    pub c: f64,
    /// Relabel vertices with a seeded random permutation (Graph500 does). Off, vertex 0 is the
    /// biggest hub: useful only to look at the raw Kronecker structure.
    pub permute_labels: bool,
    /// Give every edge a weight uniform in (0, 1].
    pub weights: bool,
}

impl Default for RmatConfig {
    fn default() -> Self {
        RmatConfig {
            scale: 10,
            edge_factor: 16,
            seed: 1,
            a: 0.57,
            b: 0.19,
            c: 0.19,
            permute_labels: true,
            weights: false,
        }
    }
}

impl RmatConfig {
    /// Graph500 defaults at the given scale.
    pub fn with_scale(scale: u32) -> Self {
        RmatConfig { scale, ..Self::default() }
    }
}

/// Largest supported scale: 2^48 vertices is far past any disk, and keeps `edge_factor · 2^scale`
/// comfortably inside u64.
pub const MAX_SCALE: u32 = 48;

/// A validated R-MAT generator.
#[derive(Debug, Clone, PartialEq)]
pub struct Rmat {
    config: RmatConfig,
    num_edges: u64,
    /// Cumulative quadrant probabilities A, A+B, A+B+C scaled to 2^32, compared with 32-bit
    /// uniform draws (two levels per 64-bit draw).
    thresholds: [u64; 3],
    edge_key: u64,
    labels: LabelPermutation,
}

impl Rmat {
    pub fn new(config: RmatConfig) -> Result<Rmat> {
        if config.scale > MAX_SCALE {
            return Err(Error::invalid(format!("rmat scale {} is too large (at most {MAX_SCALE})", config.scale)));
        }
        if config.edge_factor == 0 {
            return Err(Error::invalid("rmat edge factor must be at least 1"));
        }
        let num_edges = config.edge_factor.checked_mul(1u64 << config.scale).ok_or_else(|| {
            Error::invalid(format!(
                "rmat edge factor {} at scale {} overflows the edge count",
                config.edge_factor, config.scale
            ))
        })?;
        let (a, b, c) = (config.a, config.b, config.c);
        let d = 1.0 - a - b - c;
        let valid = |p: f64| p.is_finite() && (0.0..=1.0).contains(&p);
        if !(valid(a) && valid(b) && valid(c) && d >= -1e-12) {
            return Err(Error::invalid(format!(
                "rmat probabilities must be in [0, 1] with a + b + c <= 1 (got a={a}, b={b}, c={c}, so d={d})"
            )));
        }
        let to_threshold = |p: f64| ((p.clamp(0.0, 1.0)) * 4_294_967_296.0).round() as u64;
        let thresholds = [to_threshold(a), to_threshold(a + b), to_threshold(a + b + c)];
        Ok(Rmat {
            num_edges,
            thresholds,
            edge_key: derive_key(config.seed, 1),
            labels: LabelPermutation::new(config.scale, derive_key(config.seed, 2)),
            config,
        })
    }

    pub fn config(&self) -> &RmatConfig {
        &self.config
    }

    /// The permutation applied to vertex labels (the identity when `permute_labels` is off).
    pub fn label(&self, vertex: u64) -> u64 {
        if self.config.permute_labels {
            self.labels.apply(vertex)
        } else {
            vertex
        }
    }

    #[inline]
    fn edge(&self, index: u64) -> Edge {
        let mut rng = EdgeRng::new(self.edge_key, index);
        let (mut src, mut dst) = (0u64, 0u64);
        let mut word = 0u64;
        for level in 0..self.config.scale {
            if level % 2 == 0 {
                word = rng.next_u64();
            }
            let draw = word & 0xffff_ffff;
            word >>= 32;
            // Quadrant 0..4 = A, B, C, D, i.e. (row bit, column bit) = (0,0), (0,1), (1,0), (1,1).
            // Counting thresholds passed instead of branching: the draws are unpredictable, so
            // branches would mispredict about half the time.
            let quadrant = (draw >= self.thresholds[0]) as u64
                + (draw >= self.thresholds[1]) as u64
                + (draw >= self.thresholds[2]) as u64;
            let (row_bit, column_bit) = (quadrant >> 1, quadrant & 1);
            src = (src << 1) | row_bit;
            dst = (dst << 1) | column_bit;
        }
        let weight = self.config.weights.then(|| rng.unit_weight());
        Edge { src: self.label(src), dst: self.label(dst), weight }
    }
}

impl EdgeGenerator for Rmat {
    fn name(&self) -> &'static str {
        "rmat"
    }

    fn description(&self) -> String {
        let c = &self.config;
        let mut text = format!("rmat (scale {}, edge factor {}, seed {}", c.scale, c.edge_factor, c.seed);
        if (c.a, c.b, c.c) != (0.57, 0.19, 0.19) {
            text.push_str(&format!(", a={} b={} c={}", c.a, c.b, c.c));
        }
        if !c.permute_labels {
            text.push_str(", labels not permuted");
        }
        if c.weights {
            text.push_str(", weighted");
        }
        text.push(')');
        text
    }

    fn num_vertices(&self) -> u64 {
        1u64 << self.config.scale
    }

    fn num_edges(&self) -> u64 {
        self.num_edges
    }

    fn weighted(&self) -> bool {
        self.config.weights
    }

    fn edges_in(&self, first: u64, count: u64, out: &mut Vec<Edge>) {
        let range = clamp_range(first, count, self.num_edges);
        out.reserve(range.end.saturating_sub(range.start) as usize);
        out.extend(range.map(|index| self.edge(index)));
    }
}

/// A keyed pseudorandom permutation of `0..2^bits` that needs O(1) memory.
///
/// A balanced Feistel network on `2·⌈bits/2⌉` bits is a bijection whatever its round
/// function (each round is invertible); with a strong keyed round function and six rounds its
/// output is, for graph-labelling purposes, indistinguishable from a random permutation
/// (Luby–Rackoff). When `bits` is odd the network's domain is twice too large, and "cycle
/// walking" (Black and Rogaway, "Ciphers with arbitrary finite domains", 2002) re-applies it
/// until the value falls back into `0..2^bits`; that restriction is again a bijection, and takes
/// at most a few steps on average.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelPermutation {
    bits: u32,
    half_bits: u32,
    keys: [u64; Self::ROUNDS],
}

impl LabelPermutation {
    const ROUNDS: usize = 6;

    /// The permutation of `0..2^bits` (bits <= 62) selected by `key`.
    pub fn new(bits: u32, key: u64) -> Self {
        assert!(bits <= 62, "label permutation over {bits} bits");
        let mut keys = [0u64; Self::ROUNDS];
        for (round, k) in keys.iter_mut().enumerate() {
            *k = derive_key(key, round as u64 + 1);
        }
        LabelPermutation { bits, half_bits: bits.div_ceil(2), keys }
    }

    pub fn domain_size(&self) -> u64 {
        1u64 << self.bits
    }

    /// The image of `x` (which must be below `domain_size()`).
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.domain_size());
        if self.bits == 0 {
            return x;
        }
        let mut value = self.encrypt(x);
        while value >= self.domain_size() {
            value = self.encrypt(value);
        }
        value
    }

    #[inline]
    fn encrypt(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for &key in &self.keys {
            let mixed = left ^ (mix64(right ^ key) & mask);
            left = right;
            right = mixed;
        }
        (left << self.half_bits) | right
    }
}
