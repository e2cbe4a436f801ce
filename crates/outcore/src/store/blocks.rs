//! Block checksums: every store file is verified as it is read, not only by `info --verify`.
//!
//! Each file written through [`StoreFileWriter`](super::StoreFileWriter) (imports and every
//! derived layout) gets a sidecar `FILE.crc32c`: one little-endian CRC32C per [`BLOCK_BYTES`]
//! block of the file. The manifest entry records the sidecar's own CRC32C
//! ([`FileEntry::blocks_crc32c`]), so the sidecar is checked in full when a run first opens the
//! file (it is 1/16384 of the file). Every read of a store file goes through [`FileChecks::verify`]
//! (from [`StoreFile`](super::StoreFile) reads, the stream engine's direct reads, the cache
//! engine's io_uring pages and pregel's partition streams): the blocks a read touches are checked
//! before the bytes are returned, once per block and open store (a bitmap remembers which), so a
//! flipped byte anywhere is an error naming the file and offset before any value derived from it
//! is used. 64 KiB is below every engine's read unit, and hardware CRC32C (SSE4.2) checks it at
//! many GB/s; a read that covers part of a block re-reads that block once to check it.
//!
//! Stores written before block checksums (no `blocks_crc32c` in the manifest) stay readable: the
//! first open of each file in a process reads it whole, checks its CRC-32 against the manifest
//! and derives the block table in memory, so the same guarantee holds at the cost of one extra
//! pass over each file a run uses. Re-importing the store adds the sidecars.
//!
//! What a run verified is counted ([`IoCounters::record_verified`], `bytes_verified` in the
//! run's stats), so tests can assert that a run checked what it read.
//!
//! The cargo feature `unchecked-blocks` turns [`FileChecks::verify`] into a no-op at compile
//! time (sidecars are still written, loaded and their own checksums checked; `info --verify`
//! still checks every file whole). It exists only to measure what the checks cost
//! (`scripts/bench-checksums.sh` builds the release binary with and without it) and must never
//! be enabled in a shipped build: with it, a flipped byte in a store gives wrong results.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::manifest::FileEntry;
use crate::error::{Error, Result};
use crate::runtime::IoCounters;

/// Whether reads are verified against block checksums (false only in measurement builds with
/// the `unchecked-blocks` feature, see the module docs).
pub const CHECKED: bool = !cfg!(feature = "unchecked-blocks");

/// Bytes covered by one block checksum.
pub const BLOCK_BYTES: u64 = 64 << 10;

/// The sidecar holding the block checksums of `path`.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".crc32c");
    PathBuf::from(name)
}

/// Accumulates the CRC32C of each block of a file as it is written sequentially.
#[derive(Debug, Default)]
pub struct BlockHasher {
    crcs: Vec<u32>,
    current: u32,
    in_block: u64,
}

impl BlockHasher {
    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = ((BLOCK_BYTES - self.in_block) as usize).min(bytes.len());
            self.current = crc32c::crc32c_append(self.current, &bytes[..take]);
            self.in_block += take as u64;
            bytes = &bytes[take..];
            if self.in_block == BLOCK_BYTES {
                self.crcs.push(self.current);
                self.current = 0;
                self.in_block = 0;
            }
        }
    }

    /// The block checksums, a short last block included.
    pub fn finish(mut self) -> Vec<u32> {
        if self.in_block > 0 {
            self.crcs.push(self.current);
        }
        self.crcs
    }

    /// Writes the sidecar of `path` (synced) and returns the sidecar's own CRC32C.
    pub fn write_sidecar(self, path: &Path, sync: bool) -> Result<u32> {
        let bytes: Vec<u8> = self.finish().iter().flat_map(|c| c.to_le_bytes()).collect();
        let side = sidecar_path(path);
        let io = |e: std::io::Error| Error::io(format!("writing {}", side.display()), e);
        let mut f = File::create(&side).map_err(io)?;
        std::io::Write::write_all(&mut f, &bytes).map_err(io)?;
        if sync {
            f.sync_all().map_err(io)?;
        }
        Ok(crc32c::crc32c(&bytes))
    }
}

