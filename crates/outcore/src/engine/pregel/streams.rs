//! The disk streams of one rank (GraphD §3.2): the edge stream S^E read through a 64 KiB buffer
//! with `skip`, and the message files (outgoing splits and received batches) with the k-way
//! merge that turns the received batches into the incoming stream S^I (`runtime::spill`'s
//! merge: one buffer per batch, records read in place).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{IoContext, Result};
use crate::runtime::spill::{Merge, RecordRun, SpillFile};
use crate::runtime::IoCounters;
use crate::store::FileChecks;

/// The buffer of an edge stream (GraphD's 64 KiB).
pub const EDGE_BUFFER_BYTES: usize = 64 << 10;

/// A sequential reader of an edge stream. `skip(k)` over the lists of inactive vertices moves
/// inside the buffer when it can and seeks only when the target lies beyond it.
pub struct EdgeStream {
    path: PathBuf,
    file: File,
    counters: IoCounters,
    buffer: Vec<u8>,
    /// Valid bytes in `buffer` and the read position inside it.
    filled: usize,
    at: usize,
    pub seeks: u64,
    /// File offset just past the buffered bytes, and the store's block checks of the file.
    pos: u64,
    checks: Option<Arc<FileChecks>>,
}

impl EdgeStream {
    pub fn open(path: &Path, counters: IoCounters) -> Result<EdgeStream> {
        let file = File::open(path).context(|| format!("opening {}", path.display()))?;
        Ok(EdgeStream {
            path: path.to_path_buf(),
            file,
            counters,
            buffer: vec![0; EDGE_BUFFER_BYTES],
            filled: 0,
            at: 0,
            seeks: 0,
            pos: 0,
            checks: None,
        })
    }

    /// Opens a store file whose reads are verified against its block checksums.
    pub fn open_checked(path: &Path, counters: IoCounters, checks: Option<Arc<FileChecks>>) -> Result<EdgeStream> {
        let mut stream = Self::open(path, counters)?;
        stream.checks = checks;
        Ok(stream)
    }

    /// Reads the next `bytes` bytes into `out` (cleared first).
    pub fn read(&mut self, bytes: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        while out.len() < bytes {
            if self.at == self.filled {
                self.refill()?;
            }
            let take = (bytes - out.len()).min(self.filled - self.at);
            out.extend_from_slice(&self.buffer[self.at..self.at + take]);
            self.at += take;
        }
        Ok(())
    }

    /// Skips the next `bytes` bytes.
    pub fn skip(&mut self, bytes: u64) -> Result<()> {
        let left = (self.filled - self.at) as u64;
        if bytes <= left {
            self.at += bytes as usize;
            return Ok(());
        }
        let path = &self.path;
        self.file
            .seek(SeekFrom::Current((bytes - left) as i64))
            .context(|| format!("seeking in {}", path.display()))?;
        self.seeks += 1;
        self.pos += bytes - left;
        self.filled = 0;
        self.at = 0;
        Ok(())
    }

    fn refill(&mut self) -> Result<()> {
        let path = &self.path;
        let n = self.file.read(&mut self.buffer).context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            return Err(crate::Error::store(path, "edge stream ends early"));
        }
        self.counters.record_read(n as u64);
        if let Some(checks) = &self.checks {
            checks.verify(&self.buffer[..n], self.pos)?;
        }
        self.pos += n as u64;
        self.filled = n;
        self.at = 0;
        Ok(())
    }
}

/// Writes `bytes` as a new message file.
pub fn write_file(path: &Path, bytes: &[u8], counters: &IoCounters) -> Result<()> {
    let mut file = File::create(path).context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes).context(|| format!("writing {}", path.display()))?;
    counters.record_write(bytes.len() as u64);
    Ok(())
}

/// Reads a whole message file and deletes it.
pub fn take_file(path: &Path, counters: &IoCounters) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).context(|| format!("reading {}", path.display()))?;
    counters.record_read(bytes.len() as u64);
    std::fs::remove_file(path).context(|| format!("removing {}", path.display()))?;
    Ok(bytes)
}

/// How a batch run finds a record's name.
type NameOf = fn(&[u8]) -> u64;

/// The target name of a batch record (its first 8 bytes).
fn name_of(record: &[u8]) -> u64 {
    u64::from_le_bytes(record[..8].try_into().expect("a record holds its name"))
}

/// The incoming message stream S^I: a k-way merge by target name of sorted batch files, each read
/// through its own buffer ([`spill::Merge`]). Records are `name u64 · message`. The batch files
/// are removed when the stream is dropped.
pub struct MergedBatches {
    merge: Merge<RecordRun<NameOf>>,
}

impl MergedBatches {
    pub fn open(paths: Vec<PathBuf>, record: usize, buffer_bytes: usize, counters: &IoCounters) -> Result<Self> {
        let buffer_bytes = buffer_bytes.max(record * 2);
        // Every file is owned (removed on drop) before any is opened.
        let files: Vec<SpillFile> = paths.into_iter().map(|p| SpillFile::adopt(p, counters.clone())).collect();
        let runs = files
            .into_iter()
            .map(|file| Ok(RecordRun::new(file.into_reader(buffer_bytes)?, record, name_of as NameOf)))
            .collect::<Result<Vec<_>>>()?;
        Ok(MergedBatches { merge: Merge::new(runs)? })
    }

    /// The smallest target name still to come.
    pub fn peek_name(&self) -> Option<u64> {
        self.merge.top().map(|(&name, _)| name)
    }

    /// Calls `take` with the message bytes of the record addressed to the smallest name.
    pub fn pop_record(&mut self, take: &mut dyn FnMut(&[u8])) -> Result<()> {
        if let Some((_, run)) = self.merge.top() {
            take(&run.head()[8..]);
            self.merge.advance_top()?;
        }
        Ok(())
    }

    /// Removes the batch files (as dropping the stream does).
    pub fn remove(self) {
        drop(self);
    }
}
