//! The import pipeline: from parsed records to a complete store, in bounded memory.
//!
//! **Two paths, one read.** Pass 1 reads the input once into memory while the whole in-memory
//! build ([`memory`]: rank map of the ids, counting sorts into csr-out and csr-in, zero
//! temporary bytes) still fits the budget's share for it, checked after every batch. When
//! the edges outgrow it (or an input never ends), what is held moves into the
//! external sorts below and the rest of the input goes there: the input (possibly stdin or gz)
//! is never read twice. Both paths write the same store byte for byte (tests in
//! `tests/import_pipeline.rs`); `ImportReport::in_memory` says which one ran, and the step
//! names in `step_seconds` differ ("map ids", "sort csr-out", ... on the in-memory path).
//!
//! **The external path.** Neither the edges nor the vertex ids of a large input fit in
//! memory, so every step is a sequential pass over sorted streams produced by
//! [`extsort`](super::extsort):
//!
//! ```text
//! records ──pass 1──> edges (original ids) sorted by source ─┐
//!         └─────────> vertex ids, sorted + deduplicated ──> ids/original (dense id = rank)
//!                                                            │  (re-read sequentially)
//! join 1: edges by source ⋈ ids  -> (dense source, original target) sorted by target
//! join 2: ... by target   ⋈ ids  -> arcs (dense, dense)  [both directions if undirected]
//!                                    sorted by (source, target) -> dedup -> csr-out
//!                                    reversed, sorted by (target, source) -> csr-in
//! ```
//!
//! **Dense ids.** A vertex's dense id is its rank among all distinct original ids (u64 numeric
//! order, strings byte order), so `ids/original` is just the sorted distinct ids and
//! `ids/by-original` is the identity.
//!
//! **Sort-merge joins instead of a hash map.** Mapping an edge's original ids to dense ids would
//! naively need a hash map of all |V| ids. Instead the edges are sorted by the id to replace and
//! walked in step with the sorted id file: both streams ascend, so each join is one sequential
//! pass over each, in memory independent of |V| and |E|.
//!
//! **Memory.** The budget is split by [`MemoryPlan`]: a reserve for everything that is not a
//! sort buffer (input batches, parser, file buffers, allocator slack), and the rest for sorts
//! (or, on the in-memory path, for its peak as estimated by `HeldEdges::peak_bytes`).
//! At any moment at most two sort-sized things are alive: the stream being consumed (an
//! in-memory sorted buffer, or a merge's read buffers) and the sorter being filled; each gets
//! half. Pass 1 fills two sorters (edges and ids), again half each.
//!
//! **Atomicity.** Everything, run files included, is written inside the
//! [`StoreBuilder`]'s temporary directory; only the final commit moves the store into place.
//! Any error or cancellation drops the builder, which deletes that directory: no half-written
//! store, and an older store at the same path stays untouched.

mod memory;

use std::cmp::Ordering;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::Instant;

use rayon::prelude::*;
use serde_json::json;

use super::extsort::{
    le_u64, ExternalSorter, RecordReader, SortConfig, SortRecord, SortedStream, MAX_IO_BUFFER, MIN_IO_BUFFER,
};
use super::{ImportOptions, InputInfo, InputRecord, RawId, RecordSource};
use crate::error::{Error, IoContext, Result};
use crate::runtime::io::CountingReader;
use crate::runtime::{peak_rss_bytes, CancelToken, IoCounters, MemoryBudget, Progress, ProgressBar, ProgressUnit};
use crate::store::build::Arc;
use crate::store::ids::{ORIGINAL_U64, STRING_DATA, STRING_OFFSETS};
use crate::store::{IdType, Manifest, Store, StoreBuilder, WeightType};

/// What an import did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    pub format: String,
    pub vertices: u64,
    pub edges: u64,
    pub arcs: u64,
    pub input_records: u64,
    pub self_loops_dropped: u64,
    pub duplicates_dropped: u64,
    pub bad_lines_skipped: u64,
    pub input_bytes: u64,
    pub bytes_written: u64,
    pub seconds: f64,
    pub peak_rss_bytes: u64,
    /// Whether the store is directed and weighted (as decided from options and input).
    pub directed: bool,
    pub weighted: bool,
    /// Bytes written to and read back from temporary files (sort runs, id map re-reads).
    pub temp_bytes_written: u64,
    pub temp_bytes_read: u64,
    /// Sort runs spilled to disk over all sorts (0: everything fit in memory).
    pub sort_runs: u64,
    pub memory_budget_bytes: u64,
    /// Whether the in-memory path built the store (no temporary file at all); `false` when
    /// the edges outgrew its share of the budget and the external sorts took over.
    pub in_memory: bool,
    /// Wall-clock seconds of each step, in order (sorts finish inside the step that reads them).
    pub step_seconds: Vec<(String, f64)>,
}

