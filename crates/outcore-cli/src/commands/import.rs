//! `outcore import`: edge lists to a store, in bounded memory.

use std::path::PathBuf;

use clap::Args;
use outcore::ingest::{import, ImportOptions, InputFormat};
use outcore::runtime::{format_size, CancelToken};
use outcore::store::IdType;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct ImportArgs {
    /// Input files: edge lists (SNAP/TSV), CSV, Matrix Market, Graphalytics (.properties or
    /// .v + .e), raw binary pairs, Parquet (.parquet or PAR1 magic); gzip or zstd compressed
    /// inputs are detected.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The store directory to create (replaced only once the new store is complete).
    #[arg(long)]
    store: PathBuf,
    /// auto, edgelist, csv, mtx, graphalytics, bin32, bin64, parquet (edge columns of a
    /// Parquet table, chosen with --src-col/--dst-col/--weight-col), points (k-means: one
    /// point `x_1 ... x_d` per line; point i gets an arc i -> j of weight x_j).
    #[arg(long, default_value = "auto")]
    format: String,
    /// Memory budget for the whole import (default: a quarter of RAM), e.g. 1GiB.
    #[arg(long)]
    memory: Option<String>,
    /// Store both directions of every edge.
    #[arg(long)]
    undirected: bool,
    /// Store directed even if the input says undirected.
    #[arg(long, conflicts_with = "undirected")]
    directed: bool,
    /// Read a weight column (default: when the input declares weights).
    #[arg(long)]
    weighted: bool,
    /// Ignore weights even if the input has them.
    #[arg(long, conflicts_with = "weighted")]
    unweighted: bool,
    /// Keep one arc per (source, target): the one with the smallest weight.
    #[arg(long)]
    dedup: bool,
    #[arg(long)]
    drop_self_loops: bool,
    /// Original id type: u64 or string.
    #[arg(long, default_value = "u64")]
    ids: String,
    /// Count, skip and report malformed lines instead of stopping at the first.
    #[arg(long)]
    skip_bad_lines: bool,
    /// CSV or Parquet source column (name or 0-based index).
    #[arg(long)]
    src_col: Option<String>,
    /// CSV or Parquet target column (name or 0-based index).
    #[arg(long)]
    dst_col: Option<String>,
    /// CSV or Parquet weight column (name or 0-based index).
    #[arg(long)]
    weight_col: Option<String>,
    /// Write the import report as JSON to this file.
    #[arg(long)]
    stats_json: Option<PathBuf>,
    /// Renumber the vertices after the import: none (input order), degree, random, norder
    /// (`outcore reorder` on the new store).
    #[arg(long, default_value = "none")]
    order: String,
    /// Seed of `--order random`.
    #[arg(long, default_value_t = 1)]
    order_seed: u64,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

pub fn options(args: &ImportArgs) -> anyhow::Result<ImportOptions> {
    Ok(ImportOptions {
        format: InputFormat::parse(&args.format)?,
        undirected: if args.undirected {
            Some(true)
        } else if args.directed {
            Some(false)
        } else {
            None
        },
        weighted: if args.weighted || args.weight_col.is_some() {
            Some(true)
        } else if args.unweighted {
            Some(false)
        } else {
            None
        },
        dedup: args.dedup,
        drop_self_loops: args.drop_self_loops,
        ids: match args.ids.as_str() {
            "u64" => IdType::U64,
            "string" => IdType::String,
            other => {
                anyhow::bail!(outcore::Error::invalid(format!("--ids: unknown id type '{other}' (use u64 or string)")))
            }
        },
        memory: super::budget(args.memory.as_ref())?,
        skip_bad_lines: args.skip_bad_lines,
        src_col: args.src_col.clone(),
        dst_col: args.dst_col.clone(),
        weight_col: args.weight_col.clone(),
    })
}

pub fn run(args: ImportArgs, cancel: &CancelToken) -> anyhow::Result<()> {
    let opts = options(&args)?;
    let order = outcore::store::order::VertexOrder::parse(&args.order, args.order_seed)?;
    let progress = TerminalProgress::new(args.quiet);
    // With an ordering the graph is imported into a staging store beside the target and
    // reordered from there into it: one new generation, so no run ever sees the unordered one.
    outcore::store::build::check_replaceable(&args.store)?;
    let staging = (order != outcore::store::order::VertexOrder::None).then(|| staging_path(&args.store));
    let result = import_and_order(&args, &opts, order, staging.as_deref(), &progress, cancel);
    if let Some(staging) = &staging {
        let _ = std::fs::remove_dir_all(staging);
    }
    result
}

/// `.NAME.staging-PID` beside the store (removed by the next import if this one is killed).
fn staging_path(store: &std::path::Path) -> std::path::PathBuf {
    let name = store.file_name().map_or("store".into(), |n| n.to_string_lossy().to_string());
    store.with_file_name(format!(".{name}.staging-{}", std::process::id()))
}

fn import_and_order(
    args: &ImportArgs,
    opts: &ImportOptions,
    order: outcore::store::order::VertexOrder,
    staging: Option<&std::path::Path>,
    progress: &TerminalProgress,
    cancel: &CancelToken,
) -> anyhow::Result<()> {
    let (_store, report) = import(&args.inputs, staging.unwrap_or(&args.store), opts, progress, cancel)?;
    eprintln!(
        "imported {} vertices, {} edges ({} arcs) into {} in {:.1} s: {:.0} edges/s, {} read, {} written, peak RSS {} (budget {})",
        report.vertices,
        report.edges,
        report.arcs,
        args.store.display(),
        report.seconds,
        report.input_records as f64 / report.seconds.max(1e-9),
        format_size(report.input_bytes),
        format_size(report.bytes_written),
        format_size(report.peak_rss_bytes),
        opts.memory,
    );
    if report.bad_lines_skipped > 0 {
        eprintln!("skipped {} malformed lines (--skip-bad-lines)", report.bad_lines_skipped);
    }
    if let Some(path) = &args.stats_json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    if let Some(staging) = staging {
        // Import then reorder: the pipeline writes ids in original-id order, and the ordering
        // rebuilds the store renumbered (atomically, within the same budget).
        cancel.check()?;
        super::reorder::apply(staging, Some(&args.store), order, opts.memory, args.quiet)?;
    }
    Ok(())
}
