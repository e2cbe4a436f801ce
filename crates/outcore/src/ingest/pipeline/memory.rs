//! The in-memory path of the import: taken when the edges, their dense form and both CSR
//! layouts fit the memory budget, so that nothing is sorted externally and no temporary byte
//! is written.
//!
//! ```text
//! records --read--> HeldEdges (original ids, fixed-size chunks)
//!   --ids-->  distinct ids: a bitmap over [min, max] with a rank per 64-bit word when numeric ids
//!             are dense enough, else a parallel sort + dedup; dense id = rank (as on the
//!             external path), written as ids/original
//!   --map-->  (u32, u32) dense pairs, chunk by chunk in parallel (each original chunk freed
//!             as soon as it is mapped)
//!   --csr-out--> counting sort by source: degrees (per thread) -> offsets -> parallel
//!             stable scatter, then each list sorted by (target, weight bits) and deduplicated
//!   --csr-in-->  the same counting sort of csr-out by target (directed graphs); being
//!             stable, it needs no list sort; csr-out is written meanwhile
//! ```
//!
//! The store is byte for byte the one the external path writes: dense ids are ranks of the same
//! order, every list ends up in the same (other end, weight bits) order, and duplicates and
//! self-loops follow the same rules (a duplicate keeps the smallest weight; an undirected edge
//! counts once, at its arc with source ≤ target). Counting sorts replace the comparison sorts
//! of all arcs because the keys are dense ids below |V|: a degree array gives every list its
//! place, and only the short lists themselves are sorted.
//!
//! **Memory.** [`HeldEdges::peak_bytes`] estimates the peak of every later step from what has
//! been read so far (held edges plus id structures, dense pairs plus csr-out, csr-out plus
//! csr-in); the reading loop checks it after each batch against the plan's share for this
//! path and, when it no longer fits, hands everything held to the external sorts
//! ([`HeldEdges::spill_into`]) and goes on reading: the input is read once either way.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as AtomicOrdering};

use rayon::prelude::*;

use super::{
    ArcTally, EdgeBySource, EdgeWeight, ExternalSorter, GraphShape, IdKey, Import, ProgressUnit, Result, StoreBuilder,
};
use crate::store::csr::max_degree;
use crate::store::ids::ORIGINAL_U64;

/// Numeric ids use the bitmap when their range is at most this many times the number of
/// endpoints read (beyond that, the bitmap's scan and size stop paying for themselves).
const BITMAP_RANGE_PER_ENDPOINT: u64 = 16;

/// Edges read into memory in original ids, in chunks of a fixed capacity (no reallocation,
/// and the mapping step frees them one by one), with what is needed to decide the id map.
pub(super) struct HeldEdges<K, W> {
    chunks: Vec<Vec<EdgeBySource<K, W>>>,
    /// Ids of vertex records and of dropped self-loops: vertices even without an edge.
    vertices: Vec<K>,
    chunk_edges: usize,
    edges: u64,
    /// Heap bytes owned by string ids.
    heap_bytes: u64,
    /// Smallest and largest numeric id seen (u64 ids only).
    range: Option<(u64, u64)>,
    directed: bool,
}

impl<K: IdKey, W: EdgeWeight> HeldEdges<K, W> {
    pub(super) fn new(chunk_edges: usize, directed: bool) -> Self {
        HeldEdges {
            chunks: Vec::new(),
            vertices: Vec::new(),
            chunk_edges: chunk_edges.max(1),
            edges: 0,
            heap_bytes: 0,
            range: None,
            directed,
        }
    }

    fn note_id(&mut self, id: &K) {
        if let Some(value) = id.as_u64() {
            self.range = Some(match self.range {
                Some((low, high)) => (low.min(value), high.max(value)),
                None => (value, value),
            });
        }
        self.heap_bytes += id.heap_bytes() as u64;
    }