pub fn import(
    inputs: &[PathBuf],
    store_dir: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<(Store, ImportReport)> {
    let (source, info) = super::parse::open_inputs(inputs, opts)?;
    import_records(source, info, store_dir, opts, progress, cancel)
}

/// Imports records from any source into a new store at `store_dir`, replacing an existing
/// store there only once the new one is complete.
pub fn import_records(
    mut source: Box<dyn RecordSource>,
    info: InputInfo,
    store_dir: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<(Store, ImportReport)> {
    let started = Instant::now();
    let shape = GraphShape {
        directed: match opts.undirected {
            Some(undirected) => !undirected,
            None => info.directed.unwrap_or(true),
        },
        weighted: opts.weighted.or(info.weighted).unwrap_or(false),
        dedup: opts.dedup,
        drop_self_loops: opts.drop_self_loops,
    };
    check_replaceable(store_dir)?;
    let builder = StoreBuilder::new(store_dir, IoCounters::new())?;
    let scratch = builder.scratch_dir()?;
    let import = Import {
        source: source.as_mut(),
        info: &info,
        opts,
        shape,
        plan: MemoryPlan::for_budget(opts.memory),
        builder,
        scratch,
        temp_counters: IoCounters::new(),
        progress,
        cancel,
        report: ImportReport {
            format: info.format_description.clone(),
            directed: shape.directed,
            weighted: shape.weighted,
            memory_budget_bytes: opts.memory.bytes(),
            ..ImportReport::default()
        },
    };
    let (store, mut report) = match (opts.ids, shape.weighted) {
        (IdType::U64, false) => import.run::<u64, Unweighted>()?,
        (IdType::U64, true) => import.run::<u64, f64>()?,
        (IdType::String, false) => import.run::<String, Unweighted>()?,
        (IdType::String, true) => import.run::<String, f64>()?,
    };
    report.seconds = started.elapsed().as_secs_f64();
    report.peak_rss_bytes = peak_rss_bytes();
    Ok((store, report))
}

/// The import replaces an existing store at its path (at commit), but never anything else: a
/// file, or a non-empty directory without a manifest, is most likely not the user's old graph.
fn check_replaceable(store_dir: &Path) -> Result<()> {
    if !store_dir.exists() {
        return Ok(());
    }
    if !store_dir.is_dir() {
        return Err(Error::invalid(format!(
            "{} exists and is not a directory: choose another store path",
            store_dir.display()
        )));
    }
    crate::store::build::check_replaceable(store_dir)
}

/// Directedness, weighting and cleaning rules of the graph being imported.
#[derive(Debug, Clone, Copy)]
struct GraphShape {
    directed: bool,
    weighted: bool,
    dedup: bool,
    drop_self_loops: bool,
}

/// How the memory budget is divided.
#[derive(Debug, Clone, Copy)]
struct MemoryPlan {
    /// In-memory buffer of one sorter (two are alive at a time).
    sorter_bytes: u64,
    /// Read buffers of one merge (alive beside one filling sorter).
    merge_bytes: u64,
    /// Buffer for sequential reads of the id files during joins.
    read_buffer_bytes: usize,
    /// Records per input batch.
    batch_records: usize,
    /// What the in-memory path may use at its peak (see [`memory`]).
    resident_bytes: u64,
    /// Bytes of one chunk of edges held by the in-memory path.
    held_chunk_bytes: u64,
}

impl MemoryPlan {
    /// An eighth of the budget is kept for everything that is not a sort buffer: the input
    /// batch, the parser's buffers, store and run file buffers (1 MiB each), thread stacks,
    /// allocator slack. The rest is for sorting: two halves, see the module doc.
    fn for_budget(budget: MemoryBudget) -> MemoryPlan {
        let total = budget.bytes();
        let reserve = total / 8;
        let sortable = total - reserve;
        let half = sortable / 2;
        // About 100 bytes per input record (two ids and a weight) in a quarter of the reserve.
        let batch_records = ((reserve / 4 / 100) as usize).clamp(256, 65_536);
        MemoryPlan {
            sorter_bytes: half.max(1024),
            merge_bytes: half.max(1024),
            read_buffer_bytes: ((reserve / 16) as usize).clamp(MIN_IO_BUFFER, MAX_IO_BUFFER),
            batch_records,
            resident_bytes: sortable,
            // Small against the share (one chunk per thread is in flight while mapping).
            held_chunk_bytes: (sortable / 256).clamp(4 << 10, 16 << 20),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Record types of the sorts. Ids are generic (u64 or String) and so are weights (none or f64),
// so the u64 unweighted path moves 16-byte records and never allocates per record.

/// A weight as carried through the sorts: nothing at all for unweighted graphs.
trait EdgeWeight: Copy + Send + Sync + 'static {
    const ENCODED_BYTES: usize;
    /// Bytes per arc in the in-memory path's CSR arrays.
    const CELL_BYTES: u64;
    /// A weight slot written by the in-memory path's parallel scatter.
    type Cell: Send + Sync;
    fn from_input(weight: Option<f64>) -> Self;
    fn value(self) -> f64;
    fn encode(self, out: &mut Vec<u8>);
    /// Decodes from exactly `ENCODED_BYTES` bytes.
    fn decode(bytes: &[u8]) -> Self;
    fn cells(count: usize) -> Vec<Self::Cell>;
    fn store(cell: &Self::Cell, weight: Self);
    fn from_cells(cells: Vec<Self::Cell>) -> Vec<Self>;
    /// The weights as stored (`None` for unweighted graphs).
    fn as_f64s(weights: &[Self]) -> Option<&[f64]>;
    /// Sorts one adjacency list by (target, weight bits), the order of [`DenseArc`].
    fn sort_list(targets: &mut [u32], weights: &mut [Self], scratch: &mut Vec<(u32, u64)>);
}

#[derive(Debug, Clone, Copy)]
struct Unweighted;

impl EdgeWeight for Unweighted {
    const ENCODED_BYTES: usize = 0;
    const CELL_BYTES: u64 = 0;
    type Cell = ();
    fn from_input(_: Option<f64>) -> Self {
        Unweighted
    }
    fn value(self) -> f64 {
        1.0
    }
    fn encode(self, _: &mut Vec<u8>) {}
    fn decode(_: &[u8]) -> Self {
        Unweighted
    }
    fn cells(count: usize) -> Vec<()> {
        vec![(); count]
    }
    fn store(_: &(), _: Self) {}
    fn from_cells(cells: Vec<()>) -> Vec<Self> {
        vec![Unweighted; cells.len()]
    }
    fn as_f64s(_: &[Self]) -> Option<&[f64]> {
        None
    }
    fn sort_list(targets: &mut [u32], _: &mut [Self], _: &mut Vec<(u32, u64)>) {
        targets.sort_unstable();
    }
}

impl EdgeWeight for f64 {
    const ENCODED_BYTES: usize = 8;
    const CELL_BYTES: u64 = 8;
    type Cell = AtomicU64;
    fn from_input(weight: Option<f64>) -> Self {
        weight.unwrap_or(1.0)
    }
    fn value(self) -> f64 {
        self
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn decode(bytes: &[u8]) -> Self {
        f64::from_bits(le_u64(bytes, 0))
    }
    fn cells(count: usize) -> Vec<AtomicU64> {
        (0..count).into_par_iter().map(|_| AtomicU64::new(0)).collect()
    }
    fn store(cell: &AtomicU64, weight: Self) {
        cell.store(weight.to_bits(), AtomicOrdering::Relaxed);
    }
    fn from_cells(cells: Vec<AtomicU64>) -> Vec<Self> {
        cells.into_iter().map(|cell| f64::from_bits(cell.into_inner())).collect()
    }
    fn as_f64s(weights: &[Self]) -> Option<&[f64]> {
        Some(weights)
    }
    fn sort_list(targets: &mut [u32], weights: &mut [Self], scratch: &mut Vec<(u32, u64)>) {
        scratch.clear();
        scratch.extend(targets.iter().zip(weights.iter()).map(|(&t, w)| (t, w.to_bits())));
        scratch.sort_unstable();
        for ((target, weight), &(t, bits)) in targets.iter_mut().zip(weights.iter_mut()).zip(scratch.iter()) {
            (*target, *weight) = (t, f64::from_bits(bits));
        }
    }
}

/// An input edge in original ids, sorted by source for join 1.
struct EdgeBySource<K, W> {
    source: K,
    target: K,
    weight: W,
}

impl<K: IdKey, W: EdgeWeight> SortRecord for EdgeBySource<K, W> {
    #[inline]
    fn compare(&self, other: &Self) -> Ordering {
        self.source.cmp(&other.source)
    }
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        self.source.encode(out);
        self.target.encode(out);
        self.weight.encode(out);
    }
    #[inline]
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
        let Some((source, a)) = K::decode(bytes)? else { return Ok(None) };
        let Some((target, b)) = K::decode(&bytes[a..])? else { return Ok(None) };
        let end = a + b + W::ENCODED_BYTES;
        if bytes.len() < end {
            return Ok(None);
        }
        Ok(Some((EdgeBySource { source, target, weight: W::decode(&bytes[a + b..end]) }, end)))
    }
    fn heap_bytes(&self) -> usize {
        self.source.heap_bytes() + self.target.heap_bytes()
    }
}

/// An edge whose source is already dense, sorted by original target for join 2.
struct EdgeByTarget<K, W> {
    target: K,
    source: u64,
    weight: W,
}

impl<K: IdKey, W: EdgeWeight> SortRecord for EdgeByTarget<K, W> {
    #[inline]
    fn compare(&self, other: &Self) -> Ordering {
        self.target.cmp(&other.target)
    }
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        self.target.encode(out);
        out.extend_from_slice(&self.source.to_le_bytes());
        self.weight.encode(out);
    }
    #[inline]
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
        let Some((target, a)) = K::decode(bytes)? else { return Ok(None) };
        let end = a + 8 + W::ENCODED_BYTES;
        if bytes.len() < end {
            return Ok(None);
        }
        let source = le_u64(bytes, a);
        Ok(Some((EdgeByTarget { target, source, weight: W::decode(&bytes[a + 8..end]) }, end)))
    }
    fn heap_bytes(&self) -> usize {
        self.target.heap_bytes()
    }
}

/// A stored arc in dense ids, sorted by (source, target, weight bits): the order
/// [`StoreBuilder::write_csr`] needs, with parallel arcs in a fixed order (the same as
/// [`build_in_memory`](crate::store::build_in_memory)'s).
#[derive(Debug, Clone, Copy)]
struct DenseArc<W> {
    source: u64,
    target: u64,
    weight: W,
}

impl<W: EdgeWeight> DenseArc<W> {
    fn reversed(self) -> Self {
        DenseArc { source: self.target, target: self.source, weight: self.weight }
    }
    fn to_arc(self) -> Arc {
        Arc { source: self.source, target: self.target, weight: self.weight.value() }
    }
}

impl<W: EdgeWeight> SortRecord for DenseArc<W> {
    #[inline]
    fn compare(&self, other: &Self) -> Ordering {
        (self.source, self.target, self.weight.value().to_bits()).cmp(&(
            other.source,
            other.target,
            other.weight.value().to_bits(),
        ))
    }
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.source.to_le_bytes());
        out.extend_from_slice(&self.target.to_le_bytes());
        self.weight.encode(out);
    }
    #[inline]
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
        let end = 16 + W::ENCODED_BYTES;
        if bytes.len() < end {
            return Ok(None);
        }
        let arc = DenseArc { source: le_u64(bytes, 0), target: le_u64(bytes, 8), weight: W::decode(&bytes[16..end]) };
        Ok(Some((arc, end)))
    }
}

