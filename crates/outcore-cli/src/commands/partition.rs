//! `outcore partition`: the per-rank layouts of the distributed engines.
//!
//! * `--store DIR --ranks W [--recode]`: GraphD's partition for the `pregel` engine
//!   (`DIR/parts-W[-recoded]/rank-i/`, see `outcore::engine::pregel::partition`), a W-rank job:
//!   W threads of this process, or under `mpirun -n W` one rank per process (`--ranks` then
//!   defaults to the world size), every rank writing its own `rank-i/` in parallel.
//! * `--store DIR --bbp --ranks p [--memory] [--page-size] [--q]`: TurboGraph++'s balanced
//!   buffer-aware partitioning (SIGMOD '18 §3) into `bbp-{p}-{q}` for `run --engine nwsm`:
//!   vertices dealt round-robin by degree to p ranks and renumbered, edges in q × pq chunks of
//!   slotted pages; q from the memory budget (Theorem 4.1) unless given. The nwsm engine builds
//!   the layout itself when it is missing; this command builds it ahead of time.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use outcore::engine::nwsm::{self, plan_memory, DEFAULT_PAGE_SIZE};
use outcore::engine::pregel::partition::{self, PartitionJob, RankFigures};
use outcore::runtime::{format_size, parse_size, CancelToken, MemoryBudget, NoProgress, Progress};
use outcore::store::Store;
use outcore::transport::Transport;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct PartitionArgs {
    /// The store directory.
    #[arg(long)]
    store: PathBuf,
    /// Number of ranks W (default: the world size under `mpirun -n W`, else 1). Pregel: the
    /// ranks of the job are W threads of this process, or the W processes of `mpirun -n W`.
    #[arg(long)]
    ranks: Option<usize>,
    /// Pregel: GraphD ID recoding, names W·pos + rank, for in-memory combining (`run --recode`).
    #[arg(long, conflicts_with = "bbp")]
    recode: bool,
    /// Balanced buffer-aware partitioning (TurboGraph++) for the nwsm engine instead of the
    /// pregel engine's partition.
    #[arg(long)]
    bbp: bool,
    /// Memory budget, e.g. 512MiB (default: a quarter of RAM), per process: shared by the W
    /// in-process ranks, each rank's own under mpirun. With --bbp: the budget of the queries
    /// the layout is for (per process), which also bounds the partitioning.
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
    if args.bbp {
        // Started under mpirun by mistake: one process partitions, the others have nothing to do.
        if let Some(rank) = std::env::var("OMPI_COMM_WORLD_RANK").ok().filter(|r| r != "0") {
            eprintln!("rank {rank}: --bbp partitioning runs on rank 0 only");
            return Ok(());
        }
        let store = Store::open(&args.store)?;
        return balanced_buffer_aware(&args, &store, memory(&args)?, cancel);
    }
    let transport = crate::distributed::transport()?;
    let outcome = pregel_partition(&args, transport.as_ref(), cancel);
    crate::distributed::abort_on_error(outcome, transport.as_ref())
}

fn memory(args: &PartitionArgs) -> anyhow::Result<MemoryBudget> {
    super::budget(args.memory.as_ref())
}

/// GraphD's partition, as this process's rank of an MPI job or as W in-process ranks.
fn pregel_partition(
    args: &PartitionArgs,
    transport: Option<&Arc<dyn Transport>>,
    cancel: &CancelToken,
) -> anyhow::Result<()> {
    let store = Store::open(&args.store)?;
    let rank = transport.map_or(0, |t| t.rank());
    // Under mpirun only rank 0 draws progress bars: the others would overwrite its lines.
    let progress: Arc<dyn Progress> =
        if rank == 0 { Arc::new(TerminalProgress::new(args.quiet)) } else { Arc::new(NoProgress) };
    let job = PartitionJob {
        store: &store,
        recoded: args.recode,
        memory: memory(args)?,
        sort_buffer_bytes: None,
        progress: progress.as_ref(),
        cancel,
    };
    let started = Instant::now();
    let (info, figures) = match transport {
        Some(t) => {
            let ranks = args.ranks.unwrap_or(t.ranks());
            if ranks != t.ranks() {
                anyhow::bail!(outcore::Error::invalid(format!(
                    "--ranks {ranks} but mpirun started {} ranks: run `mpirun -n {ranks}`, or leave --ranks out",
                    t.ranks()
                )));
            }
            let outcome = partition::partition_rank(&job, t.as_ref())?;
            let figures = t
                .all_gather(serde_json::to_vec(&outcome.figures)?)?
                .iter()
                .map(|bytes| serde_json::from_slice(bytes))
                .collect::<Result<Vec<RankFigures>, _>>()?;
            (outcome.info, figures)
        }
        None => {
            let outcomes = partition::partition_in_process(&job, args.ranks.unwrap_or(1))?;
            let figures = outcomes.iter().map(|o| o.figures.clone()).collect();
            (outcomes.into_iter().next().expect("one rank at least").info, figures)
        }
    };
    if rank != 0 || args.quiet {
        return Ok(());
    }
    let dir = partition::partition_dir(&store, info.ranks, args.recode);
    let how = if transport.is_some() { "MPI processes" } else { "in-process ranks" };
    eprintln!(
        "partitioned into {} ranks ({:?} names) in {} by {} {how} in {:.1} s",
        info.ranks,
        info.naming,
        dir.display(),
        info.ranks,
        started.elapsed().as_secs_f64()
    );
    for (part, figures) in info.parts.iter().zip(&figures) {
        let arcs = part.out_arcs + part.in_arcs;
        let mut line = format!(
            "  rank {}: {} vertices, {} out-arcs, {} in-arcs, about {}; streamed {} CSR arcs",
            figures.rank,
            part.vertices,
            part.out_arcs,
            part.in_arcs,
            format_size(part.vertices * partition::VERTEX_RECORD_BYTES + arcs * info.arc_bytes()),
            figures.csr_arcs_read
        );
        if args.recode {
            line += &format!(
                "; recoding: {} requests sent, {} answered, {} sorted runs spilled",
                figures.requests_sent, figures.requests_answered, figures.sort_runs_spilled
            );
        }
        eprintln!("{line}");
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
    let ranks = args.ranks.unwrap_or(1).max(1);
    let page_size = match &args.page_size {
        Some(size) => parse_size(size)?,
        None => DEFAULT_PAGE_SIZE,
    };
    let q = match args.q {
        Some(q) => q,
        None => plan_memory(store.num_vertices(), ranks, 2, page_size, memory.bytes(), 1)?.q,
    };
    let started = std::time::Instant::now();
    let progress = TerminalProgress::new(args.quiet);
    let layout = nwsm::partition::build(store, ranks, q, page_size, memory, &progress, cancel)?;
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
