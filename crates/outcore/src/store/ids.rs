//! The id map: dense internal ids (0..|V|) to the user's original ids and back.
//!
//! Original ids are either u64 (possibly sparse) or arbitrary strings. The forward map is an
//! array indexed by dense id; the reverse lookup is a binary search over `ids/by-original`
//! (dense ids in ascending original-id order), so no hash map of all ids is ever held in
//! memory. Outputs iterate `by-original` to print vertices sorted by original id.

use std::cmp::Ordering;
use std::fmt;

use super::files::StoreFile;
use super::manifest::IdType;
use super::Store;
use crate::error::{Error, Result};

pub const ORIGINAL_U64: &str = "ids/original";
pub const STRING_OFFSETS: &str = "ids/strings.offsets";
pub const STRING_DATA: &str = "ids/strings.data";
pub const BY_ORIGINAL: &str = "ids/by-original";

/// An original vertex id as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OriginalId {
    U64(u64),
    Str(String),
}

impl fmt::Display for OriginalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OriginalId::U64(v) => write!(f, "{v}"),
            OriginalId::Str(s) => f.write_str(s),
        }
    }
}

impl OriginalId {
    /// Parses a user-given id for a store of the given id type.
    pub fn parse(text: &str, id_type: IdType) -> Result<OriginalId> {
        match id_type {
            IdType::U64 => text
                .trim()
                .parse::<u64>()
                .map(OriginalId::U64)
                .map_err(|_| Error::invalid(format!("vertex id '{text}' is not an unsigned 64-bit integer"))),
            IdType::String => Ok(OriginalId::Str(text.to_string())),
        }
    }
}

/// Read access to a store's id map.
pub struct IdMap {
    id_type: IdType,
    vertices: u64,
    original: Option<StoreFile>,
    string_offsets: Option<StoreFile>,
    string_data: Option<StoreFile>,
    by_original: StoreFile,
}

impl IdMap {
    pub fn open(store: &Store) -> Result<IdMap> {
        let id_type = store.manifest().id_type;
        let (original, string_offsets, string_data) = match id_type {
            IdType::U64 => (Some(store.file(ORIGINAL_U64)?), None, None),
            IdType::String => (None, Some(store.file(STRING_OFFSETS)?), Some(store.file(STRING_DATA)?)),
        };
        Ok(IdMap {
            id_type,
            vertices: store.num_vertices(),
            original,
            string_offsets,
            string_data,
            by_original: store.file(BY_ORIGINAL)?,
        })
    }

    /// Bytes of the files an output reads (every original id and the by-original order).
    pub fn file_bytes(&self) -> u64 {
        self.files().map(|f| f.len()).sum()
    }

    fn files(&self) -> impl Iterator<Item = &StoreFile> {
        [self.original.as_ref(), self.string_offsets.as_ref(), self.string_data.as_ref(), Some(&self.by_original)]
            .into_iter()
            .flatten()
    }

    /// Asks the kernel to read the id files into its page cache in the background
    /// (`POSIX_FADV_WILLNEED`), so that writing results after a run finds them there instead of
    /// reading them cold between its batches (about 50 ms for RMAT-22's 38 MB). A hint: the
    /// bytes are not charged to the budget, the kernel drops them first under pressure, and a
    /// file system that ignores it changes nothing.
    pub fn prefetch(&self) {
        for file in self.files() {
            use std::os::fd::AsRawFd;
            // SAFETY: a valid descriptor, offset 0 and length 0 (to the end of the file).
            unsafe { libc::posix_fadvise(file.raw().as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
        }
    }

    pub fn id_type(&self) -> IdType {
        self.id_type
    }

    pub fn len(&self) -> u64 {
        self.vertices
    }

    pub fn is_empty(&self) -> bool {
        self.vertices == 0
    }

    /// The original id of a dense id.
    pub fn original(&self, dense: u64) -> Result<OriginalId> {
        if dense >= self.vertices {
            return Err(Error::invalid(format!("dense id {dense} out of range (|V| = {})", self.vertices)));
        }
        match self.id_type {
            IdType::U64 => Ok(OriginalId::U64(self.original.as_ref().unwrap().read_u64_at(dense)?)),
            IdType::String => Ok(OriginalId::Str(self.string_at(dense)?)),
        }
    }

    fn string_at(&self, dense: u64) -> Result<String> {
        let offsets = self.string_offsets.as_ref().unwrap();
        let mut range = [0u64; 2];
        offsets.read_u64s_at(dense, &mut range)?;
        let mut bytes = vec![0u8; (range[1] - range[0]) as usize];
        self.string_data.as_ref().unwrap().read_exact_at(&mut bytes, range[0])?;
        String::from_utf8(bytes).map_err(|_| Error::store(self.string_data.as_ref().unwrap().path(), "id is not UTF-8"))
    }

    fn compare_at(&self, position: u64, key: &OriginalId) -> Result<Ordering> {
        let dense = self.by_original.read_u64_at(position)?;
        Ok(self.original(dense)?.cmp(key))
    }

    /// The dense id of an original id, if the graph has that vertex.
    pub fn dense(&self, key: &OriginalId) -> Result<Option<u64>> {
        let (mut lo, mut hi) = (0u64, self.vertices);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.compare_at(mid, key)? {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Some(self.by_original.read_u64_at(mid)?)),
            }
        }
        Ok(None)
    }

