//! Edges kept in memory across iterations (Redio §4, "Vertex Data Buffering" and the edge
//! buffering beside it): when the budget left after the vertex state and the read buffers has
//! room, a prefix of the layout that dense iterations read is copied from the buffers of its
//! first dense pass and kept. Later dense passes over that layout fold the kept buffers first,
//! from memory, and read only the rest from disk, in file order, so every target still sees
//! its edges in the same order.
//!
//! Why: on this machine kind a dense pass over RMAT-22's csr-in (261 MB) takes about 0.25 s
//! from disk with `O_DIRECT`, longer than the pull that folds it; PageRank reads it 20 times.
//! Only one layout is kept (the first one read densely: csr-in for programs that pull), and
//! only a prefix without holes, so that what is resident is one number, `end`.

use super::reader::EdgeBuffer;
use crate::runtime::DIRECT_ALIGN;

/// A resident prefix `[0, end)` of one layout's edges.
pub struct ResidentEdges {
    /// The layout kept (fixed by the first dense pass).
    layout: Option<usize>,
    buffers: Vec<EdgeBuffer>,
    end: u64,
    bytes: u64,
    /// Bytes the prefix may take.
    room: u64,
    /// The first dense pass is over: nothing is added afterwards.
    sealed: bool,
}

impl ResidentEdges {
    pub fn new(room: u64) -> ResidentEdges {
        ResidentEdges { layout: None, buffers: Vec::new(), end: 0, bytes: 0, room, sealed: room == 0 }
    }

    /// The resident buffers of `layout` (empty for another layout) and the first edge a dense
    /// pass over it must read from disk.
    pub fn prefix(&self, layout: usize) -> (&[EdgeBuffer], u64) {
        if self.layout == Some(layout) {
            (&self.buffers, self.end)
        } else {
            (&[], 0)
        }
    }

    /// Offers a buffer just consumed by a dense pass over `layout`: during the first such pass
    /// a copy is kept while it continues the prefix and fits the room; the first buffer that
    /// does not fit ends the filling.
    pub fn offer(&mut self, layout: usize, buffer: &EdgeBuffer) -> bool {
        self.offer_copy(layout, buffer, EdgeBuffer::filled_copy)
    }

    /// [`offer`](Self::offer), the kept copy made by `copy`.
    fn offer_copy(&mut self, layout: usize, buffer: &EdgeBuffer, copy: impl FnOnce(&EdgeBuffer) -> EdgeBuffer) -> bool {
        if self.sealed || self.layout.is_some_and(|l| l != layout) {
            return false;
        }
        let continues = buffer.pieces.first().is_some_and(|p| p.first_edge == self.end)
            && buffer.pieces.iter().all(|p| p.layout == layout)
            && buffer.pieces.windows(2).all(|w| w[0].end_edge == w[1].first_edge);
        if !continues || self.bytes + buffer.used_bytes() > self.room {
            self.sealed = true;
            return false;
        }
        self.layout = Some(layout);
        self.bytes += buffer.used_bytes();
        self.end = buffer.pieces.last().map_or(self.end, |p| p.end_edge);
        self.buffers.push(copy(buffer));
        true
    }

    /// [`offer`](Self::offer), the copy's ids renumbered by `slot_of` (see
    /// [`renumber`](Self::renumber)); returns the copy when it is kept.
    pub fn offer_renumbered(&mut self, layout: usize, buffer: &EdgeBuffer, slot_of: &[u32]) -> Option<&EdgeBuffer> {
        if !self.offer_copy(layout, buffer, |b| renumbered_copy(b, slot_of)) {
            return None;
        }
        self.buffers.last()
    }

    /// Whether a first dense pass over `layout`, `bytes` in all, would keep all of it.
    pub fn will_hold(&self, layout: usize, bytes: u64) -> bool {
        !self.sealed && self.buffers.is_empty() && self.layout.is_none_or(|l| l == layout) && bytes <= self.room
    }

    /// Room left once `bytes` more are held (0 when they do not fit).
    pub fn room_after(&self, bytes: u64) -> u64 {
        self.room.saturating_sub(self.bytes + bytes)
    }

    /// Ends the first dense pass over the kept layout (a pass over another one changes nothing).
    pub fn end_pass(&mut self, layout: usize) {
        if self.layout.is_none_or(|l| l == layout) && !self.buffers.is_empty() {
            self.sealed = true;
        }
    }

