//! The cache engine's page cache: the runtime's [`PageCache`](crate::runtime::PageCache)
//! (frames from the budget, page table, clock, pinning) plus the paper's page-utilisation
//! accounting.
//!
//! Why not the operating system's cache: the BASC paper (§2.3, §5) measures how well a cache
//! of a *given size* serves BFS-like algorithms, and turns the OS cache off with `O_DIRECT`.
//! A cache inside the engine has an exact size (part of `--memory`), exact hit/miss counts, and
//! lets us measure utilisation the way §5.1 does: each page is watched in 64-byte units while
//! it is resident, and when it leaves the cache (or at the end of the run) the share of units
//! that were actually used is added to the average.
//!
//! Frames are pinned while a batch of requests that needs them is being read or computed
//! (`requests.rs`); the clock hand skips pinned frames, so a page being filled by a reader
//! thread, or read by the compute thread, is never evicted under it.

use std::ops::Deref;

use crate::error::Result;
use crate::runtime::page_cache::{self, PageCacheCounters};

pub use crate::runtime::page_cache::FramePtr;

/// Granularity of the utilisation bitmaps (paper §5.1: "individual 64 byte granularity units").
pub const UTILISATION_UNIT: usize = 64;

/// The page cache with utilisation bitmaps. Pages are identified by a global page number
/// (`requests.rs` maps each adjacency file to a range of them). Reads go through `Deref`.
pub struct PageCache {
    pages: page_cache::PageCache,
    /// `frames × words_per_frame` bits: which 64-byte units of each resident page were used.
    touched: Vec<u64>,
    words_per_frame: usize,
    /// Σ utilisation of the pages that left the cache.
    evicted_utilisation_sum: f64,
}

impl Deref for PageCache {
    type Target = page_cache::PageCache;

    fn deref(&self) -> &page_cache::PageCache {
        &self.pages
    }
}

impl PageCache {
    /// Bytes of bookkeeping per frame besides the frame itself.
    pub fn metadata_bytes_per_frame(page_size: u64) -> u64 {
        page_cache::PageCache::METADATA_BYTES_PER_FRAME + page_size.div_ceil(UTILISATION_UNIT as u64 * 64) * 8
    }

    /// Bytes of the page table for `total_pages` pages.
    pub fn page_table_bytes(total_pages: u64) -> u64 {
        page_cache::PageCache::page_table_bytes(total_pages)
    }

    pub fn new(page_size: usize, frames: usize, total_pages: u64) -> Result<PageCache> {
        let pages = page_cache::PageCache::new(page_size, frames, total_pages)?;
        let words_per_frame = (page_size / UTILISATION_UNIT).div_ceil(64).max(1);
        Ok(PageCache {
            pages,
            touched: vec![0; frames * words_per_frame],
            words_per_frame,
            evicted_utilisation_sum: 0.0,
        })
    }

    pub fn counters(&self) -> PageCacheCounters {
        self.pages.counters()
    }

    /// The frame holding `page`, counting a hit; `None` (and nothing counted) when absent.
    pub fn lookup(&mut self, page: u64) -> Option<usize> {
        self.pages.lookup(page)
    }

    /// Chooses a frame for `page` (absent) by the clock, accounting the utilisation of the page
    /// it evicts. Counts a miss. The caller pins the frame and fills it before anyone reads it.
    pub fn allocate(&mut self, page: u64, valid_bytes: usize) -> Result<usize> {
        let allocation = self.pages.allocate(page, valid_bytes)?;
        let frame = allocation.frame;
        if let Some((_, valid)) = allocation.evicted {
            self.evicted_utilisation_sum += self.frame_utilisation(frame, valid);
        }
        self.touched[frame * self.words_per_frame..(frame + 1) * self.words_per_frame].fill(0);
        Ok(frame)
    }

    pub fn pin(&mut self, frame: usize) {
        self.pages.pin(frame)
    }

    pub fn unpin(&mut self, frame: usize) {
        self.pages.unpin(frame)
    }

    /// Records that bytes `[start, end)` of the page in `frame` were used.
    pub fn mark_used(&mut self, frame: usize, start: usize, end: usize) {
        if end <= start {
            return;
        }
        let words = &mut self.touched[frame * self.words_per_frame..(frame + 1) * self.words_per_frame];
        for unit in start / UTILISATION_UNIT..=(end - 1) / UTILISATION_UNIT {
            words[unit / 64] |= 1u64 << (unit % 64);
        }
    }

    /// Share of the 64-byte units of the page of `valid` bytes in `frame` that were used.
    fn frame_utilisation(&self, frame: usize, valid: usize) -> f64 {
        let units = valid.div_ceil(UTILISATION_UNIT).max(1);
        let words = &self.touched[frame * self.words_per_frame..(frame + 1) * self.words_per_frame];
        let used: u32 = words.iter().map(|w| w.count_ones()).sum();
        used as f64 / units as f64
    }

    /// Mean utilisation over every page that left the cache plus every page resident now (the
    /// paper's figure, §5.1), and the number of pages it averages. `None` before any fetch.
    pub fn utilisation(&self) -> (Option<f64>, u64) {
        let mut sum = self.evicted_utilisation_sum;
        let mut pages = self.counters().evictions;
        for frame in 0..self.frames() {
            if let Some((_, valid)) = self.frame_page(frame) {
                sum += self.frame_utilisation(frame, valid);
                pages += 1;
            }
        }
        ((pages > 0).then(|| sum / pages as f64), pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_evicts_unreferenced_unpinned_frames_and_accounts_utilisation() {
        let mut cache = PageCache::new(512, 2, 10).unwrap();
        let a = cache.allocate(3, 512).unwrap();
        cache.mark_used(a, 0, 64); // 1 of 8 units
        let b = cache.allocate(4, 512).unwrap();
        cache.mark_used(b, 0, 512); // all units
        assert_ne!(a, b);
        assert_eq!(cache.lookup(3), Some(a));
        cache.pin(a);
        // Page 3 is pinned: the clock must take page 4's frame.
        let c = cache.allocate(5, 100).unwrap();
        assert_eq!(c, b);
        assert_eq!(cache.lookup(4), None);
        assert_eq!(cache.counters().evictions, 1);
        assert_eq!(cache.evicted_utilisation_sum, 1.0);
        cache.mark_used(c, 0, 10); // 1 of 2 units of a 100-byte page
                                   // Evicted page 4 (1.0), resident page 3 (1/8) and page 5 (1/2).
        let (mean, pages) = cache.utilisation();
        assert_eq!(pages, 3);
        assert!((mean.unwrap() - (1.0 + 0.125 + 0.5) / 3.0).abs() < 1e-12);
        cache.unpin(a);
        assert_eq!(cache.counters().misses, 3);
        assert_eq!(cache.counters().hits, 1);
    }

    #[test]
    fn all_frames_pinned_is_an_error_not_a_hang() {
        let mut cache = PageCache::new(512, 1, 4).unwrap();
        let f = cache.allocate(0, 512).unwrap();
        cache.pin(f);
        assert!(cache.allocate(1, 512).is_err());
    }
}
