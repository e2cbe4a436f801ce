//! Checkpoints of a pregel run (`--checkpoint-every N`, `--resume`).
//!
//! After every N-th superstep, once the step's messages have all arrived (the barrier of the
//! step), each rank saves what the next step needs: its values and halted flags, the step's
//! combined totals (the previous aggregate and global sum), and the messages it received — the
//! sorted batch files (hard-linked, not copied) or A_r in recoded mode. Edge streams need no
//! position: every step reads them from the start. A checkpoint is written as
//! `rank-i/checkpoint.tmp` and renamed to `rank-i/checkpoint` only after every rank has written
//! its own (a barrier); the checkpoint it replaces is kept as `rank-i/checkpoint.prev`. A kill
//! between the barrier and the last rank's rename leaves some ranks one checkpoint ahead of the
//! others — never more, since a rank writes step s only after committing the step before — so
//! `--resume` gathers the steps every rank holds ([`steps`]), loads the latest step that all of
//! them hold, checks that it was taken by the same run, and goes on from there. A completed run
//! removes its checkpoints.
//!
//! "The same run" is the checkpoint's key ([`fingerprint`]): the program's type, its parameters
//! (`checkpoint_key()` of the program: source, k, damping, iterations...) and the partition
//! (ranks, recoded or not). Resuming with another key — another source, another k — would mix
//! two runs' states, so it fails and tells the user to drop `--resume` or use the same
//! parameters.

use std::path::{Path, PathBuf};

use super::rank::Totals;
use crate::error::{Error, IoContext, Result};
use crate::program::Wire;
use crate::runtime::IoCounters;

/// Version 2: variable-width aggregates in the totals, and parameters in the key.
const MAGIC: &[u8; 8] = b"OCPGCK02";

/// The key a checkpoint is stored under and checked against on `--resume`.
pub fn fingerprint(program: &str, parameters: &str, ranks: usize, recoded: bool) -> String {
    let parameters = if parameters.is_empty() { String::new() } else { format!(" ({parameters})") };
    format!("{program}{parameters} on {ranks} ranks, recoded {recoded}")
}

/// What a rank needs to go on from `next_step`.
pub struct Saved<V, M> {
    pub next_step: usize,
    pub previous: Totals,
    pub values: Vec<V>,
    pub halted: Vec<bool>,
    pub files: Vec<PathBuf>,
    pub array: Option<Vec<Option<M>>>,
}

fn final_dir(rank_dir: &Path) -> PathBuf {
    rank_dir.join("checkpoint")
}

fn temp_dir(rank_dir: &Path) -> PathBuf {
    rank_dir.join("checkpoint.tmp")
}

fn previous_dir(rank_dir: &Path) -> PathBuf {
    rank_dir.join("checkpoint.prev")
}

/// The committed checkpoints of a rank, newest first.
fn committed(rank_dir: &Path) -> [PathBuf; 2] {
    [final_dir(rank_dir), previous_dir(rank_dir)]
}

/// Writes this rank's checkpoint into `checkpoint.tmp` (see [`commit`]).
#[allow(clippy::too_many_arguments)]
pub fn write<V: Wire, M: Wire>(
    rank_dir: &Path,
    fingerprint: &str,
    next_step: usize,
    previous: &Totals,
    values: &[V],
    halted: &[bool],
    files: &[PathBuf],
    array: Option<&[Option<M>]>,
    counters: &IoCounters,
) -> Result<()> {
    let dir = temp_dir(rank_dir);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
    let mut out = Vec::with_capacity(values.len() * (V::BYTES + 1) + 64);
    out.extend_from_slice(MAGIC);
    (fingerprint.len() as u64).put(&mut out);
    out.extend_from_slice(fingerprint.as_bytes());
    (next_step as u64).put(&mut out);
    let totals = previous.encode();
    (totals.len() as u64).put(&mut out);
    out.extend_from_slice(&totals);
    (values.len() as u64).put(&mut out);
    values.iter().for_each(|v| v.put(&mut out));
    halted.iter().for_each(|h| h.put(&mut out));
    array.is_some().put(&mut out);
    for slot in array.unwrap_or(&[]) {
        slot.is_some().put(&mut out);
        if let Some(m) = slot {
            m.put(&mut out);
        }
    }
    (files.len() as u64).put(&mut out);
    for (k, file) in files.iter().enumerate() {
        let link = dir.join(format!("batch-{k}"));
        std::fs::hard_link(file, &link).context(|| format!("linking {} into the checkpoint", file.display()))?;
    }
    let path = dir.join("state");
    std::fs::write(&path, &out).context(|| format!("writing {}", path.display()))?;
    counters.record_write(out.len() as u64);
    std::fs::File::open(&path).and_then(|f| f.sync_all()).context(|| format!("syncing {}", path.display()))
}

