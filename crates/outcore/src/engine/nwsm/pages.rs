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
//! **Buffer manager**: the runtime's [`PageCache`] (`frames` page-sized frames taken from the
//! budget, clock replacement, pin counts so that a page being read is never evicted) over this
//! engine's per-rank page files, numbered one after another. Every read goes through the
//! store's [`IoCounters`](crate::runtime::IoCounters).

use std::time::{Duration, Instant};

use super::query::Nbr;
use crate::error::{Error, Result};
use crate::runtime::PageCache;
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

/// The runtime's page cache over one or more page files (one per rank), numbered one after
/// another; counts the bytes and time of reads from this rank's file.
pub struct BufferManager {
    cache: PageCache,
    /// Global number of each file's first page.
    first_page: Vec<u64>,
    bytes_read: u64,
    read_time: Duration,
}

impl BufferManager {
    /// `frames` frames (at least one) for files of `pages_per_file` pages each.
    pub fn new(page_size: u64, frames: usize, pages_per_file: &[u64]) -> Result<BufferManager> {
        let first_page: Vec<u64> = pages_per_file
            .iter()
            .scan(0u64, |next, &n| {
                let first = *next;
                *next += n;
                Some(first)
            })
            .collect();
        let total: u64 = pages_per_file.iter().sum();
        // No more frames than pages: a large budget's frames would all be allocated and zeroed
        // for every query (on RMAT-18 at 8 GiB, 1 GiB of frames per round for a 40 MiB layout).
        let frames = frames.clamp(1, total.max(1) as usize);
        let cache = PageCache::new(page_size as usize, frames, total)?;
        Ok(BufferManager { cache, first_page, bytes_read: 0, read_time: Duration::ZERO })
    }

    pub fn stats(&self) -> BufferStats {
        let c = self.cache.counters();
        BufferStats {
            hits: c.hits,
            misses: c.misses,
            evictions: c.evictions,
            bytes_read: self.bytes_read,
            read_time: self.read_time,
        }
    }

    fn global(&self, file: usize, page: u32) -> u64 {
        self.first_page[file] + page as u64
    }

    pub fn is_resident(&self, file: usize, page: u32) -> bool {
        self.cache.is_resident(self.global(file, page))
    }

    /// Pins page `page` of `file` if it is resident.
    pub fn pin_resident(&mut self, file: usize, page: u32) -> Option<usize> {
        self.cache.pin_resident(self.global(file, page))
    }

    /// Pins page `page` of `file`, reading it from `source` on a miss; returns its frame.
    pub fn pin(&mut self, file: usize, page: u32, source: &StoreFile) -> Result<usize> {
        let global = self.global(file, page);
        if let Some(f) = self.cache.pin_resident(global) {
            return Ok(f);
        }
        let started = Instant::now();
        let page_size = self.cache.page_size();
        let offset = page as u64 * page_size as u64;
        let f = self.cache.pin_or_load(global, page_size, |frame| source.read_exact_at(frame, offset))?;
        self.read_time += started.elapsed();
        self.bytes_read += page_size as u64;
        Ok(f)
    }

    /// Pins page `page` of `file` with `bytes` that arrived from its owner rank (a miss served
    /// over the transport); a resident copy is used as it is.
    pub fn pin_copy(&mut self, file: usize, page: u32, bytes: &[u8]) -> Result<usize> {
        let page_size = self.cache.page_size();
        if bytes.len() != page_size {
            return Err(Error::Remote {
                rank: Some(file),
                message: format!("page {page} arrived with {} bytes, not {page_size}", bytes.len()),
            });
        }
        self.cache.pin_or_load(self.global(file, page), page_size, |frame| {
            frame.copy_from_slice(bytes);
            Ok(())
        })
    }

    pub fn unpin(&mut self, frame: usize) {
        self.cache.unpin(frame);
    }

    pub fn page(&self, frame: usize) -> &[u8] {
        self.cache.frame_bytes(frame)
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

    #[test]
    fn a_buffer_manager_has_no_more_frames_than_pages() {
        let huge_budget_frames = 1 << 20;
        let buffers = BufferManager::new(4096, huge_budget_frames, &[3, 4]).unwrap();
        assert_eq!(buffers.cache.frames(), 7);
        assert_eq!(BufferManager::new(4096, 2, &[3, 4]).unwrap().cache.frames(), 2);
        assert_eq!(BufferManager::new(4096, 0, &[0]).unwrap().cache.frames(), 1);
    }
}
