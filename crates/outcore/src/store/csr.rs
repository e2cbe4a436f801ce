//! Compressed sparse row layouts (`csr-out`, `csr-in`): Redio's compact format.
//!
//! `offsets[v]..offsets[v+1]` indexes the targets (and weights) of vertex `v`. No source field
//! is stored. Targets are u32 when |V| < 2^32, else u64 (`target_bytes` in the layout params).
//! Engines read these files with positional reads through their own buffers; only the
//! in-memory engine loads them whole ([`CsrLayout::load`]).

use std::path::Path;

use super::files::{u64s_from_le_bytes, StoreFile};
use super::Store;
use crate::error::{Error, Result};

/// Which adjacency: out-edges (grouped by source) or in-edges (grouped by target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Out,
    In,
}

impl Direction {
    pub fn layout_name(self) -> &'static str {
        match self {
            Direction::Out => "csr-out",
            Direction::In => "csr-in",
        }
    }
}

/// Bytes per stored target for a graph with `vertices` vertices.
pub fn target_bytes_for(vertices: u64) -> u64 {
    if vertices < (1u64 << 32) {
        4
    } else {
        8
    }
}

/// The most in- plus out-arcs of one vertex ([`Manifest::max_degree`](super::Manifest::max_degree))
/// from offsets of the same vertices in csr-out and csr-in; `None` for csr-in on an undirected
/// store, whose csr-out serves as csr-in (each list then counts twice).
pub fn max_degree(out_offsets: &[u64], in_offsets: Option<&[u64]>) -> u64 {
    let in_offsets = in_offsets.unwrap_or(out_offsets);
    out_offsets.windows(2).zip(in_offsets.windows(2)).map(|(o, i)| o[1] - o[0] + i[1] - i[0]).max().unwrap_or(0)
}

/// The vertex with the most in- plus out-arcs and that number ([`max_degree`]), from the
/// offsets of csr-out and csr-in streamed 64 Ki vertices at a time through `read(direction,
/// first, out)`; on an undirected store (`directed` false) csr-out serves as csr-in and is read
/// once.
pub fn busiest_by_offsets(
    vertices: u64,
    directed: bool,
    mut read: impl FnMut(Direction, u64, &mut [u64]) -> Result<()>,
) -> Result<(u64, u64)> {
    let chunk = 1u64 << 16;
    let (mut out, mut inn) = (vec![0u64; chunk as usize + 1], vec![0u64; chunk as usize + 1]);
    let (mut best, mut first) = ((0, 0), 0);
    while first < vertices {
        let count = chunk.min(vertices - first) as usize;
        read(Direction::Out, first, &mut out[..count + 1])?;
        if directed {
            read(Direction::In, first, &mut inn[..count + 1])?;
        }
        let in_offsets = if directed { &inn[..count + 1] } else { &out[..count + 1] };
        for (i, (o, n)) in out[..count + 1].windows(2).zip(in_offsets.windows(2)).enumerate() {
            let edges = o[1] - o[0] + n[1] - n[0];
            if edges > best.1 {
                best = (first + i as u64, edges);
            }
        }
        first += count as u64;
    }
    Ok(best)
}

/// An opened CSR layout.
#[derive(Debug)]
pub struct CsrLayout {
    pub name: &'static str,
    pub vertices: u64,
    pub arcs: u64,
    pub target_bytes: u64,
    pub offsets: StoreFile,
    pub targets: StoreFile,
    pub weights: Option<StoreFile>,
}

/// A CSR held in memory (the in-memory engine, tests, small graphs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InMemoryCsr {
    pub offsets: Vec<u64>,
    pub targets: Vec<u64>,
    pub weights: Option<Vec<f64>>,
}

impl InMemoryCsr {
    pub fn num_vertices(&self) -> u64 {
        self.offsets.len().saturating_sub(1) as u64
    }
    pub fn neighbors(&self, v: u64) -> &[u64] {
        &self.targets[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
    }
    pub fn weights_of(&self, v: u64) -> Option<&[f64]> {
        self.weights.as_ref().map(|w| &w[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize])
    }
    pub fn degree(&self, v: u64) -> u64 {
        self.offsets[v as usize + 1] - self.offsets[v as usize]
    }
}

impl CsrLayout {
    pub fn open(store: &Store, direction: Direction) -> Result<CsrLayout> {
        let name = if direction == Direction::In && !store.is_directed() { "csr-out" } else { direction.layout_name() };
        if !store.manifest().layouts.contains_key(name) {
            return Err(Error::store(store.dir(), format!("layout {name} is missing")));
        }
        let offsets = store.file(&format!("{name}/offsets"))?;
        let targets = store.file(&format!("{name}/targets"))?;
        let weights = if store.is_weighted() { Some(store.file(&format!("{name}/weights"))?) } else { None };
        let vertices = store.num_vertices();
        let target_bytes = target_bytes_for(vertices);
        let arcs = store.num_arcs();
        if offsets.len() != (vertices + 1) * 8 || targets.len() != arcs * target_bytes {
            return Err(Error::store(
                offsets.path(),
                "layout sizes do not match the manifest's vertex and edge counts",
            ));
        }
        Ok(CsrLayout { name, vertices, arcs, target_bytes, offsets, targets, weights })
    }

