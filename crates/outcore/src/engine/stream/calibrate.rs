//! Measuring the gap threshold `l` of a device (paper §3.2: `l = b_seq × t_seek`).
//!
//! Skipping an inactive gap costs one random access; reading it costs `gap / bandwidth`. So a
//! gap is worth skipping when it is longer than `l = sequential bandwidth × random-read
//! latency`. The paper uses 1 MiB for HDDs and 64 KiB for SSDs; the right value depends on the
//! device (and here, on the host's caching), so `outcore calibrate` measures both figures with
//! `O_DIRECT` reads of a temporary file on the device and saves them.
//!
//! **Where it is saved:** a JSON file, `$OUTCORE_CALIBRATION` if set, else
//! `$XDG_CONFIG_HOME/outcore/calibration.json`, else `$HOME/.config/outcore/calibration.json`.
//! It maps a device (the `st_dev` of the measured directory, e.g. `"2049"`) to its figures, so
//! a later run looks up the device holding its store and uses that `l`. `--gap-threshold`
//! overrides it; a device never calibrated gets [`DEFAULT_GAP_THRESHOLD`] (the paper's SSD
//! value).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result};
use crate::runtime::direct::{drop_from_os_cache, AlignedBuffer};
use crate::runtime::{CountedFile, IoCounters};
use crate::store::write_atomic;

/// `l` for a device never calibrated: 64 KiB, the paper's value for SSDs (§5.1).
pub const DEFAULT_GAP_THRESHOLD: u64 = 64 << 10;

/// Smallest and largest `l` a measurement may give.
const MIN_GAP: u64 = 4 << 10;
const MAX_GAP: u64 = 64 << 20;

/// The figures measured on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// `st_dev` of the measured directory, as text.
    pub device: String,
    /// The directory the temporary file was written in.
    pub dir: PathBuf,
    pub sequential_bytes_per_second: f64,
    pub random_read_latency_seconds: f64,
    /// `l`, rounded to whole 4 KiB pages.
    pub gap_threshold_bytes: u64,
    /// Size of the temporary file read.
    pub file_bytes: u64,
    /// Random 4 KiB reads timed.
    pub random_reads: u64,
    /// False when the file system refused O_DIRECT (figures then include the page cache's
    /// help, after evicting the file with posix_fadvise).
    pub direct_io: bool,
    /// Seconds since the Unix epoch.
    pub measured_at: u64,
    /// Seconds per edge of a PageRank-like scatter in memory (random read-modify-write of an
    /// 8-byte value per edge, on all threads): the compute rate the planner prices edge visits
    /// with ([`crate::engine::planner::CostModel`]). Absent in files written before it existed.
    #[serde(default)]
    pub edge_seconds: Option<f64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CalibrationFile {
    devices: BTreeMap<String, Calibration>,
}

/// The file calibrations are saved in (see the module docs).
pub fn calibration_file() -> PathBuf {
    if let Some(p) = std::env::var_os("OUTCORE_CALIBRATION") {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("outcore").join("calibration.json")
}

/// The device key of the file system holding `path`.
pub fn device_of(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).context(|| format!("reading metadata of {}", path.display()))?;
    Ok(meta.dev().to_string())
}

/// The saved calibration of the device holding `path`, if any.
pub fn lookup(path: &Path) -> Option<Calibration> {
    let device = device_of(path).ok()?;
    let text = std::fs::read_to_string(calibration_file()).ok()?;
    let file: CalibrationFile = serde_json::from_str(&text).ok()?;
    file.devices.get(&device).cloned()
}

/// Saves a calibration (replacing the device's previous one); returns the file written.
pub fn save(calibration: &Calibration) -> Result<PathBuf> {
    let path = calibration_file();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).context(|| format!("creating {}", parent.display()))?;
    }
    let mut file: CalibrationFile =
        std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    file.devices.insert(calibration.device.clone(), calibration.clone());
    let text = serde_json::to_string_pretty(&file).expect("calibration serialises");
    write_atomic(&path, text.as_bytes()).context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// `l` from the two figures, rounded to pages and clamped to a sane range.
