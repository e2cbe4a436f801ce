//! One module per subcommand. Each turns its clap arguments into library calls; none holds
//! logic the Python package would also need (that belongs in the library).

pub mod algorithms;
pub mod bench;
pub mod bench_auto;
pub mod bench_cache;
pub mod bench_shards;
pub mod bench_stream;
pub mod calibrate;
pub mod generate;
pub mod import;
pub mod info;
pub mod partition;
pub mod reorder;
pub mod run;
pub mod summary;
pub mod validate;
