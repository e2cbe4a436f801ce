//! Run reports: a self-contained HTML page of charts from `--stats-json` files.
//!
//! A run's per-iteration figures (time, bytes, active vertices and edges) are only useful once
//! someone looks at them, and comparing engines or schedules means looking at several runs
//! side by side. This module reads the stats files into a small typed model ([`RunFile`]) and
//! renders one page ([`render_html`]): a summary table, per-iteration charts per run with
//! shared scales across runs, and comparison charts when there are several runs.
//!
//! The page is plain HTML with inline SVG and CSS: no script, no fonts or libraries from the
//! network, so it opens from a file anywhere, can be attached to an issue or a CI artefact and
//! renders the same in every browser. The model is `engine::RunStats` itself (which writes
//! the files), read back with a default for every field a file lacks, so files written by
//! older or newer versions read too; engine-specific figures (the stream engine's compute /
//! I/O wait split) are its typed figures, present where the engine recorded them. `report.rs` is another thing: summaries of *results* (top vertices).
//!
//! The same report renders three ways: the page ([`render_html`], `outcore report`), a
//! fragment with its style scoped to one `<div>` ([`render_fragment`], `Result.plot()` in a
//! notebook, where a page's `body` style would restyle the notebook), and one standalone SVG
//! document of the charts ([`render_svg`], a notebook's image output or a file). All three draw
//! the same [`chart::Chart`]s, so there is one chart implementation.
//!
//! Parts: this file (the model and reading it), `chart.rs` (SVG charts: axes, stacked bars,
//! lines), `html.rs` (the page and the fragment: table, chart grid, escaping), `svg.rs` (the
//! charts as one SVG document).

mod chart;
mod html;
mod svg;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::engine::{IterationStats, RunStats};

use crate::error::{Error, Result};

pub use html::{render_fragment, render_html};
pub use svg::render_svg;

/// One `--stats-json` file as the report reads it: the run's [`RunStats`] (fields the file
/// lacks take their defaults) and what the report needs beside them.
#[derive(Debug, Clone, Default)]
pub struct RunFile {
    pub stats: RunStats,
    /// The file's wall time, if it has one (shown as `?` otherwise).
    pub wall_seconds: Option<f64>,
    /// The planner's plan for the engine that ran, when the run had one (`planner::Plan` is
    /// written, not read: its names are the planner's own).
    pub plan: Option<PlanFigures>,
}

impl std::ops::Deref for RunFile {
    type Target = RunStats;

    fn deref(&self) -> &RunStats {
        &self.stats
    }
}

/// What the planner expected of the engine that ran.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PlanFigures {
    pub engine: String,
    pub bytes_read: f64,
    pub bytes_written: f64,
    pub iterations: f64,
    pub seconds: f64,
    pub memory: Vec<MemoryPart>,
}

/// One part of a plan's memory (e.g. "vertex values").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MemoryPart {
    pub part: String,
    pub bytes: u64,
}

/// The compute and I/O wait seconds of an iteration, where its engine measures them (stream
/// and its edge passes overlap reading with computing and record both).
pub fn time_split(iteration: &IterationStats) -> Option<(f64, f64)> {
    let figures = &iteration.figures;
    let stream = figures.stream().map(|s| (s.compute_seconds, s.io_wait_seconds));
    stream.or_else(|| figures.edge_pass().map(|e| (e.compute_seconds, e.io_wait_seconds)))
}

/// The part of an iteration's seconds not attributed to compute or I/O wait (all of it when
/// the engine records no split).
pub fn unsplit_seconds(iteration: &IterationStats) -> f64 {
    let (compute, io_wait) = time_split(iteration).unwrap_or((0.0, 0.0));
    (iteration.seconds - compute - io_wait).max(0.0)
}

impl RunFile {
    /// Reads a stats file; errors name the file and what is wrong with it.
    pub fn load(path: &Path) -> Result<RunFile> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        RunFile::parse(path, &text)
    }

    /// Parses stats JSON text; `source` names it in errors (a path, or e.g. `<stats>`).
    pub fn parse(source: &Path, text: &str) -> Result<RunFile> {
        let bad = |message: String| Error::input(source, None, message);
        let not_stats = |e: serde_json::Error| {
            bad(format!("not a --stats-json file: {e} (line {}, column {})", e.line(), e.column()))
        };
        let value: Value = serde_json::from_str(text).map_err(not_stats)?;
        if value.get("per_iteration").is_none() && value.get("wall_seconds").is_none() {
            return Err(bad("not a --stats-json file: it has neither \"per_iteration\" nor \"wall_seconds\"".into()));
        }
        let wall_seconds = value.get("wall_seconds").and_then(Value::as_f64);
        let plan = value.get("plan").filter(|p| !p.is_null()).map(PlanFigures::deserialize).transpose();
        let plan = plan.map_err(not_stats)?;
        let stats = RunStats::deserialize(value).map_err(not_stats)?;
        Ok(RunFile { stats, wall_seconds, plan })
    }

    /// The per-iteration figures (none when the file has none).
    pub fn iterations(&self) -> &[IterationStats] {
        &self.stats.per_iteration
    }

    /// Whether any iteration records the compute / I/O wait split.
    pub fn has_time_split(&self) -> bool {
        self.iterations().iter().any(|i| time_split(i).is_some())
    }

    /// Engine settings that tell runs of one engine apart (stream schedule, shards policy).
    pub fn settings(&self) -> String {
        let mut parts = Vec::new();
        if let Some(stream) = &self.figures.stream {
            parts.push(format!("schedule {}", stream.schedule));
            parts.push(format!("io {}", stream.io));
        }
        if let Some(shards) = &self.figures.shards {
            parts.push(format!("dynamic shards {}", shards.dynamic_policy.name()));
        }
        parts.join(", ")
    }
}

/// A run with the label it has on the page.
#[derive(Debug, Clone)]
pub struct ReportRun {
    pub label: String,
    pub run: RunFile,
}

impl ReportRun {
    /// Reads `path`, labelled by its file name.
    pub fn load(path: &Path) -> Result<ReportRun> {
        Ok(ReportRun { label: file_label(path), run: RunFile::load(path)? })
    }
}

fn file_label(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// Renders `runs` and writes the page to `output` (atomically: a temporary sibling renamed).
pub fn write_html(runs: &[ReportRun], output: &Path) -> Result<()> {
    if runs.is_empty() {
        return Err(Error::invalid("a run report needs at least one stats file"));
    }
    let page = render_html(runs);
    let tmp = tmp_sibling(output);
    std::fs::write(&tmp, page).map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(format!("renaming {} to {}", tmp.display(), output.display()), e)
    })
}

fn tmp_sibling(output: &Path) -> PathBuf {
    let mut name = output.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".tmp");
    output.with_file_name(name)
}

#[cfg(test)]
mod tests;
