//! `outcore reorder`: renumber a store's vertices (BASC paper §4: Norder, and the degree and
//! random orders it is compared with). The store is rebuilt beside itself and replaced only
//! when complete; results stay in original ids.

use std::path::PathBuf;

use clap::Args;
use outcore::runtime::MemoryBudget;
use outcore::store::order::{order_cost, reorder_into, VertexOrder};
use outcore::store::Store;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct ReorderArgs {
    /// The store to renumber.
    #[arg(long)]
    store: PathBuf,
    /// none (ascending original id), degree (descending in-degree), random, norder.
    #[arg(long)]
    order: String,
    /// Seed of the random order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the reordered store here instead of replacing the input.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Memory budget, e.g. 1GiB (default: a quarter of RAM).
    #[arg(long)]
    memory: Option<String>,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

/// Applies `order` to the store in `dir` (in place), reporting the cost model before and after.
pub fn apply(
    dir: &std::path::Path,
    output: Option<&std::path::Path>,
    order: VertexOrder,
    memory: MemoryBudget,
    quiet: bool,
) -> anyhow::Result<Store> {
    let store = Store::open(dir)?;
    let before = order_cost(&store)?;
    let started = std::time::Instant::now();
    let progress = TerminalProgress::new(quiet);
    let reordered = reorder_into(&store, output.unwrap_or(dir), order, memory, &progress)?;
    let after = order_cost(&reordered)?;
    eprintln!(
        "reordered {} vertices by {} in {:.1} s; cost model {:.4e} -> {:.4e} (normalised {:.4} -> {:.4})",
        reordered.num_vertices(),
        order.name(),
        started.elapsed().as_secs_f64(),
        before.cost,
        after.cost,
        before.normalized,
        after.normalized
    );
    Ok(reordered)
}

pub fn run(args: ReorderArgs) -> anyhow::Result<()> {
    let order = VertexOrder::parse(&args.order, args.seed)?;
    let memory = super::budget(args.memory.as_ref())?;
    apply(&args.store, args.output.as_deref(), order, memory, args.quiet)?;
    Ok(())
}
