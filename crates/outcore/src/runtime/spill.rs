//! Spill files: what an engine or the importer writes to disk because it does not fit its share
//! of the budget, reads back once, and removes.
//!
//! Every out-of-core system here spills the same way, so it is written once:
//! * the importer's external sort writes sorted runs and merges them (`ingest::extsort`);
//! * the pregel engine (GraphD §3.2) writes each received message batch sorted by target and
//!   merges the batches into the incoming stream S^I in one pass, in name order;
//! * the nwsm engine's global gather buffer (TurboGraph++ §4.1, Algorithms 2–3) spills updates
//!   to the ranges it cannot hold and reads each range's updates back before its apply;
//! * the shards engine (GraphChi's intervals) spills directly delivered messages as runs sorted
//!   by receiving interval and reads them back interval by interval (a record range).
//!
//! What they share, and what this module guarantees:
//! * [`SpillFile`]: a file in a work directory, named as the store's hygiene expects
//!   (`KIND@PID-…`, [`work_name`]), removed when dropped, so an error or a cancellation leaves
//!   nothing behind (and a killed process's leftovers are recognised by the next open);
//! * [`SpillWriter`]: writes through one buffer whose size the caller takes from its budget;
//!   each flush is one counted write request ([`IoCounters`]);
//! * [`SpillReader`]: reads through one buffer (grown only when a single record is larger),
//!   each read one counted request; fixed-size records come as slices of the buffer (no copy,
//!   no allocation per record), variable-size ones are decoded by the caller from
//!   [`SpillReader::buffered`]; [`SpillFile::read_range`] reads a range of records at once
//!   (through the runtime's one positional reader, [`CountedFile`]);
//! * [`Merge`]: a k-way merge of sorted runs through a binary heap of (head, run index), one
//!   sift per record, stable (equal keys come in run order);
//! * errors name the file; a file that ends inside a record is an error, never a panic or a
//!   short result.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::runtime::{CountedFile, IoCounters};
use crate::store::hygiene::work_name;

/// A path, removed when dropped if `remove` (spill files are; files only read are not).
#[derive(Debug)]
struct SpillPath {
    path: PathBuf,
    remove: bool,
}

impl Drop for SpillPath {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A complete spill file (no descriptor held: a sort may keep thousands of runs). Removed when
/// dropped, or when the reader it became is.
#[derive(Debug)]
pub struct SpillFile {
    path: SpillPath,
    counters: IoCounters,
}

impl SpillFile {
    /// Takes ownership of a file written elsewhere: it is removed when this is dropped.
    pub fn adopt(path: PathBuf, counters: IoCounters) -> SpillFile {
        SpillFile { path: SpillPath { path, remove: true }, counters }
    }

    pub fn path(&self) -> &Path {
        &self.path.path
    }

    /// Reads the file sequentially through a buffer of `buffer_bytes`; the file goes with the
    /// reader.
    pub fn into_reader(self, buffer_bytes: usize) -> Result<SpillReader> {
        let file = File::open(self.path()).context(|| format!("opening {}", self.path().display()))?;
        Ok(SpillReader::new(file, self.path, buffer_bytes, self.counters))
    }

    /// Reads records `range` of `record` bytes each into `out` (resized), in one request (a
    /// [`CountedFile`] read: a file too short for the range is an error naming it).
    pub fn read_range(&self, record: usize, range: Range<u64>, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        out.resize((range.end - range.start) as usize * record, 0);
        if out.is_empty() {
            return Ok(());
        }
        let file = CountedFile::open_work(self.path(), false, self.counters.clone())?;
        let needed = out.len();
        file.read_at(out, range.start * record as u64, needed)?;
        Ok(())
    }
}

/// Writes one spill file through a buffer: records are appended to it, and it is written out
/// (one counted request) as soon as it holds `buffer_bytes` or more. A buffer that is a multiple
/// of a fixed record size is written whole records at a time.
pub struct SpillWriter {
    file: File,
    path: SpillPath,
    buffer: Vec<u8>,
    capacity: usize,
    counters: IoCounters,
}

impl SpillWriter {
    /// Creates `dir/KIND@PID-REST` (removed again unless [`finish`](Self::finish)ed into a
    /// [`SpillFile`] that is kept).
    pub fn create(dir: &Path, kind: &str, rest: &str, buffer_bytes: usize, counters: IoCounters) -> Result<Self> {
        let path = dir.join(work_name(kind, rest));
        let file = File::create(&path).context(|| format!("creating {}", path.display()))?;
        let capacity = buffer_bytes.max(1);
        let buffer = Vec::with_capacity(capacity.saturating_add(64));
        Ok(SpillWriter { file, path: SpillPath { path, remove: true }, buffer, capacity, counters })
    }

