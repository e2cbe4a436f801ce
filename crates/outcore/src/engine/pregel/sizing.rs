//! How a rank sizes itself within the budget: its memory by part, the message file size B,
//! whether it pulls, which lists it reads and whether they stay resident. One computation
//! ([`size_rank`]) serves the run ([`super::rank::run_rank`]) and the planner
//! ([`super::plan`]), so that `--explain` shows what the run will charge to its ledger.
//!
//! GraphD §4 gives a rank O(|V|/W) memory: its vertex array A and values, (1 + SEND_WINDOW) W + 5
//! message buffers of B bytes, and in recoded mode with a combiner the arrays A_s (W > 1) and A_r that
//! messages fold into (§5). What the budget leaves then goes to the compute buffers of a wave
//! ([`super::parallel`]) and, when it holds them, to the rank's edge lists kept resident
//! ([`super::lists`]). A recoded rank whose program sends dense uniform messages pulls
//! ([`super::pull`]) when the budget also holds its in-lists and the offers (one per vertex of
//! the rank at W = 1, one per vertex of the job at W > 1).

use super::lists::ResidentEdges;
use super::partition::VERTEX_RECORD_BYTES;
use super::rank::{StepProgram, VertexRecord};
use super::streams::EDGE_BUFFER_BYTES;
use super::units::SEND_WINDOW;
use super::PregelOptions;
use crate::engine::planner::{ProgramForm, ProgramShape};
use crate::error::{Error, Result};
use crate::program::EdgeDirection;
use crate::runtime::{format_size, MemoryBudget, MemoryPart};

/// What sizing needs to know of a program: read from a [`StepProgram`] by the run, from a
/// [`ProgramShape`] by the plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RankNeeds {
    pub value_bytes: u64,
    pub msg_bytes: u64,
    /// Bytes of a slot of A_s and A_r (`Option<Msg>`).
    pub slot_bytes: u64,
    pub has_combiner: bool,
    /// The program sends dense uniform messages ([`StepProgram::dense_uniform_identity`]).
    pub dense_uniform: bool,
    /// The lists it reads when it pushes.
    pub reads: ListsRead,
}

impl RankNeeds {
    pub(crate) fn of<S: StepProgram>(program: &S, directed: bool) -> RankNeeds {
        RankNeeds {
            value_bytes: size_of::<S::Value>() as u64,
            msg_bytes: size_of::<S::Msg>() as u64,
            slot_bytes: size_of::<Option<S::Msg>>() as u64,
            has_combiner: program.has_combiner(),
            dense_uniform: program.dense_uniform_identity().is_some(),
            reads: ListsRead { out: program.reads_out_lists(), inn: program.reads_in_lists() && directed },
        }
    }

    /// The same facts from the planner's shape: the rules of `VertexSteps` and `PregelSteps`
    /// (`super`) for vertex and Pregel programs.
    pub(crate) fn of_shape(shape: &ProgramShape, directed: bool) -> RankNeeds {
        let vertex = shape.form == ProgramForm::Vertex;
        let (out, inn) = if vertex {
            (shape.direction != EdgeDirection::In || !directed, shape.direction != EdgeDirection::Out)
        } else {
            (true, shape.in_edges)
        };
        let dense_uniform = vertex
            && shape.sends_uniform_messages
            && shape.applies_to_all
            && (shape.direction == EdgeDirection::Out || !directed);
        RankNeeds {
            value_bytes: shape.value_bytes,
            msg_bytes: shape.msg_bytes,
            slot_bytes: shape.msg_slot_bytes,
            has_combiner: shape.combines,
            dense_uniform,
            reads: ListsRead { out, inn: inn && directed },
        }
    }
}

/// A rank's share of the partition.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RankShare {
    pub ranks: usize,
    /// This rank's vertices, and the most any rank has (A_s is sized for the largest).
    pub vertices: u64,
    pub max_vertices: u64,
    /// Arcs of this rank's out-lists and in-lists (in-lists: directed stores only).
    pub out_arcs: u64,
    pub in_arcs: u64,
    pub weighted: bool,
    pub directed: bool,
}

/// Which of the rank's lists a run reads: out-lists, and in-lists (directed stores only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListsRead {
    pub out: bool,
    pub inn: bool,
}

impl ListsRead {
    /// The lists a pulling rank folds over: the in-lists (the lists of an undirected store).
    fn pulled(directed: bool) -> ListsRead {
        ListsRead { out: !directed, inn: directed }
    }

    /// Arcs of these lists in `share`: out-lists, in-lists.
    pub(crate) fn arcs(self, share: &RankShare) -> (u64, u64) {
        (if self.out { share.out_arcs } else { 0 }, if self.inn { share.in_arcs } else { 0 })
    }

    /// Arcs of these lists of `vertex`.
    pub(crate) fn degree(self, vertex: &VertexRecord) -> u64 {
        (if self.out { vertex.out_degree } else { 0 }) + if self.inn { vertex.in_degree } else { 0 }
    }

