//! How the cache engine splits `--memory` (module doc of [`super`], "Memory"): reserved vertex
//! state, offsets and page table first, then the cache, shared between the BASC static cache
//! (`static_cache_share`) and page-cache frames. One sum, [`MemoryPlan`], gives both the
//! planner's parts ([`super::plan`]) and the engine's ledger charges.

use super::page_cache::PageCache;
use super::{CacheOptions, SelectionMethod};
use crate::engine::planner::ProgramShape;
use crate::error::{Error, Result};
use crate::runtime::{format_size, MemoryPart};
use crate::store::Store;

/// The most scatter parts (per-thread message arrays, [`super::parts`]) a program's state is
/// sized for: past four, each part's array per vertex costs more cache than its thread gains.
pub(crate) const MAX_SCATTER_PARTS: usize = 4;
/// The reservation per vertex [`budget_for_cache_bytes`] assumes when the options fix none: the
/// engine's fixed reservation before it sized the state from the program.
pub const ASSUMED_STATE_BYTES_PER_VERTEX: u64 = 64;

/// Bytes per vertex a program keeps on the engine with `threads` threads: its value, the
/// message accumulator and the flags (three bitmaps, counted as one byte), and, when the scatter
/// runs in parts, one flag bitmap and (unless the parts only mark, [`super::parts`]) one
/// message array per part (at most [`MAX_SCATTER_PARTS`]).
pub(crate) fn program_state_bytes(value_bytes: u64, msg_bytes: u64, marks_only: bool, threads: usize) -> u64 {
    let parts = threads.min(MAX_SCATTER_PARTS) as u64;
    let base = super::parts::own_bytes(value_bytes, msg_bytes);
    if parts >= 2 {
        base + parts * super::parts::part_bytes(msg_bytes, marks_only)
    } else {
        base
    }
}

/// What the engine reserves before its caches for one program: its state per vertex and the
/// offsets of the layouts it reads. A fixed reservation (`state_bytes_per_vertex: Some`) holds
/// every layout's offsets whatever the program, so that configurations compared at equal memory
/// get the same caches; sized from the program, csr-in's offsets are held only for programs
/// that read in-edges (33.5 MB on RMAT-22 that out-edge programs such as BFS and SSSP leave to
/// the caches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reservation {
    /// Bytes per vertex of the programs' state.
    pub(crate) state_per_vertex: u64,
    /// Whether csr-in's offsets are held (only ever on directed stores).
    pub(crate) in_offsets: bool,
}

impl Reservation {
    /// The reservation for a vertex program of `shape` on `threads` threads (its state: see
    /// [`program_state_bytes`]; csr-in's offsets when it reads in-edges), on a store that is
    /// `directed` or not: the one derivation the planner's plan and the engine share. A
    /// program that keeps more than a fixed reservation is refused, with the reason.
    pub(crate) fn for_program(
        options: &CacheOptions,
        directed: bool,
        shape: &ProgramShape,
        threads: usize,
    ) -> std::result::Result<Reservation, String> {
        let (value_bytes, msg_bytes) = (shape.value_bytes, shape.msg_bytes);
        // Parts that only mark targets (`parts::marks_only`, from the same two properties).
        let marks_only = shape.sends_uniform_messages && shape.sends_one_message;
        let Some(fixed) = options.state_bytes_per_vertex else {
            let state_per_vertex = program_state_bytes(value_bytes, msg_bytes, marks_only, threads);
            return Ok(Reservation { state_per_vertex, in_offsets: directed && shape.in_edges });
        };
        let needed = super::parts::own_bytes(value_bytes, msg_bytes);
        if needed > fixed {
            return Err(format!(
                "this program keeps {needed} bytes per vertex but the cache engine reserves {fixed} \
                 (CacheOptions::state_bytes_per_vertex)"
            ));
        }
        Ok(Reservation { state_per_vertex: fixed, in_offsets: directed })
    }

    /// Whether an engine built with this reservation can run a program that needs `other`.
    pub(crate) fn covers(&self, other: &Reservation) -> bool {
        self.state_per_vertex >= other.state_per_vertex && (self.in_offsets || !other.in_offsets)
    }

    /// The smallest reservation covering both: what an engine rebuilt for `other` keeps, so
    /// that programs of one algorithm alternating between them (a larger state reading out-edges,
    /// a smaller one reading in-edges) rebuild it once, not at every turn.
    pub(crate) fn union(&self, other: &Reservation) -> Reservation {
        Reservation {
            state_per_vertex: self.state_per_vertex.max(other.state_per_vertex),
            in_offsets: self.in_offsets || other.in_offsets,
        }
    }

    /// Bytes of the offsets held for `vertices` vertices.
    fn offsets_bytes(&self, vertices: u64) -> u64 {
        (vertices + 1) * 8 * if self.in_offsets { 2 } else { 1 }
    }
}

