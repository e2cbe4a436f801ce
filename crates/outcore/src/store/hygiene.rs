//! Leftovers of processes that were killed: removed by the next open or build, never while
//! their owner lives.
//!
//! Two kinds, told apart by name:
//! * hidden entries `.NAME.MARKER-PID` (a store, generation or layout being built, replaced,
//!   moved aside or retired): removed when process PID no longer exists, except an old layout
//!   moved aside (`.NAME.old-PID`) while `NAME` is missing, which is put back
//!   ([`restore_if_orphaned`](crate::runtime::commit::restore_if_orphaned));
//! * work files in a generation's `tmp/` named `KIND@PID-...` (spill files, run directories,
//!   partial layouts): their process holds an exclusive lock on `tmp/owner@PID.lock` for its
//!   whole life ([`claim_tmp`]), so they are removed when that lock is free, which survives pid
//!   reuse; without the owner file, when PID no longer exists.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::lock::{Create, FileLock};
use crate::error::{IoContext, Result};

/// Markers of hidden work entries, each followed by the pid of the process that made it.
const MARKERS: [&str; 8] =
    [".building-", ".replaced-", ".removed-", ".tmp-", ".old-", ".retired-", ".partial-", ".staging-"];

/// Whether process `pid` exists (this process always does).
pub fn process_alive(pid: i32) -> bool {
    if pid == std::process::id() as i32 {
        return true;
    }
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    exists || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The pid a hidden work entry name ends with, if it is one.
fn hidden_owner(name: &str) -> Option<i32> {
    MARKERS.iter().find_map(|m| name.rfind(m).and_then(|at| name[at + m.len()..].parse().ok()))
}

/// Removes entries of `dir` named `PREFIX…MARKER-PID` whose process is gone (`prefix` "." for
/// a directory the store owns; ".NAME" in a store's parent, so nothing else there is touched).
pub fn remove_stale_hidden(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.starts_with(prefix) {
            continue;
        }
        if let Some(pid) = hidden_owner(&name) {
            // An old layout moved aside by a commit killed before the new one was in place goes
            // back; any other leftover of a dead process goes.
            if !process_alive(pid) && !crate::runtime::commit::restore_if_orphaned(&entry.path()) {
                remove_entry(&entry.path());
            }
        }
    }
}

fn remove_entry(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => drop(std::fs::remove_dir_all(path)),
        Ok(_) => drop(std::fs::remove_file(path)),
        Err(_) => {}
    }
}

/// The name of a work entry of this process in `tmp/`: `KIND@PID-REST`.
pub fn work_name(kind: &str, rest: &str) -> String {
    format!("{kind}@{}-{rest}", std::process::id())
}

fn owner_file(tmp: &Path, pid: i32) -> PathBuf {
    tmp.join(format!("owner@{pid}.lock"))
}

/// The owner pid of a `tmp/` entry named `KIND@PID…`.
fn work_owner(name: &str) -> Option<i32> {
    let (_, after) = name.split_once('@')?;
    let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Owner locks this process holds (one per `tmp/` it writes in), for its whole life.
static CLAIMED: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

/// Marks this process as the live owner of its work files in `tmp` (idempotent).
pub fn claim_tmp(tmp: &Path) -> Result<()> {
    let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
    if claimed.iter().any(|(dir, _)| dir == tmp) {
        return Ok(());
    }
    let path = owner_file(tmp, std::process::id() as i32);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .context(|| format!("creating {}", path.display()))?;
    file.lock().context(|| format!("locking {}", path.display()))?;
    claimed.push((tmp.to_path_buf(), file));
    Ok(())
}

/// Removes the work files in `tmp` of processes that are gone; returns how many entries.
pub fn remove_dead_work_files(tmp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else { return 0 };
    let mut owners: Vec<(PathBuf, i32)> = Vec::new();
    for entry in entries.flatten() {
        if let Some(pid) = work_owner(&entry.file_name().to_string_lossy()) {
            owners.push((entry.path(), pid));
        }
    }
    let mut dead: HashSet<i32> = HashSet::new();
    let mut alive: HashSet<i32> = HashSet::new();
    let mut removed = 0;
    for (path, pid) in owners {
        if alive.contains(&pid) {
            continue;
        }
        if !dead.contains(&pid) {
            if owner_alive(tmp, pid) {
                alive.insert(pid);
                continue;
            }
            dead.insert(pid);
        }
        if path != owner_file(tmp, pid) {
            remove_entry(&path);
            removed += 1;
        }
    }
    for pid in dead {
        let _ = std::fs::remove_file(owner_file(tmp, pid));
    }
    removed
}

/// Whether the owner of `KIND@PID` entries lives: its owner lock is held, or (no owner file)
/// its process exists.
fn owner_alive(tmp: &Path, pid: i32) -> bool {
    if pid == std::process::id() as i32 {
        return true;
    }
    match FileLock::try_exclusive(&owner_file(tmp, pid), Create::No) {
        Ok(Some(_free)) => false,
        Ok(None) => owner_file(tmp, pid).exists() || process_alive(pid),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_commits_old_layout_goes_back_when_its_place_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let dead = 99_999_999; // above Linux's largest pid
        let make = |name: &str| {
            std::fs::create_dir_all(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join("f"), name).unwrap();
        };
        // Killed between moving shards-2 aside and renaming the new one in: put back.
        make(&format!(".shards-2.old-{dead}"));
        make(&format!(".shards-2.building-{dead}"));
        // Killed after the swap: parts-2 is the new version, the old one is only a leftover.
        make("parts-2");
        make(&format!(".parts-2.old-{dead}"));
        // A live process's entry stays as it is.
        make(&format!(".bbp-1-1.old-{}", std::process::id()));
        remove_stale_hidden(dir.path(), ".");
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        assert_eq!(names, [format!(".bbp-1-1.old-{}", std::process::id()), "parts-2".into(), "shards-2".into()]);
        let restored = std::fs::read_to_string(dir.path().join("shards-2/f")).unwrap();
        assert_eq!(restored, format!(".shards-2.old-{dead}"));
        assert_eq!(std::fs::read_to_string(dir.path().join("parts-2/f")).unwrap(), "parts-2");
    }
}
