//! Messages between the ranks of a distributed run.
//!
//! The distributed engines (GraphD's `pregel`, `nwsm`) run as W cooperating *ranks*, one per
//! machine or MPI process, each owning a partition of the graph. They only need a small set of
//! operations, which is all this trait offers: point-to-point byte messages with a tag
//! ([`Transport::send`], [`Transport::recv`], [`Transport::try_recv`]), a few collectives built on
//! them (barrier, all-reduce, all-gather, broadcast), and [`Transport::abort`] to end the whole
//! job when one rank fails.
//!
//! Two implementations:
//! - [`InProcessTransport`]: the ranks are threads of one process; this is how `cargo test` runs
//!   every multi-rank code path without MPI, and how a single process without `mpirun` runs as
//!   one rank.
//! - `MpiTransport` (cargo feature `mpi`): one rank per MPI process (Open MPI), started by
//!   `mpirun -n W`.
//!
//! # Semantics every implementation keeps
//! - `send` is *buffered*: it returns without waiting for the receiver, so two ranks may send to
//!   each other before either receives; a rank may send to itself.
//! - Messages from one sender with one tag arrive in the order they were sent (MPI's
//!   non-overtaking rule); messages of different senders interleave arbitrarily.
//! - `recv(tag)` takes the next message with that tag from any rank; several threads of a rank
//!   may receive on different tags at once (GraphD's sender and receiver units run beside the
//!   computing unit).
//! - Collectives must be called by every rank, in the same order, by one thread per rank at a
//!   time. They go through rank 0 (a star: contributions up, result down), so a result never
//!   depends on arrival order (floating-point reductions are folded in rank order) and two
//!   successive collectives can never mix their messages.
//! - Failure never hangs: once any rank fails (returns an error, panics, or calls `abort`), every
//!   blocked or later `recv` on the other ranks returns [`Error::Remote`] (in-process), or the
//!   whole job is killed with a non-zero exit (MPI).

pub mod cpus;
mod inprocess;
#[cfg(feature = "mpi")]
mod mpi;

pub use inprocess::InProcessTransport;
#[cfg(feature = "mpi")]
pub use mpi::MpiTransport;

use crate::error::{Error, Result};

/// A message tag. Engines pick their own tags in `0..=MAX_USER_TAG`; the collectives use
/// reserved tags above it. MPI guarantees tags up to 32767 everywhere.
pub type Tag = u32;

/// The largest tag available to engines.
pub const MAX_USER_TAG: Tag = 32_000;
/// Contributions of the ranks to a collective, sent to rank 0.
const TAG_COLLECTIVE_UP: Tag = 32_700;
/// The result of a collective, sent by rank 0 to every rank.
const TAG_COLLECTIVE_DOWN: Tag = 32_701;
/// The largest tag any implementation must carry.
pub const MAX_TAG: Tag = 32_767;

/// A received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub from: usize,
    pub tag: Tag,
    pub payload: Vec<u8>,
}

/// How an all-reduce folds the ranks' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Min,
    Max,
}

impl ReduceOp {
    fn fold_u64(self, a: u64, b: u64) -> u64 {
        match self {
            ReduceOp::Sum => a.wrapping_add(b),
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
        }
    }

    fn fold_f64(self, a: f64, b: f64) -> f64 {
        match self {
            ReduceOp::Sum => a + b,
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
        }
    }
}

/// The ranks of a distributed run and the messages between them. See the module docs for the
/// guarantees every implementation gives.
pub trait Transport: Send + Sync {
    /// This rank, `0..ranks()`.
    fn rank(&self) -> usize;

    /// The number of ranks W.
    fn ranks(&self) -> usize;

    /// Sends `payload` to rank `to` with `tag` (buffered: returns without waiting for the
    /// receiver). `to` may be this rank.
    fn send(&self, to: usize, tag: Tag, payload: Vec<u8>) -> Result<()>;

    /// Waits for the next message with `tag` from any rank. Returns [`Error::Remote`] when another
    /// rank has failed.
    fn recv(&self, tag: Tag) -> Result<Envelope>;

    /// The next message with `tag` if one has arrived.
    fn try_recv(&self, tag: Tag) -> Result<Option<Envelope>>;

