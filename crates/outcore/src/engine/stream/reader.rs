//! The reader side of the stream engine: a thread that turns an iteration's chunk plan into
//! filled, aligned buffers, ahead of the compute threads (paper §4, "Computation", steps 3–4).
//!
//! A fixed pool of [`EdgeBuffer`]s circulates between two bounded channels: the reader takes
//! an empty buffer from the *free* channel, packs the next chunks (or pieces of a chunk larger
//! than a buffer) into it with positional reads in file order, and sends it on the *full*
//! channel; the compute side scatters its edges and hands it back. So at most `buffers`
//! buffers exist, the reader runs at most that far ahead, and memory stays within the budget
//! whatever the graph size. The edge files are never mapped or loaded whole.
//!
//! Two I/O modes, chosen per iteration by the engine (paper §4, "Vertex Data Buffering"):
//! buffered reads through the page cache when the iteration's active data fits in it, and
//! `O_DIRECT` reads otherwise, so that a scan that cannot be cached does not evict everything
//! else. Direct reads need 4 KiB-aligned file offsets, lengths and memory: every piece is read
//! from the page boundary below its first byte to the one above its last, into a 4 KiB-aligned
//! place of the buffer, and the piece remembers where its first edge landed. Every byte read
//! (alignment padding included) is counted in the run's [`IoCounters`]. The aligned memory, the
//! `O_DIRECT` switch and the counted reads are the runtime's ([`crate::runtime::direct`],
//! [`CountedFile`]); the read-ahead schedule and the packing of pieces are this module's.
//!
//! Every read is checked against the store's block checksums (`store/blocks.rs`) before its
//! edges are used, but not by the reader: it records the reads of a buffer whose blocks were
//! never checked, and the compute side checks them in parallel ([`EdgeBuffer::verify`]) just
//! before it scatters the buffer, so the CRC runs on every core and the edges are read from
//! cache right after. Checked on the reader thread, in series with the reads, the CRC cost a
//! one-pass WCC 16 % of its iteration time; on the compute side, 4 % (issue 17).
//!
//! One reader thread with plain positional reads (no io_uring): on RMAT scale 22 PageRank the
//! compute side waits for buffers about 0.02 s of each ~1 s iteration (`io_wait_seconds`),
//! so deeper or asynchronous I/O would have nothing to win here.

use std::path::Path;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use super::schedule::Chunk;
use crate::error::{Error, Result};
use crate::runtime::direct::{Access, AlignedBuffer, BufferPool, DIRECT_ALIGN};
use crate::runtime::{CancelToken, CountedFile, IoCounters};
use crate::store::blocks::BLOCK_BYTES;
use crate::store::FileChecks;

/// One adjacency file opened for buffered reads and, when the file system allows, direct ones
/// (two handles: an iteration chooses its mode).
#[derive(Debug)]
pub struct EdgeFile {
    buffered: CountedFile,
    direct: Option<CountedFile>,
    /// Bytes per edge in this file (4 or 8 for targets, 8 for weights).
    pub width: u64,
    /// The store's block checks of this file: every read is verified before it is used (by the
    /// compute side, [`EdgeBuffer::verify`]).
    checks: Option<Arc<FileChecks>>,
    /// Why reads stay buffered although direct ones were asked for.
    refused: Option<String>,
}

impl EdgeFile {
    /// Opens `path`, its reads counted in `counters`; `want_direct` also opens it with
    /// `O_DIRECT` (None, and the reason kept, when the file system does not take it).
    pub fn open(path: &Path, width: u64, want_direct: bool, counters: &IoCounters) -> Result<EdgeFile> {
        let buffered = CountedFile::open(path, false, counters.clone())?;
        let (mut direct, mut refused) = (None, None);
        if want_direct {
            let file = CountedFile::open(path, true, counters.clone())?;
            match file.access() {
                Access::Direct => direct = Some(file),
                Access::Buffered(why) => refused = Some(why.clone()),
            }
        }
        Ok(EdgeFile { buffered, direct, width, checks: None, refused })
    }

