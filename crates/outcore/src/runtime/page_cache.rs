//! The page cache every paged engine uses: fixed-size frames taken from the memory budget, an
//! array page table (page → frame, like an operating system's), clock (second-chance)
//! replacement with reference bits, and pin counts so that a page being read or used is never
//! evicted under its reader.
//!
//! Why one cache: the cache engine (BASC paper §2.3: adjacency pages read by reader threads
//! into pinned frames) and the nwsm engine (TurboGraph++ Appendix A.3: slotted pages read on a
//! miss) need the same machinery; what differs stays in the engines: the cache engine's
//! page-utilisation accounting and request merging, nwsm's page format and per-rank files.
//! Pages are numbered globally (`0..total_pages`); an engine maps its files onto ranges of them.
//!
//! Two ways to fill a frame: [`PageCache::pin_or_load`] reads a missing page synchronously
//! through a loader (which reads through the store's [`IoCounters`](crate::runtime::IoCounters)
//! and names its file in any error); [`PageCache::allocate`] maps a page to a frame whose
//! [`FramePtr`] a reader thread fills while the caller holds it pinned. Frames are aligned for
//! `O_DIRECT` (one [`AlignedBuffer`]). A miss when every frame is pinned is an
//! [`Error::MemoryBudget`], never a hang.

use super::direct::AlignedBuffer;
use crate::error::{Error, Result};

/// No frame for this page.
const EMPTY: u32 = u32::MAX;

/// No page in this frame.
const NO_PAGE: u64 = u64::MAX;

/// Counters of one page cache, cumulative over its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageCacheCounters {
    /// Page lookups that found the page resident.
    pub hits: u64,
    /// Pages that had to be loaded (a frame was allocated for them).
    pub misses: u64,
    /// Pages that left the cache to make room.
    pub evictions: u64,
}

/// A raw pointer to one frame, handed to a reader thread.
#[derive(Debug, Clone, Copy)]
pub struct FramePtr(pub *mut u8);

// SAFETY: a FramePtr is only handed to a reader while its frame is pinned for that read and
// nobody else touches the frame until the read's completion has been received.
unsafe impl Send for FramePtr {}

/// A frame given to a page by [`PageCache::allocate`], and the page it held before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    pub frame: usize,
    /// The evicted page and its valid bytes, `None` when the frame was free.
    pub evicted: Option<(u64, usize)>,
}

/// Page frames with a page table, clock replacement and pinning.
pub struct PageCache {
    page_size: usize,
    /// Frame memory: one aligned, zeroed allocation of `frames × page_size` bytes, written
    /// through [`FramePtr`]s only.
    memory: AlignedBuffer,
    /// Page held by each frame, or `NO_PAGE`.
    frame_page: Vec<u64>,
    /// Valid bytes of the page in each frame (the last page of a file is short).
    frame_valid: Vec<u32>,
    referenced: Vec<bool>,
    pins: Vec<u32>,
    /// Global page → frame, or `EMPTY`.
    page_table: Vec<u32>,
    hand: usize,
    counters: PageCacheCounters,
}

impl PageCache {
    /// Bytes of bookkeeping per frame besides the frame itself.
    pub const METADATA_BYTES_PER_FRAME: u64 = 8 + 4 + 1 + 4 + 4;

    /// Bytes of the page table for `total_pages` pages.
    pub fn page_table_bytes(total_pages: u64) -> u64 {
        total_pages * 4
    }

