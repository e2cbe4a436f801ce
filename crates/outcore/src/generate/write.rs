//! Writing generated edges to files, fast and in constant memory.
//!
//! The layout comes from the file name: `.bin32` / `.bin64` are raw little-endian id pairs
//! (what `outcore import --format bin32|bin64` reads; no weights, as the format has no room for
//! them), anything else is a text edge list, `src dst` or `src dst weight` per line, which every
//! tool reads. A `.gz` or `.zst` suffix compresses either.
//!
//! Generating and formatting cost the time (scale 24 is 268 million lines), so a window of chunks is
//! generated and formatted in parallel into byte buffers while the previous window is written
//! out in order: the file is identical for any thread count, memory stays at two buffers per
//! thread, and the disk (or the compressor) is kept busy. Integers go through `itoa`; weights
//! use Rust's shortest round-trip formatting, so reading them back gives the same f64.
//!
//! Vertices without edges do not appear in an edge list; import a generator directly
//! ([`generate_into_store`](super::generate_into_store)) to keep all of them.

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{Edge, EdgeGenerator};
use crate::error::{Error, IoContext, Result};
use crate::output::sink::{Compression, OutputFile};
use crate::runtime::{CancelToken, Progress, ProgressUnit};

/// How edges are laid out in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeFileLayout {
    /// `src dst[ weight]\n`, decimal.
    Text,
    /// Little-endian u32 pairs (ids must be below 2^32).
    Bin32,
    /// Little-endian u64 pairs.
    Bin64,
}

/// Layout and compression of an edge file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeFileKind {
    pub layout: EdgeFileLayout,
    pub compression: Compression,
}

impl EdgeFileKind {
    /// From the file name: `x.bin32[.gz|.zst]`, `x.bin64[.gz|.zst]`, else text
    /// (`.txt`, `.el`, `.tsv`, `.edges`, ... with or without compression suffix).
    pub fn from_path(path: &Path) -> EdgeFileKind {
        let (compression, inner) = Compression::from_path(path);
        let extension =
            Path::new(&inner).extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        let layout = match extension.as_str() {
            "bin32" => EdgeFileLayout::Bin32,
            "bin64" => EdgeFileLayout::Bin64,
            _ => EdgeFileLayout::Text,
        };
        EdgeFileKind { layout, compression }
    }
}

/// What [`write_edges`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteReport {
    pub path: PathBuf,
    pub kind: EdgeFileKind,
    pub edges: u64,
    /// Bytes before compression.
    pub uncompressed_bytes: u64,
    /// Size of the file on disk.
    pub file_bytes: u64,
    pub seconds: f64,
}

/// Streams every edge of `generator` to `path` (layout and compression from the name, see
/// [`EdgeFileKind::from_path`]), with a progress bar counting edges. The file appears only
/// when complete; on error or cancellation nothing is left behind.
pub fn write_edges(
    path: &Path,
    generator: &dyn EdgeGenerator,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<WriteReport> {
    let started = std::time::Instant::now();
    let kind = EdgeFileKind::from_path(path);
    match kind.layout {
        EdgeFileLayout::Bin32 | EdgeFileLayout::Bin64 if generator.weighted() => {
            return Err(Error::invalid(format!(
                "{}: binary edge files hold only id pairs, not weights; write a text edge list (e.g. .txt) for a weighted graph",
                path.display()
            )));
        }
        EdgeFileLayout::Bin32 if generator.num_vertices() > 1u64 << 32 => {
            return Err(Error::invalid(format!(
                "{}: {} vertices do not fit in 32-bit ids; use .bin64",
                path.display(),
                generator.num_vertices()
            )));
        }
        _ => {}
    }
    let mut file = OutputFile::create_with(path, kind.compression)?;
    let bar = progress.start(&format!("writing {}", path.display()), Some(generator.num_edges()), ProgressUnit::Edges);

    let chunks = generator.num_chunks();
    let window = (rayon::current_num_threads() as u64).max(2);
    let format_window = |start: u64| -> Vec<Vec<u8>> {
        let end = start.saturating_add(window).min(chunks);
        (start..end)
            .into_par_iter()
            .map_init(Vec::new, |edges: &mut Vec<Edge>, chunk| {
                edges.clear();
                generator.chunk(chunk, edges);
                encode(kind.layout, edges)
            })
            .collect()
    };
    let mut start = 0;
    let mut current = format_window(start);
    while start < chunks {
        cancel.check()?;
        let next_start = start + window;
        let (written, next) = rayon::join(
            || -> Result<()> {
                for buffer in &current {
                    file.write_all(buffer).context(|| format!("writing {}", path.display()))?;
                }
                Ok(())
            },
            || if next_start < chunks { format_window(next_start) } else { Vec::new() },
        );
        written?;
        let edges_done = (next_start.min(chunks) * super::EDGES_PER_CHUNK).min(generator.num_edges());
        bar.set_position(edges_done);
        current = next;
        start = next_start;
    }
    let uncompressed_bytes = file.uncompressed_bytes();
    let file_bytes = file.finish()?;
    bar.finish();
    Ok(WriteReport {
        path: path.to_path_buf(),
        kind,
        edges: generator.num_edges(),
        uncompressed_bytes,
        file_bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// One chunk's bytes in the given layout.
fn encode(layout: EdgeFileLayout, edges: &[Edge]) -> Vec<u8> {
    match layout {
        EdgeFileLayout::Text => {
            let mut out = Vec::with_capacity(edges.len() * 24);
            let mut integers = itoa::Buffer::new();
            for edge in edges {
                out.extend_from_slice(integers.format(edge.src).as_bytes());
                out.push(b' ');
                out.extend_from_slice(integers.format(edge.dst).as_bytes());
                if let Some(weight) = edge.weight {
                    // Writing into a Vec cannot fail.
                    let _ = write!(out, " {weight}");
                }
                out.push(b'\n');
            }
            out
        }
        EdgeFileLayout::Bin32 => {
            let mut out = Vec::with_capacity(edges.len() * 8);
            for edge in edges {
                // Checked against num_vertices before writing.
                out.extend_from_slice(&(edge.src as u32).to_le_bytes());
                out.extend_from_slice(&(edge.dst as u32).to_le_bytes());
            }
            out
        }
        EdgeFileLayout::Bin64 => {
            let mut out = Vec::with_capacity(edges.len() * 16);
            for edge in edges {
                out.extend_from_slice(&edge.src.to_le_bytes());
                out.extend_from_slice(&edge.dst.to_le_bytes());
            }
            out
        }
    }
}
