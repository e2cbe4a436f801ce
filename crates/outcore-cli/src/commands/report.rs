//! `outcore report`: a self-contained HTML page of charts from `--stats-json` files (one run,
//! or several side by side). The rendering lives in the library (`outcore::run_report`) so the
//! Python package draws the same page.

use std::path::PathBuf;

use clap::Args;
use outcore::run_report::{write_html, ReportRun};

#[derive(Args)]
pub struct ReportArgs {
    /// Files written by `outcore run --stats-json`; each is one run (a column of charts),
    /// labelled by its file name.
    #[arg(required = true)]
    stats: Vec<PathBuf>,
    /// The HTML page to write.
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let runs = args.stats.iter().map(|path| ReportRun::load(path)).collect::<outcore::Result<Vec<_>>>()?;
    write_html(&runs, &args.output)?;
    eprintln!("wrote {} ({} run{})", args.output.display(), runs.len(), if runs.len() == 1 { "" } else { "s" });
    Ok(())
}
