//! The `shards-P` layout: GraphChi's intervals and shards (Kyrola et al., OSDI 2012, §4;
//! "Load the Edges You Need" §2, Fig. 1b), derived from the store's `csr-out` on demand.
//!
//! ```text
//! STORE/shards-P/
//!   intervals        u64 × (P+1): interval j is the dense ids [intervals[j], intervals[j+1])
//!   shard-J.runs     per run of equal sources: source (4 or 8 bytes, like csr targets), count (u32)
//!   shard-J.targets  one target per edge (4 or 8 bytes)
//!   shard-J.weights  one f64 per edge (weighted stores only)
//!   shard-J.index    u64 × 2(P+1): the run, then the edge, at which the block of sources in
//!                    interval i starts (i = 0..=P), for the sliding windows
//! ```
//! Shard j holds every arc whose target lies in interval j, sorted by source (ties keep the
//! csr-out order), the source written once per run. Intervals are balanced by in-edge count:
//! interval j ends at the first vertex where the running in-degree sum reaches (j+1)·|E|/P.
//!
//! The builder streams `csr-out` once in ascending source order, so every shard receives its
//! arcs already sorted; it writes into a temporary directory inside the store and renames it
//! into place only when complete, then records the layout in the manifest. A directory
//! `shards-P` without a manifest entry (a build interrupted after the rename) is rebuilt.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::runtime::commit;
use crate::runtime::io::CountingWriter;
use crate::runtime::{IoCounters, Progress, ProgressUnit};
use crate::store::csr::target_bytes_for;
use crate::store::manifest::{FileEntry, LayoutEntry, Manifest, MANIFEST_FILE};
use crate::store::{Direction, Store, StoreFile};
use crate::VertexId;

/// Bytes of one run record: source (4 or 8) and count (u32).
pub fn run_record_bytes(width: u64) -> u64 {
    width + 4
}

/// An opened `shards-P` layout: intervals and per-shard block indexes in memory, files opened.
#[derive(Debug)]
pub struct ShardLayout {
    pub name: String,
    pub shards: usize,
    /// Interval boundaries, P+1 dense ids.
    pub intervals: Vec<VertexId>,
    /// Width of sources and targets (4 or 8 bytes).
    pub width: u64,
    pub weighted: bool,
    /// Per shard: run index where source interval i's block starts (P+1 entries).
    pub run_start: Vec<Vec<u64>>,
    /// Per shard: edge index where source interval i's block starts (P+1 entries).
    pub edge_start: Vec<Vec<u64>>,
    pub runs: Vec<StoreFile>,
    pub targets: Vec<StoreFile>,
    pub weights: Vec<StoreFile>,
}

impl ShardLayout {
    pub fn layout_name(shards: usize) -> String {
        format!("shards-{shards}")
    }

    /// The layout with `shards` intervals, built now if the store lacks a valid one.
    pub fn open_or_build(
        store: &Store,
        shards: usize,
        buffer_bytes: u64,
        progress: &dyn Progress,
    ) -> Result<ShardLayout> {
        if shards == 0 || shards > 1 << 16 {
            return Err(Error::invalid(format!("the number of shards must be in 1..=65536, got {shards}")));
        }
        let name = Self::layout_name(shards);
        // A listed layout that fails its checks is damaged: say so (exit 66, the file named,
        // the command that rebuilds it) rather than rebuild it silently over the evidence.
        if let Some(damaged) = store.damaged_layout(&name) {
            return Err(damaged);
        }
        // Read the manifest afresh: another run may have built the layout since the store was
        // opened, or may be building it now (then wait for it under the build lock).
        let manifest = Manifest::read(&store.dir().join(MANIFEST_FILE))?;
        if manifest.layouts.contains_key(&name) {
            return Self::open(store, shards, &manifest);
        }
        let _building = store.lock_builds()?;
        let manifest = Manifest::read(&store.dir().join(MANIFEST_FILE))?;
        if !manifest.layouts.contains_key(&name) {
            build(store, shards, buffer_bytes, progress)?;
        }
        let manifest = Manifest::read(&store.dir().join(MANIFEST_FILE))?;
        Self::open(store, shards, &manifest)
    }

