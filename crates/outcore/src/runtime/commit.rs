//! Atomic commit of a directory (a derived layout: shards, bbp pages, pregel partitions): the
//! new version is built beside its target and replaces it in one step, so that a process killed
//! at any point leaves the complete old version or the complete new one, never none and never a
//! half-built one under the target's name.
//!
//! The steps ([`StagedDir`]): build into `.NAME.building-PID` beside `NAME`; fsync every file
//! and directory in it; then, when `NAME` exists, swap the two in one `renameat2(RENAME_EXCHANGE)`
//! (Linux) and remove the old version, now under the work name. Where the file system cannot
//! swap, the old version is moved aside to `.NAME.old-PID`, the new one renamed in, and the old
//! removed; a kill between those two renames leaves `NAME` missing and `.NAME.old-PID` complete,
//! which the store's clean-up puts back ([`restore_if_orphaned`], called by `store::hygiene`
//! before it removes a dead process's leftovers). A work directory whose build fails, or that is
//! dropped uncommitted, is removed; one left by a killed process is removed by that clean-up.

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// Marker of a work directory (`.NAME.building-PID`), one of `store::hygiene`'s markers.
const BUILDING: &str = ".building-";
/// Marker of an old version moved aside (`.NAME.old-PID`), one of `store::hygiene`'s markers.
const ASIDE: &str = ".old-";
/// Marker of a directory being removed (`.NAME.removed-PID`), one of `store::hygiene`'s markers.
const REMOVED: &str = ".removed-";

/// The points a commit passes, in order; tests stop a commit at each to check what a kill there
/// leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Every file and directory of the new version is on disk.
    Synced,
    /// The old version is under the aside name (the swap could not be used).
    MovedAside,
    /// The new version is under the target's name (the old one, if any, under another).
    InPlace,
    /// The old version is gone.
    OldRemoved,
}

/// A directory being built to replace `target`; [`commit`](Self::commit) puts it in place,
/// dropping it uncommitted removes it.
pub struct StagedDir {
    work: PathBuf,
    target: PathBuf,
    done: bool,
}

impl StagedDir {
    /// Starts a new version of `target` in an empty work directory beside it.
    pub fn create(target: &Path) -> Result<StagedDir> {
        let work = sibling(target, BUILDING, std::process::id())?;
        StagedDir::at(work, target)
    }

    /// Starts a new version of `target` in the empty work directory `work` (beside it), when
    /// the name must be agreed between processes (the ranks of a pregel job).
    pub fn at(work: PathBuf, target: &Path) -> Result<StagedDir> {
        if work.exists() {
            std::fs::remove_dir_all(&work).context(|| format!("removing {}", work.display()))?;
        }
        std::fs::create_dir_all(&work).context(|| format!("creating {}", work.display()))?;
        Ok(StagedDir { work, target: target.to_path_buf(), done: false })
    }

    /// Takes over `work`, already built beside `target` by several processes under a name they
    /// agreed on (the ranks of a pregel job), for [`commit`](Self::commit).
    pub fn adopt(work: PathBuf, target: &Path) -> StagedDir {
        StagedDir { work, target: target.to_path_buf(), done: false }
    }

    /// Where the new version is built.
    pub fn path(&self) -> &Path {
        &self.work
    }

    /// Makes the built directory the target, durably, and removes the version it replaces.
    pub fn commit(self) -> Result<()> {
        self.finish(true, None)
    }

