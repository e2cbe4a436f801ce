//! `outcore run ALGO`: one algorithm on a store with one engine and budget.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use outcore::algo::{run_algorithm, AlgorithmParams};
use outcore::engine::cache::{CacheOptions, SelectionMethod};
use outcore::engine::nwsm::NwsmOptions;
use outcore::engine::pregel::PregelOptions;
use outcore::engine::shards::{DelayedDelivery, DynamicPolicy, ShardValues, ShardsOptions};
use outcore::engine::stream::{IoMode, Schedule, StreamOptions};
use outcore::engine::{EngineKind, RunOptions, Runner};
use outcore::output::{write_result, OutputFormat, OutputTarget};
use outcore::runtime::{format_size, parse_size, CancelToken};
use outcore::store::Store;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct RunArgs {
    /// The algorithm: bfs, pr, pr-delta, wcc, cdlp, lcc, sssp, diameter, bc, msbfs (see `outcore algorithms`).
    algorithm: String,
    /// The store directory.
    #[arg(long)]
    store: PathBuf,
    /// Engine: auto (default: the fastest expected within --memory, and says why), inmem,
    /// stream, cache, shards, pregel (GraphD; `mpirun -n W` with the `mpi` feature), nwsm
    /// (neighborhood queries). `outcore algorithms` shows which engines run which algorithm.
    #[arg(long, default_value = "auto")]
    engine: String,
    /// Print the planner's table before running: every engine, whether it fits and why,
    /// its memory, expected bytes read and written, and expected seconds.
    #[arg(long)]
    explain: bool,
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
    /// Iterations: pr, cdlp; the most iterations: pr-delta, kmeans (default 100).
    #[arg(long)]
    iterations: Option<usize>,
    /// Number of clusters: kmeans (default 2).
    #[arg(long)]
    k: Option<usize>,
    /// PageRank damping factor.
    #[arg(long)]
    damping: Option<f64>,
    /// Convergence tolerance: pr-delta, katz, eigenvector, hits.
    #[arg(long)]
    tolerance: Option<f64>,
    /// Katz attenuation alpha (default 0.1).
    #[arg(long)]
    alpha: Option<f64>,
    /// Katz weight beta of every vertex's own term (default 1.0).
    #[arg(long)]
    beta: Option<f64>,
    /// Arcs count with their stored weights (the store must be weighted): eigenvector, hits.
    #[arg(long)]
    weighted: bool,
    /// Modularity resolution: louvain (default 1; above 1 smaller communities).
    #[arg(long)]
    resolution: Option<f64>,
    /// Least modularity gain for another level: louvain (default 1e-7).
    #[arg(long)]
    threshold: Option<f64>,
    /// The most levels: louvain (default: no limit).
    #[arg(long)]
    max_level: Option<usize>,
    /// BFS sweeps: diameter (default 4).
    #[arg(long)]
    sweeps: Option<usize>,
    /// Raw values instead of networkx's normalised ones: bc, katz, hits (scaled by the maxima).
    #[arg(long)]
    unnormalized: bool,
    /// How wcc finds components: union-find (one pass over the edges; inmem, stream, cache) or
    /// propagation (label propagation rounds; every engine). Default: the planner chooses.
    #[arg(long, value_parser = ["auto", "union-find", "propagation"])]
    method: Option<String>,
    /// Cache engine: page size in bytes, a multiple of 512 (default 8192). Nwsm engine: slotted
    /// page size (default 64KiB).
    #[arg(long)]
    page_size: Option<String>,
    /// Nwsm engine: ranks p, run in this process over the in-process transport (default 1).
    #[arg(long, default_value_t = 1)]
    ranks: usize,
    /// Cache engine: share of the cache memory given to the static cache (default 0.8).
    #[arg(long)]
    static_cache_share: Option<f64>,
    /// Cache engine: static-cache selection gvs, highd, lowd, random or none (default gvs).
    #[arg(long)]
    static_cache_select: Option<String>,
    /// Cache engine: rounds K of greedy vertex selection (default 16).
    #[arg(long)]
    gvs_rounds: Option<usize>,
    /// No progress bars and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Stream engine: which edges an iteration reads: selective (Redio, default), full
    /// (every edge, X-Stream-like) or block (fixed blocks, GridGraph-like).
    #[arg(long, default_value = "selective")]
    schedule: String,
    /// Stream engine: gap threshold l in bytes, e.g. 64KiB (default: the device's
    /// `outcore calibrate` figure, else 64 KiB).
    #[arg(long)]
    gap_threshold: Option<String>,
    /// Stream engine: auto (O_DIRECT when an iteration's data will not fit the page cache),
    /// direct or buffered.
    #[arg(long, default_value = "auto")]
    io: String,
    /// Stream engine: push in every iteration; by default dense iterations of pr and bfs pull
    /// (scan in-arcs), which is faster.
    #[arg(long)]
    no_pull: bool,
    /// Shards engine: number of intervals P (default: from --memory).
    #[arg(long)]
    shards: Option<usize>,
    /// Shards engine: off (static shards, plain GraphChi), ads (new dynamic shards every
    /// iteration) or ods (default: dynamic shards built in shadow iterations; programs that
    /// apply to every vertex, such as pr, get off).
    #[arg(long)]
    dynamic: Option<String>,
    /// Shards engine, ods: the first shadow iteration runs when the share of updated edges
    /// falls below this (default 0.8 with --delayed-delivery adjacency, 0.30 with shadow).
    #[arg(long)]
    shadow_edge_share: Option<f64>,
    /// Shards engine, ads/ods: a shadow iteration runs when the delay buffer exceeds this,
    /// e.g. 100KiB (the default).
    #[arg(long)]
    delay_buffer: Option<String>,
    /// Shards engine, ads/ods: where the messages of a vertex lacking edges on a dynamic shard
    /// go: adjacency (default: sent at once along the missing edges, read from the store's
    /// adjacency list) or shadow (the paper's rule: wait in the delay buffer for a shadow
    /// iteration).
    #[arg(long)]
    delayed_delivery: Option<String>,
    /// Shards engine: where vertex values live: auto (default: in memory when the run is
    /// static — --dynamic off — and all values fit the budget beside one shard's topology, so
    /// steps read the shards' topology and write nothing), memory, or disk (one interval in
    /// memory at a time, messages in per-edge records: fully external).
    #[arg(long)]
    shards_values: Option<String>,
    /// Pregel engine: largest outgoing message file, e.g. 8MiB (default).
    #[arg(long)]
    message_file_size: Option<String>,
    /// Pregel engine: run on the recoded partition (`outcore partition --recode`).
    #[arg(long)]
    recode: bool,
    /// Pregel engine: save a checkpoint every N supersteps (in the partition's rank directories).
    #[arg(long)]
    checkpoint_every: Option<usize>,
    /// Pregel engine: go on from the last checkpoint of the same run (after a crash or kill).
    #[arg(long)]
    resume: bool,
}