    /// The file of the lists a pulling rank reads.
    pub(crate) fn pulled_file(self) -> &'static str {
        if self.inn {
            "edges-in"
        } else {
            "edges-out"
        }
    }
}

/// How a rank runs within its budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RankSizing {
    pub memory: RankMemory,
    /// The message file size B.
    pub message_file_size: u64,
    /// Messages fold into A_s and A_r in memory (recoded mode with a combiner).
    pub in_memory_combine: bool,
    /// The rank pulls dense uniform messages over its resident in-lists ([`super::pull`]).
    pub pulls: bool,
    pub reads: ListsRead,
    /// Resident lists keep 4-byte names.
    pub narrow: bool,
}

impl RankSizing {
    /// Arcs of the lists the rank reads: out-lists, in-lists.
    pub(crate) fn arcs(&self, share: &RankShare) -> (u64, u64) {
        self.reads.arcs(share)
    }

    /// Whether the rank keeps its lists resident (read once, not streamed every step).
    pub(crate) fn resident(&self) -> bool {
        self.memory.resident > 0
    }

    /// The parts the plan shows and the rank charges to the run's ledger.
    pub(crate) fn parts(&self) -> [MemoryPart; 5] {
        self.memory.parts(self.message_file_size)
    }

    /// Fails when the rank needs more than `budget`.
    pub(crate) fn check(&self, budget: MemoryBudget) -> Result<()> {
        self.memory.check(budget, self.message_file_size)
    }
}

/// Sizes a rank of `share` running a program with `needs` within `budget` bytes: B once the
/// fixed memory is known, then the compute buffers and the resident lists from what is left.
/// A rank combining in memory pulls dense uniform messages when `may_pull` and the budget
/// holds the in-lists and the offers; otherwise it pushes. (Ranks pull all or none: a run
/// whose ranks do not all pull sizes them again with `may_pull` false.)
pub(crate) fn size_rank(
    needs: &RankNeeds,
    share: &RankShare,
    recoded: bool,
    budget: u64,
    options: &PregelOptions,
    may_pull: bool,
) -> RankSizing {
    let in_memory_combine = recoded && needs.has_combiner;
    let arrays = if in_memory_combine { array_slots(share) * needs.slot_bytes } else { 0 };
    let memory = RankMemory::new(share.ranks, share.vertices, needs.value_bytes, arrays);
    let b = super::message_file_size(options, budget, share.ranks, memory.fixed());
    let narrow = narrow_names(recoded, share.ranks as u64, share.max_vertices);
    let resident_bytes = |reads: ListsRead| {
        let (out, inn) = reads.arcs(share);
        ResidentEdges::bytes(out + inn, share.weighted, narrow)
    };
    let sized = |arrays: u64, reads: ListsRead| {
        let mut sized = RankMemory { arrays, ..memory };
        sized.size_compute(budget, b, resident_bytes(reads));
        sized
    };
    let (ranks, n, max_n) = (share.ranks as u64, share.vertices, share.max_vertices);
    let offers = super::pull::offers_bytes(ranks, n, max_n, needs.msg_bytes);
    let pulling = sized(arrays + offers, ListsRead::pulled(share.directed));
    let pulls =
        may_pull && in_memory_combine && needs.dense_uniform && super::pull::fits(ranks, max_n) && pulling.resident > 0;
    let (memory, reads) =
        if pulls { (pulling, ListsRead::pulled(share.directed)) } else { (sized(arrays, needs.reads), needs.reads) };
    RankSizing { memory, message_file_size: b, in_memory_combine, pulls, reads, narrow }
}

/// Slots of A_s (only a rank with others to send to has one, sized for the largest rank), of
/// A_r of the step being computed and of the step being received, and of the array of
/// messages to this rank's own vertices.
fn array_slots(share: &RankShare) -> u64 {
    let a_s = if share.ranks > 1 { share.max_vertices } else { 0 };
    a_s + 3 * share.vertices
}

/// Whether every name of a partition fits in 4 bytes, so that resident lists keep them narrow:
/// recoded names are below W · (the largest rank's vertices); basic names may be any u64 id.
pub(crate) fn narrow_names(recoded: bool, ranks: u64, max_local: u64) -> bool {
    recoded && ranks * (max_local + 1) < 1 << 32
}

/// The message buffers of B bytes a rank holds with W ranks: one outgoing buffer per
/// destination, [`SEND_WINDOW`] batches in flight from each rank, and five more (the sender's
/// and receiver's batches and the merge buffers of S^I).
pub(crate) fn message_buffers(ranks: usize) -> u64 {
    (ranks * (1 + SEND_WINDOW) + 5) as u64
}

