//! Runtime services shared by every engine: the memory budget, I/O accounting, the page
//! cache, the atomic commit of derived layouts, progress reporting, cancellation and resource
//! measurement. Nothing here knows about graphs.

pub mod commit;
pub mod io;
pub mod memory;
pub mod page_cache;
pub mod progress;

pub use io::IoCounters;
pub use memory::{format_size, parse_size, peak_rss_bytes, MemoryBudget};
pub use page_cache::PageCache;
pub use progress::{CancelToken, NoProgress, Progress, ProgressBar, ProgressUnit};