pub fn gap_threshold(bytes_per_second: f64, latency_seconds: f64) -> u64 {
    let l = (bytes_per_second * latency_seconds).max(0.0) as u64;
    (l.div_ceil(PAGE) * PAGE).clamp(MIN_GAP, MAX_GAP)
}

/// The unit of random reads and of `l`: one direct-I/O block.
const PAGE: u64 = crate::runtime::DIRECT_ALIGN as u64;

/// Measures sequential bandwidth and random 4 KiB read latency on the device holding `dir`,
/// with a temporary file of `file_bytes` (removed afterwards).
pub fn measure(dir: &Path, file_bytes: u64, max_random_reads: u64) -> Result<Calibration> {
    let chunk = 4usize << 20;
    let file_bytes = (file_bytes.max(chunk as u64) / chunk as u64) * chunk as u64;
    let path = dir.join(format!(".outcore-calibrate-{}", std::process::id()));
    let result = measure_with(dir, &path, file_bytes, chunk, max_random_reads);
    let _ = std::fs::remove_file(&path);
    result
}

fn measure_with(dir: &Path, path: &Path, file_bytes: u64, chunk: usize, max_random_reads: u64) -> Result<Calibration> {
    // Write incompressible data so no layer can shortcut the reads.
    {
        let mut f = File::create(path).context(|| format!("creating {}", path.display()))?;
        let mut block = vec![0u8; chunk];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..file_bytes / chunk as u64 {
            for word in block.chunks_exact_mut(8) {
                state = splitmix64(state);
                word.copy_from_slice(&state.to_le_bytes());
            }
            f.write_all(&block).context(|| format!("writing {}", path.display()))?;
        }
        f.sync_all().context(|| format!("syncing {}", path.display()))?;
        drop_from_os_cache(&f, 0, 0);
    }
    // Calibration is not a run: its reads are counted nowhere that is reported.
    let file = CountedFile::open_work(path, true, IoCounters::new())?;
    let direct_io = file.is_direct();
    let read = |buf: &mut [u8], offset: u64| -> Result<()> { file.read_at(buf, offset, buf.len()).map(|_| ()) };

    // Sequential bandwidth: the whole file in large aligned requests.
    let mut big = AlignedBuffer::zeroed(chunk);
    let started = Instant::now();
    for i in 0..file_bytes / chunk as u64 {
        read(&mut big, i * chunk as u64)?;
    }
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    let bandwidth = file_bytes as f64 / seconds;

    // Random-read latency: 4 KiB reads at random page offsets, one at a time.
    if !direct_io {
        drop_from_os_cache(file.raw(), 0, 0);
    }
    let mut page = AlignedBuffer::zeroed(PAGE as usize);
    let pages = file_bytes / PAGE;
    let mut state = 42u64;
    let mut reads = 0u64;
    let started = Instant::now();
    while reads < max_random_reads.max(1) && (reads < 100 || started.elapsed().as_secs_f64() < 5.0) {
        state = splitmix64(state);
        read(&mut page, (state % pages) * PAGE)?;
        reads += 1;
    }
    let latency = started.elapsed().as_secs_f64() / reads as f64;
    let measured_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    Ok(Calibration {
        device: device_of(dir)?,
        dir: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
        sequential_bytes_per_second: bandwidth,
        random_read_latency_seconds: latency,
        gap_threshold_bytes: gap_threshold(bandwidth, latency),
        file_bytes,
        random_reads: reads,
        direct_io,
        measured_at,
        edge_seconds: Some(measure_edge_seconds()),
    })
}