/// Makes the written checkpoint the current one (after every rank has written its own); the one
/// it replaces becomes `checkpoint.prev`, for ranks that a kill left one checkpoint behind.
pub fn commit(rank_dir: &Path) -> Result<()> {
    let (tmp, done, prev) = (temp_dir(rank_dir), final_dir(rank_dir), previous_dir(rank_dir));
    if done.exists() {
        let _ = std::fs::remove_dir_all(&prev);
        std::fs::rename(&done, &prev).context(|| format!("moving aside {}", done.display()))?;
    }
    std::fs::rename(&tmp, &done).context(|| format!("renaming {} into place", tmp.display()))
}

/// Removes this rank's checkpoints (after a completed run).
pub fn remove(rank_dir: &Path) {
    for dir in [final_dir(rank_dir), previous_dir(rank_dir), temp_dir(rank_dir)] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The steps this rank's committed checkpoints resume at, newest first. A checkpoint taken by
/// another run or another version of outcore is an error; a damaged one is an error too.
pub fn steps(rank_dir: &Path, fingerprint: &str) -> Result<Vec<u64>> {
    let mut steps = Vec::new();
    for dir in committed(rank_dir) {
        if let Some(bytes) = read_state(&dir)? {
            steps.push(Cursor::new(&dir, &bytes).header(fingerprint)? as u64);
        }
    }
    Ok(steps)
}

/// Loads this rank's committed checkpoint that resumes at `step`; its batch files are linked into
/// `work`.
pub fn load<V: Wire, M: Wire>(
    rank_dir: &Path,
    fingerprint: &str,
    step: u64,
    n_local: usize,
    work: &Path,
    counters: &IoCounters,
) -> Result<Saved<V, M>> {
    for dir in committed(rank_dir) {
        let Some(bytes) = read_state(&dir)? else { continue };
        let mut cursor = Cursor::new(&dir, &bytes);
        if cursor.header(fingerprint)? as u64 == step {
            counters.record_read(bytes.len() as u64);
            return cursor.body(step as usize, n_local, work);
        }
    }
    Err(Error::invalid(format!("no checkpoint at superstep {step} in {}; run without --resume", rank_dir.display())))
}

fn read_state(dir: &Path) -> Result<Option<Vec<u8>>> {
    let path = dir.join("state");
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

/// Reads a checkpoint's `state` file front to back.
struct Cursor<'a> {
    dir: &'a Path,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(dir: &'a Path, bytes: &'a [u8]) -> Self {
        Cursor { dir, bytes, at: 0 }
    }

    fn damaged(&self, what: &str) -> Error {
        Error::store(self.dir.join("state"), format!("damaged checkpoint: {what}"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.saturating_add(n)).ok_or_else(|| self.damaged("too short"))?;
        self.at += n;
        Ok(slice)
    }

    /// Checks the magic and the run's key; returns the step the checkpoint resumes at.
    fn header(&mut self, fingerprint: &str) -> Result<usize> {
        let magic = self.take(8)?;
        if magic != MAGIC {
            if magic.starts_with(b"OCPGCK") {
                return Err(Error::invalid(format!(
                    "the checkpoint in {} was written by another version of outcore; run without --resume",
                    self.dir.display()
                )));
            }
            return Err(self.damaged("not a checkpoint"));
        }
        let len = u64::get(self.take(8)?) as usize;
        let found = String::from_utf8_lossy(self.take(len)?).to_string();
        if found != fingerprint {
            return Err(Error::invalid(format!(
                "the checkpoint in {} was taken by another run: {found}, not {fingerprint}; \
                 drop --resume to start afresh, or resume with the same algorithm, parameters and partition",
                self.dir.display()
            )));
        }
        Ok(u64::get(self.take(8)?) as usize)
    }

    /// Everything after the header; the saved batch files are linked into `work`.
    fn body<V: Wire, M: Wire>(&mut self, next_step: usize, n_local: usize, work: &Path) -> Result<Saved<V, M>> {
        let totals_len = u64::get(self.take(8)?) as usize;
        let previous = Totals::decode(self.take(totals_len)?).ok_or_else(|| self.damaged("totals too short"))?;
        if u64::get(self.take(8)?) as usize != n_local {
            return Err(self.damaged("vertex count differs from the partition"));
        }
        let values = (0..n_local).map(|_| self.take(V::BYTES).map(V::get)).collect::<Result<Vec<_>>>()?;
        let halted = (0..n_local).map(|_| self.take(1).map(bool::get)).collect::<Result<Vec<_>>>()?;
        let array = if bool::get(self.take(1)?) {
            let mut slots = Vec::with_capacity(n_local);
            for _ in 0..n_local {
                slots.push(if bool::get(self.take(1)?) { Some(M::get(self.take(M::BYTES)?)) } else { None });
            }
            Some(slots)
        } else {
            None
        };
        let count = u64::get(self.take(8)?) as usize;
        let mut files = Vec::with_capacity(count);
        for k in 0..count {
            let (from, to) = (self.dir.join(format!("batch-{k}")), work.join(format!("resumed-{k}")));
            std::fs::hard_link(&from, &to).context(|| format!("linking {}", from.display()))?;
            files.push(to);
        }
        Ok(Saved { next_step, previous, values, halted, files, array })
    }
}
