//! The `outcore` binary: the command line of the `outcore_cli` library.

fn main() {
    std::process::exit(outcore_cli::main_with_args(std::env::args_os()));
}
