//! The graph store: a directory holding one graph in layouts built for out-of-core access.
//!
//! ```text
//! STORE/
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
//! ```
//! Every file has its size and CRC-32 in the manifest, and a sidecar `FILE.crc32c` of CRC32C
//! block checksums verified as the file is read ([`blocks`]). Opening checks the format version
//! and every file's size; every read through [`Store::file`] checks the blocks it touches before
//! returning them; [`Store::verify`] (`info --verify`) checks every file and sidecar whole.
//! Only this module and the spill/stream modules of the engines open files (ARCHITECTURE.md).

pub mod blocks;
pub mod build;
pub mod csr;
pub mod files;
pub mod ids;
pub mod manifest;
pub mod order;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use blocks::FileChecks;
pub use build::{build_in_memory, InMemoryGraph, OriginalIds, StoreBuilder};
pub use csr::{CsrLayout, Direction, InMemoryCsr};
pub use files::{write_atomic, StoreFile, StoreFileWriter};
pub use ids::{IdMap, OriginalId};
pub use manifest::{FileEntry, IdType, LayoutEntry, Manifest, WeightType, FORMAT_VERSION};

use crate::error::{Error, IoContext, Result};
use crate::runtime::IoCounters;

/// In stores without block checksums, files up to this size are checksummed every time the
/// store is opened (the others on their first read, [`blocks`]).
pub const QUICK_VERIFY_LIMIT: u64 = 16 << 20;

/// An open, validated store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
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
        let dir = dir.as_ref().to_path_buf();
        if !dir.is_dir() {
            return Err(Error::store(&dir, "no such store (directory does not exist)"));
        }
        let manifest_path = dir.join(manifest::MANIFEST_FILE);
        if !manifest_path.exists() {
            return Err(Error::store(
                &dir,
                "not a store: manifest.json is missing (an import that did not finish leaves no manifest)",
            ));
        }
        let manifest = Manifest::read(&manifest_path)?;
        let store = Store { dir, manifest, counters, checks: Default::default() };
        store.check_files(false)?;
        Ok(store)
    }

    /// Checks every file's size and full CRC-32.
    pub fn verify(&self) -> Result<()> {
        self.check_files(true)
    }

    fn check_files(&self, full: bool) -> Result<()> {
        for (rel, entry) in &self.manifest.files {
            let path = self.dir.join(rel);
            let meta = std::fs::metadata(&path)
                .map_err(|e| Error::store(&path, format!("file listed in the manifest is unreadable: {e}")))?;
            if meta.len() != entry.bytes {
                return Err(Error::store(
                    &path,
                    format!("size is {} bytes, the manifest says {} (truncated or damaged)", meta.len(), entry.bytes),
                ));
            }
            // Files with block checksums are verified block by block as they are read; only
            // old stores' small files are checked whole on open.
            if full {
                FileChecks::load(&path, entry)?;
            }
            if full || (entry.blocks_crc32c.is_none() && entry.bytes <= QUICK_VERIFY_LIMIT) {
                let crc = files::crc32_of_file(&path)?;
                if crc != entry.crc32 {
                    return Err(Error::store(
                        &path,
                        format!(
                            "checksum mismatch (crc32 {crc:08x}, manifest {:08x}): the file is corrupted",
                            entry.crc32
                        ),
                    ));
                }
            }
        }
        Ok(())
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
    pub fn with_counters(&self, counters: IoCounters) -> Store {
        Store { dir: self.dir.clone(), manifest: self.manifest.clone(), counters, checks: self.checks.clone() }
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
        let loaded = Arc::new(FileChecks::load(&self.dir.join(rel), entry)?);
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
    /// and rewrites the manifest atomically.
    pub fn add_layout(&mut self, name: &str, layout: LayoutEntry, files: Vec<(String, FileEntry)>) -> Result<()> {
        for (rel, entry) in files {
            self.checks.lock().unwrap().remove(&rel);
            self.manifest.files.insert(rel, entry);
        }
        self.manifest.layouts.insert(name.to_string(), layout);
        self.manifest.write(&self.dir.join(manifest::MANIFEST_FILE))
    }

    /// Removes a derived layout: first from the manifest (written atomically, so the store never
    /// lists files that are gone), then its directory, renamed aside before it is deleted.
    pub fn remove_layout(&mut self, name: &str) -> Result<()> {
        let Some(layout) = self.manifest.layouts.remove(name) else {
            return Ok(());
        };
        for rel in &layout.files {
            self.checks.lock().unwrap().remove(rel);
            self.manifest.files.remove(rel);
        }
        self.manifest.write(&self.dir.join(manifest::MANIFEST_FILE))?;
        let dir = self.dir.join(name);
        if dir.exists() {
            let aside = self.dir.join(format!(".{name}.removed-{}", std::process::id()));
            std::fs::rename(&dir, &aside).context(|| format!("moving {} aside", dir.display()))?;
            std::fs::remove_dir_all(&aside).context(|| format!("removing {}", aside.display()))?;
        }
        Ok(())
    }

    /// A scratch directory inside the store for spill and run files (created on demand).
    pub fn temp_dir(&self) -> Result<PathBuf> {
        let tmp = self.dir.join("tmp");
        std::fs::create_dir_all(&tmp).context(|| format!("creating {}", tmp.display()))?;
        Ok(tmp)
    }
}
