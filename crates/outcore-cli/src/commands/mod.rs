//! One module per subcommand. Each turns its clap arguments into library calls; none holds
//! logic the Python package would also need (that belongs in the library).

pub mod algorithms;
pub mod bench;
pub mod bench_auto;
pub mod bench_cache;
pub mod bench_shards;
pub mod bench_stream;
pub mod calibrate;
pub mod generate;
pub mod import;
pub mod info;
pub mod layout;
pub mod partition;
pub mod reorder;
pub mod report;
pub mod run;
pub mod summary;
pub mod validate;

use outcore::runtime::MemoryBudget;

/// The `--memory` budget (default: a quarter of RAM). A budget beyond what the machine (or
/// its cgroup) has is lowered to three quarters of that, with one warning line, rather than
/// aborting on the first large buffer.
pub fn budget(text: Option<&String>) -> anyhow::Result<MemoryBudget> {
    let Some(text) = text else {
        return Ok(MemoryBudget::default_for_machine());
    };
    let (budget, lowered) = MemoryBudget::parse(text)?.within_machine();
    if lowered {
        eprintln!("warning: --memory {text} is more than this machine has; using {budget}");
    }
    Ok(budget)
}

/// A `--stats-json` file: the run's figures ([`outcore::engine::RunStats`]) and the keys the
/// front end adds beside them.
#[derive(serde::Serialize)]
pub struct StatsFile<'a> {
    #[serde(flatten)]
    pub stats: &'a outcore::engine::RunStats,
    /// The result's summary (`run`; [`outcore::report::summarize`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// CPU seconds of the process, user and system (benchmark children).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
}

/// A benchmark child's [`StatsFile`] read back: its typed figures, and the file as written (the
/// parent's `--json` output repeats it whole).
pub struct ChildStats {
    pub stats: outcore::engine::RunStats,
    /// The child's CPU seconds, user and system.
    pub cpu_seconds: Option<f64>,
    pub json: serde_json::Value,
}

impl ChildStats {
    pub fn read(path: &std::path::Path) -> anyhow::Result<ChildStats> {
        #[derive(serde::Deserialize)]
        struct Figures {
            #[serde(flatten)]
            stats: outcore::engine::RunStats,
            cpu_seconds: Option<f64>,
        }
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path)?)?;
        let Figures { stats, cpu_seconds } = serde::Deserialize::deserialize(&json)?;
        Ok(ChildStats { stats, cpu_seconds, json })
    }
}