/// The shards engine's options from the flags (defaults where absent).
pub fn shards_options(
    shards: Option<usize>,
    dynamic: Option<&str>,
    shadow_edge_share: Option<f64>,
    delay_buffer: Option<&str>,
    delayed_delivery: Option<&str>,
    values: Option<&str>,
) -> anyhow::Result<ShardsOptions> {
    let defaults = ShardsOptions::default();
    if let Some(share) = shadow_edge_share.filter(|s| !(0.0..=1.0).contains(s)) {
        anyhow::bail!(outcore::Error::invalid(format!("--shadow-edge-share must be in [0, 1], got {share}")));
    }
    Ok(ShardsOptions {
        shards,
        dynamic: dynamic.map(DynamicPolicy::parse).transpose()?,
        shadow_edge_share,
        delay_buffer_bytes: delay_buffer.map(parse_size).transpose()?.unwrap_or(defaults.delay_buffer_bytes),
        delayed_delivery: delayed_delivery
            .map(DelayedDelivery::parse)
            .transpose()?
            .unwrap_or(defaults.delayed_delivery),
        values: values.map(ShardValues::parse).transpose()?.unwrap_or(defaults.values),
    })
}

/// The pregel engine's options from the flags.
fn pregel_options(args: &RunArgs) -> anyhow::Result<PregelOptions> {
    let mut options = PregelOptions {
        recoded: args.recode,
        checkpoint_every: args.checkpoint_every,
        resume: args.resume,
        ..PregelOptions::default()
    };
    if let Some(size) = &args.message_file_size {
        options.message_file_size = Some(parse_size(size)?);
    }
    Ok(options)
}

/// The stream engine's options from the flags.
fn stream_options(args: &RunArgs) -> anyhow::Result<StreamOptions> {
    Ok(StreamOptions {
        schedule: Schedule::parse(&args.schedule)?,
        gap_threshold: args.gap_threshold.as_deref().map(parse_size).transpose()?,
        io: IoMode::parse(&args.io)?,
        pull: !args.no_pull,
        ..StreamOptions::default()
    })
}

/// The cache engine's options from the flags (defaults where absent).
fn cache_options(args: &RunArgs) -> anyhow::Result<CacheOptions> {
    let defaults = CacheOptions::default();
    Ok(CacheOptions {
        page_size: match &args.page_size {
            Some(size) => outcore::runtime::parse_size(size)?,
            None => defaults.page_size,
        },
        static_cache_share: args.static_cache_share.unwrap_or(defaults.static_cache_share),
        selection: match &args.static_cache_select {
            Some(name) => SelectionMethod::parse(name)?,
            None => defaults.selection,
        },
        gvs_rounds: args.gvs_rounds.unwrap_or(defaults.gvs_rounds),
        seed: args.seed.unwrap_or(defaults.seed),
        ..defaults
    })
}