    fn open(store: &Store, shards: usize, manifest: &Manifest) -> Result<ShardLayout> {
        let name = Self::layout_name(shards);
        let entry =
            manifest.layouts.get(&name).ok_or_else(|| Error::store(store.dir(), format!("{name} is missing")))?;
        for rel in &entry.files {
            let want = manifest.files.get(rel).map(|f| f.bytes);
            let have = std::fs::metadata(store.path(rel)).map(|m| m.len()).ok();
            if want.is_none() || want != have {
                return Err(Error::store(
                    store.path(rel),
                    format!("shard file is missing or has the wrong size; {}", store.rebuild_hint(&name)),
                ));
            }
        }
        let intervals = crate::store::files::u64s_from_le_bytes(&store.file(&format!("{name}/intervals"))?.read_all()?);
        if intervals.len() != shards + 1 || intervals[shards] != store.num_vertices() {
            return Err(Error::store(store.path(&name), "interval file does not match the store"));
        }
        let mut run_start = Vec::with_capacity(shards);
        let mut edge_start = Vec::with_capacity(shards);
        let (mut runs, mut targets, mut weights) = (Vec::new(), Vec::new(), Vec::new());
        let weighted = store.is_weighted();
        for j in 0..shards {
            let index =
                crate::store::files::u64s_from_le_bytes(&store.file(&format!("{name}/shard-{j}.index"))?.read_all()?);
            if index.len() != 2 * (shards + 1) {
                return Err(Error::store(store.path(&name), format!("shard {j} index has the wrong size")));
            }
            let index_path = store.path(&format!("{name}/shard-{j}.index"));
            let width = target_bytes_for(store.num_vertices());
            let runs_len = manifest.files.get(&format!("{name}/shard-{j}.runs")).map_or(0, |f| f.bytes);
            let targets_len = manifest.files.get(&format!("{name}/shard-{j}.targets")).map_or(0, |f| f.bytes);
            crate::store::csr::check_offsets(&index_path, &index[..shards + 1], runs_len / (width + 4))?;
            crate::store::csr::check_offsets(&index_path, &index[shards + 1..], targets_len / width)?;
            run_start.push(index[..shards + 1].to_vec());
            edge_start.push(index[shards + 1..].to_vec());
            runs.push(store.file(&format!("{name}/shard-{j}.runs"))?);
            targets.push(store.file(&format!("{name}/shard-{j}.targets"))?);
            if weighted {
                weights.push(store.file(&format!("{name}/shard-{j}.weights"))?);
            }
        }
        Ok(ShardLayout {
            name,
            shards,
            intervals,
            width: target_bytes_for(store.num_vertices()),
            weighted,
            run_start,
            edge_start,
            runs,
            targets,
            weights,
        })
    }

    /// Interval of a vertex (binary search of the boundaries).
    pub fn interval_of(&self, v: VertexId) -> usize {
        interval_of(&self.intervals, v)
    }

    /// Arcs of shard j (the in-edges of interval j).
    /// What the memory mode's sizing and the planner read of the layout.
    pub fn facts(&self) -> ShardLayoutFacts {
        let intervals = self.intervals.windows(2).map(|w| w[1] - w[0]);
        ShardLayoutFacts {
            shards: self.shards,
            max_interval_vertices: intervals.clone().max().unwrap_or(0),
            max_shard_edges: (0..self.shards).map(|j| self.shard_edges(j)).max().unwrap_or(0),
            interval_loads: intervals.enumerate().map(|(j, vertices)| (vertices, self.interval_edges(j))).collect(),
        }
    }

    pub fn shard_edges(&self, j: usize) -> u64 {
        self.edge_start[j][self.shards]
    }

    /// Arcs of the block of shard `k` whose sources lie in interval `i`.
    pub fn block_edges(&self, k: usize, i: usize) -> u64 {
        self.edge_start[k][i + 1] - self.edge_start[k][i]
    }

