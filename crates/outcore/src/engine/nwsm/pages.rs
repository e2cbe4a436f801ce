//! Slotted pages and the buffer manager (TurboGraph++ Appendix A.3).
//!
//! **Page format** (`page_size` bytes, 64 KiB by default): an 8-byte header (slot count, zero),
//! then *records* growing forward — the [`Nbr`] entries (u32, little-endian) of a part of one
//! vertex's adjacency list — and *slots* growing backward from the end, 16 bytes each:
//! (source id, byte offset of the record, entries in it, index of its first entry in the
//! source's full list). The last field lets a full list be assembled from its parts in any page
//! order, so that pages already in memory can be processed first. A list longer than a page
//! continues in the next page with another slot.
//!
//! **Buffer manager**: `frames` page-sized frames taken from the budget, an array page table
//! per file (page → frame, like an operating system's), clock replacement with reference bits,
//! and pin counts so that a page being read is never evicted. Every read goes through the
//! store's [`IoCounters`](crate::runtime::IoCounters).

use std::time::{Duration, Instant};

use super::query::Nbr;
use crate::error::{Error, Result};
use crate::store::StoreFile;

pub const HEADER_BYTES: usize = 8;
pub const SLOT_BYTES: usize = 16;
/// The smallest page that holds a slot and a few entries.
pub const MIN_PAGE_SIZE: u64 = 64;

/// One slot: where a part of `source`'s list lies in the page and where it goes in the full list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub source: u32,
    pub offset: u32,
    pub len: u32,
    pub full_index: u32,
}

fn u32_at(page: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(page[at..at + 4].try_into().unwrap())
}

/// The slots of a page, in the order written (ascending source).
pub fn slots(page: &[u8]) -> impl Iterator<Item = Slot> + '_ {
    let count = u32_at(page, 0) as usize;
    (0..count).map(move |k| {
        let at = page.len() - (k + 1) * SLOT_BYTES;
        Slot {
            source: u32_at(page, at),
            offset: u32_at(page, at + 4),
            len: u32_at(page, at + 8),
            full_index: u32_at(page, at + 12),
        }
    })
}

/// Copies the entries of `slot` into `out` (of length `slot.len`).
pub fn read_record(page: &[u8], slot: &Slot, out: &mut [Nbr]) {
    let start = slot.offset as usize;
    for (k, e) in out.iter_mut().enumerate() {
        *e = Nbr(u32_at(page, start + 4 * k));
    }
}

/// Builds pages one after another; [`finish_page`](Self::finish_page) hands back full pages.
pub struct PageBuilder {
    page: Vec<u8>,
    records_end: usize,
    slots: usize,
    first_source: u32,
    last_source: u32,
}

impl PageBuilder {
    pub fn new(page_size: u64) -> PageBuilder {
        PageBuilder {
            page: vec![0u8; page_size as usize],
            records_end: HEADER_BYTES,
            slots: 0,
            first_source: 0,
            last_source: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.slots == 0
    }

    /// Entries that still fit with one more slot.
    fn room(&self) -> usize {
        let used = self.records_end + (self.slots + 1) * SLOT_BYTES;
        self.page.len().saturating_sub(used) / 4
    }

    /// Adds as much of `entries` as fits, as a record of `source` starting at `full_index` of
    /// its full list; returns how many entries were taken (0: the page is full).
    pub fn add(&mut self, source: u32, entries: &[Nbr], full_index: u32) -> usize {
        let take = self.room().min(entries.len());
        if take == 0 {
            return 0;
        }
        for (k, e) in entries[..take].iter().enumerate() {
            let at = self.records_end + 4 * k;
            self.page[at..at + 4].copy_from_slice(&e.0.to_le_bytes());
        }
        let at = self.page.len() - (self.slots + 1) * SLOT_BYTES;
        for (k, field) in [source, self.records_end as u32, take as u32, full_index].into_iter().enumerate() {
            self.page[at + 4 * k..at + 4 * k + 4].copy_from_slice(&field.to_le_bytes());
        }
        if self.slots == 0 {
            self.first_source = source;
        }
        self.last_source = source;
        self.slots += 1;
        self.records_end += 4 * take;
        take
    }

    /// The finished page bytes and its (first, last) source; the builder starts a new page.
    pub fn finish_page(&mut self) -> (&[u8], (u32, u32)) {
        self.page[0..4].copy_from_slice(&(self.slots as u32).to_le_bytes());
        let sources = (self.first_source, self.last_source);
        self.slots = 0;
        self.records_end = HEADER_BYTES;
        (&self.page, sources)
    }

    /// Zeroes the page after it was written out.
    pub fn clear(&mut self) {
        self.page.fill(0);
    }
}

/// Counters of the buffer manager.
#[derive(Debug, Clone, Copy, Default)]
pub struct BufferStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub bytes_read: u64,
    pub read_time: Duration,
}

const NO_FRAME: u32 = u32::MAX;

