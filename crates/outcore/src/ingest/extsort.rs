//! External merge sort: sorting more records than fit in the memory budget.
//!
//! The import pipeline must sort hundreds of millions of edges (by source, by target, by dense
//! arc) on a machine whose budget holds a fraction of them. The classic answer is an external
//! merge sort, done here in two phases:
//!
//! 1. **Run formation.** [`ExternalSorter::push`] fills an in-memory buffer whose size comes from
//!    the byte budget given in [`SortConfig`]. When the buffer is full it is sorted in parallel
//!    (rayon's `par_sort_unstable_by`, in place, no extra memory) and written to a *run file* in
//!    the temp directory. With `dedup`, a full buffer is first sorted and deduplicated in place;
//!    only if that frees less than half of it is it spilled, so inputs with many repeats (vertex
//!    ids: two per edge, a few million distinct) often never touch the disk.
//! 2. **Merge.** [`ExternalSorter::finish`] returns a [`SortedStream`]. If nothing was spilled
//!    it simply iterates the sorted buffer. Otherwise it opens every run with one read buffer and
//!    merges them through a binary heap. The read buffers of a merge must fit in
//!    `merge_bytes`; that caps the fan-in, and when there are more runs than that, intermediate
//!    passes merge groups of runs into longer runs first.
//!
//! Records describe their own binary encoding ([`SortRecord`]): fixed-size numeric records
//! encode without any allocation, variable-length ones (string ids) carry a length prefix.
//! Run files are `runtime::spill` files, written by its buffered writer (records encode
//! straight into its buffer), read by its reader (records decode straight from its buffer) and
//! merged by its stable k-way merge; this module adds only the record encoding, run formation
//! and the merge passes. Run files are deleted as soon as they are merged, and on drop, so an
//! error or a cancellation (checked before each spill and each merge pass) leaves nothing
//! behind. Every byte written to and read from run files is counted in the given
//! [`IoCounters`].

use std::cmp::Ordering;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use rayon::slice::ParallelSliceMut;

use crate::error::{Error, IoContext, Result};
use crate::runtime::spill::{Merge, SortedRun, SpillFile, SpillReader, SpillWriter};
use crate::runtime::{CancelToken, IoCounters};

/// A record that can be sorted externally: an order and a binary encoding.
///
/// `compare` need not look at every field (edges sorted by source only are fine); records that
/// compare `Equal` are the ones `dedup` collapses.
pub trait SortRecord: Send + Sized {
    /// The sort order.
    fn compare(&self, other: &Self) -> Ordering;
    /// Appends the record's encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Decodes one record from the start of `bytes`, returning it and the bytes it used, or
    /// `None` when `bytes` holds only part of a record. Malformed data is an `InvalidData` error.
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>>;
    /// Bytes the record owns on the heap (strings), counted against the sort buffer's budget.
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// Reads a little-endian u64 at `at` (the caller checked the length).
#[inline]
pub(crate) fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

impl SortRecord for u64 {
    #[inline]
    fn compare(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    #[inline]
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
        if bytes.len() < 8 {
            return Ok(None);
        }
        Ok(Some((le_u64(bytes, 0), 8)))
    }
}

/// Strings sort by their bytes; encoded as a u32 length and the UTF-8 bytes.
impl SortRecord for String {
    fn compare(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
        if bytes.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if bytes.len() < 4 + len {
            return Ok(None);
        }
        let text = std::str::from_utf8(&bytes[4..4 + len])
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a string record is not valid UTF-8"))?;
        Ok(Some((text.to_string(), 4 + len)))
    }
    fn heap_bytes(&self) -> usize {
        // The allocation plus a typical allocator header.
        self.capacity() + 16
    }
}

/// How much memory a sort may use and where its run files go.
#[derive(Debug, Clone)]
pub struct SortConfig {
    /// Directory for run files (created if missing).
    pub temp_dir: PathBuf,
    /// Names the run files and errors, e.g. `edges-by-source`.
    pub label: String,
    /// Bytes of the in-memory buffer: records (their `size_of`) plus what they own on the heap.
    pub buffer_bytes: u64,
    /// Bytes all read buffers of one merge may use together; bounds the merge fan-in.
    pub merge_bytes: u64,
    /// Size of one run's read buffer (grows if a single record is larger).
    pub read_buffer_bytes: usize,
    /// Collapse records that compare equal, keeping one.
    pub dedup: bool,
}

/// Smallest read or write buffer a sort uses, whatever the budget.
pub const MIN_IO_BUFFER: usize = 4 << 10;
/// Largest read or write buffer: beyond this, sequential I/O gains nothing.
pub const MAX_IO_BUFFER: usize = 1 << 20;
/// Most runs merged at once (each holds an open file).
pub const MAX_FAN_IN: usize = 256;

impl SortConfig {
    /// A config with I/O buffers sized from `merge_bytes`: up to 1 MiB each, but at least 16 of
    /// them per merge when the budget is small.
    pub fn new(temp_dir: impl Into<PathBuf>, label: impl Into<String>, buffer_bytes: u64, merge_bytes: u64) -> Self {
        let read_buffer_bytes = ((merge_bytes / 16) as usize).clamp(MIN_IO_BUFFER, MAX_IO_BUFFER);
        SortConfig {
            temp_dir: temp_dir.into(),
            label: label.into(),
            buffer_bytes,
            merge_bytes,
            read_buffer_bytes,
            dedup: false,
        }
    }