/// The fewest page frames the engine runs with (two batches of at least 4 pages).
pub(crate) const MIN_FRAMES: u64 = 8;
/// Bookkeeping not sized per vertex or per page (batches, request lists, thread stacks' use).
pub(crate) const FIXED_OVERHEAD_BYTES: u64 = 4 << 20;

/// The files read in pages, in page-numbering order: out targets, out weights, in targets,
/// in weights (those that exist).
pub(crate) fn paged_files(directed: bool, weighted: bool) -> Vec<String> {
    let mut rels: Vec<String> = vec!["csr-out/targets".into()];
    if weighted {
        rels.push("csr-out/weights".into());
    }
    if directed {
        rels.push("csr-in/targets".into());
        if weighted {
            rels.push("csr-in/weights".into());
        }
    }
    rels
}

/// The global number of each file's first page, and the total number of pages, for files of
/// `file_bytes(rel)` bytes.
pub(crate) fn page_numbering(file_bytes: impl Fn(&str) -> u64, rels: &[String], page_size: u64) -> (Vec<u64>, u64) {
    let mut total_pages = 0u64;
    let mut first = Vec::new();
    for rel in rels {
        first.push(total_pages);
        total_pages += file_bytes(rel).div_ceil(page_size);
    }
    (first, total_pages)
}

/// The paged files of `store` and their page numbering.
pub(super) fn store_pages(store: &Store, page_size: u64) -> (Vec<String>, Vec<u64>, u64) {
    let rels = paged_files(store.is_directed(), store.is_weighted());
    let file_bytes = |rel: &str| store.manifest().files.get(rel).map_or(0, |f| f.bytes);
    let (first, total) = page_numbering(file_bytes, &rels, page_size);
    (rels, first, total)
}

/// The `--memory` budget that leaves `cache_bytes` (static cache plus page-cache frames with
/// their bookkeeping) to the caches of the engine on `store`: how benchmarks and tests give
/// two configurations the same cache memory. At least the engine's minimum (8 page frames) is
/// given. The vertex state counted is the options' fixed reservation, so the caches get exactly
/// `cache_bytes`. When the options fix none it counts [`ASSUMED_STATE_BYTES_PER_VERTEX`] and
/// every layout's offsets while the engine sizes both from the program and the threads, so the
/// caches get the difference too (more for BFS, which keeps 19 bytes and reads no in-edges;
/// less for a program that keeps more, such as SSSP's parent tracking on a weighted graph on
/// two threads, 67 bytes).
pub fn budget_for_cache_bytes(store: &Store, options: &CacheOptions, cache_bytes: u64) -> u64 {
    let (_, _, total_pages) = store_pages(store, options.page_size);
    let minimum_cache = MIN_FRAMES * MemoryPlan::frame_bytes(options);
    let state_per_vertex = options.state_bytes_per_vertex.unwrap_or(ASSUMED_STATE_BYTES_PER_VERTEX);
    let reservation = Reservation { state_per_vertex, in_offsets: store.is_directed() };
    MemoryPlan::fixed(store.num_vertices(), total_pages, &reservation) + cache_bytes.max(minimum_cache)
}

/// How the budget is split (see the module doc): the one sum behind the plan's parts and the
/// engine's ledger charges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoryPlan {
    pub(super) reserved_state: u64,
    pub(super) offsets: u64,
    pub(super) page_table: u64,
    /// Static cache and page-cache frames together (and what is too small for a frame).
    pub(super) cache: u64,
    pub(super) static_cache: u64,
    pub(super) frames: usize,
    pub(super) frame_bytes: u64,
}

impl MemoryPlan {
    /// Splits `budget` for `vertices` paged in `total_pages`, with the vertex state and offsets
    /// of `reservation`, checking that something is left for caching. `every_list` is what the
    /// static cache takes holding every out-list ([`StaticCache::every_list_bytes`]): it is
    /// given no more.
    pub(crate) fn new(
        vertices: u64,
        total_pages: u64,
        every_list: u64,
        budget: u64,
        reservation: &Reservation,
        options: &CacheOptions,
    ) -> Result<MemoryPlan> {
        let reserved_state = vertices * reservation.state_per_vertex;
        let offsets = reservation.offsets_bytes(vertices);
        let page_table = PageCache::page_table_bytes(total_pages);
        let fixed = MemoryPlan::fixed(vertices, total_pages, reservation);
        let frame_bytes = MemoryPlan::frame_bytes(options);
        let minimum = fixed + MIN_FRAMES * frame_bytes;
        if budget < minimum {
            return Err(Error::MemoryBudget(format!(
                "the cache engine needs at least {} for this graph ({vertices} vertices: {} of vertex state, {} of \
                 offsets, {} of page table, and 8 pages of cache) but the budget is {}",
                format_size(minimum),
                format_size(reserved_state),
                format_size(offsets),
                format_size(page_table),
                format_size(budget)
            )));
        }
        let cache = budget - fixed;
        let mut static_cache = match options.selection {
            SelectionMethod::None => 0,
            _ => (cache as f64 * options.static_cache_share) as u64,
        };
        // No more static cache than every list takes, and no more frames than the files have
        // pages: the rest would be charged, and frames allocated and zeroed, for nothing (a
        // budget's worth at large budgets).
        static_cache = static_cache.min(cache - MIN_FRAMES * frame_bytes).min(every_list);
        let frames = ((cache - static_cache) / frame_bytes).min(total_pages.max(MIN_FRAMES)) as usize;
        Ok(MemoryPlan { reserved_state, offsets, page_table, cache, static_cache, frames, frame_bytes })
    }