/// Page frames over one or more page files, with clock replacement and pinning.
pub struct BufferManager {
    page_size: usize,
    frames: Vec<u8>,
    /// (file, page) held by each frame, or `None`.
    holder: Vec<Option<(usize, u32)>>,
    referenced: Vec<bool>,
    pins: Vec<u32>,
    hand: usize,
    /// Per file: page → frame (`NO_FRAME` when not resident).
    tables: Vec<Vec<u32>>,
    pub stats: BufferStats,
}

impl BufferManager {
    /// `frames` frames for files of `pages_per_file` pages each.
    pub fn new(page_size: u64, frames: usize, pages_per_file: &[u64]) -> BufferManager {
        let frames = frames.max(1);
        BufferManager {
            page_size: page_size as usize,
            frames: vec![0u8; frames * page_size as usize],
            holder: vec![None; frames],
            referenced: vec![false; frames],
            pins: vec![0; frames],
            hand: 0,
            tables: pages_per_file.iter().map(|&n| vec![NO_FRAME; n as usize]).collect(),
            stats: BufferStats::default(),
        }
    }

    pub fn frames(&self) -> usize {
        self.holder.len()
    }

    pub fn is_resident(&self, file: usize, page: u32) -> bool {
        self.tables[file][page as usize] != NO_FRAME
    }

    /// Pins page `page` of `file` if it is resident.
    pub fn pin_resident(&mut self, file: usize, page: u32) -> Option<usize> {
        let frame = self.tables[file][page as usize];
        if frame == NO_FRAME {
            return None;
        }
        let f = frame as usize;
        self.pins[f] += 1;
        self.referenced[f] = true;
        self.stats.hits += 1;
        Some(f)
    }

    /// Pins page `page` of `file`, reading it from `source` on a miss; returns its frame.
    pub fn pin(&mut self, file: usize, page: u32, source: &StoreFile) -> Result<usize> {
        if let Some(f) = self.pin_resident(file, page) {
            return Ok(f);
        }
        let started = Instant::now();
        let page_size = self.page_size as u64;
        let f = self.fill(file, page, |frame| source.read_exact_at(frame, page as u64 * page_size))?;
        self.stats.read_time += started.elapsed();
        self.stats.bytes_read += page_size;
        Ok(f)
    }

    /// Pins page `page` of `file` with `bytes` that arrived from its owner rank (a miss served
    /// over the transport); a resident copy is used as it is.
    pub fn pin_copy(&mut self, file: usize, page: u32, bytes: &[u8]) -> Result<usize> {
        if let Some(f) = self.pin_resident(file, page) {
            return Ok(f);
        }
        self.fill(file, page, |frame| {
            frame.copy_from_slice(bytes);
            Ok(())
        })
    }

    /// Takes a frame by clock replacement, fills it and pins it for (file, page).
    fn fill(&mut self, file: usize, page: u32, fill: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<usize> {
        let f = self.victim()?;
        if let Some((old_file, old_page)) = self.holder[f].take() {
            self.tables[old_file][old_page as usize] = NO_FRAME;
            self.stats.evictions += 1;
        }
        fill(&mut self.frames[f * self.page_size..(f + 1) * self.page_size])?;
        self.stats.misses += 1;
        self.tables[file][page as usize] = f as u32;
        self.holder[f] = Some((file, page));
        self.pins[f] = 1;
        self.referenced[f] = true;
        Ok(f)
    }

    pub fn unpin(&mut self, frame: usize) {
        self.pins[frame] -= 1;
    }

    pub fn page(&self, frame: usize) -> &[u8] {
        &self.frames[frame * self.page_size..(frame + 1) * self.page_size]
    }

    /// Clock: the first unpinned frame whose reference bit is clear, clearing bits on the way.
    fn victim(&mut self) -> Result<usize> {
        let n = self.holder.len();
        for _ in 0..2 * n + 1 {
            let f = self.hand;
            self.hand = (self.hand + 1) % n;
            if self.pins[f] > 0 {
                continue;
            }
            if self.holder[f].is_none() || !self.referenced[f] {
                return Ok(f);
            }
            self.referenced[f] = false;
        }
        Err(Error::MemoryBudget("every page frame is pinned; the buffer needs more frames".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_builder_splits_long_lists_and_slots_read_back() {
        let mut b = PageBuilder::new(128);
        let list: Vec<Nbr> = (0..40).map(|i| Nbr::new(i, true, false)).collect();
        let taken = b.add(7, &list, 0);
        assert!(taken > 0 && taken < 40);
        assert_eq!(b.add(8, &list[taken..], taken as u32), 0, "a full page takes nothing");
        let (page, sources) = b.finish_page();
        assert_eq!(sources, (7, 7));
        let s: Vec<Slot> = slots(page).collect();
        assert_eq!(s.len(), 1);
        let mut out = vec![Nbr(0); s[0].len as usize];
        read_record(page, &s[0], &mut out);
        assert_eq!(out, list[..taken]);
    }
}
