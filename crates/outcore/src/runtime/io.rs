//! I/O accounting. Every byte the store and spill files read or write is counted here, so that
//! runs report deterministic figures (bytes read, requests) next to noisy wall-clock times.
//! [`CountedFile`] is the one positional reader of the engines that read around the store's
//! `StoreFile` (direct or buffered, see [`super::direct`]); it counts every request it makes.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::direct::{try_direct, Access};
use crate::error::{Error, Result};

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

/// A file read with positional requests, with `O_DIRECT` when asked for and the file system
/// takes it ([`try_direct`]), else through the OS cache; every request that succeeds is counted
/// in the run's [`IoCounters`] (one request, the bytes it returned), and every failure is an
/// [`Error`] naming the file: [`Error::Store`] for a store file (damage, exit 66), an
/// [`Error::Io`] for a work file ([`CountedFile::open_work`]).
#[derive(Debug)]
pub struct CountedFile {
    path: PathBuf,
    file: File,
    len: u64,
    access: Access,
    counters: IoCounters,
    store_file: bool,
    /// Failure injection (unit tests): system reads left before one fails; negative: none.
    #[cfg(test)]
    fail_after: std::sync::atomic::AtomicI64,
}

impl CountedFile {
    /// Opens `path`; `want_direct` switches it to `O_DIRECT` when the file system takes it.
    pub fn open(path: &Path, want_direct: bool, counters: IoCounters) -> Result<CountedFile> {
        Self::open_as(path, want_direct, counters, true)
    }

    /// [`open`](Self::open) for a file outside any store: failures are plain I/O errors.
    pub fn open_work(path: &Path, want_direct: bool, counters: IoCounters) -> Result<CountedFile> {
        Self::open_as(path, want_direct, counters, false)
    }

    fn open_as(path: &Path, want_direct: bool, counters: IoCounters, store_file: bool) -> Result<CountedFile> {
        let mut file = CountedFile {
            path: path.to_path_buf(),
            file: File::open(path).map_err(|e| Self::error_of(path, store_file, "cannot open".into(), e))?,
            len: 0,
            access: Access::Buffered("not asked for".into()),
            counters,
            store_file,
            #[cfg(test)]
            fail_after: std::sync::atomic::AtomicI64::new(-1),
        };
        file.len = file.file.metadata().map_err(|e| file.error("cannot stat".into(), e))?.len();
        if want_direct {
            file.access = try_direct(&file.file);
        }
        Ok(file)
    }

    /// Makes the system read after the next `reads` ones fail with `EIO` (unit tests).
    #[cfg(test)]
    pub(crate) fn failing_after(self, reads: i64) -> CountedFile {
        self.fail_after.store(reads, Ordering::Relaxed);
        self
    }

    pub fn is_direct(&self) -> bool {
        self.access.is_direct()
    }

    /// Direct or buffered, and why buffered.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The file's length when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn raw(&self) -> &File {
        &self.file
    }

    /// The counters its reads are counted in.
    pub fn counters(&self) -> &IoCounters {
        &self.counters
    }

    /// Reads `[offset, offset + buf.len())`, stopping early only at the end of the file and
    /// needing at least `needed` bytes; one counted request. Returns the bytes read. A direct
    /// file needs `offset`, `buf`'s address and length aligned to
    /// [`DIRECT_ALIGN`](super::direct::DIRECT_ALIGN).
    pub fn read_at(&self, buf: &mut [u8], offset: u64, needed: usize) -> Result<usize> {
        self.read_vectored_at(&mut [buf], offset, needed)
    }

    /// Reads into `bufs` one after the other from `offset` with one `preadv` (continued where
    /// it comes back short), stopping early only at the end of the file and needing at least
    /// `needed` bytes; one counted request. Returns the bytes read. At most 1024 buffers.
    pub fn read_vectored_at(&self, bufs: &mut [&mut [u8]], offset: u64, needed: usize) -> Result<usize> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut got = 0usize;
        while got < total {
            match self.preadv_from(bufs, offset, got) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let what = format!("read of {} bytes at offset {} failed", total - got, offset + got as u64);
                    return Err(self.error(what, e));
                }
            }
        }
        if got < needed {
            let what = format!(
                "file ends at {} bytes, expected at least {} (the file is truncated)",
                offset + got as u64,
                offset + needed as u64
            );
            return Err(self.error(what, std::io::ErrorKind::UnexpectedEof.into()));
        }
        self.counters.record_read(got as u64);
        Ok(got)
    }

    /// One `preadv` of what is left of `bufs` after their first `skip` bytes.
    fn preadv_from(&self, bufs: &mut [&mut [u8]], offset: u64, mut skip: usize) -> std::io::Result<usize> {
        #[cfg(test)]
        if self.fail_after.fetch_sub(1, Ordering::Relaxed) == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        let at = offset + skip as u64;
        let mut iov = Vec::with_capacity(bufs.len());
        for buf in bufs.iter_mut() {
            if skip >= buf.len() {
                skip -= buf.len();
                continue;
            }
            iov.push(libc::iovec {
                iov_base: buf[skip..].as_mut_ptr() as *mut libc::c_void,
                iov_len: buf.len() - skip,
            });
            skip = 0;
        }
        // SAFETY: every iovec points to the unread rest of a buffer borrowed mutably for the
        // call; the kernel writes at most `iov_len` bytes to each.
        let n =
            unsafe { libc::preadv(self.file.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int, at as libc::off_t) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    fn error(&self, what: String, source: std::io::Error) -> Error {
        Self::error_of(&self.path, self.store_file, what, source)
    }

    fn error_of(path: &Path, store_file: bool, what: String, source: std::io::Error) -> Error {
        if store_file {
            Error::store(path, format!("{what}: {source}"))
        } else {
            Error::io(format!("{}: {what}", path.display()), source)
        }
    }
}