    pub fn with_dedup(mut self, dedup: bool) -> Self {
        self.dedup = dedup;
        self
    }

    /// Runs merged at once: as many read buffers as `merge_bytes` holds (at least 2).
    pub fn fan_in(&self) -> usize {
        ((self.merge_bytes / self.read_buffer_bytes.max(1) as u64) as usize).clamp(2, MAX_FAN_IN)
    }

    fn write_chunk_bytes(&self) -> usize {
        ((self.buffer_bytes / 8) as usize).clamp(MIN_IO_BUFFER, MAX_IO_BUFFER)
    }
}

/// What a sort did, for reports and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SortStats {
    /// Records pushed.
    pub records_pushed: u64,
    /// Run files written while pushing (the final buffer included when anything spilled).
    pub runs_spilled: u64,
    /// Intermediate merges (each writes one longer run from `fan_in` runs).
    pub intermediate_merges: u64,
}

/// A run file on disk (deleted when dropped) and the records written to it.
#[derive(Debug)]
struct RunFile {
    file: SpillFile,
    records: u64,
}

static RUN_SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Sorts records in a bounded memory buffer, spilling sorted runs to disk.
pub struct ExternalSorter<T: SortRecord> {
    config: SortConfig,
    buffer: Vec<T>,
    /// Records the buffer may hold before `heap_bytes` are counted.
    buffer_records: usize,
    buffer_heap_bytes: u64,
    /// The first `sorted_prefix` records are sorted (and deduplicated when asked).
    sorted_prefix: usize,
    runs: Vec<RunFile>,
    counters: IoCounters,
    cancel: CancelToken,
    stats: SortStats,
}

impl<T: SortRecord> ExternalSorter<T> {
    pub fn new(config: SortConfig, counters: IoCounters, cancel: CancelToken) -> Self {
        let record_size = std::mem::size_of::<T>().max(1) as u64;
        let buffer_records = (config.buffer_bytes / record_size).max(1) as usize;
        ExternalSorter {
            config,
            buffer: Vec::new(),
            buffer_records,
            buffer_heap_bytes: 0,
            sorted_prefix: 0,
            runs: Vec::new(),
            counters,
            cancel,
            stats: SortStats::default(),
        }
    }

    /// Adds a record; sorts and spills the buffer when it reaches the budget.
    #[inline]
    pub fn push(&mut self, record: T) -> Result<()> {
        if self.buffer.capacity() == 0 {
            // Reserved once (address space only until written), so the buffer never doubles.
            self.buffer.reserve_exact(self.buffer_records);
        }
        self.buffer_heap_bytes += record.heap_bytes() as u64;
        self.buffer.push(record);
        self.stats.records_pushed += 1;
        if self.buffer.len() >= self.buffer_records || self.buffer_bytes_used() >= self.config.buffer_bytes {
            self.make_room()?;
        }
        Ok(())
    }

    /// Records pushed so far.
    pub fn records_pushed(&self) -> u64 {
        self.stats.records_pushed
    }

    /// Run files written so far.
    pub fn runs_spilled(&self) -> u64 {
        self.stats.runs_spilled
    }

    fn buffer_bytes_used(&self) -> u64 {
        self.buffer.len() as u64 * std::mem::size_of::<T>() as u64 + self.buffer_heap_bytes
    }

