//! `outcore bench stream`: the stream engine's schedules compared in one invocation.
//!
//! `outcore bench stream --store DIR` runs each algorithm (default bfs, wcc, pr with 20
//! iterations) under each schedule of the stream engine (selective, full, block) and prints
//! wall time, bytes read and peak RSS per run, then the ratios selective/full and
//! selective/block. Each run is a child process (this binary re-invoked with hidden
//! `--child-*` arguments) so that its peak RSS is its own, and the store's pages are evicted
//! from the page cache before each run (`--warm` keeps them) so runs start alike.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use outcore::algo::{run_algorithm, AlgorithmParams};
use outcore::engine::stream::{IoMode, Schedule, StreamOptions};
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::generate::{generate_into_store, Rmat, RmatConfig};
use outcore::ingest::ImportOptions;
use outcore::runtime::{format_size, parse_size, CancelToken, MemoryBudget};
use outcore::store::{Direction, Store};

#[derive(Args, Clone)]
pub struct StreamBenchArgs {
    /// The store to run on.
    #[arg(long)]
    store: PathBuf,
    /// Algorithms, comma-separated.
    #[arg(long, default_value = "bfs,wcc,pr")]
    algorithms: String,
    /// Schedules, comma-separated.
    #[arg(long, default_value = "selective,full,block")]
    schedules: String,
    /// Memory budget of every run.
    #[arg(long, default_value = "1GiB")]
    memory: String,
    /// I/O mode: auto, direct or buffered.
    #[arg(long, default_value = "direct")]
    io: String,
    /// PageRank iterations.
    #[arg(long, default_value_t = 20)]
    pr_iterations: usize,
    /// Source of bfs/sssp (original id; default: the vertex of largest out-degree).
    #[arg(long)]
    source: Option<String>,
    /// Gap threshold l in bytes (default: the device's calibration, else 64 KiB).
    #[arg(long)]
    gap_threshold: Option<String>,
    /// Block size of the block schedule (default 1 MiB).
    #[arg(long)]
    block_size: Option<String>,
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
    child_schedule: Option<String>,
    #[arg(long, hide = true)]
    child_stats: Option<PathBuf>,
}

pub fn run(args: StreamBenchArgs) -> anyhow::Result<()> {
    match (&args.child_algorithm, &args.child_schedule, &args.child_stats) {
        (Some(algorithm), Some(schedule), Some(stats)) => stream_child(&args, algorithm, schedule, stats),
        _ => stream_parent(&args),
    }
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// One run, in this (child) process; writes its statistics to `stats_path`.
fn stream_child(args: &StreamBenchArgs, algorithm: &str, schedule: &str, stats_path: &Path) -> anyhow::Result<()> {
    let store = Store::open(&args.store)?;
    let options = RunOptions {
        engine: EngineKind::Stream,
        memory: MemoryBudget::parse(&args.memory)?,
        stream: StreamOptions {
            schedule: Schedule::parse(schedule)?,
            io: IoMode::parse(&args.io)?,
            gap_threshold: args.gap_threshold.as_deref().map(parse_size).transpose()?,
            block_bytes: args
                .block_size
                .as_deref()
                .map(parse_size)
                .transpose()?
                .unwrap_or(StreamOptions::default().block_bytes),
            ..StreamOptions::default()
        },
        ..RunOptions::default()
    };
    let params = AlgorithmParams {
        source: args.source.clone(),
        iterations: (algorithm == "pr").then_some(args.pr_iterations),
        // The schedules compared are those of label propagation (union-find reads every edge once).
        method: (algorithm == "wcc").then(|| "propagation".to_string()),
        ..AlgorithmParams::default()
    };
    let runner = Runner::new(&store, options);
    run_algorithm(&runner, algorithm, &params)?;
    let mut stats = runner.finish(algorithm);
    // getrusage's peak survives exec (Linux folds the parent's mm into it), so a child forked
    // from a large parent would report the parent's peak; VmHWM is this image's own.
    if let Some(hwm) = vm_hwm_bytes() {
        stats.peak_rss_bytes = hwm;
    }
    let file = super::StatsFile { stats: &stats, summary: None, cpu_seconds: cpu_seconds() };
    std::fs::write(stats_path, serde_json::to_vec_pretty(&file)?)?;
    Ok(())
}

/// Peak resident set of this process image (`VmHWM` in /proc/self/status).
pub(crate) fn vm_hwm_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line["VmHWM:".len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// User + system CPU time of this process so far (all threads, exited ones included), from
/// /proc/self/stat in clock ticks of 1/100 s (USER_HZ). On a shared machine this moves less
/// with other people's load than wall time does.
pub(crate) fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat(5) (utime, stime) are 12 and 13 after the state field.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// The original id of the vertex with the most out-edges.
pub(crate) fn busiest_vertex(store: &Store) -> anyhow::Result<String> {
    Ok(busiest(store)?.original)
}

/// The vertex with the most out-edges.
pub(crate) struct Busiest {
    /// Its original id.
    pub original: String,
    /// Its out-degree: the largest row sum of the adjacency matrix, which bounds its largest
    /// eigenvalue.
    pub out_degree: u64,
}

/// The vertex with the most out-edges, from csr-out's offsets (streamed).
pub(crate) fn busiest(store: &Store) -> anyhow::Result<Busiest> {
    let csr = store.csr(Direction::Out)?;
    let n = csr.vertices;
    let chunk = 1u64 << 16;
    let mut buf = vec![0u64; chunk as usize + 1];
    let (mut best, mut best_degree) = (0u64, 0u64);
    let mut first = 0;
    while first < n {
        let count = chunk.min(n - first);
        csr.read_offsets(first, &mut buf[..count as usize + 1])?;
        for (i, w) in buf[..count as usize + 1].windows(2).enumerate() {
            if w[1] - w[0] > best_degree {
                best_degree = w[1] - w[0];
                best = first + i as u64;
            }
        }
        first += count;
    }
    Ok(Busiest { original: store.ids()?.original(best)?.to_string(), out_degree: best_degree })
}

/// Evicts every file of the store from the page cache.
pub(crate) fn evict(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            evict(&path);
        } else if let Ok(file) = File::open(&path) {
            outcore::runtime::direct::drop_from_os_cache(&file, 0, 0);
        }
    }
}