    #[inline]
    pub(super) fn push_edge(&mut self, edge: EdgeBySource<K, W>) {
        self.note_id(&edge.source);
        self.note_id(&edge.target);
        if self.chunks.last().is_none_or(|chunk| chunk.len() == self.chunk_edges) {
            self.chunks.push(Vec::with_capacity(self.chunk_edges));
        }
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.push(edge);
        }
        self.edges += 1;
    }

    pub(super) fn push_vertex(&mut self, id: K) {
        self.note_id(&id);
        self.vertices.push(id);
    }

    fn endpoints(&self) -> u64 {
        2 * self.edges + self.vertices.len() as u64
    }

    /// Whether the ids will be mapped through a bitmap over their range.
    fn uses_bitmap(&self) -> bool {
        match self.range {
            Some((low, high)) => high - low < self.endpoints().max(1) * BITMAP_RANGE_PER_ENDPOINT,
            None => false,
        }
    }

    /// The peak memory of the in-memory build if the input ended here: the largest of (held
    /// edges + id map + mapping in flight), (dense pairs + csr-out) and (csr-out + csr-in).
    pub(super) fn peak_bytes(&self) -> u64 {
        let size = |bytes: usize| bytes as u64;
        let held = self.chunks.len() as u64 * self.chunk_edges as u64 * size(size_of::<EdgeBySource<K, W>>())
            + size(self.vertices.capacity() * size_of::<K>())
            + self.heap_bytes;
        let endpoints = self.endpoints();
        let (id_map, vertices) = match self.range {
            Some((low, high)) if self.uses_bitmap() => ((high - low) / 4 + 64, (high - low + 1).min(endpoints)),
            // A sort of every endpoint (by value or by reference) and the distinct ids.
            _ => (endpoints * (K::SORT_BYTES + size(size_of::<K>())), endpoints),
        };
        let threads = rayon::current_num_threads() as u64;
        let pair = size(size_of::<DensePair<W>>());
        let in_flight = threads * self.chunk_edges as u64 * pair;
        let arcs = if self.directed { self.edges } else { 2 * self.edges };
        // Offsets and cursors, both (|V| + 1) u64, and a u32 target (+ weight) per arc.
        // Offsets, a u32 count per vertex and thread, a u32 target (+ weight) per arc.
        let csr = |arcs: u64| (8 + 4 * threads) * (vertices + 1) + arcs * (4 + W::CELL_BYTES);
        let read = held + id_map + in_flight;
        let out = self.edges * pair + csr(arcs);
        let both = if self.directed { 2 * csr(arcs) } else { csr(arcs) };
        read.max(out).max(both)
    }

    /// Whether dense ids are sure to fit in u32: |V| ≤ endpoints.
    pub(super) fn dense_ids_fit_u32(&self) -> bool {
        self.endpoints() < u32::MAX as u64
    }

    /// Gives everything held to the external sorts, chunk by chunk (each chunk is freed once
    /// consumed): the edges are pushed into the edge sort, whose buffer grows as the chunks
    /// shrink, so its runs have their usual size; the endpoints become deduplicated runs of
    /// the id sort, collected up to `ids_run_bytes` at a time (the only memory the switch adds).
    pub(super) fn spill_into(
        self,
        edges: &mut ExternalSorter<EdgeBySource<K, W>>,
        ids: &mut ExternalSorter<K>,
        ids_run_bytes: u64,
    ) -> Result<()> {
        let ids_per_run = (ids_run_bytes / size_of::<K>() as u64).max(2) as usize;
        let mut endpoints: Vec<K> = Vec::new();
        for chunk in self.chunks {
            for edge in chunk {
                if endpoints.len() + 2 > ids_per_run {
                    ids.spill_records(std::mem::take(&mut endpoints))?;
                }
                endpoints.push(edge.source.clone());
                if edge.target != edge.source {
                    endpoints.push(edge.target.clone());
                }
                edges.push(edge)?;
            }
        }
        ids.spill_records(endpoints)?;
        ids.spill_records(self.vertices)
    }
}

