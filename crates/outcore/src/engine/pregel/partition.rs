//! Partitioning a store for the `pregel` engine: `outcore partition --store DIR --ranks W [--recode]`,
//! a W-rank job (threads over [`InProcessTransport`] in one process, or `mpirun -n W`).
//!
//! GraphD §3.1: every rank owns the vertices with hash(v) = id(v) mod W; on its local disk it
//! keeps the state array A of its vertices and its edge stream S^E, the adjacency lists of those
//! vertices concatenated in the order of A. This module writes, for every rank `i`,
//! `DIR/parts-W/rank-i/`:
//!
//! - `vertices`: one 32-byte record per owned vertex, in ascending name order:
//!   `name u64 · dense id u64 · out-degree u64 · in-degree u64` (little endian);
//! - `edges-out`: the out-lists in that order, one name per arc, followed by `weight f64` on
//!   weighted stores; a name is a `u64`, or a `u32` in a recoded partition whose names all
//!   fit ([`name_bytes`]: W·(|V| + 1) < 2^32), which halves what every superstep streams;
//! - `edges-in`: the same for in-arcs (directed stores only; `wcc`, `cdlp` read them).
//!
//! and `DIR/parts-W/partition.json` describing it. A vertex's *name* is what messages carry:
//! - basic mode: its original id when the store has u64 ids in their original order, its dense
//!   id otherwise (string ids or a reordered store) — either way hash(name) = name mod W, and the
//!   receiver finds a message's vertex by merging the sorted message stream with A;
//! - recoded mode (`--recode`, `parts-W-recoded`): GraphD §5's recoding, name = W·pos + i for
//!   the vertex at position `pos` of rank `i`'s A, so the receiver (and the sender's combiner)
//!   find a message's slot as `pos = name / W` in memory, with no external sort.
//!
//! # The job
//! Every rank builds its own `rank-i/` in parallel ([`partition_rank`]):
//! 1. **Basic partition.** Each rank streams the whole CSR (out- and in-layout, in chunks sized
//!    from the budget) and keeps the lists of the vertices it owns. This reads the CSR W times in
//!    all (once per rank, sequentially) but sends no arc over the transport; the alternative —
//!    ranks split the vertex range and exchange arcs — reads it once but moves every arc through
//!    the network, which on one machine (the common case here) costs more than a sequential
//!    re-read from the page cache. With original u64 names, a rank also holds the table of
//!    original ids (8 bytes per vertex) to name the targets; dense names need no table.
//! 2. **Recoding** (`--recode`, [`super::recode`]): GraphD §5's 3-superstep job over the basic
//!    partition, in which no rank holds more than its own share of the names.
//!
//! The build is atomic for the whole job: every rank writes under a temporary directory named by
//! rank 0; rank 0 gathers the ranks' outcomes, and only once all of them succeeded does it write
//! `partition.json` and rename the directory into place (an older partition is replaced only
//! then). A failing rank fails the job (in-process the other ranks' transport calls fail; under
//! MPI the front end aborts the world), and rank 0 removes the temporary directory, so nothing
//! half-written looks valid. The ranks must see the store directory at the same path (one
//! machine, or a shared file system).
//!
//! # Locks
//! A pregel run holds the partition it reads ([`Store::hold_layout`], a shared lock per rank
//! process) from before it opens `partition.json` until it ends, and the store generation too
//! (every rank checks that all ranks opened the same one, [`check_same_generation`]), so
//! neither an import nor a re-partition changes files under a running rank: an import commits
//! a new generation beside the one the run reads, and a re-partition (or `layout drop`) of a
//! partition a run holds is refused with a message saying so, at the start of the job and again
//! when it would install the new partition (under the build lock, [`Store::lock_builds`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::runtime::commit::StagedDir;
use crate::runtime::{format_size, CancelToken, MemoryBudget, Progress, ProgressUnit};
use crate::store::files::StoreFileWriter;
use crate::store::{Direction, IdType, Store};
use crate::transport::{InProcessTransport, Transport};

