//! `outcore bench ...`: benchmarks that measure an engine's techniques against their baselines
//! in one invocation (DESIGN.md "Tests and benchmarks"). One subcommand per engine.

use clap::{Args, Subcommand};

use super::{bench_auto, bench_cache, bench_shards, bench_stream};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    kind: BenchKind,
}

#[derive(Subcommand)]
enum BenchKind {
    /// Cache engine: orderings × static-cache selections × BFS-like algorithms at equal memory.
    Cache(bench_cache::BenchCacheArgs),
    /// One run of `bench cache` (a child process, for per-run peak RSS).
    #[command(hide = true)]
    CacheRun(bench_cache::BenchCacheRunArgs),
    /// Stream engine: each algorithm under each schedule (selective, full, block): wall time,
    /// bytes read, peak RSS, and the ratios selective/full and selective/block.
    Stream(bench_stream::StreamBenchArgs),
    /// Shards engine: each algorithm under each dynamic-shard policy (off, ads, ods): bytes
    /// read+written, iterations, peak RSS, and the ratios off/ods and off/ads.
    Shards(bench_shards::ShardsBenchArgs),
    /// The planner: per budget and algorithm, `auto`'s engine and time against the fastest
    /// engine measured, with the worst and median ratio.
    Auto(bench_auto::AutoBenchArgs),
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.kind {
        BenchKind::Cache(a) => bench_cache::run(a),
        BenchKind::CacheRun(a) => bench_cache::run_child(a),
        BenchKind::Stream(a) => bench_stream::run(a),
        BenchKind::Shards(a) => bench_shards::run(a),
        BenchKind::Auto(a) => bench_auto::run(a),
    }
}