    /// In-edges plus out-edges of interval j outside its own shard: the edges one interval's
    /// step holds in memory.
    pub fn interval_edges(&self, j: usize) -> u64 {
        self.shard_edges(j) + (0..self.shards).filter(|&k| k != j).map(|k| self.block_edges(k, j)).sum::<u64>()
    }
}

/// The figures of a built `shards-P` layout that size the memory mode: the planner reads them
/// for the layouts a store has, so that its parts are the run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLayoutFacts {
    pub shards: usize,
    pub max_interval_vertices: u64,
    pub max_shard_edges: u64,
    /// Per interval: its vertices, and the edges one step of it holds
    /// ([`ShardLayout::interval_edges`]).
    pub interval_loads: Vec<(u64, u64)>,
}

impl ShardLayoutFacts {
    /// Whether every interval's edges and vertices fit `share` in the disk mode: the test
    /// under which the engine takes this layout or doubles P (`open_layout`).
    pub fn intervals_fit(&self, per_edge: u64, per_vertex: u64, share: u64) -> bool {
        self.interval_loads.iter().all(|&(vertices, edges)| edges * per_edge + vertices * per_vertex <= share)
    }
}

/// A lower bound of the loads a `shards-P` layout of `store` would have, without building it:
/// per interval of the balance a build makes ([`balanced_intervals`]), its vertices and the
/// larger of its in-edges (its shard) and its out-edges. A step of interval j holds its shard
/// and its out-edges in the other shards' windows ([`ShardLayout::interval_edges`]), so its
/// load is at least each of the two. When this bound does not fit a share, the layout will not
/// either, and the engine and its plan pass P over rather than build it to find out (RMAT-22 in
/// Norder: the vertices with few in-edges and many out-edges lie together). Its vertices per
/// interval and its largest shard (in-edges) are exact: what the memory mode is sized from. One
/// stream of the in-offsets for the boundaries, then two offsets read per boundary in each
/// direction.
pub fn interval_load_floor(store: &Store, shards: usize) -> Result<ShardLayoutFacts> {
    let intervals = balanced_intervals(store, shards)?;
    let (csr_in, csr_out) = (store.csr(Direction::In)?, store.csr(Direction::Out)?);
    let offset = |csr: &crate::store::CsrLayout, v: VertexId| -> Result<u64> {
        let mut at = [0u64; 1];
        csr.read_offsets(v, &mut at)?;
        Ok(at[0])
    };
    let (mut loads, mut max_shard_edges) = (Vec::with_capacity(shards), 0);
    let (mut last_in, mut last_out) = (offset(&csr_in, 0)?, offset(&csr_out, 0)?);
    for bounds in intervals.windows(2) {
        let (next_in, next_out) = (offset(&csr_in, bounds[1])?, offset(&csr_out, bounds[1])?);
        let (ins, outs) = (next_in.saturating_sub(last_in), next_out.saturating_sub(last_out));
        loads.push((bounds[1] - bounds[0], ins.max(outs)));
        max_shard_edges = max_shard_edges.max(ins);
        (last_in, last_out) = (next_in, next_out);
    }
    Ok(ShardLayoutFacts {
        shards,
        max_interval_vertices: loads.iter().map(|&(vertices, _)| vertices).max().unwrap_or(0),
        max_shard_edges,
        interval_loads: loads,
    })
}

/// [`interval_load_floor`] of each P, computed once and kept: one run sizes the memory mode,
/// then, when that does not fit, the disk mode, and a plan prices several modes, each asking
/// for the same P (each ask streams the in-offsets: 19 MB on RMAT-22). Errors are not kept.
#[derive(Debug, Clone)]
pub struct IntervalFloors {
    store: Store,
    floors: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<usize, ShardLayoutFacts>>>,
}

impl IntervalFloors {
    /// Floors of `store`'s layouts, read through `store`'s counters.
    pub fn new(store: &Store) -> IntervalFloors {
        IntervalFloors { store: store.clone(), floors: Default::default() }
    }

