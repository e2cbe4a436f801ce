//! Edge data of one run: the per-edge message records beside the static shards, the dynamic
//! shards ("Load the Edges You Need" §3, Fig. 4), and the in-memory sections a step loads.
//!
//! **Records.** Each edge carries, per message direction (forward along the arc, backward
//! against it for programs that send both ways), an [`EdgeRecord`] of `R = 2·size_of(Msg) + 8`
//! bytes: two message slots and their stamps. A message written in step `s` goes to slot
//! `s mod 2` with stamp `s + 1` (0: never written), and is read in step `s + 1` only if its
//! stamp says so. Two slots make the engine synchronous (bulk-synchronous like the reference
//! engine) although PSW updates edges in place: a source processed earlier in a step writes
//! slot `s mod 2` while its target, processed later, still reads the step-`s−1` message from
//! the other slot. That is also the deterministic rule for edges inside one interval.
//!
//! **Dynamic shards.** A dynamic shard of shard k is a subset of its edges in the same order,
//! with the same block index, each edge also naming its position in the static shard so that a
//! shadow iteration can overlay it. Those positions take 4 bytes each when every static shard
//! has fewer than 2^32 edges ([`static_index_width`]), else 8: a dynamic step reads each of its
//! edges twice (memory shard and window), and on RMAT-18 the 8-byte index was a fifth of a
//! dynamic shard's bytes. Its files live in the run's work directory, one directory
//! per set; a retired set's directory is reused by a later set, whose files overwrite its own
//! ([`WorkFile::overwrite`]).
//!
//! Messages and values are moved to and from disk as their in-memory bytes: the engine
//! requires plain-old-data `Msg` and `Value` types without padding (f64, u64, arrays and
//! tuples of them — every program of this crate).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::layout::{run_record_bytes, FileWriter, ShardLayout};
use crate::error::{Error, IoContext, Result};
use crate::runtime::IoCounters;
use crate::store::csr::{check_ids, decode_targets};
use crate::store::StoreFile;
use crate::VertexId;

/// Byte size of one message record (two slots, two stamps).
pub fn record_bytes<M>() -> usize {
    2 * std::mem::size_of::<M>() + 8
}

/// Bytes [`ShardFiles::load_topology`] holds per edge at most: sources and targets as u64
/// (16), the read buffer (a run record of at most 8 + 4 bytes per edge, reused for the targets
/// and weights) and the weights as f64 when the program reads them.
pub fn topology_bytes_per_edge(weights: bool) -> u64 {
    8 + 8 + 12 + if weights { 8 } else { 0 }
}

/// Views a plain-old-data value as its bytes.
pub fn pod_bytes<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: the engine only moves padding-free plain-old-data types (module docs); the view
    // covers exactly the value and lives no longer than the borrow.
    unsafe { std::slice::from_raw_parts(value as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// Reads a plain-old-data value from bytes written by [`pod_bytes`] of a value of the same type.
pub fn pod_read<T: Copy>(bytes: &[u8]) -> T {
    assert!(bytes.len() >= std::mem::size_of::<T>());
    // SAFETY: the bytes were produced from a valid `T` by `pod_bytes` (stamps guarantee that a
    // slot is read only after it was written); `read_unaligned` copes with any alignment.
    unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const T) }
}

/// Access to one record in a byte array of records.
pub struct EdgeRecord;

impl EdgeRecord {
    fn stamp(rec: &[u8], msg: usize, slot: usize) -> u32 {
        let at = 2 * msg + 4 * slot;
        u32::from_le_bytes(rec[at..at + 4].try_into().unwrap())
    }

    /// The message written in step `step` (if this record was written then).
    pub fn read<M: Copy>(rec: &[u8], step: usize) -> Option<M> {
        let msg = std::mem::size_of::<M>();
        let slot = step % 2;
        (Self::stamp(rec, msg, slot) == step as u32 + 1).then(|| pod_read(&rec[slot * msg..]))
    }

    /// Writes the message of step `step`.
    pub fn write<M: Copy>(rec: &mut [u8], step: usize, m: &M) {
        let msg = std::mem::size_of::<M>();
        let slot = step % 2;
        rec[slot * msg..(slot + 1) * msg].copy_from_slice(pod_bytes(m));
        rec[2 * msg + 4 * slot..2 * msg + 4 * slot + 4].copy_from_slice(&(step as u32 + 1).to_le_bytes());
    }

