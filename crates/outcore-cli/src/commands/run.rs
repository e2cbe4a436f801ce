//! `outcore run ALGO`: one algorithm on a store with one engine and budget.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use outcore::algo::{run_algorithm, AlgorithmParams};
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::output::{write_result, OutputFormat, OutputTarget};
use outcore::runtime::{format_size, CancelToken, MemoryBudget};
use outcore::store::Store;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct RunArgs {
    /// The algorithm: bfs, pr, pr-delta, wcc, cdlp, lcc, sssp (see `outcore algorithms`).
    algorithm: String,
    /// The store directory.
    #[arg(long)]
    store: PathBuf,
    /// Engine: auto (default: chooses and says why), inmem, stream, cache.
    #[arg(long, default_value = "auto")]
    engine: String,
    /// Memory budget, e.g. 512MiB (default: a quarter of RAM).
    #[arg(long)]
    memory: Option<String>,
    /// Where to write the results (default: standard output).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Output format: text (Graphalytics 'vertex value' lines), tsv, csv, parquet
    /// (default: from the output file's extension, else text).
    #[arg(long)]
    format: Option<String>,
    /// Write run figures (time, bytes, peak RSS, per-iteration figures, summary) as JSON.
    #[arg(long)]
    stats_json: Option<PathBuf>,
    /// Source vertex (original id): bfs, sssp.
    #[arg(long)]
    source: Option<String>,
    /// Source vertices, comma separated (original ids): mssp, bc, msbfs.
    #[arg(long, value_delimiter = ',')]
    sources: Vec<String>,
    /// Number of sampled sources when --sources is not given.
    #[arg(long)]
    num_sources: Option<usize>,
    /// Random seed for sampled choices.
    #[arg(long)]
    seed: Option<u64>,
    /// Iterations: pr, cdlp.
    #[arg(long)]
    iterations: Option<usize>,
    /// PageRank damping factor.
    #[arg(long)]
    damping: Option<f64>,
    /// Convergence tolerance: pr-delta.
    #[arg(long)]
    tolerance: Option<f64>,
    /// No progress bars and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

pub fn params(args: &RunArgs) -> AlgorithmParams {
    AlgorithmParams {
        source: args.source.clone(),
        sources: args.sources.clone(),
        num_sources: args.num_sources,
        seed: args.seed,
        iterations: args.iterations,
        damping: args.damping,
        tolerance: args.tolerance,
        ..AlgorithmParams::default()
    }
}

pub fn run(args: RunArgs, cancel: &CancelToken) -> anyhow::Result<()> {
    let format = match (&args.format, &args.output) {
        (Some(name), _) => OutputFormat::parse(name)?,
        (None, Some(path)) => OutputFormat::from_path(path).unwrap_or(OutputFormat::Text),
        (None, None) => OutputFormat::Text,
    };
    let options = RunOptions {
        engine: EngineKind::parse(&args.engine)?,
        memory: match &args.memory {
            Some(m) => MemoryBudget::parse(m)?,
            None => MemoryBudget::default_for_machine(),
        },
        ..RunOptions::default()
    };
    let store = Store::open(&args.store)?;
    let runner = Runner::new(&store, options)
        .with_progress(Arc::new(TerminalProgress::new(args.quiet)))
        .with_cancel(cancel.clone());
    if !args.quiet && !runner.engine_reason().is_empty() {
        eprintln!("{}", runner.engine_reason());
    }
    let result = run_algorithm(&runner, &args.algorithm, &params(&args))?;
    let mut stats = runner.finish(&args.algorithm);
    let summary = outcore::report::summarize(&result, &runner.store().ids()?)?;
    let target = match &args.output {
        Some(path) => OutputTarget::File(path.clone()),
        None => OutputTarget::Stdout,
    };
    write_result(runner.store(), &result, &target, format)?;
    if !args.quiet {
        eprintln!(
            "{} on {}: {:.2} s, {} iterations, {} read, peak RSS {} (budget {})",
            args.algorithm,
            stats.engine,
            stats.wall_seconds,
            stats.iterations,
            format_size(stats.bytes_read),
            format_size(stats.peak_rss_bytes),
            format_size(stats.memory_budget_bytes)
        );
        for line in outcore::report::describe(&summary) {
            eprintln!("  {line}");
        }
    }
    if let Some(path) = &args.stats_json {
        stats.extra.insert("summary".into(), serde_json::Value::Object(summary));
        std::fs::write(path, serde_json::to_string_pretty(&stats)?)?;
    }
    Ok(())
}
