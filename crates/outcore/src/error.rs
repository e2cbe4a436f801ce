//! The one error type of the library.
//!
//! Every failure a user can cause or meet is one of a few kinds, so that front ends can map them
//! to their own vocabulary (exit codes in the CLI, the `OutcoreError` hierarchy in Python):
//! bad input (names the file, the line and the offending text), a missing or damaged store,
//! a memory budget that cannot be kept, plain I/O failures with what was being done, bad
//! arguments, and cancellation.

use std::path::{Path, PathBuf};

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Malformed or unusable input data. `line` is 1-based when known.
    #[error("{}: {message}", location(file, line))]
    Input {
        file: PathBuf,
        line: Option<u64>,
        message: String,
    },
    /// A store that is missing, incomplete, of another version or corrupted.
    #[error("store {}: {message}", path.display())]
    Store { path: PathBuf, message: String },
    /// The memory budget is too small for what was asked.
    #[error("memory budget: {0}")]
    MemoryBudget(String),
    /// An operating-system I/O error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// An argument that does not make sense (unknown vertex, bad option value...).
    #[error("{0}")]
    InvalidArgument(String),
    /// The run was cancelled (Ctrl-C, Python KeyboardInterrupt).
    #[error("interrupted")]
    Interrupted,
    /// Another rank of a distributed run failed (or the transport between ranks did): this
    /// rank cannot go on. `rank` is the rank that failed first when known.
    #[error("{}", remote(rank, message))]
    Remote { rank: Option<usize>, message: String },
}

fn remote(rank: &Option<usize>, message: &str) -> String {
    match rank {
        Some(r) => format!("rank {r} failed: {message}"),
        None => format!("distributed run failed: {message}"),
    }
}

fn location(file: &Path, line: &Option<u64>) -> String {
    match line {
        Some(l) => format!("{}:{}", file.display(), l),
        None => file.display().to_string(),
    }
}

impl Error {
    /// Bad input at a given line of a file.
    pub fn input(file: impl Into<PathBuf>, line: Option<u64>, message: impl Into<String>) -> Self {
        Error::Input { file: file.into(), line, message: message.into() }
    }

    /// A damaged or missing store (or one of its files).
    pub fn store(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Store { path: path.into(), message: message.into() }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }

    /// Wraps an I/O error with the action and the path it concerned.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}

/// Adds "what was being done" to `std::io::Result`s.
pub trait IoContext<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::io(what(), e))
    }
}
