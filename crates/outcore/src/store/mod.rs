//! The graph store: a directory holding one graph in layouts built for out-of-core access.
//!
//! The store path holds generations ([`generation`]): `CURRENT` names the `gen-N/` directory
//! new runs open, and a run keeps reading the generation it opened (a shared lock) while an
//! import commits the next one. Each generation is one complete store:
//!
//! ```text
//! STORE/gen-N/
//!   manifest.json        written last, atomically: a directory without it is not a store
//!   ids/original         dense id -> original id (u64 ids), little-endian u64 each
//!   ids/strings.offsets  dense id -> byte range in ids/strings.data (string ids)
//!   ids/strings.data
//!   ids/by-original      dense ids sorted by their original id (binary-search lookups)
//!   csr-out/offsets      u64 x (|V|+1)
//!   csr-out/targets      u32 (|V| < 2^32) or u64 per edge, grouped by source
//!   csr-out/weights      f64 per edge (weighted stores only)
//!   csr-in/...           the same grouped by target (directed stores only; an undirected
//!                        store keeps both directions in csr-out, which then serves as csr-in)
//!   shards-P/ bbp-P-Q/ cache/ parts-W/   derived layouts, built on demand (`outcore layout`)
//!   tmp/                 work files of runs, `KIND@PID-...` ([`hygiene`])
//!   BUILD.lock           held while a derived layout is built or dropped ([`Store::lock_builds`])
//! ```
//! Stores written before generations (these files directly in STORE/) still open.
//! Every file has its size and CRC-32 in the manifest, and a sidecar `FILE.crc32c` of CRC32C
//! block checksums verified as the file is read ([`blocks`]). Opening checks the format version
//! and every file's size; every read through [`Store::file`] checks the blocks it touches before
//! returning them; [`Store::verify`] (`info --verify`) checks every file and sidecar whole.
//! A derived layout whose files are missing or of the wrong size does not stop the store from
//! opening (engines that do not need it run): it is left out of [`Store::manifest`] and the
//! engines that need it report it with the command that rebuilds it ([`Store::damaged_layout`]).
//! Opening also removes the leftovers of killed processes ([`hygiene`]).
//! Only this module and the spill/stream modules of the engines open files (ARCHITECTURE.md).

pub mod blocks;
pub mod build;
pub mod csr;
pub mod files;
pub mod generation;
pub mod hygiene;
pub mod ids;
pub mod lock;
pub mod manifest;
pub mod order;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use blocks::FileChecks;
pub use build::{build_in_memory, InMemoryGraph, OriginalIds, StoreBuilder};
pub use csr::{CsrLayout, Direction, InMemoryCsr};
pub use files::{write_atomic, StoreFile, StoreFileWriter};
pub use ids::{IdMap, OriginalId, RowsByOriginal};
pub use lock::FileLock;
pub use manifest::{FileEntry, IdType, LayoutEntry, Manifest, WeightType, FORMAT_VERSION};

use crate::error::{Error, IoContext, Result};
use crate::runtime::IoCounters;

/// In stores without block checksums, files up to this size are checksummed every time the
/// store is opened (the others on their first read, [`blocks`]).
pub const QUICK_VERIFY_LIMIT: u64 = 16 << 20;

/// The directory of a layout (its name up to the first '/').
fn layout_dir(name: &str) -> &str {
    name.split('/').next().unwrap_or(name)
}

/// An open, validated store.
#[derive(Debug, Clone)]
pub struct Store {
    /// The generation's directory (the store path itself for stores without generations).
    dir: PathBuf,
    /// The path the store was opened by.
    root: PathBuf,
    /// The shared lock on the generation, released with the last clone.
    hold: Option<Arc<generation::Hold>>,
    /// Derived layouts left out of `manifest` because their files are missing or truncated.
    damaged: Vec<(String, String)>,
    manifest: Manifest,
    counters: IoCounters,
    /// Block checks of the files opened so far, shared by clones (one verification per block).
    checks: Arc<Mutex<HashMap<String, Arc<FileChecks>>>>,
}

impl Store {
    /// Opens the store in `dir`, checking version, file sizes and small files' checksums.
    pub fn open(dir: impl AsRef<Path>) -> Result<Store> {
        Self::open_with(dir, IoCounters::new())
    }

