//! # outcore
//!
//! Graph analytics for graphs larger than memory. This crate holds everything except the front
//! ends: the store and its layouts, the import pipeline and generators, the runtime (memory
//! budget, I/O accounting, progress), the program API, the engines and the algorithms.
//! See `ARCHITECTURE.md` at the repository root for the layers and their invariants.

pub mod algo;
pub mod engine;
pub mod error;
pub mod generate;
pub mod ingest;
pub mod output;
pub mod program;
pub mod report;
pub mod run_report;
pub mod runtime;
pub mod store;
pub mod transport;
pub mod validate;

pub use error::{Error, Result};

/// A dense internal vertex id, `0..|V|`. Users only ever see original ids.
pub type VertexId = u64;