/// The block checksums of one open store file and which blocks this process has verified.
#[derive(Debug)]
pub struct FileChecks {
    path: PathBuf,
    file: File,
    len: u64,
    crcs: Vec<u32>,
    verified: Vec<AtomicU64>,
    /// Where the bytes verified are counted.
    counters: IoCounters,
}

impl FileChecks {
    /// Loads the checks of the store file `path` described by `entry`: from its sidecar, or for
    /// a store without sidecars by reading the whole file (checked against the manifest CRC-32).
    /// Bytes verified later are counted in `counters`.
    pub fn load(path: &Path, entry: &FileEntry, counters: IoCounters) -> Result<FileChecks> {
        let file = File::open(path).map_err(|e| Error::store(path, format!("cannot open: {e}")))?;
        let blocks = entry.bytes.div_ceil(BLOCK_BYTES) as usize;
        let verified = (0..blocks.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let mut checks =
            FileChecks { path: path.to_path_buf(), file, len: entry.bytes, crcs: Vec::new(), verified, counters };
        match entry.blocks_crc32c {
            Some(expected) => checks.crcs = read_sidecar(path, blocks, expected)?,
            None if CHECKED => checks.derive_from_whole_file(entry.crc32)?,
            None => {}
        }
        Ok(checks)
    }

    /// Old stores: one pass computes the file's CRC-32 (compared with the manifest) and its
    /// block table; every block is then known good.
    fn derive_from_whole_file(&mut self, crc32: u32) -> Result<()> {
        let mut whole = crc32fast::Hasher::new();
        let mut blocks = BlockHasher::default();
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        while at < self.len {
            let n = ((self.len - at) as usize).min(buf.len());
            self.read_raw(&mut buf[..n], at)?;
            whole.update(&buf[..n]);
            blocks.update(&buf[..n]);
            at += n as u64;
        }
        let crc = whole.finalize();
        if crc != crc32 {
            return Err(Error::store(
                &self.path,
                format!("checksum mismatch (crc32 {crc:08x}, manifest {crc32:08x}): the file is corrupted"),
            ));
        }
        self.crcs = blocks.finish();
        self.verified.iter().for_each(|w| w.store(u64::MAX, Ordering::Relaxed));
        self.counters.record_verified(self.len);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_raw(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| {
            Error::store(&self.path, format!("read of {} bytes at offset {offset} failed: {e}", buf.len()))
        })
    }

    fn is_verified(&self, block: usize) -> bool {
        self.verified[block / 64].load(Ordering::Relaxed) & (1 << (block % 64)) != 0
    }

    /// Whether every block overlapping bytes `[offset, offset + len)` was checked already (then
    /// a reader need not hand the range to [`FileChecks::verify`]). Always true in builds
    /// without checks.
    pub fn is_range_verified(&self, offset: u64, len: u64) -> bool {
        if len == 0 || !CHECKED {
            return true;
        }
        let first = (offset / BLOCK_BYTES) as usize;
        let last = (offset + len).div_ceil(BLOCK_BYTES).min(self.crcs.len() as u64) as usize;
        (first..last).all(|block| self.is_verified(block))
    }

    /// Checks the blocks overlapping `bytes`, read from offset `offset` of the file. Blocks
    /// wholly inside `bytes` are checked from them; a block `bytes` covers only in part is read
    /// whole once. Each block is checked once per open store.
    pub fn verify(&self, bytes: &[u8], offset: u64) -> Result<()> {
        if bytes.is_empty() || !CHECKED {
            return Ok(());
        }
        let end = offset + bytes.len() as u64;
        let first = (offset / BLOCK_BYTES) as usize;
        let last = end.div_ceil(BLOCK_BYTES).min(self.crcs.len() as u64) as usize;
        let mut whole: Vec<u8> = Vec::new();
        for block in first..last {
            if self.is_verified(block) {
                continue;
            }
            let start = block as u64 * BLOCK_BYTES;
            let stop = (start + BLOCK_BYTES).min(self.len);
            let data = if start >= offset && stop <= end {
                &bytes[(start - offset) as usize..(stop - offset) as usize]
            } else {
                whole.resize((stop - start) as usize, 0);
                self.read_raw(&mut whole, start)?;
                &whole[..]
            };
            let crc = crc32c::crc32c(data);
            if crc != self.crcs[block] {
                return Err(Error::store(
                    &self.path,
                    format!(
                        "checksum mismatch in bytes {start}..{stop} (block {block}: crc32c {crc:08x}, expected {:08x}): the file is corrupted",
                        self.crcs[block]
                    ),
                ));
            }
            let before = self.verified[block / 64].fetch_or(1 << (block % 64), Ordering::Relaxed);
            // Two threads may check one block at once: it is counted once.
            if before & (1 << (block % 64)) == 0 {
                self.counters.record_verified(stop - start);
            }
        }
        Ok(())
    }
}

fn read_sidecar(path: &Path, blocks: usize, expected: u32) -> Result<Vec<u32>> {
    let side = sidecar_path(path);
    let bytes =
        std::fs::read(&side).map_err(|e| Error::store(&side, format!("block checksums are unreadable: {e}")))?;
    if bytes.len() != blocks * 4 {
        return Err(Error::store(
            &side,
            format!("holds {} bytes, expected {} (truncated or damaged)", bytes.len(), blocks * 4),
        ));
    }
    let crc = crc32c::crc32c(&bytes);
    if crc != expected {
        return Err(Error::store(
            &side,
            format!("checksum mismatch (crc32c {crc:08x}, manifest {expected:08x}): the block checksums are corrupted"),
        ));
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
}

// The tests check verification, which measurement builds turn off.
#[cfg(all(test, not(feature = "unchecked-blocks")))]
mod tests {
    use super::*;

    fn write(dir: &Path, data: &[u8]) -> (PathBuf, FileEntry) {
        let path = dir.join("f");
        std::fs::write(&path, data).unwrap();
        let mut h = BlockHasher::default();
        h.update(&data[..data.len() / 3]);
        h.update(&data[data.len() / 3..]);
        let side = h.write_sidecar(&path, false).unwrap();
        (path, FileEntry { bytes: data.len() as u64, crc32: crc32fast::hash(data), blocks_crc32c: Some(side) })
    }

    #[test]
    fn a_flipped_byte_is_found_by_any_read_touching_its_block() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(3 * BLOCK_BYTES + 100)).map(|i| (i * 7 % 251) as u8).collect();
        let (path, entry) = write(dir.path(), &data);
        let counters = IoCounters::new();
        let checks = FileChecks::load(&path, &entry, counters.clone()).unwrap();
        checks.verify(&data[10..20], 10).unwrap();
        assert_eq!(counters.snapshot().bytes_verified, BLOCK_BYTES);
        checks.verify(&data, 0).unwrap();
        // Every block counted once, the short last one by its length.
        assert_eq!(counters.snapshot().bytes_verified, data.len() as u64);
        let mut bad = data.clone();
        bad[2 * BLOCK_BYTES as usize + 5] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        let fresh = FileChecks::load(&path, &entry, IoCounters::new()).unwrap();
        // A partial read of the block is checked through a whole-block re-read.
        let at = 2 * BLOCK_BYTES + 1000;
        let err = fresh.verify(&bad[at as usize..at as usize + 8], at).unwrap_err().to_string();
        assert!(err.contains("checksum mismatch") && err.contains(&format!("{}", 2 * BLOCK_BYTES)), "{err}");
        // Blocks 0, 1 and 3 are good; the old-store path finds the whole-file mismatch.
        fresh.verify(&bad[..2 * BLOCK_BYTES as usize], 0).unwrap();
        let old = FileEntry { blocks_crc32c: None, ..entry };
        assert!(FileChecks::load(&path, &old, IoCounters::new())
            .unwrap_err()
            .to_string()
            .contains("checksum mismatch"));
    }

    #[test]
    fn a_damaged_sidecar_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![5u8; 200_000];
        let (path, entry) = write(dir.path(), &data);
        let side = sidecar_path(&path);
        let mut s = std::fs::read(&side).unwrap();
        s[0] ^= 0x40;
        std::fs::write(&side, &s).unwrap();
        assert!(FileChecks::load(&path, &entry, IoCounters::new()).is_err());
        std::fs::write(&side, &s[..4]).unwrap();
        assert!(FileChecks::load(&path, &entry, IoCounters::new()).is_err());
    }
}