    /// Ends the whole job because of `error` on this rank: in-process, every other rank's
    /// `recv` fails from now on; with MPI the job is killed (this call does not return).
    fn abort(&self, error: &Error);

    /// Ends this rank's part in the job's communication once it has nothing more to send or
    /// receive: with MPI it waits for every rank to do the same and finalises MPI (on the
    /// thread that initialised it), so rank 0 can do that while other threads write the
    /// results. Later sends and receives fail; `abort` then ends only this process. Dropping
    /// the transport does the same; in-process there is nothing to end.
    fn finish(&self) {}

    /// Waits until every rank has called `barrier`.
    fn barrier(&self) -> Result<()> {
        self.all_gather(Vec::new()).map(|_| ())
    }

    /// Every rank's `bytes`, indexed by rank, on rank 0; `None` on the others.
    fn gather(&self, bytes: Vec<u8>) -> Result<Option<Vec<Vec<u8>>>> {
        gather_at_root(self, bytes)
    }

    /// Every rank's `bytes`, indexed by rank, on every rank.
    fn all_gather(&self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let contributions = gather_at_root(self, bytes)?;
        let encoded = broadcast_from_root(self, contributions.map(|parts| encode_parts(&parts)))?;
        decode_parts(&encoded, self.ranks())
    }

    /// The payload of rank `root`, on every rank (`bytes` is ignored on the others).
    fn broadcast(&self, root: usize, bytes: Vec<u8>) -> Result<Vec<u8>> {
        check_rank(self, root)?;
        if self.ranks() == 1 {
            return Ok(bytes);
        }
        // Through rank 0 like every collective, so that broadcasts from different roots keep
        // their order on every rank.
        let at_root = if root == 0 {
            (self.rank() == 0).then_some(bytes)
        } else if self.rank() == root {
            self.send(0, TAG_COLLECTIVE_UP, bytes)?;
            None
        } else if self.rank() == 0 {
            let envelope = self.recv(TAG_COLLECTIVE_UP)?;
            Some(envelope.payload)
        } else {
            None
        };
        broadcast_from_root(self, at_root)
    }

    /// Element-wise reduction of every rank's `values` (all ranks pass the same length).
    fn all_reduce_u64s(&self, values: &[u64], op: ReduceOp) -> Result<Vec<u64>> {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let reduced = reduce_at_root(self, bytes, values.len(), |acc: &mut [u8], part: &[u8]| {
            for (a, b) in acc.chunks_exact_mut(8).zip(part.chunks_exact(8)) {
                let folded = op.fold_u64(u64_at(a), u64_at(b));
                a.copy_from_slice(&folded.to_le_bytes());
            }
        })?;
        Ok(reduced.chunks_exact(8).map(u64_at).collect())
    }

    /// Element-wise reduction of every rank's `values`, folded in rank order (the same result
    /// on every rank and in every run).
    fn all_reduce_f64s(&self, values: &[f64], op: ReduceOp) -> Result<Vec<f64>> {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let reduced = reduce_at_root(self, bytes, values.len(), |acc: &mut [u8], part: &[u8]| {
            for (a, b) in acc.chunks_exact_mut(8).zip(part.chunks_exact(8)) {
                let folded = op.fold_f64(f64::from_bits(u64_at(a)), f64::from_bits(u64_at(b)));
                a.copy_from_slice(&folded.to_le_bytes());
            }
        })?;
        Ok(reduced.chunks_exact(8).map(|b| f64::from_bits(u64_at(b))).collect())
    }

    /// Reduction of one value per rank.
    fn all_reduce_u64(&self, value: u64, op: ReduceOp) -> Result<u64> {
        Ok(self.all_reduce_u64s(&[value], op)?[0])
    }

    /// Reduction of one value per rank, folded in rank order.
    fn all_reduce_f64(&self, value: f64, op: ReduceOp) -> Result<f64> {
        Ok(self.all_reduce_f64s(&[value], op)?[0])
    }
}