// ---------------------------------------------------------------------------------------------
// Original ids: u64 or String, each with its id files.

/// An original id type: how it comes from the parser, and how its sorted id files are written
/// and read back sequentially for the joins.
trait IdKey: SortRecord + Ord + Clone + Default + Sync + 'static {
    const ID_TYPE: IdType;
    /// Bytes per endpoint of the in-memory path's sort of all ids (a copy or a reference).
    const SORT_BYTES: u64;
    type Reader: SortedIdReader<Self>;
    fn from_raw(raw: RawId) -> Result<Self>;
    /// The numeric value of a u64 id (`None` for strings).
    fn as_u64(&self) -> Option<u64>;
    /// The distinct ids of the edges and `extra`, sorted (the in-memory path's id map).
    fn sorted_distinct<W: EdgeWeight>(chunks: &[Vec<EdgeBySource<Self, W>>], extra: &[Self]) -> Vec<Self>;
    /// Writes sorted distinct ids as the store's forward id map.
    fn write_sorted_ids(builder: &mut StoreBuilder, ids: &[Self]) -> Result<()>;
    /// Writes the sorted distinct ids as the store's forward id map; returns |V|.
    fn write_id_files(builder: &mut StoreBuilder, ids: &mut SortedStream<Self>, bar: &dyn ProgressBar) -> Result<u64>;
    fn open_id_files(work_dir: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<Self::Reader>;
}