    /// Verifies every read against the store's block checksums of the file.
    pub fn with_checks(mut self, checks: Option<Arc<FileChecks>>) -> EdgeFile {
        self.checks = checks;
        self
    }

    pub fn len(&self) -> u64 {
        self.buffered.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffered.is_empty()
    }

    pub fn supports_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// Why direct reads were asked for and refused.
    pub fn direct_refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    pub fn path(&self) -> &Path {
        self.buffered.path()
    }

    /// Reads `[offset, offset + buf.len())` (stopping early only at the end of the file, and
    /// needing at least `needed` bytes) as one counted request; returns the bytes read.
    fn read(&self, direct: bool, buf: &mut [u8], offset: u64, needed: usize) -> Result<usize> {
        let file = if direct { self.direct.as_ref().unwrap_or(&self.buffered) } else { &self.buffered };
        file.read_at(buf, offset, needed)
    }
}

/// Splits a read of `len` bytes at file offset `offset` into spans (positions relative to the
/// read) that end on block boundaries of the file, [`VERIFY_SPAN_BLOCKS`] blocks each: a block
/// is then checked by one thread from the buffer, and only the read's own first and last blocks
/// can be partial.
fn verify_spans(offset: u64, len: usize) -> impl Iterator<Item = (usize, usize)> {
    let span = VERIFY_SPAN_BLOCKS * BLOCK_BYTES;
    let end = offset + len as u64;
    let mut at = offset;
    std::iter::from_fn(move || {
        (at < end).then(|| {
            let stop = ((at / span + 1) * span).min(end);
            let piece = ((at - offset) as usize, (stop - offset) as usize);
            at = stop;
            piece
        })
    })
}

/// Blocks per parallel verification task: 1 MiB, about 70 µs of CRC32C.
const VERIFY_SPAN_BLOCKS: u64 = 16;

/// The files of one adjacency layout that an iteration reads.
#[derive(Debug)]
pub struct LayoutFiles {
    pub targets: EdgeFile,
    /// Only when the program uses weights.
    pub weights: Option<EdgeFile>,
}

impl LayoutFiles {
    /// Bytes per edge over the files read.
    pub fn edge_bytes(&self) -> u64 {
        self.targets.width + self.weights.as_ref().map_or(0, |w| w.width)
    }

    /// Why one of the files reads buffered although direct reads were asked for.
    pub fn direct_refused(&self) -> Option<&str> {
        self.targets.direct_refused().or_else(|| self.weights.as_ref().and_then(EdgeFile::direct_refused))
    }

    pub fn files(&self) -> u64 {
        1 + self.weights.is_some() as u64
    }

    /// Total bytes of the files read.
    pub fn bytes(&self) -> u64 {
        self.targets.len() + self.weights.as_ref().map_or(0, |w| w.len())
    }

    pub fn supports_direct(&self) -> bool {
        self.targets.supports_direct() && self.weights.as_ref().is_none_or(|w| w.supports_direct())
    }
}

/// A run of consecutive edges of one layout inside an [`EdgeBuffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Index of the layout in the engine's list (csr-out, then csr-in).
    pub layout: usize,
    pub first_edge: u64,
    pub end_edge: u64,
    /// Byte position in the targets area of `first_edge`'s target.
    pub target_pos: usize,
    /// Byte position in the weights area of `first_edge`'s weight.
    pub weight_pos: usize,
}

impl Piece {
    pub fn edges(&self) -> u64 {
        self.end_edge - self.first_edge
    }
}

/// A buffer of the pool: the targets (and weights) of one or more pieces.
pub struct EdgeBuffer {
    pub targets: AlignedBuffer,
    pub weights: Option<AlignedBuffer>,
    pub pieces: Vec<Piece>,
    targets_used: usize,
    weights_used: usize,
    /// The reads of this buffer whose block checksums [`EdgeBuffer::verify`] still has to check.
    unverified: Vec<UnverifiedRead>,
}

