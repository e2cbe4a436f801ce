//! U_s and U_r, one rank's sending and receiving units (GraphD §4), two helper threads beside
//! the computing unit U_c ([`super::compute`]).
//!
//! * U_s sends the message files U_c finishes while U_c goes on, one file at a time, visiting
//!   destinations in a ring that starts after its own rank; with a combiner it sorts a file by
//!   target and combines it first (basic mode) or combines it into the array A_s (recoded mode).
//!   When U_c is done with a step, U_s sends an end tag to every rank, in the same ring order.
//! * U_r receives every batch of a step (on the tag of the step's parity): it sorts each batch
//!   by target and writes it as a file, or folds it into A_r in recoded mode; after W end tags
//!   it hands the step's files (or A_r) to U_c.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, Sender};

use super::rank::StepProgram;
use super::streams::{take_file, write_file};
use crate::error::{Error, Result};
use crate::program::Wire;
use crate::runtime::IoCounters;
use crate::transport::{Tag, Transport};

/// Messages of even and odd supersteps travel on different tags, so a rank that starts sending
/// step `s + 1` can never be mistaken for one still sending `s`. Public so that a transport which
/// watches a job's traffic (a test's) can tell message batches apart.
pub const TAG_MESSAGES: [Tag; 2] = [100, 101];
/// The first byte of every payload between ranks: data, the end of a step, or (to U_r) the end
/// of the run.
pub const KIND_DATA: u8 = 0;
pub(super) const KIND_END: u8 = 1;
pub(super) const KIND_STOP: u8 = 2;
/// U_r's receipts: one payload back to the sender for every batch it has taken in.
const TAG_CREDITS: Tag = 102;
/// Batches U_s may have sent to one destination that its U_r has not yet taken in. GraphD §4
/// sends one file at a time; without a bound, a sender faster than the receiver's sorting filled
/// the receiver's mailbox with a whole step of messages (CDLP on RMAT-22, no combiner: 922 MiB
/// of RSS for a 384 MiB budget). A rank's memory counts these W · `SEND_WINDOW` batches among
/// its message buffers ([`super::sizing`]).
pub const SEND_WINDOW: usize = 2;

/// What U_c hands U_s: a finished message file, or the end of a step.
pub(super) enum SenderJob {
    File { step: usize, dest: usize, path: PathBuf },
    EndOfStep { step: usize },
}

/// What U_r hands U_c for one step: sorted batch files, or A_r.
pub(super) struct Incoming<M> {
    pub(super) files: Vec<PathBuf>,
    pub(super) array: Option<Vec<Option<M>>>,
    pub(super) batches: u64,
    pub(super) bytes: u64,
}

/// What U_s sent over the run.
pub(super) struct SenderStats {
    pub(super) messages_bytes: u64,
    pub(super) files: u64,
}

