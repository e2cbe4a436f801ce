//! `outcore summary`: one table from several `--stats-json` files (the demo's last step).

use std::path::PathBuf;

use clap::Args;
use outcore::runtime::format_size;
use serde_json::Value;

#[derive(Args)]
pub struct SummaryArgs {
    /// Files written by `outcore run --stats-json`.
    #[arg(required = true)]
    stats: Vec<PathBuf>,
}

pub fn run(args: SummaryArgs) -> anyhow::Result<()> {
    println!(
        "{:<10} {:<8} {:>10} {:>12} {:>12} {:>11}",
        "algorithm", "engine", "seconds", "bytes read", "peak RSS", "iterations"
    );
    let mut details = Vec::new();
    for path in &args.stats {
        let text =
            std::fs::read_to_string(path).map_err(|e| outcore::Error::io(format!("reading {}", path.display()), e))?;
        let stats: Value = serde_json::from_str(&text).map_err(|e| outcore::Error::Input {
            file: path.clone(),
            line: None,
            message: format!("not a stats file: {e}"),
        })?;
        let num = |k: &str| stats.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let algorithm = stats.get("algorithm").and_then(Value::as_str).unwrap_or("?");
        println!(
            "{:<10} {:<8} {:>10.2} {:>12} {:>12} {:>11}",
            algorithm,
            stats.get("engine").and_then(Value::as_str).unwrap_or("?"),
            num("wall_seconds"),
            format_size(num("bytes_read") as u64),
            format_size(num("peak_rss_bytes") as u64),
            num("iterations") as u64,
        );
        if let Some(summary) = stats.get("summary").and_then(Value::as_object) {
            for line in outcore::report::describe(summary) {
                details.push(format!("{algorithm:<10} {line}"));
            }
        }
    }
    if !details.is_empty() {
        println!();
        for line in details {
            println!("{line}");
        }
    }
    Ok(())
}
