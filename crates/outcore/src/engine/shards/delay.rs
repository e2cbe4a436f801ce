//! The delay buffer ("Load the Edges You Need" §3 and §4.1).
//!
//! On a dynamic shard a vertex may lack some of its out-edges. Under the accumulation-based
//! model it still gathers and applies at once (a missing in-edge is a zero increment); only its
//! scatter along the missing edges must wait. The vertex enters the buffer with what it would
//! have sent: here its value at that step (the program's `scatter` computes the message from
//! the value and the edge, so the value is the message before the edge is known). A vertex may
//! enter several times before the next shadow iteration; there, for each missing edge `e`, the
//! messages `scatter(value_t, e)` of all its entries from steps after `e` was last present are
//! folded with `combine` — the paper's aggregation function `f` (sum for PageRank, min for
//! shortest paths and components), which by the distributivity requirement of §4.2 yields what
//! the edge would have carried in total.
//!
//! Entries are kept per step, in vertex order (steps visit intervals and their vertices in
//! ascending order), so a shadow iteration finds an interval's entries by binary search.

use crate::VertexId;

/// Delayed vertices with their values, per step.
pub struct DelayBuffer<V> {
    runs: Vec<(usize, Vec<(VertexId, V)>)>,
    entries: usize,
}

impl<V: Copy> Default for DelayBuffer<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Copy> DelayBuffer<V> {
    pub fn new() -> Self {
        DelayBuffer { runs: Vec::new(), entries: 0 }
    }

    /// Records that `vertex` computed `value` in `step` but could not send along every edge.
    /// Calls must come in ascending (step, vertex) order.
    pub fn push(&mut self, step: usize, vertex: VertexId, value: V) {
        match self.runs.last_mut() {
            Some((s, run)) if *s == step => {
                debug_assert!(run.last().is_none_or(|&(v, _)| v < vertex));
                run.push((vertex, value));
            }
            _ => self.runs.push((step, vec![(vertex, value)])),
        }
        self.entries += 1;
    }

    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Bytes the entries take (what the ODS policy compares with `--delay-buffer`).
    pub fn bytes(&self) -> u64 {
        (self.entries * std::mem::size_of::<(VertexId, V)>()) as u64
    }

    /// The entries of vertices in `[first, end)`, grouped by vertex: for each delayed vertex
    /// (ascending) its `(step, value)` pairs in step order.
    pub fn entries_in(&self, first: VertexId, end: VertexId) -> Vec<(VertexId, Vec<(usize, V)>)> {
        let mut all: Vec<(VertexId, usize, V)> = Vec::new();
        for (step, run) in &self.runs {
            let lo = run.partition_point(|&(v, _)| v < first);
            let hi = run.partition_point(|&(v, _)| v < end);
            all.extend(run[lo..hi].iter().map(|&(v, value)| (v, *step, value)));
        }
        all.sort_by_key(|&(v, step, _)| (v, step));
        let mut grouped: Vec<(VertexId, Vec<(usize, V)>)> = Vec::new();
        for (v, step, value) in all {
            match grouped.last_mut() {
                Some((u, list)) if *u == v => list.push((step, value)),
                _ => grouped.push((v, vec![(step, value)])),
            }
        }
        grouped
    }

    /// Empties the buffer (end of a shadow iteration).
    pub fn clear(&mut self) {
        self.runs.clear();
        self.entries = 0;
    }
}
