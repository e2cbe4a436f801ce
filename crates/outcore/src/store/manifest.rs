//! `manifest.json`: what a store holds, and the proof that it is complete.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};

pub const MANIFEST_FILE: &str = "manifest.json";
pub const FORMAT_NAME: &str = "outcore-store";
/// Bumped whenever a layout's on-disk format changes incompatibly.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdType {
    U64,
    String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightType {
    F64,
}

/// Size and checksum of one file, keyed in the manifest by its path relative to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub bytes: u64,
    pub crc32: u32,
    /// CRC32C of the file's block-checksum sidecar (`FILE.crc32c`, see [`super::blocks`]);
    /// absent in stores written before block checksums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_crc32c: Option<u32>,
}

/// A built layout: its files and the parameters it was built with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutEntry {
    pub files: Vec<String>,
    pub bytes: u64,
    #[serde(default)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub vertices: u64,
    /// Stored arcs in csr-out (undirected edges stored in both directions).
    pub arcs: u64,
    /// Edges as the user counts them (undirected edges once).
    pub edges: u64,
    /// The most in- plus out-arcs of one vertex (an undirected store's csr-out serves as csr-in,
    /// so there it is twice the largest list), as the shards engine counts them for its hub
    /// check ([`csr::max_degree`](super::csr::max_degree)). Recorded when the store is built so
    /// that planning does not read both offsets files; absent in stores built before it was
    /// (the planner then finds it from the offsets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_degree: Option<u64>,
    pub directed: bool,
    pub weights: Option<WeightType>,
    pub id_type: IdType,
    /// Orderings applied, oldest first (e.g. `["norder"]`); empty for the input order.
    #[serde(default)]
    pub orderings: Vec<String>,
    pub files: BTreeMap<String, FileEntry>,
    pub layouts: BTreeMap<String, LayoutEntry>,
    /// How the store was made: tool version, inputs, options.
    #[serde(default)]
    pub created: serde_json::Map<String, serde_json::Value>,
}

impl Manifest {
    pub fn new(
        vertices: u64,
        arcs: u64,
        edges: u64,
        directed: bool,
        weights: Option<WeightType>,
        id_type: IdType,
    ) -> Self {
        Manifest {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            vertices,
            arcs,
            edges,
            max_degree: None,
            directed,
            weights,
            id_type,
            orderings: Vec::new(),
            files: BTreeMap::new(),
            layouts: BTreeMap::new(),
            created: serde_json::Map::new(),
        }
    }

    pub fn read(path: &Path) -> Result<Manifest> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::store(path, format!("cannot read the manifest: {e}")))?;
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| Error::store(path, format!("the manifest is not valid ({e}): the store is damaged")))?;
        if manifest.format != FORMAT_NAME {
            return Err(Error::store(path, format!("not an outcore store manifest (format '{}')", manifest.format)));
        }
        if manifest.version != FORMAT_VERSION {
            return Err(Error::store(
                path,
                format!(
                    "store format version {} is not supported by this outcore (version {FORMAT_VERSION}); re-import the graph",
                    manifest.version
                ),
            ));
        }
        Ok(manifest)
    }

    /// Writes the manifest atomically (temp file, fsync, rename, fsync of the directory).
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("manifest serialises");
        super::files::write_atomic(path, text.as_bytes()).context(|| format!("writing {}", path.display()))
    }

    /// Bytes of all files of a layout.
    pub fn layout_bytes(&self, name: &str) -> u64 {
        self.layouts.get(name).map(|l| l.bytes).unwrap_or(0)
    }
}