    pub fn path(&self) -> &Path {
        &self.path.path
    }

    /// Appends `bytes` (one record or several).
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.encode(|buffer| buffer.extend_from_slice(bytes))
    }

    /// Appends what `encode` appends to the buffer: records that encode themselves (extsort's
    /// `SortRecord`) are written without an intermediate copy.
    #[inline]
    pub fn encode(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        encode(&mut self.buffer);
        if self.buffer.len() >= self.capacity {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let path = &self.path.path;
        self.file.write_all(&self.buffer).context(|| format!("writing {}", path.display()))?;
        self.counters.record_write(self.buffer.len() as u64);
        self.buffer.clear();
        Ok(())
    }

    /// Writes what is buffered and closes the file.
    pub fn finish(mut self) -> Result<SpillFile> {
        self.flush()?;
        let SpillWriter { path, counters, .. } = self;
        Ok(SpillFile { path, counters })
    }
}

/// Reads a file sequentially through one buffer, every read counted. A short file (one that
/// ends inside a record) is an error naming it.
pub struct SpillReader {
    file: File,
    path: SpillPath,
    buffer: Vec<u8>,
    /// The unread bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    at_eof: bool,
    counters: IoCounters,
}

impl SpillReader {
    /// Reads a file that stays when the reader is dropped (a store's scratch file).
    pub fn open(path: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<SpillReader> {
        let file = File::open(path).context(|| format!("opening {}", path.display()))?;
        Ok(Self::new(file, SpillPath { path: path.to_path_buf(), remove: false }, buffer_bytes, counters))
    }

    fn new(file: File, path: SpillPath, buffer_bytes: usize, counters: IoCounters) -> SpillReader {
        let buffer = vec![0; buffer_bytes.max(1)];
        SpillReader { file, path, buffer, start: 0, end: 0, at_eof: false, counters }
    }

    pub fn path(&self) -> &Path {
        &self.path.path
    }

    /// The bytes read and not yet consumed.
    #[inline]
    pub fn buffered(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    #[inline]
    pub fn consume(&mut self, bytes: usize) {
        debug_assert!(self.start + bytes <= self.end);
        self.start += bytes;
    }

    /// Reads more behind the unconsumed bytes (moved to the front; the buffer doubles when they
    /// fill it). False at the end of the file.
    pub fn fill(&mut self) -> Result<bool> {
        if self.at_eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buffer.len() {
            self.buffer.resize(self.buffer.len() * 2, 0);
        }
        let read = loop {
            match self.file.read(&mut self.buffer[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(format!("reading {}", self.path().display()), e)),
            }
        };
        self.at_eof = read == 0;
        if read > 0 {
            self.counters.record_read(read as u64);
        }
        self.end += read;
        Ok(read > 0)
    }

    /// The next `record` bytes, not consumed; `None` at the end of the file.
    #[inline]
    pub fn peek(&mut self, record: usize) -> Result<Option<&[u8]>> {
        while self.end - self.start < record {
            if !self.fill()? {
                return if self.start == self.end { Ok(None) } else { Err(self.ends_inside_a_record()) };
            }
        }
        Ok(Some(&self.buffer[self.start..self.start + record]))
    }

    /// The next record of `record` bytes; `None` at the end of the file.
    #[inline]
    pub fn next_record(&mut self, record: usize) -> Result<Option<&[u8]>> {
        if self.peek(record)?.is_none() {
            return Ok(None);
        }
        self.start += record;
        Ok(Some(&self.buffer[self.start - record..self.start]))
    }

    /// The error for a file that ends inside a record.
    pub fn ends_inside_a_record(&self) -> Error {
        Error::io(
            format!("reading {}", self.path().display()),
            io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends inside a record"),
        )
    }
}

/// One sorted input of a [`Merge`]: yields the head (what the merge orders by) of each record.
pub trait SortedRun {
    type Head;
    /// The order of heads.
    fn compare(a: &Self::Head, b: &Self::Head) -> Ordering;
    /// Moves to the next record and returns its head; `None` when the run is done.
    fn advance(&mut self) -> Result<Option<Self::Head>>;
}

/// A run of fixed-size records read from a spill file, ordered by a u64 key of each record
/// (pregel's batch files: the target name in the first 8 bytes). The current record stays in
/// the reader's buffer ([`head`](Self::head)) until the run advances.
pub struct RecordRun<K> {
    reader: SpillReader,
    record: usize,
    key_of: K,
    has_head: bool,
}

impl<K: Fn(&[u8]) -> u64> RecordRun<K> {
    pub fn new(reader: SpillReader, record: usize, key_of: K) -> Self {
        RecordRun { reader, record, key_of, has_head: false }
    }

    /// The current record's bytes.
    #[inline]
    pub fn head(&self) -> &[u8] {
        &self.reader.buffered()[..self.record]
    }
}

impl<K: Fn(&[u8]) -> u64> SortedRun for RecordRun<K> {
    type Head = u64;

    #[inline]
    fn compare(a: &u64, b: &u64) -> Ordering {
        a.cmp(b)
    }

    #[inline]
    fn advance(&mut self) -> Result<Option<u64>> {
        if self.has_head {
            self.reader.consume(self.record);
        }
        let key = self.reader.peek(self.record)?.map(&self.key_of);
        self.has_head = key.is_some();
        Ok(key)
    }
}

/// A k-way merge of sorted runs: a binary heap of (head, run index), the smallest head on top,
/// ties to the earlier run (so the merge is stable). One sift per record: the top's entry is
/// replaced by its run's next head.
pub struct Merge<R: SortedRun> {
    runs: Vec<R>,
    heap: Vec<(R::Head, usize)>,
}

impl<R: SortedRun> Merge<R> {
    /// Reads every run's first record.
    pub fn new(mut runs: Vec<R>) -> Result<Self> {
        let mut heap = Vec::with_capacity(runs.len());
        for (i, run) in runs.iter_mut().enumerate() {
            if let Some(head) = run.advance()? {
                heap.push((head, i));
            }
        }
        let mut merge = Merge { runs, heap };
        for at in (0..merge.heap.len() / 2).rev() {
            merge.sift_down(at);
        }
        Ok(merge)
    }

    /// The smallest head and its run, `None` when every run is done.
    #[inline]
    pub fn top(&self) -> Option<(&R::Head, &R)> {
        self.heap.first().map(|(head, i)| (head, &self.runs[*i]))
    }

    /// Moves the top run to its next record and returns the head it had (`None` when every run
    /// is done). A run that fails leaves the merge.
    #[inline]
    pub fn advance_top(&mut self) -> Result<Option<R::Head>> {
        let Some(&(_, i)) = self.heap.first() else { return Ok(None) };
        match self.runs[i].advance() {
            Ok(Some(next)) => {
                let head = std::mem::replace(&mut self.heap[0].0, next);
                self.sift_down(0);
                Ok(Some(head))
            }
            Ok(None) => Ok(Some(self.remove_top())),
            Err(e) => {
                self.remove_top();
                Err(e)
            }
        }
    }

    fn remove_top(&mut self) -> R::Head {
        let (head, _) = self.heap.swap_remove(0);
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
        head
    }

    /// Whether entry `a` comes before entry `b`.
    #[inline]
    fn before(a: &(R::Head, usize), b: &(R::Head, usize)) -> bool {
        match R::compare(&a.0, &b.0) {
            Ordering::Less => true,
            Ordering::Equal => a.1 < b.1,
            Ordering::Greater => false,
        }
    }

    #[inline]
    fn sift_down(&mut self, mut at: usize) {
        let heap = &mut self.heap[..];
        loop {
            let left = 2 * at + 1;
            if left >= heap.len() {
                return;
            }
            let right = left + 1;
            let child = if right < heap.len() && Self::before(&heap[right], &heap[left]) { right } else { left };
            if !Self::before(&heap[child], &heap[at]) {
                return;
            }
            heap.swap(child, at);
            at = child;
        }
    }
}

#[cfg(test)]
mod tests;
