//! Input parsers (to be written).
use super::{ImportOptions, InputInfo, RecordSource};
use crate::error::Result;
use std::path::PathBuf;

pub fn open_inputs(_inputs: &[PathBuf], _opts: &ImportOptions) -> Result<(Box<dyn RecordSource>, InputInfo)> {
    Err(crate::Error::invalid("parsers not written yet"))
}
