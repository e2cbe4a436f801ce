//! The engine's own page cache: fixed-size frames taken from the memory budget, an array page
//! table, clock (second-chance) replacement, and the paper's page-utilisation accounting.
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

use std::alloc::{alloc_zeroed, dealloc, Layout};

use crate::error::{Error, Result};

/// Granularity of the utilisation bitmaps (paper §5.1: "individual 64 byte granularity units").
pub const UTILISATION_UNIT: usize = 64;

/// No page in this frame / no frame for this page.
const EMPTY: u32 = u32::MAX;

/// Alignment of frame memory: enough for `O_DIRECT` on 4 KiB logical blocks.
pub const FRAME_ALIGN: usize = 4096;

/// Counters of one page cache, cumulative over its life.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PageCacheCounters {
    /// Page lookups that found the page resident.
    pub hits: u64,
    /// Page lookups that had to read the page.
    pub misses: u64,
    /// Pages that left the cache to make room.
    pub evictions: u64,
    /// Σ utilisation of the pages that left the cache.
    pub evicted_utilisation_sum: f64,
}

/// Frame memory: one aligned allocation of `frames × page_size` bytes.
struct FrameMemory {
    ptr: *mut u8,
    layout: Layout,
}

impl FrameMemory {
    fn new(bytes: usize) -> Result<FrameMemory> {
        let layout = Layout::from_size_align(bytes.max(FRAME_ALIGN), FRAME_ALIGN)
            .map_err(|e| Error::MemoryBudget(format!("page cache of {bytes} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size (at least FRAME_ALIGN bytes).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::MemoryBudget(format!("cannot allocate a page cache of {bytes} bytes")));
        }
        Ok(FrameMemory { ptr, layout })
    }
}

impl Drop for FrameMemory {
    fn drop(&mut self) {
        // SAFETY: `ptr` was returned by `alloc_zeroed` with exactly this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

// SAFETY: the allocation is plain bytes owned by the cache; concurrent access to distinct
// frames is coordinated by pinning (see `requests.rs`).
unsafe impl Send for FrameMemory {}
unsafe impl Sync for FrameMemory {}

/// A raw pointer to one frame, handed to a reader thread.
#[derive(Debug, Clone, Copy)]
pub struct FramePtr(pub *mut u8);

// SAFETY: a FramePtr is only handed to a reader while its frame is pinned for that read and
// nobody else touches the frame until the read's completion has been received.
unsafe impl Send for FramePtr {}

/// The page cache. Pages are identified by a global page number (`requests.rs` maps each
/// adjacency file to a range of them).
pub struct PageCache {
    page_size: usize,
    memory: FrameMemory,
    /// Page held by each frame, or `u64::MAX`.
    frame_page: Vec<u64>,
    /// Valid bytes of the page in each frame (the last page of a file is short).
    frame_valid: Vec<u32>,
    referenced: Vec<bool>,
    pins: Vec<u32>,
    /// `frames × words_per_frame` bits: which 64-byte units of each resident page were used.
    touched: Vec<u64>,
    words_per_frame: usize,
    /// Global page → frame, or `EMPTY`.
    page_table: Vec<u32>,
    hand: usize,
    counters: PageCacheCounters,
}

impl PageCache {
    /// Bytes of bookkeeping per frame besides the frame itself.
    pub fn metadata_bytes_per_frame(page_size: u64) -> u64 {
        8 + 4 + 1 + 4 + 4 + page_size.div_ceil(UTILISATION_UNIT as u64 * 64) * 8
    }

    /// Bytes of the page table for `total_pages` pages.
    pub fn page_table_bytes(total_pages: u64) -> u64 {
        total_pages * 4
    }

    pub fn new(page_size: usize, frames: usize, total_pages: u64) -> Result<PageCache> {
        if frames == 0 || frames >= EMPTY as usize {
            return Err(Error::MemoryBudget(format!(
                "a page cache needs between 1 and {} frames, not {frames}",
                EMPTY - 1
            )));
        }
        let words_per_frame = (page_size / UTILISATION_UNIT).div_ceil(64).max(1);
        Ok(PageCache {
            page_size,
            memory: FrameMemory::new(frames * page_size)?,
            frame_page: vec![u64::MAX; frames],
            frame_valid: vec![0; frames],
            referenced: vec![false; frames],
            pins: vec![0; frames],
            touched: vec![0; frames * words_per_frame],
            words_per_frame,
            page_table: vec![EMPTY; total_pages as usize],
            hand: 0,
            counters: PageCacheCounters::default(),
        })
    }

    pub fn frames(&self) -> usize {
        self.frame_page.len()
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn counters(&self) -> PageCacheCounters {
        self.counters
    }

    /// The frame holding `page`, counting a hit and setting its reference bit; `None` (and
    /// nothing counted) when absent.
    pub fn lookup(&mut self, page: u64) -> Option<usize> {
        let frame = self.page_table[page as usize];
        if frame == EMPTY {
            return None;
        }
        let frame = frame as usize;
        self.referenced[frame] = true;
        self.counters.hits += 1;
        Some(frame)
    }

    /// The frame holding `page`, without counting a lookup (for pages the caller has pinned).
    pub fn resident_frame(&self, page: u64) -> Option<usize> {
        let frame = self.page_table[page as usize];
        (frame != EMPTY).then_some(frame as usize)
    }

    /// Chooses a frame for `page` (absent) by the clock, evicting its page, and maps `page` to
    /// it. Counts a miss. The caller pins the frame and fills it before anyone reads it.
    pub fn allocate(&mut self, page: u64, valid_bytes: usize) -> Result<usize> {
        debug_assert_eq!(self.page_table[page as usize], EMPTY);
        let frames = self.frames();
        // Two full turns clear every reference bit; an unpinned frame is then found.
        let mut steps = 0;
        let victim = loop {
            if steps > 2 * frames {
                return Err(Error::MemoryBudget(
                    "page cache: every frame is pinned (the cache is too small for one batch of requests)".into(),
                ));
            }
            steps += 1;
            let f = self.hand;
            self.hand = (self.hand + 1) % frames;
            if self.pins[f] > 0 {
                continue;
            }
            if self.referenced[f] {
                self.referenced[f] = false;
                continue;
            }
            break f;
        };
        let old = self.frame_page[victim];
        if old != u64::MAX {
            self.counters.evictions += 1;
            self.counters.evicted_utilisation_sum += self.frame_utilisation(victim);
            self.page_table[old as usize] = EMPTY;
        }
        self.frame_page[victim] = page;
        self.frame_valid[victim] = valid_bytes as u32;
        self.referenced[victim] = true;
        self.touched[victim * self.words_per_frame..(victim + 1) * self.words_per_frame].fill(0);
        self.page_table[page as usize] = victim as u32;
        self.counters.misses += 1;
        Ok(victim)
    }

    pub fn pin(&mut self, frame: usize) {
        self.pins[frame] += 1;
    }

    pub fn unpin(&mut self, frame: usize) {
        debug_assert!(self.pins[frame] > 0);
        self.pins[frame] -= 1;
    }

    /// Forgets `page` after a failed read, so that nobody mistakes the frame for valid data.
    pub fn discard(&mut self, frame: usize) {
        let page = self.frame_page[frame];
        if page != u64::MAX {
            self.page_table[page as usize] = EMPTY;
        }
        self.frame_page[frame] = u64::MAX;
        self.referenced[frame] = false;
    }

    /// Pointer to a frame's memory, for a reader thread to fill.
    pub fn frame_ptr(&self, frame: usize) -> FramePtr {
        // SAFETY: frame < frames, so the offset stays inside the allocation.
        FramePtr(unsafe { self.memory.ptr.add(frame * self.page_size) })
    }

    /// The valid bytes of a resident, completely read frame.
    ///
    /// The caller guarantees that no read into this frame is in flight (it received the
    /// completion of the read that filled it, or found the page resident from an earlier,
    /// completed batch).
    pub fn frame_bytes(&self, frame: usize) -> &[u8] {
        let valid = self.frame_valid[frame] as usize;
        // SAFETY: the frame lies inside the allocation, `valid <= page_size`, and by the
        // caller's guarantee no thread writes it while this shared borrow lives.
        unsafe { std::slice::from_raw_parts(self.memory.ptr.add(frame * self.page_size), valid) }
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

    /// Share of the 64-byte units of the page in `frame` that were used.
    fn frame_utilisation(&self, frame: usize) -> f64 {
        let units = (self.frame_valid[frame] as usize).div_ceil(UTILISATION_UNIT).max(1);
        let words = &self.touched[frame * self.words_per_frame..(frame + 1) * self.words_per_frame];
        let used: u32 = words.iter().map(|w| w.count_ones()).sum();
        used as f64 / units as f64
    }

    /// Mean utilisation over every page that left the cache plus every page resident now (the
    /// paper's figure, §5.1), and the number of pages it averages. `None` before any fetch.
    pub fn utilisation(&self) -> (Option<f64>, u64) {
        let mut sum = self.counters.evicted_utilisation_sum;
        let mut pages = self.counters.evictions;
        for frame in 0..self.frames() {
            if self.frame_page[frame] != u64::MAX {
                sum += self.frame_utilisation(frame);
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
        assert_eq!(cache.counters().evicted_utilisation_sum, 1.0);
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