    pub fn get(&self, shards: usize) -> Result<ShardLayoutFacts> {
        let mut floors = self.floors.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(floor) = floors.get(&shards) {
            return Ok(floor.clone());
        }
        let floor = interval_load_floor(&self.store, shards)?;
        floors.insert(shards, floor.clone());
        Ok(floor)
    }

    /// Whether `shards-P` is worth opening (or building): it is built, and is then checked as
    /// it is once opened, or its floor passes `fits`.
    pub fn worth_opening(&self, shards: usize, fits: impl FnOnce(&ShardLayoutFacts) -> bool) -> Result<bool> {
        let built = self.store.manifest().layouts.contains_key(&ShardLayout::layout_name(shards));
        Ok(built || fits(&self.get(shards)?))
    }
}

/// The facts of every `shards-P` layout of `store` that opens (read through counters of their
/// own: planning is not part of a run's figures).
pub fn built_layout_facts(store: &Store) -> Vec<ShardLayoutFacts> {
    let store = store.with_counters(IoCounters::new());
    let manifest = store.manifest().clone();
    manifest
        .layouts
        .keys()
        .filter_map(|name| name.strip_prefix("shards-")?.parse::<usize>().ok())
        .filter_map(|p| ShardLayout::open(&store, p, &manifest).ok())
        .map(|layout| layout.facts())
        .collect()
}

fn interval_of(intervals: &[VertexId], v: VertexId) -> usize {
    intervals.partition_point(|&start| start <= v) - 1
}

/// A counted, buffered, sequential writer of one file; its errors name the file. The layout's
/// files ([`LayoutFileWriter`], checksummed) and a run's dynamic shards
/// ([`super::edges::DynamicShardWriter`], not) are written through it.
pub(crate) struct FileWriter {
    path: PathBuf,
    out: CountingWriter<BufWriter<File>>,
    bytes: u64,
}

impl FileWriter {
    /// Writes `file` (open for writing) from its start through a buffer of `buffer_bytes`.
    pub(crate) fn new(file: File, path: &Path, buffer_bytes: usize, counters: IoCounters) -> Self {
        let out = CountingWriter::new(BufWriter::with_capacity(buffer_bytes, file), counters);
        FileWriter { path: path.to_path_buf(), out, bytes: 0 }
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.bytes += bytes.len() as u64;
        let path = &self.path;
        self.out.write_all(bytes).context(|| format!("writing {}", path.display()))
    }

    pub(crate) fn write_uint(&mut self, value: u64, width: u64) -> Result<()> {
        self.write(&value.to_le_bytes()[..width as usize])
    }

    /// Bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes out the buffer and gives back the file.
    pub(crate) fn into_file(self) -> Result<File> {
        let path = self.path;
        self.out.into_inner().into_inner().map_err(|e| Error::io(format!("writing {}", path.display()), e.into_error()))
    }
}

/// A counted, checksummed, buffered writer of one new layout file.
pub(crate) struct LayoutFileWriter {
    file: FileWriter,
    hasher: crc32fast::Hasher,
    blocks: crate::store::blocks::BlockHasher,
}

impl LayoutFileWriter {
    pub(crate) fn create(path: &Path, buffer_bytes: usize, counters: IoCounters) -> Result<Self> {
        let file = File::create(path).context(|| format!("creating {}", path.display()))?;
        Ok(LayoutFileWriter {
            file: FileWriter::new(file, path, buffer_bytes, counters),
            hasher: crc32fast::Hasher::new(),
            blocks: Default::default(),
        })
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        self.blocks.update(bytes);
        self.file.write(bytes)
    }

    pub(crate) fn write_uint(&mut self, value: u64, width: u64) -> Result<()> {
        self.write(&value.to_le_bytes()[..width as usize])
    }

    pub(crate) fn finish(self, sync: bool) -> Result<FileEntry> {
        let (path, bytes) = (self.file.path().to_path_buf(), self.file.bytes());
        let file = self.file.into_file()?;
        if sync {
            file.sync_all().context(|| format!("syncing {}", path.display()))?;
        }
        let blocks_crc32c = Some(self.blocks.write_sidecar(&path, sync)?);
        Ok(FileEntry { bytes, crc32: self.hasher.finalize(), blocks_crc32c })
    }
}

