use super::*;
use proptest::prelude::*;

/// The chunks of `weights` by `cut`.
fn cut_weights(weights: &[u64], count: usize, cut: Cut) -> Vec<Range<usize>> {
    balanced(weights.len(), |i| weights[i], count, cut)
}

#[test]
fn nothing_to_cut_gives_no_chunks() {
    assert!(cut_weights(&[], 4, Cut::Quantiles).is_empty());
    assert!(cut_weights(&[], 4, Cut::Shares).is_empty());
}

#[test]
fn one_chunk_holds_everything() {
    assert_eq!(cut_weights(&[5, 1, 1], 1, Cut::Quantiles), vec![0..3]);
    assert_eq!(cut_weights(&[5, 1, 1], 0, Cut::Shares), vec![0..3]);
}

#[test]
fn a_hub_at_a_low_id_gets_a_chunk_of_its_own() {
    let weights = [100, 1, 1, 1, 1, 1, 1, 1, 1, 1];
    // The hub passed every quantile but the last: the next chunks end at their first item.
    assert_eq!(cut_weights(&weights, 4, Cut::Quantiles), vec![0..1, 1..2, 2..3, 3..10]);
    assert_eq!(cut_weights(&weights, 4, Cut::Shares), vec![0..1, 1..10]);
}

#[test]
fn equal_work_is_cut_in_equal_lengths() {
    let weights = [1; 8];
    assert_eq!(cut_weights(&weights, 4, Cut::Quantiles), vec![0..2, 2..4, 4..6, 6..8]);
    assert_eq!(cut_weights(&weights, 4, Cut::Shares), vec![0..2, 2..4, 4..6, 6..8]);
}

#[test]
fn quantiles_shorten_the_chunk_after_one_that_ran_over() {
    // Total 12 in 3: quantiles end chunks at 4 and 8 of the work, shares fill 4 each.
    let weights = [3, 3, 1, 1, 1, 1, 1, 1];
    assert_eq!(cut_weights(&weights, 3, Cut::Quantiles), vec![0..2, 2..4, 4..8]);
    assert_eq!(cut_weights(&weights, 3, Cut::Shares), vec![0..2, 2..6, 6..8]);
}

#[test]
fn fewer_items_than_chunks_give_one_chunk_per_item_at_most() {
    assert_eq!(cut_weights(&[1, 1, 1], 8, Cut::Quantiles), vec![0..1, 1..2, 2..3]);
    assert_eq!(cut_weights(&[1, 1, 1], 8, Cut::Shares), vec![0..1, 1..2, 2..3]);
}

fn any_cut() -> impl Strategy<Value = Cut> {
    prop_oneof![Just(Cut::Quantiles), Just(Cut::Shares)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn chunks_cover_the_items_once_in_order_within_the_share(
        weights in proptest::collection::vec(prop_oneof![0u64..4, 0u64..1000], 0..200),
        count in 0usize..20,
        cut in any_cut(),
    ) {
        let ranges = cut_weights(&weights, count, cut);
        prop_assert_eq!(ranges.is_empty(), weights.is_empty());
        prop_assert!(ranges.len() <= count.max(1));
        let mut next = 0;
        for r in &ranges {
            prop_assert_eq!(r.start, next);
            prop_assert!(r.start < r.end);
            next = r.end;
        }
        prop_assert_eq!(next, weights.len());
        let total: u64 = weights.iter().sum();
        let share = total.div_ceil(count.max(1) as u64).max(1);
        for r in &ranges {
            let before_last: u64 = weights[r.start..r.end - 1].iter().sum();
            prop_assert!(before_last <= share, "chunk {:?}: {} before its last item, share {}", r, before_last, share);
        }
    }

    #[test]
    fn chunks_of_positive_work_stay_below_the_share_but_for_their_last_item(
        weights in proptest::collection::vec(1u64..1000, 1..200),
        count in 1usize..20,
        cut in any_cut(),
    ) {
        let ranges = cut_weights(&weights, count, cut);
        let total: u64 = weights.iter().sum();
        let share = total.div_ceil(count as u64);
        for r in &ranges {
            let work: u64 = weights[r.clone()].iter().sum();
            let before_last = work - weights[r.end - 1];
            prop_assert!(r.len() == 1 || before_last < share, "chunk {:?} of {} work, share {}", r, work, share);
        }
        if cut == Cut::Shares {
            for r in &ranges[..ranges.len() - 1] {
                prop_assert!(weights[r.clone()].iter().sum::<u64>() >= share);
            }
        }
    }
}
