//! Vertex orderings: renumbering a store so that vertices used together lie together on disk.
//!
//! The BASC paper (§2.4, §4) shows that BFS-like algorithms on a disk-based engine are very
//! sensitive to the order of vertices in the CSR files, and models the cost of an order as
//! (Equation 1)
//!
//! ```text
//! Cost = Σ_v indeg(v) · σ²(nbr(v))
//! ```
//!
//! where `nbr(v)` are the (dense) ids of `v`'s out-neighbours — the lists read when `v` is
//! active — and `indeg(v)` weighs vertices by how early BFS reaches them. [`order_cost`]
//! computes it (`outcore info --order-cost`), together with the cost normalised by what a
//! uniformly random order would give (`σ² = (|V|² − 1)/12`), so 1.0 means "no locality".
//!
//! Orderings ([`VertexOrder`]):
//! * `none` — dense ids in ascending original-id order (the import's own order; applied to a
//!   reordered store it restores that order);
//! * `degree` — descending in-degree (ties: ascending current id);
//! * `random` — a uniformly random permutation (seeded);
//! * `norder` — Neighborhood Ordering (§4.2): vertices by descending in-degree; from each one
//!   not yet numbered, a breadth-first search bounded to depth 2 over out-edges numbers the
//!   vertices it meets, consecutively in visit order. Vertices already numbered are neither
//!   renumbered nor expanded, so every vertex is expanded at most once (`O(|V| + |E|)`).
//!
//! [`reorder`] rebuilds the store through [`StoreBuilder`] (temporary directory, atomic commit):
//! new `ids/original` in the new dense order, new `ids/by-original`, and `csr-out`/`csr-in`
//! renumbered with every list re-sorted; derived layouts (e.g. static-cache selections) are
//! dropped because they depend on the order. The ordering is appended to
//! `manifest.orderings`. Results stay in original ids through the id map.
//!
//! Memory: the rebuild is semi-external — it keeps a few arrays of `|V|` entries (the
//! permutation both ways, the offsets of both layouts, degrees; about 44 bytes per vertex) and
//! reads each list with a positional read, or from one in-memory copy of the targets when that
//! also fits in the budget. No list of all edges is ever held unless it fits, so no external
//! sort is needed; when even the per-vertex arrays exceed the budget it fails with
//! [`Error::MemoryBudget`].

use std::ops::Range;

use super::build::{Arc, StoreBuilder};
use super::csr::{decode_targets, CsrLayout, Direction};
use super::files::u64s_from_le_bytes;
use super::ids::BY_ORIGINAL;
use super::manifest::{IdType, Manifest};
use super::Store;
use crate::error::{Error, Result};
use crate::runtime::{format_size, MemoryBudget, Progress, ProgressUnit};

/// The orderings a store can be renumbered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VertexOrder {
    None,
    Degree,
    Random { seed: u64 },
    Norder,
}