    /// Like [`dense`](Self::dense) from user text, with a clear error when absent.
    pub fn resolve(&self, text: &str) -> Result<u64> {
        let key = OriginalId::parse(text, self.id_type)?;
        self.dense(&key)?.ok_or_else(|| Error::invalid(format!("vertex '{text}' is not in the graph")))
    }

    /// Visits every vertex in ascending original-id order as `(dense, original)`, reading the
    /// id files in large sequential chunks: a chunk of `by-original` gives dense ids, and the
    /// originals of the span of dense ids it covers are read in one request when the span is
    /// compact (always so in an unreordered store, where `by-original` is the identity). In a
    /// reordered store a chunk's dense ids are scattered over the whole file: they are sorted
    /// and their originals read in runs of at most [`ORIGINAL_RUN`] entries, so writing results
    /// costs a few hundred requests per chunk instead of one 8-byte read per vertex (2.4 M reads,
    /// 2 s of a 2.7 s BFS on a norder-ordered RMAT-22).
    pub fn for_each_by_original(&self, visit: impl FnMut(u64, &OriginalId) -> Result<()>) -> Result<()> {
        self.for_each_by_original_in_chunks(1 << 18, visit)
    }

    /// [`for_each_by_original`](Self::for_each_by_original) reading `chunk` entries of
    /// `by-original` at a time.
    fn for_each_by_original_in_chunks(
        &self,
        chunk: u64,
        mut visit: impl FnMut(u64, &OriginalId) -> Result<()>,
    ) -> Result<()> {
        self.for_each_chunk_by_original(chunk, |rows| match rows.originals {
            Some(originals) => {
                rows.dense.iter().zip(originals).try_for_each(|(&d, &original)| visit(d, &OriginalId::U64(original)))
            }
            None => rows.dense.iter().try_for_each(|&d| visit(d, &self.original(d)?)),
        })
    }

    /// Visits the vertices in ascending original-id order, `chunk` of them at a time, as
    /// [`RowsByOriginal`]: the chunk's dense ids and, in a u64 store, their original ids row
    /// for row. For writers that format a chunk's rows on all threads
    /// ([`crate::output`]); read as [`for_each_by_original`](Self::for_each_by_original) reads.
    pub fn for_each_chunk_by_original(
        &self,
        chunk: u64,
        mut visit: impl FnMut(RowsByOriginal<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut dense = vec![0u64; chunk.max(1) as usize];
        let (mut span, mut originals) = (Vec::new(), Vec::new());
        let mut start = 0;
        while start < self.vertices {
            let n = (chunk.max(1)).min(self.vertices - start) as usize;
            let dense = &mut dense[..n];
            self.by_original.read_u64s_at(start, dense)?;
            let (lo, hi) = dense.iter().fold((u64::MAX, 0), |(lo, hi), &d| (lo.min(d), hi.max(d)));
            let originals = match &self.original {
                Some(file) if hi - lo < 4 * n as u64 => {
                    span.resize((hi - lo + 1) as usize, 0);
                    file.read_u64s_at(lo, &mut span)?;
                    originals.clear();
                    originals.extend(dense.iter().map(|&d| span[(d - lo) as usize]));
                    Some(originals.as_slice())
                }
                Some(file) => {
                    read_scattered(file, dense, &mut originals)?;
                    Some(originals.as_slice())
                }
                None => None,
            };
            visit(RowsByOriginal { dense, originals })?;
            start += n as u64;
        }
        Ok(())
    }

    /// All original u64 ids in dense order (u64 stores only; for small graphs and tests).
    pub fn all_u64(&self) -> Result<Vec<u64>> {
        let file = self.original.as_ref().ok_or_else(|| Error::invalid("this store has string ids"))?;
        let mut out = vec![0u64; self.vertices as usize];
        file.read_u64s_at(0, &mut out)?;
        Ok(out)
    }
}

/// A chunk of vertices in ascending original-id order ([`IdMap::for_each_chunk_by_original`]).
pub struct RowsByOriginal<'a> {
    /// Their dense ids.
    pub dense: &'a [u64],
    /// Their original ids, row for row, in a u64 store (`None` for string ids, which
    /// [`IdMap::original`] gives one at a time).
    pub originals: Option<&'a [u64]>,
}