    /// The latest stamp of the record (step of the last write + 1; 0 if never written).
    pub fn last_stamp(rec: &[u8], msg: usize) -> u32 {
        Self::stamp(rec, msg, 0).max(Self::stamp(rec, msg, 1))
    }

    /// True when the last write happened in step `since` or later and carried a message other
    /// than `identity` (the paper's dirty edge).
    pub fn dirty_since(rec: &[u8], msg: usize, since: usize, identity: &[u8]) -> bool {
        let (s0, s1) = (Self::stamp(rec, msg, 0), Self::stamp(rec, msg, 1));
        let (stamp, slot) = if s0 >= s1 { (s0, 0) } else { (s1, 1) };
        stamp > since as u32 && &rec[slot * msg..(slot + 1) * msg] != identity
    }
}

/// A work file read and written at positions, every byte counted.
#[derive(Debug)]
pub struct WorkFile {
    path: PathBuf,
    file: File,
    counters: IoCounters,
}

impl WorkFile {
    /// Creates (truncating) a file of `len` zero bytes (sparse: nothing is written).
    pub fn create(path: &Path, len: u64, counters: IoCounters) -> Result<WorkFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .context(|| format!("creating {}", path.display()))?;
        file.set_len(len).context(|| format!("sizing {}", path.display()))?;
        Ok(WorkFile { path: path.to_path_buf(), file, counters })
    }

    /// Writes a work file from its start (a dynamic shard's files), buffered and counted; no
    /// checksums, as the file lives only as long as the run that reads it back.
    ///
    /// An existing file is overwritten in place, not truncated first: the directory of a
    /// retired dynamic shard set is reused by a later one ([`DynamicShardSet::retire`]), and
    /// writing over its files spares the file system the inode and block allocation of new
    /// ones. Creating and deleting P × 4 files every step made the kernel's inode allocator
    /// (ext4's `find_inode_bit` / `recently_deleted`) the largest cost of an ADS run.
    pub(crate) fn overwrite(path: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<FileWriter> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .context(|| format!("creating {}", path.display()))?;
        Ok(FileWriter::new(file, path, buffer_bytes, counters))
    }

    /// The file [`overwrite`](Self::overwrite) wrote, cut to what was written this time (an
    /// earlier, longer use may have left bytes behind).
    pub(crate) fn finish(writer: FileWriter, counters: IoCounters) -> Result<WorkFile> {
        let (path, bytes) = (writer.path().to_path_buf(), writer.bytes());
        let file = writer.into_file()?;
        file.set_len(bytes).context(|| format!("sizing {}", path.display()))?;
        Ok(WorkFile { path, file, counters })
    }

    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file.read_exact_at(buf, offset).context(|| format!("reading {}", self.path.display()))?;
        self.counters.record_read(buf.len() as u64);
        Ok(())
    }

    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.file.write_all_at(buf, offset).context(|| format!("writing {}", self.path.display()))?;
        self.counters.record_write(buf.len() as u64);
        Ok(())
    }
}

/// Either a store file (static topology, read only) or a work file.
enum Source<'a> {
    Store(&'a StoreFile),
    Work(&'a WorkFile),
}

impl Source<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        match self {
            Source::Store(f) => f.read_exact_at(buf, offset),
            Source::Work(f) => f.read_at(buf, offset),
        }
    }
}

/// The edges of some blocks of one shard, in memory: topology, static positions, records.
#[derive(Debug, Default)]
pub struct EdgeSection {
    pub sources: Vec<VertexId>,
    pub targets: Vec<VertexId>,
    /// Empty when the program does not read weights.
    pub weights: Vec<f64>,
    /// Position of each edge in its static shard.
    pub static_index: Vec<u64>,
    /// Records per message direction (forward, backward); empty when the direction is unused.
    pub records: [Vec<u8>; 2],
    /// Per edge: the last step in which the edge was present in the loaded shards (shadow
    /// iterations only; see the delay buffer).
    pub last_present: Vec<u32>,
    /// Index of the section's first edge in the file it was loaded from.
    pub first_edge: u64,
    /// Block boundaries inside the section (edge offsets relative to it): block `first_block + b`
    /// is `block_bounds[b]..block_bounds[b+1]`.
    pub first_block: usize,
    pub block_bounds: Vec<usize>,
    /// Per block of the section: whether a record in it changed (it must be written back).
    pub modified: Vec<bool>,
}

