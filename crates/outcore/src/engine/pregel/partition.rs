//! Partitioning a store for the `pregel` engine: `outcore partition --store DIR --ranks W [--recode]`.
//!
//! GraphD §3.1: every rank owns the vertices with hash(v) = id(v) mod W; on its local disk it
//! keeps the state array A of its vertices and its edge stream S^E, the adjacency lists of those
//! vertices concatenated in the order of A. This module writes, for every rank `i`,
//! `DIR/parts-W/rank-i/`:
//!
//! - `vertices`: one 32-byte record per owned vertex, in ascending name order:
//!   `name u64 · dense id u64 · out-degree u64 · in-degree u64` (little endian);
//! - `edges-out`: the out-lists in that order, one `name u64` per arc, followed by `weight f64`
//!   on weighted stores;
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
//! GraphD computes the recoded names with a 3-superstep job over the basic partition; this
//! single-process partitioner reaches the same names directly from a table of |V| names (8 bytes
//! per vertex, checked against the budget) while streaming the CSR once. The whole directory is
//! written under a temporary name and renamed into place when complete.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::runtime::{format_size, CancelToken, MemoryBudget, Progress, ProgressUnit};
use crate::store::files::StoreFileWriter;
use crate::store::{Direction, IdType, Store};

/// Bytes of one record of `vertices`.
pub const VERTEX_RECORD_BYTES: u64 = 32;
/// Version of the partition format.
const FORMAT_VERSION: u32 = 1;
const DESCRIPTION_FILE: &str = "partition.json";

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

    /// Bytes of one arc in an edge stream.
    pub fn arc_bytes(&self) -> u64 {
        if self.weighted {
            16
        } else {
            8
        }
    }
}

