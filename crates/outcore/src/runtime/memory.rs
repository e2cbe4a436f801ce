//! The memory budget (`--memory`) and resident-memory measurement.
//!
//! The budget is a promise to the user: engines and the import pipeline size every buffer,
//! window, cache and sort run from it, so that the peak resident set stays within the budget
//! plus a small fixed overhead (the binary, thread stacks, allocator slack).

use crate::error::{Error, Result};

/// A memory budget in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(bytes: u64) -> Self {
        MemoryBudget { bytes }
    }

    /// A quarter of the machine's physical memory: the default when `--memory` is absent.
    pub fn default_for_machine() -> Self {
        MemoryBudget { bytes: physical_memory_bytes() / 4 }
    }

    /// Parses sizes such as `512MiB`, `2GiB`, `100KB`, `64m`, `1000`.
    pub fn parse(text: &str) -> Result<Self> {
        parse_size(text).map(MemoryBudget::new)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// A share of the budget, e.g. `fraction(0.5)` for half.
    pub fn fraction(&self, share: f64) -> u64 {
        (self.bytes as f64 * share) as u64
    }
}

impl std::fmt::Display for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_size(self.bytes))
    }
}

/// Parses a byte size with an optional unit: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB.
/// Decimal units (KB, MB) are powers of 1000; binary ones (KiB) and bare letters (K, M) are
/// powers of 1024, as users of `free`, `ulimit` and `dd` expect.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| Error::invalid(format!("invalid size '{text}': expected e.g. 512MiB, 2GiB, 100KB")))?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "kb" => 1000,
        "m" | "mib" => 1 << 20,
        "mb" => 1_000_000,
        "g" | "gib" => 1 << 30,
        "gb" => 1_000_000_000,
        "t" | "tib" => 1 << 40,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(Error::invalid(format!(
                "invalid size '{text}': unknown unit '{other}' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            )))
        }
    };
    Ok((value * multiplier as f64).round() as u64)
}

/// Formats a byte count with a binary unit, e.g. `1.50 GiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

impl MemoryBudget {
    /// This budget, or three quarters of what the machine can give this process
    /// ([`machine_memory_bytes`]) when it asks for more, and whether it was lowered. Buffers
    /// are sized from the budget up front, so a budget beyond the machine would abort with
    /// "memory allocation failed" instead of running within what exists.
    pub fn within_machine(self) -> (MemoryBudget, bool) {
        let limit = machine_memory_bytes() / 4 * 3;
        if self.bytes > limit {
            (MemoryBudget::new(limit), true)
        } else {
            (self, false)
        }
    }
}

/// The memory this process may use: physical memory, or the cgroup's limit when lower
/// (`memory.max` of cgroup v2, `memory.limit_in_bytes` of v1).
pub fn machine_memory_bytes() -> u64 {
    let cgroup = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok())
        .min();
    let physical = physical_memory_bytes();
    cgroup.map_or(physical, |limit| limit.min(physical))
}

/// Physical memory of the machine in bytes (falls back to 4 GiB if unknown).
pub fn physical_memory_bytes() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions; it returns -1 on error.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages > 0 && page_size > 0 {
        pages as u64 * page_size as u64
    } else {
        4 << 30
    }
}

/// Peak resident set size of this process so far, in bytes: `VmHWM` from /proc/self/status,
/// which starts afresh at exec (getrusage's ru_maxrss carries the peak of a large parent
/// process across fork+exec), else getrusage.
pub fn peak_rss_bytes() -> u64 {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        if let Some(kb) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            return kb * 1024;
        }
    }
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory of the right size; getrusage fills it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    // SAFETY: getrusage returned 0, so the struct is initialised.
    let usage = unsafe { usage.assume_init() };
    usage.ru_maxrss as u64 * 1024 // kilobytes on Linux
}

/// Current resident set size in bytes, from /proc/self/statm (0 if unavailable).
pub fn current_rss_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/statm") else { return 0 };
    let resident: u64 = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    resident * page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_beyond_the_machine_are_lowered_to_it() {
        let machine = machine_memory_bytes();
        let (budget, lowered) = MemoryBudget::new(machine * 4).within_machine();
        assert!(lowered);
        assert_eq!(budget.bytes(), machine / 4 * 3);
        let (budget, lowered) = MemoryBudget::new(16 << 20).within_machine();
        assert!(!lowered);
        assert_eq!(budget.bytes(), 16 << 20);
    }

    #[test]
    fn parses_sizes_with_units() {
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("100KB").unwrap(), 100_000);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size(" 512 MiB ").unwrap(), 512 << 20);
        assert!(parse_size("lots").unwrap_err().to_string().contains("invalid size 'lots'"));
        assert!(parse_size("5 parsecs").unwrap_err().to_string().contains("unknown unit"));
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(3 << 29), "1.50 GiB");
    }

    #[test]
    fn measures_rss() {
        assert!(peak_rss_bytes() > 0);
        assert!(current_rss_bytes() > 0);
    }
}

#[cfg(test)]
mod peak_tests {
    #[test]
    fn peak_rss_grows_with_touched_memory() {
        let before = super::peak_rss_bytes();
        let block = vec![1u8; 64 << 20];
        assert!(block.iter().step_by(4096).all(|&b| b == 1));
        assert!(super::peak_rss_bytes() >= before.max(64 << 20));
    }
}

/// How many edges ahead a push scatter (stream's, cache's) prefetches the message slot of its
/// target: far enough for a miss to memory to complete under the work on the edges between.
pub const PREFETCH_DISTANCE: usize = 16;

/// Asks the processor to start loading the cache line at `ptr`: a hint only, results never
/// depend on it. Pulls and sparse pushes read lists and values at irregular addresses no
/// hardware prefetcher follows, so without the hint each waits for memory in turn.
#[inline(always)]
pub fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and never dereferences in the
    // language's sense, even for an address outside any allocation; SSE is part of the
    // x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}
