//! BASC, the BFS-aware static cache (BASC paper §3): whole adjacency lists of pre-selected
//! vertices, loaded before the run and never replaced.
//!
//! The page cache caches *pages*, so a page fetched for one active vertex brings along the lists
//! of its neighbours on the page whether they will be used or not; BFS-like algorithms visit
//! each vertex about once (§2.2), so those bytes are rarely used later (§2.3). The static cache
//! instead spends memory on exactly the lists that would waste most of a page if fetched
//! (chosen by `selection.rs`), and lookups go to it first: a vertex found here costs no I/O.
//!
//! Layout: a membership bitmap (one bit per vertex, for a fast negative answer) with the rank
//! of each 64-bit word (so a cached vertex's position is found in O(1)), the sorted selected
//! vertex ids with the start of each list in one packed byte array of targets (as
//! stored on disk: u32 or u64 little-endian), and a packed array of weights when the program
//! reads them.

use std::time::Instant;

use crate::error::Result;
use crate::store::CsrLayout;

/// Bytes of index per cached vertex (its id and the start of its list).
pub const INDEX_BYTES_PER_VERTEX: u64 = 16;

/// Reads are merged when the gap between two selected lists is below this.
const MERGE_GAP_BYTES: u64 = 64 << 10;
/// Largest single read while loading.
const MAX_LOAD_READ_BYTES: u64 = 8 << 20;

/// What loading cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadReport {
    pub seconds: f64,
    pub bytes_read: u64,
    pub requests: u64,
}

pub struct StaticCache {
    member: Vec<u64>,
    /// Number of cached vertices before each word of `member` (rank in O(1)).
    rank_before_word: Vec<u64>,
    vertices: Vec<u64>,
    /// Start of each list in edges; `starts[i + 1] - starts[i]` is the degree.
    starts: Vec<u64>,
    targets: Vec<u8>,
    weights: Option<Vec<u8>>,
    target_bytes: usize,
}

impl StaticCache {
    /// Bytes the cache takes for `vertices` lists with `edges` edges in total on a graph of
    /// `num_vertices` vertices.
    pub fn bytes_for(num_vertices: u64, vertices: u64, edges: u64, edge_bytes: u64) -> u64 {
        num_vertices.div_ceil(64) * 16 + vertices * INDEX_BYTES_PER_VERTEX + 8 + edges * edge_bytes
    }

    /// Bytes the cache takes holding every list of a layout of `arcs` edges: more is never
    /// filled.
    pub fn every_list_bytes(num_vertices: u64, arcs: u64, edge_bytes: u64) -> u64 {
        Self::bytes_for(num_vertices, num_vertices, arcs, edge_bytes)
    }

    /// Loads the lists of `selected` (sorted, distinct) from `layout`, with weights when asked.
    /// With `resident`, the whole targets file as stored and already checked (the GVS
    /// selection's copy, `selection::Lists::Resident`), the targets are taken from it instead
    /// of read: the selected lists are moved to its front in place and the rest is freed, so
    /// no second copy is ever held.
    pub fn load(
        layout: &CsrLayout,
        offsets: &[u64],
        selected: &[u64],
        with_weights: bool,
        resident: Option<Vec<u8>>,
    ) -> Result<(StaticCache, LoadReport)> {
        let started = Instant::now();
        let n = offsets.len() - 1;
        let mut member = vec![0u64; n.div_ceil(64)];
        let mut starts = Vec::with_capacity(selected.len() + 1);
        let mut total = 0u64;
        for &v in selected {
            member[v as usize / 64] |= 1 << (v % 64);
            starts.push(total);
            total += offsets[v as usize + 1] - offsets[v as usize];
        }
        starts.push(total);
        let tb = layout.target_bytes;
        let mut report = LoadReport::default();
        let targets = match resident {
            Some(all) => compact(all, offsets, selected, tb),
            None => {
                let targets = load_packed(&layout.targets, offsets, selected, tb, total, &mut report)?;
                crate::store::csr::check_encoded_ids(layout.targets.path(), &targets, tb, layout.vertices)?;
                targets
            }
        };
        let weights = match (&layout.weights, with_weights) {
            (Some(file), true) => Some(load_packed(file, offsets, selected, 8, total, &mut report)?),
            _ => None,
        };
        report.seconds = started.elapsed().as_secs_f64();
        let mut rank_before_word = Vec::with_capacity(member.len());
        let mut count = 0u64;
        for word in &member {
            rank_before_word.push(count);
            count += word.count_ones() as u64;
        }
        let cache = StaticCache {
            member,
            rank_before_word,
            vertices: selected.to_vec(),
            starts,
            targets,
            weights,
            target_bytes: tb as usize,
        };
        Ok((cache, report))
    }

    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    pub fn edges(&self) -> u64 {
        *self.starts.last().unwrap_or(&0)
    }