    fn sort_buffer(&mut self) {
        if self.sorted_prefix < self.buffer.len() {
            self.buffer.par_sort_unstable_by(T::compare);
        }
        if self.config.dedup {
            let before = self.buffer.len();
            self.buffer.dedup_by(|later, earlier| later.compare(earlier) == Ordering::Equal);
            if self.buffer.len() != before {
                self.buffer_heap_bytes = self.buffer.iter().map(|r| r.heap_bytes() as u64).sum();
            }
        }
        self.sorted_prefix = self.buffer.len();
    }

    fn make_room(&mut self) -> Result<()> {
        if self.config.dedup {
            self.sort_buffer();
            // Keep the deduplicated buffer in memory while it fills at most half the budget.
            if self.buffer.len() * 2 <= self.buffer_records && self.buffer_bytes_used() * 2 <= self.config.buffer_bytes
            {
                return Ok(());
            }
        }
        self.spill()
    }

    /// Sorts `records` (deduplicated when asked) and writes them as one run, without copying
    /// them into the buffer: how records held in memory elsewhere join the sort when they
    /// outgrow their memory (the importer's in-memory path falling back to sorting). The
    /// records are freed when this returns.
    pub fn spill_records(&mut self, records: Vec<T>) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        self.stats.records_pushed += records.len() as u64;
        let own = std::mem::replace(&mut self.buffer, records);
        self.buffer_heap_bytes = self.buffer.iter().map(|r| r.heap_bytes() as u64).sum();
        self.sorted_prefix = 0;
        let spilled = self.spill();
        self.buffer = own;
        self.buffer_heap_bytes = 0;
        self.sorted_prefix = 0;
        spilled
    }

    /// Sorts the buffer and writes it as a new run file.
    fn spill(&mut self) -> Result<()> {
        self.cancel.check()?;
        self.sort_buffer();
        let records = self.buffer.len() as u64;
        let mut writer = create_run(&self.config, self.config.write_chunk_bytes(), &self.counters)?;
        for record in &self.buffer {
            writer.encode(|out| record.encode(out))?;
        }
        self.runs.push(RunFile { file: writer.finish()?, records });
        self.buffer.clear();
        self.buffer_heap_bytes = 0;
        self.sorted_prefix = 0;
        self.stats.runs_spilled += 1;
        Ok(())
    }

    /// Ends input and returns the records in order. Runs left over are merged in passes until
    /// one merge can read them all within `merge_bytes`.
    pub fn finish(mut self) -> Result<SortedStream<T>> {
        if self.runs.is_empty() {
            self.sort_buffer();
            let records = self.buffer.len() as u64;
            return Ok(SortedStream {
                source: StreamSource::Memory(std::mem::take(&mut self.buffer).into_iter()),
                records,
                stats: self.stats,
            });
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        // Free the buffer before the merge allocates its read buffers.
        self.buffer = Vec::new();
        let fan_in = self.config.fan_in();
        let mut runs = std::mem::take(&mut self.runs);
        while runs.len() > fan_in {
            self.cancel.check()?;
            let group: Vec<RunFile> = runs.drain(..fan_in).collect();
            let merged = self.merge_into_run(group)?;
            runs.push(merged);
            self.stats.intermediate_merges += 1;
        }
        let merger = Merger::open(runs, &self.config)?;
        Ok(SortedStream { records: merger.records, source: StreamSource::Merge(merger), stats: self.stats })
    }

    fn merge_into_run(&mut self, group: Vec<RunFile>) -> Result<RunFile> {
        let mut merger = Merger::<T>::open(group, &self.config)?;
        let mut writer = create_run(&self.config, self.config.read_buffer_bytes, &self.counters)?;
        let mut records = 0u64;
        while let Some(record) = merger.next_record()? {
            writer.encode(|out| record.encode(out))?;
            records += 1;
        }
        Ok(RunFile { file: writer.finish()?, records })
    }
}

/// Creates the next run file of a sort, written through a buffer of `buffer_bytes`.
fn create_run(config: &SortConfig, buffer_bytes: usize, counters: &IoCounters) -> Result<SpillWriter> {
    std::fs::create_dir_all(&config.temp_dir).context(|| format!("creating {}", config.temp_dir.display()))?;
    let sequence = RUN_SEQUENCE.fetch_add(1, AtomicOrdering::Relaxed);
    SpillWriter::create(&config.temp_dir, &config.label, &format!("{sequence}.run"), buffer_bytes, counters.clone())
}

