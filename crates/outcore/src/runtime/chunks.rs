//! Cutting a run of items into chunks of about equal work for rayon's threads, a chunk being a
//! range of consecutive items (the engines' chunks are vertices in id order, each vertex's work
//! its arcs plus one).
//!
//! Why by work and not by count: a power-law graph puts its hubs at low ids (often in input
//! order, always after a degree ordering), so chunks of equal length would leave the thread
//! that takes the first chunk with most of the arcs while the others wait. The engines that
//! compute vertices in parallel (inmem's and pregel's Pregel steps) cut here, each with its
//! own [`Cut`], which decides where chunks end and so which thread computes what; results do
//! not depend on it, since the engines deliver chunks in order.

use std::ops::Range;

/// Where a chunk ends, given at most `count` chunks over `total` work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Chunk k ends at the first item where the work so far reaches (k + 1) / count of the
    /// total: a chunk that ran over its share shortens the next one.
    Quantiles,
    /// A chunk ends at the first item where its own work reaches a share, ⌈total / count⌉ (at
    /// least 1): the chunks before the last each hold a share or more.
    Shares,
}

/// Cuts items `0..len`, item `i` weighing `work(i)`, into at most `count` (at least one)
/// ranges by `cut`: in order, each item in exactly one, none empty; none when `len` is 0.
/// No chunk's work less its last item's exceeds the share ⌈total / count⌉ (at least 1), so
/// a chunk runs over the share by one item at most.
pub fn balanced(len: usize, work: impl Fn(usize) -> u64, count: usize, cut: Cut) -> Vec<Range<usize>> {
    let count = count.max(1);
    let total: u64 = (0..len).map(&work).sum();
    let share = total.div_ceil(count as u64).max(1);
    let mut ranges = Vec::with_capacity(count);
    let (mut start, mut done, mut done_at_start) = (0, 0u64, 0u64);
    for i in 0..len {
        done += work(i);
        let reached = match cut {
            Cut::Quantiles => done * count as u64 >= total * (ranges.len() as u64 + 1),
            Cut::Shares => done - done_at_start >= share,
        };
        if reached && ranges.len() + 1 < count && i + 1 < len {
            ranges.push(start..i + 1);
            (start, done_at_start) = (i + 1, done);
        }
    }
    if start < len {
        ranges.push(start..len);
    }
    ranges
}

#[cfg(test)]
mod tests;