    /// Opens a store whose reads are counted in `counters`.
    pub fn open_with(dir: impl AsRef<Path>, counters: IoCounters) -> Result<Store> {
        let root = dir.as_ref().to_path_buf();
        if !root.is_dir() {
            return Err(Error::store(&root, "no such store (directory does not exist)"));
        }
        let (dir, hold) = if generation::is_generational(&root) {
            let (dir, hold) = generation::open_current(&root)?;
            let _ = generation::retire_unused(&root);
            hygiene::remove_stale_hidden(&root, ".");
            (dir, Some(Arc::new(hold)))
        } else {
            (root.clone(), None)
        };
        let manifest_path = dir.join(manifest::MANIFEST_FILE);
        if !manifest_path.exists() {
            return Err(Error::store(
                &dir,
                "not a store: manifest.json is missing (an import that did not finish leaves no manifest)",
            ));
        }
        hygiene::remove_stale_hidden(&dir, ".");
        hygiene::remove_dead_work_files(&dir.join("tmp"));
        let manifest = Manifest::read(&manifest_path)?;
        let mut store = Store { dir, root, hold, damaged: Vec::new(), manifest, counters, checks: Default::default() };
        store.check_files(false)?;
        Ok(store)
    }

    /// Checks every file's size and full CRC-32 (derived layouts included: damage there is an
    /// error too, with the command that rebuilds the layout).
    pub fn verify(&self) -> Result<()> {
        if let Some((name, why)) = self.damaged.first() {
            return Err(self.damaged_error(name, why));
        }
        for (rel, entry) in &self.manifest.files {
            self.check_file(rel, entry, true).map_err(|e| self.with_rebuild_hint(rel, e))?;
        }
        Ok(())
    }

    /// Sizes of every file (and old stores' small files' CRC-32); a derived layout that fails
    /// is left out of the manifest and recorded as damaged.
    fn check_files(&mut self, full: bool) -> Result<()> {
        let mut damaged: Vec<(String, String)> = Vec::new();
        for (rel, entry) in &self.manifest.files {
            if let Err(e) = self.check_file(rel, entry, full) {
                match self.derived_layout_of(rel) {
                    Some(name) if !damaged.iter().any(|(n, _)| *n == name) => damaged.push((name, e.to_string())),
                    Some(_) => {}
                    None => return Err(e),
                }
            }
        }
        for (name, _) in &damaged {
            if let Some(layout) = self.manifest.layouts.remove(name) {
                for rel in &layout.files {
                    self.manifest.files.remove(rel);
                }
            }
        }
        self.damaged = damaged;
        Ok(())
    }

    fn check_file(&self, rel: &str, entry: &FileEntry, full: bool) -> Result<()> {
        let path = self.dir.join(rel);
        let meta = std::fs::metadata(&path)
            .map_err(|e| Error::store(&path, format!("file listed in the manifest is unreadable: {e}")))?;
        if meta.len() != entry.bytes {
            return Err(Error::store(
                &path,
                format!("size is {} bytes, the manifest says {} (truncated or damaged)", meta.len(), entry.bytes),
            ));
        }
        // Files with block checksums are verified block by block as they are read; only old
        // stores' small files are checked whole on open.
        if full {
            FileChecks::load(&path, entry, self.counters.clone())?;
        }
        if full || (entry.blocks_crc32c.is_none() && entry.bytes <= QUICK_VERIFY_LIMIT) {
            let crc = files::crc32_of_file(&path)?;
            if crc != entry.crc32 {
                return Err(Error::store(
                    &path,
                    format!("checksum mismatch (crc32 {crc:08x}, manifest {:08x}): the file is corrupted", entry.crc32),
                ));
            }
        }
        Ok(())
    }

    /// The derived layout (not csr-out/csr-in) a manifest file belongs to.
    fn derived_layout_of(&self, rel: &str) -> Option<String> {
        self.manifest
            .layouts
            .iter()
            .find(|(name, layout)| !name.starts_with("csr-") && layout.files.iter().any(|f| f == rel))
            .map(|(name, _)| name.clone())
    }