/// One read into an [`EdgeBuffer`], to be checked against its file's block checksums.
struct UnverifiedRead {
    checks: Arc<FileChecks>,
    /// In the weights area (else the targets area).
    weights: bool,
    /// Where the read landed in its area, its file offset and its length.
    at: usize,
    offset: u64,
    len: usize,
}

impl EdgeBuffer {
    /// A buffer of `bytes` in total from `pool`, split between targets and weights in
    /// proportion to their widths when weights are read.
    pub fn new(pool: &BufferPool, bytes: usize, target_width: u64, with_weights: bool) -> Result<EdgeBuffer> {
        let align = DIRECT_ALIGN;
        let (t, w) = if with_weights {
            let t = bytes * target_width as usize / (target_width as usize + 8);
            (t / align * align, (bytes - t) / align * align)
        } else {
            (bytes / align * align, 0)
        };
        Ok(EdgeBuffer {
            targets: pool.take(t.max(align))?,
            weights: if with_weights { Some(pool.take(w.max(align))?) } else { None },
            pieces: Vec::new(),
            targets_used: 0,
            weights_used: 0,
            unverified: Vec::new(),
        })
    }

    /// The read-ahead pool of a run: `count` buffers of `bytes` each, from a [`BufferPool`]
    /// limited to the `count × bytes` the memory plan gives them.
    pub fn pool(count: usize, bytes: u64, target_width: u64, with_weights: bool) -> Result<Vec<EdgeBuffer>> {
        let pool = BufferPool::new(count as u64 * bytes);
        (0..count).map(|_| EdgeBuffer::new(&pool, bytes as usize, target_width, with_weights)).collect()
    }

    /// Checks every read of this buffer against its file's block checksums, in parallel on the
    /// calling thread's rayon pool, so that the check runs on the compute side just before the
    /// edges are used (the data is then still in cache when they are) and not in series with
    /// the reads on the reader thread. The compute side calls it before touching any edge.
    pub fn verify(&self) -> Result<()> {
        use rayon::prelude::*;
        if self.unverified.is_empty() {
            return Ok(());
        }
        let spans: Vec<(&UnverifiedRead, usize, usize)> = self
            .unverified
            .iter()
            .flat_map(|read| verify_spans(read.offset, read.len).map(move |(a, b)| (read, a, b)))
            .collect();
        spans.into_par_iter().try_for_each(|(read, from, to)| {
            let area = if read.weights { self.weights.as_ref().expect("weights were read") } else { &self.targets };
            read.checks.verify(&area[read.at + from..read.at + to], read.offset + from as u64)
        })
    }

    /// Bytes allocated.
    pub fn capacity(&self) -> usize {
        self.targets.len() + self.weights.as_ref().map_or(0, |w| w.len())
    }

    pub fn edges(&self) -> u64 {
        self.pieces.iter().map(Piece::edges).sum()
    }

    /// Bytes of edge data held (targets and weights).
    pub fn used_bytes(&self) -> u64 {
        (self.targets_used + self.weights_used) as u64
    }

    /// A copy of the filled part, to keep in memory after this buffer goes back to the pool
    /// (its reads verified: the copy has nothing left to check).
    pub fn filled_copy(&self) -> EdgeBuffer {
        self.filled_copy_with(|_, _| {})
    }

    /// [`filled_copy`](Self::filled_copy), the targets area's copy passed through
    /// `fix_targets` piece by piece ([`AlignedBuffer::copy_of_with`]).
    pub fn filled_copy_with(&self, fix_targets: impl Fn(usize, &mut [u8]) + Sync) -> EdgeBuffer {
        EdgeBuffer {
            targets: AlignedBuffer::copy_of_with(&self.targets[..self.targets_used], fix_targets),
            weights: self.weights.as_ref().map(|w| AlignedBuffer::copy_of(&w[..self.weights_used])),
            pieces: self.pieces.clone(),
            targets_used: self.targets_used,
            weights_used: self.weights_used,
            unverified: Vec::new(),
        }
    }

