//! Aligned buffers, the pool's limit and reuse, and counted reads (direct and buffered) against
//! the file's bytes, with failed and short reads.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::runtime::{CountedFile, IoCounters};

/// A file of `len` bytes whose every byte differs from its neighbours'.
fn write_file(dir: &Path, len: usize) -> (PathBuf, Vec<u8>) {
    let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
    let path = dir.join("data");
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

#[test]
fn buffers_are_aligned_zeroed_and_rounded_up() {
    for len in [0, 1, 4095, 4096, 4097, 3 * 4096 + 5] {
        let b = AlignedBuffer::zeroed(len);
        assert_eq!(b.as_ptr() as usize % DIRECT_ALIGN, 0);
        assert_eq!(b.len(), align_up(len));
        assert!(b.len() >= len && b.iter().all(|&x| x == 0));
    }
    let c = AlignedBuffer::copy_of(&[1, 2, 3]);
    assert_eq!((c.len(), &c[..4]), (DIRECT_ALIGN, &[1, 2, 3, 0][..]));
}

#[test]
fn a_dropped_buffer_is_reused_and_the_limit_holds() {
    let pool = BufferPool::new(3 * 8192);
    let a = pool.take(8192).unwrap();
    let at = a.as_ptr();
    let _b = pool.take(8000).unwrap();
    assert!(matches!(pool.take(8193), Err(Error::MemoryBudget(_))), "12 KiB more would pass 24 KiB");
    drop(a);
    let again = pool.take(8192).unwrap();
    assert_eq!((again.as_ptr(), pool.reused(), pool.held_bytes()), (at, 1, 2 * 8192));
    drop(again);
    // A free buffer of another size is given up to make room.
    let big = pool.take(2 * 8192).unwrap();
    assert_eq!((big.len(), pool.held_bytes()), (2 * 8192, 3 * 8192));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever is taken and dropped, the pool's buffers never pass its limit, and a take
    /// fails only when the buffers in use leave no room.
    #[test]
    fn the_pool_never_exceeds_its_limit(
        limit in 1usize..64,
        ops in proptest::collection::vec((any::<bool>(), 1usize..24, any::<prop::sample::Index>()), 1..60),
    ) {
        let pool = BufferPool::new((limit * 4096) as u64);
        let mut held: Vec<AlignedBuffer> = Vec::new();
        for (take, pages, which) in ops {
            if take || held.is_empty() {
                let in_use: usize = held.iter().map(|b| b.len()).sum();
                match pool.take(pages * 4096 - 7) {
                    Ok(b) => { prop_assert_eq!(b.len(), pages * 4096); held.push(b) }
                    Err(_) => prop_assert!(in_use + pages * 4096 > limit * 4096),
                }
            } else {
                held.swap_remove(which.index(held.len()));
            }
            prop_assert!(pool.held_bytes() <= pool.limit());
        }
    }

    /// Random reads read back what the file holds, buffered at any offset and direct at aligned
    /// ones, and each is one counted request of the bytes it returned.
    #[test]
    fn reads_return_the_files_bytes(
        len in 0usize..100_000,
        reads in proptest::collection::vec((0usize..110_000, 0usize..40_000), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (path, bytes) = write_file(dir.path(), len);
        for direct in [false, true] {
            let counters = IoCounters::new();
            let file = CountedFile::open(&path, direct, counters.clone()).unwrap();
            let (mut requests, mut total) = (0, 0);
            for &(offset, n) in &reads {
                let (offset, n) = if file.is_direct() {
                    (offset / DIRECT_ALIGN * DIRECT_ALIGN, align_up(n))
                } else {
                    (offset, n)
                };
                let mut buf = AlignedBuffer::zeroed(n);
                let got = file.read_at(&mut buf[..n], offset as u64, 0).unwrap();
                let want = &bytes[offset.min(len)..(offset + n).min(len)];
                prop_assert_eq!(&buf[..got], want, "direct = {}", file.is_direct());
                requests += 1;
                total += got as u64;
            }
            let io = counters.snapshot();
            prop_assert_eq!((io.read_requests, io.bytes_read), (requests, total));
        }
    }
}

/// Pages read into several frames with one request land where they belong; the last one is
/// short at the end of the file.
#[test]
fn vectored_reads_fill_the_buffers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = write_file(dir.path(), 5 * 4096 + 100);
    for direct in [false, true] {
        let counters = IoCounters::new();
        let file = CountedFile::open(&path, direct, counters.clone()).unwrap();
        let mut frames: Vec<AlignedBuffer> = (0..3).map(|_| AlignedBuffer::zeroed(4096)).collect();
        let mut views: Vec<&mut [u8]> = frames.iter_mut().map(|f| &mut f[..]).collect();
        let got = file.read_vectored_at(&mut views, 3 * 4096, 2 * 4096 + 100).unwrap();
        assert_eq!(got, 2 * 4096 + 100);
        assert_eq!(&frames[0][..], &bytes[3 * 4096..4 * 4096]);
        assert_eq!(&frames[2][..100], &bytes[5 * 4096..]);
        assert_eq!(counters.snapshot().read_requests, 1);
    }
}

/// The n-th system read failing is an error naming the file, not counted; later reads work.
#[test]
fn a_failed_read_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_file(dir.path(), 3 * 4096);
    let counters = IoCounters::new();
    let file = CountedFile::open(&path, true, counters.clone()).unwrap().failing_after(2);
    let mut buf = AlignedBuffer::zeroed(4096);
    for i in 0..2 {
        file.read_at(&mut buf, i * 4096, 4096).unwrap();
    }
    let err = file.read_at(&mut buf, 2 * 4096, 4096).unwrap_err();
    assert!(matches!(err, Error::Store { .. }), "{err}");
    assert!(err.to_string().contains(&path.display().to_string()) && err.to_string().contains("failed"), "{err}");
    assert_eq!(counters.snapshot().read_requests, 2);
    file.read_at(&mut buf, 2 * 4096, 4096).unwrap();
    let work = CountedFile::open_work(&path, false, IoCounters::new()).unwrap().failing_after(0);
    let err = work.read_at(&mut buf, 0, 1).unwrap_err();
    assert!(matches!(err, Error::Io { .. }) && err.to_string().contains(&path.display().to_string()), "{err}");
}