fn u64_at(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

fn check_rank<T: Transport + ?Sized>(t: &T, rank: usize) -> Result<()> {
    if rank >= t.ranks() {
        return Err(Error::invalid(format!("rank {rank} out of range (the job has {} ranks)", t.ranks())));
    }
    Ok(())
}

/// Checks a tag and destination for `send`; shared by the implementations.
pub(crate) fn check_send<T: Transport + ?Sized>(t: &T, to: usize, tag: Tag) -> Result<()> {
    check_rank(t, to)?;
    if tag > MAX_TAG {
        return Err(Error::invalid(format!("message tag {tag} above the largest tag {MAX_TAG}")));
    }
    Ok(())
}

/// Rank 0 gets every rank's bytes (by rank); the others get `None`.
fn gather_at_root<T: Transport + ?Sized>(t: &T, bytes: Vec<u8>) -> Result<Option<Vec<Vec<u8>>>> {
    if t.rank() != 0 {
        t.send(0, TAG_COLLECTIVE_UP, bytes)?;
        return Ok(None);
    }
    let mut parts: Vec<Option<Vec<u8>>> = vec![None; t.ranks()];
    parts[0] = Some(bytes);
    for _ in 1..t.ranks() {
        let envelope = t.recv(TAG_COLLECTIVE_UP)?;
        if parts[envelope.from].replace(envelope.payload).is_some() {
            return Err(Error::Remote {
                rank: Some(envelope.from),
                message: "two contributions to one collective (collectives called out of order)".into(),
            });
        }
    }
    Ok(Some(parts.into_iter().map(|p| p.expect("every rank contributed")).collect()))
}

/// Rank 0 sends `at_root` (which only it has) to every rank; every rank returns it.
fn broadcast_from_root<T: Transport + ?Sized>(t: &T, at_root: Option<Vec<u8>>) -> Result<Vec<u8>> {
    if t.rank() == 0 {
        let bytes = at_root.expect("rank 0 holds the collective's result");
        for to in 1..t.ranks() {
            t.send(to, TAG_COLLECTIVE_DOWN, bytes.clone())?;
        }
        Ok(bytes)
    } else {
        Ok(t.recv(TAG_COLLECTIVE_DOWN)?.payload)
    }
}

/// Gathers `bytes` (of `len` 8-byte values) at rank 0, folds them in rank order with `fold`,
/// and hands the result to every rank.
fn reduce_at_root<T: Transport + ?Sized>(
    t: &T,
    bytes: Vec<u8>,
    len: usize,
    fold: impl Fn(&mut [u8], &[u8]),
) -> Result<Vec<u8>> {
    let reduced = match gather_at_root(t, bytes)? {
        Some(parts) => {
            let mut parts = parts.into_iter();
            let mut acc = parts.next().expect("rank 0's part");
            for (rank, part) in parts.enumerate() {
                if part.len() != len * 8 {
                    return Err(Error::Remote {
                        rank: Some(rank + 1),
                        message: format!("all-reduce of {} values where rank 0 has {len}", part.len() / 8),
                    });
                }
                fold(&mut acc, &part);
            }
            Some(acc)
        }
        None => None,
    };
    broadcast_from_root(t, reduced)
}

fn encode_parts(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    for part in parts {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
    out
}

fn decode_parts(mut bytes: &[u8], ranks: usize) -> Result<Vec<Vec<u8>>> {
    let damaged = || Error::Remote { rank: Some(0), message: "damaged all-gather result".into() };
    let mut parts = Vec::with_capacity(ranks);
    for _ in 0..ranks {
        if bytes.len() < 8 {
            return Err(damaged());
        }
        let len = u64_at(bytes) as usize;
        bytes = &bytes[8..];
        if bytes.len() < len {
            return Err(damaged());
        }
        parts.push(bytes[..len].to_vec());
        bytes = &bytes[len..];
    }
    if !bytes.is_empty() {
        return Err(damaged());
    }
    Ok(parts)
}

/// The exit code a failed distributed job ends with, in the CLI's sysexits vocabulary.
pub fn exit_code_of(error: &Error) -> i32 {
    match error {
        Error::InvalidArgument(_) | Error::Unsupported(_) => 64,
        Error::Input { .. } => 65,
        Error::Store { .. } => 66,
        Error::Io { .. } => 74,
        Error::MemoryBudget(_) => 75,
        Error::Interrupted => 130,
        Error::Remote { .. } => 70,
    }
}