    fn with_rebuild_hint(&self, rel: &str, error: Error) -> Error {
        match (self.derived_layout_of(rel), error) {
            (Some(name), Error::Store { path, message }) => {
                Error::Store { path, message: format!("{message}; {}", self.rebuild_hint(&name)) }
            }
            (_, error) => error,
        }
    }

    /// Derived layouts found damaged on open: (name, what is wrong).
    pub fn damaged_layouts(&self) -> &[(String, String)] {
        &self.damaged
    }

    /// The error for an engine that needs `name` when it is damaged (None when it is not).
    pub fn damaged_layout(&self, name: &str) -> Option<Error> {
        self.damaged.iter().find(|(n, _)| n == name).map(|(n, why)| self.damaged_error(n, why))
    }

    fn damaged_error(&self, name: &str, why: &str) -> Error {
        Error::store(
            self.dir.join(name),
            format!("derived layout {name} is damaged ({why}); {}", self.rebuild_hint(name)),
        )
    }

    /// The command that rebuilds a derived layout (or drops it, for those runs rebuild).
    pub fn rebuild_hint(&self, name: &str) -> String {
        let root = self.root.display();
        if name.starts_with("shards-") || name.starts_with("bbp-") || name.starts_with("parts-") {
            format!("rebuild it with `outcore layout build --store {root} {name}`")
        } else {
            format!(
                "drop it with `outcore layout drop --store {root} {name}` (the next run that needs it builds it again)"
            )
        }
    }

    /// The path the store was opened by (the directory holding `CURRENT` and the generations).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The generation this store reads (`gen-N`), None for a store without generations.
    pub fn generation(&self) -> Option<&str> {
        self.hold.as_ref().map(|h| h.generation())
    }

    /// Takes this generation's build lock (`BUILD.lock`), waiting for a build or drop of a
    /// derived layout under way in another process; hold it while building, recording or
    /// removing a layout, and re-read the manifest once held.
    pub fn lock_builds(&self) -> Result<FileLock> {
        FileLock::exclusive(&self.dir.join("BUILD.lock"))
    }

    /// A run's shared hold on the derived layout `name` (`tmp/NAME.lock`) for as long as it reads
    /// the layout: waits while a replacement or drop of the layout is under way, and keeps new
    /// ones from starting ([`try_replace_layout`](Self::try_replace_layout)).
    pub fn hold_layout(&self, name: &str) -> Result<FileLock> {
        let path = self.layout_lock_path(name)?;
        Ok(FileLock::shared(&path, lock::Create::Yes)?.expect("a lock file that is created"))
    }

    /// The exclusive hold on the derived layout `name` that a replacement or drop needs, or
    /// `None` (never waits) while a run holds it ([`hold_layout`](Self::hold_layout)).
    pub fn try_replace_layout(&self, name: &str) -> Result<Option<FileLock>> {
        FileLock::try_exclusive(&self.layout_lock_path(name)?, lock::Create::Yes)
    }

    fn layout_lock_path(&self, name: &str) -> Result<PathBuf> {
        Ok(self.temp_dir()?.join(format!("{}.lock", name.replace('/', "_"))))
    }

