use super::*;
use proptest::prelude::*;

const PARTS: [&str; 3] = ["vertex values", "read buffers", "messages"];

fn ledger(budget: u64) -> MemoryLedger {
    MemoryLedger::new(MemoryBudget::new(budget))
}

#[test]
fn charges_are_released_on_drop_and_peaks_kept() {
    let ledger = ledger(100);
    let values = ledger.charge("vertex values", 40).unwrap();
    {
        let _buffers = ledger.charge("read buffers", 50).unwrap();
        assert_eq!(ledger.current(), 90);
        assert_eq!(ledger.left(), 10);
    }
    assert_eq!(ledger.current(), 40);
    let _more = ledger.charge("read buffers", 20).unwrap();
    values.release();
    assert_eq!(ledger.current(), 20);
    let figures = ledger.figures();
    assert_eq!(figures.peak_bytes, 90);
    assert_eq!(figures.part("vertex values"), 40);
    assert_eq!(figures.part("read buffers"), 50);
    let names: Vec<&str> = figures.parts.iter().map(|p| p.part.as_str()).collect();
    assert_eq!(names, ["vertex values", "read buffers"], "first-charge order");
}

#[test]
fn a_charge_over_the_budget_is_refused_naming_the_part_and_what_is_held() {
    let ledger = ledger(1 << 20);
    let _values = ledger.charge("vertex values", 768 << 10).unwrap();
    let err = ledger.charge("read buffers", 512 << 10).unwrap_err();
    assert!(matches!(err, Error::MemoryBudget(_)), "{err:?}");
    let text = err.to_string();
    for expected in ["read buffers needs 512.00 KiB", "768.00 KiB of the 1.00 MiB budget", "vertex values 768.00 KiB"] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    assert_eq!(ledger.current(), 768 << 10, "a refused charge holds nothing");
    assert_eq!(ledger.figures().part("read buffers"), 0);
    assert!(ledger.figures().parts.iter().all(|p| p.part != "read buffers"));
}

#[test]
fn resize_grows_within_the_budget_and_shrinks() {
    let ledger = ledger(100);
    let mut edges = ledger.charge("resident edges", 10).unwrap();
    edges.resize(70).unwrap();
    assert!(edges.resize(101).is_err());
    assert_eq!(edges.bytes(), 70);
    assert_eq!(ledger.current(), 70);
    edges.resize(5).unwrap();
    assert_eq!(ledger.current(), 5);
    assert_eq!(ledger.figures().part("resident edges"), 70);
    drop(edges);
    assert_eq!(ledger.current(), 0);
}

#[test]
fn charge_parts_is_all_or_nothing() {
    let ledger = ledger(100);
    let parts = [MemoryPart::new("vertex values", 60), MemoryPart::new("messages", 60)];
    assert!(ledger.charge_parts(&parts).is_err());
    assert_eq!(ledger.current(), 0);
    let held = ledger.charge_parts(&parts[..1]).unwrap();
    assert_eq!(ledger.current(), 60);
    drop(held);
    assert_eq!(ledger.current(), 0);
}

#[test]
fn concurrent_charges_from_threads_add_up() {
    let ledger = ledger(64 * 1000);
    std::thread::scope(|s| {
        for t in 0..8 {
            let ledger = ledger.clone();
            s.spawn(move || {
                for i in 0..1000u64 {
                    let held = ledger.charge(PARTS[t % 3], 1 + i % 8).unwrap();
                    assert!(ledger.current() <= ledger.budget());
                    drop(held);
                }
            });
        }
    });
    assert_eq!(ledger.current(), 0);
    let figures = ledger.figures();
    assert!(figures.peak_bytes >= 8 && figures.peak_bytes <= 8 * 8, "{figures:?}");
    for part in PARTS {
        assert!(figures.part(part) >= 8, "{part}: {figures:?}");
    }
}

#[test]
fn concurrent_charges_never_pass_the_budget() {
    // 8 threads each try to hold 10 bytes, 4 at a time fit: some are refused, none overshoots.
    let ledger = ledger(40);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..500 {
                    if let Ok(held) = ledger.charge("windows", 10) {
                        assert!(ledger.current() <= 40);
                        std::hint::black_box(&held);
                    }
                }
            });
        }
    });
    assert_eq!(ledger.current(), 0);
    assert!(ledger.peak() <= 40);
}

/// One step of a random sequence: charge `bytes` of part `part`, or release the charge at
/// index `which` (modulo those held).
#[derive(Debug, Clone)]
enum Step {
    Charge { part: usize, bytes: u64 },
    Release { which: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..PARTS.len(), 0u64..400).prop_map(|(part, bytes)| Step::Charge { part, bytes }),
        any::<usize>().prop_map(|which| Step::Release { which }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_sequences_track_current_and_peaks(budget in 0u64..2000, steps in proptest::collection::vec(step(), 0..60)) {
        let ledger = ledger(budget);
        let mut held: Vec<Charge> = Vec::new();
        // The model: bytes held per part, their peaks, and the total's peak.
        let mut current = [0u64; 3];
        let mut peaks = [0u64; 3];
        let mut peak = 0u64;
        for step in steps {
            match step {
                Step::Charge { part, bytes } => {
                    let total: u64 = current.iter().sum();
                    match ledger.charge(PARTS[part], bytes) {
                        Ok(charge) => {
                            prop_assert!(total + bytes <= budget);
                            current[part] += bytes;
                            peaks[part] = peaks[part].max(current[part]);
                            peak = peak.max(total + bytes);
                            held.push(charge);
                        }
                        Err(e) => {
                            prop_assert!(total + bytes > budget);
                            prop_assert!(e.to_string().contains(PARTS[part]), "{}", e);
                        }
                    }
                }
                Step::Release { which } if !held.is_empty() => {
                    let charge = held.swap_remove(which % held.len());
                    let part = PARTS.iter().position(|p| *p == charge.part()).unwrap();
                    current[part] -= charge.bytes();
                    charge.release();
                }
                Step::Release { .. } => {}
            }
            prop_assert_eq!(ledger.current(), current.iter().sum::<u64>());
            prop_assert_eq!(ledger.peak(), peak);
        }
        let figures = ledger.figures();
        for (i, part) in PARTS.iter().enumerate() {
            prop_assert_eq!(figures.part(part), peaks[i]);
        }
        drop(held);
        prop_assert_eq!(ledger.current(), 0);
    }
}
