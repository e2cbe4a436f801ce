//! `outcore generate`: synthetic graphs to a file or straight into a store.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use outcore::generate::erdos_renyi::{ErdosRenyi, ErdosRenyiConfig};
use outcore::generate::grid::{Grid, GridConfig};
use outcore::generate::rmat::{Rmat, RmatConfig};
use outcore::generate::source::generate_into_store;
use outcore::generate::write::write_edges;
use outcore::generate::{EdgeGenerator, Generator};
use outcore::ingest::ImportOptions;
use outcore::runtime::{format_size, CancelToken};

use crate::progress::TerminalProgress;

#[derive(Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    kind: Kind,
}

#[derive(Args)]
#[group(required = true, multiple = false)]
struct Target {
    /// Write an edge file: text (.el, .txt, .tsv...) or raw pairs (.bin32, .bin64), optionally
    /// compressed (.gz, .zst).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Import straight into a store (bounded memory, like `outcore import`).
    #[arg(long)]
    store: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Kind {
    /// Graph500 Kronecker (R-MAT) graph: 2^scale vertices, edge-factor x 2^scale edges,
    /// A=0.57 B=C=0.19 D=0.05, permuted labels.
    Rmat {
        #[arg(long)]
        scale: u32,
        #[arg(long, default_value_t = 16)]
        edge_factor: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Uniform edge weights in (0, 1].
        #[arg(long)]
        weights: bool,
        #[command(flatten)]
        store_options: StoreOptions,
    },
    /// Erdős–Rényi G(n, m): m edges between uniformly random vertex pairs.
    ErdosRenyi {
        #[arg(long)]
        vertices: u64,
        #[arg(long)]
        edges: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        weights: bool,
        #[command(flatten)]
        store_options: StoreOptions,
    },
    /// A rows x cols 2-D grid (4-neighbours), undirected unless --directed.
    Grid {
        #[arg(long)]
        rows: u64,
        #[arg(long)]
        cols: u64,
        #[arg(long)]
        directed: bool,
        #[arg(long)]
        weights: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        store_options: StoreOptions,
    },
}

#[derive(Args)]
struct StoreOptions {
    #[command(flatten)]
    target: Target,
    /// With --store: memory budget of the import (default: a quarter of RAM).
    #[arg(long)]
    memory: Option<String>,
    /// With --store: store both directions of every edge.
    #[arg(long)]
    undirected: bool,
    /// With --store: keep one arc per (source, target).
    #[arg(long)]
    dedup: bool,
    /// With --store: drop self-loops.
    #[arg(long)]
    drop_self_loops: bool,
}

pub fn run(args: GenerateArgs, cancel: &CancelToken) -> anyhow::Result<()> {
    let (generator, store_options) = match args.kind {
        Kind::Rmat { scale, edge_factor, seed, weights, store_options } => (
            Generator::Rmat(Rmat::new(RmatConfig { scale, edge_factor, seed, weights, ..RmatConfig::default() })?),
            store_options,
        ),
        Kind::ErdosRenyi { vertices, edges, seed, weights, store_options } => (
            Generator::ErdosRenyi(ErdosRenyi::new(ErdosRenyiConfig {
                vertices,
                edges,
                seed,
                weights,
                ..ErdosRenyiConfig::default()
            })?),
            store_options,
        ),
        Kind::Grid { rows, cols, directed, weights, seed, store_options } => {
            (Generator::Grid(Grid::new(GridConfig { rows, cols, directed, weights, seed })?), store_options)
        }
    };
    let progress = TerminalProgress::new(false);
    progress_note(&generator);
    if let Some(path) = &store_options.target.output {
        let report = write_edges(path, &generator, &progress, cancel)?;
        eprintln!(
            "wrote {} edges to {} ({}) in {:.1} s ({:.1}M edges/s)",
            report.edges,
            path.display(),
            format_size(report.file_bytes),
            report.seconds,
            report.edges as f64 / report.seconds.max(1e-9) / 1e6
        );
    } else if let Some(store) = &store_options.target.store {
        let opts = ImportOptions {
            undirected: store_options.undirected.then_some(true),
            dedup: store_options.dedup,
            drop_self_loops: store_options.drop_self_loops,
            memory: super::budget(store_options.memory.as_ref())?,
            ..ImportOptions::default()
        };
        let (_, report) = generate_into_store(generator, store, &opts, &progress, cancel)?;
        eprintln!(
            "generated {} vertices, {} edges into {} in {:.1} s, peak RSS {}",
            report.vertices,
            report.edges,
            store.display(),
            report.seconds,
            format_size(report.peak_rss_bytes)
        );
    }
    Ok(())
}

fn progress_note(generator: &Generator) {
    eprintln!("{}", generator.description());
}