    /// The commit; `swap` false takes the path of file systems without `RENAME_EXCHANGE`, and
    /// `kill_at` (tests) stops right after that step as a killed process would: no clean-up.
    fn finish(mut self, swap: bool, kill_at: Option<Step>) -> Result<()> {
        let killed = |step: Step| kill_at == Some(step);
        let parent = parent_of(&self.target);
        sync_tree(&self.work)?;
        if killed(Step::Synced) {
            return Err(self.killed(Step::Synced));
        }
        let old = if !self.target.exists() {
            rename(&self.work, &self.target)?;
            None
        } else if swap && exchange(&self.work, &self.target)? {
            Some(self.work.clone())
        } else {
            let aside = sibling(&self.target, ASIDE, std::process::id())?;
            rename(&self.target, &aside)?;
            if killed(Step::MovedAside) {
                return Err(self.killed(Step::MovedAside));
            }
            if let Err(e) = rename(&self.work, &self.target) {
                let _ = std::fs::rename(&aside, &self.target);
                return Err(e);
            }
            Some(aside)
        };
        self.done = true;
        sync_dir(&parent)?;
        if killed(Step::InPlace) {
            return Err(self.killed(Step::InPlace));
        }
        // The commit is done: an old version that cannot be removed now is a hidden leftover
        // that the next open removes.
        if let Some(old) = old {
            let _ = std::fs::remove_dir_all(&old);
        }
        if killed(Step::OldRemoved) {
            return Err(self.killed(Step::OldRemoved));
        }
        Ok(())
    }

    /// A simulated kill: nothing is cleaned up.
    fn killed(&mut self, step: Step) -> Error {
        self.done = true;
        Error::invalid(format!("commit of {} killed after {step:?}", self.target.display()))
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
}

/// Builds a new version of `target` with `build` (given the work directory) and commits it;
/// when `build` fails, the work directory is removed and `target` is left as it was.
pub fn build_dir<T>(target: &Path, build: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let staged = StagedDir::create(target)?;
    let built = build(staged.path())?;
    staged.commit()?;
    Ok(built)
}

/// Removes the directory `target`: renamed aside first, so that it is gone at once and a kill
/// during the removal leaves a hidden leftover (removed by the next open), not half of it.
pub fn remove_dir(target: &Path) -> Result<()> {
    let aside = sibling(target, REMOVED, std::process::id())?;
    rename(target, &aside)?;
    std::fs::remove_dir_all(&aside).context(|| format!("removing {}", aside.display()))
}

/// For the clean-up of a dead process's leftover `path`: when it is an old version moved aside
/// (`.NAME.old-PID`) and `NAME` is missing (the process was killed between the renames of a
/// commit), puts it back as `NAME` and returns true; the caller removes the leftover otherwise.
pub fn restore_if_orphaned(path: &Path) -> bool {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().to_string()) else { return false };
    let Some(at) = name.rfind(ASIDE) else { return false };
    let Some(original) = name.get(1..at).filter(|o| name.starts_with('.') && !o.is_empty()) else { return false };
    let target = path.with_file_name(original);
    if target.exists() || std::fs::symlink_metadata(&target).is_ok() {
        return false;
    }
    std::fs::rename(path, &target).is_ok()
}

/// `.NAME{marker}{pid}` beside `target`.
fn sibling(target: &Path, marker: &str, pid: u32) -> Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| Error::invalid(format!("{} has no directory name to commit", target.display())))?;
    Ok(target.with_file_name(format!(".{}{marker}{pid}", name.to_string_lossy())))
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).context(|| format!("renaming {} to {}", from.display(), to.display()))
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir).and_then(|f| f.sync_all()).context(|| format!("syncing {}", dir.display()))
}

/// fsyncs every file and directory under `dir`, then `dir` itself.
fn sync_tree(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).context(|| format!("listing {}", dir.display()))?;
    for entry in entries {
        let entry = entry.context(|| format!("listing {}", dir.display()))?;
        let path = entry.path();
        let kind = entry.file_type().context(|| format!("reading the type of {}", path.display()))?;
        if kind.is_dir() {
            sync_tree(&path)?;
        } else if kind.is_file() {
            std::fs::File::open(&path).and_then(|f| f.sync_all()).context(|| format!("syncing {}", path.display()))?;
        }
    }
    sync_dir(dir)
}

/// Swaps `a` and `b` atomically; `false` when the file system (or the OS) cannot.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| Error::invalid(format!("{} contains a NUL byte", p.display())))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two NUL-terminated paths that outlive the call; renameat2 reads them only.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP | libc::EXDEV) => Ok(false),
        _ => Err(Error::io(format!("swapping {} and {}", a.display(), b.display()), e)),
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> Result<bool> {
    Ok(false)
}

#[cfg(test)]
mod tests;
