//! `outcore layout list|drop|build`: the derived layouts of a store (shards, bbp, pregel
//! partitions, cache selections; `outcore::engine::layouts`). Engines build what they miss;
//! these commands show, remove and rebuild layouts ahead of time or after damage.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use outcore::engine::layouts;
use outcore::runtime::{format_size, CancelToken};
use outcore::store::Store;

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct LayoutArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// List the derived layouts, with their size or what is damaged.
    List {
        /// The store directory.
        #[arg(long)]
        store: PathBuf,
    },
    /// Remove a derived layout (the next run that needs it builds it again).
    Drop {
        /// The store directory.
        #[arg(long)]
        store: PathBuf,
        /// The layout, as `layout list` names it (e.g. shards-16, bbp-1-2, parts-4).
        name: String,
    },
    /// Build a derived layout, replacing a damaged or existing one of the same name.
    Build {
        /// The store directory.
        #[arg(long)]
        store: PathBuf,
        /// shards-P, bbp-P-Q, parts-W or parts-W-recoded.
        name: String,
        /// Memory budget, e.g. 512MiB (default: a quarter of RAM).
        #[arg(long)]
        memory: Option<String>,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
}

pub fn run(args: LayoutArgs, cancel: &CancelToken) -> anyhow::Result<()> {
    match args.action {
        Action::List { store } => {
            let store = Store::open(&store)?;
            for layout in layouts::list(&store)? {
                match layout.damage {
                    None => println!("{}\t{}", layout.name, format_size(layout.bytes)),
                    Some(why) => println!("{}\tdamaged: {why}; {}", layout.name, store.rebuild_hint(&layout.name)),
                }
            }
        }
        Action::Drop { store, name } => {
            layouts::drop_layout(&Store::open(&store)?, &name)?;
            eprintln!("dropped {name}");
        }
        Action::Build { store, name, memory, quiet } => {
            let memory = super::budget(memory.as_ref())?;
            let progress = TerminalProgress::new(quiet);
            layouts::build_layout(&Store::open(&store)?, &name, memory, &progress, cancel)?;
            if !quiet {
                eprintln!("built {name}");
            }
        }
    }
    Ok(())
}
