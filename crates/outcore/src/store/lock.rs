//! Advisory file locks (`flock` through `std::fs::File::lock*`). A lock belongs to an open
//! file, so the kernel releases it when its process ends, killed or not: a kill never leaves a
//! lock behind, unlike a lock *file* whose existence is the lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// A held lock on a file; released when dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    path: PathBuf,
}

/// Whether to create the lock file when it does not exist.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Create {
    Yes,
    /// A missing file is `Ok(None)` (a generation that was retired meanwhile).
    No,
}

fn open(path: &Path, create: Create) -> Result<Option<File>> {
    let opened = OpenOptions::new().create(create == Create::Yes).truncate(false).write(true).open(path);
    match opened {
        Ok(file) => Ok(Some(file)),
        Err(e) if create == Create::No && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("opening the lock file {}", path.display()), e)),
    }
}

impl FileLock {
    /// Waits for a shared hold (readers).
    pub fn shared(path: &Path, create: Create) -> Result<Option<FileLock>> {
        let Some(file) = open(path, create)? else { return Ok(None) };
        file.lock_shared().context(|| format!("locking {}", path.display()))?;
        Ok(Some(FileLock { _file: file, path: path.to_path_buf() }))
    }

    /// Waits for the exclusive hold (writers: a commit, a layout build).
    pub fn exclusive(path: &Path) -> Result<FileLock> {
        let file = open(path, Create::Yes)?.expect("created");
        file.lock().context(|| format!("locking {}", path.display()))?;
        Ok(FileLock { _file: file, path: path.to_path_buf() })
    }

    /// The exclusive hold if nobody holds the lock now, else `None` (never waits).
    pub fn try_exclusive(path: &Path, create: Create) -> Result<Option<FileLock>> {
        let Some(file) = open(path, create)? else { return Ok(None) };
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock { _file: file, path: path.to_path_buf() })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(Error::io(format!("locking {}", path.display()), e)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