    /// Byte offset in `targets` where vertex `v`'s adjacency begins, given its edge offset.
    pub fn target_byte(&self, edge_offset: u64) -> u64 {
        edge_offset * self.target_bytes
    }

    /// Reads `offsets[first..first + out.len()]`, checked to be non-decreasing and at most the
    /// arc count (offsets index the targets: a bad one would read outside them).
    pub fn read_offsets(&self, first: u64, out: &mut [u64]) -> Result<()> {
        self.offsets.read_u64s_at(first, out)?;
        check_offsets(self.offsets.path(), out, self.arcs)
    }

    /// Decodes targets of edges `[first, first + count)` into `out` (cleared first), checked
    /// to be vertex ids of the graph.
    pub fn read_targets(&self, first: u64, count: u64, out: &mut Vec<u64>) -> Result<()> {
        out.clear();
        let mut bytes = vec![0u8; (count * self.target_bytes) as usize];
        self.targets.read_exact_at(&mut bytes, first * self.target_bytes)?;
        decode_targets(&bytes, self.target_bytes, out);
        check_ids(self.targets.path(), out, self.vertices)
    }

    /// Reads the targets of edges `[first, first + count)` as stored (4 or 8 little-endian
    /// bytes each) into `out` (resized), verified against the block checksums and checked to
    /// be vertex ids of the graph.
    pub fn read_encoded_targets(&self, first: u64, count: u64, out: &mut Vec<u8>) -> Result<()> {
        out.resize((count * self.target_bytes) as usize, 0);
        self.targets.read_exact_at(out, first * self.target_bytes)?;
        check_encoded_ids(self.targets.path(), out, self.target_bytes, self.vertices)
    }

    /// The whole targets file as stored (`arcs × target_bytes` bytes, nothing beside it), read
    /// in 1 MiB pieces on all threads, each verified and checked as
    /// [`read_encoded_targets`](Self::read_encoded_targets) checks.
    pub fn read_all_encoded_targets(&self) -> Result<Vec<u8>> {
        use rayon::prelude::*;
        const PIECE_BYTES: usize = 1 << 20;
        let mut all = vec![0u8; (self.arcs * self.target_bytes) as usize];
        all.par_chunks_mut(PIECE_BYTES).enumerate().try_for_each(|(i, piece)| {
            self.targets.read_exact_at(piece, (i * PIECE_BYTES) as u64)?;
            check_encoded_ids(self.targets.path(), piece, self.target_bytes, self.vertices)
        })?;
        Ok(all)
    }

