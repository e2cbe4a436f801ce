//! Which parts of an adjacency file an iteration reads: Redio's dynamic selective scheduling
//! (paper §3.2, Fig. 2) and the two baselines it is measured against.
//!
//! In the compact CSR layout the out-edges of vertex `v` are the contiguous edge range
//! `offsets[v]..offsets[v+1]`, so the active edges of an iteration are the ranges of the active
//! vertices. Reading only those ranges would turn one sequential scan into many small random
//! reads; reading everything wastes bandwidth when few vertices are active. Redio merges two
//! neighbouring active ranges when the inactive gap between them is smaller than a threshold
//! `l` — reading `l` bytes sequentially costs about one seek, so `l = bandwidth × latency` —
//! and reads the resulting *active chunks* in file order.
//!
//! All chunks are in edge-index space (`[first_edge, end_edge)`) and are produced lazily,
//! in ascending order, by scanning the [`IndexedBitmap`] frontier: the reader thread drives
//! the scan while the compute threads work, and no per-iteration plan is held in memory.
//!
//! * [`Schedule::Selective`] — merged active chunks; the whole file as one chunk when the
//!   active edges cover most of it (a dense iteration).
//! * [`Schedule::Full`] — every edge every iteration (X-Stream).
//! * [`Schedule::Block`] — fixed blocks, skipped only when wholly inactive (GridGraph's
//!   selective scheduling over its edge blocks).

use super::bitmap::IndexedBitmap;
use crate::error::{Error, Result};

/// How an iteration chooses what to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Redio's dynamic selective scheduling (the default).
    #[default]
    Selective,
    /// Stream every edge in every iteration (X-Stream-like baseline).
    Full,
    /// Fixed blocks, read when any of their edges is active (GridGraph-like baseline).
    Block,
}

impl Schedule {
    pub const NAMES: &'static [&'static str] = &["selective", "full", "block"];

    pub fn parse(name: &str) -> Result<Schedule> {
        match name {
            "selective" => Ok(Schedule::Selective),
            "full" => Ok(Schedule::Full),
            "block" => Ok(Schedule::Block),
            other => Err(Error::invalid(format!("unknown schedule '{other}' (available: {})", Self::NAMES.join(", ")))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Schedule::Selective => "selective",
            Schedule::Full => "full",
            Schedule::Block => "block",
        }
    }
}

/// A range of edges `[first_edge, end_edge)` of one layout, read in one go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub first_edge: u64,
    pub end_edge: u64,
}

impl Chunk {
    pub fn edges(&self) -> u64 {
        self.end_edge - self.first_edge
    }
}

/// The gap-merging rule: two active ranges are merged when reading the edges between them
/// costs less than the extra seeks of skipping them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapRule {
    /// Bytes one edge occupies over all files read (target width, plus 8 with weights).
    pub edge_bytes: u64,
    /// The threshold `l` times the number of files read: a skipped gap costs one extra seek
    /// in each file.
    pub seek_bytes: u64,
}

impl GapRule {
    /// The rule for threshold `l` when `files` files of `edge_bytes` bytes per edge in total
    /// are read.
    pub fn new(gap_threshold: u64, edge_bytes: u64, files: u64) -> GapRule {
        GapRule { edge_bytes, seek_bytes: gap_threshold * files }
    }

    /// True when an inactive gap of `gap_edges` edges is read rather than skipped.
    pub fn merges(&self, gap_edges: u64) -> bool {
        gap_edges == 0 || gap_edges.saturating_mul(self.edge_bytes) < self.seek_bytes
    }
}

/// Produces the merged active chunks of one layout for one iteration, in file order.
pub struct SelectiveScheduler<'a> {
    offsets: &'a [u64],
    frontier: &'a IndexedBitmap,
    rule: GapRule,
    next_vertex: usize,
    pending: Option<Chunk>,
}

impl<'a> SelectiveScheduler<'a> {
    /// `offsets` has |V| + 1 entries; `frontier` has |V| bits.
    pub fn new(offsets: &'a [u64], frontier: &'a IndexedBitmap, rule: GapRule) -> Self {
        debug_assert_eq!(offsets.len(), frontier.len() + 1);
        SelectiveScheduler { offsets, frontier, rule, next_vertex: 0, pending: None }
    }
}