/// An edge in dense ids.
#[derive(Clone, Copy)]
struct DensePair<W> {
    source: u32,
    target: u32,
    weight: W,
}

/// The map from original ids to dense ids (ranks).
enum DenseIds<K> {
    Bitmap(RankBitmap),
    Sorted(Vec<K>),
}

impl<K: IdKey> DenseIds<K> {
    fn build<W: EdgeWeight>(held: &HeldEdges<K, W>) -> Self {
        match held.range {
            Some((low, high)) if held.uses_bitmap() => DenseIds::Bitmap(RankBitmap::build(low, high, held)),
            _ => DenseIds::Sorted(K::sorted_distinct(&held.chunks, &held.vertices)),
        }
    }

    fn len(&self) -> u64 {
        match self {
            DenseIds::Bitmap(bitmap) => bitmap.len(),
            DenseIds::Sorted(ids) => ids.len() as u64,
        }
    }

    /// The dense id of an id that is in the map (every endpoint is, by construction).
    #[inline]
    fn dense(&self, id: &K) -> u32 {
        match self {
            DenseIds::Bitmap(bitmap) => bitmap.rank(id.as_u64().unwrap_or_default()) as u32,
            DenseIds::Sorted(ids) => ids.binary_search(id).expect("every endpoint is in the id map") as u32,
        }
    }

    /// Writes `ids/original` (or `ids/strings.*`) and `ids/by-original`.
    fn write(&self, builder: &mut StoreBuilder) -> Result<()> {
        match self {
            DenseIds::Bitmap(bitmap) => write_u64_ids(builder, bitmap.ids())?,
            DenseIds::Sorted(ids) => K::write_sorted_ids(builder, ids)?,
        }
        builder.write_by_original(0..self.len())
    }
}

/// Numeric ids in `[min, min + 64 × words.len())`: a bit per possible id, and the number of
/// ids below each 64-bit word, so the rank of an id is one lookup and one popcount (for a graph
/// like RMAT-22, 4 M possible ids: 1 MiB that stays in cache).
struct RankBitmap {
    min: u64,
    words: Vec<u64>,
    ranks: Vec<u64>,
}

impl RankBitmap {
    fn build<K: IdKey, W: EdgeWeight>(min: u64, max: u64, held: &HeldEdges<K, W>) -> Self {
        let bits: Vec<AtomicU64> = (0..=((max - min) >> 6)).map(|_| AtomicU64::new(0)).collect();
        let set = |id: &K| {
            let offset = id.as_u64().unwrap_or(min) - min;
            let (word, bit) = (&bits[(offset >> 6) as usize], 1u64 << (offset & 63));
            // Most endpoints repeat a vertex already seen: a plain load, no atomic write.
            if word.load(AtomicOrdering::Relaxed) & bit == 0 {
                word.fetch_or(bit, AtomicOrdering::Relaxed);
            }
        };
        held.chunks.par_iter().for_each(|chunk| {
            for edge in chunk {
                set(&edge.source);
                set(&edge.target);
            }
        });
        held.vertices.iter().for_each(set);
        let words: Vec<u64> = bits.into_iter().map(AtomicU64::into_inner).collect();
        let mut ranks = Vec::with_capacity(words.len() + 1);
        let mut below = 0u64;
        for word in &words {
            ranks.push(below);
            below += word.count_ones() as u64;
        }
        ranks.push(below);
        RankBitmap { min, words, ranks }
    }

    fn len(&self) -> u64 {
        self.ranks.last().copied().unwrap_or(0)
    }

    #[inline]
    fn rank(&self, id: u64) -> u64 {
        let offset = id - self.min;
        let word = (offset >> 6) as usize;
        let below_in_word = self.words[word] & ((1u64 << (offset & 63)) - 1);
        self.ranks[word] + below_in_word.count_ones() as u64
    }

    /// The ids in ascending order.
    fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(move |(index, &word)| {
            let base = self.min + 64 * index as u64;
            BitsOf(word).map(move |bit| base + bit as u64)
        })
    }
}