    /// The manifest as it is on disk now (another process may have added a layout since).
    pub fn reopen(&self) -> Result<Store> {
        let mut fresh = Store::open_with(&self.dir, self.counters.clone())?;
        fresh.root = self.root.clone();
        fresh.hold = self.hold.clone();
        Ok(fresh)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn counters(&self) -> &IoCounters {
        &self.counters
    }

    /// The same store with reads counted in other counters (one set per run).
    /// The store with reads counted in `counters` and block checks of its own (a run verifies
    /// and counts each block it reads once, whatever other clones did before).
    pub fn with_counters(&self, counters: IoCounters) -> Store {
        Store { counters, checks: Default::default(), ..self.clone() }
    }

    pub fn num_vertices(&self) -> u64 {
        self.manifest.vertices
    }

    /// Stored arcs (an undirected edge counts twice, a self-loop once).
    pub fn num_arcs(&self) -> u64 {
        self.manifest.arcs
    }

    pub fn is_directed(&self) -> bool {
        self.manifest.directed
    }

    pub fn is_weighted(&self) -> bool {
        self.manifest.weights.is_some()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Opens a store file for positional and sequential reads, counted, and verified against
    /// its block checksums when the manifest lists it.
    pub fn file(&self, rel: &str) -> Result<StoreFile> {
        let path = self.dir.join(rel);
        match self.checks(rel)? {
            Some(checks) => StoreFile::open_checked(&path, self.counters.clone(), checks),
            None => StoreFile::open(&path, self.counters.clone()),
        }
    }

    /// The block checks of a manifest file (None for files the manifest does not list).
    pub fn checks(&self, rel: &str) -> Result<Option<Arc<FileChecks>>> {
        let Some(entry) = self.manifest.files.get(rel) else { return Ok(None) };
        if let Some(c) = self.checks.lock().unwrap().get(rel) {
            return Ok(Some(c.clone()));
        }
        let loaded = Arc::new(FileChecks::load(&self.dir.join(rel), entry, self.counters.clone())?);
        Ok(Some(self.checks.lock().unwrap().entry(rel.to_string()).or_insert(loaded).clone()))
    }

    /// The adjacency layout for a direction (`In` on an undirected store is `csr-out`).
    pub fn csr(&self, direction: Direction) -> Result<CsrLayout> {
        CsrLayout::open(self, direction)
    }

    pub fn ids(&self) -> Result<IdMap> {
        IdMap::open(self)
    }

    /// Records a newly built layout (files already written and synced in the store directory)
    /// and rewrites the manifest atomically. The manifest on disk is the one changed (it may list
    /// layouts this process opened as damaged, or built by others since): hold
    /// [`lock_builds`](Self::lock_builds).
    pub fn add_layout(&mut self, name: &str, layout: LayoutEntry, files: Vec<(String, FileEntry)>) -> Result<()> {
        let path = self.dir.join(manifest::MANIFEST_FILE);
        let mut on_disk = Manifest::read(&path)?;
        for (rel, entry) in files {
            self.checks.lock().unwrap().remove(&rel);
            self.manifest.files.insert(rel.clone(), entry);
            on_disk.files.insert(rel, entry);
        }
        self.manifest.layouts.insert(name.to_string(), layout.clone());
        on_disk.layouts.insert(name.to_string(), layout);
        self.damaged.retain(|(n, _)| n != name);
        on_disk.write(&path)
    }

    /// Removes a derived layout: first from the manifest (written atomically, so the store never
    /// lists files that are gone), then its directory, renamed aside before it is deleted. Hold
    /// [`lock_builds`](Self::lock_builds).
    pub fn remove_layout(&mut self, name: &str) -> Result<()> {
        let path = self.dir.join(manifest::MANIFEST_FILE);
        let mut on_disk = Manifest::read(&path)?;
        self.manifest.layouts.remove(name);
        self.damaged.retain(|(n, _)| n != name);
        let Some(layout) = on_disk.layouts.remove(name) else {
            return Ok(());
        };
        for rel in &layout.files {
            self.checks.lock().unwrap().remove(rel);
            self.manifest.files.remove(rel);
            on_disk.files.remove(rel);
        }
        on_disk.write(&path)?;
        let dir = self.dir.join(layout_dir(name));
        if dir.exists() && !name.starts_with("static-cache-selection/") {
            crate::runtime::commit::remove_dir(&dir)?;
        }
        for rel in &layout.files {
            // Files outside the layout's own directory (the cache selections in cache/).
            let _ = std::fs::remove_file(self.dir.join(rel));
            let _ = std::fs::remove_file(self.dir.join(format!("{rel}.crc32c")));
        }
        Ok(())
    }

    /// A scratch directory inside the store for spill and run files (created on demand), of
    /// which this process is the owner until it ends: name entries [`hygiene::work_name`] so
    /// that the next open removes them if this process is killed.
    pub fn temp_dir(&self) -> Result<PathBuf> {
        let tmp = self.dir.join("tmp");
        std::fs::create_dir_all(&tmp).context(|| format!("creating {}", tmp.display()))?;
        hygiene::claim_tmp(&tmp)?;
        Ok(tmp)
    }

    /// A new path in the store's `tmp/` for work files of this process (`KIND@PID-N`).
    pub fn work_path(&self, kind: &str) -> Result<PathBuf> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        Ok(self.temp_dir()?.join(hygiene::work_name(kind, &format!("{n}-{nanos}"))))
    }
}
