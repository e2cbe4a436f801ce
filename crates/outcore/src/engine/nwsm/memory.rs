//! The nwsm engine's memory (TurboGraph++ §4.2, Theorem 4.1): [`MemoryPlan`] per rank,
//! [`RunSizing`] for the run (the planner's parts and the run's ledger charges).
//!
//! Degrees (4 B) and the output column (8 B) per vertex stay whole (every rank writes
//! its outputs straight into the one column), and so do the ranks' page indexes (12 B per
//! page); W ranks in one process share the one budget, each planning (budget − resident) / W.
//! Per rank, 1/8 is page memory (frames; a quarter of it reads ahead); next what is in flight
//! between ranks (W > 1): the page reply it waits for and the one its server fills (a request
//! asks for at most a quarter of the frames), an update credit window (a rank may have at most
//! that many update bytes unacknowledged, split evenly over the destinations, so none receives
//! more either; charged twice, sent and received) and the output shares of a distributed run
//! (in rounds); then Theorem 4.1 gives q; the global gather buffer (two ranges, for double
//! buffering), the local gather buffers (2·|VA|/(pq) per level, 16 B per update held), the
//! vertex-of-interest bitmap and the spill write buffers come next; what remains is the
//! adjacency windows, 40 % for level 1 and 60 % for level 2 (§4.2 gives most memory to the
//! windows; level 2 here holds the lists of marked vertices, so it gets the larger share), or
//! all of it for level 1 in a one-level query. Each
//! run reports the largest update bytes in flight and page reply seen, to be checked against
//! the plan.

use super::gather::{self, SPILL_BUFFER_BYTES};
use super::partition::{self, BbpFacts};
use crate::error::{Error, Result};
use crate::runtime::{format_size, MemoryPart};

/// How one rank's share of the budget is spent. Every buffer a rank holds for longer than a
/// few records is here: page frames, adjacency windows, gather buffers, the vertex-of-interest
/// bitmap, spill write buffers and, with more than one rank, what is in flight between ranks
/// (page replies, update batches under credit flow control, output shares).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct MemoryPlan {
    pub q: usize,
    /// Bytes of the whole budget kept for per-vertex columns (degree and output).
    pub resident_bytes: u64,
    /// Each rank's share: (budget − resident) / p.
    pub per_rank_bytes: u64,
    pub frames: usize,
    /// Pages of the next level-1 window read ahead while the current one is computed.
    pub prefetch_pages: usize,
    pub window1_bytes: u64,
    pub window2_bytes: u64,
    /// Updates each local gather buffer of a level holds (all of a level's buffers together).
    pub local_gather_records: usize,
    pub global_gather_bytes: u64,
    pub voi_bytes: u64,
    pub spill_buffer_bytes: u64,
    /// Pages asked of another rank at once; a rank waits for each reply before asking again.
    pub remote_batch_pages: usize,
    /// Page replies: the one this rank waits for and the one its page server is filling.
    pub page_reply_bytes: u64,
    /// Credit window: update bytes this rank may have sent and not yet seen acknowledged, split
    /// evenly over the other ranks, so that no rank receives more than this much either.
    pub update_window_bytes: u64,
    /// Update bytes charged for the window: sent by this rank plus received from others.
    pub update_flight_bytes: u64,
    /// Vertices each rank shares per round of a distributed run's output exchange.
    pub output_share_vertices: u64,
    /// Output shares of a distributed run (vertices per round × 12 B, all ranks, ×3 copies).
    pub output_share_bytes: u64,
    /// Vertices applied at once (their store ids are read in chunks of this many).
    pub apply_chunk_vertices: usize,
}

impl MemoryPlan {
    /// Bytes one rank's buffers may hold at once (all parts of the plan added).
    pub fn charged_per_rank(&self, page_size: u64, k: usize) -> u64 {
        (self.frames + self.prefetch_pages) as u64 * page_size
            + self.window1_bytes
            + self.window2_bytes
            + k as u64 * self.local_gather_records as u64 * gather::LOCAL_RECORD_BYTES
            + self.global_gather_bytes
            + self.voi_bytes
            + (self.q as u64 - 1) * self.spill_buffer_bytes
            + self.page_reply_bytes
            + self.update_flight_bytes
            + self.output_share_bytes
            + self.apply_chunk_vertices as u64 * 4
    }
}