impl EdgeSection {
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Bytes this section takes in memory per edge, for the memory plan.
    pub fn bytes_per_edge(weights: bool, record: usize, directions: usize) -> u64 {
        (8 + 8 + 8 + 4 + if weights { 8 } else { 0 } + record * directions) as u64
    }

    /// Edge range of block `i` within the section.
    pub fn block(&self, i: usize) -> std::ops::Range<usize> {
        let b = i - self.first_block;
        self.block_bounds[b]..self.block_bounds[b + 1]
    }

    /// Marks block `i` (a source interval) as changed.
    pub fn mark_block(&mut self, i: usize) {
        self.modified[i - self.first_block] = true;
    }

    /// Marks the block holding edge `e` as changed.
    pub fn mark_edge(&mut self, e: usize) {
        let b = self.block_bounds.partition_point(|&start| start <= e) - 1;
        self.modified[b] = true;
    }

    pub fn is_modified(&self) -> bool {
        self.modified.iter().any(|&m| m)
    }
}

/// The files of one set of edges in shard order: a static shard with its run's records, or a
/// dynamic shard.
pub struct ShardFiles<'a> {
    runs: Source<'a>,
    targets: Source<'a>,
    weights: Option<Source<'a>>,
    /// Static position of each edge (dynamic shards) and its width in bytes.
    static_index: Option<(&'a WorkFile, u64)>,
    records: [Option<&'a WorkFile>; 2],
    run_start: &'a [u64],
    edge_start: &'a [u64],
    width: u64,
    record: usize,
    /// Vertex count every decoded source and target must be below (store shards; work
    /// shards written by this run are not checked).
    vertices: u64,
}

impl<'a> ShardFiles<'a> {
    /// Static shard `k` of the layout with the run's record files.
    pub fn static_shard(
        layout: &'a ShardLayout,
        k: usize,
        records: [Option<&'a WorkFile>; 2],
        weights: bool,
        record: usize,
    ) -> Self {
        ShardFiles {
            runs: Source::Store(&layout.runs[k]),
            targets: Source::Store(&layout.targets[k]),
            weights: if weights && layout.weighted { Some(Source::Store(&layout.weights[k])) } else { None },
            static_index: None,
            records,
            run_start: &layout.run_start[k],
            edge_start: &layout.edge_start[k],
            width: layout.width,
            record,
            vertices: layout.intervals[layout.shards],
        }
    }

    /// Shard `k` of a dynamic shard set.
    pub fn dynamic_shard(set: &'a DynamicShardSet, k: usize, width: u64, record: usize) -> Self {
        let d = &set.shards[k];
        ShardFiles {
            runs: Source::Work(&d.runs),
            targets: Source::Work(&d.targets),
            weights: d.weights.as_ref().map(Source::Work),
            static_index: Some((&d.static_index, set.index_width)),
            records: [d.records[0].as_ref(), d.records[1].as_ref()],
            run_start: &d.run_start,
            edge_start: &d.edge_start,
            width,
            record,
            vertices: u64::MAX,
        }
    }

    pub fn blocks_edges(&self, first: usize, end: usize) -> u64 {
        self.edge_start[end] - self.edge_start[first]
    }

    /// Loads blocks `[first, end)` (source intervals) into memory.
    pub fn load(&self, first: usize, end: usize) -> Result<EdgeSection> {
        let mut section = self.load_topology(first, end)?;
        let (e0, e1) = (self.edge_start[first], self.edge_start[end]);
        let edges = (e1 - e0) as usize;
        let mut buf = Vec::new();
        section.static_index = match self.static_index {
            Some((f, width)) => {
                buf.resize(edges * width as usize, 0);
                f.read_at(&mut buf, e0 * width)?;
                let mut index = Vec::with_capacity(edges);
                decode_targets(&buf, width, &mut index);
                index
            }
            None => (e0..e1).collect(),
        };
        for (d, file) in self.records.iter().enumerate() {
            if let Some(file) = file {
                let mut recs = vec![0u8; edges * self.record];
                if !recs.is_empty() {
                    file.read_at(&mut recs, e0 * self.record as u64)?;
                }
                section.records[d] = recs;
            }
        }
        Ok(section)
    }

    /// Loads the topology of blocks `[first, end)` only: sources, targets and (when the
    /// program reads them) weights; no static positions, no records. The engine with vertex
    /// values in memory ([`super::memory`]) needs nothing else. In memory it takes at most
    /// [`topology_bytes_per_edge`] per edge while loading.
    pub fn load_topology(&self, first: usize, end: usize) -> Result<EdgeSection> {
        let mut section = EdgeSection::default();
        self.load_topology_into(first, end, &mut section, &mut Vec::new())?;
        Ok(section)
    }

    /// [`load_topology`](Self::load_topology) into `section`, reusing its vectors and the read
    /// buffer `buf`: a run that loads shard after shard (the memory mode) allocates them once,
    /// where fresh vectors of the largest shard's size cost page faults and zeroing in the
    /// kernel at every load (on RMAT-22 more system time than the reads themselves).
    pub fn load_topology_into(
        &self,
        first: usize,
        end: usize,
        section: &mut EdgeSection,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let (r0, r1) = (self.run_start[first], self.run_start[end]);
        let (e0, e1) = (self.edge_start[first], self.edge_start[end]);
        let edges = (e1 - e0) as usize;
        section.first_edge = e0;
        section.first_block = first;
        section.block_bounds.clear();
        section.block_bounds.extend((first..=end).map(|i| (self.edge_start[i] - e0) as usize));
        section.modified.clear();
        section.modified.resize(end - first, false);
        section.static_index.clear();
        section.records.iter_mut().for_each(Vec::clear);
        section.last_present.clear();
        let run_bytes = run_record_bytes(self.width);
        buf.clear();
        buf.resize(((r1 - r0) * run_bytes) as usize, 0);
        self.runs.read_at(buf, r0 * run_bytes)?;
        section.sources.clear();
        section.sources.reserve(edges);
        let w = self.width as usize;
        for run in buf.chunks_exact(run_bytes as usize) {
            let mut s = [0u8; 8];
            s[..w].copy_from_slice(&run[..w]);
            let count = u32::from_le_bytes(run[w..w + 4].try_into().unwrap());
            section.sources.extend(std::iter::repeat_n(u64::from_le_bytes(s), count as usize));
        }
        if section.sources.len() != edges {
            return Err(Error::store("shards", "shard runs do not match the edge count"));
        }
        buf.resize(edges * w, 0);
        self.targets.read_at(buf, e0 * self.width)?;
        section.targets.clear();
        section.targets.reserve(edges);
        decode_targets(buf, self.width, &mut section.targets);
        if let Source::Store(f) = self.targets {
            check_ids(f.path(), &section.targets, self.vertices)?;
        }
        if let Source::Store(f) = self.runs {
            check_ids(f.path(), &section.sources, self.vertices)?;
        }
        section.weights.clear();
        if let Some(weights) = &self.weights {
            buf.resize(edges * 8, 0);
            weights.read_at(buf, e0 * 8)?;
            section.weights.extend(buf.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())));
        }
        Ok(())
    }

    /// Writes the changed blocks of the section's records back where they were loaded from
    /// (consecutive changed blocks in one write).
    pub fn write_back(&self, section: &EdgeSection) -> Result<()> {
        let blocks = section.modified.len();
        let mut b = 0;
        while b < blocks {
            if !section.modified[b] {
                b += 1;
                continue;
            }
            let mut end = b + 1;
            while end < blocks && section.modified[end] {
                end += 1;
            }
            let (e0, e1) = (section.block_bounds[b], section.block_bounds[end]);
            for (d, file) in self.records.iter().enumerate() {
                if let Some(file) = file {
                    if e1 > e0 && !section.records[d].is_empty() {
                        let bytes = &section.records[d][e0 * self.record..e1 * self.record];
                        file.write_at(bytes, (section.first_edge + e0 as u64) * self.record as u64)?;
                    }
                }
            }
            b = end;
        }
        Ok(())
    }
}

