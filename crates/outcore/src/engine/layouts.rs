//! Derived layouts as a whole: what `outcore layout list|drop|build` does.
//!
//! A derived layout is anything a store holds beside `ids/`, `csr-out/` and `csr-in/`, built
//! from them by an engine: `shards-P` (shards), `bbp-P-Q` (nwsm), `parts-W[-recoded]` (pregel;
//! described by its own `partition.json`, not the manifest) and the cache engine's static-cache
//! selections. Engines build what they miss; a damaged layout is reported with the command
//! below that rebuilds it. Builds and drops take the generation's build lock
//! ([`Store::lock_builds`]), so they never interleave with another build in the same store.

use crate::engine::nwsm::partition::{self as bbp, BbpLayout, DEFAULT_PAGE_SIZE};
use crate::engine::pregel::partition as parts;
use crate::engine::shards::ShardLayout;
use crate::error::{Error, IoContext, Result};
use crate::runtime::{CancelToken, MemoryBudget, Progress};
use crate::store::Store;

/// One derived layout of a store.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutStatus {
    pub name: String,
    pub bytes: u64,
    /// What is wrong with it (missing or truncated files), None when it is whole.
    pub damage: Option<String>,
}

/// A derived layout named on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Shards(usize),
    Bbp { p: usize, q: usize },
    Parts { ranks: usize, recoded: bool },
    CacheSelection,
}

fn kind_of(name: &str) -> Result<Kind> {
    let numbers = |rest: &str| -> Option<Vec<usize>> { rest.split('-').map(|n| n.parse().ok()).collect() };
    let parsed = if let Some(rest) = name.strip_prefix("shards-") {
        numbers(rest).filter(|n| n.len() == 1).map(|n| Kind::Shards(n[0]))
    } else if let Some(rest) = name.strip_prefix("bbp-") {
        numbers(rest).filter(|n| n.len() == 2).map(|n| Kind::Bbp { p: n[0], q: n[1] })
    } else if let Some(rest) = name.strip_prefix("parts-") {
        let (rest, recoded) = rest.strip_suffix("-recoded").map_or((rest, false), |r| (r, true));
        numbers(rest).filter(|n| n.len() == 1).map(|n| Kind::Parts { ranks: n[0], recoded })
    } else if name.starts_with("static-cache-selection/") {
        Some(Kind::CacheSelection)
    } else {
        None
    };
    parsed.ok_or_else(|| {
        let what = if name.starts_with("csr-") || name == "ids" {
            "is the store itself, not a derived layout (re-import to rebuild it)"
        } else {
            "is not a derived layout name (shards-P, bbp-P-Q, parts-W, parts-W-recoded, static-cache-selection/...)"
        };
        Error::invalid(format!("{name} {what}"))
    })
}

/// The derived layouts of `store`, by name, damaged ones included.
pub fn list(store: &Store) -> Result<Vec<LayoutStatus>> {
    let mut found: Vec<LayoutStatus> = store
        .manifest()
        .layouts
        .iter()
        .filter(|(name, _)| !name.starts_with("csr-"))
        .map(|(name, entry)| LayoutStatus { name: name.clone(), bytes: entry.bytes, damage: None })
        .collect();
    for (name, why) in store.damaged_layouts() {
        found.push(LayoutStatus { name: name.clone(), bytes: 0, damage: Some(why.clone()) });
    }
    let entries = std::fs::read_dir(store.dir()).context(|| format!("listing {}", store.dir().display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if let Ok(Kind::Parts { ranks, recoded }) = kind_of(&name) {
            let damage = parts::open(store, ranks, recoded).err().map(|e| e.to_string());
            found.push(LayoutStatus { bytes: dir_bytes(&entry.path()), name, damage });
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Removes a derived layout (the next run that needs it builds it again). A `bbp` layout a
/// query is reading is refused rather than waited for.
pub fn drop_layout(store: &Store, name: &str) -> Result<()> {
    let kind = kind_of(name)?;
    let _building = store.lock_builds()?;
    let mut fresh = store.reopen()?;
    if let Kind::Parts { .. } = kind {
        return remove_partition(&fresh, name);
    }
    let listed = fresh.manifest().layouts.contains_key(name) || fresh.damaged_layout(name).is_some();
    if !listed {
        return Err(Error::invalid(format!(
            "{} has no layout {name} (`outcore layout list --store {}` shows what it has)",
            store.root().display(),
            store.root().display()
        )));
    }
    let _held = match kind {
        Kind::Bbp { .. } => Some(bbp::LayoutLock::exclusive_if_free(&fresh, name)?.ok_or_else(|| {
            Error::invalid(format!("{name} is being read by a running query; drop it when the query has finished"))
        })?),
        _ => None,
    };
    fresh.remove_layout(name)
}

fn remove_partition(store: &Store, name: &str) -> Result<()> {
    let dir = store.path(name);
    if !dir.exists() {
        return Err(Error::invalid(format!("{} has no partition {name}", store.root().display())));
    }
    let Some(_removing) = store.try_replace_layout(name)? else {
        return Err(parts::in_use_error(store, name));
    };
    crate::runtime::commit::remove_dir(&dir)
}

/// Builds (or rebuilds, replacing a damaged or existing one) the derived layout `name`.
pub fn build_layout(
    store: &Store,
    name: &str,
    memory: MemoryBudget,
    progress: &dyn Progress,
    cancel: &CancelToken,
) -> Result<()> {
    match kind_of(name)? {
        Kind::Shards(shards) => {
            if store.reopen()?.manifest().layouts.contains_key(name) || store.damaged_layout(name).is_some() {
                drop_layout(store, name)?;
            }
            ShardLayout::open_or_build(&store.reopen()?, shards, memory.bytes() / 4, progress).map(|_| ())
        }
        Kind::Bbp { p, q } => {
            let page_size =
                BbpLayout::all(store).iter().find(|l| l.name == name).map_or(DEFAULT_PAGE_SIZE, |l| l.page_size);
            bbp::build(store, p, q, page_size, memory, progress, cancel).map(|_| ())
        }
        Kind::Parts { ranks, recoded } => parts::partition(store, ranks, recoded, memory, progress, cancel).map(|_| ()),
        Kind::CacheSelection => Err(Error::invalid(format!(
            "{name} is built by the cache engine's runs that use it (`outcore run ALGO --engine cache`); \
             `outcore layout drop` removes it"
        ))),
    }
}