/// Reads the id map back in dense order.
trait SortedIdReader<K> {
    /// Overwrites `into` with the next id; `false` at the end.
    fn read_next(&mut self, into: &mut K) -> Result<bool>;
}

/// Progress is updated (and cancellation checked) every this many records; a power of two.
const PROGRESS_STEP: u64 = 1 << 16;

impl IdKey for u64 {
    const ID_TYPE: IdType = IdType::U64;
    const SORT_BYTES: u64 = 8;
    type Reader = RecordReader<u64>;

    #[inline]
    fn as_u64(&self) -> Option<u64> {
        Some(*self)
    }

    fn sorted_distinct<W: EdgeWeight>(chunks: &[Vec<EdgeBySource<u64, W>>], extra: &[u64]) -> Vec<u64> {
        let mut all: Vec<u64> = chunks
            .par_iter()
            .flat_map_iter(|chunk| chunk.iter().flat_map(|e| [e.source, e.target]))
            .chain(extra.par_iter().copied())
            .collect();
        all.par_sort_unstable();
        all.dedup();
        all.shrink_to_fit();
        all
    }

    fn write_sorted_ids(builder: &mut StoreBuilder, ids: &[u64]) -> Result<()> {
        memory::write_u64_ids(builder, ids.iter().copied())
    }

    fn from_raw(raw: RawId) -> Result<u64> {
        match raw {
            RawId::U64(id) => Ok(id),
            RawId::Str(text) => Err(Error::invalid(format!(
                "vertex id '{text}' is not an unsigned 64-bit integer (import with --ids string for text ids)"
            ))),
        }
    }

    fn write_id_files(builder: &mut StoreBuilder, ids: &mut SortedStream<u64>, bar: &dyn ProgressBar) -> Result<u64> {
        let mut file = builder.create_file(ORIGINAL_U64)?;
        let mut chunk: Vec<u8> = Vec::with_capacity(64 << 10);
        let mut count = 0u64;
        while let Some(id) = ids.next_record()? {
            chunk.extend_from_slice(&id.to_le_bytes());
            count += 1;
            if chunk.len() == chunk.capacity() {
                file.write_all(&chunk)?;
                chunk.clear();
                bar.inc((64 << 10) / 8);
            }
        }
        file.write_all(&chunk)?;
        let entry = file.finish()?;
        builder.add_file(ORIGINAL_U64, entry);
        Ok(count)
    }