/// Refuses counts that make no sense before any work: `--num-sources 0` would average over
/// no source (NaN), `--iterations 0` computes nothing, a zero page size divides by zero.
fn check_numbers(args: &RunArgs) -> anyhow::Result<()> {
    let zero = |name: &str| Err(outcore::Error::invalid(format!("{name} must be at least 1, got 0")).into());
    if args.num_sources == Some(0) {
        return zero("--num-sources");
    }
    if args.iterations == Some(0) {
        return zero("--iterations");
    }
    if args.sweeps == Some(0) {
        return zero("--sweeps");
    }
    if args.max_level == Some(0) {
        return zero("--max-level");
    }
    if args.resolution.is_some() || args.threshold.is_some() {
        let defaults = outcore::algo::louvain::Config::default();
        outcore::algo::louvain::Config {
            resolution: args.resolution.unwrap_or(defaults.resolution),
            threshold: args.threshold.unwrap_or(defaults.threshold),
            ..defaults
        }
        .validate()?;
    }
    if args.k == Some(0) {
        return zero("--k");
    }
    if args.shards == Some(0) {
        return zero("--shards");
    }
    if args.ranks == 0 {
        return zero("--ranks");
    }
    if args.checkpoint_every == Some(0) {
        return zero("--checkpoint-every");
    }
    if let Some(size) = &args.page_size {
        if parse_size(size)? == 0 {
            return zero("--page-size");
        }
    }
    if let Some(damping) = args.damping {
        if !(0.0..=1.0).contains(&damping) {
            anyhow::bail!(outcore::Error::invalid(format!("--damping must be in [0, 1], got {damping}")));
        }
    }
    if let Some(share) = args.static_cache_share {
        if !(0.0..=1.0).contains(&share) {
            anyhow::bail!(outcore::Error::invalid(format!("--static-cache-share must be in [0, 1], got {share}")));
        }
    }
    Ok(())
}

/// The output format: `--format`, else the output file's extension (an unknown one is refused
/// rather than silently written as text), else text.
fn output_format(args: &RunArgs) -> anyhow::Result<OutputFormat> {
    Ok(match (&args.format, &args.output) {
        (Some(name), _) => OutputFormat::parse(name)?,
        (None, Some(path)) => match OutputFormat::from_path(path) {
            Some(format) => format,
            None if path.extension().is_none() => OutputFormat::Text,
            None => anyhow::bail!(outcore::Error::invalid(format!(
                "--output {}: unknown extension (use .txt, .csv, .tsv or .parquet, optionally .gz/.zst, or give --format)",
                path.display()
            ))),
        },
        (None, None) => OutputFormat::Text,
    })
}

/// Checks before the run that a file can be written at `path`: its directory exists and is
/// writable (a probe file is created and removed), and `path` is not a directory.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    let io = |what: &str, e: std::io::Error| outcore::Error::io(format!("{what} {}", path.display()), e);
    if path.is_dir() {
        anyhow::bail!(outcore::Error::invalid(format!("{} is a directory, not a file", path.display())));
    }
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        anyhow::bail!(outcore::Error::invalid(format!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    tempfile::NamedTempFile::new_in(&dir).map_err(|e| io("cannot write", e))?;
    Ok(())
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
        sweeps: args.sweeps,
        unnormalized: args.unnormalized,
        k: args.k,
        method: args.method.clone(),
        alpha: args.alpha,
        beta: args.beta,
        weighted: args.weighted,
        resolution: args.resolution,
        threshold: args.threshold,
        max_level: args.max_level,
    }
}

pub fn run(args: RunArgs, cancel: &CancelToken) -> anyhow::Result<()> {
    let transport = crate::distributed::transport()?;
    let pregel = pregel_options(&args)?;
    let outcome = run_with(args, pregel, transport.clone(), cancel);
    crate::distributed::abort_on_error(outcome, transport.as_ref())
}

