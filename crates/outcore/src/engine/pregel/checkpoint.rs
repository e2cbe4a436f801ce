//! Checkpoints of a pregel run (`--checkpoint-every N`, `--resume`).
//!
//! After every N-th superstep, once the step's messages have all arrived (the barrier of the
//! step), each rank saves what the next step needs: its values and halted flags, the step's
//! combined totals (the previous aggregate and global sum), and the messages it received — the
//! sorted batch files (hard-linked, not copied) or A_r in recoded mode. Edge streams need no
//! position: every step reads them from the start. A checkpoint is written as
//! `rank-i/checkpoint.tmp` and renamed to `rank-i/checkpoint` only after every rank has written
//! its own (a barrier), so a crash leaves the previous complete checkpoint. `--resume` loads it
//! on every rank, checks that all ranks are at the same step and that it was taken by the same
//! run, and goes on from the next step. A completed run removes its checkpoint.
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

/// Makes the written checkpoint the current one (after every rank has written its own).
pub fn commit(rank_dir: &Path) -> Result<()> {
    let (tmp, done) = (temp_dir(rank_dir), final_dir(rank_dir));
    let old = rank_dir.join("checkpoint.old");
    let _ = std::fs::remove_dir_all(&old);
    if done.exists() {
        std::fs::rename(&done, &old).context(|| format!("moving aside {}", done.display()))?;
    }
    std::fs::rename(&tmp, &done).context(|| format!("renaming {} into place", tmp.display()))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

/// Removes this rank's checkpoint (after a completed run).
pub fn remove(rank_dir: &Path) {
    let _ = std::fs::remove_dir_all(final_dir(rank_dir));
    let _ = std::fs::remove_dir_all(temp_dir(rank_dir));
}

/// Loads this rank's checkpoint, if any; its batch files are linked into `work`.
pub fn load<V: Wire, M: Wire>(
    rank_dir: &Path,
    fingerprint: &str,
    n_local: usize,
    work: &Path,
    counters: &IoCounters,
) -> Result<Option<Saved<V, M>>> {
    let dir = final_dir(rank_dir);
    let path = dir.join("state");
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    counters.record_read(bytes.len() as u64);
    let damaged = |what: &str| Error::store(&path, format!("damaged checkpoint: {what}"));
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let slice = bytes.get(at..at + n).ok_or_else(|| damaged("too short"))?;
        at += n;
        Ok(slice)
    };
    let magic = take(8)?;
    if magic != MAGIC {
        if magic.starts_with(b"OCPGCK") {
            return Err(Error::invalid(format!(
                "the checkpoint in {} was written by another version of outcore; run without --resume",
                dir.display()
            )));
        }
        return Err(damaged("not a checkpoint"));
    }
    let len = u64::get(take(8)?) as usize;
    let found = String::from_utf8_lossy(take(len)?).to_string();
    if found != fingerprint {
        return Err(Error::invalid(format!(
            "the checkpoint in {} was taken by another run: {found}, not {fingerprint}; \
             drop --resume to start afresh, or resume with the same algorithm, parameters and partition",
            dir.display()
        )));
    }
    let next_step = u64::get(take(8)?) as usize;
    let totals_len = u64::get(take(8)?) as usize;
    let previous = Totals::decode(take(totals_len)?).ok_or_else(|| damaged("totals too short"))?;
    if u64::get(take(8)?) as usize != n_local {
        return Err(damaged("vertex count differs from the partition"));
    }
    let values = (0..n_local).map(|_| take(V::BYTES).map(V::get)).collect::<Result<Vec<_>>>()?;
    let halted = (0..n_local).map(|_| take(1).map(bool::get)).collect::<Result<Vec<_>>>()?;
    let array = if bool::get(take(1)?) {
        let mut slots = Vec::with_capacity(n_local);
        for _ in 0..n_local {
            slots.push(if bool::get(take(1)?) { Some(M::get(take(M::BYTES)?)) } else { None });
        }
        Some(slots)
    } else {
        None
    };
    let count = u64::get(take(8)?) as usize;
    let mut files = Vec::with_capacity(count);
    for k in 0..count {
        let (from, to) = (dir.join(format!("batch-{k}")), work.join(format!("resumed-{k}")));
        std::fs::hard_link(&from, &to).context(|| format!("linking {}", from.display()))?;
        files.push(to);
    }
    Ok(Some(Saved { next_step, previous, values, halted, files, array }))
}
