//! `outcore bench auto`: how good the planner's choices are. For every budget and algorithm it
//! runs `auto` and every engine that runs the algorithm (`outcore algorithms`), each as a child
//! `outcore run` with the page cache of the store evicted first, and prints the engine `auto`
//! chose, its time, the fastest engine measured and its time, and their ratio; then the worst
//! and median ratio over all cases (issue 14's acceptance: worst ≤ 1.5, median ≤ 1.1).
//!
//! `auto` runs first in each case, and then every engine with a limit of
//! [`CAP_FACTOR`] × `auto`'s time (plus a second): an engine still running then is slower than
//! `auto`, so it cannot be the fastest, and stopping it keeps a whole RMAT-20 sweep near twenty
//! minutes instead of seventy. Such a run prints as `>T` (T its limit).
//!
//! A run that built a layout (shards-P, parts-W, bbp-p-q, ...) on first use is run again and
//! its second time counts, so that neither side of the ratio pays for a build; an engine stopped
//! at its limit while building (its `.NAME.building-PID` directory is left in the store) builds
//! with the full `--timeout` first. When any engine built a layout, `auto` runs again, since
//! the layout may change what it plans, as on a store used before. A run that exceeds
//! `--timeout` is stopped and counts as slower than it; a run that fails keeps the last line it
//! wrote to stderr, which the JSON records.
//!
//! Single runs on a noisy machine differ by a third and more below a second, so where `auto`
//! was not the fastest, `auto` and the fastest engine run `--rounds` times each, alternately,
//! and their medians make the ratio.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Args;
use outcore::algo::support::support_matrix;
use outcore::store::Store;

use super::bench_stream::{busiest, evict};

