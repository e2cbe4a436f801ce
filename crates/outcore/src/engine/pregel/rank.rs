//! One rank's superstep loop (GraphD §4): the computing unit U_c (this thread), the sending unit
//! U_s and the receiving unit U_r (two helper threads), and the end-tag protocol between them.
//!
//! Step `s` on every rank:
//! 1. U_c streams its vertex array A with S^E (and S^I, or A_r in recoded mode) and computes the
//!    awake vertices, wave by wave, on all cores when the lists are resident ([`super::parallel`]).
//!    Messages are appended to one buffer per destination; a full buffer (`message_file_size`)
//!    becomes a file of the outgoing stream and is handed to U_s at once.
//! 2. U_s sends the finished files while U_c goes on, one file at a time, visiting destinations in
//!    a ring that starts after its own rank; with a combiner it sorts a file by target and
//!    combines it first (basic mode) or combines it into the array A_s (recoded mode). When U_c is
//!    done, U_s sends an end tag to every rank, in the same ring order.
//! 3. Right after computing, the ranks' aggregators and halting figures are combined
//!    (`all_gather`, folded in rank order) and each rank decides to stop or go on.
//! 4. U_r has meanwhile received every batch of step `s` (tag of the step's parity): it sorts each
//!    batch by target and writes it as a file (or folds it into A_r in recoded mode); after W end
//!    tags it hands the step's files to U_c. A barrier then makes sure every rank has received all
//!    of `s` before anyone sends messages of `s + 1`.
//! 5. In step `s + 1`, the batch files are merged into S^I in one pass, in name order, together
//!    with A and S^E.
//!
//! This file sets a rank up (its vertices, its sizing, a resumed checkpoint), runs the three
//! units side by side and gathers the results on rank 0; U_c is in [`super::compute`], U_s and
//! U_r in [`super::units`]. [`StepProgram`] is what the units ask of a program.

use std::path::{Path, PathBuf};

use super::checkpoint;
use super::compute::{compute_unit, ComputeUnit};
use super::lists::ListCursor;
use super::parallel::Sink;
use super::partition::{self, PartitionInfo, VERTEX_RECORD_BYTES};
use super::sizing::{size_rank, RankNeeds, RankShare};
use super::units::{
    corrupt, receiver_unit, sender_unit, Incoming, SenderJob, KIND_DATA, KIND_END, KIND_STOP, TAG_MESSAGES,
};
use crate::engine::{PregelRankFigures, PregelRun, Runner};
use crate::error::{Error, IoContext, Result};
use crate::program::{Aggregates, Wire};
use crate::runtime::{peak_rss_bytes, IoCounters};
use crate::transport::{ReduceOp, Tag, Transport};
use crate::VertexId;

/// Final values, sent to rank 0.
const TAG_RESULTS: Tag = 110;

/// A vertex of the rank's array A.
#[derive(Debug, Clone, Copy)]
pub struct VertexRecord {
    pub name: u64,
    pub dense: VertexId,
    pub out_degree: u64,
    pub in_degree: u64,
}

/// Figures of one step, summed over a rank's vertices, then over the ranks.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Σ global contributions (vertex programs: the global sum of the next iteration).
    pub sum: f64,
    /// The aggregator slots (Pregel programs; width 0 for vertex programs).
    pub aggregates: Aggregates,
    /// Vertices awake after the step (active / not halted).
    pub awake: u64,
    pub messages: u64,
}

impl Totals {
    /// Zero totals with `width` empty aggregate slots.
    pub fn new(width: usize) -> Totals {
        Totals { aggregates: Aggregates::new(width), ..Totals::default() }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + 9 * self.aggregates.width());
        self.sum.put(&mut out);
        self.awake.put(&mut out);
        self.messages.put(&mut out);
        self.aggregates.put(&mut out);
        out
    }

    /// Decodes what [`encode`](Self::encode) wrote; `None` when the bytes are too short.
    pub fn decode(bytes: &[u8]) -> Option<Totals> {
        let (aggregates, _) = Aggregates::get(bytes.get(24..)?)?;
        Some(Totals {
            sum: f64::get(bytes),
            awake: u64::get(&bytes[8..]),
            messages: u64::get(&bytes[16..]),
            aggregates,
        })
    }
}