/// Entries of `ids/original` read in one request when gathering scattered dense ids.
const ORIGINAL_RUN: u64 = 8 << 10;

/// `out[i]` = entry `dense[i]` of the u64 file `file`, for dense ids in any order: the ids are
/// visited sorted and the entries read in runs spanning at most [`ORIGINAL_RUN`] entries.
fn read_scattered(file: &StoreFile, dense: &[u64], out: &mut Vec<u64>) -> Result<()> {
    let mut order: Vec<u32> = (0..dense.len() as u32).collect();
    order.sort_unstable_by_key(|&i| dense[i as usize]);
    out.clear();
    out.resize(dense.len(), 0);
    let mut run = Vec::with_capacity(ORIGINAL_RUN as usize);
    let mut i = 0;
    while i < order.len() {
        let first = dense[order[i] as usize];
        let mut j = i;
        while j < order.len() && dense[order[j] as usize] - first < ORIGINAL_RUN {
            j += 1;
        }
        let last = dense[order[j - 1] as usize];
        run.resize((last - first + 1) as usize, 0);
        file.read_u64s_at(first, &mut run)?;
        for &k in &order[i..j] {
            out[k as usize] = run[(dense[k as usize] - first) as usize];
        }
        i = j;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{MemoryBudget, NoProgress};
    use crate::store::order::{reorder, VertexOrder};
    use crate::store::{build_in_memory, InMemoryGraph, OriginalIds};

    /// A randomly renumbered store of `n` vertices with original ids 3v + 7.
    fn shuffled(dir: &std::path::Path, n: u64) -> Store {
        let edges = (0..n as usize - 1).map(|v| (v, v + 1, 1.0)).collect();
        let graph = InMemoryGraph {
            vertices: OriginalIds::U64((0..n).map(|v| 3 * v + 7).collect()),
            edges,
            directed: true,
            weighted: false,
        };
        let store = build_in_memory(&dir.join("s"), &graph).unwrap();
        reorder(&store, VertexOrder::Random { seed: 9 }, MemoryBudget::new(64 << 20), &NoProgress).unwrap()
    }

    #[test]
    fn scattered_reads_equal_one_read_per_id() {
        let dir = tempfile::tempdir().unwrap();
        let store = shuffled(dir.path(), 30_000);
        let ids = IdMap::open(&store).unwrap();
        let file = ids.original.as_ref().unwrap();
        // Scattered ids with repeats, runs longer than ORIGINAL_RUN and the last entry.
        let mut dense: Vec<u64> = (0..20_000u64).map(|i| (i * 7919) % 30_000).collect();
        dense.extend([0, 29_999, 29_999, 15_000]);
        let mut got = Vec::new();
        read_scattered(file, &dense, &mut got).unwrap();
        let want: Vec<u64> = dense.iter().map(|&d| file.read_u64_at(d).unwrap()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn every_chunking_visits_in_ascending_original_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = shuffled(dir.path(), 5_000);
        let ids = IdMap::open(&store).unwrap();
        for chunk in [1, 64, 1 << 18] {
            let mut seen = Vec::new();
            ids.for_each_by_original_in_chunks(chunk, |dense, original| {
                assert_eq!(ids.original(dense)?, *original);
                seen.push(original.clone());
                Ok(())
            })
            .unwrap();
            let want: Vec<OriginalId> = (0..5_000).map(|v| OriginalId::U64(3 * v + 7)).collect();
            assert_eq!(seen, want, "chunk {chunk}");
        }
    }
}