/// Reads fixed- or variable-size records sequentially from a file through one buffer (a
/// [`SpillReader`], which grows it when one record is larger).
///
/// Used for run files and for re-reading store files written in sorted order (the id map).
pub struct RecordReader<T: SortRecord> {
    reader: SpillReader,
    _records: std::marker::PhantomData<fn() -> T>,
}

impl<T: SortRecord> RecordReader<T> {
    /// Reads a file that stays when the reader is dropped.
    pub fn open(path: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<Self> {
        Ok(Self::from(SpillReader::open(path, buffer_bytes.max(64), counters)?))
    }

    fn from(reader: SpillReader) -> Self {
        RecordReader { reader, _records: std::marker::PhantomData }
    }

    /// The next record, or `None` at the end of the file.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<T>> {
        loop {
            let decoded = T::decode(self.reader.buffered())
                .map_err(|e| Error::io(format!("decoding {}", self.reader.path().display()), e))?;
            if let Some((record, used)) = decoded {
                self.reader.consume(used);
                return Ok(Some(record));
            }
            if !self.reader.fill()? {
                if self.reader.buffered().is_empty() {
                    return Ok(None);
                }
                return Err(self.reader.ends_inside_a_record());
            }
        }
    }
}

/// One run being merged: its reader (the file goes with it) and how many records it still
/// promises (a check against damaged run files).
struct MergeInput<T: SortRecord> {
    reader: RecordReader<T>,
    remaining: u64,
}

impl<T: SortRecord> SortedRun for MergeInput<T> {
    type Head = T;

    #[inline]
    fn compare(a: &T, b: &T) -> Ordering {
        a.compare(b)
    }

    #[inline]
    fn advance(&mut self) -> Result<Option<T>> {
        let next = self.reader.next_record()?;
        match (&next, self.remaining) {
            (Some(_), 0) | (None, 1..) => {
                return Err(Error::io(
                    format!("reading sort run {}", self.reader.reader.path().display()),
                    io::Error::new(io::ErrorKind::InvalidData, "the run file does not hold the records written to it"),
                ))
            }
            (Some(_), _) => self.remaining -= 1,
            (None, _) => {}
        }
        Ok(next)
    }
}

/// A k-way merge of sorted runs (`runtime::spill`'s: stable, one sift per record).
struct Merger<T: SortRecord> {
    merge: Merge<MergeInput<T>>,
    dedup: bool,
    records: u64,
}

impl<T: SortRecord> Merger<T> {
    fn open(runs: Vec<RunFile>, config: &SortConfig) -> Result<Merger<T>> {
        let records = runs.iter().map(|r| r.records).sum();
        let mut inputs = Vec::with_capacity(runs.len());
        for run in runs {
            let reader = RecordReader::from(run.file.into_reader(config.read_buffer_bytes.max(64))?);
            inputs.push(MergeInput { reader, remaining: run.records });
        }
        Ok(Merger { merge: Merge::new(inputs)?, dedup: config.dedup, records })
    }

    #[inline]
    fn next_record(&mut self) -> Result<Option<T>> {
        let Some(record) = self.merge.advance_top()? else { return Ok(None) };
        if self.dedup {
            while self.merge.top().is_some_and(|(next, _)| next.compare(&record) == Ordering::Equal) {
                self.merge.advance_top()?;
            }
        }
        Ok(Some(record))
    }
}

enum StreamSource<T: SortRecord> {
    Memory(std::vec::IntoIter<T>),
    Merge(Merger<T>),
}

/// The sorted output of an [`ExternalSorter`]: an iterator of `Result<T>` that stops after the
/// first error. Dropping it deletes the remaining run files.
pub struct SortedStream<T: SortRecord> {
    source: StreamSource<T>,
    records: u64,
    stats: SortStats,
}

impl<T: SortRecord> SortedStream<T> {
    /// Records in the stream before deduplication across runs (exact without `dedup`).
    pub fn records_upper_bound(&self) -> u64 {
        self.records
    }