/// The set bits of a word, lowest first.
struct BitsOf(u64);

impl Iterator for BitsOf {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

/// Writes `ids/original` from ascending u64 ids, in 1 MiB chunks.
pub(super) fn write_u64_ids(builder: &mut StoreBuilder, ids: impl Iterator<Item = u64>) -> Result<()> {
    const CHUNK_BYTES: usize = 1 << 20;
    let mut file = builder.create_file(ORIGINAL_U64)?;
    let mut chunk: Vec<u8> = Vec::with_capacity(CHUNK_BYTES);
    for id in ids {
        chunk.extend_from_slice(&id.to_le_bytes());
        if chunk.len() == CHUNK_BYTES {
            file.write_all(&chunk)?;
            chunk.clear();
        }
    }
    file.write_all(&chunk)?;
    let entry = file.finish()?;
    builder.add_file(ORIGINAL_U64, entry);
    Ok(())
}

/// One CSR layout in memory: `offsets` (|V| + 1), and per arc the other end and the weight.
struct Csr<W> {
    offsets: Vec<u64>,
    targets: Vec<u32>,
    weights: Vec<W>,
}

/// Arcs to count-sort, in parts processed in parallel: `each(part, f)` calls
/// `f(grouping vertex, other end, weight)` for every arc of the part.
trait ArcParts<W>: Sync {
    fn parts(&self) -> usize;
    fn each(&self, part: usize, f: impl FnMut(u32, u32, W));
}

/// The edges in dense ids as arcs by source: both directions of an undirected edge (a
/// self-loop once).
struct PairArcs<'a, W> {
    chunks: &'a [Vec<DensePair<W>>],
    directed: bool,
}

impl<W: EdgeWeight> ArcParts<W> for PairArcs<'_, W> {
    fn parts(&self) -> usize {
        self.chunks.len()
    }
    #[inline]
    fn each(&self, part: usize, mut f: impl FnMut(u32, u32, W)) {
        for pair in &self.chunks[part] {
            f(pair.source, pair.target, pair.weight);
            if !self.directed && pair.source != pair.target {
                f(pair.target, pair.source, pair.weight);
            }
        }
    }
}

/// The arcs of a CSR layout grouped by their other end (csr-in from csr-out).
struct ReversedCsr<'a, W> {
    csr: &'a Csr<W>,
    parts: Vec<(usize, usize)>,
}

impl<W: EdgeWeight> ArcParts<W> for ReversedCsr<'_, W> {
    fn parts(&self) -> usize {
        self.parts.len()
    }
    #[inline]
    fn each(&self, part: usize, mut f: impl FnMut(u32, u32, W)) {
        let (first, end) = self.parts[part];
        for vertex in first..end {
            let (start, stop) = (self.csr.offsets[vertex] as usize, self.csr.offsets[vertex + 1] as usize);
            for at in start..stop {
                f(self.csr.targets[at], vertex as u32, self.csr.weights[at]);
            }
        }
    }
}

/// Splits vertices `0..offsets.len() - 1` into about `parts` ranges of similar arc counts.
fn balanced_parts(offsets: &[u64], parts: usize) -> Vec<(usize, usize)> {
    let vertices = offsets.len().saturating_sub(1);
    let total = offsets.last().copied().unwrap_or(0);
    let step = total.div_ceil(parts.max(1) as u64).max(1);
    let mut ranges = Vec::with_capacity(parts + 1);
    let mut first = 0;
    while first < vertices {
        let goal = offsets[first] + step;
        // The first vertex whose list starts at or after the goal ends this range.
        let end = (first + offsets[first..vertices].partition_point(|&o| o < goal)).max(first + 1);
        ranges.push((first, end));
        first = end;
    }
    ranges
}

