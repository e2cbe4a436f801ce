//! Progress reporting and cancellation, independent of any terminal library.
//!
//! Long operations (import, sorting, layout builds, iterations) report through the
//! [`Progress`] trait; the CLI renders it with indicatif, Python with its own bar, tests with
//! [`NoProgress`]. A [`CancelToken`] is polled at safe points (between sort runs, iterations)
//! so that Ctrl-C never leaves a half-written store behind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// What a progress bar counts, so front ends can format rates (edges/s, bytes/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressUnit {
    Bytes,
    Edges,
    Vertices,
    Items,
    Iterations,
}

/// A factory of progress bars.
pub trait Progress: Send + Sync {
    /// Starts a bar for a step named `label`; `total` is unknown when `None`.
    fn start(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressBar>;
    /// A one-line message outside any bar (e.g. "format: detected SNAP edge list").
    fn note(&self, message: &str);
}

/// One running bar. Dropping it without `finish` abandons it.
pub trait ProgressBar: Send + Sync {
    fn inc(&self, delta: u64);
    fn set_position(&self, position: u64);
    fn set_message(&self, message: &str);
    fn finish(&self);
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

struct SilentBar;

impl ProgressBar for SilentBar {
    fn inc(&self, _: u64) {}
    fn set_position(&self, _: u64) {}
    fn set_message(&self, _: &str) {}
    fn finish(&self) {}
}

impl Progress for NoProgress {
    fn start(&self, _: &str, _: Option<u64>, _: ProgressUnit) -> Box<dyn ProgressBar> {
        Box::new(SilentBar)
    }
    fn note(&self, _: &str) {}
}

/// A shared flag; once cancelled, `check` returns `Err(Error::Interrupted)`.
#[derive(Debug, Default, Clone)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}