    /// A buffer holding `[first, end)` of `layout` with `width`-byte targets (unit tests).
    #[cfg(test)]
    pub(crate) fn filled_for_test(layout: usize, first: u64, end: u64, width: usize) -> EdgeBuffer {
        let used = (end - first) as usize * width;
        let pool = BufferPool::new(u64::MAX);
        let mut b = EdgeBuffer::new(&pool, used.max(1), width as u64, false).unwrap();
        b.pieces.push(Piece { layout, first_edge: first, end_edge: end, target_pos: 0, weight_pos: 0 });
        b.targets_used = used;
        b
    }

    fn reset(&mut self) {
        self.pieces.clear();
        self.unverified.clear();
        self.targets_used = 0;
        self.weights_used = 0;
    }
}

/// What the reader did in one iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderStats {
    /// Chunks of the plan (merged active ranges, blocks or whole files).
    pub chunks: u64,
    /// Positional read calls issued.
    pub requests: u64,
    /// Buffers filled and handed to the compute side.
    pub buffers_filled: u64,
    pub bytes_read: u64,
}

/// The reader for one iteration: which layouts, how to read, where to count.
pub struct ChunkReader<'a> {
    pub layouts: &'a [LayoutFiles],
    /// Read with O_DIRECT (where the file was opened so); reads are counted by the files.
    pub direct: bool,
    pub cancel: &'a CancelToken,
}

/// The place one file's part of a piece takes in a buffer.
struct Placement {
    /// File offset of the read (aligned down for direct I/O).
    read_start: u64,
    /// Bytes requested (aligned up for direct I/O).
    read_len: u64,
    /// Bytes that must be there (up to the piece's last byte).
    needed: u64,
    /// Offset of the piece's first edge from `read_start`.
    lead: u64,
}