/// The plan for `n` vertices, `p` ranks and a `k`-level query.
pub fn plan_memory(n: u64, p: usize, k: usize, page_size: u64, budget: u64, q_at_least: usize) -> Result<MemoryPlan> {
    // One-level queries also keep the store id of every vertex (4 B): they read state by it.
    // (A query's column in BBP order is charged apart: `RunSizing::new`'s `column_bytes`.)
    // Two-level queries keep a list-mark table of 1 B per vertex per thread (`ListMarks`).
    let store_id_bytes = if k == 1 { 4 } else { 0 };
    let mark_bytes = if k >= 2 { rayon::current_num_threads() as u64 } else { 0 };
    let per_vertex = partition::RESIDENT_BYTES_PER_VERTEX + store_id_bytes + mark_bytes;
    let resident_bytes = n * per_vertex;
    if resident_bytes >= budget {
        return Err(Error::MemoryBudget(format!(
            "the nwsm engine keeps {per_vertex} bytes per vertex whole (degree, output{}): {} for {n} vertices, \
             out of the {} left to it, with nothing left for its pages and windows",
            if k == 1 { ", store id" } else { ", list marks" },
            format_size(resident_bytes),
            format_size(budget)
        )));
    }
    let per_rank = budget.saturating_sub(resident_bytes) / p as u64;
    let frames_bytes = (per_rank / 8).max(4 * page_size);
    // A quarter of the page memory reads the next level-1 window ahead (none below 5 pages).
    let pages = (frames_bytes / page_size) as usize;
    let prefetch_pages = (pages / 4).min(pages.saturating_sub(4));
    let frames = pages - prefetch_pages;
    let room = per_rank.saturating_sub(frames_bytes);
    // In flight between ranks (none with one rank): a quarter of the frames per page reply, an
    // update credit window of 1/32 of the room (at least 16 updates per other rank, at most
    // 4 MiB) and output shares of 1/64; apply reads store ids in chunks of 1/64 too.
    let remote_batch_pages = (frames / 4).max(1);
    let record = gather::SPILL_RECORD_BYTES as u64;
    let apply_chunk_vertices = (room / 64 / 4).clamp(64, 4096) as usize;
    let output_share_vertices = (room / 64 / (3 * p as u64 * record)).clamp(16, 8192);
    let (page_reply_bytes, update_window_bytes, output_share_bytes) = if p > 1 {
        (
            2 * remote_batch_pages as u64 * page_size,
            (room / 32).clamp(16 * record * (p as u64 - 1), 4 << 20),
            3 * p as u64 * output_share_vertices * record,
        )
    } else {
        (0, 0, 0)
    };
    let update_flight_bytes = 2 * update_window_bytes;
    let in_flight = page_reply_bytes + update_flight_bytes + output_share_bytes + apply_chunk_vertices as u64 * 4;
    let room = room.saturating_sub(in_flight);
    let q = partition::q_min(n, p, k, page_size, room)?.max(q_at_least);
    let range = n.div_ceil((p * q) as u64) + 1;
    let global_gather_bytes = 2 * range * partition::ATTRIBUTE_BYTES;
    let local_gather_records = (2 * range * partition::ATTRIBUTE_BYTES / gather::LOCAL_RECORD_BYTES) as usize;
    let local_gather_bytes = k as u64 * local_gather_records as u64 * gather::LOCAL_RECORD_BYTES;
    let voi_bytes = n.div_ceil(8) + n.div_ceil(4096) / 8;
    let spill_buffer_bytes = (room / 16 / q as u64).clamp(4 << 10, SPILL_BUFFER_BYTES as u64);
    let spill_bytes = (q as u64 - 1) * spill_buffer_bytes;
    let windows = room.saturating_sub(global_gather_bytes + local_gather_bytes + voi_bytes + spill_bytes);
    if windows < 4 * page_size {
        return Err(Error::MemoryBudget(format!(
            "the nwsm engine has {} left for adjacency windows out of {} (|V| = {n}, p = {p}, q = {q}); \
             give it more memory",
            format_size(windows),
            format_size(budget)
        )));
    }
    // A one-level query has no level 2: its level-1 windows take all (a hub's whole list must
    // fit one).
    let window1_bytes = if k == 1 { windows } else { windows * 2 / 5 };
    Ok(MemoryPlan {
        q,
        resident_bytes,
        per_rank_bytes: per_rank,
        frames,
        prefetch_pages,
        window1_bytes,
        window2_bytes: windows - window1_bytes,
        local_gather_records,
        global_gather_bytes,
        voi_bytes,
        spill_buffer_bytes,
        remote_batch_pages,
        page_reply_bytes,
        update_window_bytes,
        update_flight_bytes,
        output_share_vertices,
        output_share_bytes,
        apply_chunk_vertices,
    })
}