/// Counting sort of the arcs by grouping vertex, one group of consecutive parts per thread:
/// each group counts its arcs per vertex in its own array (no atomic increments), the counts
/// give every group its own cursor into every list, and the groups scatter in parallel to
/// disjoint places. The scatter is stable (parts in order), so lists keep the order of the
/// parts; with `sort_lists` every list is then sorted by (other end, weight bits).
fn count_sort<W: EdgeWeight>(vertices: usize, arcs: &impl ArcParts<W>, sort_lists: bool) -> Csr<W> {
    let parts = arcs.parts();
    let groups = group_count(parts);
    let group_parts = |group: usize| (group * parts / groups)..((group + 1) * parts / groups);
    // In-memory imports hold fewer than 2^32 arcs: u32 counts and cursors suffice.
    let mut cursors: Vec<Vec<u32>> = (0..groups)
        .into_par_iter()
        .map(|group| {
            let mut counts = vec![0u32; vertices];
            for part in group_parts(group) {
                arcs.each(part, |from, _, _| counts[from as usize] += 1);
            }
            counts
        })
        .collect();
    let mut offsets = Vec::with_capacity(vertices + 1);
    let mut total = 0u64;
    for vertex in 0..vertices {
        offsets.push(total);
        for counts in cursors.iter_mut() {
            let count = counts[vertex];
            counts[vertex] = total as u32;
            total += count as u64;
        }
    }
    offsets.push(total);
    // Relaxed atomic stores compile to plain stores: they only let the groups share the arrays.
    let targets: Vec<AtomicU32> = (0..total).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    let weights = W::cells(total as usize);
    cursors.par_iter_mut().enumerate().for_each(|(group, cursors)| {
        for part in group_parts(group) {
            arcs.each(part, |from, other, weight| {
                let at = cursors[from as usize];
                cursors[from as usize] = at + 1;
                targets[at as usize].store(other, AtomicOrdering::Relaxed);
                W::store(&weights[at as usize], weight);
            })
        }
    });
    drop(cursors);
    let targets: Vec<u32> = targets.into_iter().map(AtomicU32::into_inner).collect();
    let mut csr = Csr { offsets, targets, weights: W::from_cells(weights) };
    if sort_lists {
        for_each_list(&mut csr, |_, targets, weights, scratch| {
            W::sort_list(targets, weights, scratch);
            targets.len()
        });
    }
    csr
}

/// Groups of parts in a counting sort: one per thread, each with a u32 count per vertex.
fn group_count(parts: usize) -> usize {
    rayon::current_num_threads().min(parts).max(1)
}

/// Runs `f(vertex, targets, weights, scratch)` on every list in parallel; `f` returns how many
/// of the list's arcs it keeps at the front. Lists that shrank are then closed up.
fn for_each_list<W: EdgeWeight>(
    csr: &mut Csr<W>,
    f: impl Fn(u32, &mut [u32], &mut [W], &mut Vec<(u32, u64)>) -> usize + Sync,
) -> Vec<u64> {
    let parts = balanced_parts(&csr.offsets, 8 * rayon::current_num_threads());
    let mut pieces = Vec::with_capacity(parts.len());
    let (mut targets, mut weights) = (&mut csr.targets[..], &mut csr.weights[..]);
    for &(first, end) in &parts {
        let len = (csr.offsets[end] - csr.offsets[first]) as usize;
        let (head, rest) = std::mem::take(&mut targets).split_at_mut(len);
        let (head_weights, rest_weights) = std::mem::take(&mut weights).split_at_mut(len);
        pieces.push((first, end, head, head_weights));
        (targets, weights) = (rest, rest_weights);
    }
    let offsets = &csr.offsets;
    let kept: Vec<u64> = pieces
        .into_par_iter()
        .flat_map_iter(|(first, end, targets, weights)| {
            let mut scratch = Vec::new();
            let base = offsets[first];
            (first..end)
                .map(|v| {
                    let (start, stop) = ((offsets[v] - base) as usize, (offsets[v + 1] - base) as usize);
                    f(v as u32, &mut targets[start..stop], &mut weights[start..stop], &mut scratch) as u64
                })
                .collect::<Vec<u64>>()
        })
        .collect();
    kept
}

