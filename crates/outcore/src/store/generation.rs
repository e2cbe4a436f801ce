//! Store generations: how a run and an import share one store path safely.
//!
//! ```text
//! STORE/
//!   CURRENT              "gen-N": the generation new runs open (replaced atomically)
//!   WRITER.lock          held while a generation is committed (imports take turns)
//!   gen-N/               one complete store (manifest.json, ids/, csr-*/, derived layouts, tmp/)
//!   gen-N/LOCK           shared-locked by every process that opened gen-N
//!   .gen.building-PID/   a generation being written (removed when PID is gone)
//! ```
//! A reader reads `CURRENT`, takes a shared lock on that generation's `LOCK` and only then
//! checks that the generation is still there (it may have been retired in between: then it
//! reads `CURRENT` again). It reads that generation's files until it ends, whatever imports do.
//!
//! An import into an existing path never waits for readers and never disturbs them, as in a
//! database with snapshot reads: it builds a new generation beside the old ones, renames it to
//! `gen-(N+1)` and replaces `CURRENT`. Older generations are retired (renamed aside, then
//! deleted) as soon as nobody holds them: at once when no run reads them, else when the last
//! reader closes the store, or at the next open of the store. Only generations older than the
//! current one are retired, so a generation being committed is never touched.
//!
//! A commit killed between renaming its generation into place and replacing `CURRENT` leaves
//! a `gen-M` newer than the one `CURRENT` names, complete but never published: no reader ever
//! opened it (readers only open what `CURRENT` names). The next open removes it, but only while
//! it holds `WRITER.lock` itself, so a live commit (which holds that lock from its rename to
//! its write of `CURRENT`) never loses the generation it is publishing.
//!
//! Stores written before generations (a `manifest.json` directly in the directory) still open;
//! an import over one replaces it by a generational store in one rename swap.

use std::path::{Path, PathBuf};

use super::files::{sync_dir, write_atomic};
use super::lock::{Create, FileLock};
use super::manifest::MANIFEST_FILE;
use crate::error::{Error, IoContext, Result};

pub const CURRENT_FILE: &str = "CURRENT";
pub const LOCK_FILE: &str = "LOCK";
pub const WRITER_LOCK: &str = "WRITER.lock";
/// Prefix of a generation being built (`.gen.building-PID`).
pub const BUILDING_PREFIX: &str = ".gen.building-";

/// How many times an open re-reads `CURRENT` when generations are retired under it.
const OPEN_ATTEMPTS: usize = 1000;

/// Whether `root` is a generational store root (it has a `CURRENT`).
pub fn is_generational(root: &Path) -> bool {
    root.join(CURRENT_FILE).is_file()
}

/// The number of a `gen-N` directory name.
pub fn generation_number(name: &str) -> Option<u64> {
    name.strip_prefix("gen-").and_then(|n| n.parse().ok())
}

/// The generation `CURRENT` names.
pub fn current(root: &Path) -> Result<String> {
    let path = root.join(CURRENT_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::store(&path, format!("cannot read: {e}")))?;
    let name = text.trim();
    match generation_number(name) {
        Some(_) => Ok(name.to_string()),
        None => Err(Error::store(&path, format!("damaged: '{name}' is not a generation name (gen-N)"))),
    }
}

/// A process's shared hold on one generation; dropping the last clone of the store releases
/// it and retires the generations nobody holds any more.
#[derive(Debug)]
pub struct Hold {
    root: PathBuf,
    name: String,
    lock: Option<FileLock>,
}

impl Hold {
    pub fn generation(&self) -> &str {
        &self.name
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.lock.take();
        let _ = retire_unused(&self.root);
    }
}

/// Opens the current generation of `root`: its directory and the shared hold on it.
pub fn open_current(root: &Path) -> Result<(PathBuf, Hold)> {
    for _ in 0..OPEN_ATTEMPTS {
        let name = current(root)?;
        let dir = root.join(&name);
        let Some(lock) = FileLock::shared(&dir.join(LOCK_FILE), Create::No)? else { continue };
        // Retired between reading CURRENT and locking: read CURRENT again. A current generation
        // without a manifest is damage, reported by the caller.
        if dir.join(MANIFEST_FILE).exists() || current(root)? == name {
            return Ok((dir, Hold { root: root.to_path_buf(), name, lock: Some(lock) }));
        }
    }
    Err(Error::store(root, "the current generation changed on every one of 1000 attempts to open it"))
}