    /// Reads the weights of edges `[first, first + count)` into `out` (cleared first); the
    /// layout must be weighted.
    pub fn read_weights(&self, first: u64, count: u64, out: &mut Vec<f64>) -> Result<()> {
        let file = self.weights.as_ref().ok_or_else(|| Error::invalid(format!("{} has no weights", self.name)))?;
        let mut bytes = vec![0u8; (count * 8) as usize];
        file.read_exact_at(&mut bytes, first * 8)?;
        out.clear();
        out.extend(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))));
        Ok(())
    }

    /// Loads the whole layout into memory: 8 bytes per vertex, 8 per arc (16 weighted). The
    /// files are read and decoded in 1 MiB pieces, so no raw copy is held beside the arrays.
    pub fn load(&self) -> Result<InMemoryCsr> {
        self.load_with(true)
    }

    /// [`load`](Self::load), leaving the weights file unread when `weights` is false (a
    /// program that ignores weights would pay half the arc bytes for nothing).
    ///
    /// The pieces are read, decoded and checked on all threads: on one thread, faulting in the
    /// arrays' fresh pages and widening the ids took longer than the reads (about 20 ns an arc
    /// on RMAT-20, more than a BFS spends on the arc).
    pub fn load_with(&self, weights: bool) -> Result<InMemoryCsr> {
        use rayon::prelude::*;
        let mut offsets = vec![0u64; (self.vertices + 1) as usize];
        self.read_offsets(0, &mut offsets)?;
        if offsets.first() != Some(&0) || offsets.last() != Some(&self.arcs) {
            return Err(Error::store(
                self.offsets.path(),
                "offsets do not run from 0 to the arc count: the file is corrupted",
            ));
        }
        let mut targets = vec![0u64; self.arcs as usize];
        let width = self.target_bytes;
        targets.par_chunks_mut((LOAD_PIECE_BYTES / width) as usize).enumerate().try_for_each_init(
            Vec::new,
            |bytes, (i, out)| {
                bytes.resize(out.len() * width as usize, 0);
                self.targets.read_exact_at(bytes, i as u64 * LOAD_PIECE_BYTES)?;
                decode_targets_into(bytes, width, out);
                check_ids(self.targets.path(), out, self.vertices)
            },
        )?;
        let weights = match self.weights.as_ref().filter(|_| weights) {
            Some(w) => {
                let mut weights = vec![0f64; self.arcs as usize];
                weights.par_chunks_mut((LOAD_PIECE_BYTES / 8) as usize).enumerate().try_for_each(|(i, out)| {
                    // SAFETY: f64 has no invalid bit patterns; the byte view covers exactly `out`.
                    let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, out.len() * 8) };
                    w.read_exact_at(bytes, i as u64 * LOAD_PIECE_BYTES)?;
                    if cfg!(target_endian = "big") {
                        out.iter_mut().for_each(|x| *x = f64::from_bits(u64::from_le(x.to_bits())));
                    }
                    Ok::<(), Error>(())
                })?;
                Some(weights)
            }
            None => None,
        };
        Ok(InMemoryCsr { offsets, targets, weights })
    }
}

/// The piece of a file [`CsrLayout::load_with`] reads at once (per thread).
const LOAD_PIECE_BYTES: u64 = 1 << 20;

/// Decodes little-endian targets of `width` bytes (4 or 8) into `out`, one per slot.
fn decode_targets_into(bytes: &[u8], width: u64, out: &mut [u64]) {
    if width == 4 {
        out.iter_mut()
            .zip(bytes.chunks_exact(4))
            .for_each(|(t, c)| *t = u32::from_le_bytes(c.try_into().unwrap()) as u64);
    } else {
        out.iter_mut().zip(bytes.chunks_exact(8)).for_each(|(t, c)| *t = u64::from_le_bytes(c.try_into().unwrap()));
    }
}

/// Decodes little-endian targets of `width` bytes (4 or 8), appending to `out`.
pub fn decode_targets(bytes: &[u8], width: u64, out: &mut Vec<u64>) {
    if width == 4 {
        out.extend(bytes.chunks_exact(4).map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap()))));
    } else {
        out.extend(u64s_from_le_bytes(bytes));
    }
}

/// Checks decoded vertex ids against the vertex count: one maximum over the slice (vectorised)
/// and, only when it fails, a search for the culprit. An id out of range is corruption of
/// `path` (exit 66), never an index panic in an engine.
pub fn check_ids(path: &Path, ids: &[u64], vertices: u64) -> Result<()> {
    let max = ids.iter().fold(0u64, |m, &t| m.max(t));
    if ids.is_empty() || max < vertices {
        return Ok(());
    }
    let at = ids.iter().position(|&t| t >= vertices).unwrap_or(0);
    Err(Error::store(
        path,
        format!(
            "vertex id {} (item {at} of a read) is out of range for {vertices} vertices: the file is corrupted",
            ids[at]
        ),
    ))
}

/// [`check_ids`] on little-endian ids of `width` bytes (4 or 8), before they are decoded.
pub fn check_encoded_ids(path: &Path, bytes: &[u8], width: u64, vertices: u64) -> Result<()> {
    let max = if width == 4 {
        bytes.chunks_exact(4).fold(0u64, |m, c| m.max(u32::from_le_bytes(c.try_into().unwrap()) as u64))
    } else {
        bytes.chunks_exact(8).fold(0u64, |m, c| m.max(u64::from_le_bytes(c.try_into().unwrap())))
    };
    if max < vertices {
        return Ok(());
    }
    let mut ids = Vec::new();
    decode_targets(bytes, width, &mut ids);
    check_ids(path, &ids, vertices)
}

/// Checks a run of offsets: non-decreasing and at most `arcs`.
pub fn check_offsets(path: &Path, offsets: &[u64], arcs: u64) -> Result<()> {
    let ok = offsets.windows(2).all(|w| w[0] <= w[1]) && offsets.last().is_none_or(|&o| o <= arcs);
    if ok {
        return Ok(());
    }
    Err(Error::store(path, format!("offsets are not non-decreasing up to the arc count {arcs}: the file is corrupted")))
}