impl VertexOrder {
    pub const NAMES: &'static [&'static str] = &["none", "degree", "random", "norder"];

    /// Parses `none|degree|random|norder` (`random` takes `seed`).
    pub fn parse(name: &str, seed: u64) -> Result<VertexOrder> {
        Ok(match name {
            "none" | "original" => VertexOrder::None,
            "degree" => VertexOrder::Degree,
            "random" => VertexOrder::Random { seed },
            "norder" => VertexOrder::Norder,
            other => {
                return Err(Error::invalid(format!(
                    "unknown ordering '{other}' (available: {})",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            VertexOrder::None => "none",
            VertexOrder::Degree => "degree",
            VertexOrder::Random { .. } => "random",
            VertexOrder::Norder => "norder",
        }
    }
}

/// Reads all `offsets` of a layout (|V| + 1 values).
pub fn read_all_offsets(layout: &CsrLayout) -> Result<Vec<u64>> {
    let offsets = u64s_from_le_bytes(&layout.offsets.read_all()?);
    super::csr::check_offsets(layout.offsets.path(), &offsets, layout.arcs)?;
    Ok(offsets)
}

/// In-degree of every vertex (from `csr-in`'s offsets; `csr-out`'s on undirected stores).
pub fn in_degrees(store: &Store) -> Result<Vec<u32>> {
    let offsets = read_all_offsets(&store.csr(Direction::In)?)?;
    Ok(offsets.windows(2).map(|w| (w[1] - w[0]).min(u32::MAX as u64) as u32).collect())
}

/// Edges read at once by [`scan_adjacency`] by default (12 MiB of buffers with u32 targets).
pub const SCAN_CHUNK_EDGES: u64 = 1 << 20;

/// Calls `visit(v, neighbours)` for every vertex of `vertices` in order, reading the targets
/// sequentially in chunks of `chunk_edges` edges (a longer list gets a buffer of its own).
/// Buffers take about 12 bytes per edge of the chunk.
pub fn scan_adjacency(
    layout: &CsrLayout,
    offsets: &[u64],
    vertices: Range<u64>,
    chunk_edges: u64,
    mut visit: impl FnMut(u64, &[u64]) -> Result<()>,
) -> Result<()> {
    let mut decoded: Vec<u64> = Vec::new();
    for chunk in list_chunks(offsets, vertices, chunk_edges) {
        let first_edge = offsets[chunk.start as usize];
        layout.read_targets(first_edge, offsets[chunk.end as usize] - first_edge, &mut decoded)?;
        for u in chunk {
            let s = (offsets[u as usize] - first_edge) as usize;
            let e = (offsets[u as usize + 1] - first_edge) as usize;
            visit(u, &decoded[s..e])?;
        }
    }
    Ok(())
}

/// The vertices of `vertices` cut into consecutive ranges whose lists (by `offsets`) hold at
/// most `chunk_edges` edges together; a longer list is a range of its own. What a sequential
/// scan of the lists reads at once ([`scan_adjacency`]).
pub fn list_chunks(offsets: &[u64], vertices: Range<u64>, chunk_edges: u64) -> impl Iterator<Item = Range<u64>> + '_ {
    let chunk_edges = chunk_edges.max(1);
    let mut v = vertices.start;
    std::iter::from_fn(move || {
        if v >= vertices.end {
            return None;
        }
        let first_edge = offsets[v as usize];
        let mut w = v + 1;
        while w < vertices.end && offsets[w as usize + 1] - first_edge <= chunk_edges {
            w += 1;
        }
        let chunk = v..w;
        v = w;
        Some(chunk)
    })
}

/// The paper's cost model for the store's current order.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct OrderCost {
    /// Σ_v indeg(v) · variance(ids of v's out-neighbours).
    pub cost: f64,
    /// `cost` divided by what uniformly random ids would give on average.
    pub normalized: f64,
}

/// Computes the cost model (Equation 1) in one sequential pass over `csr-out`.
pub fn order_cost(store: &Store) -> Result<OrderCost> {
    let layout = store.csr(Direction::Out)?;
    let offsets = read_all_offsets(&layout)?;
    let indeg = in_degrees(store)?;
    let mut cost = 0.0f64;
    let mut weight = 0.0f64;
    scan_adjacency(&layout, &offsets, 0..store.num_vertices(), SCAN_CHUNK_EDGES, |v, nbrs| {
        let w = indeg[v as usize] as f64;
        if nbrs.len() > 1 && w > 0.0 {
            let mean = nbrs.iter().map(|&u| u as f64).sum::<f64>() / nbrs.len() as f64;
            let var = nbrs.iter().map(|&u| (u as f64 - mean).powi(2)).sum::<f64>() / nbrs.len() as f64;
            cost += w * var;
            // A random order's expected variance of k ids drawn from n is (k−1)/k · (n²−1)/12.
            weight += w * (nbrs.len() - 1) as f64 / nbrs.len() as f64;
        }
        Ok(())
    })?;
    let n = store.num_vertices() as f64;
    let random_variance = (n * n - 1.0) / 12.0;
    let normalized = if weight > 0.0 && random_variance > 0.0 { cost / (weight * random_variance) } else { 0.0 };
    Ok(OrderCost { cost, normalized })
}

/// Adjacency lists readable in any order: from memory when they fit, else by positional reads.
///
/// In memory the targets are kept as the file's own bytes (4 or 8 per arc) and decoded per
/// list, and they are read in 1 MiB pieces straight into that buffer, so holding the lists
/// costs exactly `arcs × target_bytes` and no transient copy beside it.
struct RandomAccessLists {
    layout: CsrLayout,
    offsets: Vec<u64>,
    in_memory: Option<Vec<u8>>,
}

impl RandomAccessLists {
    fn open(store: &Store, direction: Direction, allow_memory_bytes: u64) -> Result<RandomAccessLists> {
        let layout = store.csr(direction)?;
        let offsets = read_all_offsets(&layout)?;
        let bytes = layout.arcs * layout.target_bytes;
        let in_memory = if bytes <= allow_memory_bytes { Some(layout.read_all_encoded_targets()?) } else { None };
        Ok(RandomAccessLists { layout, offsets, in_memory })
    }

    fn degree(&self, v: u64) -> u64 {
        self.offsets[v as usize + 1] - self.offsets[v as usize]
    }

    /// Targets of `v` into `out` (cleared).
    fn neighbours(&self, v: u64, out: &mut Vec<u64>) -> Result<()> {
        let (s, e) = (self.offsets[v as usize], self.offsets[v as usize + 1]);
        match &self.in_memory {
            Some(all) => {
                out.clear();
                let width = self.layout.target_bytes;
                decode_targets(&all[(s * width) as usize..(e * width) as usize], width, out);
                Ok(())
            }
            None => self.layout.read_targets(s, e - s, out),
        }
    }

    /// Weights of `v` into `out` (cleared); 1.0 each when the layout has none.
    fn weights(&self, v: u64, out: &mut Vec<f64>) -> Result<()> {
        let (s, e) = (self.offsets[v as usize], self.offsets[v as usize + 1]);
        out.clear();
        match &self.layout.weights {
            Some(file) => {
                let mut bytes = vec![0u8; ((e - s) * 8) as usize];
                file.read_exact_at(&mut bytes, s * 8)?;
                out.extend(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())));
            }
            None => out.resize((e - s) as usize, 1.0),
        }
        Ok(())
    }
}