    /// Whether all of `layout`'s `edges` are held and nothing more will be added.
    pub fn holds_all(&self, layout: usize, edges: u64) -> bool {
        self.sealed && self.layout == Some(layout) && self.end == edges
    }

    /// Room left for other in-memory structures of the same budget.
    pub fn spare_room(&self) -> u64 {
        self.room - self.bytes
    }

    /// Rewrites every 4-byte id `v < slot_of.len()` held to `slot_of[v]` (ids beyond, from a
    /// damaged file, stay beyond, to be reported by the fold). In parallel over the buffers.
    pub fn renumber(&mut self, slot_of: &[u32]) {
        self.buffers.iter_mut().for_each(|buffer| renumber_buffer(buffer, slot_of));
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Edges held.
    pub fn edges(&self) -> u64 {
        self.end
    }
}

/// Bytes beyond a layout's `layout` bytes that its copies from buffers of `buffer_bytes` may
/// hold: an `O_DIRECT` read starts and ends on [`DIRECT_ALIGN`] boundaries, in the targets and
/// the weights areas of every buffer.
pub fn alignment_slack(layout: u64, buffer_bytes: u64) -> u64 {
    let align = DIRECT_ALIGN as u64;
    4 * align * (layout.div_ceil(buffer_bytes.max(align)) + 1)
}

/// Rewrites every 4-byte id `v < slot_of.len()` of `buffer` to `slot_of[v]` (ids beyond, from
/// a damaged file, stay beyond, to be reported by the fold), on all threads.
pub fn renumber_buffer(buffer: &mut EdgeBuffer, slot_of: &[u32]) {
    use rayon::prelude::*;
    const IDS_PER_TASK: usize = 1 << 16;
    let pieces = buffer.pieces.clone();
    for piece in pieces {
        let ids = &mut buffer.targets[piece.target_pos..piece.target_pos + piece.edges() as usize * 4];
        ids.par_chunks_mut(4 * IDS_PER_TASK).for_each(|ids| renumber_ids(ids, slot_of));
    }
}

/// A copy of `buffer`'s filled part with its ids renumbered as [`renumber_buffer`] does, each
/// piece of the copy renumbered right after it is copied, while in the copying core's cache
/// ([`EdgeBuffer::filled_copy_with`]): one pass over the memory instead of two.
pub fn renumbered_copy(buffer: &EdgeBuffer, slot_of: &[u32]) -> EdgeBuffer {
    if buffer.pieces.iter().any(|p| p.target_pos % 4 != 0) {
        // Ids that do not start on 4-byte boundaries cannot be cut with the copy's pieces.
        let mut copy = buffer.filled_copy();
        renumber_buffer(&mut copy, slot_of);
        return copy;
    }
    let ids: Vec<std::ops::Range<usize>> =
        buffer.pieces.iter().map(|p| p.target_pos..p.target_pos + p.edges() as usize * 4).collect();
    buffer.filled_copy_with(|offset, copied| {
        let end = offset + copied.len();
        for range in &ids {
            let (from, to) = (range.start.max(offset), range.end.min(end));
            if from < to {
                renumber_ids(&mut copied[from - offset..to - offset], slot_of);
            }
        }
    })
}

/// Rewrites the 4-byte ids of `ids` by `slot_of` (ids beyond it stay).
fn renumber_ids(ids: &mut [u8], slot_of: &[u32]) {
    for id in ids.chunks_exact_mut(4) {
        let v = u32::from_le_bytes(id.try_into().unwrap());
        if let Some(&slot) = slot_of.get(v as usize) {
            id.copy_from_slice(&slot.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(layout: usize, first: u64, end: u64) -> EdgeBuffer {
        EdgeBuffer::filled_for_test(layout, first, end, 4)
    }

    #[test]
    fn keeps_a_prefix_without_holes_within_its_room() {
        let mut r = ResidentEdges::new(1 << 20);
        r.offer(1, &buffer(1, 0, 10));
        r.offer(1, &buffer(1, 10, 25));
        r.end_pass(1);
        r.offer(1, &buffer(1, 25, 30));
        assert_eq!((r.prefix(1).0.len(), r.prefix(1).1, r.bytes()), (2, 25, 100));
        assert_eq!(r.prefix(1).0[1].pieces[0].first_edge, 10);
        assert_eq!(r.prefix(0).1, 0, "another layout has nothing resident");

        let mut r = ResidentEdges::new(1 << 20);
        r.offer(0, &buffer(0, 5, 10));
        assert_eq!(r.prefix(0).1, 0, "a prefix starts at edge 0");
        r.offer(0, &buffer(0, 0, 10));
        assert_eq!(r.prefix(0).1, 0, "a hole seals it");
    }

    #[test]
    fn renumbers_every_held_id_and_leaves_ids_beyond_the_vertices() {
        let mut r = ResidentEdges::new(1 << 20);
        let mut b = buffer(0, 0, 4);
        for (i, id) in [2u32, 0, 7, 1].iter().enumerate() {
            b.targets[i * 4..i * 4 + 4].copy_from_slice(&id.to_le_bytes());
        }
        r.offer(0, &b);
        r.end_pass(0);
        assert!(r.holds_all(0, 4) && !r.holds_all(0, 5) && !r.holds_all(1, 4));
        r.renumber(&[2, 0, 1]);
        let ids: Vec<u32> =
            r.prefix(0).0[0].targets[..16].chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(ids, [1, 2, 7, 0]);
    }

    #[test]
    fn a_renumbered_copy_equals_a_copy_renumbered_afterwards() {
        use crate::engine::stream::reader::Piece;
        // 294,912 ids (1.18 MB: two copy pieces), some beyond the 350,000 slots, in two pieces
        // with 16 bytes between them that are not ids and must stay as they are.
        let mut b = buffer(0, 0, 294_912);
        for (i, id) in b.targets.chunks_exact_mut(4).enumerate() {
            id.copy_from_slice(&((i as u32).wrapping_mul(7919) % 400_000).to_le_bytes());
        }
        b.pieces = vec![
            Piece { layout: 0, first_edge: 0, end_edge: 100_000, target_pos: 0, weight_pos: 0 },
            Piece { layout: 0, first_edge: 100_000, end_edge: 294_908, target_pos: 400_016, weight_pos: 0 },
        ];
        let slot_of: Vec<u32> = (0..350_000u32).map(|v| 349_999 - v).collect();
        let mut want = b.filled_copy();
        renumber_buffer(&mut want, &slot_of);
        let got = renumbered_copy(&b, &slot_of);
        assert_eq!(&got.targets[..], &want.targets[..]);
        assert_eq!(got.targets[400_000..400_016], b.targets[400_000..400_016], "the gap is copied as it is");
        assert_ne!(got.targets[..16], b.targets[..16], "ids were renumbered");
    }

    #[test]
    fn stops_at_the_first_buffer_that_does_not_fit() {
        let mut r = ResidentEdges::new(0);
        r.offer(0, &buffer(0, 0, 10));
        assert_eq!(r.prefix(0).1, 0);
        let mut r = ResidentEdges::new(60);
        r.offer(0, &buffer(0, 0, 10));
        r.offer(0, &buffer(0, 10, 20));
        r.offer(0, &buffer(0, 20, 22));
        assert_eq!((r.prefix(0).1, r.bytes()), (10, 40), "the second buffer did not fit and sealed it");
    }

    fn ids(b: &EdgeBuffer, count: usize) -> Vec<u32> {
        b.targets[..4 * count].chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect()
    }

    #[test]
    fn offered_renumbered_copies_are_kept_renumbered_and_can_be_renumbered_back() {
        let mut b = buffer(0, 0, 4);
        for (i, id) in [2u32, 0, 7, 1].iter().enumerate() {
            b.targets[i * 4..i * 4 + 4].copy_from_slice(&id.to_le_bytes());
        }
        let mut r = ResidentEdges::new(1 << 20);
        assert!(r.will_hold(0, 16) && !r.will_hold(0, 2 << 20) && r.room_after(16) == (1 << 20) - 16);
        let (slot_of, vertex_at) = ([2u32, 0, 1], [1u32, 2, 0]);
        assert_eq!(ids(r.offer_renumbered(0, &b, &slot_of).unwrap(), 4), [1, 2, 7, 0]);
        assert_eq!(ids(&b, 4), [2, 0, 7, 1], "the offered buffer is unchanged");
        r.end_pass(0);
        assert!(!r.will_hold(0, 16), "a sealed prefix takes nothing more");
        r.renumber(&vertex_at);
        assert_eq!(ids(&r.prefix(0).0[0], 4), [2, 0, 7, 1]);
        let mut full = ResidentEdges::new(8);
        assert!(full.offer_renumbered(0, &b, &slot_of).is_none(), "no room: not kept");
    }
}