/// A run's memory by part: each rank's buffers ([`MemoryPlan`], for the q of the layout it
/// reads), the columns kept whole, and the page indexes of all ranks (12 B per page). The one
/// sum behind the planner's parts and the run's ledger charges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSizing {
    pub plan: MemoryPlan,
    pub index_bytes: u64,
    /// Bytes of all the ranks this process runs (W in-process ranks, or this one rank of a
    /// distributed run).
    pub ranks_bytes: u64,
    /// The query's column in BBP order (`NeighborhoodQuery::column`), when it has one.
    pub column_bytes: u64,
}

impl RunSizing {
    /// The sizing of a `k`-level query over `layout` (its q and pages), `local_ranks` of the
    /// `p` ranks in this process, keeping a copy of the query's column (`column_bytes`) when
    /// the budget holds one beside the plan, else none: the run then reads the query's own
    /// column through the store ids (`column_bytes` is 0 in the sizing).
    pub fn new(
        n: u64,
        (p, local_ranks): (usize, usize),
        k: usize,
        page_size: u64,
        budget: u64,
        layout: BbpFacts,
        column_bytes: u64,
    ) -> Result<RunSizing> {
        let (index_bytes, q) = (layout.pages * 12, layout.q);
        with_copy_or_without(column_bytes, |column_bytes| {
            let plan = plan_memory(n, p, k, page_size, budget.saturating_sub(index_bytes + column_bytes), q)?;
            let ranks_bytes = plan.charged_per_rank(page_size, k) * local_ranks as u64;
            Ok(RunSizing { plan, index_bytes, ranks_bytes, column_bytes })
        })
    }

    /// The plan a run wants before it has a layout (the q it builds for): with the column's
    /// copy if that fits, else without, as [`RunSizing::new`] chooses.
    pub fn wanted(n: u64, p: usize, k: usize, page_size: u64, budget: u64, column_bytes: u64) -> Result<MemoryPlan> {
        with_copy_or_without(column_bytes, |column_bytes| {
            plan_memory(n, p, k, page_size, budget.saturating_sub(column_bytes), 1)
        })
    }

    pub fn parts(&self) -> [MemoryPart; 4] {
        [
            MemoryPart::new("resident columns", self.plan.resident_bytes),
            MemoryPart::new("query column", self.column_bytes),
            MemoryPart::new("page indexes", self.index_bytes),
            MemoryPart::new("ranks' pages, windows, gathers", self.ranks_bytes),
        ]
    }
}

/// `size` with `column_bytes` of column copy, or, if that does not fit, with none.
fn with_copy_or_without<T>(column_bytes: u64, size: impl Fn(u64) -> Result<T>) -> Result<T> {
    size(column_bytes).or_else(|e| if column_bytes > 0 { size(0) } else { Err(e) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_charges_every_buffer_within_the_budget() {
        for (n, budget) in [(2048u64, 160u64 << 10), (1 << 20, 256 << 20), (50_000, 4 << 20)] {
            for p in [1, 2, 4] {
                for k in [1, 2] {
                    let page_size = match budget {
                        b if b < 1 << 20 => 512,
                        b if b < 64 << 20 => 4096,
                        _ => 64 << 10,
                    };
                    let plan = plan_memory(n, p, k, page_size, budget, 1).unwrap();
                    let charged = plan.resident_bytes + p as u64 * plan.charged_per_rank(page_size, k);
                    assert!(charged <= budget, "n={n} p={p} k={k}: {charged} of {budget}");
                    assert_eq!(plan.page_reply_bytes > 0, p > 1);
                    assert_eq!(plan.update_window_bytes > 0, p > 1);
                    if p > 1 {
                        assert!(plan.page_reply_bytes >= 2 * plan.remote_batch_pages as u64 * page_size);
                        assert!(plan.update_window_bytes >= 16 * 12 * (p as u64 - 1));
                    }
                }
            }
        }
    }
}