/// A file cut short after it was opened: reads past its new end are errors naming the file.
#[test]
fn a_truncated_file_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_file(dir.path(), 4 * 4096);
    for direct in [false, true] {
        let file = CountedFile::open(&path, direct, IoCounters::new()).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096 + 10).unwrap();
        let mut buf = AlignedBuffer::zeroed(2 * 4096);
        let err = file.read_at(&mut buf, 4096, 2 * 4096).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&path.display().to_string()) && text.contains("truncated"), "{text}");
        assert_eq!(file.read_at(&mut buf, 4096, 10).unwrap(), 10);
        write_file(dir.path(), 4 * 4096);
    }
}

/// `try_direct` either switches the file (reads then need alignment) or keeps it buffered and
/// says why; the OS-cache drop is harmless either way.
#[test]
fn try_direct_switches_or_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = write_file(dir.path(), 8192);
    let file = std::fs::File::open(&path).unwrap();
    match try_direct(&file) {
        Access::Direct => {
            let mut buf = AlignedBuffer::zeroed(4096);
            file.read_exact_at(&mut buf, 4096).unwrap();
            assert_eq!(&buf[..], &bytes[4096..]);
        }
        Access::Buffered(why) => assert!(!why.is_empty()),
    }
    drop_from_os_cache(&file, 0, 0);
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let access = try_direct(&std::fs::File::open(&empty).unwrap());
    assert!(access.is_direct() || matches!(access, Access::Buffered(_)));
}