/// Memory of a rank: its vertex array and values, and in recoded mode A_s (W > 1) and A_r,
/// plus its buffers: the edge stream's and [`message_buffers`] of the message file size B each
/// (the outgoing buffers, one per destination, the batches other ranks may have in flight to
/// it, the sender's and receiver's batches and the merge buffers of S^I); then the compute buffers of a wave ([`super::parallel`]) and, when
/// what is left holds them, the rank's resident edge lists ([`super::lists`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RankMemory {
    n_local: u64,
    pub(crate) vertex_part: u64,
    /// A_s and A_r, and a pulling rank's offers.
    arrays: u64,
    buffer_count: u64,
    /// The compute buffers of one wave.
    pub(crate) compute: u64,
    /// The resident edge lists (0: the lists are streamed every step).
    pub(crate) resident: u64,
}

impl RankMemory {
    /// `arrays`: bytes of A_s and A_r (0 unless recoded with a combiner).
    fn new(ranks: usize, n_local: u64, value_bytes: u64, arrays: u64) -> RankMemory {
        RankMemory {
            n_local,
            vertex_part: n_local * (VERTEX_RECORD_BYTES + value_bytes + 1),
            arrays,
            buffer_count: message_buffers(ranks),
            compute: 0,
            resident: 0,
        }
    }

    /// Sizes the compute buffers from what the budget leaves with message files of `b` bytes (a
    /// quarter, 64 MiB at most), then keeps `resident_bytes` of edge lists resident when the
    /// rest holds them.
    fn size_compute(&mut self, budget: u64, b: u64, resident_bytes: u64) {
        let left = budget.saturating_sub(self.vertex_part + self.arrays + self.buffers(b));
        self.compute = (left / 4).min(64 << 20);
        self.resident = if self.compute + resident_bytes <= left { resident_bytes } else { 0 };
    }

    /// What does not depend on B.
    fn fixed(&self) -> u64 {
        self.vertex_part + self.arrays + 3 * EDGE_BUFFER_BYTES as u64
    }

    /// The edge stream's buffers and the message buffers, with message files of `b` bytes.
    fn buffers(&self, b: u64) -> u64 {
        self.buffer_count * b + 3 * EDGE_BUFFER_BYTES as u64
    }

    fn parts(&self, b: u64) -> [MemoryPart; 5] {
        [
            MemoryPart::new("vertex records and values", self.vertex_part),
            MemoryPart::new("A_s and A_r", self.arrays),
            MemoryPart::new("message buffers", self.buffers(b)),
            MemoryPart::new("compute buffers", self.compute),
            MemoryPart::new("resident edge lists", self.resident),
        ]
    }

    fn check(&self, budget: MemoryBudget, b: u64) -> Result<()> {
        let needed = self.vertex_part + self.arrays + self.buffers(b) + self.compute + self.resident;
        if needed <= budget.bytes() {
            return Ok(());
        }
        Err(Error::MemoryBudget(format!(
            "the pregel engine needs about {} on this rank ({} vertices: {}; {} message buffers of {}; \
             {} for A_s/A_r) but the budget is {budget}; raise --memory, lower --message-file-size or use more ranks",
            format_size(needed),
            self.n_local,
            format_size(self.vertex_part),
            self.buffer_count,
            format_size(b),
            format_size(self.arrays),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PageRank's needs: 8-byte values and messages, a combiner, dense uniform messages.
    fn pagerank() -> RankNeeds {
        let reads = ListsRead { out: true, inn: false };
        RankNeeds { value_bytes: 8, msg_bytes: 8, slot_bytes: 16, has_combiner: true, dense_uniform: true, reads }
    }

    #[test]
    fn several_ranks_pull_only_when_the_budget_holds_every_vertex_offer() {
        let share = |ranks: usize| RankShare {
            ranks,
            vertices: 1 << 20,
            max_vertices: 1 << 20,
            out_arcs: 8 << 20,
            in_arcs: 8 << 20,
            weighted: false,
            directed: true,
        };
        let options = PregelOptions::default();
        let size =
            |ranks, budget: u64, may_pull| size_rank(&pagerank(), &share(ranks), true, budget, &options, may_pull);
        // The least budget (in MiB) at which four pushing ranks keep their lists resident.
        let resident = (1u64..4096).map(|mib| mib << 20).find(|&b| size(4, b, false).resident()).unwrap();
        let pushing = size(4, resident, true);
        assert!(!pushing.pulls, "offers of 4 · 2^20 vertices do not fit beside the lists");
        assert_eq!(pushing.reads, ListsRead { out: true, inn: false });
        let offers = super::super::pull::offers_bytes(4, 1 << 20, 1 << 20, 8);
        assert_eq!(offers, ((4 + 8) * 4 + 8 * 2) << 20, "a slot and an offer per vertex of the job, one exchange");
        let pulling = size(4, resident + 2 * offers, true);
        assert!(pulling.pulls && pulling.resident());
        assert_eq!(pulling.reads, ListsRead { out: false, inn: true }, "a pulling rank reads its in-lists");
        assert!(!size(4, resident + 2 * offers, false).pulls, "ranks that do not all pull push");
        assert!(size(1, resident + 2 * offers, true).pulls, "one rank holds offers of its own vertices only");
    }
}
