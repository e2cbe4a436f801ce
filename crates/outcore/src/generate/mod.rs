//! Synthetic graphs: Graph500 R-MAT, Erdős–Rényi G(n, m) and 2-D grids, written to edge-list
//! files or imported straight into a store.
//!
//! # Determinism by construction
//! Every generator computes edge number `e` from `(configuration, e)` alone: it seeds a
//! counter-based random stream ([`rng::EdgeRng`]) with the seed and the edge index and draws what
//! that edge needs. Nothing depends on which thread produced which edge or on how the edges were
//! cut into chunks, so the same seed yields the same edge list, in the same order, with 1 thread
//! or 64. Chunks ([`EDGES_PER_CHUNK`] edges each) are only the unit of parallel work.
//!
//! # Memory
//! Generators hold their configuration and a few derived constants, never a vertex array: R-MAT
//! permutes its labels with a keyed Feistel network ([`rmat::LabelPermutation`]) instead of a
//! shuffled table, so scale 30 costs as little memory as scale 10. Writers and the store source
//! keep a small window of chunks in flight.
//!
//! # Where the edges go
//! * [`write_edges`] streams them to a text (`src dst[ weight]`) or raw binary file, optionally
//!   gzip- or zstd-compressed, chosen by the file name.
//! * [`GeneratedSource`] is a [`RecordSource`](crate::ingest::RecordSource) for the import
//!   pipeline; [`generate_into_store`] builds a store from a generator in one call.

pub mod erdos_renyi;
pub mod grid;
pub mod rmat;
pub mod rng;
pub mod source;
pub mod write;

pub use erdos_renyi::{ErdosRenyi, ErdosRenyiConfig};
pub use grid::{Grid, GridConfig};
pub use rmat::{LabelPermutation, Rmat, RmatConfig};
pub use source::{generate_into_store, GeneratedSource};
pub use write::{write_edges, EdgeFileKind, EdgeFileLayout, WriteReport};

/// Edges per chunk: the unit of parallel generation and of progress updates. Fixed, so that
/// the chunking never depends on the thread count (and anyway edges do not depend on it).
pub const EDGES_PER_CHUNK: u64 = 1 << 16;

/// One generated edge, in the generator's vertex ids (`0..num_vertices`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Edge {
    pub src: u64,
    pub dst: u64,
    /// `Some` exactly when the generator makes weights.
    pub weight: Option<f64>,
}

/// A deterministic source of edges addressed by edge index.
pub trait EdgeGenerator: Send + Sync {
    /// Short name, e.g. `rmat`.
    fn name(&self) -> &'static str;
    /// The generator and its parameters, e.g. `rmat (scale 20, edge factor 16, seed 1)`.
    fn description(&self) -> String;
    /// Vertex ids are `0..num_vertices()`.
    fn num_vertices(&self) -> u64;
    fn num_edges(&self) -> u64;
    fn weighted(&self) -> bool;
    /// What the generator says about direction: `Some(false)` when each undirected edge is
    /// generated once, `Some(true)` when it is generated as the arcs it stands for, `None` when
    /// the edge list means whatever the user imports it as (directed by default).
    fn directed(&self) -> Option<bool> {
        None
    }
    /// Appends edges `first..first + count` (clamped to `num_edges()`) to `out`. Edge `e` is
    /// the same whatever range it is asked in.
    fn edges_in(&self, first: u64, count: u64, out: &mut Vec<Edge>);

    /// Number of chunks of [`EDGES_PER_CHUNK`] edges.
    fn num_chunks(&self) -> u64 {
        self.num_edges().div_ceil(EDGES_PER_CHUNK)
    }

    /// Appends the edges of chunk `index` to `out`.
    fn chunk(&self, index: u64, out: &mut Vec<Edge>) {
        self.edges_in(index.saturating_mul(EDGES_PER_CHUNK), EDGES_PER_CHUNK, out)
    }

    /// All edges in order, generated one chunk at a time on the calling thread.
    fn edges(&self) -> EdgeStream<'_>
    where
        Self: Sized,
    {
        EdgeStream::new(self)
    }
}

/// Sequential iterator over a generator's edges (one chunk buffered).
pub struct EdgeStream<'a> {
    generator: &'a dyn EdgeGenerator,
    next_chunk: u64,
    buffer: Vec<Edge>,
    position: usize,
}

impl<'a> EdgeStream<'a> {
    pub fn new(generator: &'a dyn EdgeGenerator) -> Self {
        EdgeStream { generator, next_chunk: 0, buffer: Vec::new(), position: 0 }
    }
}

impl Iterator for EdgeStream<'_> {
    type Item = Edge;

    fn next(&mut self) -> Option<Edge> {
        if self.position == self.buffer.len() {
            if self.next_chunk >= self.generator.num_chunks() {
                return None;
            }
            self.buffer.clear();
            self.position = 0;
            self.generator.chunk(self.next_chunk, &mut self.buffer);
            self.next_chunk += 1;
        }
        let edge = self.buffer.get(self.position).copied();
        self.position += 1;
        edge
    }
}

/// Any of the built-in generators, for front ends that hold "the generator the user chose".
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    Rmat(Rmat),
    ErdosRenyi(ErdosRenyi),
    Grid(Grid),
}

impl Generator {
    fn inner(&self) -> &dyn EdgeGenerator {
        match self {
            Generator::Rmat(g) => g,
            Generator::ErdosRenyi(g) => g,
            Generator::Grid(g) => g,
        }
    }
}

impl EdgeGenerator for Generator {
    fn name(&self) -> &'static str {
        self.inner().name()
    }
    fn description(&self) -> String {
        self.inner().description()
    }
    fn num_vertices(&self) -> u64 {
        self.inner().num_vertices()
    }
    fn num_edges(&self) -> u64 {
        self.inner().num_edges()
    }
    fn weighted(&self) -> bool {
        self.inner().weighted()
    }
    fn directed(&self) -> Option<bool> {
        self.inner().directed()
    }
    fn edges_in(&self, first: u64, count: u64, out: &mut Vec<Edge>) {
        self.inner().edges_in(first, count, out)
    }
}

impl From<Rmat> for Generator {
    fn from(g: Rmat) -> Self {
        Generator::Rmat(g)
    }
}

impl From<ErdosRenyi> for Generator {
    fn from(g: ErdosRenyi) -> Self {
        Generator::ErdosRenyi(g)
    }
}

impl From<Grid> for Generator {
    fn from(g: Grid) -> Self {
        Generator::Grid(g)
    }
}

/// The edge indices `first..end` of a request, clamped to the generator's edge count.
pub(crate) fn clamp_range(first: u64, count: u64, num_edges: u64) -> std::ops::Range<u64> {
    let start = first.min(num_edges);
    start..first.saturating_add(count).min(num_edges)
}
