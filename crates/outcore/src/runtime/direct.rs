//! Direct I/O: the one place that allocates memory aligned for `O_DIRECT`, hands such buffers
//! out from a bounded pool, switches files to `O_DIRECT` and drops ranges from the OS cache.
//! The reads themselves go through [`CountedFile`](super::io::CountedFile), which counts them.
//!
//! **Why the engines bypass the OS cache.** An engine that measures or manages its own caching
//! must not have the kernel cache the same bytes behind its back: the cache engine keeps the OS
//! cache out of its measurements as the BASC paper does (§5: "the OS page cache is turned off by
//! setting the O_DIRECT flag"), and the stream engine reads an iteration whose data will not fit
//! the page cache with `O_DIRECT`, so that a scan that cannot be cached does not evict everything
//! else (Redio §4, "Vertex Data Buffering"). `outcore calibrate` times the device, not the cache.
//!
//! **What `O_DIRECT` needs.** File offsets, lengths and buffer addresses aligned to the device's
//! logical block size; [`DIRECT_ALIGN`] (4 KiB) covers the devices we run on. Memory comes from
//! [`AlignedBuffer`] (one allocator for the stream buffers, the page cache's frames and probes).
//! Not every file system takes `O_DIRECT` (tmpfs before Linux 6.6, some FUSE and network file
//! systems), and some accept the flag but fail the reads: [`try_direct`] switches a file only
//! after a probe read went through, and otherwise leaves it buffered and says why. Where reads
//! stay buffered, [`drop_from_os_cache`] (`posix_fadvise(POSIX_FADV_DONTNEED)`) evicts what was
//! read, so that the next read of those bytes is a real one again.

use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::error::{Error, Result};

/// Alignment of direct I/O: file offsets, lengths and buffer addresses.
pub const DIRECT_ALIGN: usize = 4096;

/// Bytes [`AlignedBuffer::copy_of_with`] copies (and fixes) per task: a multiple of
/// [`DIRECT_ALIGN`], small enough to stay in a core's L2 cache between the copy and the fix.
pub const COPY_PIECE: usize = 1 << 20;

/// `len` rounded up to a whole number (at least one) of [`DIRECT_ALIGN`] units.
pub fn align_up(len: usize) -> usize {
    len.max(1).next_multiple_of(DIRECT_ALIGN)
}

/// A heap buffer aligned to [`DIRECT_ALIGN`] whose length is a multiple of it; every byte is
/// initialised. A buffer from a [`BufferPool`] goes back to its pool when dropped.
pub struct AlignedBuffer {
    ptr: NonNull<u8>,
    len: usize,
    pool: Option<Arc<PoolState>>,
}

// SAFETY: the buffer exclusively owns its allocation (like a Vec<u8>); moving it to another
// thread or sharing `&` references to its bytes is as safe as for a Vec<u8>.
unsafe impl Send for AlignedBuffer {}
// SAFETY: see above; `&AlignedBuffer` only gives `&[u8]` (and a raw pointer, see `as_mut_ptr`).
unsafe impl Sync for AlignedBuffer {}

impl AlignedBuffer {
    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, DIRECT_ALIGN).expect("an aligned buffer's layout")
    }

    /// A zeroed buffer of `len` bytes rounded up by [`align_up`], or `None` when the allocator
    /// has no memory for it.
    pub fn try_zeroed(len: usize) -> Option<AlignedBuffer> {
        let len = len.max(1).checked_next_multiple_of(DIRECT_ALIGN)?;
        let layout = Layout::from_size_align(len, DIRECT_ALIGN).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(AlignedBuffer { ptr, len, pool: None })
    }

    /// [`try_zeroed`](Self::try_zeroed), aborting like a `Vec` when memory runs out.
    pub fn zeroed(len: usize) -> AlignedBuffer {
        Self::try_zeroed(len).unwrap_or_else(|| std::alloc::handle_alloc_error(Self::layout(align_up(len))))
    }

    /// A buffer holding a copy of `bytes` (then zeros up to the alignment), written once:
    /// unlike `zeroed` followed by a copy, the memory is not zeroed first.
    pub fn copy_of(bytes: &[u8]) -> AlignedBuffer {
        Self::copy_of_with(bytes, |_, _| {})
    }

    /// [`copy_of`](Self::copy_of), then `fix(offset, piece)` on each piece of the copy while it
    /// is still in the cache of the thread that copied it: pieces of [`COPY_PIECE`] bytes (the
    /// last one shorter) at `offset`s that are multiples of it, on all threads.
    pub fn copy_of_with(bytes: &[u8], fix: impl Fn(usize, &mut [u8]) + Sync) -> AlignedBuffer {
        let len = align_up(bytes.len());
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc(layout) }).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        // In pieces on all threads: the first touch of each new page (a fault) dominates.
        let to = ptr.as_ptr() as usize;
        bytes.par_chunks(COPY_PIECE).enumerate().for_each(|(i, piece)| {
            // SAFETY: piece `i` lands in `[i * COPY_PIECE, i * COPY_PIECE + piece.len())`, within
            // the allocation's `len >= bytes.len()` bytes; the pieces do not overlap each other
            // nor `bytes`. Once copied, those bytes are initialised and only this task sees them.
            let copy = unsafe {
                let at = (to as *mut u8).add(i * COPY_PIECE);
                std::ptr::copy_nonoverlapping(piece.as_ptr(), at, piece.len());
                std::slice::from_raw_parts_mut(at, piece.len())
            };
            fix(i * COPY_PIECE, copy);
        });
        // SAFETY: the tail `[bytes.len(), len)` is within the allocation; after it every one of
        // its `len` bytes is initialised, as Deref needs.
        unsafe { std::ptr::write_bytes(ptr.as_ptr().add(bytes.len()), 0, len - bytes.len()) };
        AlignedBuffer { ptr, len, pool: None }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The start of the buffer, for readers that fill parts of it from other threads (the page
    /// cache's frames): the caller makes sure no `&`/`&mut` view of those bytes is alive while
    /// it writes them.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl std::ops::Deref for AlignedBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for Deref, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            let buffer = AlignedBuffer { ptr: self.ptr, len: self.len, pool: None };
            pool.put_back(buffer);
            return;
        }
        // SAFETY: allocated in `try_zeroed` or `copy_of` with exactly this layout, not freed
        // before, and not handed to a pool (whose buffers are moved out above).
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