/// Bytes of per-vertex arrays [`reorder`] holds besides the lists.
fn base_bytes(n: u64, directed: bool) -> u64 {
    n * 8 * 2 + (n + 1) * 8 * if directed { 2 } else { 1 } + n * 4 + n * 8
}

/// `new_id[old]` for an ordering of `store`.
pub fn permutation(store: &Store, order: VertexOrder, memory: MemoryBudget) -> Result<Vec<u64>> {
    let n = store.num_vertices();
    let indeg = || in_degrees(store);
    let by_descending_indegree = |indeg: &[u32]| {
        let mut vs: Vec<u64> = (0..n).collect();
        vs.sort_by_key(|&v| (std::cmp::Reverse(indeg[v as usize]), v));
        vs
    };
    let invert = |old_of_new: &[u64]| {
        let mut new_of_old = vec![0u64; old_of_new.len()];
        for (new, &old) in old_of_new.iter().enumerate() {
            new_of_old[old as usize] = new as u64;
        }
        new_of_old
    };
    Ok(match order {
        VertexOrder::None => {
            let by_original = u64s_from_le_bytes(&store.file(BY_ORIGINAL)?.read_all()?);
            invert(&by_original)
        }
        VertexOrder::Degree => invert(&by_descending_indegree(&indeg()?)),
        VertexOrder::Random { seed } => {
            let mut vs: Vec<u64> = (0..n).collect();
            shuffle(&mut vs, seed);
            invert(&vs)
        }
        VertexOrder::Norder => {
            let roots = by_descending_indegree(&indeg()?);
            let spare = memory.bytes().saturating_sub(base_bytes(n, store.is_directed()));
            let lists = RandomAccessLists::open(store, Direction::Out, spare)?;
            norder(&roots, &lists)?
        }
    })
}

/// Neighborhood ordering from `roots` (descending in-degree).
fn norder(roots: &[u64], lists: &RandomAccessLists) -> Result<Vec<u64>> {
    const UNSET: u64 = u64::MAX;
    let mut new_id = vec![UNSET; roots.len()];
    let mut next = 0u64;
    let (mut level1, mut nbrs, mut nbrs2) = (Vec::new(), Vec::new(), Vec::new());
    for &root in roots {
        if new_id[root as usize] != UNSET {
            continue;
        }
        new_id[root as usize] = next;
        next += 1;
        level1.clear();
        lists.neighbours(root, &mut nbrs)?;
        for &u in &nbrs {
            if new_id[u as usize] == UNSET {
                new_id[u as usize] = next;
                next += 1;
                level1.push(u);
            }
        }
        for &u in &level1 {
            if lists.degree(u) == 0 {
                continue;
            }
            lists.neighbours(u, &mut nbrs2)?;
            for &w in &nbrs2 {
                if new_id[w as usize] == UNSET {
                    new_id[w as usize] = next;
                    next += 1;
                }
            }
        }
    }
    debug_assert_eq!(next, roots.len() as u64);
    Ok(new_id)
}