#[derive(Args)]
pub struct AutoBenchArgs {
    /// The store.
    #[arg(long)]
    store: PathBuf,
    /// Budgets, comma separated.
    #[arg(long, default_value = "64MiB,384MiB,4GiB")]
    budgets: String,
    /// Algorithms, comma separated (default: every algorithm but kmeans, which needs points).
    #[arg(long)]
    algorithms: Option<String>,
    /// Most seconds one run may take.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// PageRank and CDLP iterations.
    #[arg(long, default_value_t = 10)]
    iterations: usize,
    /// Write every measurement as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Runs of `auto` and of the fastest engine (alternately; medians) where `auto` was slower.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// The limit of an engine's run, as a multiple of `auto`'s time: one slower than this would not
/// change the ratio by being measured to the end (the acceptance's worst ratio is 1.5).
const CAP_FACTOR: f64 = 1.5;

/// One child run: its engine (as asked and as run), wall seconds, whether it finished.
#[derive(Debug, Clone, serde::Serialize)]
struct Measured {
    asked: String,
    engine: String,
    seconds: f64,
    finished: bool,
    peak_rss_bytes: u64,
    bytes_read: u64,
    /// The derived layout the run built first, if any.
    built: Option<String>,
    /// Why the run did not finish: the last line of its stderr, or the timeout.
    failure: Option<String>,
    /// The run was stopped at the limit that `auto`'s time set (so it is slower than `auto`).
    capped: bool,
}

pub fn run(args: AutoBenchArgs) -> anyhow::Result<()> {
    let store = Store::open(&args.store)?;
    let busiest = busiest(&store)?;
    // Katz converges when alpha is below 1 / the largest eigenvalue, which the largest
    // out-degree bounds: half of that converges in a few dozen iterations on any graph (a
    // fixed alpha either diverges on large R-MAT graphs or runs to the iteration cap).
    let katz_alpha = (0.5 / busiest.out_degree.max(1) as f64).to_string();
    let matrix = support_matrix()?;
    let algorithms: Vec<String> = match &args.algorithms {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => matrix.iter().map(|r| r.name.to_string()).filter(|n| n != "kmeans").collect(),
    };
    let scratch = std::env::temp_dir().join(format!("outcore-bench-auto-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    println!(
        "{:<9} {:<9} {:<8} {:>9} {:<8} {:>9} {:>6}  others",
        "budget", "algorithm", "auto", "seconds", "fastest", "seconds", "ratio"
    );
    let (mut ratios, mut all, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for budget in args.budgets.split(',') {
        for algorithm in &algorithms {
            let Some(row) = matrix.iter().find(|r| r.name == algorithm) else {
                anyhow::bail!(outcore::Error::invalid(format!("unknown algorithm {algorithm}")));
            };
            let case = Case {
                args: &args,
                scratch: &scratch,
                algorithm,
                budget,
                source: &busiest.original,
                katz_alpha: &katz_alpha,
            };
            let mut auto = case.measure("auto", None)?;
            let cap = auto.finished.then_some(auto.seconds * CAP_FACTOR + 1.0);
            let runs: Vec<Measured> = row
                .engines
                .iter()
                .filter(|(_, runs_it)| *runs_it)
                .map(|(engine, _)| case.measure(engine.name(), cap))
                .collect::<anyhow::Result<_>>()?;
            if runs.iter().any(|r| r.built.is_some()) {
                auto = case.measure("auto", None)?;
            }
            let mut fastest =
                runs.iter().filter(|r| r.finished).min_by(|a, b| a.seconds.total_cmp(&b.seconds)).cloned();
            if let Some(f) = fastest.as_mut().filter(|f| auto.finished && f.seconds < auto.seconds) {
                case.settle(&mut auto, f)?;
            }
            let others: Vec<String> = runs
                .iter()
                .map(|r| {
                    let time = match (r.finished, r.capped) {
                        (true, _) => format!("{:.2}", r.seconds),
                        (false, true) => format!(">{:.2}", r.seconds),
                        (false, false) => "-".into(),
                    };
                    format!("{}:{time}", r.asked)
                })
                .collect();
            let (fastest_name, fastest_seconds, ratio) = match (&fastest, auto.finished) {
                (Some(f), true) => (f.asked.clone(), f.seconds, auto.seconds / f.seconds.max(1e-3)),
                (Some(f), false) => (f.asked.clone(), f.seconds, f64::INFINITY),
                (None, _) => ("none".into(), f64::NAN, f64::NAN),
            };
            if ratio.is_finite() || ratio.is_infinite() {
                ratios.push(ratio);
            }
            if let Some(why) = &auto.failure {
                failures.push(format!("{budget} {algorithm}: auto: {why}"));
            }
            println!(
                "{:<9} {:<9} {:<8} {:>9} {:<8} {:>9.2} {:>6.2}  {}",
                budget,
                algorithm,
                auto.engine,
                if auto.finished { format!("{:.2}", auto.seconds) } else { "failed".into() },
                fastest_name,
                fastest_seconds,
                ratio,
                others.join(" ")
            );
            all.push(serde_json::json!({"budget": budget, "algorithm": algorithm, "auto": auto, "engines": runs}));
        }
    }
    if !failures.is_empty() {
        println!("\nauto did not finish:\n  {}", failures.join("\n  "));
    }
    ratios.sort_by(f64::total_cmp);
    if let (Some(worst), false) = (ratios.last(), ratios.is_empty()) {
        println!("\n{} cases: auto / fastest worst {:.2}, median {:.2}", ratios.len(), worst, ratios[ratios.len() / 2]);
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&all)?)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// Whether a stopped run left a layout half-built in the store (`.NAME.building-PID`, which the
/// next open of the store clears).
fn left_a_build(store: &Path) -> bool {
    std::fs::read_dir(store)
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().contains(".building-")))
        .unwrap_or(false)
}

/// One algorithm at one budget: what every run of the case shares.
struct Case<'a> {
    args: &'a AutoBenchArgs,
    scratch: &'a Path,
    algorithm: &'a str,
    budget: &'a str,
    /// The source vertex of single-source algorithms (original id).
    source: &'a str,
    /// Katz's `--alpha`.
    katz_alpha: &'a str,
}

