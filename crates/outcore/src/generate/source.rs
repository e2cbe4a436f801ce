//! Generated graphs as import input: `outcore generate rmat --scale 24 --store DIR` goes
//! through the same pipeline (id mapping, external sorts, layouts) as an imported file, with
//! no edge-list file in between.

use std::path::Path;

use rayon::prelude::*;

use super::{Edge, EdgeGenerator};
use crate::error::Result;
use crate::ingest::{import_records, ImportOptions, ImportReport, InputInfo, InputRecord, RawId, RecordSource};
use crate::runtime::{CancelToken, Progress};
use crate::store::Store;

/// Notional input size of one generated edge, for byte-based progress: the size of a binary
/// u64 pair.
pub const BYTES_PER_EDGE: u64 = 16;
/// Notional input size of one generated vertex record.
pub const BYTES_PER_VERTEX: u64 = 8;

/// A [`RecordSource`] that yields a generator's edges, then (unless turned off) one
/// [`InputRecord::Vertex`] for every vertex id `0..num_vertices`, so that the store has exactly
/// the generator's vertex count, isolated vertices included (R-MAT leaves many vertices
/// without edges, and Graph500 counts them).
///
/// Chunks are generated a window at a time in parallel on the rayon pool; the records come out
/// in edge order, identical for any thread count.
pub struct GeneratedSource<G> {
    generator: G,
    include_all_vertices: bool,
    next_chunk: u64,
    pending: std::vec::IntoIter<Edge>,
    next_vertex: u64,
    edges_emitted: u64,
}

impl<G: EdgeGenerator> GeneratedSource<G> {
    pub fn new(generator: G) -> Self {
        GeneratedSource {
            generator,
            include_all_vertices: true,
            next_chunk: 0,
            pending: Vec::new().into_iter(),
            next_vertex: 0,
            edges_emitted: 0,
        }
    }

    /// With `false`, only vertices that have an edge end up in the store.
    pub fn with_all_vertices(mut self, include: bool) -> Self {
        self.include_all_vertices = include;
        self
    }

    pub fn generator(&self) -> &G {
        &self.generator
    }

    /// What the import pipeline should know about this input.
    pub fn info(&self) -> InputInfo {
        let vertices = if self.include_all_vertices { self.generator.num_vertices() } else { 0 };
        InputInfo {
            format_description: format!("generated {}", self.generator.description()),
            directed: self.generator.directed(),
            weighted: Some(self.generator.weighted()),
            total_bytes: self.generator.num_edges().saturating_mul(BYTES_PER_EDGE)
                + vertices.saturating_mul(BYTES_PER_VERTEX),
            files: Vec::new(),
        }
    }

    fn refill(&mut self) {
        let window = (rayon::current_num_threads() as u64).max(2);
        let end = self.next_chunk.saturating_add(window).min(self.generator.num_chunks());
        let generator = &self.generator;
        let chunks: Vec<Vec<Edge>> = (self.next_chunk..end)
            .into_par_iter()
            .map(|chunk| {
                let mut edges = Vec::new();
                generator.chunk(chunk, &mut edges);
                edges
            })
            .collect();
        self.next_chunk = end;
        self.pending = chunks.concat().into_iter();
    }
}

impl<G: EdgeGenerator> RecordSource for GeneratedSource<G> {
    fn read_batch(&mut self, out: &mut Vec<InputRecord>, max: usize) -> Result<bool> {
        let mut added = 0;
        while added < max {
            if let Some(edge) = self.pending.next() {
                out.push(InputRecord::Edge {
                    src: RawId::U64(edge.src),
                    dst: RawId::U64(edge.dst),
                    weight: edge.weight,
                });
                self.edges_emitted += 1;
                added += 1;
            } else if self.next_chunk < self.generator.num_chunks() {
                self.refill();
            } else if self.include_all_vertices && self.next_vertex < self.generator.num_vertices() {
                out.push(InputRecord::Vertex(RawId::U64(self.next_vertex)));
                self.next_vertex += 1;
                added += 1;
            } else {
                return Ok(false);
            }
        }
        Ok(self.pending.len() > 0
            || self.next_chunk < self.generator.num_chunks()
            || (self.include_all_vertices && self.next_vertex < self.generator.num_vertices()))
    }

    fn bytes_consumed(&self) -> u64 {
        self.edges_emitted * BYTES_PER_EDGE + self.next_vertex * BYTES_PER_VERTEX
    }
}

/// Generates a graph straight into a new store at `store_dir` through the import pipeline
/// (`opts` as for `outcore import`: direction, dedup, ordering, memory budget; the generator's
/// own declaration of direction and weights is used where `opts` leaves them open).
pub fn generate_into_store<G: EdgeGenerator + 'static>(
    generator: G,
    store_dir: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<(Store, ImportReport)> {
    let source = GeneratedSource::new(generator);
    let info = source.info();
    import_records(Box::new(source), info, store_dir, opts, progress, cancel)
}