/// Bytes of one record of `vertices`.
pub const VERTEX_RECORD_BYTES: u64 = 32;
/// Version of the partition format (2: recoded edge streams keep 4-byte names when they fit).
const FORMAT_VERSION: u32 = 2;
const DESCRIPTION_FILE: &str = "partition.json";
/// The most ranks a partition may have.
pub const MAX_RANKS: usize = 4096;

/// How vertex names are chosen (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Naming {
    /// Original u64 ids.
    Original,
    /// Dense ids (string-id or reordered stores).
    Dense,
    /// GraphD's recoded ids, W·pos + rank.
    Recoded,
}

/// What a rank's files hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankPart {
    pub vertices: u64,
    pub out_arcs: u64,
    pub in_arcs: u64,
    /// Size and checksums of the rank's files (by name in its directory): reads of them are
    /// verified against their block checksums (`store::blocks`). Absent in older partitions.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub files: std::collections::BTreeMap<String, crate::store::FileEntry>,
}

impl RankPart {
    /// The block checks of the rank's file `name` in `dir` (None for older partitions); what
    /// they verify is counted in `counters`.
    pub fn checks(
        &self,
        dir: &Path,
        name: &str,
        counters: &crate::runtime::IoCounters,
    ) -> Result<Option<std::sync::Arc<crate::store::FileChecks>>> {
        match self.files.get(name) {
            Some(entry) => {
                let checks = crate::store::FileChecks::load(&dir.join(name), entry, counters.clone())?;
                Ok(Some(std::sync::Arc::new(checks)))
            }
            None => Ok(None),
        }
    }
}

/// `partition.json`: the description of a partitioned store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionInfo {
    pub format_version: u32,
    pub ranks: usize,
    pub naming: Naming,
    pub vertices: u64,
    pub arcs: u64,
    pub directed: bool,
    pub weighted: bool,
    pub parts: Vec<RankPart>,
}

impl PartitionInfo {
    pub fn recoded(&self) -> bool {
        self.naming == Naming::Recoded
    }

    /// Bytes of a name in the edge streams.
    pub fn name_bytes(&self) -> u64 {
        name_bytes(self.recoded(), self.ranks, self.vertices)
    }

    /// Bytes of one arc in an edge stream.
    pub fn arc_bytes(&self) -> u64 {
        arc_bytes(self.recoded(), self.ranks, self.vertices, self.weighted)
    }
}

/// Bytes of one arc in the edge streams of such a partition: its name, and its weight when
/// `weighted`.
pub fn arc_bytes(recoded: bool, ranks: usize, vertices: u64, weighted: bool) -> u64 {
    name_bytes(recoded, ranks, vertices) + if weighted { 8 } else { 0 }
}

/// Bytes of a name in the edge streams of a partition into `ranks` ranks of a store of
/// `vertices` vertices: recoded names, W·pos + i < W·(|V| + 1), take 4 bytes when below 2^32
/// (halving the streams every superstep reads); basic names are original ids, 8 bytes.
pub fn name_bytes(recoded: bool, ranks: usize, vertices: u64) -> u64 {
    if recoded && (ranks as u64).saturating_mul(vertices + 1) < 1 << 32 {
        4
    } else {
        8
    }
}

/// The layout name of the partition into `ranks` ranks (`parts-W[-recoded]`).
pub fn layout_name(ranks: usize, recoded: bool) -> String {
    if recoded {
        format!("parts-{ranks}-recoded")
    } else {
        format!("parts-{ranks}")
    }
}

/// The directory of the partition of `store` into `ranks` ranks.
pub fn partition_dir(store: &Store, ranks: usize, recoded: bool) -> PathBuf {
    store.dir().join(layout_name(ranks, recoded))
}

/// The error for a replacement or drop of a partition that a run is reading.
pub fn in_use_error(store: &Store, name: &str) -> Error {
    Error::invalid(format!(
        "{name} of {} is being read by a running pregel job; replace or drop it once the job has finished",
        store.root().display()
    ))
}