impl Iterator for SelectiveScheduler<'_> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        loop {
            let Some(v) = self.frontier.next_one(self.next_vertex) else {
                return self.pending.take();
            };
            self.next_vertex = v + 1;
            let (first, end) = (self.offsets[v], self.offsets[v + 1]);
            if first == end {
                continue;
            }
            match &mut self.pending {
                Some(chunk) if self.rule.merges(first - chunk.end_edge) => chunk.end_edge = end,
                Some(chunk) => {
                    let done = *chunk;
                    *chunk = Chunk { first_edge: first, end_edge: end };
                    return Some(done);
                }
                None => self.pending = Some(Chunk { first_edge: first, end_edge: end }),
            }
        }
    }
}

/// Produces the fixed blocks (of `block_edges` edges) holding at least one active edge,
/// consecutive blocks joined into one chunk.
pub struct BlockScheduler<'a> {
    offsets: &'a [u64],
    frontier: &'a IndexedBitmap,
    block_edges: u64,
    total_edges: u64,
    next_vertex: usize,
    pending: Option<Chunk>,
}

impl<'a> BlockScheduler<'a> {
    pub fn new(offsets: &'a [u64], frontier: &'a IndexedBitmap, block_edges: u64) -> Self {
        let total_edges = *offsets.last().unwrap_or(&0);
        BlockScheduler {
            offsets,
            frontier,
            block_edges: block_edges.max(1),
            total_edges,
            next_vertex: 0,
            pending: None,
        }
    }
}

impl Iterator for BlockScheduler<'_> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        let b = self.block_edges;
        loop {
            let Some(v) = self.frontier.next_one(self.next_vertex) else {
                return self.pending.take();
            };
            let (first, end) = (self.offsets[v], self.offsets[v + 1]);
            self.next_vertex = v + 1;
            if first == end {
                continue;
            }
            let block_first = first / b * b;
            let block_end = (end.div_ceil(b) * b).min(self.total_edges);
            // Every vertex whose edges start before `block_end` is covered by these blocks.
            match &mut self.pending {
                Some(chunk) if block_first <= chunk.end_edge => chunk.end_edge = chunk.end_edge.max(block_end),
                Some(chunk) => {
                    let done = *chunk;
                    *chunk = Chunk { first_edge: block_first, end_edge: block_end };
                    return Some(done);
                }
                None => self.pending = Some(Chunk { first_edge: block_first, end_edge: block_end }),
            }
        }
    }
}

/// The chunks of one layout for one iteration, as the chosen schedule decides.
pub enum ChunkPlan<'a> {
    /// The whole layout as one chunk (full streaming, or a dense selective iteration).
    Whole(Option<Chunk>),
    Selective(SelectiveScheduler<'a>),
    Block(BlockScheduler<'a>),
}

impl Iterator for ChunkPlan<'_> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        match self {
            ChunkPlan::Whole(chunk) => chunk.take(),
            ChunkPlan::Selective(s) => s.next(),
            ChunkPlan::Block(s) => s.next(),
        }
    }
}

