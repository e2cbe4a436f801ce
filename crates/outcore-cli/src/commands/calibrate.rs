//! `outcore calibrate`: measures the gap threshold `l` of the device holding a directory
//! (sequential bandwidth × random-read latency, with O_DIRECT reads of a temporary file) and
//! saves it where the stream engine finds it (see `outcore::engine::stream::calibrate`).

use std::path::PathBuf;

use clap::Args;
use outcore::engine::stream::calibrate;
use outcore::runtime::parse_size;

#[derive(Args)]
pub struct CalibrateArgs {
    /// A directory on the device to measure (default: the current directory); put it where
    /// the stores live.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Size of the temporary file read sequentially (larger is more accurate).
    #[arg(long, default_value = "256MiB")]
    size: String,
    /// Random 4 KiB reads timed (at most about 5 seconds of them).
    #[arg(long, default_value_t = 4000)]
    random_reads: u64,
    /// Measure and print, but do not save.
    #[arg(long)]
    dry_run: bool,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<()> {
    let size = parse_size(&args.size)?;
    eprintln!("measuring {} (a {} temporary file)...", args.dir.display(), outcore::runtime::format_size(size));
    let calibration = calibrate::measure(&args.dir, size, args.random_reads)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&calibration)?);
    } else {
        println!("{calibration}");
    }
    if !args.dry_run {
        let path = calibrate::save(&calibration)?;
        eprintln!("saved for device {} in {}", calibration.device, path.display());
    }
    Ok(())
}