/// Aligned buffers handed out up to a byte limit (which the caller derives from its memory
/// budget), and reused: a buffer dropped by its user goes back to the pool, and a later
/// [`take`](Self::take) of the same rounded size gets it again, without a new allocation or
/// zeroing. Cheap to clone (an `Arc`); buffers may outlive the handle.
#[derive(Clone)]
pub struct BufferPool(Arc<PoolState>);

struct PoolState {
    limit: usize,
    inner: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// Buffers back in the pool, ready for reuse.
    free: Vec<AlignedBuffer>,
    /// Bytes of every buffer the pool allocated that still exists: in use or free.
    bytes: usize,
    /// Buffers handed out again without an allocation.
    reused: u64,
}

impl PoolState {
    fn put_back(&self, buffer: AlignedBuffer) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).free.push(buffer);
    }
}

impl BufferPool {
    /// A pool whose buffers, in use or free, never exceed `limit_bytes` in total.
    pub fn new(limit_bytes: u64) -> BufferPool {
        let limit = usize::try_from(limit_bytes).unwrap_or(usize::MAX);
        BufferPool(Arc::new(PoolState { limit, inner: Mutex::new(Held::default()) }))
    }

    /// A buffer of `len` bytes rounded up by [`align_up`]: a free one of that size (its bytes
    /// are what its last user left), else a new zeroed one, after freeing unused buffers of
    /// other sizes if the limit needs it. An [`Error::MemoryBudget`] when the buffers in use
    /// leave no room, or when the allocator has none.
    pub fn take(&self, len: usize) -> Result<AlignedBuffer> {
        let len = align_up(len);
        let mut held = self.0.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut buffer = if let Some(i) = held.free.iter().position(|b| b.len == len) {
            held.reused += 1;
            held.free.swap_remove(i)
        } else {
            while held.bytes + len > self.0.limit && !held.free.is_empty() {
                let dropped = held.free.pop().expect("a free buffer");
                held.bytes -= dropped.len;
            }
            if held.bytes + len > self.0.limit {
                return Err(Error::MemoryBudget(format!(
                    "a buffer of {len} bytes does not fit: {} of the pool's {} bytes are in use",
                    held.bytes, self.0.limit
                )));
            }
            let buffer = AlignedBuffer::try_zeroed(len)
                .ok_or_else(|| Error::MemoryBudget(format!("cannot allocate a buffer of {len} bytes")))?;
            held.bytes += len;
            buffer
        };
        buffer.pool = Some(Arc::clone(&self.0));
        Ok(buffer)
    }

    pub fn limit(&self) -> u64 {
        self.0.limit as u64
    }

    /// Bytes of the pool's buffers, in use or free (never above [`limit`](Self::limit)).
    pub fn held_bytes(&self) -> u64 {
        self.0.inner.lock().unwrap_or_else(|e| e.into_inner()).bytes as u64
    }

    /// Buffers handed out again without an allocation, over the pool's life.
    pub fn reused(&self) -> u64 {
        self.0.inner.lock().unwrap_or_else(|e| e.into_inner()).reused
    }
}

/// How reads of a file go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// `O_DIRECT`: the OS cache is bypassed; reads must be aligned ([`DIRECT_ALIGN`]).
    Direct,
    /// Through the OS cache, and why not direct.
    Buffered(String),
}

impl Access {
    pub fn is_direct(&self) -> bool {
        *self == Access::Direct
    }
}

/// Switches `file` to `O_DIRECT` and checks with one aligned probe read of its first block that
/// the file system takes it; otherwise restores the file's flags and says why it stays buffered.
pub fn try_direct(file: &File) -> Access {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a valid, owned descriptor with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Access::Buffered(format!("cannot read the file's flags: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT) } != 0 {
        let e = std::io::Error::last_os_error();
        return Access::Buffered(format!("the file system refused O_DIRECT: {e}"));
    }
    let mut probe = AlignedBuffer::zeroed(DIRECT_ALIGN);
    match file.read_at(&mut probe, 0) {
        Ok(_) => Access::Direct,
        Err(e) => {
            // SAFETY: restoring the flags read above.
            unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
            Access::Buffered(format!("a direct read failed: {e}"))
        }
    }
}

/// Asks the OS to drop its cached pages of `[offset, offset + len)` of `file` (`len` 0: to the
/// end of the file). Advisory: errors are ignored.
pub fn drop_from_os_cache(file: &File, offset: u64, len: u64) {
    // SAFETY: posix_fadvise has no memory-safety preconditions.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), offset as libc::off_t, len as libc::off_t, libc::POSIX_FADV_DONTNEED);
    }
}

#[cfg(test)]
mod tests;
