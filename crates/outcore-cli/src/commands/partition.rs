//! `outcore partition --store DIR --ranks W [--recode]`: the per-rank files of the `pregel` engine
//! (`DIR/parts-W/rank-i/`, see `outcore::engine::pregel::partition`).
//!
//! One partitioner per flag set: `--recode` selects GraphD's recoded naming. Other partitioners
//! (e.g. a balanced one for another engine) add their flag here and a branch in `run`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use outcore::engine::pregel::partition;
use outcore::runtime::{format_size, CancelToken, MemoryBudget, Progress};
use outcore::store::Store;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct PartitionArgs {
    /// The store directory.
    #[arg(long)]
    store: PathBuf,
    /// Number of ranks W (processes of `mpirun -n W`).
    #[arg(long)]
    ranks: usize,
    /// GraphD ID recoding: names W·pos + rank, for in-memory combining (`run --recode`).
    #[arg(long)]
    recode: bool,
    /// Memory budget, e.g. 512MiB (default: a quarter of RAM).
    #[arg(long)]
    memory: Option<String>,
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