/// Closes up lists that kept only their first `kept[v]` arcs.
fn compact<W: EdgeWeight>(csr: &mut Csr<W>, kept: &[u64]) {
    let mut write = 0usize;
    for (v, &keep) in kept.iter().enumerate() {
        let start = csr.offsets[v] as usize;
        csr.targets.copy_within(start..start + keep as usize, write);
        csr.weights.copy_within(start..start + keep as usize, write);
        csr.offsets[v] = write as u64;
        write += keep as usize;
    }
    csr.offsets[kept.len()] = write as u64;
    csr.targets.truncate(write);
    csr.weights.truncate(write);
    csr.targets.shrink_to_fit();
    csr.weights.shrink_to_fit();
}

/// Drops duplicate arcs of sorted lists (keeping the smallest weight, as the external path
/// does) when asked, and counts logical edges and duplicates.
fn clean_lists<W: EdgeWeight>(csr: &mut Csr<W>, shape: GraphShape) -> ArcTally {
    let edges = AtomicU64::new(0);
    let duplicates = AtomicU64::new(0);
    let kept = for_each_list(csr, |vertex, targets, weights, _| {
        // An undirected edge is stored as two arcs; it counts at the arc with source ≤ target.
        let counts = |target: u32| shape.directed || vertex <= target;
        let mut keep = 0usize;
        let (mut list_edges, mut list_duplicates) = (0u64, 0u64);
        for at in 0..targets.len() {
            if shape.dedup && keep > 0 && targets[keep - 1] == targets[at] {
                if weights[at].value().total_cmp(&weights[keep - 1].value()).is_lt() {
                    weights[keep - 1] = weights[at];
                }
                list_duplicates += counts(targets[at]) as u64;
                continue;
            }
            targets[keep] = targets[at];
            weights[keep] = weights[at];
            list_edges += counts(targets[at]) as u64;
            keep += 1;
        }
        edges.fetch_add(list_edges, AtomicOrdering::Relaxed);
        duplicates.fetch_add(list_duplicates, AtomicOrdering::Relaxed);
        keep
    });
    if shape.dedup {
        compact(csr, &kept);
    }
    ArcTally { edges: edges.into_inner(), duplicates: duplicates.into_inner(), max_degree: None }
}