    /// Whether the sort spilled to disk.
    pub fn spilled(&self) -> bool {
        matches!(self.source, StreamSource::Merge(_))
    }

    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// The next record, `None` at the end.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<T>> {
        match &mut self.source {
            StreamSource::Memory(records) => Ok(records.next()),
            StreamSource::Merge(merger) => merger.next_record(),
        }
    }
}

impl<T: SortRecord> Iterator for SortedStream<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        match self.next_record() {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => None,
            Err(e) => {
                // Stop after an error: release the runs.
                self.source = StreamSource::Memory(Vec::new().into_iter());
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn config(dir: &Path, buffer_bytes: u64, merge_bytes: u64, read_buffer_bytes: usize) -> SortConfig {
        let mut config = SortConfig::new(dir, "test", buffer_bytes, merge_bytes);
        config.read_buffer_bytes = read_buffer_bytes;
        config
    }

    fn sort_all<T: SortRecord>(config: SortConfig, records: Vec<T>) -> (Vec<T>, SortStats, IoCounters) {
        let counters = IoCounters::new();
        let mut sorter = ExternalSorter::new(config, counters.clone(), CancelToken::new());
        for r in records {
            sorter.push(r).unwrap();
        }
        let stream = sorter.finish().unwrap();
        let stats = stream.stats();
        let out: Vec<T> = stream.collect::<Result<_>>().unwrap();
        (out, stats, counters)
    }

    fn files_in(dir: &Path) -> usize {
        std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
    }

    /// A record that sorts by key only, so that equal keys with different payloads test dedup.
    #[derive(Debug, Clone, PartialEq)]
    struct Keyed {
        key: u32,
        payload: u64,
    }

    impl SortRecord for Keyed {
        fn compare(&self, other: &Self) -> Ordering {
            self.key.cmp(&other.key)
        }
        fn encode(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.key.to_le_bytes());
            out.extend_from_slice(&self.payload.to_le_bytes());
        }
        fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
            if bytes.len() < 12 {
                return Ok(None);
            }
            let key = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            Ok(Some((Keyed { key, payload: le_u64(bytes, 4) }, 12)))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn u64_sort_matches_vec_sort(values in proptest::collection::vec(any::<u64>(), 0..3000), dedup in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            // 256-byte buffers (32 records per run) and 4-way merges: many runs, several passes.
            let cfg = config(dir.path(), 256, 256, 64).with_dedup(dedup);
            let (out, stats, _) = sort_all(cfg, values.clone());
            let mut expected = values.clone();
            expected.sort_unstable();
            if dedup {
                expected.dedup();
            }
            prop_assert_eq!(out, expected);
            if values.len() > 1000 && !dedup {
                prop_assert!(stats.runs_spilled > 4);
                prop_assert!(stats.intermediate_merges > 0);
            }
            prop_assert_eq!(files_in(dir.path()), 0);
        }

        #[test]
        fn string_sort_matches_vec_sort(values in proptest::collection::vec("[a-c]{0,3}|\\PC{0,40}", 0..600), dedup in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            // Read buffers smaller than some records: the reader must grow them.
            let cfg = config(dir.path(), 2048, 96, 32).with_dedup(dedup);
            let (out, _, _) = sort_all(cfg, values.clone());
            let mut expected = values.clone();
            expected.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            if dedup {
                expected.dedup();
            }
            prop_assert_eq!(out, expected);
            prop_assert_eq!(files_in(dir.path()), 0);
        }
    }

