//! Runtime services shared by every engine: the memory budget and the ledger charged against it, I/O accounting and direct I/O
//! (aligned buffers, `O_DIRECT`, counted reads), the page cache, the atomic commit of derived
//! layouts, progress reporting, cancellation and resource measurement. Nothing here knows
//! about graphs.

pub mod chunks;
pub mod commit;
pub mod direct;
pub mod io;
pub mod ledger;
pub mod memory;
pub mod page_cache;
pub mod progress;
pub mod spill;

pub use direct::{AlignedBuffer, BufferPool, DIRECT_ALIGN};
pub use io::{CountedFile, IoCounters};
pub use ledger::{Charge, LedgerFigures, LedgerPart, MemoryLedger, MemoryPart};
pub use memory::{format_size, parse_size, peak_rss_bytes, prefetch, MemoryBudget, PREFETCH_DISTANCE};
pub use page_cache::PageCache;
pub use progress::{CancelToken, NoProgress, Progress, ProgressBar, ProgressUnit};