    fn open_id_files(work_dir: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<Self::Reader> {
        RecordReader::open(&work_dir.join(ORIGINAL_U64), buffer_bytes, counters)
    }
}

impl SortedIdReader<u64> for RecordReader<u64> {
    #[inline]
    fn read_next(&mut self, into: &mut u64) -> Result<bool> {
        match self.next_record()? {
            Some(id) => {
                *into = id;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl IdKey for String {
    const ID_TYPE: IdType = IdType::String;
    const SORT_BYTES: u64 = 16;
    type Reader = StringIdReader;

    fn as_u64(&self) -> Option<u64> {
        None
    }

    fn sorted_distinct<W: EdgeWeight>(chunks: &[Vec<EdgeBySource<String, W>>], extra: &[String]) -> Vec<String> {
        let mut all: Vec<&str> = chunks
            .par_iter()
            .flat_map_iter(|chunk| chunk.iter().flat_map(|e| [e.source.as_str(), e.target.as_str()]))
            .chain(extra.par_iter().map(String::as_str))
            .collect();
        all.par_sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        all.dedup();
        all.into_iter().map(str::to_string).collect()
    }

    fn write_sorted_ids(builder: &mut StoreBuilder, ids: &[String]) -> Result<()> {
        builder.write_string_ids(ids.iter()).map(|_| ())
    }

    fn from_raw(raw: RawId) -> Result<String> {
        Ok(match raw {
            RawId::Str(text) => text,
            RawId::U64(id) => id.to_string(),
        })
    }

    fn write_id_files(
        builder: &mut StoreBuilder,
        ids: &mut SortedStream<String>,
        bar: &dyn ProgressBar,
    ) -> Result<u64> {
        let mut offsets = builder.create_file(STRING_OFFSETS)?;
        let mut data = builder.create_file(STRING_DATA)?;
        let mut position = 0u64;
        let mut count = 0u64;
        offsets.write_u64(0)?;
        while let Some(id) = ids.next_record()? {
            data.write_all(id.as_bytes())?;
            position += id.len() as u64;
            offsets.write_u64(position)?;
            count += 1;
            if count & (PROGRESS_STEP - 1) == 0 {
                bar.inc(PROGRESS_STEP);
            }
        }
        let (offsets, data) = (offsets.finish()?, data.finish()?);
        builder.add_file(STRING_OFFSETS, offsets);
        builder.add_file(STRING_DATA, data);
        Ok(count)
    }

    fn open_id_files(work_dir: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<StringIdReader> {
        let mut offsets = RecordReader::open(&work_dir.join(STRING_OFFSETS), buffer_bytes, counters.clone())?;
        let data_path = work_dir.join(STRING_DATA);
        let data = std::fs::File::open(&data_path).context(|| format!("opening {}", data_path.display()))?;
        let first = offsets.next_record()?.unwrap_or(0);
        Ok(StringIdReader {
            offsets,
            data: BufReader::with_capacity(buffer_bytes, CountingReader::new(data, counters)),
            data_path,
            position: first,
        })
    }
}

/// Reads `ids/strings.offsets` and `ids/strings.data` side by side.
struct StringIdReader {
    offsets: RecordReader<u64>,
    data: BufReader<CountingReader<std::fs::File>>,
    data_path: PathBuf,
    position: u64,
}

impl SortedIdReader<String> for StringIdReader {
    fn read_next(&mut self, into: &mut String) -> Result<bool> {
        let Some(end) = self.offsets.next_record()? else { return Ok(false) };
        let len = end
            .checked_sub(self.position)
            .ok_or_else(|| Error::store(&self.data_path, "string id offsets are not ascending"))?
            as usize;
        self.position = end;
        // Reuse the string's allocation.
        let mut bytes = std::mem::take(into).into_bytes();
        bytes.clear();
        bytes.resize(len, 0);
        let path = &self.data_path;
        self.data.read_exact(&mut bytes).context(|| format!("reading {}", path.display()))?;
        *into = String::from_utf8(bytes).map_err(|_| Error::store(&self.data_path, "an id is not valid UTF-8"))?;
        Ok(true)
    }
}

/// Walks the sorted id map in step with a stream of ids sorted the same way: the "merge" of a
/// sort-merge join. Lookups must come in ascending order.
struct DenseIdCursor<K: IdKey> {
    reader: K::Reader,
    current: K,
    dense: u64,
    has_current: bool,
}

impl<K: IdKey> DenseIdCursor<K> {
    fn open(work_dir: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<Self> {
        let mut reader = K::open_id_files(work_dir, buffer_bytes, counters)?;
        let mut current = K::default();
        let has_current = reader.read_next(&mut current)?;
        Ok(DenseIdCursor { reader, current, dense: 0, has_current })
    }

    #[inline]
    fn dense_of(&mut self, key: &K) -> Result<u64> {
        while self.has_current {
            match self.current.cmp(key) {
                Ordering::Less => {
                    self.has_current = self.reader.read_next(&mut self.current)?;
                    self.dense += 1;
                }
                Ordering::Equal => return Ok(self.dense),
                Ordering::Greater => break,
            }
        }
        Err(Error::invalid(
            "internal error in the import pipeline: an edge endpoint is missing from the id map (sorted streams disagree)",
        ))
    }
}

// ---------------------------------------------------------------------------------------------

/// One import in progress.
struct Import<'a> {
    source: &'a mut dyn RecordSource,
    info: &'a InputInfo,
    opts: &'a ImportOptions,
    shape: GraphShape,
    plan: MemoryPlan,
    builder: StoreBuilder,
    scratch: PathBuf,
    temp_counters: IoCounters,
    progress: &'a dyn Progress,
    cancel: &'a CancelToken,
    report: ImportReport,
}

/// Where pass 1 put the records.
// One value per import, switched at most once: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Pass1<K: IdKey, W: EdgeWeight> {
    /// In memory, for [`memory`]'s build.
    Held(memory::HeldEdges<K, W>),
    /// In the external sorts.
    Sorting { edges: ExternalSorter<EdgeBySource<K, W>>, ids: ExternalSorter<K> },
}

impl<K: IdKey, W: EdgeWeight> Pass1<K, W> {
    #[inline]
    fn edge(&mut self, edge: EdgeBySource<K, W>) -> Result<()> {
        match self {
            Pass1::Held(held) => held.push_edge(edge),
            Pass1::Sorting { edges, ids } => {
                ids.push(edge.source.clone())?;
                if edge.target != edge.source {
                    ids.push(edge.target.clone())?;
                }
                edges.push(edge)?;
            }
        }
        Ok(())
    }

    fn vertex(&mut self, id: K) -> Result<()> {
        match self {
            Pass1::Held(held) => held.push_vertex(id),
            Pass1::Sorting { ids, .. } => ids.push(id)?,
        }
        Ok(())
    }
}

/// A batch of records read ahead, with the input bytes consumed once it was read.
struct InputBatch {
    records: Vec<InputRecord>,
    bytes_consumed: u64,
}

/// The reading thread: batches from `source` into `full` until the input ends, an error (sent
/// on) or the receiver hangs up (the import failed or was cancelled). Batch vectors come back
/// through `empties` to be reused.
fn read_ahead(
    source: &mut dyn RecordSource,
    batch_records: usize,
    full: crossbeam_channel::Sender<Result<InputBatch>>,
    empties: crossbeam_channel::Receiver<Vec<InputRecord>>,
) {
    loop {
        let mut records = empties.try_recv().unwrap_or_else(|_| Vec::with_capacity(batch_records));
        records.clear();
        let (message, more) = match source.read_batch(&mut records, batch_records) {
            Ok(more) => (Ok(InputBatch { records, bytes_consumed: source.bytes_consumed() }), more),
            Err(e) => (Err(e), false),
        };
        if full.send(message).is_err() || !more {
            return;
        }
    }
}

/// What creating external sorters needs, apart from the rest of the import.
struct SortSetup {
    scratch: PathBuf,
    plan: MemoryPlan,
    counters: IoCounters,
    cancel: CancelToken,
}

impl SortSetup {
    fn sorter<T: SortRecord>(&self, label: &str, dedup: bool) -> ExternalSorter<T> {
        let config =
            SortConfig::new(&self.scratch, label, self.plan.sorter_bytes, self.plan.merge_bytes).with_dedup(dedup);
        ExternalSorter::new(config, self.counters.clone(), self.cancel.clone())
    }

    /// The held edges outgrew the in-memory path's share: they become sorted runs of the
    /// external sorts, which take the rest of the input.
    fn start_sorting<K: IdKey, W: EdgeWeight>(&self, pass1: Pass1<K, W>) -> Result<Pass1<K, W>> {
        let Pass1::Held(held) = pass1 else { return Ok(pass1) };
        let mut edges = self.sorter::<EdgeBySource<K, W>>("edges-by-source", false);
        let mut ids = self.sorter::<K>("vertex-ids", true);
        held.spill_into(&mut edges, &mut ids, self.plan.sorter_bytes / 4)?;
        Ok(Pass1::Sorting { edges, ids })
    }
}

/// Times the steps of an import for its report.
struct StepClock {
    started: Instant,
}

impl StepClock {
    fn lap(&mut self, report: &mut ImportReport, step: &str) {
        report.step_seconds.push((step.to_string(), self.started.elapsed().as_secs_f64()));
        self.started = Instant::now();
    }
}

/// What writing csr-out found.
#[derive(Debug, Default)]
struct ArcTally {
    /// Logical edges kept (an undirected edge once).
    edges: u64,
    /// Logical edges dropped as duplicates.
    duplicates: u64,
    /// The most in- plus out-arcs of one vertex, when the build held both layouts' offsets
    /// (else [`StoreBuilder::commit`] reads them).
    max_degree: Option<u64>,
}

impl<'a> Import<'a> {
    fn sorter<T: SortRecord>(&self, label: &str, dedup: bool) -> ExternalSorter<T> {
        let config =
            SortConfig::new(&self.scratch, label, self.plan.sorter_bytes, self.plan.merge_bytes).with_dedup(dedup);
        ExternalSorter::new(config, self.temp_counters.clone(), self.cancel.clone())
    }

    fn run<K: IdKey, W: EdgeWeight>(mut self) -> Result<(Store, ImportReport)> {
        let mut clock = StepClock { started: Instant::now() };
        let pass1 = self.read_input::<K, W>()?;
        clock.lap(&mut self.report, "read input");
        let (vertices, stored_arcs, tally) = match pass1 {
            Pass1::Held(held) => {
                self.report.in_memory = true;
                self.build_from_memory(held, &mut clock)?
            }
            Pass1::Sorting { edges, ids } => self.build_by_sorting(edges, ids, &mut clock)?,
        };
        self.cancel.check()?;

        let weights = self.shape.weighted.then_some(WeightType::F64);
        let mut manifest = Manifest::new(vertices, stored_arcs, tally.edges, self.shape.directed, weights, K::ID_TYPE);
        manifest.max_degree = tally.max_degree;
        manifest.created = self.creation_record();
        self.report.vertices = vertices;
        self.report.edges = tally.edges;
        self.report.arcs = stored_arcs;
        self.report.duplicates_dropped = tally.duplicates;
        self.report.bad_lines_skipped = self.source.skipped_lines().0;
        self.report.input_bytes = self.source.bytes_consumed();
        let store = self.builder.commit(manifest)?;
        let temp = self.temp_counters.snapshot();
        self.report.temp_bytes_written = temp.bytes_written;
        self.report.temp_bytes_read = temp.bytes_read;
        self.report.bytes_written = store.counters().snapshot().bytes_written;
        Ok((store, self.report))
    }

    /// The external path: sort-merge joins and external sorts (see the module doc).
    fn build_by_sorting<K: IdKey, W: EdgeWeight>(
        &mut self,
        edges_by_source: ExternalSorter<EdgeBySource<K, W>>,
        ids: ExternalSorter<K>,
        clock: &mut StepClock,
    ) -> Result<(u64, u64, ArcTally)> {
        self.report.sort_runs += edges_by_source.runs_spilled();
        let vertices = self.assign_dense_ids(ids)?;
        clock.lap(&mut self.report, "assign dense ids");
        let edges_by_target = self.map_sources(edges_by_source)?;
        clock.lap(&mut self.report, "map sources");
        let arcs = self.map_targets(edges_by_target)?;
        clock.lap(&mut self.report, "map targets");
        let (stored_arcs, tally, reversed) = self.write_csr_out(vertices, arcs)?;
        clock.lap(&mut self.report, "write csr-out");
        if let Some(reversed) = reversed {
            let stored_in = self.write_csr_in(vertices, reversed)?;
            clock.lap(&mut self.report, "write csr-in");
            if stored_in != stored_arcs {
                return Err(Error::invalid(format!(
                    "internal error in the import pipeline: csr-in has {stored_in} arcs, csr-out {stored_arcs}"
                )));
            }
        }
        Ok((vertices, stored_arcs, tally))
    }

    fn creation_record(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut created = serde_json::Map::new();
        created.insert("tool".into(), json!("outcore"));
        created.insert("tool_version".into(), json!(env!("CARGO_PKG_VERSION")));
        created.insert("builder".into(), json!("import"));
        let inputs: Vec<String> = self.info.files.iter().map(|p| p.display().to_string()).collect();
        created.insert("inputs".into(), json!(inputs));
        created.insert("format".into(), json!(self.info.format_description));
        created.insert(
            "options".into(),
            json!({
                "undirected": self.opts.undirected,
                "weighted": self.opts.weighted,
                "dedup": self.opts.dedup,
                "drop_self_loops": self.opts.drop_self_loops,
                "ids": serde_json::to_value(self.opts.ids).unwrap_or(serde_json::Value::Null),
                "memory_bytes": self.opts.memory.bytes(),
                "skip_bad_lines": self.opts.skip_bad_lines,
                "src_col": self.opts.src_col,
                "dst_col": self.opts.dst_col,
                "weight_col": self.opts.weight_col,
            }),
        );
        created
            .insert("input_declared".into(), json!({ "directed": self.info.directed, "weighted": self.info.weighted }));
        created.insert("input_records".into(), json!(self.report.input_records));
        created.insert("self_loops_dropped".into(), json!(self.report.self_loops_dropped));
        created.insert("duplicates_dropped".into(), json!(self.report.duplicates_dropped));
        created
    }

    /// Pass 1: reads every record once, into memory while the in-memory build fits the
    /// budget, else into the external sorts (edges by source, every vertex id).
    ///
    /// The source is read on a thread of its own, a few batches ahead: parsing (itself
    /// parallel) overlaps the conversion of the previous batch here.
    fn read_input<K: IdKey, W: EdgeWeight>(&mut self) -> Result<Pass1<K, W>> {
        let chunk_edges = (self.plan.held_chunk_bytes / size_of::<EdgeBySource<K, W>>() as u64) as usize;
        let total = (self.info.total_bytes > 0).then_some(self.info.total_bytes);
        let bar = self.progress.start("reading input", total, ProgressUnit::Bytes);
        let started = Instant::now();
        let setup = SortSetup {
            scratch: self.scratch.clone(),
            plan: self.plan,
            counters: self.temp_counters.clone(),
            cancel: self.cancel.clone(),
        };
        let (shape, plan, cancel) = (self.shape, self.plan, self.cancel);
        let source: &mut dyn RecordSource = &mut *self.source;
        let (mut records, mut edges_read, mut self_loops_dropped) = (0u64, 0u64, 0u64);
        let pass1 = std::thread::scope(|scope| -> Result<Pass1<K, W>> {
            let mut pass1 = Pass1::Held(memory::HeldEdges::new(chunk_edges, shape.directed));
            let (full, batches) = crossbeam_channel::bounded::<Result<InputBatch>>(2);
            let (recycle, empties) = crossbeam_channel::bounded::<Vec<InputRecord>>(4);
            scope.spawn(move || read_ahead(source, plan.batch_records, full, empties));
            for batch in batches.iter() {
                cancel.check()?;
                let mut batch = batch?;
                for record in batch.records.drain(..) {
                    records += 1;
                    match record {
                        InputRecord::Edge { src, dst, weight } => {
                            let (source, target) = (K::from_raw(src)?, K::from_raw(dst)?);
                            if source == target && shape.drop_self_loops {
                                // The vertex stays (isolated if it has no other edge).
                                self_loops_dropped += 1;
                                pass1.vertex(source)?;
                                continue;
                            }
                            pass1.edge(EdgeBySource { source, target, weight: W::from_input(weight) })?;
                            edges_read += 1;
                        }
                        InputRecord::Vertex(id) => pass1.vertex(K::from_raw(id)?)?,
                    }
                }
                let _ = recycle.try_send(batch.records);
                if let Pass1::Held(held) = &pass1 {
                    if held.peak_bytes() > plan.resident_bytes || !held.dense_ids_fit_u32() {
                        pass1 = setup.start_sorting(pass1)?;
                    }
                }
                bar.set_position(batch.bytes_consumed);
                let seconds = started.elapsed().as_secs_f64().max(1e-9);
                bar.set_message(&format!("{edges_read} edges, {:.0} edges/s", edges_read as f64 / seconds));
            }
            Ok(pass1)
        })?;
        bar.finish();
        self.report.input_records = records;
        self.report.self_loops_dropped = self_loops_dropped;
        if records == 0 {
            let file = match self.info.files.as_slice() {
                [one] => one.clone(),
                [] => PathBuf::from("<input>"),
                _ => PathBuf::from(format!("{} inputs", self.info.files.len())),
            };
            return Err(Error::input(file, None, "input is empty: it holds no edges and no vertices"));
        }
        Ok(pass1)
    }

    /// Sorts and deduplicates all vertex ids and writes them as the id map: the dense id of a
    /// vertex is its rank.
    fn assign_dense_ids<K: IdKey>(&mut self, ids: ExternalSorter<K>) -> Result<u64> {
        let mut sorted = ids.finish()?;
        self.report.sort_runs += sorted.stats().runs_spilled;
        let bar = self.progress.start("assigning dense ids", None, ProgressUnit::Vertices);
        let vertices = K::write_id_files(&mut self.builder, &mut sorted, bar.as_ref())?;
        drop(sorted);
        self.builder.write_by_original(0..vertices)?;
        bar.set_position(vertices);
        bar.finish();
        Ok(vertices)
    }

    fn id_cursor<K: IdKey>(&self) -> Result<DenseIdCursor<K>> {
        DenseIdCursor::open(self.builder.work_dir(), self.plan.read_buffer_bytes, self.temp_counters.clone())
    }

    /// Join 1: edges sorted by original source ⋈ id map -> dense source, re-sorted by target.
    fn map_sources<K: IdKey, W: EdgeWeight>(
        &mut self,
        edges: ExternalSorter<EdgeBySource<K, W>>,
    ) -> Result<ExternalSorter<EdgeByTarget<K, W>>> {
        let mut sorted = edges.finish()?;
        let total = sorted.records_upper_bound();
        let mut ids = self.id_cursor::<K>()?;
        let mut by_target = self.sorter::<EdgeByTarget<K, W>>("edges-by-target", false);
        let bar = self.progress.start("mapping edge sources", Some(total), ProgressUnit::Edges);
        let mut done = 0u64;
        while let Some(edge) = sorted.next_record()? {
            let source = ids.dense_of(&edge.source)?;
            by_target.push(EdgeByTarget { target: edge.target, source, weight: edge.weight })?;
            done += 1;
            if done & (PROGRESS_STEP - 1) == 0 {
                bar.set_position(done);
                self.cancel.check()?;
            }
        }
        bar.set_position(done);
        bar.finish();
        self.report.sort_runs += by_target.runs_spilled();
        Ok(by_target)
    }

    /// Join 2: edges sorted by original target ⋈ id map -> arcs in dense ids (both directions
    /// for undirected graphs, a self-loop once), to be sorted by (source, target).
    fn map_targets<K: IdKey, W: EdgeWeight>(
        &mut self,
        edges: ExternalSorter<EdgeByTarget<K, W>>,
    ) -> Result<ExternalSorter<DenseArc<W>>> {
        let mut sorted = edges.finish()?;
        let total = sorted.records_upper_bound();
        let mut ids = self.id_cursor::<K>()?;
        let mut arcs = self.sorter::<DenseArc<W>>("arcs-by-source", false);
        let bar = self.progress.start("mapping edge targets", Some(total), ProgressUnit::Edges);
        let mut done = 0u64;
        while let Some(edge) = sorted.next_record()? {
            let target = ids.dense_of(&edge.target)?;
            let arc = DenseArc { source: edge.source, target, weight: edge.weight };
            arcs.push(arc)?;
            if !self.shape.directed && arc.source != arc.target {
                arcs.push(arc.reversed())?;
            }
            done += 1;
            if done & (PROGRESS_STEP - 1) == 0 {
                bar.set_position(done);
                self.cancel.check()?;
            }
        }
        bar.set_position(done);
        bar.finish();
        self.report.sort_runs += arcs.runs_spilled();
        Ok(arcs)
    }

    /// Writes csr-out from the arcs sorted by (source, target), dropping duplicates when asked,
    /// and (directed graphs) feeds the kept arcs, reversed, to the sort for csr-in.
    #[allow(clippy::type_complexity)]
    fn write_csr_out<W: EdgeWeight>(
        &mut self,
        vertices: u64,
        arcs: ExternalSorter<DenseArc<W>>,
    ) -> Result<(u64, ArcTally, Option<ExternalSorter<DenseArc<W>>>)> {
        let sorted = arcs.finish()?;
        let mut reversed = self.shape.directed.then(|| self.sorter::<DenseArc<W>>("arcs-by-target", false));
        let mut tally = ArcTally::default();
        let bar = self.progress.start("writing csr-out", Some(sorted.records_upper_bound()), ProgressUnit::Edges);
        let kept = KeptArcs {
            sorted,
            pending: None,
            shape: self.shape,
            reversed: reversed.as_mut(),
            tally: &mut tally,
            bar: bar.as_ref(),
            cancel: self.cancel,
            consumed: 0,
            failed: false,
        };
        let stored = self.builder.write_csr("csr-out", vertices, self.shape.weighted, kept)?;
        bar.finish();
        if let Some(r) = &reversed {
            self.report.sort_runs += r.runs_spilled();
        }
        Ok((stored, tally, reversed))
    }

    fn write_csr_in<W: EdgeWeight>(&mut self, vertices: u64, reversed: ExternalSorter<DenseArc<W>>) -> Result<u64> {
        let sorted = reversed.finish()?;
        let bar = self.progress.start("writing csr-in", Some(sorted.records_upper_bound()), ProgressUnit::Edges);
        let mut done = 0u64;
        let cancel = self.cancel;
        let arcs = sorted.map(|arc| {
            done += 1;
            if done & (PROGRESS_STEP - 1) == 0 {
                bar.set_position(done);
                cancel.check()?;
            }
            arc.map(DenseArc::to_arc)
        });
        let stored = self.builder.write_csr("csr-in", vertices, self.shape.weighted, arcs)?;
        bar.finish();
        Ok(stored)
    }
}

/// The arcs of csr-out: the sorted stream, with duplicate (source, target) pairs collapsed to
/// the smallest weight under `dedup`; counts logical edges and feeds csr-in's sort.
struct KeptArcs<'s, W: EdgeWeight> {
    sorted: SortedStream<DenseArc<W>>,
    pending: Option<DenseArc<W>>,
    shape: GraphShape,
    reversed: Option<&'s mut ExternalSorter<DenseArc<W>>>,
    tally: &'s mut ArcTally,
    bar: &'s dyn ProgressBar,
    cancel: &'s CancelToken,
    consumed: u64,
    failed: bool,
}

impl<W: EdgeWeight> KeptArcs<'_, W> {
    /// An undirected edge is stored as two arcs; count it at the arc with source ≤ target.
    fn counts_as_edge(&self, arc: &DenseArc<W>) -> bool {
        self.shape.directed || arc.source <= arc.target
    }

    fn next_sorted(&mut self) -> Result<Option<DenseArc<W>>> {
        let next = match self.pending.take() {
            Some(arc) => Some(arc),
            None => self.sorted.next_record()?,
        };
        if next.is_some() {
            self.consumed += 1;
            if self.consumed & (PROGRESS_STEP - 1) == 0 {
                self.bar.set_position(self.consumed);
                self.cancel.check()?;
            }
        }
        Ok(next)
    }

    fn next_kept(&mut self) -> Result<Option<DenseArc<W>>> {
        let Some(mut arc) = self.next_sorted()? else {
            self.bar.set_position(self.consumed);
            return Ok(None);
        };
        if self.shape.dedup {
            while let Some(next) = self.sorted.next_record()? {
                if (next.source, next.target) != (arc.source, arc.target) {
                    self.pending = Some(next);
                    break;
                }
                self.consumed += 1;
                if next.weight.value().total_cmp(&arc.weight.value()) == Ordering::Less {
                    arc = next;
                }
                if self.counts_as_edge(&next) {
                    self.tally.duplicates += 1;
                }
            }
        }
        if self.counts_as_edge(&arc) {
            self.tally.edges += 1;
        }
        if let Some(reversed) = self.reversed.as_mut() {
            reversed.push(arc.reversed())?;
        }
        Ok(Some(arc))
    }
}

impl<W: EdgeWeight> Iterator for KeptArcs<'_, W> {
    type Item = Result<Arc>;

    fn next(&mut self) -> Option<Result<Arc>> {
        if self.failed {
            return None;
        }
        match self.next_kept() {
            Ok(Some(arc)) => Some(Ok(arc.to_arc())),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_plan_stays_within_the_budget() {
        for budget in [64u64 << 10, 32 << 20, 1 << 30, 64 << 30] {
            let plan = MemoryPlan::for_budget(MemoryBudget::new(budget));
            // Two sorters, or one sorter beside one merge, never exceed 7/8 of the budget.
            assert!(2 * plan.sorter_bytes <= budget * 7 / 8 + 2048, "{budget}");
            assert!(plan.sorter_bytes + plan.merge_bytes <= budget * 7 / 8 + 2048, "{budget}");
        }
    }

    #[test]
    fn records_round_trip_through_their_encoding() {
        let edge = EdgeBySource::<String, f64> { source: "ä".into(), target: String::new(), weight: -2.5 };
        let mut bytes = Vec::new();
        edge.encode(&mut bytes);
        let (back, used) = EdgeBySource::<String, f64>::decode(&bytes).unwrap().unwrap();
        assert_eq!((back.source.as_str(), back.target.as_str(), back.weight, used), ("ä", "", -2.5, bytes.len()));
        for cut in 0..bytes.len() {
            assert!(EdgeBySource::<String, f64>::decode(&bytes[..cut]).unwrap().is_none());
        }
        let arc = DenseArc::<Unweighted> { source: 3, target: 9, weight: Unweighted };
        let mut bytes = Vec::new();
        arc.encode(&mut bytes);
        assert_eq!(bytes.len(), 16);
        let half = EdgeByTarget::<u64, f64> { target: 7, source: 1, weight: 0.5 };
        let mut bytes = Vec::new();
        half.encode(&mut bytes);
        let (back, used) = EdgeByTarget::<u64, f64>::decode(&bytes).unwrap().unwrap();
        assert_eq!((back.target, back.source, back.weight, used), (7, 1, 0.5, 24));
    }
}
