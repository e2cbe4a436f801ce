//! One module per subcommand. Each turns its clap arguments into library calls; none holds
//! logic the Python package would also need (that belongs in the library).

pub mod bench;
pub mod bench_cache;
pub mod import;
pub mod info;
pub mod reorder;
pub mod summary;
pub mod validate;
pub mod generate;
pub mod run;