impl Case<'_> {
    /// Measures one engine (or `auto`) within `cap` seconds (None: the `--timeout`): once, or,
    /// when the run built a layout first, again once the layout is there.
    fn measure(&self, engine: &str, cap: Option<f64>) -> anyhow::Result<Measured> {
        let run = self.child(engine, cap)?;
        let stopped_building = run.capped && left_a_build(&self.args.store);
        if stopped_building {
            // Build with the full timeout; the measurement is the run after it.
            let built = self.child(engine, None)?;
            if !built.finished {
                return Ok(built);
            }
        } else if !(run.finished && run.built.is_some()) {
            return Ok(run);
        }
        let mut again = self.child(engine, cap)?;
        again.built = again.built.or(run.built).or_else(|| stopped_building.then(|| "a layout".into()));
        Ok(again)
    }

    /// Runs `auto` and `fastest` again, alternately, to `--rounds` runs each, and keeps each
    /// one's median time (a run that does not finish counts as the timeout).
    fn settle(&self, auto: &mut Measured, fastest: &mut Measured) -> anyhow::Result<()> {
        let (mut auto_times, mut fastest_times) = (vec![auto.seconds], vec![fastest.seconds]);
        let time = |m: Measured| if m.finished { m.seconds } else { self.args.timeout as f64 };
        for _ in 1..self.args.rounds {
            auto_times.push(time(self.child("auto", None)?));
            fastest_times.push(time(self.child(&fastest.asked, None)?));
        }
        auto.seconds = median(auto_times);
        fastest.seconds = median(fastest_times);
        Ok(())
    }

    /// Runs `outcore run` once, cold, within `cap` seconds (None: the `--timeout`), and reads
    /// back its figures.
    fn child(&self, engine: &str, cap: Option<f64>) -> anyhow::Result<Measured> {
        let Case { args, scratch, algorithm, budget, source, katz_alpha } = *self;
        evict(&args.store);
        let stats = scratch.join(format!("{algorithm}-{engine}-{budget}.json"));
        let _ = std::fs::remove_file(&stats);
        let mut command = Command::new(std::env::current_exe()?);
        command
            .args(["run", algorithm, "--store"])
            .arg(&args.store)
            .args(["--memory", budget, "--engine", engine, "-q", "-o", "/dev/null", "--stats-json"])
            .arg(&stats);
        let iterations = args.iterations.to_string();
        let extra: &[&str] = match algorithm {
            "bfs" | "sssp" | "bfs-parents" => &["--source", source],
            "bc" | "msbfs" | "mssp" | "heat" | "bp" => &["--num-sources", "4", "--seed", "1"],
            "pr" | "cdlp" => &["--iterations", &iterations],
            // The default alpha 0.1 diverges on R-MAT graphs (see `run`).
            "katz" => &["--alpha", katz_alpha],
            _ => &[],
        };
        command.args(extra);
        let errors = scratch.join(format!("{algorithm}-{engine}-{budget}.stderr"));
        let started = Instant::now();
        let mut child = command.stderr(std::fs::File::create(&errors)?).spawn()?;
        let deadline =
            cap.map_or(Duration::from_secs(args.timeout), |c| Duration::from_secs_f64(c.min(args.timeout as f64)));
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if started.elapsed() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let seconds = started.elapsed().as_secs_f64();
        let finished = status.is_some_and(|s| s.success());
        let figures: serde_json::Value =
            if finished { serde_json::from_slice(&std::fs::read(&stats)?)? } else { serde_json::Value::Null };
        let number = |k: &str| figures[k].as_u64().unwrap_or(0);
        let capped = status.is_none() && cap.is_some_and(|c| c < args.timeout as f64);
        let failure = match status {
            None if capped => Some(format!("stopped after {seconds:.1} s, slower than auto")),
            None => Some(format!("stopped after the {} s timeout", args.timeout)),
            Some(_) if !finished => Some(last_line(&errors)),
            Some(_) => None,
        };
        Ok(Measured {
            asked: engine.to_string(),
            engine: figures["engine"].as_str().unwrap_or(if finished { engine } else { "-" }).to_string(),
            seconds,
            finished,
            peak_rss_bytes: number("peak_rss_bytes"),
            bytes_read: number("bytes_read"),
            built: figures["plan"]["builds"].as_str().map(str::to_string),
            failure,
            capped,
        })
    }
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The last non-empty line of a file (a failed run's error).
fn last_line(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").to_string()
}