impl<'a> ChunkPlan<'a> {
    /// The whole edge range `[0, total_edges)` (nothing when the layout has no edges).
    pub fn whole(total_edges: u64) -> ChunkPlan<'a> {
        Self::rest(0, total_edges)
    }

    /// Edges `[first, total_edges)` as one chunk (the rest of a layout after its resident prefix).
    pub fn rest(first: u64, total_edges: u64) -> ChunkPlan<'a> {
        ChunkPlan::Whole((first < total_edges).then_some(Chunk { first_edge: first, end_edge: total_edges }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets for the given degrees.
    fn offsets(degrees: &[u64]) -> Vec<u64> {
        let mut o = vec![0];
        for d in degrees {
            o.push(o.last().unwrap() + d);
        }
        o
    }

    fn frontier(n: usize, active: &[usize]) -> IndexedBitmap {
        let mut f = IndexedBitmap::new(n, 64);
        for &v in active {
            f.set(v);
        }
        f
    }

    /// 4-byte targets, one file: the gap in bytes is 4 × the inactive edges.
    fn rule(l: u64) -> GapRule {
        GapRule::new(l, 4, 1)
    }

    #[test]
    fn merges_a_gap_just_below_the_threshold() {
        // v0: 10 edges, v1: 1023 edges (4092 bytes, inactive), v2: 5 edges.
        let o = offsets(&[10, 1023, 5]);
        let f = frontier(3, &[0, 2]);
        let chunks: Vec<_> = SelectiveScheduler::new(&o, &f, rule(4096)).collect();
        assert_eq!(chunks, vec![Chunk { first_edge: 0, end_edge: 1038 }]);
    }

    #[test]
    fn skips_a_gap_of_exactly_or_just_above_the_threshold() {
        for gap_edges in [1024, 1025] {
            let o = offsets(&[10, gap_edges, 5]);
            let f = frontier(3, &[0, 2]);
            let chunks: Vec<_> = SelectiveScheduler::new(&o, &f, rule(4096)).collect();
            assert_eq!(
                chunks,
                vec![
                    Chunk { first_edge: 0, end_edge: 10 },
                    Chunk { first_edge: 10 + gap_edges, end_edge: 15 + gap_edges }
                ],
                "gap of {gap_edges} edges"
            );
        }
    }

    #[test]
    fn adjacent_active_ranges_and_empty_vertices() {
        // Active v0, v1 adjacent; v2 empty and active; v3 inactive with 2000 edges; v4 active;
        // v5 inactive with 100 edges (400 B < l); v6 active.
        let o = offsets(&[3, 4, 0, 2000, 7, 100, 1]);
        let f = frontier(7, &[0, 1, 2, 4, 6]);
        let chunks: Vec<_> = SelectiveScheduler::new(&o, &f, rule(4096)).collect();
        assert_eq!(chunks, vec![Chunk { first_edge: 0, end_edge: 7 }, Chunk { first_edge: 2007, end_edge: 2115 }]);
        // With l = 0 only contiguous ranges merge.
        let chunks: Vec<_> = SelectiveScheduler::new(&o, &f, rule(0)).collect();
        assert_eq!(
            chunks,
            vec![
                Chunk { first_edge: 0, end_edge: 7 },
                Chunk { first_edge: 2007, end_edge: 2014 },
                Chunk { first_edge: 2114, end_edge: 2115 }
            ]
        );
    }

    #[test]
    fn weights_count_in_the_gap_and_the_seek_cost() {
        // Targets + weights: 12 bytes per edge, two seeks per skipped gap (2 l).
        let r = GapRule::new(4096, 12, 2);
        assert!(r.merges(682)); // 8184 B < 8192 B
        assert!(!r.merges(683)); // 8196 B
    }

    #[test]
    fn empty_frontier_reads_nothing() {
        let o = offsets(&[3, 4]);
        let f = frontier(2, &[]);
        assert_eq!(SelectiveScheduler::new(&o, &f, rule(4096)).count(), 0);
        assert_eq!(BlockScheduler::new(&o, &f, 4).count(), 0);
    }

    #[test]
    fn block_schedule_reads_whole_blocks_touched_by_active_vertices() {
        // Blocks of 10 edges over 45 edges: [0,10) [10,20) [20,30) [30,40) [40,45).
        let o = offsets(&[2, 3, 10, 10, 10, 5, 5]);
        // v1: edges 2..5 (block 0); v4: edges 25..35 (blocks 2, 3); v6: 40..45 (block 4).
        let f = frontier(7, &[1, 4, 6]);
        let chunks: Vec<_> = BlockScheduler::new(&o, &f, 10).collect();
        assert_eq!(chunks, vec![Chunk { first_edge: 0, end_edge: 10 }, Chunk { first_edge: 20, end_edge: 45 }]);
    }

    #[test]
    fn whole_plan_is_one_chunk() {
        assert_eq!(ChunkPlan::whole(99).collect::<Vec<_>>(), vec![Chunk { first_edge: 0, end_edge: 99 }]);
        assert_eq!(ChunkPlan::whole(0).count(), 0);
    }
}