impl ChunkReader<'_> {
    fn align(&self) -> u64 {
        if self.direct {
            DIRECT_ALIGN as u64
        } else {
            1
        }
    }

    /// How many edges from `first` (at most `max`) fit in `room` bytes of an area for a file
    /// of `width` bytes per edge, given the alignment.
    fn edges_fitting(&self, first: u64, max: u64, width: u64, room: u64) -> u64 {
        let a = self.align();
        let start = first * width / a * a;
        // The read must end (aligned up) within start + room; with aligned `room` the largest
        // edge end whose aligned-up byte stays inside is floor((start + room) / width).
        let limit_byte = start + room / a * a;
        (limit_byte / width).saturating_sub(first).min(max)
    }

    /// Reads edges `[first, end)` of `file` into `area` after its `used` bytes, counting the
    /// request; advances `used` and returns the offset of the piece's first edge in `area`, and
    /// the read to verify when the file has block checks (in the targets area; the caller marks
    /// a weights read).
    fn read_piece(
        &self,
        file: &EdgeFile,
        area: &mut [u8],
        used: &mut usize,
        first: u64,
        end: u64,
        stats: &mut ReaderStats,
    ) -> Result<(usize, Option<UnverifiedRead>)> {
        let place = self.placement(first, end, file.width);
        let at = *used;
        let got = file.read(
            self.direct,
            &mut area[at..at + place.read_len as usize],
            place.read_start,
            place.needed as usize,
        )?;
        stats.requests += 1;
        stats.bytes_read += got as u64;
        *used = at + place.read_len as usize;
        let checks = file.checks.as_ref().filter(|c| !c.is_range_verified(place.read_start, got as u64));
        let read = checks.map(|checks| UnverifiedRead {
            checks: Arc::clone(checks),
            weights: false,
            at,
            offset: place.read_start,
            len: got,
        });
        Ok((at + place.lead as usize, read))
    }

    fn placement(&self, first: u64, end: u64, width: u64) -> Placement {
        let a = self.align();
        let (first_byte, end_byte) = (first * width, end * width);
        let read_start = first_byte / a * a;
        let read_end = end_byte.div_ceil(a) * a;
        Placement {
            read_start,
            read_len: read_end - read_start,
            needed: end_byte - read_start,
            lead: first_byte - read_start,
        }
    }

    /// Reads the plans (one per layout, in order) into buffers from `free`, sending each
    /// filled buffer to `full`. Stops early, sending the error, when a read fails or the run
    /// is cancelled; stops quietly when the compute side hung up.
    pub fn run<I: Iterator<Item = Chunk>>(
        &self,
        plans: Vec<(usize, I)>,
        free: &Receiver<EdgeBuffer>,
        full: &Sender<Result<EdgeBuffer>>,
    ) -> (ReaderStats, Option<EdgeBuffer>) {
        let mut stats = ReaderStats::default();
        let mut current = None;
        if let Err(e) = self.fill_all(plans, free, full, &mut stats, &mut current) {
            let _ = full.send(Err(e));
        }
        (stats, current)
    }

    fn fill_all<I: Iterator<Item = Chunk>>(
        &self,
        plans: Vec<(usize, I)>,
        free: &Receiver<EdgeBuffer>,
        full: &Sender<Result<EdgeBuffer>>,
        stats: &mut ReaderStats,
        current: &mut Option<EdgeBuffer>,
    ) -> Result<()> {
        // `current` is the buffer being filled (an empty one is handed back at the end).
        let take = |current: &mut Option<EdgeBuffer>| -> Result<bool> {
            if current.is_none() {
                match free.recv() {
                    Ok(mut b) => {
                        b.reset();
                        *current = Some(b);
                    }
                    Err(_) => return Ok(false),
                }
            }
            Ok(true)
        };
        let flush = |current: &mut Option<EdgeBuffer>, stats: &mut ReaderStats| -> bool {
            match current.take() {
                Some(b) if !b.pieces.is_empty() => {
                    stats.buffers_filled += 1;
                    full.send(Ok(b)).is_ok()
                }
                Some(b) => {
                    *current = Some(b);
                    true
                }
                None => true,
            }
        };
        for (layout_index, plan) in plans {
            let layout = &self.layouts[layout_index];
            for chunk in plan {
                stats.chunks += 1;
                let mut first = chunk.first_edge;
                while first < chunk.end_edge {
                    self.cancel.check()?;
                    if !take(current)? {
                        return Ok(());
                    }
                    let buffer = current.as_mut().expect("a buffer is held");
                    let left = chunk.end_edge - first;
                    let t_room = (buffer.targets.len() - buffer.targets_used) as u64;
                    let mut count = self.edges_fitting(first, left, layout.targets.width, t_room);
                    if let (Some(wf), Some(wb)) = (&layout.weights, &buffer.weights) {
                        let w_room = (wb.len() - buffer.weights_used) as u64;
                        count = count.min(self.edges_fitting(first, left, wf.width, w_room));
                    }
                    if count == 0 {
                        if buffer.pieces.is_empty() {
                            return Err(Error::invalid("read buffers too small for one edge (internal sizing error)"));
                        }
                        if !flush(current, stats) {
                            return Ok(());
                        }
                        continue;
                    }
                    let end = first + count;
                    let mut piece =
                        Piece { layout: layout_index, first_edge: first, end_edge: end, target_pos: 0, weight_pos: 0 };
                    let (pos, read) = self.read_piece(
                        &layout.targets,
                        &mut buffer.targets,
                        &mut buffer.targets_used,
                        first,
                        end,
                        stats,
                    )?;
                    piece.target_pos = pos;
                    buffer.unverified.extend(read);
                    if let (Some(wf), Some(wb)) = (&layout.weights, buffer.weights.as_mut()) {
                        let (pos, read) = self.read_piece(wf, wb, &mut buffer.weights_used, first, end, stats)?;
                        piece.weight_pos = pos;
                        buffer.unverified.extend(read.map(|r| UnverifiedRead { weights: true, ..r }));
                    }
                    buffer.pieces.push(piece);
                    first = end;
                }
            }
        }
        flush(current, stats);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn write_targets(dir: &Path, n: u32) -> PathBuf {
        let path = dir.join("targets");
        let bytes: Vec<u8> = (0..n).flat_map(|i| i.to_le_bytes()).collect();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Verification spans cover the read exactly, in order, and every boundary inside it is a
    /// block boundary of the file.
    #[test]
    fn verify_spans_cut_reads_on_block_boundaries() {
        let span = VERIFY_SPAN_BLOCKS * BLOCK_BYTES;
        for (offset, len) in [(0u64, 0usize), (0, 1), (4096, 100), (span - 4096, 8192), (3, 5 * span as usize + 17)] {
            let spans: Vec<(usize, usize)> = verify_spans(offset, len).collect();
            let mut at = 0;
            for &(from, to) in &spans {
                assert_eq!(from, at);
                assert!(to > from);
                at = to;
            }
            assert_eq!(at, len);
            for &(_, to) in &spans[..spans.len().saturating_sub(1)] {
                assert_eq!((offset + to as u64) % span, 0, "inner boundary off a block boundary");
            }
        }
    }

    /// Reads chunks through a pool of two small buffers and checks every edge arrives once,
    /// at the position its piece says, in both I/O modes.
    #[test]
    fn packs_and_splits_chunks_into_aligned_buffers() {
        let dir = tempfile::tempdir().unwrap();
        let n = 100_000u32;
        let path = write_targets(dir.path(), n);
        for direct in [false, true] {
            let counters = IoCounters::new();
            let layouts =
                vec![LayoutFiles { targets: EdgeFile::open(&path, 4, direct, &counters).unwrap(), weights: None }];
            let direct = direct && layouts[0].supports_direct();
            let cancel = CancelToken::new();
            let reader = ChunkReader { layouts: &layouts, direct, cancel: &cancel };
            let chunks = vec![
                Chunk { first_edge: 3, end_edge: 10 },
                Chunk { first_edge: 5000, end_edge: 5001 },
                Chunk { first_edge: 20_000, end_edge: 60_000 },
                Chunk { first_edge: 99_990, end_edge: 100_000 },
            ];
            let expected: Vec<u64> = chunks.iter().flat_map(|c| c.first_edge..c.end_edge).collect();
            let (free_tx, free_rx) = crossbeam_channel::bounded(2);
            let (full_tx, full_rx) = crossbeam_channel::bounded(2);
            for buffer in EdgeBuffer::pool(2, 16 * 4096, 4, false).unwrap() {
                free_tx.send(buffer).unwrap();
            }
            let mut seen = Vec::new();
            let stats = std::thread::scope(|s| {
                let handle = s.spawn(|| {
                    let (stats, leftover) = reader.run(vec![(0, chunks.clone().into_iter())], &free_rx, &full_tx);
                    drop(full_tx);
                    assert!(leftover.is_none_or(|b| b.pieces.is_empty()));
                    stats
                });
                for buffer in full_rx.iter() {
                    let buffer = buffer.unwrap();
                    for p in &buffer.pieces {
                        for e in p.first_edge..p.end_edge {
                            let pos = p.target_pos + (e - p.first_edge) as usize * 4;
                            seen.push(u32::from_le_bytes(buffer.targets[pos..pos + 4].try_into().unwrap()) as u64);
                        }
                    }
                    free_tx.send(buffer).unwrap();
                }
                handle.join().unwrap()
            });
            assert_eq!(seen, expected, "direct = {direct}");
            assert_eq!(stats.chunks, 4);
            assert!(stats.buffers_filled >= 3, "40 000 edges of 4 B need several 64 KiB buffers");
            assert_eq!(counters.snapshot().bytes_read, stats.bytes_read);
            if !direct {
                assert_eq!(stats.bytes_read, expected.len() as u64 * 4);
            } else {
                assert!(stats.bytes_read >= expected.len() as u64 * 4);
                assert_eq!(
                    stats.bytes_read % 4096,
                    (n as u64 * 4) % 4096,
                    "all reads but the one at EOF are whole pages"
                );
            }
        }
    }
}