/// The directory of the partition of `store` into `ranks` ranks.
pub fn partition_dir(store: &Store, ranks: usize, recoded: bool) -> PathBuf {
    store.dir().join(if recoded { format!("parts-{ranks}-recoded") } else { format!("parts-{ranks}") })
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
                store.dir().display()
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

/// Writes the partition of `store` into `ranks` ranks (replacing an older one only once the new
/// one is complete) and returns its description.
pub fn partition(
    store: &Store,
    ranks: usize,
    recoded: bool,
    memory: MemoryBudget,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<PartitionInfo> {
    if ranks == 0 || ranks > 4096 {
        return Err(Error::invalid(format!("--ranks must be between 1 and 4096, not {ranks}")));
    }
    let n = store.num_vertices();
    let buffers = 2 * ranks as u64 * (1 << 20) + (4 << 20);
    let needed = n * 8 + buffers;
    if needed > memory.bytes() {
        return Err(Error::MemoryBudget(format!(
            "partitioning {n} vertices into {ranks} ranks needs about {} (a name per vertex and a 1 MiB buffer \
             per rank file) but the budget is {memory}",
            format_size(needed)
        )));
    }
    let names = vertex_names(store, ranks, recoded)?;
    let naming = if recoded {
        Naming::Recoded
    } else if store.manifest().orderings.last().map_or(true, |o| o == "none") && store.ids()?.id_type() == IdType::U64 {
        Naming::Original
    } else {
        Naming::Dense
    };

    let target = partition_dir(store, ranks, recoded);
    let tmp =
        store.dir().join(format!(".{}.tmp-{}", target.file_name().unwrap().to_string_lossy(), std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let built = write_parts(store, ranks, naming, &names, &tmp, progress, cancel);
    let info = match built {
        Ok(info) => info,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    // Replace an older partition only now that the new one is complete.
    let old =
        store.dir().join(format!(".{}.old-{}", target.file_name().unwrap().to_string_lossy(), std::process::id()));
    if target.exists() {
        std::fs::rename(&target, &old).context(|| format!("moving aside {}", target.display()))?;
    }
    std::fs::rename(&tmp, &target).context(|| format!("renaming {} into place", tmp.display()))?;
    let _ = std::fs::remove_dir_all(&old);
    crate::store::files::sync_dir(store.dir()).context(|| format!("syncing {}", store.dir().display()))?;
    Ok(info)
}

/// The name of every vertex, by dense id.
fn vertex_names(store: &Store, ranks: usize, recoded: bool) -> Result<Vec<u64>> {
    let n = store.num_vertices();
    let original_order = store.manifest().orderings.last().map_or(true, |o| o == "none");
    let ids = store.ids()?;
    let basic = if original_order && ids.id_type() == IdType::U64 { ids.all_u64()? } else { (0..n).collect() };
    if !recoded {
        return Ok(basic);
    }
    // GraphD §5: the vertex at position `pos` of rank `i`'s array (owned by basic hash, in name
    // order, which is dense order) is renamed W·pos + i.
    let w = ranks as u64;
    let mut next_position = vec![0u64; ranks];
    Ok(basic
        .into_iter()
        .map(|name| {
            let rank = name % w;
            let position = next_position[rank as usize];
            next_position[rank as usize] += 1;
            w * position + rank
        })
        .collect())
}

struct RankWriters {
    vertices: StoreFileWriter,
    out: StoreFileWriter,
    inn: Option<StoreFileWriter>,
    part: RankPart,
}

fn write_parts(
    store: &Store,
    ranks: usize,
    naming: Naming,
    names: &[u64],
    dir: &Path,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<PartitionInfo> {
    let directed = store.is_directed();
    let weighted = store.is_weighted();
    let counters = store.counters().clone();
    let mut writers = (0..ranks)
        .map(|r| {
            let rd = rank_dir(dir, r);
            Ok(RankWriters {
                vertices: StoreFileWriter::create(&rd.join("vertices"), counters.clone())?,
                out: StoreFileWriter::create(&rd.join("edges-out"), counters.clone())?,
                inn: if directed {
                    Some(StoreFileWriter::create(&rd.join("edges-in"), counters.clone())?)
                } else {
                    None
                },
                part: RankPart { vertices: 0, out_arcs: 0, in_arcs: 0 },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Which rank owns a vertex: its basic name mod W (for recoded names the same rank).
    let owner = |v: u64| (names[v as usize] % ranks as u64) as usize;

    let bar =
        progress.start("partitioning", Some(store.num_arcs() * if directed { 2 } else { 1 }), ProgressUnit::Edges);
    // Vertex records need both degrees: read the in-degrees first from the in-layout offsets.
    let in_degrees = if directed { Some(SequentialLists::new(store, Direction::In)?) } else { None };
    let mut out_lists = SequentialLists::new(store, Direction::Out)?;
    let mut in_lists = in_degrees;
    let mut record = Vec::with_capacity(32);
    let mut arc = Vec::with_capacity(16);
    for v in 0..store.num_vertices() {
        if v % 65536 == 0 {
            cancel.check()?;
        }
        let w = &mut writers[owner(v)];
        let (out_targets, out_weights) = out_lists.next_list()?;
        let out_degree = out_targets.len() as u64;
        write_list(&mut w.out, out_targets, out_weights, names, &mut arc)?;
        w.part.out_arcs += out_degree;
        bar.inc(out_degree);
        let mut in_degree = 0;
        if let (Some(lists), Some(inn)) = (in_lists.as_mut(), w.inn.as_mut()) {
            let (targets, weights) = lists.next_list()?;
            in_degree = targets.len() as u64;
            write_list(inn, targets, weights, names, &mut arc)?;
            w.part.in_arcs += in_degree;
            bar.inc(in_degree);
        }
        record.clear();
        for x in [names[v as usize], v, out_degree, in_degree] {
            record.extend_from_slice(&x.to_le_bytes());
        }
        w.vertices.write_all(&record)?;
        w.part.vertices += 1;
    }
    bar.finish();
    let mut parts = Vec::with_capacity(ranks);
    for w in writers {
        w.vertices.finish()?;
        w.out.finish()?;
        if let Some(inn) = w.inn {
            inn.finish()?;
        }
        parts.push(w.part);
    }
    let info = PartitionInfo {
        format_version: FORMAT_VERSION,
        ranks,
        naming,
        vertices: store.num_vertices(),
        arcs: store.num_arcs(),
        directed,
        weighted,
        parts,
    };
    let json = serde_json::to_vec_pretty(&info).expect("partition description serialises");
    crate::store::files::write_atomic(&dir.join(DESCRIPTION_FILE), &json)
        .context(|| format!("writing {}", dir.join(DESCRIPTION_FILE).display()))?;
    Ok(info)
}

fn write_list(
    out: &mut StoreFileWriter,
    targets: &[u64],
    weights: Option<&[f64]>,
    names: &[u64],
    arc: &mut Vec<u8>,
) -> Result<()> {
    arc.clear();
    for (i, &t) in targets.iter().enumerate() {
        arc.extend_from_slice(&names[t as usize].to_le_bytes());
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
}

const CHUNK_VERTICES: u64 = 1 << 16;
const CHUNK_ARCS: u64 = 1 << 20;

impl SequentialLists {
    fn new(store: &Store, direction: Direction) -> Result<Self> {
        Ok(SequentialLists {
            layout: store.csr(direction)?,
            next_vertex: 0,
            offsets: Vec::new(),
            at: 0,
            targets: Vec::new(),
            weights: Vec::new(),
            chunk_first_arc: 0,
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
            // Load from `start` up to the end of the vertex chunk or CHUNK_ARCS, whichever is later
            // than `end`.
            let chunk_end = self.offsets[self.offsets.len() - 1].min(start + CHUNK_ARCS).max(end);
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