/// One run's `--stats-json` figures.
struct Measured {
    algorithm: String,
    schedule: String,
    child: super::ChildStats,
}

fn stream_parent(args: &StreamBenchArgs) -> anyhow::Result<()> {
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
    let source = match &args.source {
        Some(s) => s.clone(),
        None => busiest_vertex(&store)?,
    };
    let edge_bytes = store.csr(Direction::Out)?.targets.len();
    println!(
        "stream bench: {} ({} vertices, {} arcs, csr-out targets {}), memory {}, io {}, bfs source {source}, pr {} iterations, {}",
        args.store.display(),
        store.num_vertices(),
        store.num_arcs(),
        format_size(edge_bytes),
        budget,
        args.io,
        args.pr_iterations,
        if args.warm { "warm page cache" } else { "page cache evicted before each run" }
    );
    let exe = std::env::current_exe()?;
    let scratch = std::env::temp_dir().join(format!("outcore-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let mut runs = Vec::new();
    println!(
        "{:<10} {:<10} {:>9} {:>8} {:>6} {:>12} {:>9} {:>11} {:>6}",
        "algorithm", "schedule", "wall s", "cpu s", "iters", "bytes read", "× file", "peak RSS", "≤ b+64M"
    );
    for algorithm in list(&args.algorithms) {
        for schedule in list(&args.schedules) {
            if !args.warm {
                evict(&args.store);
            }
            let stats_path = scratch.join(format!("{algorithm}-{schedule}.json"));
            let mut command = Command::new(&exe);
            command
                .args(["bench", "stream", "--store"])
                .arg(&args.store)
                .args(["--memory", &args.memory, "--io", &args.io, "--source", &source])
                .args(["--pr-iterations", &args.pr_iterations.to_string()])
                .args(["--child-algorithm", &algorithm, "--child-schedule", &schedule, "--child-stats"])
                .arg(&stats_path);
            if let Some(g) = &args.gap_threshold {
                command.args(["--gap-threshold", g]);
            }
            if let Some(b) = &args.block_size {
                command.args(["--block-size", b]);
            }
            let status = command.status()?;
            if !status.success() {
                anyhow::bail!("the {algorithm} run under the {schedule} schedule failed ({status})");
            }
            let run = Measured { algorithm: algorithm.clone(), schedule, child: super::ChildStats::read(&stats_path)? };
            let stats = &run.child.stats;
            let (bytes, rss) = (stats.bytes_read, stats.peak_rss_bytes);
            println!(
                "{:<10} {:<10} {:>9.2} {:>8.2} {:>6} {:>12} {:>9.2} {:>11} {:>6}",
                run.algorithm,
                run.schedule,
                stats.wall_seconds,
                run.child.cpu_seconds.unwrap_or(f64::NAN),
                stats.iterations,
                format_size(bytes),
                bytes as f64 / edge_bytes.max(1) as f64,
                format_size(rss),
                if rss <= budget.bytes() + (64 << 20) { "yes" } else { "NO" }
            );
            runs.push(run);
        }
    }
    println!("\nratios (bytes read, wall time, CPU time):");
    for algorithm in list(&args.algorithms) {
        let find = |s: &str| runs.iter().find(|r| r.algorithm == algorithm && r.schedule == s);
        let Some(selective) = find("selective") else { continue };
        for other in ["full", "block"] {
            if let Some(o) = find(other) {
                println!(
                    "  {algorithm:<10} selective/{other:<6} bytes {:.3}  wall {:.3}  cpu {:.3}",
                    selective.child.stats.bytes_read as f64 / (o.child.stats.bytes_read as f64).max(1.0),
                    selective.child.stats.wall_seconds / o.child.stats.wall_seconds.max(1e-9),
                    selective.child.cpu_seconds.unwrap_or(0.0) / o.child.cpu_seconds.unwrap_or(0.0).max(1e-9)
                );
            }
        }
    }
    if let Some(path) = &args.json {
        let all: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| serde_json::json!({"algorithm": r.algorithm, "schedule": r.schedule, "stats": r.child.json}))
            .collect();
        std::fs::write(path, serde_json::to_vec_pretty(&all)?)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}