    #[test]
    fn empty_input_gives_empty_stream_and_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let (out, stats, counters) = sort_all::<u64>(config(dir.path(), 64, 64, 16), Vec::new());
        assert!(out.is_empty());
        assert_eq!(stats.runs_spilled, 0);
        assert_eq!(counters.snapshot().bytes_written, 0);
        assert_eq!(files_in(dir.path()), 0);
    }

    #[test]
    fn input_that_fits_is_sorted_in_memory_without_run_files() {
        let dir = tempfile::tempdir().unwrap();
        let values: Vec<u64> = (0..1000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let (out, stats, counters) = sort_all(config(dir.path(), 1 << 20, 1 << 20, 4096), values.clone());
        let mut expected = values;
        expected.sort_unstable();
        assert_eq!(out, expected);
        assert_eq!(stats.runs_spilled, 0);
        assert_eq!(counters.snapshot().bytes_written, 0);
    }

    #[test]
    fn all_equal_records_with_and_without_dedup() {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<Keyed> = (0..500).map(|i| Keyed { key: 7, payload: i }).collect();
        let (out, stats, _) = sort_all(config(dir.path(), 16 * 20, 64, 16), records.clone());
        assert_eq!(out.len(), 500);
        assert!(out.iter().all(|r| r.key == 7));
        let mut payloads: Vec<u64> = out.iter().map(|r| r.payload).collect();
        payloads.sort_unstable();
        assert_eq!(payloads, (0..500).collect::<Vec<_>>());
        assert!(stats.runs_spilled > 10);

        let (deduped, _, _) = sort_all(config(dir.path(), 16 * 20, 64, 16).with_dedup(true), records);
        assert_eq!(deduped.len(), 1);
        assert_eq!(files_in(dir.path()), 0);
    }

    #[test]
    fn dedup_merges_equal_keys_across_runs() {
        let dir = tempfile::tempdir().unwrap();
        // Each key appears in many runs; no buffer ever holds few enough to stay in memory.
        let records: Vec<Keyed> = (0..4000u64).map(|i| Keyed { key: (i % 97) as u32, payload: i }).collect();
        let (out, stats, _) = sort_all(config(dir.path(), 16 * 64, 64, 16).with_dedup(true), records);
        let keys: Vec<u32> = out.iter().map(|r| r.key).collect();
        assert_eq!(keys, (0..97).collect::<Vec<u32>>());
        assert!(stats.runs_spilled > 1);
    }

    #[test]
    fn dedup_compacts_in_memory_before_spilling() {
        let dir = tempfile::tempdir().unwrap();
        // 10 distinct values repeated: the buffer (128 records) never needs to spill.
        let values: Vec<u64> = (0..100_000u64).map(|i| i % 10).collect();
        let (out, stats, counters) = sort_all(config(dir.path(), 8 * 128, 1024, 64).with_dedup(true), values);
        assert_eq!(out, (0..10).collect::<Vec<u64>>());
        assert_eq!(stats.runs_spilled, 0);
        assert_eq!(counters.snapshot().bytes_written, 0);
    }

    #[test]
    fn counts_run_bytes_and_deletes_runs_when_dropped_early() {
        let dir = tempfile::tempdir().unwrap();
        let counters = IoCounters::new();
        let mut sorter = ExternalSorter::new(config(dir.path(), 8 * 100, 64, 16), counters.clone(), CancelToken::new());
        for v in (0..1000u64).rev() {
            sorter.push(v).unwrap();
        }
        assert!(sorter.runs_spilled() >= 9);
        assert!(files_in(dir.path()) >= 9);
        let mut stream = sorter.finish().unwrap();
        // 10 runs of 100, fan-in 4: two intermediate merges of 4 runs each (400 records).
        assert_eq!(stream.stats().intermediate_merges, 2);
        assert_eq!(counters.snapshot().bytes_written, 8 * (1000 + 400 + 400));
        assert_eq!(stream.next_record().unwrap(), Some(0));
        assert!(counters.snapshot().bytes_read > 0);
        drop(stream);
        assert_eq!(files_in(dir.path()), 0);
    }

    #[test]
    fn cancellation_stops_spilling_and_leaves_no_runs() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancelToken::new();
        let mut sorter = ExternalSorter::new(config(dir.path(), 8 * 10, 64, 16), IoCounters::new(), cancel.clone());
        for v in 0..100u64 {
            sorter.push(v).unwrap();
        }
        cancel.cancel();
        let mut failed = false;
        for v in 0..100u64 {
            if let Err(e) = sorter.push(v) {
                assert!(matches!(e, Error::Interrupted));
                failed = true;
                break;
            }
        }
        assert!(failed);
        drop(sorter);
        assert_eq!(files_in(dir.path()), 0);
    }

    #[test]
    fn a_damaged_run_file_is_an_error_not_a_short_result() {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter =
            ExternalSorter::new(config(dir.path(), 8 * 10, 1024, 64), IoCounters::new(), CancelToken::new());
        for v in 0..100u64 {
            sorter.push(v).unwrap();
        }
        let run = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
        let len = std::fs::metadata(&run).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&run).unwrap().set_len(len - 3).unwrap();
        let result: Result<Vec<u64>> = sorter.finish().and_then(|s| s.collect());
        let message = result.unwrap_err().to_string();
        assert!(message.contains(".run"), "{message}");
    }
}