    /// Memory taken before any cache: reserved vertex state, offsets, page table and fixed
    /// bookkeeping.
    pub(super) fn fixed(vertices: u64, total_pages: u64, reservation: &Reservation) -> u64 {
        vertices * reservation.state_per_vertex
            + reservation.offsets_bytes(vertices)
            + PageCache::page_table_bytes(total_pages)
            + FIXED_OVERHEAD_BYTES
    }

    pub(super) fn frame_bytes(options: &CacheOptions) -> u64 {
        options.page_size + PageCache::metadata_bytes_per_frame(options.page_size)
    }

    /// What the engine holds before its caches, and keeps for as long as it lives.
    pub(crate) fn fixed_parts(&self) -> [MemoryPart; 3] {
        [
            MemoryPart::new("offsets", self.offsets),
            MemoryPart::new("page table", self.page_table),
            MemoryPart::new("bookkeeping", FIXED_OVERHEAD_BYTES),
        ]
    }

    /// What the engine holds once the static-cache selection is done: the vertex state it
    /// reserves and the caches.
    pub(crate) fn cache_parts(&self) -> [MemoryPart; 3] {
        [
            MemoryPart::new("vertex state", self.reserved_state),
            MemoryPart::new("static cache", self.static_cache),
            MemoryPart::new("page cache", self.frames as u64 * self.frame_bytes),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_cache_has_no_more_frames_than_the_files_have_pages() {
        let reservation = Reservation { state_per_vertex: 8, in_offsets: false };
        let options = CacheOptions { selection: SelectionMethod::None, ..CacheOptions::default() };
        let frame = MemoryPlan::frame_bytes(&options);
        let plan =
            |pages: u64, budget: u64| MemoryPlan::new(1000, pages, u64::MAX, budget, &reservation, &options).unwrap();
        let fixed = MemoryPlan::fixed(1000, 100, &reservation);
        assert_eq!(plan(100, 1 << 30).frames, 100);
        assert_eq!(plan(100, fixed + 20 * frame).frames, 20);
        assert_eq!(plan(3, 1 << 30).frames as u64, MIN_FRAMES);
        let parts: u64 = plan(100, 1 << 30).cache_parts().iter().map(|part| part.bytes).sum();
        assert_eq!(parts, 8 * 1000 + 100 * frame);
    }

    #[test]
    fn the_static_cache_takes_no_more_than_every_list() {
        let reservation = Reservation { state_per_vertex: 8, in_offsets: false };
        let options = CacheOptions::default();
        let every_list = 5 << 20;
        let plan = |budget: u64| MemoryPlan::new(1000, 10_000, every_list, budget, &reservation, &options).unwrap();
        let small = plan(8 << 20);
        assert!(small.static_cache < every_list);
        assert_eq!(small.static_cache, (small.cache as f64 * options.static_cache_share) as u64);
        let large = plan(1 << 30);
        assert_eq!(large.static_cache, every_list);
        assert_eq!(large.frames, 10_000, "the rest goes to frames, up to the files' pages");
        let charged: u64 = large.cache_parts().iter().map(|part| part.bytes).sum();
        assert_eq!(charged, 8 * 1000 + every_list + 10_000 * MemoryPlan::frame_bytes(&options));
    }

    #[test]
    fn a_rebuilt_reservation_covers_the_old_and_the_new_program() {
        let out_large = Reservation { state_per_vertex: 51, in_offsets: false };
        let in_small = Reservation { state_per_vertex: 19, in_offsets: true };
        assert!(!out_large.covers(&in_small) && !in_small.covers(&out_large));
        let both = out_large.union(&in_small);
        assert_eq!(both, Reservation { state_per_vertex: 51, in_offsets: true });
        assert!(both.covers(&out_large) && both.covers(&in_small));
    }
}