fn run_with(
    args: RunArgs,
    pregel: PregelOptions,
    transport: Option<Arc<dyn outcore::transport::Transport>>,
    cancel: &CancelToken,
) -> anyhow::Result<()> {
    check_numbers(&args)?;
    let format = output_format(&args)?;
    for path in args.output.iter().chain(&args.stats_json) {
        check_writable(path)?;
    }
    let options = RunOptions {
        engine: EngineKind::parse(&args.engine)?,
        memory: super::budget(args.memory.as_ref())?,
        stream: stream_options(&args)?,
        cache: cache_options(&args)?,
        shards: shards_options(
            args.shards,
            args.dynamic.as_deref(),
            args.shadow_edge_share,
            args.delay_buffer.as_deref(),
            args.delayed_delivery.as_deref(),
            args.shards_values.as_deref(),
        )?,
        pregel,
        nwsm: NwsmOptions {
            page_size: match &args.page_size {
                Some(size) => parse_size(size)?,
                None => NwsmOptions::default().page_size,
            },
            ranks: args.ranks,
        },
    };
    if !outcore::store::blocks::CHECKED && !args.quiet {
        eprintln!(
            "warning: this build does not verify block checksums (feature unchecked-blocks, for measurement only)"
        );
    }
    let store = Store::open(&args.store)?;
    prefetch_ids_for_output(&store, options.memory);
    let runner = Runner::new(&store, options)
        .with_progress(Arc::new(TerminalProgress::new(args.quiet && !args.explain)))
        .with_cancel(cancel.clone())
        .with_explain(args.explain);
    // Under `mpirun -n W` this process is one rank (the nwsm engine runs W ranks); rank 0 writes.
    let runner = match transport {
        Some(transport) => runner.with_transport(transport),
        None => runner,
    };
    let writes = runner.transport().is_none_or(|t| t.rank() == 0);
    let result = run_algorithm(&runner, &args.algorithm, &params(&args))?;
    let stats = runner.finish(&args.algorithm);
    let (rank, ranks) = runner.rank();
    // The transport of a job of several ranks (pregel under `mpirun -n W`, W > 1). Rank 0 holds
    // every value and writes the results and figures of the whole job, on the CPUs of every rank
    // of its machine (the others are done).
    let job = runner.transport().filter(|_| ranks > 1);
    let results_pool = match job {
        Some(transport) => outcore::transport::cpus::results_pool(transport.as_ref())?,
        None => None,
    };
    if rank != 0 {
        return Ok(());
    }
    if ranks > 1 && !args.quiet {
        match &results_pool {
            Some(pool) => eprintln!(
                "{ranks} ranks; results and figures from rank 0, written on the {} CPUs of its machine's ranks",
                pool.current_num_threads()
            ),
            None => eprintln!("{ranks} ranks; results and figures from rank 0"),
        }
    }
    let write = || {
        let write_here = || write_outputs(&args, &store, &result, &stats, format, writes);
        match &results_pool {
            Some(pool) => pool.install(write_here),
            None => write_here(),
        }
    };
    match job {
        // The other ranks are done and wait in MPI_Finalize, which waits for every rank and
        // must run on this (the main) thread: rank 0 finalises while another thread writes.
        Some(transport) => std::thread::scope(|scope| {
            let writing = scope.spawn(write);
            transport.finish();
            writing.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        }),
        None => write(),
    }
}

/// The results file (or stdout), the summary lines and the figures of a finished run.
fn write_outputs(
    args: &RunArgs,
    store: &Store,
    result: &outcore::algo::AlgorithmResult,
    stats: &outcore::engine::RunStats,
    format: OutputFormat,
    writes: bool,
) -> anyhow::Result<()> {
    let summary = outcore::report::summarize(result, &store.ids()?)?;
    let target = match &args.output {
        Some(path) => OutputTarget::File(path.clone()),
        None => OutputTarget::Stdout,
    };
    if !writes {
        return Ok(());
    }
    write_result(store, result, &target, format)?;
    if !args.quiet {
        eprintln!(
            "{} on {}: {:.2} s, {} iterations, {} read ({} checksum-verified), peak RSS {} (budget {})",
            args.algorithm,
            stats.engine,
            stats.wall_seconds,
            stats.iterations,
            format_size(stats.bytes_read),
            format_size(stats.bytes_verified),
            format_size(stats.peak_rss_bytes),
            format_size(stats.memory_budget_bytes)
        );
        for line in outcore::report::describe(&summary) {
            eprintln!("  {line}");
        }
    }
    if let Some(path) = &args.stats_json {
        let text =
            serde_json::to_string_pretty(&super::StatsFile { stats, summary: Some(&summary), cpu_seconds: None })?;
        std::fs::write(path, text).map_err(|e| outcore::Error::io(format!("writing {}", path.display()), e))?;
    }
    Ok(())
}

/// Starts reading the id files that writing the results needs while the run computes, when
/// they are small beside the budget (at most an eighth of it; a hint to the kernel's page
/// cache, see `IdMap::prefetch`). On a background thread: the hint may block
/// while it queues the reads.
fn prefetch_ids_for_output(store: &Store, budget: outcore::runtime::MemoryBudget) {
    let Ok(ids) = store.ids() else { return };
    if ids.file_bytes() <= budget.bytes() / 8 {
        std::thread::spawn(move || ids.prefetch());
    }
}
