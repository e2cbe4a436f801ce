//! `outcore`: the command-line front end. The only crate that knows clap and indicatif.
//!
//! A library with one entry, [`main_with_args`], so that the `outcore` binary (`src/main.rs`)
//! and the Python package's `outcore` console script (`outcore._native.main`) run the same
//! command line.

mod commands;
mod distributed;
mod progress;

use clap::{Parser, Subcommand};
use outcore::runtime::CancelToken;

#[derive(Parser)]
#[command(name = "outcore", version, about = "Graph analytics for graphs larger than memory")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// (Unboxed: parsed once per process.)
#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Generate a synthetic graph (R-MAT, Erdős–Rényi, grid) to a file or a store.
    Generate(commands::generate::GenerateArgs),
    /// Import edge lists into a store (bounded memory, external sorting).
    Import(commands::import::ImportArgs),
    /// Describe a store: sizes, degrees, layouts.
    Info(commands::info::InfoArgs),
    /// Check an engine against the LDBC Graphalytics validation graphs.
    Validate(commands::validate::ValidateArgs),
    /// Run an algorithm on a store.
    Run(commands::run::RunArgs),
    /// List the algorithms, their parameters and defaults, and which engines run each.
    Algorithms(commands::algorithms::AlgorithmsArgs),
    /// Partition a store for the distributed engines: per-rank files for the pregel engine
    /// (`mpirun -n W outcore run ...`), or with `--bbp` TurboGraph++'s balanced buffer-aware
    /// partitioning into slotted pages for `--engine nwsm`.
    Partition(commands::partition::PartitionArgs),
    /// List, drop or build a store's derived layouts (shards, bbp, pregel partitions, cache
    /// selections).
    Layout(commands::layout::LayoutArgs),
    /// Print one table from several --stats-json files.
    Summary(commands::summary::SummaryArgs),
    /// Write an HTML page of charts (time, bytes, active vertices and edges per iteration) from
    /// --stats-json files; several files are compared side by side.
    Report(commands::report::ReportArgs),
    /// Measure the gap threshold l of a device (bandwidth × latency) for the stream engine.
    Calibrate(commands::calibrate::CalibrateArgs),
    /// Renumber a store's vertices (none, degree, random, norder).
    Reorder(commands::reorder::ReorderArgs),
    /// Benchmarks (`bench cache`: BASC, GVS and Norder at equal memory; `bench stream`:
    /// the stream engine's schedules; `bench shards`: the dynamic-shard policies).
    Bench(commands::bench::BenchArgs),
}

/// Exit codes in the spirit of sysexits.h, so scripts can tell failures apart.
fn exit_code(error: &anyhow::Error) -> i32 {
    match error.downcast_ref::<outcore::Error>() {
        Some(outcore::Error::InvalidArgument(_)) | Some(outcore::Error::Unsupported(_)) => 64,
        Some(outcore::Error::Input { .. }) => 65,
        Some(outcore::Error::Store { .. }) => 66,
        Some(outcore::Error::Io { .. }) => 74,
        Some(outcore::Error::MemoryBudget(_)) => 75,
        Some(outcore::Error::Interrupted) => 130,
        Some(outcore::Error::Remote { .. }) => 70,
        // A bare OS error from the front end (writing --stats-json...) is an I/O error; what
        // is left is a check that failed (`validate` mismatches, a benchmark's child run).
        None if error.downcast_ref::<std::io::Error>().is_some() => 74,
        None => 1,
    }
}

/// The error and its causes on one line, each told once: `Error::Io` already prints its
/// source in its own message, so a cause whose text ends the line so far is not repeated.
fn describe(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Parses the command line; a usage error is exit code 64 (EX_USAGE) rather than clap's 2,
/// `--help` and `--version` are 0.
fn parse_cli<I, T>(args: I) -> Result<Cli, i32>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).map_err(|error| {
        let _ = error.print();
        if error.use_stderr() {
            64
        } else {
            0
        }
    })
}

/// Runs the command line `args` (the program name first) and returns the exit code. Installs
/// a Ctrl-C handler (once per process): the first Ctrl-C stops the running operation at a safe
/// point, the second exits at once.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match parse_cli(args) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let cancel = CancelToken::new();
    {
        // First Ctrl-C: ask the running operation to stop at a safe point (it cleans up its
        // temporary files); second Ctrl-C: leave at once.
        let cancel = cancel.clone();
        let _ = ctrlc::set_handler(move || {
            if cancel.is_cancelled() {
                std::process::exit(130);
            }
            eprintln!("\ninterrupting: stopping at the next safe point (Ctrl-C again to quit at once)");
            cancel.cancel();
        });
    }
    let result = match cli.command {
        Command::Generate(args) => commands::generate::run(args, &cancel),
        Command::Import(args) => commands::import::run(args, &cancel),
        Command::Run(args) => commands::run::run(args, &cancel),
        Command::Algorithms(args) => commands::algorithms::run(args),
        Command::Partition(args) => commands::partition::run(args, &cancel),
        Command::Info(args) => commands::info::run(args),
        Command::Layout(args) => commands::layout::run(args, &cancel),
        Command::Summary(args) => commands::summary::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Validate(args) => commands::validate::run(args),
        Command::Calibrate(args) => commands::calibrate::run(args),
        Command::Reorder(args) => commands::reorder::run(args),
        Command::Bench(args) => commands::bench::run(args),
    };
    match result {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("error: {}", describe(&error));
            exit_code(&error)
        }
    }
}
