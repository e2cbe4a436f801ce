//! The import pipeline (to be written).
use std::path::{Path, PathBuf};

use super::{ImportOptions, InputInfo, RecordSource};
use crate::error::Result;
use crate::runtime::{CancelToken, Progress};
use crate::store::Store;

/// What an import did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    pub format: String,
    pub vertices: u64,
    pub edges: u64,
    pub arcs: u64,
    pub input_records: u64,
    pub self_loops_dropped: u64,
    pub duplicates_dropped: u64,
    pub bad_lines_skipped: u64,
    pub input_bytes: u64,
    pub bytes_written: u64,
    pub seconds: f64,
    pub peak_rss_bytes: u64,
}

pub fn import(
    inputs: &[PathBuf],
    store_dir: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<(Store, ImportReport)> {
    let (source, info) = super::parse::open_inputs(inputs, opts)?;
    import_records(source, info, store_dir, opts, progress, cancel)
}

pub fn import_records(
    _source: Box<dyn RecordSource>,
    _info: InputInfo,
    _store_dir: &Path,
    _opts: &ImportOptions,
    _progress: &dyn Progress,
    _cancel: &CancelToken,
) -> Result<(Store, ImportReport)> {
    Err(crate::Error::invalid("pipeline not written yet"))
}
