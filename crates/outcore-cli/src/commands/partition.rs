//! `outcore partition --bbp`: TurboGraph++'s balanced buffer-aware partitioning (SIGMOD '18 §3)
//! of a store into `bbp-{p}-{q}` — vertices dealt round-robin by degree to p ranks and
//! renumbered, edges in q × pq chunks of slotted pages — for `run --engine nwsm --ranks p`.
//! q comes from the memory budget (Theorem 4.1) unless given. The engine builds the layout
//! itself when it is missing; this command builds it ahead of time (and reports its figures).

use std::path::PathBuf;

use clap::Args;
use outcore::engine::nwsm::{partition, plan_memory, DEFAULT_PAGE_SIZE};
use outcore::runtime::{format_size, parse_size, CancelToken, MemoryBudget};
use outcore::store::Store;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct PartitionArgs {
    /// The store to partition.
    #[arg(long)]
    store: PathBuf,
    /// Balanced buffer-aware partitioning (TurboGraph++) for the nwsm engine.
    #[arg(long)]
    bbp: bool,
    /// Ranks p.
    #[arg(long, default_value_t = 1)]
    ranks: usize,
    /// Memory budget of the queries the layout is for (per process), e.g. 256MiB (default: a
    /// quarter of RAM); also bounds the partitioning itself.
    #[arg(long)]
    memory: Option<String>,
    /// Slotted page size (default 64KiB).
    #[arg(long)]
    page_size: Option<String>,
    /// Vertex ranges per rank q (default: the smallest the budget allows for 2-level queries).
    #[arg(long)]
    q: Option<usize>,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: PartitionArgs, cancel: &CancelToken) -> anyhow::Result<()> {
    if !args.bbp {
        return Err(outcore::Error::invalid("say which partitioning: --bbp (the only one this command builds)").into());
    }
    let store = Store::open(&args.store)?;
    let memory = match &args.memory {
        Some(m) => MemoryBudget::parse(m)?,
        None => MemoryBudget::default_for_machine(),
    };
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
    let layout = partition::build(&store, args.ranks, q, page_size, memory, &progress, cancel)?;
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
