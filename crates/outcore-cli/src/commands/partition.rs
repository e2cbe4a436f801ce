//! `outcore partition`: the per-rank layouts of the distributed engines.
//!
//! * `--store DIR --ranks W [--recode]`: GraphD's partition for the `pregel` engine
//!   (`DIR/parts-W[-recoded]/rank-i/`, see `outcore::engine::pregel::partition`).
//! * `--store DIR --bbp --ranks p [--memory] [--page-size] [--q]`: TurboGraph++'s balanced
//!   buffer-aware partitioning (SIGMOD '18 §3) into `bbp-{p}-{q}` for `run --engine nwsm`:
//!   vertices dealt round-robin by degree to p ranks and renumbered, edges in q × pq chunks of
//!   slotted pages; q from the memory budget (Theorem 4.1) unless given. The nwsm engine builds
//!   the layout itself when it is missing; this command builds it ahead of time.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use outcore::engine::nwsm::{self, plan_memory, DEFAULT_PAGE_SIZE};
use outcore::engine::pregel::partition;
use outcore::runtime::{format_size, parse_size, CancelToken, MemoryBudget, Progress};
use outcore::store::Store;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct PartitionArgs {
    /// The store directory.
    #[arg(long)]
    store: PathBuf,
    /// Number of ranks (processes of `mpirun -n W`, or in-process ranks of the nwsm engine).
    #[arg(long, default_value_t = 1)]
    ranks: usize,
    /// Pregel: GraphD ID recoding, names W·pos + rank, for in-memory combining (`run --recode`).
    #[arg(long, conflicts_with = "bbp")]
    recode: bool,
    /// Balanced buffer-aware partitioning (TurboGraph++) for the nwsm engine instead of the
    /// pregel engine's partition.
    #[arg(long)]
    bbp: bool,
    /// Memory budget, e.g. 512MiB (default: a quarter of RAM). With --bbp: the budget of the
    /// queries the layout is for (per process), which also bounds the partitioning.
    #[arg(long)]
    memory: Option<String>,
    /// --bbp: slotted page size (default 64KiB).
    #[arg(long, requires = "bbp")]
    page_size: Option<String>,
    /// --bbp: vertex ranges per rank q (default: the smallest the budget allows for 2-level queries).
    #[arg(long, requires = "bbp")]
    q: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: PartitionArgs, cancel: &CancelToken) -> anyhow::Result<()> {
    // Started under mpirun by mistake: one process partitions, the others have nothing to do.
    if let Some(rank) = std::env::var("OMPI_COMM_WORLD_RANK").ok().filter(|r| r != "0") {
        eprintln!("rank {rank}: partitioning runs on rank 0 only");
        return Ok(());
    }
    let memory = match &args.memory {
        Some(m) => MemoryBudget::parse(m)?,
        None => MemoryBudget::default_for_machine(),
    };
    let store = Store::open(&args.store)?;
    if args.bbp {
        return balanced_buffer_aware(&args, &store, memory, cancel);
    }
    let progress: Arc<dyn Progress> = Arc::new(TerminalProgress::new(args.quiet));
    let info = partition::partition(&store, args.ranks, args.recode, memory, progress.as_ref(), cancel)?;
    if !args.quiet {
        let dir = partition::partition_dir(&store, args.ranks, args.recode);
        eprintln!("partitioned into {} ranks ({:?} names) in {}", info.ranks, info.naming, dir.display());
        for (rank, part) in info.parts.iter().enumerate() {
            let arcs = part.out_arcs + part.in_arcs;
            eprintln!(
                "  rank {rank}: {} vertices, {} out-arcs, {} in-arcs, about {}",
                part.vertices,
                part.out_arcs,
                part.in_arcs,
                format_size(part.vertices * partition::VERTEX_RECORD_BYTES + arcs * info.arc_bytes())
            );
        }
    }
    Ok(())
}

/// `--bbp`: the nwsm engine's layout.
fn balanced_buffer_aware(
    args: &PartitionArgs,
    store: &Store,
    memory: MemoryBudget,
    cancel: &CancelToken,
) -> anyhow::Result<()> {
    let page_size = match &args.page_size {
        Some(size) => parse_size(size)?,
        None => DEFAULT_PAGE_SIZE,
    };
    let q = match args.q {
        Some(q) => q,
        None => plan_memory(store.num_vertices(), args.ranks.max(1), 2, page_size, memory.bytes(), 1)?.q,
    };
    let started = std::time::Instant::now();
    let progress = TerminalProgress::new(args.quiet);
    let layout = nwsm::partition::build(store, args.ranks, q, page_size, memory, &progress, cancel)?;
    let bytes = Store::open(&args.store)?.manifest().layout_bytes(&layout.name);
    let pages: u64 = layout.pages_per_rank.iter().sum();
    eprintln!(
        "built {} in {:.1} s: p = {}, q = {}, {} pages of {} ({}), max degree {}, Σ deg² = {}",
        layout.name,
        started.elapsed().as_secs_f64(),
        layout.p,
        layout.q,
        pages,
        format_size(page_size),
        format_size(bytes),
        layout.max_degree,
        layout.sum_degree_squared
    );
    Ok(())
}