/// What a rank computes: the engine's view of a vertex or Pregel program (see `mod.rs`).
pub trait StepProgram: Sync {
    type Value: Wire + Clone + Send + Sync;
    type Msg: Wire + Clone + Send + Sync;

    fn init(&self, dense: VertexId) -> Self::Value;
    fn has_combiner(&self) -> bool;
    /// Folds two messages to one target (only called when `has_combiner`).
    fn combine(&self, a: &Self::Msg, b: &Self::Msg) -> Self::Msg;
    fn reads_out_lists(&self) -> bool;
    fn reads_in_lists(&self) -> bool;
    /// The identity of `combine` when every awake vertex sends one message, the same along
    /// all its out-arcs (the lists of an undirected store) and along no other, in every step,
    /// a vertex applies whether or not a message arrived, and `compute` offers its message
    /// through [`Sink::offer`] when the sink [pulls](Sink::pulls): a single rank then pulls
    /// ([`super::pull`]). None otherwise.
    fn dense_uniform_identity(&self) -> Option<Self::Msg> {
        None
    }
    /// Steps to run at most before any is computed (Pregel's `max_supersteps() == Some(0)`).
    fn runs_no_step(&self) -> bool;
    fn wakes(&self, halted: bool, has_messages: bool) -> bool;
    /// Computes one vertex; returns whether it halts.
    #[allow(clippy::too_many_arguments)]
    fn compute(
        &self,
        step: usize,
        vertex: &VertexRecord,
        value: &mut Self::Value,
        messages: &[Self::Msg],
        lists: &mut ListCursor,
        previous: &Totals,
        out: &mut Sink<Self::Msg>,
    ) -> Result<bool>;
    /// Aggregator slots of every step (0 for vertex programs).
    fn aggregate_width(&self) -> usize;
    fn fold_aggregate(&self, a: f64, b: f64) -> f64;
    /// The program's parameters, for the checkpoint key.
    fn checkpoint_key(&self) -> String;
    /// Whether the run ends after `step`, given the step's totals over all ranks.
    fn stop_after(&self, step: usize, global: &Totals) -> bool;
}

/// Engine settings of one run.
pub struct RankSettings<'a> {
    pub transport: &'a dyn Transport,
    pub recoded: bool,
    pub checkpoint_every: Option<usize>,
    pub resume: bool,
}

