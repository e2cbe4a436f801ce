//! Counter-based random streams for the generators.
//!
//! Each edge gets its own short stream: the state starts at a strong 64-bit mix of
//! `(seed, stream index)` and advances as SplitMix64 (Steele, Lea and Flood, "Fast splittable
//! pseudorandom number generators", OOPSLA 2014). An edge draws at most a few dozen numbers,
//! so streams started at mixed, effectively random points of the 2^64-long sequence do not
//! overlap in practice, and no state is shared between threads. Hand-rolled because it is ten
//! lines and its output must never change under us: a dependency's new version could change
//! every generated graph.

/// The SplitMix64 increment (2^64 / golden ratio, odd).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finaliser (a bijection of u64 with good avalanche).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Derives an independent 64-bit key from a seed and a purpose, so that (for example) the
/// edge streams and the label permutation of one seed are unrelated.
pub fn derive_key(seed: u64, purpose: u64) -> u64 {
    mix64(mix64(seed ^ 0x6f75_7463_6f72_6521) ^ purpose.wrapping_mul(GOLDEN_GAMMA))
}

/// The random stream of one edge.
#[derive(Debug, Clone)]
pub struct EdgeRng {
    state: u64,
}

impl EdgeRng {
    /// Stream number `index` under `key` (a value from [`derive_key`]).
    #[inline]
    pub fn new(key: u64, index: u64) -> Self {
        EdgeRng { state: mix64(key ^ mix64(index.wrapping_add(GOLDEN_GAMMA))) }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// Uniform in `0..n` without bias (Lemire's multiply-and-reject). `n` must be positive.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut product = (self.next_u64() as u128) * (n as u128);
        if (product as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (product as u64) < threshold {
                product = (self.next_u64() as u128) * (n as u128);
            }
        }
        (product >> 64) as u64
    }

    /// Uniform in (0, 1], on the grid of multiples of 2^-53 (never 0, so it can be a weight
    /// that every shortest-path algorithm accepts and that no parser drops as "missing").
    #[inline]
    pub fn unit_weight(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}