/// One dynamic shard on disk.
pub struct DynamicShard {
    runs: WorkFile,
    targets: WorkFile,
    weights: Option<WorkFile>,
    static_index: WorkFile,
    records: [Option<WorkFile>; 2],
    pub run_start: Vec<u64>,
    pub edge_start: Vec<u64>,
}

/// The dynamic shards of all intervals built in one step ("DS^i" of Algorithm 1).
pub struct DynamicShardSet {
    pub dir: PathBuf,
    pub shards: Vec<DynamicShard>,
    /// Bytes of each edge's static position ([`static_index_width`]).
    pub index_width: u64,
    /// The first and last step that loaded this set (the last grows while ODS reuses it).
    pub first_step: usize,
    pub last_step: usize,
}

impl DynamicShardSet {
    pub fn edges(&self) -> u64 {
        self.shards.iter().map(|d| *d.edge_start.last().unwrap()).sum()
    }

    /// Closes the set's files and gives back its directory, whose files a later
    /// [`DynamicShardWriter`] overwrites (or the run removes at its end).
    pub fn retire(self) -> PathBuf {
        self.dir
    }
}

/// Bytes of a dynamic shard's static positions for `layout`: 4 when every static shard has
/// fewer than 2^32 edges, else 8.
pub fn static_index_width(layout: &ShardLayout) -> u64 {
    let most = layout.edge_start.iter().filter_map(|starts| starts.last()).max().copied().unwrap_or(0);
    if most <= u64::from(u32::MAX) {
        4
    } else {
        8
    }
}

