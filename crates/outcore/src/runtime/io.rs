//! I/O accounting. Every byte the store and spill files read or write is counted here, so that
//! runs report deterministic figures (bytes read, requests) next to noisy wall-clock times.

use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Shared counters for one run (cheap to clone: an `Arc`).
#[derive(Debug, Default, Clone)]
pub struct IoCounters(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    read_requests: AtomicU64,
    write_requests: AtomicU64,
    bytes_verified: AtomicU64,
}

/// A point-in-time copy of the counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IoSnapshot {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    /// Bytes of store files whose block checksums were verified (`store::blocks`).
    pub bytes_verified: u64,
}

impl IoSnapshot {
    /// Counts accumulated since `earlier`.
    pub fn since(&self, earlier: &IoSnapshot) -> IoSnapshot {
        IoSnapshot {
            bytes_read: self.bytes_read - earlier.bytes_read,
            bytes_written: self.bytes_written - earlier.bytes_written,
            read_requests: self.read_requests - earlier.read_requests,
            write_requests: self.write_requests - earlier.write_requests,
            bytes_verified: self.bytes_verified - earlier.bytes_verified,
        }
    }
}

impl IoCounters {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record_read(&self, bytes: u64) {
        self.0.bytes_read.fetch_add(bytes, Ordering::Relaxed);
        self.0.read_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_write(&self, bytes: u64) {
        self.0.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        self.0.write_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts bytes of store files checked against their block checksums.
    pub fn record_verified(&self, bytes: u64) {
        self.0.bytes_verified.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> IoSnapshot {
        IoSnapshot {
            bytes_read: self.0.bytes_read.load(Ordering::Relaxed),
            bytes_written: self.0.bytes_written.load(Ordering::Relaxed),
            read_requests: self.0.read_requests.load(Ordering::Relaxed),
            write_requests: self.0.write_requests.load(Ordering::Relaxed),
            bytes_verified: self.0.bytes_verified.load(Ordering::Relaxed),
        }
    }
}

/// A reader that counts what passes through it.
pub struct CountingReader<R> {
    inner: R,
    counters: IoCounters,
}

impl<R> CountingReader<R> {
    pub fn new(inner: R, counters: IoCounters) -> Self {
        CountingReader { inner, counters }
    }
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counters.record_read(n as u64);
        Ok(n)
    }
}

impl<R: Seek> Seek for CountingReader<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// A writer that counts what passes through it.
pub struct CountingWriter<W> {
    inner: W,
    counters: IoCounters,
}

impl<W> CountingWriter<W> {
    pub fn new(inner: W, counters: IoCounters) -> Self {
        CountingWriter { inner, counters }
    }
    pub fn into_inner(self) -> W {
        self.inner
    }
    pub fn get_ref(&self) -> &W {
        &self.inner
    }
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.counters.record_write(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