/// Every rank of a job must read the same store generation (each rank process opens the store
/// itself; an import committed between two opens would give them different ones).
pub fn check_same_generation(store: &Store, t: &dyn Transport) -> Result<()> {
    let mine = store.generation().unwrap_or_default().to_string();
    let all = t.all_gather(mine.clone().into_bytes())?;
    match all.iter().position(|g| *g != mine.as_bytes()) {
        None => Ok(()),
        Some(rank) => Err(Error::store(
            store.root(),
            format!(
                "the ranks opened different generations ({mine} on rank {}, {} on rank {rank}): an import \
                 replaced the store while the job started; start it again",
                t.rank(),
                String::from_utf8_lossy(&all[rank])
            ),
        )),
    }
}

/// The directory of rank `rank` inside a partition directory.
pub fn rank_dir(parts: &Path, rank: usize) -> PathBuf {
    parts.join(format!("rank-{rank}"))
}

/// Reads and checks the partition of `store` for `ranks` ranks.
pub fn open(store: &Store, ranks: usize, recoded: bool) -> Result<PartitionInfo> {
    let dir = partition_dir(store, ranks, recoded);
    let path = dir.join(DESCRIPTION_FILE);
    let flag = if recoded { " --recode" } else { "" };
    let text = std::fs::read_to_string(&path).map_err(|_| {
        Error::store(
            &dir,
            format!(
                "no partition for {ranks} rank(s); create it with `outcore partition --store {} --ranks {ranks}{flag}`",
                store.root().display()
            ),
        )
    })?;
    let info: PartitionInfo = serde_json::from_str(&text)
        .map_err(|e| Error::store(&path, format!("unreadable partition description: {e}")))?;
    let stale = info.format_version != FORMAT_VERSION
        || info.ranks != ranks
        || info.recoded() != recoded
        || info.vertices != store.num_vertices()
        || info.arcs != store.num_arcs()
        || info.directed != store.is_directed()
        || info.weighted != store.is_weighted()
        || info.parts.len() != ranks;
    if stale {
        return Err(Error::store(
            &dir,
            format!("partition does not match the store; run `outcore partition` again{flag}"),
        ));
    }
    Ok(info)
}

/// One rank's part of a partitioning job.
pub struct PartitionJob<'a> {
    pub store: &'a Store,
    /// Write the recoded partition (`--recode`).
    pub recoded: bool,
    /// This rank's memory budget (under mpirun: the process's `--memory`; in-process the ranks
    /// share the process's budget, see [`partition_in_process`]).
    pub memory: MemoryBudget,
    /// The recoding job's sort buffers (each of the two), instead of the share of the budget
    /// they get by default; small values force the external sort to spill (tests).
    pub sort_buffer_bytes: Option<u64>,
    pub progress: &'a dyn Progress,
    pub cancel: &'a CancelToken,
}

/// What one rank did, beside the partition it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankFigures {
    pub rank: usize,
    /// Arcs of the CSR this rank streamed (every arc, in both layouts).
    pub csr_arcs_read: u64,
    /// Recoding: (name, arc) requests this rank sent in superstep 1 and answered in superstep 2.
    pub requests_sent: u64,
    pub requests_answered: u64,
    /// Recoding: sorted runs the request and answer sorts spilled to disk (0: all in memory).
    pub sort_runs_spilled: u64,
}

/// The outcome of a rank: the description of the whole partition, and its own figures.
#[derive(Debug, Clone)]
pub struct RankOutcome {
    pub info: PartitionInfo,
    pub figures: RankFigures,
}