/// Appends dirty edges to the dynamic shards of the next step, shard by shard, block by block
/// in source-interval order (so each dynamic shard stays sorted by source like its static one).
pub struct DynamicShardWriter {
    dir: PathBuf,
    width: u64,
    index_width: u64,
    shards: usize,
    writers: Vec<ShardWriter>,
    pub edges: u64,
}

struct ShardWriter {
    runs: FileWriter,
    targets: FileWriter,
    weights: Option<FileWriter>,
    static_index: FileWriter,
    records: [Option<FileWriter>; 2],
    open_run: Option<(VertexId, u32)>,
    run_count: u64,
    edge_count: u64,
    run_start: Vec<u64>,
    edge_start: Vec<u64>,
}

impl DynamicShardWriter {
    /// Files for every shard of `layout` in `dir`.
    pub fn create(
        dir: PathBuf,
        layout: &ShardLayout,
        weights: bool,
        directions: [bool; 2],
        buffer_bytes: u64,
        counters: &IoCounters,
    ) -> Result<Self> {
        std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
        let (shards, width, index_width) = (layout.shards, layout.width, static_index_width(layout));
        let files = 3 + weights as u64 + directions.iter().filter(|&&d| d).count() as u64;
        let per_file = (buffer_bytes / (shards as u64 * files)).clamp(4 << 10, 256 << 10) as usize;
        let create = |name: String| WorkFile::overwrite(&dir.join(name), per_file, counters.clone());
        let mut writers = Vec::with_capacity(shards);
        for k in 0..shards {
            writers.push(ShardWriter {
                runs: create(format!("{k}.runs"))?,
                targets: create(format!("{k}.targets"))?,
                weights: if weights { Some(create(format!("{k}.weights"))?) } else { None },
                static_index: create(format!("{k}.static-index"))?,
                records: [
                    if directions[0] { Some(create(format!("{k}.fwd"))?) } else { None },
                    if directions[1] { Some(create(format!("{k}.bwd"))?) } else { None },
                ],
                open_run: None,
                run_count: 0,
                edge_count: 0,
                run_start: Vec::with_capacity(shards + 1),
                edge_start: Vec::with_capacity(shards + 1),
            });
        }
        Ok(DynamicShardWriter { dir, width, index_width, shards, writers, edges: 0 })
    }

    /// Appends the edges of block `block` of `section` (of shard `k`) for which `keep` holds.
    pub fn append_block(
        &mut self,
        k: usize,
        section: &EdgeSection,
        block: usize,
        record: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let width = self.width;
        let w = &mut self.writers[k];
        while w.edge_start.len() <= block {
            w.run_start.push(w.run_count + w.open_run.is_some() as u64);
            w.edge_start.push(w.edge_count);
        }
        for e in section.block(block).filter(|&e| keep(e)) {
            let s = section.sources[e];
            match &mut w.open_run {
                Some((src, c)) if *src == s && *c < u32::MAX => *c += 1,
                slot => {
                    if let Some((src, c)) = slot.take() {
                        w.runs.write_uint(src, width)?;
                        w.runs.write(&c.to_le_bytes())?;
                        w.run_count += 1;
                    }
                    *slot = Some((s, 1));
                }
            }
            w.targets.write_uint(section.targets[e], width)?;
            if let Some(ws) = &mut w.weights {
                ws.write(&section.weights[e].to_le_bytes())?;
            }
            w.static_index.write_uint(section.static_index[e], self.index_width)?;
            for d in 0..2 {
                if let Some(rw) = &mut w.records[d] {
                    rw.write(&section.records[d][e * record..(e + 1) * record])?;
                }
            }
            w.edge_count += 1;
            self.edges += 1;
        }
        Ok(())
    }