/// Renumbers `store` in place with `order` (atomically: the old store stays until the new one
/// is complete) and returns the new store.
pub fn reorder(store: &Store, order: VertexOrder, memory: MemoryBudget, progress: &dyn Progress) -> Result<Store> {
    reorder_into(store, store.root(), order, memory, progress)
}

/// Writes `store` renumbered with `order` into `dest` (which may be the store's own directory).
pub fn reorder_into(
    store: &Store,
    dest: &std::path::Path,
    order: VertexOrder,
    memory: MemoryBudget,
    progress: &dyn Progress,
) -> Result<Store> {
    let n = store.num_vertices();
    let directed = store.is_directed();
    let needed = base_bytes(n, directed);
    if needed > memory.bytes() {
        return Err(Error::MemoryBudget(format!(
            "reordering {n} vertices needs about {} (per-vertex arrays) but the budget is {memory}",
            format_size(needed)
        )));
    }
    let bar = progress.start(&format!("ordering ({})", order.name()), None, ProgressUnit::Items);
    let new_of_old = permutation(store, order, memory)?;
    bar.finish();
    let mut old_of_new = vec![0u64; n as usize];
    for (old, &new) in new_of_old.iter().enumerate() {
        old_of_new[new as usize] = old as u64;
    }

    let mut builder = StoreBuilder::new(dest, crate::runtime::IoCounters::new())?;
    let ids = store.ids()?;
    match store.manifest().id_type {
        IdType::U64 => {
            let original = ids.all_u64()?;
            builder.write_u64_ids(old_of_new.iter().map(|&old| original[old as usize]))?;
        }
        IdType::String => {
            let mut names = Vec::with_capacity(n as usize);
            for &old in &old_of_new {
                names.push(ids.original(old)?.to_string());
            }
            builder.write_string_ids(names.iter())?;
        }
    }
    let old_by_original = u64s_from_le_bytes(&store.file(BY_ORIGINAL)?.read_all()?);
    builder.write_by_original(old_by_original.iter().map(|&old| new_of_old[old as usize]))?;
    drop(old_by_original);

    let weighted = store.is_weighted();
    let mut stored = 0;
    let layouts: &[Direction] = if directed { &[Direction::Out, Direction::In] } else { &[Direction::Out] };
    for &direction in layouts {
        let spare = memory.bytes().saturating_sub(needed);
        let lists = RandomAccessLists::open(store, direction, spare)?;
        let bar = progress.start(
            &format!("writing {} ({})", direction.layout_name(), order.name()),
            Some(n),
            ProgressUnit::Vertices,
        );
        let (mut targets, mut weights, mut pairs) = (Vec::new(), Vec::new(), Vec::<(u64, f64)>::new());
        let mut failed: Option<Error> = None;
        let arcs = (0..n).flat_map(|new_source| {
            let old = old_of_new[new_source as usize];
            pairs.clear();
            let read = lists.neighbours(old, &mut targets).and_then(|_| lists.weights(old, &mut weights));
            if let Err(e) = read {
                failed = Some(e);
            } else {
                pairs.extend(targets.iter().zip(&weights).map(|(&t, &w)| (new_of_old[t as usize], w)));
                pairs.sort_by_key(|&(t, w)| (t, w.to_bits()));
            }
            if new_source % 65536 == 0 {
                bar.set_position(new_source);
            }
            pairs
                .iter()
                .map(move |&(target, weight)| Ok(Arc { source: new_source, target, weight }))
                .collect::<Vec<_>>()
        });
        let written = builder.write_csr(direction.layout_name(), n, weighted, arcs)?;
        if let Some(e) = failed {
            return Err(e);
        }
        bar.finish();
        if direction == Direction::Out {
            stored = written;
        }
    }
    let old = store.manifest();
    let mut manifest = Manifest::new(n, stored, old.edges, directed, old.weights, old.id_type);
    // Renumbering keeps every vertex's degrees (a store without the figure gets it at commit).
    manifest.max_degree = old.max_degree;
    manifest.orderings = old.orderings.clone();
    manifest.orderings.push(order.name().to_string());
    manifest.created = old.created.clone();
    manifest.created.insert("reordered".into(), order.name().into());
    builder.commit(manifest)
}

/// Fisher–Yates with splitmix64, deterministic for a seed.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = SplitMix64::new(seed);
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// A small deterministic generator (splitmix64) for sampling and shuffling.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, bound)` (bound > 0), by rejection.
    pub fn below(&mut self, bound: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % bound;
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % bound;
            }
        }
    }
}
