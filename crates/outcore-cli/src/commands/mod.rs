//! One module per subcommand. Each turns its clap arguments into library calls; none holds
//! logic the Python package would also need (that belongs in the library).

pub mod import;
pub mod info;
pub mod summary;
pub mod validate;