/// Times a PageRank-like scatter over a synthetic graph in memory: 2^21 vertices, 2^23 edges
/// with random targets, every thread adding into its own array of values; the best of 3.
pub fn measure_edge_seconds() -> f64 {
    use rayon::prelude::*;
    const VERTICES: usize = 1 << 21;
    const EDGES: usize = 1 << 23;
    let mut state = 7u64;
    let targets: Vec<u32> = (0..EDGES)
        .map(|_| {
            state = splitmix64(state);
            (state % VERTICES as u64) as u32
        })
        .collect();
    let values: Vec<f64> = (0..VERTICES).map(|v| v as f64).collect();
    let threads = rayon::current_num_threads().max(1);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let started = Instant::now();
        let sums: Vec<f64> = targets
            .par_chunks(EDGES.div_ceil(threads))
            .map(|chunk| {
                let mut acc = vec![0.0f64; VERTICES];
                for (i, &t) in chunk.iter().enumerate() {
                    acc[t as usize] += values[i % VERTICES];
                }
                acc.iter().sum::<f64>()
            })
            .collect();
        std::hint::black_box(sums);
        best = best.min(started.elapsed().as_secs_f64() / EDGES as f64);
    }
    best
}

/// SplitMix64: a tiny, good-enough generator for test data and sampling.
pub fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where `l` came from for a run, and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapThreshold {
    pub bytes: u64,
    /// "option", "calibrated" or "default".
    pub source: &'static str,
}

/// `l` for a store in `store_dir`: the option, else the device's calibration, else the default.
pub fn resolve_gap_threshold(option: Option<u64>, store_dir: &Path) -> GapThreshold {
    if let Some(bytes) = option {
        return GapThreshold { bytes, source: "option" };
    }
    match lookup(store_dir) {
        Some(c) => GapThreshold { bytes: c.gap_threshold_bytes, source: "calibrated" },
        None => GapThreshold { bytes: DEFAULT_GAP_THRESHOLD, source: "default" },
    }
}

impl std::fmt::Display for Calibration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sequential {:.0} MiB/s, random 4 KiB read {:.1} µs{}, gap threshold l = {}{}",
            self.sequential_bytes_per_second / (1 << 20) as f64,
            self.random_read_latency_seconds * 1e6,
            if self.direct_io { "" } else { " (no O_DIRECT on this file system)" },
            crate::runtime::format_size(self.gap_threshold_bytes),
            self.edge_seconds.map(|s| format!(", compute {:.2} ns per edge", s * 1e9)).unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_bandwidth_times_latency_in_pages() {
        // 100 MB/s × 10 ms = 1 MB -> 245 pages rounded up
        assert_eq!(gap_threshold(100e6, 0.01), 1_003_520);
        assert_eq!(gap_threshold(2e9, 1e-9), MIN_GAP);
        assert_eq!(gap_threshold(1e12, 1.0), MAX_GAP);
    }

    #[test]
    fn measures_saves_and_finds_a_device() {
        let dir = tempfile::tempdir().unwrap();
        let cal_file = dir.path().join("cal.json");
        // The only test touching OUTCORE_CALIBRATION in this binary.
        std::env::set_var("OUTCORE_CALIBRATION", &cal_file);
        let c = measure(dir.path(), 8 << 20, 200).unwrap();
        assert!(c.sequential_bytes_per_second > 0.0 && c.random_read_latency_seconds > 0.0);
        assert_eq!(c.gap_threshold_bytes % PAGE, 0);
        assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("calibrate")));
        assert_eq!(save(&c).unwrap(), cal_file);
        let found = lookup(dir.path()).unwrap();
        // (serde_json may parse a float one ulp away from what it printed)
        assert_eq!(
            (&found.device, found.gap_threshold_bytes, found.random_reads),
            (&c.device, c.gap_threshold_bytes, c.random_reads)
        );
        assert!((found.sequential_bytes_per_second / c.sequential_bytes_per_second - 1.0).abs() < 1e-12);
        assert_eq!(
            resolve_gap_threshold(None, dir.path()),
            GapThreshold { bytes: c.gap_threshold_bytes, source: "calibrated" }
        );
        assert_eq!(resolve_gap_threshold(Some(123), dir.path()).source, "option");
        std::env::remove_var("OUTCORE_CALIBRATION");
    }
}
