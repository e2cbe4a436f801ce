//! File primitives of the store: checksummed writers, counted positional readers, atomic writes.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::blocks::{BlockHasher, FileChecks};
use super::manifest::FileEntry;
use crate::error::{Error, IoContext, Result};
use crate::runtime::{CountedFile, IoCounters};

/// Writes `bytes` to `path` atomically: a reader sees the old file or the new one, never half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp-write");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// fsyncs a directory so that renames inside it are durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// CRC-32 of a whole file.
pub fn crc32_of_file(path: &Path) -> Result<u32> {
    let mut f = File::open(path).map_err(|e| Error::store(path, format!("cannot open: {e}")))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::store(path, format!("cannot read: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize())
}

/// A buffered writer for a new store file that counts bytes, computes the CRC-32 as it goes,
/// and fsyncs on [`finish`](Self::finish), returning the manifest entry.
pub struct StoreFileWriter {
    path: PathBuf,
    out: BufWriter<File>,
    hasher: crc32fast::Hasher,
    blocks: BlockHasher,
    bytes: u64,
    counters: IoCounters,
}

impl StoreFileWriter {
    pub fn create(path: &Path, counters: IoCounters) -> Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).context(|| format!("creating {}", parent.display()))?;
        }
        let file = File::create(path).context(|| format!("creating {}", path.display()))?;
        Ok(StoreFileWriter {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, file),
            hasher: crc32fast::Hasher::new(),
            blocks: BlockHasher::default(),
            bytes: 0,
            counters,
        })
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        self.blocks.update(bytes);
        self.bytes += bytes.len() as u64;
        self.counters.record_write(bytes.len() as u64);
        let path = &self.path;
        self.out.write_all(bytes).context(|| format!("writing {}", path.display()))
    }

    pub fn write_u64(&mut self, value: u64) -> Result<()> {
        self.write_all(&value.to_le_bytes())
    }

    pub fn write_u32(&mut self, value: u32) -> Result<()> {
        self.write_all(&value.to_le_bytes())
    }

    pub fn write_f64(&mut self, value: f64) -> Result<()> {
        self.write_all(&value.to_le_bytes())
    }

    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Flushes and fsyncs the file and its block-checksum sidecar; returns its size and
    /// checksums for the manifest.
    pub fn finish(self) -> Result<FileEntry> {
        let path = self.path.clone();
        let file =
            self.out.into_inner().map_err(|e| Error::io(format!("writing {}", path.display()), e.into_error()))?;
        file.sync_all().context(|| format!("syncing {}", path.display()))?;
        let blocks_crc32c = Some(self.blocks.write_sidecar(&path, true)?);
        Ok(FileEntry { bytes: self.bytes, crc32: self.hasher.finalize(), blocks_crc32c })
    }
}

/// A store file opened for counted reads: a [`CountedFile`] (whose getters it shares through
/// `Deref`) with the file's block checks. Opened through [`Store::file`](super::Store::file),
/// every read through [`read_exact_at`](Self::read_exact_at) is checked against the block
/// checksums ([`super::blocks`]) before it returns; a reader that reads through the
/// [`CountedFile`] itself (direct or io_uring reads) must pass what it read to
/// [`verify`](Self::verify).
#[derive(Debug)]
pub struct StoreFile {
    file: CountedFile,
    checks: Option<Arc<FileChecks>>,
}

impl std::ops::Deref for StoreFile {
    type Target = CountedFile;

    fn deref(&self) -> &CountedFile {
        &self.file
    }
}

impl StoreFile {
    /// Opens a file without block checks (work files outside the manifest).
    pub fn open(path: &Path, counters: IoCounters) -> Result<Self> {
        Ok(StoreFile { file: CountedFile::open(path, false, counters)?, checks: None })
    }

    /// Opens a store file whose reads are verified by `checks`.
    pub fn open_checked(path: &Path, counters: IoCounters, checks: Arc<FileChecks>) -> Result<Self> {
        let mut file = Self::open(path, counters)?;
        file.checks = Some(checks);
        Ok(file)
    }

    /// The block checks, for readers that read around [`read_exact_at`](Self::read_exact_at).
    pub fn checks(&self) -> Option<&Arc<FileChecks>> {
        self.checks.as_ref()
    }

    /// Verifies bytes read at `offset` against the block checksums (a no-op without them).
    pub fn verify(&self, bytes: &[u8], offset: u64) -> Result<()> {
        match &self.checks {
            Some(c) => c.verify(bytes, offset),
            None => Ok(()),
        }
    }

    /// Reads exactly `buf.len()` bytes at `offset` (one counted request) and verifies them.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file.read_at(buf, offset, buf.len())?;
        self.verify(buf, offset)
    }

    /// Reads little-endian u64s `[first, first + out.len())`.
    pub fn read_u64s_at(&self, first: u64, out: &mut [u64]) -> Result<()> {
        // SAFETY: u64 has no invalid bit patterns and the byte view covers exactly `out`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, out.len() * 8) };
        self.read_exact_at(bytes, first * 8)?;
        if cfg!(target_endian = "big") {
            for v in out.iter_mut() {
                *v = u64::from_le(*v);
            }
        }
        Ok(())
    }

    pub fn read_u64_at(&self, index: u64) -> Result<u64> {
        let mut one = [0u64];
        self.read_u64s_at(index, &mut one)?;
        Ok(one[0])
    }

    /// Reads the whole file into memory (for small files and the in-memory engine).
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; self.len() as usize];
        if !buf.is_empty() {
            self.read_exact_at(&mut buf, 0)?;
        }
        Ok(buf)
    }
}

/// Reinterprets little-endian bytes as u64s (copying).
pub fn u64s_from_le_bytes(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn u32s_from_le_bytes(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn f64s_from_le_bytes(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
}