/// Interval boundaries balanced by in-degree, streaming the in-offsets in chunks.
fn balanced_intervals(store: &Store, shards: usize) -> Result<Vec<VertexId>> {
    let n = store.num_vertices();
    let arcs = store.num_arcs();
    let csr_in = store.csr(Direction::In)?;
    let mut intervals = vec![0u64];
    let chunk = 1u64 << 17;
    let mut buf = vec![0u64; (chunk + 1) as usize];
    let mut first = 0;
    while first < n && intervals.len() < shards {
        let count = chunk.min(n - first);
        csr_in.read_offsets(first, &mut buf[..count as usize + 1])?;
        for i in 0..count as usize {
            // Running in-degree sum after vertex first+i.
            let done = buf[i + 1];
            let j = intervals.len() as u64;
            if j < shards as u64 && done * shards as u64 >= j * arcs && first + i as u64 + 1 < n {
                intervals.push(first + i as u64 + 1);
                if intervals.len() == shards {
                    break;
                }
            }
        }
        first += count;
    }
    // Fewer vertices than shards, or an edgeless graph: empty intervals at the end.
    while intervals.len() < shards {
        intervals.push(n);
    }
    intervals.push(n);
    Ok(intervals)
}

/// Builds `shards-P` beside its place and commits it there ([`commit::build_dir`]: a directory
/// already there, not in the manifest or invalid, was left by an interrupted build and is
/// replaced). The caller holds [`Store::lock_builds`].
fn build(store: &Store, shards: usize, buffer_bytes: u64, progress: &dyn Progress) -> Result<()> {
    let name = ShardLayout::layout_name(shards);
    let (files, params) =
        commit::build_dir(&store.path(&name), |dir| write_layout(store, shards, dir, buffer_bytes, progress))?;
    let bytes = files.iter().map(|(_, e)| e.bytes).sum();
    let layout = LayoutEntry { files: files.iter().map(|(r, _)| r.clone()).collect(), bytes, params };
    let mut fresh = store.reopen()?;
    fresh.add_layout(&name, layout, files)
}

type BuiltFiles = (Vec<(String, FileEntry)>, serde_json::Map<String, serde_json::Value>);