/// Writes the partition of `store` into `ranks` ranks, run as a `ranks`-rank job in this process
/// (replacing an older partition only once the new one is complete), and returns its description.
pub fn partition(
    store: &Store,
    ranks: usize,
    recoded: bool,
    memory: MemoryBudget,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<PartitionInfo> {
    let job = PartitionJob { store, recoded, memory, sort_buffer_bytes: None, progress, cancel };
    Ok(partition_in_process(&job, ranks)?.swap_remove(0).info)
}

/// Runs the job on `ranks` threads over [`InProcessTransport`] (the same code path as the ranks
/// of `mpirun -n W`); the ranks share `job.memory` equally. Returns every rank's outcome.
pub fn partition_in_process(job: &PartitionJob<'_>, ranks: usize) -> Result<Vec<RankOutcome>> {
    check_ranks(ranks)?;
    let share = MemoryBudget::new(job.memory.bytes() / ranks as u64);
    let per_rank = PartitionJob { memory: share, ..*job };
    InProcessTransport::run(ranks, |t| partition_rank(&per_rank, t))
}

fn check_ranks(ranks: usize) -> Result<()> {
    if ranks == 0 || ranks > MAX_RANKS {
        return Err(Error::invalid(format!("--ranks must be between 1 and {MAX_RANKS}, not {ranks}")));
    }
    Ok(())
}

/// This rank's part of the partitioning job of `transport.ranks()` ranks: writes its own
/// `rank-i/`; rank 0 then publishes the whole partition (see the module docs). Every rank of
/// the job must call it with the same store and options.
pub fn partition_rank(job: &PartitionJob<'_>, t: &dyn Transport) -> Result<RankOutcome> {
    let (store, rank, ranks) = (job.store, t.rank(), t.ranks());
    check_ranks(ranks)?;
    check_same_generation(store, t)?;
    let plan = RankMemory::plan(job, ranks)?;
    let name = layout_name(ranks, job.recoded);
    let target = partition_dir(store, ranks, job.recoded);
    // One temporary name for the whole job, chosen by rank 0, which also says whether a run
    // holds the partition this job would replace (then no rank starts).
    let mut start = std::process::id().to_le_bytes().to_vec();
    if rank == 0 && target.exists() && store.try_replace_layout(&name)?.is_none() {
        start.clear();
    }
    let start = t.broadcast(0, start)?;
    let Some(nonce) = start.get(..4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes) else {
        return Err(in_use_error(store, &name));
    };
    let tmp = store.dir().join(format!(".{name}.tmp-{nonce}"));
    let outcome =
        build_rank(job, &plan, t, &tmp).and_then(|(part, figures)| publish(job, t, &tmp, &target, part, figures));
    if outcome.is_err() {
        // Every rank removes what it wrote, rank 0 the whole directory; whichever rank ends last
        // removes the directory if another rank's files came after rank 0's removal.
        let _ = std::fs::remove_dir_all(rank_dir(&tmp, rank));
        let _ = std::fs::remove_dir_all(scratch_dir(&tmp, rank));
        if rank == 0 {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        let _ = std::fs::remove_dir(&tmp);
    }
    outcome
}

/// How a rank's budget is spent.
pub(super) struct RankMemory {
    /// Arcs of a CSR chunk read at once (per layout).
    pub chunk_arcs: u64,
    /// Bytes of each of the recoding job's two sort buffers, and of each sort's merge buffers.
    pub sort_buffer_bytes: u64,
    pub merge_bytes: u64,
    /// Bytes of a batch of requests or responses to one rank.
    pub batch_bytes: usize,
}

/// The file writers (1 MiB buffers) and the small reading buffers of a rank.
const FIXED_BYTES: u64 = 4 << 20;
/// Bytes a CSR chunk costs per arc while it is read (targets and weights, decoded and raw).
const CHUNK_BYTES_PER_ARC: u64 = 32;

impl RankMemory {
    fn plan(job: &PartitionJob<'_>, ranks: usize) -> Result<RankMemory> {
        let store = job.store;
        let n = store.num_vertices();
        let table = if original_names(store)? { n * 8 } else { 0 };
        let batch_bytes = 64 << 10;
        // Per destination: a batch being filled in each of two supersteps, four in flight.
        let fixed = FIXED_BYTES + 6 * ranks as u64 * batch_bytes as u64;
        let minimum = fixed + table + 2 * 4096 * CHUNK_BYTES_PER_ARC + (1 << 20);
        let budget = job.memory.bytes();
        if budget < minimum {
            let table_note =
                if table > 0 { format!(", the table of original ids ({})", format_size(table)) } else { String::new() };
            return Err(Error::MemoryBudget(format!(
                "partitioning into {ranks} ranks needs at least {} per rank (file and message buffers{table_note} \
                 and a chunk of the CSR) but a rank's budget is {}",
                format_size(minimum),
                format_size(budget)
            )));
        }
        let chunk_arcs = ((budget - fixed - table) / 2 / CHUNK_BYTES_PER_ARC).clamp(4096, 1 << 20);
        // Recoding runs after the basic partition, whose table and chunks are freed by then: the
        // two sorts (which may fill at the same time) take half of what is left beside the
        // writers, their merges an eighth, and the rest is headroom for the batches in flight.
        let spare = budget - fixed;
        let sort_buffer_bytes = job.sort_buffer_bytes.unwrap_or(spare / 4).max(1 << 10);
        let merge_bytes = (spare / 16).max(64 << 10);
        Ok(RankMemory { chunk_arcs, sort_buffer_bytes, merge_bytes, batch_bytes })
    }
}

/// Whether basic names are the original u64 ids (see the module docs).
fn original_names(store: &Store) -> Result<bool> {
    Ok(store.manifest().orderings.last().is_none_or(|o| o == "none") && store.ids()?.id_type() == IdType::U64)
}

/// Writes this rank's files under `tmp` (through a basic scratch partition when recoding).
fn build_rank(
    job: &PartitionJob<'_>,
    plan: &RankMemory,
    t: &dyn Transport,
    tmp: &Path,
) -> Result<(RankPart, RankFigures)> {
    let rank = t.rank();
    let mut figures = RankFigures { rank, ..RankFigures::default() };
    if !job.recoded {
        let part = write_basic_rank(job, plan, t, &rank_dir(tmp, rank), &mut figures)?;
        return Ok((part, figures));
    }
    let scratch = scratch_dir(tmp, rank);
    let basic = write_basic_rank(job, plan, t, &scratch, &mut figures)?;
    let recoding = super::recode::RecodeRank {
        transport: t,
        basic_dir: &scratch,
        basic: &basic,
        out_dir: &rank_dir(tmp, rank),
        directed: job.store.is_directed(),
        weighted: job.store.is_weighted(),
        name_bytes: name_bytes(true, t.ranks(), job.store.num_vertices()) as usize,
        counters: job.store.counters(),
        memory: plan,
        progress: job.progress,
        cancel: job.cancel,
    };
    let files = recoding.run(&mut figures)?;
    std::fs::remove_dir_all(&scratch).context(|| format!("removing {}", scratch.display()))?;
    // The recoded files are new: their own checksum entries replace the basic files'.
    Ok((RankPart { files, ..basic }, figures))
}

/// Where a rank writes its basic partition before recoding it.
fn scratch_dir(tmp: &Path, rank: usize) -> PathBuf {
    tmp.join(format!(".basic-{rank}"))
}

/// Rank 0 gathers every rank's part, writes `partition.json` and renames the partition into
/// place once every rank has finished; every rank returns the description.
fn publish(
    job: &PartitionJob<'_>,
    t: &dyn Transport,
    tmp: &Path,
    target: &Path,
    mine: RankPart,
    figures: RankFigures,
) -> Result<RankOutcome> {
    let store = job.store;
    let parts = t
        .all_gather(serde_json::to_vec(&mine).expect("a rank part serialises"))?
        .iter()
        .enumerate()
        .map(|(rank, bytes)| {
            serde_json::from_slice(bytes)
                .map_err(|e| Error::Remote { rank: Some(rank), message: format!("unreadable rank part: {e}") })
        })
        .collect::<Result<Vec<RankPart>>>()?;
    let naming = if job.recoded {
        Naming::Recoded
    } else if original_names(store)? {
        Naming::Original
    } else {
        Naming::Dense
    };
    let info = PartitionInfo {
        format_version: FORMAT_VERSION,
        ranks: t.ranks(),
        naming,
        vertices: store.num_vertices(),
        arcs: store.num_arcs(),
        directed: store.is_directed(),
        weighted: store.is_weighted(),
        parts,
    };
    let published = if t.rank() == 0 { install(store, &info, tmp, target).map_err(|e| e.to_string()) } else { Ok(()) };
    // Every rank learns whether rank 0 published the partition.
    let status = t.broadcast(0, published.err().unwrap_or_default().into_bytes())?;
    if !status.is_empty() {
        return Err(Error::Remote { rank: Some(0), message: String::from_utf8_lossy(&status).into_owned() });
    }
    Ok(RankOutcome { info, figures })
}

/// Rank 0: writes the description and renames the complete partition into place.
fn install(store: &Store, info: &PartitionInfo, tmp: &Path, target: &Path) -> Result<()> {
    let json = serde_json::to_vec_pretty(info).expect("partition description serialises");
    crate::store::files::write_atomic(&tmp.join(DESCRIPTION_FILE), &json)
        .context(|| format!("writing {}", tmp.join(DESCRIPTION_FILE).display()))?;
    let _building = store.lock_builds()?;
    let name = target.file_name().expect("a partition directory has a name").to_string_lossy().to_string();
    let Some(_replacing) = store.try_replace_layout(&name)? else {
        return Err(in_use_error(store, &name));
    };
    StagedDir::adopt(tmp.to_path_buf(), target).commit()
}

/// The basic-mode files of this rank: streams the whole CSR and keeps its own vertices.
fn write_basic_rank(
    job: &PartitionJob<'_>,
    plan: &RankMemory,
    t: &dyn Transport,
    dir: &Path,
    figures: &mut RankFigures,
) -> Result<RankPart> {
    let (store, rank, ranks) = (job.store, t.rank() as u64, t.ranks() as u64);
    let directed = store.is_directed();
    let counters = store.counters().clone();
    let names = if original_names(store)? { Some(store.ids()?.all_u64()?) } else { None };
    let name_of = |v: u64| names.as_ref().map_or(v, |names| names[v as usize]);
    let mut vertices = StoreFileWriter::create(&dir.join("vertices"), counters.clone())?;
    let mut out = StoreFileWriter::create(&dir.join("edges-out"), counters.clone())?;
    let mut inn = if directed { Some(StoreFileWriter::create(&dir.join("edges-in"), counters.clone())?) } else { None };
    let mut part = RankPart { vertices: 0, out_arcs: 0, in_arcs: 0, files: Default::default() };

    let total = store.num_arcs() * if directed { 2 } else { 1 };
    let bar = job.progress.start(&format!("partitioning (rank {rank})"), Some(total), ProgressUnit::Edges);
    let mut out_lists = SequentialLists::new(store, Direction::Out, plan.chunk_arcs)?;
    let mut in_lists = if directed { Some(SequentialLists::new(store, Direction::In, plan.chunk_arcs)?) } else { None };
    let mut record = Vec::with_capacity(32);
    let mut arc = Vec::with_capacity(16);
    for v in 0..store.num_vertices() {
        if v % 65536 == 0 {
            job.cancel.check()?;
        }
        let mine = name_of(v) % ranks == rank;
        let (out_targets, out_weights) = out_lists.next_list()?;
        let out_degree = out_targets.len() as u64;
        bar.inc(out_degree);
        figures.csr_arcs_read += out_degree;
        if mine {
            write_list(&mut out, out_targets, out_weights, &name_of, &mut arc)?;
        }
        let mut in_degree = 0;
        if let (Some(lists), Some(inn)) = (in_lists.as_mut(), inn.as_mut()) {
            let (targets, weights) = lists.next_list()?;
            in_degree = targets.len() as u64;
            bar.inc(in_degree);
            figures.csr_arcs_read += in_degree;
            if mine {
                write_list(inn, targets, weights, &name_of, &mut arc)?;
            }
        }
        if !mine {
            continue;
        }
        part.out_arcs += out_degree;
        part.in_arcs += in_degree;
        record.clear();
        for x in [name_of(v), v, out_degree, in_degree] {
            record.extend_from_slice(&x.to_le_bytes());
        }
        vertices.write_all(&record)?;
        part.vertices += 1;
    }
    bar.finish();
    part.files.insert("vertices".into(), vertices.finish()?);
    part.files.insert("edges-out".into(), out.finish()?);
    if let Some(inn) = inn {
        part.files.insert("edges-in".into(), inn.finish()?);
    }
    Ok(part)
}

fn write_list(
    out: &mut StoreFileWriter,
    targets: &[u64],
    weights: Option<&[f64]>,
    name_of: &dyn Fn(u64) -> u64,
    arc: &mut Vec<u8>,
) -> Result<()> {
    arc.clear();
    for (i, &t) in targets.iter().enumerate() {
        arc.extend_from_slice(&name_of(t).to_le_bytes());
        if let Some(w) = weights {
            arc.extend_from_slice(&w[i].to_le_bytes());
        }
    }
    out.write_all(arc)
}

/// Reads the adjacency lists of a CSR layout in vertex order, a chunk of about 1 Mi arcs at a
/// time (so memory stays small however large the graph is).
struct SequentialLists {
    layout: crate::store::CsrLayout,
    next_vertex: u64,
    offsets: Vec<u64>,
    /// Index in `offsets` of `next_vertex`.
    at: usize,
    targets: Vec<u64>,
    weights: Vec<f64>,
    /// Arc index of `targets[0]`.
    chunk_first_arc: u64,
    /// Arcs read at once (at least, more for a longer list).
    chunk_arcs: u64,
}

const CHUNK_VERTICES: u64 = 1 << 16;

impl SequentialLists {
    fn new(store: &Store, direction: Direction, chunk_arcs: u64) -> Result<Self> {
        Ok(SequentialLists {
            layout: store.csr(direction)?,
            next_vertex: 0,
            offsets: Vec::new(),
            at: 0,
            targets: Vec::new(),
            weights: Vec::new(),
            chunk_first_arc: 0,
            chunk_arcs,
        })
    }

    fn next_list(&mut self) -> Result<(&[u64], Option<&[f64]>)> {
        if self.at + 1 >= self.offsets.len() {
            let count = CHUNK_VERTICES.min(self.layout.vertices - self.next_vertex);
            self.offsets.resize(count as usize + 1, 0);
            self.layout.read_offsets(self.next_vertex, &mut self.offsets)?;
            self.at = 0;
            self.targets.clear();
            self.chunk_first_arc = self.offsets[0];
        }
        let (start, end) = (self.offsets[self.at], self.offsets[self.at + 1]);
        let loaded_end = self.chunk_first_arc + self.targets.len() as u64;
        if end > loaded_end {
            // Load from `start` up to the end of the vertex chunk or `chunk_arcs`, whichever is later
            // than `end`.
            let chunk_end = self.offsets[self.offsets.len() - 1].min(start + self.chunk_arcs).max(end);
            self.layout.read_targets(start, chunk_end - start, &mut self.targets)?;
            if let Some(file) = &self.layout.weights {
                let mut bytes = vec![0u8; ((chunk_end - start) * 8) as usize];
                file.read_exact_at(&mut bytes, start * 8)?;
                self.weights = crate::store::files::f64s_from_le_bytes(&bytes);
            }
            self.chunk_first_arc = start;
        }
        self.at += 1;
        self.next_vertex += 1;
        let (a, b) = ((start - self.chunk_first_arc) as usize, (end - self.chunk_first_arc) as usize);
        let weights = self.layout.weights.as_ref().map(|_| &self.weights[a..b]);
        Ok((&self.targets[a..b], weights))
    }
}