/// U_s: sends finished files in ring order, combining them first when the program has a combiner.
pub(super) fn sender_unit<S: StepProgram>(
    t: &dyn Transport,
    program: &S,
    jobs: Receiver<SenderJob>,
    counters: &IoCounters,
    recoded: bool,
    max_local: usize,
    record_bytes: usize,
) -> Result<SenderStats> {
    let (rank, ranks) = (t.rank(), t.ranks());
    let mut pending: Vec<VecDeque<(usize, PathBuf)>> = vec![VecDeque::new(); ranks];
    let mut end_of: VecDeque<usize> = VecDeque::new();
    let mut cursor = (rank + 1) % ranks;
    let mut stats = SenderStats { messages_bytes: 0, files: 0 };
    // A_s: the combining array of recoded mode, reused for every file (made at the first file:
    // one rank sends none).
    let mut combining: Vec<Option<S::Msg>> = Vec::new();
    let mut touched: Vec<usize> = Vec::new();
    let mut in_flight = vec![0usize; ranks];
    loop {
        while let Some(receipt) = t.try_recv(TAG_CREDITS)? {
            take_credit(&mut in_flight, receipt.from)?;
        }
        // Take what U_c has handed over; block only when there is nothing to do.
        let nothing_pending = pending.iter().all(VecDeque::is_empty) && end_of.is_empty();
        let job = if nothing_pending {
            match jobs.recv() {
                Ok(job) => Some(job),
                Err(_) => {
                    // Every batch sent is taken in before the run ends: collect the receipts.
                    while in_flight.iter().any(|&n| n > 0) {
                        take_credit(&mut in_flight, t.recv(TAG_CREDITS)?.from)?;
                    }
                    return Ok(stats);
                }
            }
        } else {
            jobs.try_recv().ok()
        };
        match job {
            Some(SenderJob::File { step, dest, path }) => pending[dest].push_back((step, path)),
            Some(SenderJob::EndOfStep { step }) => end_of.push_back(step),
            None => {}
        }
        let sendable = |d: usize| !pending[d].is_empty() && in_flight[d] < SEND_WINDOW;
        if let Some(dest) = (0..ranks).map(|i| (cursor + i) % ranks).find(|&d| sendable(d)) {
            let (step, path) = pending[dest].pop_front().expect("a pending file");
            let raw = take_file(&path, counters)?;
            let mut payload = Vec::with_capacity(raw.len() + 1);
            payload.push(KIND_DATA);
            if !program.has_combiner() {
                payload.extend_from_slice(&raw);
            } else if recoded {
                if combining.is_empty() {
                    combining = vec![None; max_local];
                }
                combine_in_array(program, &raw, record_bytes, ranks, dest, &mut combining, &mut touched, &mut payload);
            } else {
                sort_and_combine(program, &raw, record_bytes, &mut payload);
            }
            stats.messages_bytes += payload.len() as u64 - 1;
            stats.files += 1;
            t.send(dest, TAG_MESSAGES[step % 2], payload)?;
            in_flight[dest] += 1;
            cursor = (dest + 1) % ranks;
            continue;
        }
        // Every file of the oldest finished step is out: its end tags, in ring order.
        if let Some(step) = end_of.front().copied() {
            if pending.iter().all(|p| p.iter().all(|(s, _)| *s != step)) {
                end_of.pop_front();
                for i in 1..=ranks {
                    t.send((rank + i) % ranks, TAG_MESSAGES[step % 2], vec![KIND_END])?;
                }
                continue;
            }
        }
        // Files wait only for receipts: wait for one rather than spin.
        if pending.iter().any(|p| !p.is_empty()) {
            take_credit(&mut in_flight, t.recv(TAG_CREDITS)?.from)?;
        }
    }
}

/// Counts a receipt from `from`'s U_r against the batches in flight to it.
fn take_credit(in_flight: &mut [usize], from: usize) -> Result<()> {
    match in_flight.get_mut(from) {
        Some(n) if *n > 0 => {
            *n -= 1;
            Ok(())
        }
        _ => Err(corrupt(from)),
    }
}

/// Records of `raw` sorted by target name (stable: equal names keep their order).
fn sorted_order(raw: &[u8], record_bytes: usize) -> Vec<(u64, u32)> {
    let mut order: Vec<(u64, u32)> =
        raw.chunks_exact(record_bytes).enumerate().map(|(i, r)| (u64::get(r), i as u32)).collect();
    order.sort_unstable();
    order
}

/// Basic mode: a file sorted by target and combined, appended to `out`.
fn sort_and_combine<S: StepProgram>(program: &S, raw: &[u8], record_bytes: usize, out: &mut Vec<u8>) {
    let order = sorted_order(raw, record_bytes);
    let mut i = 0;
    while i < order.len() {
        let name = order[i].0;
        let at = |k: usize| &raw[order[k].1 as usize * record_bytes + 8..];
        let mut folded = S::Msg::get(at(i));
        i += 1;
        while i < order.len() && order[i].0 == name {
            folded = program.combine(&folded, &S::Msg::get(at(i)));
            i += 1;
        }
        name.put(out);
        folded.put(out);
    }
}