    /// `frames` frames of `page_size` bytes over pages `0..total_pages`.
    pub fn new(page_size: usize, frames: usize, total_pages: u64) -> Result<PageCache> {
        if frames == 0 || frames >= EMPTY as usize {
            return Err(Error::MemoryBudget(format!(
                "a page cache needs between 1 and {} frames, not {frames}",
                EMPTY - 1
            )));
        }
        if page_size == 0 || page_size > u32::MAX as usize {
            return Err(Error::invalid(format!("a page cache cannot have pages of {page_size} bytes")));
        }
        let bytes = frames
            .checked_mul(page_size)
            .ok_or_else(|| Error::MemoryBudget(format!("{frames} frames of {page_size} bytes overflow")))?;
        Ok(PageCache {
            page_size,
            memory: AlignedBuffer::try_zeroed(bytes)
                .ok_or_else(|| Error::MemoryBudget(format!("cannot allocate a page cache of {bytes} bytes")))?,
            frame_page: vec![NO_PAGE; frames],
            frame_valid: vec![0; frames],
            referenced: vec![false; frames],
            pins: vec![0; frames],
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

    /// The frame holding `page`, without counting a lookup or touching its reference bit.
    pub fn resident_frame(&self, page: u64) -> Option<usize> {
        match self.page_table.get(page as usize) {
            Some(&frame) if frame != EMPTY => Some(frame as usize),
            _ => None,
        }
    }

    pub fn is_resident(&self, page: u64) -> bool {
        self.resident_frame(page).is_some()
    }

    /// The frame holding `page`, counting a hit and setting its reference bit; `None` (and
    /// nothing counted) when absent.
    pub fn lookup(&mut self, page: u64) -> Option<usize> {
        let frame = self.resident_frame(page)?;
        self.referenced[frame] = true;
        self.counters.hits += 1;
        Some(frame)
    }

    /// [`lookup`](Self::lookup), pinning the frame found.
    pub fn pin_resident(&mut self, page: u64) -> Option<usize> {
        let frame = self.lookup(page)?;
        self.pins[frame] += 1;
        Some(frame)
    }

    /// Pins `page`, loading it on a miss with `load`, which fills the frame's `valid` bytes. A
    /// failed load leaves the page absent (the frame is free again) and returns its error.
    pub fn pin_or_load(
        &mut self,
        page: u64,
        valid: usize,
        load: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<usize> {
        if let Some(frame) = self.pin_resident(page) {
            return Ok(frame);
        }
        let frame = self.allocate(page, valid)?.frame;
        // SAFETY: the frame lies inside the allocation and `valid <= page_size` (checked by
        // `allocate`); `&mut self` excludes every other borrow of the cache's frames, and a
        // freshly allocated frame was not handed to any reader.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.frame_ptr(frame).0, valid) };
        if let Err(e) = load(bytes) {
            self.discard(frame);
            return Err(e);
        }
        self.pins[frame] += 1;
        Ok(frame)
    }

    /// Chooses a frame for `page` (absent) by the clock, evicting its page, and maps `page` to
    /// it with its reference bit set. Counts a miss. The caller fills the frame (pinned) before
    /// anyone reads it.
    pub fn allocate(&mut self, page: u64, valid: usize) -> Result<Allocation> {
        if page as usize >= self.page_table.len() || valid > self.page_size {
            return Err(Error::invalid(format!(
                "page {page} of {valid} bytes is outside a page cache of {} pages of {} bytes",
                self.page_table.len(),
                self.page_size
            )));
        }
        if self.is_resident(page) {
            return Err(Error::invalid(format!("page {page} is already in the page cache")));
        }
        let frame = self.victim()?;
        let old = self.frame_page[frame];
        let evicted = (old != NO_PAGE).then(|| (old, self.frame_valid[frame] as usize));
        if evicted.is_some() {
            self.counters.evictions += 1;
            self.page_table[old as usize] = EMPTY;
        }
        self.frame_page[frame] = page;
        self.frame_valid[frame] = valid as u32;
        self.referenced[frame] = true;
        self.page_table[page as usize] = frame as u32;
        self.counters.misses += 1;
        Ok(Allocation { frame, evicted })
    }

    /// Clock: the first unpinned frame whose reference bit is clear, clearing bits on the way.
    /// Two full turns clear every reference bit, so an unpinned frame is found if there is one.
    fn victim(&mut self) -> Result<usize> {
        let frames = self.frames();
        for _ in 0..=2 * frames {
            let f = self.hand;
            self.hand = (self.hand + 1) % frames;
            if self.pins[f] > 0 {
                continue;
            }
            if !self.referenced[f] {
                return Ok(f);
            }
            self.referenced[f] = false;
        }
        Err(Error::MemoryBudget(format!(
            "page cache: all {frames} frames are pinned; it needs more frames than the budget gives it"
        )))
    }

    pub fn pin(&mut self, frame: usize) {
        self.pins[frame] += 1;
    }

    pub fn unpin(&mut self, frame: usize) {
        debug_assert!(self.pins[frame] > 0);
        self.pins[frame] = self.pins[frame].saturating_sub(1);
    }

    /// Forgets the page in `frame` after a failed read, so that nobody mistakes the frame for
    /// valid data; the frame is the clock's next choice.
    pub fn discard(&mut self, frame: usize) {
        let page = self.frame_page[frame];
        if page != NO_PAGE {
            self.page_table[page as usize] = EMPTY;
        }
        self.frame_page[frame] = NO_PAGE;
        self.referenced[frame] = false;
    }

    /// The page in `frame` and its valid bytes, `None` when the frame is free.
    pub fn frame_page(&self, frame: usize) -> Option<(u64, usize)> {
        let page = self.frame_page[frame];
        (page != NO_PAGE).then(|| (page, self.frame_valid[frame] as usize))
    }

    /// Pointer to a frame's memory, for a reader thread to fill.
    pub fn frame_ptr(&self, frame: usize) -> FramePtr {
        assert!(frame < self.frames(), "frame {frame} of {}", self.frames());
        // SAFETY: frame < frames, so the offset stays inside the allocation.
        FramePtr(unsafe { self.memory.as_mut_ptr().add(frame * self.page_size) })
    }

    /// The valid bytes of a resident, completely read frame.
    ///
    /// The caller guarantees that no read into this frame is in flight (it received the
    /// completion of the read that filled it, or the page was loaded by `pin_or_load`).
    pub fn frame_bytes(&self, frame: usize) -> &[u8] {
        let valid = self.frame_valid[frame] as usize;
        // SAFETY: the frame lies inside the allocation, `valid <= page_size`, and by the
        // caller's guarantee no thread writes it while this shared borrow lives.
        unsafe { std::slice::from_raw_parts(self.frame_ptr(frame).0, valid) }
    }
}

#[cfg(test)]
mod tests;
