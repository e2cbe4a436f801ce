//! The memory ledger: the one place a run accounts the memory its engines hold.
//!
//! The budget is a promise (peak RSS within `--memory` plus a small fixed overhead), and every
//! engine sizes its buffers from it with sums of its own. The ledger is where those sums meet at
//! run time, as DuckDB's buffer manager and RocksDB's write-buffer manager account every
//! allocation in one place: it is created from the budget when a run starts ([`MemoryLedger::new`],
//! one per `Runner`), and an engine [`charge`](MemoryLedger::charge)s each named part it sets up
//! (vertex values, messages, resident edges, read buffers, page-cache frames, sort runs,
//! windows…), holding the returned [`Charge`] for as long as the memory lives; dropping it
//! releases the bytes. A charge that would take the total past the budget is refused with an
//! [`Error::MemoryBudget`] naming the part, its size, what is already charged and the budget —
//! never a panic, never an allocation beyond the promise.
//!
//! The ledger keeps the current and peak total and each part's peak; a run writes them to
//! `--stats-json` ([`LedgerFigures`]) beside the measured peak RSS. An engine's sizing produces
//! its parts once, as [`MemoryPart`]s: the same parts are the planner's `Plan::memory` and the
//! run's charges, so the plan is what the run holds.
//!
//! Charges are rare (a part at a time, not an allocation at a time), so one mutex guards the
//! figures: engines charge from any thread.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use super::memory::{format_size, MemoryBudget};
use crate::error::{Error, Result};

/// One named part of an engine's memory: what its sizing plans and what its run charges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryPart {
    pub part: &'static str,
    pub bytes: u64,
}

impl MemoryPart {
    pub fn new(part: &'static str, bytes: u64) -> MemoryPart {
        MemoryPart { part, bytes }
    }
}

/// The run's account of memory held against its budget; clones share the account.
#[derive(Clone)]
pub struct MemoryLedger {
    inner: Arc<Inner>,
}

struct Inner {
    budget: u64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    current: u64,
    peak: u64,
    /// Parts in the order they were first charged.
    parts: Vec<PartUse>,
}

struct PartUse {
    part: &'static str,
    current: u64,
    peak: u64,
}

/// Bytes of one part held against the ledger until dropped (or [`release`](Charge::release)d).
#[must_use = "a charge is released as soon as it is dropped"]
pub struct Charge {
    inner: Arc<Inner>,
    part: &'static str,
    bytes: u64,
}

/// What a run's ledger held: the peak total and each part's peak, for `--stats-json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LedgerFigures {
    /// The most bytes charged at once.
    pub peak_bytes: u64,
    /// Each part's own peak, in the order the parts were first charged (parts never above 0
    /// left out).
    pub parts: Vec<LedgerPart>,
}

/// One part's peak in [`LedgerFigures`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LedgerPart {
    pub part: String,
    pub peak_bytes: u64,
}

impl LedgerFigures {
    /// The peak of `part` (0 when never charged).
    pub fn part(&self, part: &str) -> u64 {
        self.parts.iter().find(|p| p.part == part).map_or(0, |p| p.peak_bytes)
    }
}

impl MemoryLedger {
    /// An empty ledger over `budget`.
    pub fn new(budget: MemoryBudget) -> MemoryLedger {
        MemoryLedger { inner: Arc::new(Inner { budget: budget.bytes(), state: Mutex::new(State::default()) }) }
    }

    pub fn budget(&self) -> u64 {
        self.inner.budget
    }

    /// Holds `bytes` of `part` until the returned charge is dropped; refused, with what is
    /// charged already, when the total would pass the budget.
    pub fn charge(&self, part: &'static str, bytes: u64) -> Result<Charge> {
        self.inner.add(part, bytes)?;
        Ok(Charge { inner: self.inner.clone(), part, bytes })
    }

    /// Charges every part of a sizing, all or none.
    pub fn charge_parts(&self, parts: &[MemoryPart]) -> Result<Vec<Charge>> {
        parts.iter().map(|p| self.charge(p.part, p.bytes)).collect()
    }

    /// Bytes charged now.
    pub fn current(&self) -> u64 {
        self.inner.lock().current
    }

    /// The most bytes charged at once so far.
    pub fn peak(&self) -> u64 {
        self.inner.lock().peak
    }

    /// Bytes a charge may still take.
    pub fn left(&self) -> u64 {
        self.inner.budget.saturating_sub(self.current())
    }

    /// The peak total and the peak of each part so far.
    pub fn figures(&self) -> LedgerFigures {
        let state = self.inner.lock();
        let parts = state
            .parts
            .iter()
            .filter(|p| p.peak > 0)
            .map(|p| LedgerPart { part: p.part.to_string(), peak_bytes: p.peak })
            .collect();
        LedgerFigures { peak_bytes: state.peak, parts }
    }
}

impl std::fmt::Debug for MemoryLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.inner.lock();
        write!(f, "MemoryLedger({} of {} charged: {})", state.current, self.inner.budget, state.describe())
    }
}

impl Inner {
    /// The figures, even after a panic on another thread (they are updated in one step each).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn add(&self, part: &'static str, bytes: u64) -> Result<()> {
        let mut state = self.lock();
        if state.current.saturating_add(bytes) > self.budget {
            return Err(Error::MemoryBudget(format!(
                "{part} needs {}, but {} of the {} budget is already charged ({}); raise --memory",
                format_size(bytes),
                format_size(state.current),
                format_size(self.budget),
                state.describe()
            )));
        }
        state.current += bytes;
        state.peak = state.peak.max(state.current);
        let use_ = match state.parts.iter().position(|p| p.part == part) {
            Some(i) => &mut state.parts[i],
            None => {
                state.parts.push(PartUse { part, current: 0, peak: 0 });
                state.parts.last_mut().unwrap()
            }
        };
        use_.current += bytes;
        use_.peak = use_.peak.max(use_.current);
        Ok(())
    }

    fn remove(&self, part: &'static str, bytes: u64) {
        let mut state = self.lock();
        state.current -= bytes;
        if let Some(use_) = state.parts.iter_mut().find(|p| p.part == part) {
            use_.current -= bytes;
        }
    }
}

impl State {
    /// The parts charged now, e.g. `vertex values 1.00 MiB, read buffers 4.00 MiB`.
    fn describe(&self) -> String {
        let held: Vec<String> = self
            .parts
            .iter()
            .filter(|p| p.current > 0)
            .map(|p| format!("{} {}", p.part, format_size(p.current)))
            .collect();
        if held.is_empty() {
            "nothing".to_string()
        } else {
            held.join(", ")
        }
    }
}

impl Charge {
    pub fn part(&self) -> &'static str {
        self.part
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Changes the bytes held to `bytes` (a part that grows or shrinks as it fills); a growth
    /// past the budget is refused and leaves the charge as it was.
    pub fn resize(&mut self, bytes: u64) -> Result<()> {
        if bytes > self.bytes {
            self.inner.add(self.part, bytes - self.bytes)?;
        } else {
            self.inner.remove(self.part, self.bytes - bytes);
        }
        self.bytes = bytes;
        Ok(())
    }

    /// Releases the bytes now (dropping the charge does the same).
    pub fn release(self) {}
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.inner.remove(self.part, self.bytes);
    }
}

impl std::fmt::Debug for Charge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Charge({} {})", self.part, self.bytes)
    }
}

#[cfg(test)]
mod tests;