/// The scratch directory of one rank's message files, removed when the run ends either way.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `program` on this rank; returns every vertex's value in dense-id order on rank 0 and an
/// empty vector on the other ranks.
pub fn run_rank<S: StepProgram>(runner: &Runner, program: &S, settings: &RankSettings) -> Result<Vec<S::Value>> {
    let t = settings.transport;
    let (rank, ranks) = (t.rank(), t.ranks());
    let store = runner.store();
    let info = partition::open(store, ranks, settings.recoded)?;
    let parts = partition::partition_dir(store, ranks, settings.recoded);
    let rank_dir = partition::rank_dir(&parts, rank);
    let counters = store.counters().clone();
    let vertices = read_vertices(&rank_dir, &info, rank, &counters)?;
    let n_local = vertices.len();
    let part = &info.parts[rank];
    let share = RankShare {
        ranks,
        vertices: n_local as u64,
        max_vertices: info.parts.iter().map(|p| p.vertices).max().unwrap_or(0),
        out_arcs: part.out_arcs,
        in_arcs: part.in_arcs,
        weighted: info.weighted,
        directed: info.directed,
    };
    let budget = runner.memory();
    let size = |may_pull| {
        let needs = RankNeeds::of(program, info.directed);
        size_rank(&needs, &share, settings.recoded, budget.bytes(), &runner.options().pregel, may_pull)
    };
    let mut sizing = size(true);
    if ranks > 1 && t.all_reduce_u64(sizing.pulls as u64, ReduceOp::Min)? == 0 {
        // The ranks pull all or none (each folds offers the others sent).
        sizing = size(false);
    }
    sizing.check(budget)?;
    let _charges = runner.ledger().charge_parts(&sizing.parts())?;

    let mut values: Vec<S::Value> = vertices.iter().map(|v| program.init(v.dense)).collect();
    if program.runs_no_step() {
        return gather_results(t, &vertices, values, info.vertices);
    }
    let work = WorkDir(store.work_path(&format!("pregel-rank{rank}"))?);
    std::fs::create_dir_all(&work.0).context(|| format!("creating {}", work.0.display()))?;
    let record_bytes = 8 + S::Msg::BYTES;
    let fingerprint =
        checkpoint::fingerprint(std::any::type_name::<S>(), &program.checkpoint_key(), ranks, settings.recoded);
    let resumed = if settings.resume { resume(t, &rank_dir, &fingerprint, n_local, &work.0, &counters)? } else { None };
    let first_step = resumed.as_ref().map_or(0, |s| s.next_step);

    let (to_sender, sender_jobs) = crossbeam_channel::unbounded::<SenderJob>();
    let (to_compute, incoming) = crossbeam_channel::unbounded::<Incoming<S::Msg>>();
    let outcome = std::thread::scope(|scope| {
        let sender = scope.spawn(|| {
            sender_unit(t, program, sender_jobs, &counters, settings.recoded, share.max_vertices as usize, record_bytes)
                .inspect_err(|e| t.abort(e))
        });
        let receiver = scope.spawn(|| {
            receiver_unit(
                t,
                program,
                to_compute,
                &counters,
                &work.0,
                sizing.in_memory_combine,
                n_local,
                record_bytes,
                first_step,
            )
            .inspect_err(|e| t.abort(e))
        });
        let unit = ComputeUnit {
            runner,
            program,
            settings,
            info: &info,
            rank_dir: &rank_dir,
            vertices: &vertices,
            work: &work.0,
            to_sender,
            record_bytes,
            sizing,
            share,
            fingerprint: &fingerprint,
            counters: counters.clone(),
        };
        let computed = compute_unit(unit, &mut values, incoming, resumed);
        match &computed {
            Ok(_) => {
                // Ends U_r, which waits for the next step's messages.
                let _ = t.send(rank, TAG_MESSAGES[computed.as_ref().map_or(0, |s| (s + 1) % 2)], vec![KIND_STOP]);
            }
            Err(e) => t.abort(e),
        }
        let sent = sender
            .join()
            .unwrap_or_else(|_| Err(Error::Remote { rank: Some(rank), message: "sender unit panicked".into() }));
        let received = receiver
            .join()
            .unwrap_or_else(|_| Err(Error::Remote { rank: Some(rank), message: "receiver unit panicked".into() }));
        let steps = computed?;
        received?;
        Ok((steps, sent?))
    });
    let (_steps, sender_stats) = outcome?;

    // Per-rank figures for the whole job, gathered so that rank 0's stats show every rank.
    let own = [peak_rss_bytes(), sender_stats.messages_bytes, sender_stats.files, dir_bytes(&rank_dir), n_local as u64];
    let mut bytes = Vec::new();
    own.iter().for_each(|x| x.put(&mut bytes));
    let per_rank: Vec<PregelRankFigures> = t
        .all_gather(bytes)?
        .iter()
        .enumerate()
        .map(|(r, b)| PregelRankFigures {
            rank: r as u64,
            peak_rss_bytes: u64::get(b),
            message_bytes_sent: u64::get(&b[8..]),
            message_files_sent: u64::get(&b[16..]),
            partition_bytes_on_disk: u64::get(&b[24..]),
            vertices: u64::get(&b[32..]),
        })
        .collect();
    let job = PregelRun {
        rank: rank as u64,
        ranks: ranks as u64,
        recoded: settings.recoded,
        message_file_size: sizing.message_file_size,
        naming: info.naming,
        per_rank,
    };
    runner.record_figures(|figures| figures.pregel = Some(job));
    gather_results(t, &vertices, values, info.vertices)
}