    pub fn bytes(&self) -> u64 {
        (self.member.len() * 16 + self.vertices.len() * 8 + self.starts.len() * 8 + self.targets.len()) as u64
            + self.weights.as_ref().map_or(0, |w| w.len() as u64)
    }

    pub fn target_bytes(&self) -> usize {
        self.target_bytes
    }

    pub fn has_weights(&self) -> bool {
        self.weights.is_some()
    }

    /// Whether `v`'s list is held.
    pub fn holds(&self, v: u64) -> bool {
        self.member[v as usize / 64] & (1u64 << (v % 64)) != 0
    }

    /// The raw targets (and weights) of `v`'s list when `v` is cached.
    pub fn get(&self, v: u64) -> Option<(&[u8], Option<&[u8]>)> {
        let word = self.member[v as usize / 64];
        let bit = 1u64 << (v % 64);
        if word & bit == 0 {
            return None;
        }
        let i = (self.rank_before_word[v as usize / 64] + (word & (bit - 1)).count_ones() as u64) as usize;
        debug_assert_eq!(self.vertices[i], v);
        let (s, e) = (self.starts[i] as usize, self.starts[i + 1] as usize);
        let targets = &self.targets[s * self.target_bytes..e * self.target_bytes];
        let weights = self.weights.as_ref().map(|w| &w[s * 8..e * 8]);
        Some((targets, weights))
    }
}

/// Moves the selected lists of `all` (every list, `width` bytes an edge) to its front, in
/// order, and frees the rest.
fn compact(mut all: Vec<u8>, offsets: &[u64], selected: &[u64], width: u64) -> Vec<u8> {
    let mut end = 0;
    for &v in selected {
        let (s, e) = ((offsets[v as usize] * width) as usize, (offsets[v as usize + 1] * width) as usize);
        // Selected lists are sorted, so each moves down (or stays): nothing unread is overwritten.
        all.copy_within(s..e, end);
        end += e - s;
    }
    all.truncate(end);
    all.shrink_to_fit();
    all
}

/// Reads the selected lists of one file (`width` bytes per edge) into one packed array, merging
/// reads of lists that lie close together.
fn load_packed(
    file: &crate::store::StoreFile,
    offsets: &[u64],
    selected: &[u64],
    width: u64,
    total_edges: u64,
    report: &mut LoadReport,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity((total_edges * width) as usize);
    let mut buf = Vec::new();
    let mut i = 0;
    while i < selected.len() {
        // A run of lists [i, j) read with one request.
        let run_start = offsets[selected[i] as usize] * width;
        let mut run_end = offsets[selected[i] as usize + 1] * width;
        let mut j = i + 1;
        while j < selected.len() {
            let s = offsets[selected[j] as usize] * width;
            let e = offsets[selected[j] as usize + 1] * width;
            if s - run_end > MERGE_GAP_BYTES || e - run_start > MAX_LOAD_READ_BYTES {
                break;
            }
            run_end = e;
            j += 1;
        }
        if run_end > run_start {
            buf.resize((run_end - run_start) as usize, 0);
            file.read_exact_at(&mut buf, run_start)?;
            report.bytes_read += run_end - run_start;
            report.requests += 1;
        }
        for &v in &selected[i..j] {
            let s = (offsets[v as usize] * width - run_start) as usize;
            let e = (offsets[v as usize + 1] * width - run_start) as usize;
            out.extend_from_slice(&buf[s..e]);
        }
        i = j;
    }
    crate::runtime::direct::drop_from_os_cache(file.raw(), 0, file.len());
    Ok(out)
}