/// Recoded mode: a file combined into A_s at `pos = name / W`, emitted in position order.
#[allow(clippy::too_many_arguments)]
fn combine_in_array<S: StepProgram>(
    program: &S,
    raw: &[u8],
    record_bytes: usize,
    ranks: usize,
    dest: usize,
    combining: &mut [Option<S::Msg>],
    touched: &mut Vec<usize>,
    out: &mut Vec<u8>,
) {
    for record in raw.chunks_exact(record_bytes) {
        let pos = (u64::get(record) / ranks as u64) as usize;
        let msg = S::Msg::get(&record[8..]);
        combining[pos] = Some(match combining[pos].take() {
            Some(old) => program.combine(&old, &msg),
            None => {
                touched.push(pos);
                msg
            }
        });
    }
    touched.sort_unstable();
    for &pos in touched.iter() {
        let msg = combining[pos].take().expect("touched slot");
        (ranks as u64 * pos as u64 + dest as u64).put(out);
        msg.put(out);
    }
    touched.clear();
}

/// U_r: receives every step's batches until W end tags, sorts and writes them (or folds them into
/// A_r), and hands them to U_c.
#[allow(clippy::too_many_arguments)]
pub(super) fn receiver_unit<S: StepProgram>(
    t: &dyn Transport,
    program: &S,
    to_compute: Sender<Incoming<S::Msg>>,
    counters: &IoCounters,
    work: &Path,
    in_memory_combine: bool,
    n_local: usize,
    record_bytes: usize,
    first_step: usize,
) -> Result<()> {
    let ranks = t.ranks();
    for step in first_step.. {
        let mut incoming = Incoming { files: Vec::new(), array: None, batches: 0, bytes: 0 };
        let mut ends = 0;
        while ends < ranks {
            let envelope = t.recv(TAG_MESSAGES[step % 2])?;
            let (kind, records) = envelope.payload.split_first().ok_or_else(|| corrupt(envelope.from))?;
            match *kind {
                KIND_END => ends += 1,
                KIND_STOP => return Ok(()),
                KIND_DATA if records.len() % record_bytes == 0 => {
                    incoming.batches += 1;
                    incoming.bytes += records.len() as u64;
                    if in_memory_combine {
                        // A_r is made at the first batch: at W = 1 none comes, and U_c's own
                        // array of local messages becomes A_r (`join_local`).
                        let array = incoming.array.get_or_insert_with(|| vec![None; n_local]);
                        for record in records.chunks_exact(record_bytes) {
                            let pos = (u64::get(record) / ranks as u64) as usize;
                            let slot = array.get_mut(pos).ok_or_else(|| corrupt(envelope.from))?;
                            let msg = S::Msg::get(&record[8..]);
                            *slot = Some(match slot.take() {
                                Some(old) => program.combine(&old, &msg),
                                None => msg,
                            });
                        }
                    } else {
                        let mut sorted = Vec::with_capacity(records.len());
                        for (_, i) in sorted_order(records, record_bytes) {
                            let at = i as usize * record_bytes;
                            sorted.extend_from_slice(&records[at..at + record_bytes]);
                        }
                        let path = work.join(format!("in-{step}-{}", incoming.files.len()));
                        write_file(&path, &sorted, counters)?;
                        incoming.files.push(path);
                    }
                    t.send(envelope.from, TAG_CREDITS, vec![KIND_DATA])?;
                }
                _ => return Err(corrupt(envelope.from)),
            }
        }
        if to_compute.send(incoming).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// A batch from rank `from` that is not well formed.
pub(super) fn corrupt(from: usize) -> Error {
    Error::Remote { rank: Some(from), message: "malformed message batch".into() }
}