fn write_layout(
    store: &Store,
    shards: usize,
    dir: &Path,
    buffer_bytes: u64,
    progress: &dyn Progress,
) -> Result<BuiltFiles> {
    let name = ShardLayout::layout_name(shards);
    let counters = store.counters().clone();
    let n = store.num_vertices();
    let width = target_bytes_for(n);
    let intervals = balanced_intervals(store, shards)?;
    let csr = store.csr(Direction::Out)?;
    let weighted = store.is_weighted();
    let files_per_shard = if weighted { 3 } else { 2 };
    let per_file = (buffer_bytes / (shards as u64 * files_per_shard)).clamp(1 << 10, 1 << 20) as usize;
    let create = |f: &str| LayoutFileWriter::create(&dir.join(f), per_file, counters.clone());
    let mut runs = (0..shards).map(|j| create(&format!("shard-{j}.runs"))).collect::<Result<Vec<_>>>()?;
    let mut targets = (0..shards).map(|j| create(&format!("shard-{j}.targets"))).collect::<Result<Vec<_>>>()?;
    let mut weights = if weighted {
        (0..shards).map(|j| create(&format!("shard-{j}.weights"))).collect::<Result<Vec<_>>>()?
    } else {
        Vec::new()
    };
    // Per shard: the source of the open run and its count, runs and edges written, and the
    // block starts (filled up to the interval of the last source seen).
    let mut open_run: Vec<Option<(VertexId, u32)>> = vec![None; shards];
    let mut run_count = vec![0u64; shards];
    let mut edge_count = vec![0u64; shards];
    let mut run_start: Vec<Vec<u64>> = vec![Vec::with_capacity(shards + 1); shards];
    let mut edge_start: Vec<Vec<u64>> = vec![Vec::with_capacity(shards + 1); shards];

    let bar = progress.start(&format!("building {name}"), Some(store.num_arcs()), ProgressUnit::Edges);
    let chunk_vertices = 1u64 << 15;
    let mut offsets = vec![0u64; chunk_vertices as usize + 1];
    let mut tgts = Vec::new();
    let mut wbuf = Vec::new();
    let mut source_interval = 0usize;
    let mut first = 0u64;
    while first < n {
        let count = chunk_vertices.min(n - first);
        csr.read_offsets(first, &mut offsets[..count as usize + 1])?;
        let (e0, e1) = (offsets[0], offsets[count as usize]);
        // A chunk of vertices may hold a huge adjacency; read its targets in pieces.
        let mut e = e0;
        let mut v = first;
        let mut vi = 0usize;
        while e < e1 {
            let piece = (1u64 << 18).min(e1 - e);
            csr.read_targets(e, piece, &mut tgts)?;
            if let Some(w) = &csr.weights {
                wbuf.resize(piece as usize * 8, 0);
                w.read_exact_at(&mut wbuf, e * 8)?;
            }
            for (i, &t) in tgts.iter().enumerate() {
                let edge = e + i as u64;
                while offsets[vi + 1] <= edge {
                    vi += 1;
                    v += 1;
                }
                while source_interval + 1 < shards && intervals[source_interval + 1] <= v {
                    source_interval += 1;
                }
                let k = interval_of(&intervals, t);
                while run_start[k].len() <= source_interval {
                    run_start[k].push(run_count[k] + open_run[k].is_some() as u64);
                    edge_start[k].push(edge_count[k]);
                }
                match &mut open_run[k] {
                    Some((s, c)) if *s == v && *c < u32::MAX => *c += 1,
                    slot => {
                        if let Some((s, c)) = slot.take() {
                            runs[k].write_uint(s, width)?;
                            runs[k].write(&c.to_le_bytes())?;
                            run_count[k] += 1;
                        }
                        *slot = Some((v, 1));
                    }
                }
                targets[k].write_uint(t, width)?;
                if weighted {
                    weights[k].write(&wbuf[i * 8..i * 8 + 8])?;
                }
                edge_count[k] += 1;
            }
            bar.inc(piece);
            e += piece;
        }
        first += count;
    }
    bar.finish();
    let mut files = Vec::new();
    let mut intervals_file = create("intervals")?;
    for &b in &intervals {
        intervals_file.write(&b.to_le_bytes())?;
    }
    files.push((format!("{name}/intervals"), intervals_file.finish(true)?));
    for (k, ((r, t), w)) in runs
        .into_iter()
        .zip(targets)
        .zip(weights.into_iter().map(Some).chain(std::iter::repeat_with(|| None)))
        .enumerate()
    {
        let mut r = r;
        if let Some((s, c)) = open_run[k].take() {
            r.write_uint(s, width)?;
            r.write(&c.to_le_bytes())?;
            run_count[k] += 1;
        }
        while run_start[k].len() <= shards {
            run_start[k].push(run_count[k]);
            edge_start[k].push(edge_count[k]);
        }
        let mut index = create(&format!("shard-{k}.index"))?;
        for &x in run_start[k].iter().chain(&edge_start[k]) {
            index.write(&x.to_le_bytes())?;
        }
        files.push((format!("{name}/shard-{k}.index"), index.finish(true)?));
        files.push((format!("{name}/shard-{k}.runs"), r.finish(true)?));
        files.push((format!("{name}/shard-{k}.targets"), t.finish(true)?));
        if let Some(w) = w {
            files.push((format!("{name}/shard-{k}.weights"), w.finish(true)?));
        }
    }
    let mut params = serde_json::Map::new();
    params.insert("shards".into(), shards.into());
    params.insert("balanced_by".into(), "in-edges".into());
    Ok((files, params))
}
