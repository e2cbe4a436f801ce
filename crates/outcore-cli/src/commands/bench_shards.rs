//! `outcore bench shards`: the shards engine's policies compared in one invocation
//! ("Load the Edges You Need" §6: Baseline vs ADS vs ODS).
//!
//! `outcore bench shards --store DIR` runs each algorithm (default pr-delta to convergence,
//! mssp from 4 sources, wcc) under each policy (`--dynamic off`, `ads`, `ods`) and prints bytes
//! read + written (split into static, dynamic, and shadow-iteration bytes), iterations, shadow
//! iterations, mean edge utilisation, wall and CPU time and peak RSS per run, then the ratios
//! off/ods and off/ads of bytes and iterations. Each run is a child process (this binary
//! re-invoked with hidden `--child-*` arguments) so that its peak RSS is its own; the store's
//! pages are evicted before each run unless `--warm`. The `shards-P` layout is built into the
//! store by the first run that needs it (use a copy of a store you want untouched).

use std::path::PathBuf;
use std::process::Command;

use clap::Args;
use outcore::algo::{run_algorithm, AlgorithmParams};
use outcore::engine::shards::StepKind;
use outcore::engine::{EngineKind, RunOptions, RunStats, Runner, ShardsIteration};
use outcore::generate::{generate_into_store, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::runtime::{format_size, CancelToken, MemoryBudget};
use outcore::store::Store;

use super::bench_stream::{busiest_vertex, cpu_seconds, evict, vm_hwm_bytes};
use super::run::shards_options;

#[derive(Args, Clone)]
pub struct ShardsBenchArgs {
    /// The store to run on (the shards layout is built into it).
    #[arg(long)]
    store: PathBuf,
    /// Algorithms, comma-separated.
    #[arg(long, default_value = "pr-delta,mssp,wcc")]
    algorithms: String,
    /// Policies, comma-separated; `POLICY:DELIVERY` also sets `--delayed-delivery`, e.g.
    /// `off,ads,ods,ods:shadow`.
    #[arg(long, default_value = "off,ads,ods")]
    policies: String,
    /// Memory budget of every run.
    #[arg(long, default_value = "1GiB")]
    memory: String,
    /// Number of intervals (default: from the budget).
    #[arg(long)]
    shards: Option<usize>,
    /// pr-delta tolerance (default: pr-delta's own, 1e-9).
    #[arg(long)]
    tolerance: Option<f64>,
    /// mssp sources: the busiest vertex and this many more sampled (seed 1).
    #[arg(long, default_value_t = 4)]
    mssp_sources: usize,
    /// ODS: share of updated edges below which the first shadow iteration runs.
    #[arg(long)]
    shadow_edge_share: Option<f64>,
    /// ADS/ODS: delay-buffer size that triggers a shadow iteration (default 100KiB).
    #[arg(long)]
    delay_buffer: Option<String>,
    /// Keep the store in the page cache between runs (default: evict before each run).
    #[arg(long)]
    warm: bool,
    /// Generate an RMAT graph of this scale (Graph500: edge factor 16, seed 1, directed,
    /// unweighted) into --store first when it does not exist yet.
    #[arg(long)]
    generate_rmat: Option<u32>,
    /// Also write every run's statistics as a JSON array.
    #[arg(long)]
    json: Option<PathBuf>,
    #[arg(long, hide = true)]
    child_algorithm: Option<String>,
    #[arg(long, hide = true)]
    child_policy: Option<String>,
    #[arg(long, hide = true)]
    child_stats: Option<PathBuf>,
    #[arg(long, hide = true)]
    child_source: Option<String>,
}

pub fn run(args: ShardsBenchArgs) -> anyhow::Result<()> {
    match (&args.child_algorithm, &args.child_policy, &args.child_stats) {
        (Some(algorithm), Some(policy), Some(stats)) => child(&args, algorithm, policy, stats),
        _ => parent(&args),
    }
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// One run, in this (child) process; writes its statistics to `stats_path`.
fn child(args: &ShardsBenchArgs, algorithm: &str, policy: &str, stats_path: &std::path::Path) -> anyhow::Result<()> {
    let store = Store::open(&args.store)?;
    // `ods:shadow` names a policy and a delayed delivery.
    let (policy_name, delivery) = match policy.split_once(':') {
        Some((p, d)) => (p, Some(d)),
        None => (policy, None),
    };
    let options = RunOptions {
        engine: EngineKind::Shards,
        memory: MemoryBudget::parse(&args.memory)?,
        shards: shards_options(
            args.shards,
            Some(policy_name),
            args.shadow_edge_share,
            args.delay_buffer.as_deref(),
            delivery,
            // The policies are compared on the fully external mechanics (edge records): `off`
            // would otherwise keep its values in memory and move no records at all.
            Some("disk"),
        )?,
        ..RunOptions::default()
    };
    let params = AlgorithmParams {
        source: args.child_source.clone(),
        tolerance: args.tolerance,
        num_sources: (algorithm == "mssp").then_some(args.mssp_sources),
        seed: Some(1),
        ..AlgorithmParams::default()
    };
    let runner = Runner::new(&store, options);
    run_algorithm(&runner, algorithm, &params)?;
    let mut stats = runner.finish(algorithm);
    if let Some(hwm) = vm_hwm_bytes() {
        stats.peak_rss_bytes = hwm;
    }
    let file = super::StatsFile { stats: &stats, summary: None, cpu_seconds: cpu_seconds() };
    std::fs::write(stats_path, serde_json::to_vec_pretty(&file)?)?;
    Ok(())
}

/// One run's figures.
struct Measured {
    algorithm: String,
    policy: String,
    child: super::ChildStats,
}

impl Measured {
    fn stats(&self) -> &RunStats {
        &self.child.stats
    }

    fn moved(&self) -> f64 {
        (self.stats().bytes_read + self.stats().bytes_written) as f64
    }

    fn iterations(&self) -> f64 {
        self.stats().iterations as f64
    }

    /// Sum of a per-iteration figure of the shard steps, over all of them or the shadow ones.
    fn per_iteration(&self, figure: fn(&ShardsIteration) -> u64, shadow_only: bool) -> f64 {
        let steps = self.stats().per_iteration.iter().filter_map(|i| i.figures.shards());
        steps.filter(|s| !shadow_only || s.kind == StepKind::Shadow).map(|s| figure(s) as f64).sum()
    }

    fn utilisation(&self) -> f64 {
        self.per_iteration(|s| s.dirty_edges, false) / self.per_iteration(|s| s.edges_loaded, false).max(1.0)
    }
}

fn parent(args: &ShardsBenchArgs) -> anyhow::Result<()> {
    if let (Some(scale), false) = (args.generate_rmat, args.store.exists()) {
        let started = std::time::Instant::now();
        let generator = Rmat::new(RmatConfig::with_scale(scale))?;
        let options = ImportOptions { memory: MemoryBudget::parse(&args.memory)?, ..ImportOptions::default() };
        let progress = crate::progress::TerminalProgress::new(false);
        generate_into_store(generator, &args.store, &options, &progress, &CancelToken::new())?;
        println!(
            "generated rmat scale {scale} into {} in {:.1} s",
            args.store.display(),
            started.elapsed().as_secs_f64()
        );
    }
    let store = Store::open(&args.store)?;
    let budget = MemoryBudget::parse(&args.memory)?;
    let source = busiest_vertex(&store)?;
    println!(
        "shards bench: {} ({} vertices, {} arcs), memory {}, mssp {} sources (seed 1), pr-delta tolerance {}, {}",
        args.store.display(),
        store.num_vertices(),
        store.num_arcs(),
        budget,
        args.mssp_sources,
        args.tolerance.map_or("1e-9 (default)".to_string(), |t| t.to_string()),
        if args.warm { "warm page cache" } else { "page cache evicted before each run" }
    );
    let exe = std::env::current_exe()?;
    let scratch = std::env::temp_dir().join(format!("outcore-bench-shards-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let mut runs = Vec::new();
    println!(
        "{:<9} {:<10} {:>6} {:>6} {:>12} {:>11} {:>11} {:>11} {:>6} {:>8} {:>8} {:>10} {:>6}",
        "algorithm",
        "policy",
        "iters",
        "shadow",
        "read+write",
        "static",
        "dynamic",
        "in shadows",
        "util",
        "wall s",
        "cpu s",
        "peak RSS",
        "≤b+64M"
    );
    for algorithm in list(&args.algorithms) {
        for policy in list(&args.policies) {
            if !args.warm {
                evict(&args.store);
            }
            let stats_path = scratch.join(format!("{algorithm}-{policy}.json"));
            let mut command = Command::new(&exe);
            command
                .args(["bench", "shards", "--store"])
                .arg(&args.store)
                .args(["--memory", &args.memory, "--mssp-sources", &args.mssp_sources.to_string()])
                .args(["--child-algorithm", &algorithm, "--child-policy", &policy, "--child-stats"])
                .arg(&stats_path);
            if matches!(algorithm.as_str(), "sssp" | "bfs") {
                command.args(["--child-source", &source]);
            }
            if let Some(p) = args.shards {
                command.args(["--shards", &p.to_string()]);
            }
            if let Some(t) = args.tolerance {
                command.args(["--tolerance", &t.to_string()]);
            }
            if let Some(s) = args.shadow_edge_share {
                command.args(["--shadow-edge-share", &s.to_string()]);
            }
            if let Some(d) = &args.delay_buffer {
                command.args(["--delay-buffer", d]);
            }
            let status = command.status()?;
            if !status.success() {
                anyhow::bail!("the {algorithm} run with --dynamic {policy} failed ({status})");
            }
            let run = Measured { algorithm: algorithm.clone(), policy, child: super::ChildStats::read(&stats_path)? };
            let rss = run.stats().peak_rss_bytes;
            type Figure = fn(&ShardsIteration) -> u64;
            let by_kind =
                |a: Figure, b: Figure| format_size((run.per_iteration(a, false) + run.per_iteration(b, false)) as u64);
            let moved: [Figure; 4] = [
                |s| s.static_bytes_read,
                |s| s.static_bytes_written,
                |s| s.dynamic_bytes_read,
                |s| s.dynamic_bytes_written,
            ];
            let shadow_bytes: f64 = moved.iter().map(|&f| run.per_iteration(f, true)).sum();
            println!(
                "{:<9} {:<10} {:>6} {:>6} {:>12} {:>11} {:>11} {:>11} {:>6.3} {:>8.2} {:>8.2} {:>10} {:>6}",
                run.algorithm,
                run.policy,
                run.iterations(),
                run.stats().figures.shards.as_ref().and_then(|s| s.shadow_iterations).unwrap_or(0),
                format_size(run.moved() as u64),
                by_kind(|s| s.static_bytes_read, |s| s.static_bytes_written),
                by_kind(|s| s.dynamic_bytes_read, |s| s.dynamic_bytes_written),
                format_size(shadow_bytes as u64),
                run.utilisation(),
                run.stats().wall_seconds,
                run.child.cpu_seconds.unwrap_or(f64::NAN),
                format_size(rss),
                if rss <= budget.bytes() + (64 << 20) { "yes" } else { "NO" }
            );
            runs.push(run);
        }
    }
    println!("\nratios (bytes read+written, iterations, wall time):");
    for algorithm in list(&args.algorithms) {
        let find = |p: &str| runs.iter().find(|r| r.algorithm == algorithm && r.policy == p);
        let Some(off) = find("off") else { continue };
        for o in runs.iter().filter(|r| r.algorithm == algorithm && r.policy != "off") {
            println!(
                "  {algorithm:<9} off/{:<10}  bytes {:.3}  iterations {:.3}  wall {:.3}",
                o.policy,
                off.moved() / o.moved().max(1.0),
                off.iterations() / o.iterations().max(1.0),
                off.stats().wall_seconds / o.stats().wall_seconds.max(1e-9)
            );
        }
    }
    if let Some(path) = &args.json {
        let all: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| serde_json::json!({"algorithm": r.algorithm, "policy": r.policy, "stats": r.child.json}))
            .collect();
        std::fs::write(path, serde_json::to_vec_pretty(&all)?)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}