/// The generations in `root` (name, number), in no particular order.
fn generations(root: &Path) -> Result<Vec<(String, u64)>> {
    let entries = std::fs::read_dir(root).context(|| format!("listing {}", root.display()))?;
    Ok(entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            generation_number(&name).map(|n| (name, n))
        })
        .collect())
}

/// Makes the complete store in `work` (inside `root`, with its manifest and `LOCK`) the current
/// generation; returns its directory. Imports take turns here (`WRITER.lock`); readers never wait.
pub fn commit(root: &Path, work: &Path) -> Result<PathBuf> {
    let writer = FileLock::exclusive(&root.join(WRITER_LOCK))?;
    let next = generations(root)?.iter().map(|(_, n)| n + 1).max().unwrap_or(1);
    let dir = root.join(format!("gen-{next}"));
    std::fs::rename(work, &dir).context(|| format!("moving {} to {}", work.display(), dir.display()))?;
    sync_dir(root).context(|| format!("syncing {}", root.display()))?;
    write_atomic(&root.join(CURRENT_FILE), format!("gen-{next}\n").as_bytes())
        .context(|| format!("writing {}", root.join(CURRENT_FILE).display()))?;
    drop(writer);
    let _ = retire_unused(root);
    Ok(dir)
}

/// Retires (renames aside, then deletes) every generation older than the current one that no
/// process holds, and the unpublished generations of killed commits ([`remove_unpublished`]);
/// returns their names. Generations someone reads stay.
pub fn retire_unused(root: &Path) -> Result<Vec<String>> {
    if !is_generational(root) {
        return Ok(Vec::new());
    }
    let current_number = generation_number(&current(root)?).unwrap_or(0);
    let mut retired = remove_unpublished(root, current_number)?;
    for (name, number) in generations(root)? {
        if number >= current_number {
            continue;
        }
        let dir = root.join(&name);
        let Some(held) = FileLock::try_exclusive(&dir.join(LOCK_FILE), Create::No)? else {
            // Held by a reader, or left without a LOCK by a killed commit of an older layout.
            if dir.join(LOCK_FILE).exists() {
                continue;
            }
            remove_aside(root, &name)?;
            retired.push(name);
            continue;
        };
        remove_aside(root, &name)?;
        drop(held);
        retired.push(name);
    }
    Ok(retired)
}

/// Removes the generations newer than `CURRENT` (see the module docs) when no commit is under
/// way; returns their names. `seen_current` is the number `CURRENT` named a moment ago.
pub fn remove_unpublished(root: &Path, seen_current: u64) -> Result<Vec<String>> {
    if generations(root)?.iter().all(|(_, n)| *n <= seen_current) {
        return Ok(Vec::new());
    }
    // A commit between its rename and its write of CURRENT holds this lock: leave it alone.
    let Some(_writer) = FileLock::try_exclusive(&root.join(WRITER_LOCK), Create::Yes)? else {
        return Ok(Vec::new());
    };
    let current_number = generation_number(&current(root)?).unwrap_or(0);
    let mut removed = Vec::new();
    for (name, number) in generations(root)? {
        if number <= current_number {
            continue;
        }
        // Nobody opens a generation CURRENT never named; a held LOCK is respected all the same.
        let dir = root.join(&name);
        let held = FileLock::try_exclusive(&dir.join(LOCK_FILE), Create::No)?;
        if held.is_none() && dir.join(LOCK_FILE).exists() {
            continue;
        }
        remove_aside(root, &name)?;
        removed.push(name);
    }
    Ok(removed)
}

/// Renames `root/name` to `.name.retired-PID` (readers then no longer find it) and deletes it.
fn remove_aside(root: &Path, name: &str) -> Result<()> {
    let aside = root.join(format!(".{name}.retired-{}", std::process::id()));
    std::fs::rename(root.join(name), &aside).context(|| format!("retiring {}", root.join(name).display()))?;
    std::fs::remove_dir_all(&aside).context(|| format!("removing {}", aside.display()))
}