    /// Closes the files; the set is used from step `first_step` on.
    pub fn finish(self, first_step: usize, counters: &IoCounters) -> Result<DynamicShardSet> {
        let mut shards = Vec::with_capacity(self.shards);
        for mut w in self.writers {
            if let Some((src, c)) = w.open_run.take() {
                w.runs.write_uint(src, self.width)?;
                w.runs.write(&c.to_le_bytes())?;
                w.run_count += 1;
            }
            while w.edge_start.len() <= self.shards {
                w.run_start.push(w.run_count);
                w.edge_start.push(w.edge_count);
            }
            let finish = |writer: FileWriter| WorkFile::finish(writer, counters.clone());
            let [fwd, bwd] = w.records;
            shards.push(DynamicShard {
                runs: finish(w.runs)?,
                targets: finish(w.targets)?,
                weights: w.weights.map(finish).transpose()?,
                static_index: finish(w.static_index)?,
                records: [fwd.map(finish).transpose()?, bwd.map(finish).transpose()?],
                run_start: w.run_start,
                edge_start: w.edge_start,
            });
        }
        Ok(DynamicShardSet { dir: self.dir, shards, index_width: self.index_width, first_step, last_step: first_step })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(edges_per_shard: [u64; 2]) -> ShardLayout {
        ShardLayout {
            name: "shards-2".into(),
            shards: 2,
            intervals: vec![0, 4, 8],
            width: 4,
            weighted: false,
            run_start: vec![vec![0, 2, 4]; 2],
            edge_start: edges_per_shard.iter().map(|&e| vec![0, e / 2, e]).collect(),
            runs: Vec::new(),
            targets: Vec::new(),
            weights: Vec::new(),
        }
    }

    #[test]
    fn static_positions_take_four_bytes_unless_a_shard_outgrows_them() {
        assert_eq!(static_index_width(&layout([8, 6])), 4);
        assert_eq!(static_index_width(&layout([8, u64::from(u32::MAX)])), 4);
        assert_eq!(static_index_width(&layout([8, u64::from(u32::MAX) + 1])), 8);
    }

    /// A dynamic shard keeps a subset of a static section's edges with their static positions
    /// (4 bytes each on disk) and records, and loads them back unchanged.
    #[test]
    fn a_dynamic_shard_round_trips_its_edges_positions_and_records() {
        let dir = tempfile::tempdir().unwrap();
        let layout = layout([8, 6]);
        let record = record_bytes::<f64>();
        // Shard 0: block 0 holds sources 0 and 1, block 1 sources 4 and 5, two edges each.
        let section = EdgeSection {
            sources: vec![0, 0, 1, 1, 4, 4, 5, 5],
            targets: vec![1, 2, 3, 2, 0, 1, 2, 3],
            static_index: (0..8).collect(),
            records: [(0..8 * record).map(|b| b as u8).collect(), Vec::new()],
            first_block: 0,
            block_bounds: vec![0, 4, 8],
            modified: vec![false; 2],
            ..EdgeSection::default()
        };
        let counters = IoCounters::new();
        let mut writer =
            DynamicShardWriter::create(dir.path().join("set"), &layout, false, [true, false], 1 << 16, &counters)
                .unwrap();
        let kept = [1usize, 2, 5, 7];
        for block in 0..2 {
            writer.append_block(0, &section, block, record, |e| kept.contains(&e)).unwrap();
        }
        let set = writer.finish(3, &counters).unwrap();
        assert_eq!(set.edges(), 4);
        assert_eq!(set.index_width, 4);
        let on_disk = std::fs::metadata(dir.path().join("set/0.static-index")).unwrap().len();
        assert_eq!(on_disk, 4 * 4, "four positions of four bytes");
        let loaded = ShardFiles::dynamic_shard(&set, 0, layout.width, record).load(0, 2).unwrap();
        assert_eq!(loaded.static_index, vec![1, 2, 5, 7]);
        assert_eq!(loaded.sources, vec![0, 1, 4, 5]);
        assert_eq!(loaded.targets, vec![2, 3, 1, 3]);
        assert_eq!(loaded.block_bounds, vec![0, 2, 4]);
        let expected: Vec<u8> =
            kept.iter().flat_map(|&e| section.records[0][e * record..(e + 1) * record].to_vec()).collect();
        assert_eq!(loaded.records[0], expected);
    }
}
