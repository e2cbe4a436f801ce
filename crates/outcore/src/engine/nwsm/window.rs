//! Adjacency windows: full adjacency lists of a set of vertices of one vertex range,
//! materialised in a batch by page-ordered reads (TurboGraph++ Appendix A.3, "Adjacency List
//! Materialization").
//!
//! For a window (ascending ids inside global range g = rank r, source range i), the pages of
//! chunks (j, i), j = 0..pq, that hold any of its ids are found through the two-level index;
//! pages already resident in the buffer manager are processed first, the others are read in
//! ascending page order; each slot's record is copied to its place in the owner's full list
//! (slot field `full_index`), so the order of pages does not matter.

use super::pages::{read_record, slots, BufferManager};
use super::partition::BbpLayout;
use super::query::Nbr;
use crate::error::{Error, Result};
use crate::store::StoreFile;
use crate::VertexId;

/// Bytes a window spends per entry and per vertex (id u32 + offset u64).
pub const ENTRY_BYTES: u64 = 4;
pub const VERTEX_BYTES: u64 = 12;

/// The two-level index of one rank's page file.
pub struct PageIndex {
    /// (first source, last source) of every page.
    pub page_sources: Vec<(u32, u32)>,
    /// Pages of chunk (destination range j, source range i), at
    /// `chunk_pages[chunks[j·q + i]..chunks[j·q + i + 1]]`, in ascending source order.
    pub chunks: Vec<u64>,
    pub chunk_pages: Vec<u32>,
}

/// Full lists of some vertices; `[lo, hi)` spans them (a level-1 window holds every vertex of
/// positive degree in that span, so its parents are exactly the neighbours in the span).
#[derive(Debug, Default)]
pub struct AdjWindow {
    pub lo: VertexId,
    pub hi: VertexId,
    pub ids: Vec<u32>,
    offsets: Vec<usize>,
    entries: Vec<Nbr>,
}

impl AdjWindow {
    pub fn list(&self, v: VertexId) -> Option<&[Nbr]> {
        let k = self.ids.binary_search(&(v as u32)).ok()?;
        Some(&self.entries[self.offsets[k]..self.offsets[k + 1]])
    }

    pub fn list_at(&self, k: usize) -> &[Nbr] {
        &self.entries[self.offsets[k]..self.offsets[k + 1]]
    }

    pub fn entries(&self) -> usize {
        self.entries.len()
    }
}

/// Collects the next window: ids from `candidates` (ascending, inside one range) while
/// `4·entries + 12·vertices` stays within `bytes`. A single list larger than that is refused.
pub fn take_window(
    candidates: &mut dyn Iterator<Item = VertexId>,
    pending: &mut Option<VertexId>,
    degree: &[u32],
    bytes: u64,
) -> Result<Vec<u32>> {
    let mut ids = Vec::new();
    let mut used = 0u64;
    while let Some(v) = pending.take().or_else(|| candidates.next()) {
        let cost = ENTRY_BYTES * degree[v as usize] as u64 + VERTEX_BYTES;
        if used + cost > bytes {
            if ids.is_empty() {
                return Err(Error::MemoryBudget(format!(
                    "the adjacency list of one vertex ({} neighbours) does not fit an adjacency window of {} bytes; \
                     give the nwsm engine more memory",
                    degree[v as usize], bytes
                )));
            }
            *pending = Some(v);
            break;
        }
        used += cost;
        ids.push(v as u32);
    }
    Ok(ids)
}

/// Asks rank `r` for `pages` and returns their bytes one after another.
pub type FetchPages<'a> = dyn Fn(usize, &[u32]) -> Result<Vec<u8>> + 'a;

/// Where the pages of a window come from: this rank's page file, or other ranks over the
/// transport (`fetch(rank, pages)` returns the pages' bytes one after another).
pub struct PageSource<'a> {
    pub rank: usize,
    pub local: &'a StoreFile,
    pub fetch: &'a FetchPages<'a>,
    /// Pages fetched from another rank at once (at most half the frames).
    pub batch_pages: usize,
}

/// Pages of this rank read ahead by a reader thread (3-LPO: the next level-1 window's pages are
/// read while the current window is computed), ascending by page, `page_size` bytes each.
#[derive(Debug, Default)]
pub struct Prefetched {
    pub pages: Vec<u32>,
    pub bytes: Vec<u8>,
}

impl Prefetched {
    /// Reads `pages` (ascending) of `local`.
    pub fn read(local: &StoreFile, page_size: u64, pages: Vec<u32>) -> Result<Prefetched> {
        let mut bytes = vec![0u8; pages.len() * page_size as usize];
        for (k, &page) in pages.iter().enumerate() {
            let frame = &mut bytes[k * page_size as usize..(k + 1) * page_size as usize];
            local.read_exact_at(frame, page as u64 * page_size)?;
        }
        Ok(Prefetched { pages, bytes })
    }