impl Import<'_> {
    /// Builds the store from the held edges: returns (|V|, stored arcs, tally).
    pub(super) fn build_from_memory<K: IdKey, W: EdgeWeight>(
        &mut self,
        held: HeldEdges<K, W>,
        clock: &mut super::StepClock,
    ) -> Result<(u64, u64, ArcTally)> {
        let bar = self.progress.start("assigning dense ids", None, ProgressUnit::Vertices);
        let ids = DenseIds::build(&held);
        let vertices = ids.len();
        ids.write(&mut self.builder)?;
        bar.set_position(vertices);
        bar.finish();
        clock.lap(&mut self.report, "assign dense ids");
        self.cancel.check()?;

        let bar = self.progress.start("mapping ids to dense", Some(held.edges), ProgressUnit::Edges);
        let pairs: Vec<Vec<DensePair<W>>> = held
            .chunks
            .into_par_iter()
            .map(|chunk| {
                let dense = |edge: &EdgeBySource<K, W>| DensePair {
                    source: ids.dense(&edge.source),
                    target: ids.dense(&edge.target),
                    weight: edge.weight,
                };
                chunk.iter().map(dense).collect()
            })
            .collect();
        drop(ids);
        bar.set_position(held.edges);
        bar.finish();
        clock.lap(&mut self.report, "map ids");
        self.cancel.check()?;

        let arcs_bound = if self.shape.directed { held.edges } else { 2 * held.edges };
        let bar = self.progress.start("sorting csr-out", Some(arcs_bound), ProgressUnit::Edges);
        let mut out = count_sort(vertices as usize, &PairArcs { chunks: &pairs, directed: self.shape.directed }, true);
        drop(pairs);
        let mut tally = clean_lists(&mut out, self.shape);
        bar.set_position(arcs_bound);
        bar.finish();
        clock.lap(&mut self.report, "sort csr-out");
        self.cancel.check()?;

        if !self.shape.directed {
            tally.max_degree = Some(max_degree(&out.offsets, None));
            let stored = self.write_layout("csr-out", &out)?;
            clock.lap(&mut self.report, "write csr-out");
            return Ok((vertices, stored, tally));
        }
        // csr-out is written on a thread of its own while csr-in is sorted from it: the write
        // waits on the disk (and its fsync) more than on the cores.
        let arcs = out.targets.len() as u64;
        let write_bar = self.progress.start("writing csr-out", Some(arcs), ProgressUnit::Edges);
        let sort_bar = self.progress.start("sorting csr-in", Some(arcs), ProgressUnit::Edges);
        let weights = if self.shape.weighted { W::as_f64s(&out.weights) } else { None };
        let builder = &mut self.builder;
        let (stored, csr_in) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| builder.write_csr_arrays("csr-out", &out.offsets, &out.targets, weights));
            let reversed =
                ReversedCsr { csr: &out, parts: balanced_parts(&out.offsets, 8 * rayon::current_num_threads()) };
            // csr-out is sorted by (source, target, weight bits): the stable scatter leaves
            // every csr-in list sorted by (source, weight bits) already.
            let csr_in = count_sort(vertices as usize, &reversed, false);
            tally.max_degree = Some(max_degree(&out.offsets, Some(&csr_in.offsets)));
            let stored = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (stored, csr_in)
        });
        let stored = stored?;
        drop(out);
        for bar in [write_bar, sort_bar] {
            bar.set_position(arcs);
            bar.finish();
        }
        clock.lap(&mut self.report, "write csr-out, sort csr-in");
        self.cancel.check()?;
        self.write_layout("csr-in", &csr_in)?;
        clock.lap(&mut self.report, "write csr-in");
        Ok((vertices, stored, tally))
    }

    fn write_layout<W: EdgeWeight>(&mut self, name: &str, csr: &Csr<W>) -> Result<u64> {
        let arcs = csr.targets.len() as u64;
        let bar = self.progress.start(&format!("writing {name}"), Some(arcs), ProgressUnit::Edges);
        let weights = if self.shape.weighted { W::as_f64s(&csr.weights) } else { None };
        let stored = self.builder.write_csr_arrays(name, &csr.offsets, &csr.targets, weights)?;
        bar.set_position(arcs);
        bar.finish();
        Ok(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_bitmap_ranks_and_lists_its_ids() {
        let ids = [5u64, 6, 70, 71, 200, 1000];
        let mut held = HeldEdges::<u64, super::super::Unweighted>::new(4, true);
        for pair in ids.chunks(2) {
            held.push_edge(EdgeBySource { source: pair[0], target: pair[1], weight: super::super::Unweighted });
        }
        held.push_vertex(5);
        let bitmap = RankBitmap::build(5, 1000, &held);
        assert_eq!(bitmap.len(), 6);
        assert_eq!(bitmap.ids().collect::<Vec<_>>(), ids);
        for (rank, &id) in ids.iter().enumerate() {
            assert_eq!(bitmap.rank(id), rank as u64);
        }
    }

    #[test]
    fn balanced_parts_cover_every_vertex_once() {
        let offsets = [0u64, 0, 10, 11, 11, 40, 41, 42, 60];
        for parts in [1, 2, 3, 8, 20] {
            let ranges = balanced_parts(&offsets, parts);
            let covered: Vec<usize> = ranges.iter().flat_map(|&(a, b)| a..b).collect();
            assert_eq!(covered, (0..8).collect::<Vec<_>>(), "{parts} parts");
        }
        assert!(balanced_parts(&[0], 4).is_empty());
    }
}
