//! The page cache against a plain model of clock replacement, and its behaviour on failed loads.

use proptest::prelude::*;

use super::*;
use crate::runtime::IoCounters;
use crate::store::StoreFile;

/// The bytes page `page` holds: its valid length and a pattern that differs between pages.
fn content(page: u64, page_size: usize, total_pages: u64) -> Vec<u8> {
    let valid = if page + 1 == total_pages { page_size / 2 + 1 } else { page_size };
    (0..valid).map(|i| (page as usize * 131 + i * 7) as u8).collect()
}

/// The model: a list of frames with reference bits, pins and a hand, nothing else.
struct Model {
    page: Vec<Option<u64>>,
    referenced: Vec<bool>,
    pins: Vec<u32>,
    hand: usize,
    misses: u64,
}

impl Model {
    fn new(frames: usize) -> Model {
        Model { page: vec![None; frames], referenced: vec![false; frames], pins: vec![0; frames], hand: 0, misses: 0 }
    }

    fn frame_of(&self, page: u64) -> Option<usize> {
        self.page.iter().position(|&p| p == Some(page))
    }

    /// Pins `page`: `Some(true)` hit, `Some(false)` miss (loaded, or freed again when the load
    /// fails), `None` when every frame is pinned.
    fn access(&mut self, page: u64, load_fails: bool) -> Option<bool> {
        if let Some(f) = self.frame_of(page) {
            self.referenced[f] = true;
            self.pins[f] += 1;
            return Some(true);
        }
        let n = self.page.len();
        let mut victim = None;
        for _ in 0..=2 * n {
            let f = self.hand;
            self.hand = (self.hand + 1) % n;
            if self.pins[f] == 0 && !std::mem::replace(&mut self.referenced[f], false) {
                victim = Some(f);
                break;
            }
        }
        let f = victim?;
        self.misses += 1;
        if load_fails {
            self.page[f] = None;
        } else {
            self.page[f] = Some(page);
            self.referenced[f] = true;
            self.pins[f] += 1;
        }
        Some(false)
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Pin the page and unpin it at once.
    Touch(u64),
    /// Pin the page and keep it pinned.
    Hold(u64),
    /// Unpin the oldest page held.
    Release,
}

fn ops(pages: u64) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..pages).prop_map(Op::Touch),
        2 => (0..pages).prop_map(Op::Hold),
        2 => Just(Op::Release),
    ];
    proptest::collection::vec(op, 0..200)
}

fn case() -> impl Strategy<Value = (u64, usize, Vec<Op>, u64)> {
    (1u64..40, 1usize..8).prop_flat_map(|(pages, frames)| (Just(pages), Just(frames), ops(pages), 0u64..12))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every pinned page has its own content, held pages stay put, loads equal the model's
    /// misses, and a miss with every frame pinned is an error that changes nothing.
    #[test]
    fn clock_cache_matches_the_model((pages, frames, ops, fail_every) in case()) {
        let page_size = 64;
        let mut cache = PageCache::new(page_size, frames, pages).unwrap();
        let mut model = Model::new(frames);
        let mut held: std::collections::VecDeque<(u64, usize)> = Default::default();
        let mut loads = 0u64;
        for op in ops {
            let page = match op {
                Op::Touch(p) | Op::Hold(p) => p,
                Op::Release => {
                    if let Some((_, frame)) = held.pop_front() {
                        cache.unpin(frame);
                        model.pins[frame] -= 1;
                    }
                    continue;
                }
            };
            // Every `fail_every`-th load fails (never when 0).
            let fails = fail_every > 0 && (loads + 1).is_multiple_of(fail_every);
            let expected = model.access(page, fails);
            let want = content(page, page_size, pages);
            let result = cache.pin_or_load(page, want.len(), |frame| {
                loads += 1;
                if fails {
                    return Err(Error::store("/injected", "injected I/O error"));
                }
                frame.copy_from_slice(&want);
                Ok(())
            });
            match (expected, result) {
                (None, Err(Error::MemoryBudget(_))) => {}
                (Some(false), Err(Error::Store { .. })) if fails => {
                    prop_assert!(!cache.is_resident(page));
                }
                (Some(_), Ok(frame)) => {
                    prop_assert_eq!(Some(frame), model.frame_of(page));
                    prop_assert_eq!(cache.frame_bytes(frame), &want[..]);
                    if matches!(op, Op::Hold(_)) {
                        held.push_back((page, frame));
                    } else {
                        cache.unpin(frame);
                        model.pins[frame] -= 1;
                    }
                }
                (expected, result) => {
                    prop_assert!(false, "model says {:?}, cache says {:?}", expected, result.map_err(|e| e.to_string()));
                }
            }
            for &(page, frame) in &held {
                prop_assert_eq!(cache.resident_frame(page), Some(frame));
                prop_assert_eq!(cache.frame_bytes(frame), &content(page, page_size, pages)[..]);
            }
            prop_assert_eq!(loads, model.misses);
            prop_assert_eq!(cache.counters().misses, model.misses);
        }
        for f in 0..frames {
            prop_assert_eq!(cache.frame_page(f).map(|(p, _)| p), model.page[f]);
        }
    }
}