    fn get(&self, page: u32, page_size: usize) -> Option<&[u8]> {
        let k = self.pages.binary_search(&page).ok()?;
        Some(&self.bytes[k * page_size..(k + 1) * page_size])
    }
}

/// Pages of rank `g / q`'s file that hold any of `ids` (ascending, in global range `g`), in
/// ascending order, through the two-level index.
pub fn pages_of(indexes: &[PageIndex], layout: &BbpLayout, g: usize, ids: &[u32]) -> Vec<u32> {
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return Vec::new();
    };
    let (file, i) = (&indexes[g / layout.q], g % layout.q);
    let mut needed: Vec<u32> = Vec::new();
    for j in 0..layout.p * layout.q {
        let c = j * layout.q + i;
        let pages = &file.chunk_pages[file.chunks[c] as usize..file.chunks[c + 1] as usize];
        let mut k = pages.partition_point(|&page| file.page_sources[page as usize].1 < first);
        while k < pages.len() && file.page_sources[pages[k] as usize].0 <= last {
            let (lo, hi) = file.page_sources[pages[k] as usize];
            let at = ids.partition_point(|&x| x < lo);
            if at < ids.len() && ids[at] <= hi {
                needed.push(pages[k]);
            }
            k += 1;
        }
    }
    needed.sort_unstable();
    needed
}

/// Materialises the full lists of `ids` (ascending, all in global range `g`); pages of this
/// rank found in `prefetched` are taken from there. Returns the window and the number of
/// pages that came from other ranks.
#[allow(clippy::too_many_arguments)]
pub fn materialize(
    buffers: &mut BufferManager,
    indexes: &[PageIndex],
    source: &PageSource<'_>,
    layout: &BbpLayout,
    degree: &[u32],
    g: usize,
    ids: Vec<u32>,
    prefetched: &Prefetched,
) -> Result<(AdjWindow, u64)> {
    let r = g / layout.q;
    let mut remote_pages = 0u64;
    let mut offsets = Vec::with_capacity(ids.len() + 1);
    offsets.push(0usize);
    for &v in &ids {
        offsets.push(offsets.last().unwrap() + degree[v as usize] as usize);
    }
    let total = *offsets.last().unwrap();
    let mut entries = vec![Nbr(0); total];
    if !ids.is_empty() {
        // Pages holding any id of the window, chunk by chunk of the two-level index.
        let needed = pages_of(indexes, layout, g, &ids);
        // Resident pages first, then the others in ascending order (sequential reads), from
        // this rank's file or, in batches, from the owner rank.
        let (resident, missing): (Vec<u32>, Vec<u32>) = needed.into_iter().partition(|&p| buffers.is_resident(r, p));
        let mut missing = missing;
        missing.sort_unstable();
        let mut filled = 0usize;
        let mut overrun = false;
        let mut take = |buffers: &mut BufferManager, frame: usize| {
            let bytes = buffers.page(frame);
            for slot in slots(bytes) {
                if let Ok(k) = ids.binary_search(&slot.source) {
                    let at = offsets[k] + slot.full_index as usize;
                    let end = at + slot.len as usize;
                    if end > offsets[k + 1] {
                        overrun = true;
                        break;
                    }
                    read_record(bytes, &slot, &mut entries[at..end]);
                    filled += slot.len as usize;
                }
            }
            buffers.unpin(frame);
        };
        for &page in &resident {
            let frame = buffers.pin_resident(r, page).expect("resident page");
            take(buffers, frame);
        }
        if r == source.rank {
            for &page in &missing {
                let frame = match prefetched.get(page, layout.page_size as usize) {
                    Some(bytes) => buffers.pin_copy(r, page, bytes)?,
                    None => buffers.pin(r, page, source.local)?,
                };
                take(buffers, frame);
            }
        } else {
            let page_size = layout.page_size as usize;
            for batch in missing.chunks(source.batch_pages.max(1)) {
                let bytes = (source.fetch)(r, batch)?;
                if bytes.len() != batch.len() * page_size {
                    return Err(Error::Remote { rank: Some(r), message: "a page reply of the wrong size".into() });
                }
                remote_pages += batch.len() as u64;
                for (k, &page) in batch.iter().enumerate() {
                    let frame = buffers.pin_copy(r, page, &bytes[k * page_size..(k + 1) * page_size])?;
                    take(buffers, frame);
                }
            }
        }
        if overrun {
            return Err(Error::store(
                source.local.path(),
                "a page record overruns its list: the BBP layout is damaged",
            ));
        }
        if filled != total {
            return Err(Error::store(
                source.local.path(),
                format!("pages hold {filled} entries for a window of {total}: the BBP layout is damaged"),
            ));
        }
    }
    let (lo, hi) = match (ids.first(), ids.last()) {
        (Some(&a), Some(&b)) => (a as u64, b as u64 + 1),
        _ => (0, 0),
    };
    Ok((AdjWindow { lo, hi, ids, offsets, entries }, remote_pages))
}
