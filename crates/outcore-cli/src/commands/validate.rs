//! `outcore validate --graphalytics DIR`: every algorithm of every validation graph, checked
//! with the LDBC Graphalytics rules.

use std::path::PathBuf;

use clap::Args;
use outcore::engine::{EngineKind, RunOptions};
use outcore::validate::validate_graphalytics;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct ValidateArgs {
    /// A directory of Graphalytics graphs (NAME.properties, NAME.v, NAME.e, NAME-ALG files).
    #[arg(long)]
    graphalytics: PathBuf,
    /// The engine to check.
    #[arg(long, default_value = "auto")]
    engine: String,
    /// Memory budget of imports and runs (small budgets exercise the out-of-core paths).
    #[arg(long)]
    memory: Option<String>,
    /// Where to build the stores (default: a temporary directory, removed afterwards).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: ValidateArgs) -> anyhow::Result<()> {
    let options = RunOptions {
        engine: EngineKind::parse(&args.engine)?,
        memory: super::budget(args.memory.as_ref())?,
        ..RunOptions::default()
    };
    let temp;
    let work_dir = match &args.work_dir {
        Some(dir) => dir.clone(),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let progress = TerminalProgress::new(args.quiet);
    let report = validate_graphalytics(&args.graphalytics, &options, &work_dir, &progress)?;
    print!("{report}");
    if !report.all_passed() {
        anyhow::bail!("{} of {} validations failed", report.failures().count(), report.rows.len());
    }
    Ok(())
}
