//! Page requests: how the cache engine reads adjacency pages from disk.
//!
//! The requests of a batch of active vertices are deduplicated and sorted by page (vertices are
//! visited in ascending id, so their adjacency ranges, and pages, come in file order), and runs
//! of adjacent missing pages are merged into one request (FlashGraph's request merging, BASC
//! paper §2.1), up to [`MAX_PAGES_PER_REQUEST`] pages and `max_request_bytes`. A merged request
//! is one `preadv` that scatters the pages straight into their cache frames, so merging costs
//! no copy.
//!
//! Requests are issued to a few reader threads and run while the compute thread scatters the
//! previous batch: several requests are in flight at once, and I/O overlaps computation.
//!
//! **Keeping the OS cache out of the measurement** (paper §5: "the OS page cache is turned off
//! by setting the O_DIRECT flag"): when the page size is a multiple of 4 KiB the files are
//! switched to `O_DIRECT` (frames are 4 KiB-aligned), after a probe read shows the file system
//! accepts it. Otherwise (512-byte pages, tmpfs, ...) reads are buffered and each request is
//! followed by `posix_fadvise(POSIX_FADV_DONTNEED)` on its range, which drops those pages from
//! the OS cache again, so a page evicted from our cache costs a real read the next time.
//! The switch, the aligned memory and the counted reads are the runtime's
//! ([`crate::runtime::direct`], [`CountedFile`]): every request is counted in the store's
//! [`IoCounters`](crate::runtime::IoCounters).

use crossbeam_channel::Sender;

use super::page_cache::FramePtr;
use crate::error::Result;
use crate::runtime::direct::{drop_from_os_cache, DIRECT_ALIGN};
use crate::runtime::CountedFile;
use crate::store::csr::check_encoded_ids;
use crate::store::StoreFile;

/// Upper bound of pages in one merged request (below Linux's IOV_MAX of 1024).
pub const MAX_PAGES_PER_REQUEST: usize = 512;

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoMode {
    /// `O_DIRECT`: the OS cache is bypassed.
    Direct,
    /// Buffered reads followed by `POSIX_FADV_DONTNEED` on the range read.
    BufferedDontNeed,
}

impl IoMode {
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Direct => "direct",
            IoMode::BufferedDontNeed => "buffered+fadvise-dontneed",
        }
    }
}

/// One adjacency file (targets or weights of csr-out or csr-in) read in pages.
pub struct PagedFile {
    /// The store file: its path and block checks.
    pub file: StoreFile,
    /// The same file, opened for the page reads (counted in the store's counters).
    reader: CountedFile,
    pub len: u64,
    /// Global number of this file's first page.
    pub first_page: u64,
    pub pages: u64,
    pub mode: IoMode,
    pub page_size: u64,
    /// For a targets file: (bytes per id, vertex count) to check every page's ids against.
    pub ids: Option<(u64, u64)>,
}

impl PagedFile {
    /// Opens the file for paged reads, with `O_DIRECT` when the page size is a multiple of its
    /// alignment and the file system takes it, and drops its pages from the OS cache so that a
    /// run starts cold, as in the paper's experiments.
    pub fn open(file: StoreFile, first_page: u64, page_size: u64) -> Result<PagedFile> {
        let len = file.len();
        let pages = len.div_ceil(page_size);
        let want_direct = page_size.is_multiple_of(DIRECT_ALIGN as u64);
        let reader = CountedFile::open(file.path(), want_direct, file.counters().clone())?;
        let mode = if reader.is_direct() { IoMode::Direct } else { IoMode::BufferedDontNeed };
        drop_from_os_cache(reader.raw(), 0, len);
        Ok(PagedFile { file, reader, len, first_page, pages, mode, page_size, ids: None })
    }

    /// Valid bytes of local page `page` (the last page of a file may be short).
    pub fn page_bytes(&self, page: u64) -> usize {
        (self.len - page * self.page_size).min(self.page_size) as usize
    }
}

/// One merged request: consecutive pages of one file, each read into its own frame.
pub struct ReadRequest {
    /// Index of the file in the engine's file table.
    pub file: usize,
    /// Local number of the first page.
    pub first_page: u64,
    /// Frame of each page, in page order.
    pub frames: Vec<FramePtr>,
    /// Valid bytes of each page.
    pub valid: Vec<usize>,
}

/// A request handed to a reader thread, with where to report its completion.
pub struct ReadJob {
    pub request: ReadRequest,
    pub done: Sender<Result<()>>,
}

/// Performs one merged request: one counted `preadv` straight into the frames (whole pages
/// under `O_DIRECT`, the valid bytes otherwise), whose pages are then verified; in buffered
/// mode the range is dropped from the OS cache again.
pub fn perform(file: &PagedFile, request: &ReadRequest) -> Result<()> {
    let offset = request.first_page * file.page_size;
    let expected: usize = request.valid.iter().sum();
    let mut frames: Vec<&mut [u8]> = request
        .frames
        .iter()
        .zip(&request.valid)
        .map(|(frame, &valid)| {
            let len = if file.mode == IoMode::Direct { file.page_size as usize } else { valid };
            // SAFETY: every frame is a pinned frame of `page_size` bytes that no other thread
            // reads or writes until this request's completion is received (see mod.rs).
            unsafe { std::slice::from_raw_parts_mut(frame.0, len) }
        })
        .collect();
    file.reader.read_vectored_at(&mut frames, offset, expected)?;
    for (i, (frame, &valid)) in frames.iter().zip(&request.valid).enumerate() {
        let bytes = &frame[..valid];
        file.file.verify(bytes, offset + i as u64 * file.page_size)?;
        if let Some((width, vertices)) = file.ids {
            check_encoded_ids(file.file.path(), bytes, width, vertices)?;
        }
    }
    if file.mode == IoMode::BufferedDontNeed {
        drop_from_os_cache(file.reader.raw(), offset, expected as u64);
    }
    Ok(())
}

/// Groups sorted missing pages `(file, local page, frame, valid bytes)` into merged requests of
/// consecutive pages of one file, at most `max_pages` each.
pub fn merge_requests(missing: &[(usize, u64, FramePtr, usize)], max_pages: usize) -> Vec<ReadRequest> {
    let mut requests: Vec<ReadRequest> = Vec::new();
    for &(file, page, frame, valid) in missing {
        if let Some(last) = requests.last_mut() {
            let next_page = last.first_page + last.frames.len() as u64;
            if last.file == file && next_page == page && last.frames.len() < max_pages {
                last.frames.push(frame);
                last.valid.push(valid);
                continue;
            }
        }
        requests.push(ReadRequest { file, first_page: page, frames: vec![frame], valid: vec![valid] });
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_only_adjacent_pages_of_the_same_file() {
        let f = FramePtr(std::ptr::null_mut());
        let missing =
            [(0, 1, f, 8), (0, 2, f, 8), (0, 3, f, 8), (0, 5, f, 8), (1, 6, f, 8), (1, 7, f, 8), (1, 8, f, 4)];
        let merged = merge_requests(&missing, 2);
        let shape: Vec<(usize, u64, usize)> = merged.iter().map(|r| (r.file, r.first_page, r.frames.len())).collect();
        assert_eq!(shape, vec![(0, 1, 2), (0, 3, 1), (0, 5, 1), (1, 6, 2), (1, 8, 1)]);
        assert_eq!(merged[4].valid, vec![4]);
    }
}