#[test]
fn all_frames_pinned_is_an_error_not_a_hang() {
    let mut cache = PageCache::new(512, 2, 4).unwrap();
    let a = cache.pin_or_load(0, 512, |_| Ok(())).unwrap();
    let b = cache.pin_or_load(1, 512, |_| Ok(())).unwrap();
    let err = cache.pin_or_load(2, 512, |_| panic!("no frame to load into")).unwrap_err();
    assert!(matches!(err, Error::MemoryBudget(_)), "{err}");
    assert!(err.to_string().contains("all 2 frames are pinned"), "{err}");
    // Releasing one frame makes the cache usable again.
    cache.unpin(b);
    let c = cache.pin_or_load(2, 512, |_| Ok(())).unwrap();
    assert_eq!(c, b);
    assert_eq!(cache.resident_frame(0), Some(a));
    assert_eq!(cache.counters(), PageCacheCounters { hits: 0, misses: 3, evictions: 1 });
}

#[test]
fn a_failed_read_names_the_file_and_leaves_the_cache_usable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pages");
    let page_size = 256usize;
    let bytes: Vec<u8> = (0..4 * page_size).map(|i| (i / page_size) as u8 + 1).collect();
    std::fs::write(&path, &bytes).unwrap();
    let counters = IoCounters::new();
    let file = StoreFile::open(&path, counters.clone()).unwrap();
    let mut cache = PageCache::new(page_size, 2, 8).unwrap();
    let load = |cache: &mut PageCache, page: u64, offset: u64| {
        cache.pin_or_load(page, page_size, |frame| file.read_exact_at(frame, offset))
    };
    let f0 = load(&mut cache, 0, 0).unwrap();
    cache.unpin(f0);
    // The third load reads past the end of the file: a real I/O error, injected by offset.
    let f1 = load(&mut cache, 1, page_size as u64).unwrap();
    cache.unpin(f1);
    let err = load(&mut cache, 2, 10 * page_size as u64).unwrap_err();
    assert!(matches!(&err, Error::Store { path: p, .. } if *p == path), "{err}");
    assert!(err.to_string().contains("pages"), "{err}");
    assert!(!cache.is_resident(2));
    // The page is loaded on the next try, and every resident page still has its bytes.
    let f2 = load(&mut cache, 2, 2 * page_size as u64).unwrap();
    assert!(cache.frame_bytes(f2).iter().all(|&b| b == 3));
    cache.unpin(f2);
    for page in 0..3u64 {
        if let Some(frame) = cache.resident_frame(page) {
            assert!(cache.frame_bytes(frame).iter().all(|&b| b == page as u8 + 1));
        }
    }
    assert_eq!(counters.snapshot().bytes_read, 3 * page_size as u64);
}

#[test]
fn allocate_reports_the_evicted_page_and_out_of_range_pages_are_errors() {
    let mut cache = PageCache::new(128, 1, 3).unwrap();
    let a = cache.allocate(0, 100).unwrap();
    assert_eq!(a, Allocation { frame: 0, evicted: None });
    assert!(cache.allocate(0, 100).is_err(), "a resident page is not allocated twice");
    let b = cache.allocate(2, 128).unwrap();
    assert_eq!(b.evicted, Some((0, 100)));
    assert!(cache.allocate(3, 128).is_err());
    assert!(cache.allocate(1, 129).is_err());
    assert_eq!(cache.lookup(3), None);
    assert!(PageCache::new(128, 0, 3).is_err());
}