/// Loads, for `--resume`, the latest checkpoint that every rank holds. A kill between the commit
/// barrier and the last rank's rename leaves some ranks one checkpoint ahead; they resume from
/// their previous one (see `checkpoint`).
fn resume<V: Wire + Clone, M: Wire>(
    t: &dyn Transport,
    rank_dir: &Path,
    fingerprint: &str,
    n_local: usize,
    work: &Path,
    counters: &IoCounters,
) -> Result<Option<checkpoint::Saved<V, M>>> {
    let own = checkpoint::steps(rank_dir, fingerprint)?;
    let mut bytes = Vec::new();
    (own.len() as u64).put(&mut bytes);
    own.iter().for_each(|s| s.put(&mut bytes));
    let held: Vec<Vec<u64>> = t
        .all_gather(bytes)?
        .iter()
        .map(|b| (0..u64::get(b) as usize).map(|k| u64::get(&b[8 + 8 * k..])).collect())
        .collect();
    if held.iter().all(|steps| steps.is_empty()) {
        return Ok(None);
    }
    let common = held[0].iter().copied().filter(|s| held.iter().all(|steps| steps.contains(s))).max();
    let Some(step) = common else {
        return Err(Error::invalid(format!(
            "the ranks hold checkpoints at supersteps {held:?} and none is common to all; run without --resume"
        )));
    };
    checkpoint::load::<V, M>(rank_dir, fingerprint, step, n_local, work, counters).map(Some)
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

fn read_vertices(dir: &Path, info: &PartitionInfo, rank: usize, counters: &IoCounters) -> Result<Vec<VertexRecord>> {
    let path = dir.join("vertices");
    let bytes = std::fs::read(&path).context(|| format!("reading {}", path.display()))?;
    counters.record_read(bytes.len() as u64);
    if bytes.len() as u64 != info.parts[rank].vertices * VERTEX_RECORD_BYTES {
        return Err(Error::store(&path, "vertex file does not match partition.json"));
    }
    if let Some(checks) = info.parts[rank].checks(dir, "vertices", counters)? {
        checks.verify(&bytes, 0)?;
    }
    Ok(bytes
        .chunks_exact(VERTEX_RECORD_BYTES as usize)
        .map(|r| VertexRecord {
            name: u64::get(r),
            dense: u64::get(&r[8..]),
            out_degree: u64::get(&r[16..]),
            in_degree: u64::get(&r[24..]),
        })
        .collect())
}
/// Sends every rank's values to rank 0, which returns them in dense-id order (a single rank
/// whose positions are the dense ids returns its values as they are). Rank 0 places its own
/// values directly and the others' as they arrive, in one array of the job's vertices.
fn gather_results<V: Wire + Clone>(
    t: &dyn Transport,
    vertices: &[VertexRecord],
    values: Vec<V>,
    total: u64,
) -> Result<Vec<V>> {
    let in_dense_order = || vertices.iter().enumerate().all(|(i, v)| v.dense == i as u64);
    if t.ranks() == 1 && values.len() as u64 == total && in_dense_order() {
        return Ok(values);
    }
    if t.rank() != 0 {
        const CHUNK: usize = 1 << 16;
        for (records, chunk) in vertices.chunks(CHUNK).zip(values.chunks(CHUNK)) {
            let mut payload = Vec::with_capacity(records.len() * (8 + V::BYTES) + 1);
            payload.push(KIND_DATA);
            for (v, value) in records.iter().zip(chunk) {
                v.dense.put(&mut payload);
                value.put(&mut payload);
            }
            t.send(0, TAG_RESULTS, payload)?;
        }
        t.send(0, TAG_RESULTS, vec![KIND_END])?;
        return Ok(Vec::new());
    }
    // Every encoding decodes from zeros: a placeholder until the vertex's value is placed.
    let mut all = vec![V::get(&vec![0u8; V::BYTES]); total as usize];
    let mut placed = vec![false; total as usize];
    let mut place = |dense: u64, value: V, from: usize| -> Result<()> {
        match placed.get_mut(dense as usize) {
            Some(seen) if !*seen => {
                *seen = true;
                all[dense as usize] = value;
                Ok(())
            }
            _ => Err(corrupt(from)),
        }
    };
    for (v, value) in vertices.iter().zip(values) {
        place(v.dense, value, 0)?;
    }
    let mut ends = 1;
    while ends < t.ranks() {
        let envelope = t.recv(TAG_RESULTS)?;
        match envelope.payload.split_first() {
            Some((&KIND_END, _)) => ends += 1,
            Some((&KIND_DATA, records)) => {
                for record in records.chunks_exact(8 + V::BYTES) {
                    place(u64::get(record), V::get(&record[8..]), envelope.from)?;
                }
            }
            _ => return Err(corrupt(envelope.from)),
        }
    }
    match placed.iter().position(|&seen| !seen) {
        Some(v) => Err(Error::Remote { rank: None, message: format!("no rank sent vertex {v}") }),
        None => Ok(all),
    }
}
