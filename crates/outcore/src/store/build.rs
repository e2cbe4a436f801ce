//! Writing stores: a [`StoreBuilder`] writes every file of a new generation into
//! `STORE/.gen.building-PID/` and only [`commit`](StoreBuilder::commit) makes it current, after
//! the manifest (written last) ([`super::generation`]). An import that fails or is killed
//! therefore leaves nothing that looks like a store, and never touches an existing generation:
//! runs reading it go on, and it is retired once none does. A store from before generations is
//! replaced by a generational one in one rename swap (built in a sibling `.NAME.building-PID/`).
//!
//! The CSR writer streams arcs already sorted by (source, target), so the same code serves the
//! bounded-memory import pipeline (fed by an external sort) and [`build_in_memory`], the simple
//! construction used for small graphs and as the oracle in tests.

use std::path::{Path, PathBuf};

use super::csr::{busiest_by_offsets, target_bytes_for, Direction};
use super::files::{sync_dir, StoreFile, StoreFileWriter};
use super::generation;
use super::ids::{BY_ORIGINAL, ORIGINAL_U64, STRING_DATA, STRING_OFFSETS};
use super::manifest::{FileEntry, IdType, LayoutEntry, Manifest, WeightType, MANIFEST_FILE};
use super::Store;
use crate::error::{Error, IoContext, Result};
use crate::runtime::IoCounters;

/// One stored arc in dense ids.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arc {
    pub source: u64,
    pub target: u64,
    pub weight: f64,
}

/// Builds a store in a temporary directory next to its final place.
pub struct StoreBuilder {
    final_dir: PathBuf,
    /// The generational root the new generation is committed into: `final_dir`, or for a store
    /// from before generations a sibling that replaces it at commit.
    root: PathBuf,
    replaces_legacy: bool,
    created_root: bool,
    work_dir: PathBuf,
    counters: IoCounters,
    files: Vec<(String, FileEntry)>,
    layouts: Vec<(String, LayoutEntry)>,
    committed: bool,
}

impl StoreBuilder {
    pub fn new(final_dir: &Path, counters: IoCounters) -> Result<StoreBuilder> {
        let name = final_dir
            .file_name()
            .ok_or_else(|| Error::invalid(format!("invalid store path {}", final_dir.display())))?
            .to_string_lossy()
            .to_string();
        let parent = match final_dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).context(|| format!("creating {}", parent.display()))?;
        super::hygiene::remove_stale_hidden(&parent, &format!(".{name}."));
        let (root, replaces_legacy, created_root) = match Target::of(final_dir)? {
            Target::Missing => {
                std::fs::create_dir_all(final_dir).context(|| format!("creating {}", final_dir.display()))?;
                (final_dir.to_path_buf(), false, true)
            }
            Target::Generational => (final_dir.to_path_buf(), false, false),
            Target::Legacy => {
                let sibling = parent.join(format!(".{name}.building-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&sibling);
                std::fs::create_dir_all(&sibling).context(|| format!("creating {}", sibling.display()))?;
                (sibling, true, true)
            }
        };
        super::hygiene::remove_stale_hidden(&root, ".");
        let work_dir = root.join(format!("{}{}", generation::BUILDING_PREFIX, std::process::id()));
        if work_dir.exists() {
            std::fs::remove_dir_all(&work_dir).context(|| format!("removing stale {}", work_dir.display()))?;
        }
        std::fs::create_dir_all(&work_dir).context(|| format!("creating {}", work_dir.display()))?;
        Ok(StoreBuilder {
            final_dir: final_dir.to_path_buf(),
            root,
            replaces_legacy,
            created_root,
            work_dir,
            counters,
            files: Vec::new(),
            layouts: Vec::new(),
            committed: false,
        })
    }

    /// The directory being built (run files and scratch data may go in `tmp/` inside it).
    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    /// A scratch directory inside the work dir, removed at commit.
    pub fn scratch_dir(&self) -> Result<PathBuf> {
        let dir = self.work_dir.join("tmp");
        std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    pub fn counters(&self) -> &IoCounters {
        &self.counters
    }

    /// Creates a new file of the store; register it with [`add_file`](Self::add_file).
    pub fn create_file(&self, rel: &str) -> Result<StoreFileWriter> {
        StoreFileWriter::create(&self.work_dir.join(rel), self.counters.clone())
    }

    pub fn add_file(&mut self, rel: &str, entry: FileEntry) {
        self.files.push((rel.to_string(), entry));
    }

    /// Writes `ids/original` from u64 original ids in dense order.
    pub fn write_u64_ids(&mut self, ids: impl IntoIterator<Item = u64>) -> Result<u64> {
        let mut w = self.create_file(ORIGINAL_U64)?;
        let mut n = 0;
        for id in ids {
            w.write_u64(id)?;
            n += 1;
        }
        let entry = w.finish()?;
        self.add_file(ORIGINAL_U64, entry);
        Ok(n)
    }

    /// Writes `ids/strings.*` from string original ids in dense order.
    pub fn write_string_ids<S: AsRef<str>>(&mut self, ids: impl IntoIterator<Item = S>) -> Result<u64> {
        let mut offsets = self.create_file(STRING_OFFSETS)?;
        let mut data = self.create_file(STRING_DATA)?;
        let mut pos = 0u64;
        let mut n = 0;
        offsets.write_u64(0)?;
        for id in ids {
            let bytes = id.as_ref().as_bytes();
            data.write_all(bytes)?;
            pos += bytes.len() as u64;
            offsets.write_u64(pos)?;
            n += 1;
        }
        let (o, d) = (offsets.finish()?, data.finish()?);
        self.add_file(STRING_OFFSETS, o);
        self.add_file(STRING_DATA, d);
        Ok(n)
    }

    /// Writes `ids/by-original`: dense ids in ascending original-id order.
    pub fn write_by_original(&mut self, dense_in_original_order: impl IntoIterator<Item = u64>) -> Result<()> {
        let mut w = self.create_file(BY_ORIGINAL)?;
        for d in dense_in_original_order {
            w.write_u64(d)?;
        }
        let entry = w.finish()?;
        self.add_file(BY_ORIGINAL, entry);
        Ok(())
    }

    /// Writes a CSR layout (`csr-out` or `csr-in`) from arcs sorted by (source, target), where
    /// "source" is the grouping vertex of the layout. Returns the number of arcs written.
    pub fn write_csr(
        &mut self,
        name: &str,
        vertices: u64,
        weighted: bool,
        sorted_arcs: impl IntoIterator<Item = Result<Arc>>,
    ) -> Result<u64> {
        let width = target_bytes_for(vertices);
        let mut offsets = self.create_file(&format!("{name}/offsets"))?;
        let mut targets = self.create_file(&format!("{name}/targets"))?;
        let mut weights = if weighted { Some(self.create_file(&format!("{name}/weights"))?) } else { None };
        let mut arcs = 0u64;
        let mut next_vertex = 0u64; // offsets written for vertices < next_vertex
        let mut last: Option<(u64, u64)> = None;
        for arc in sorted_arcs {
            let arc = arc?;
            if arc.source >= vertices || arc.target >= vertices {
                return Err(Error::invalid(format!(
                    "arc {} -> {} out of range for {vertices} vertices",
                    arc.source, arc.target
                )));
            }
            if let Some(prev) = last {
                if (arc.source, arc.target) < prev {
                    return Err(Error::invalid("arcs given to the CSR writer are not sorted"));
                }
            }
            last = Some((arc.source, arc.target));
            while next_vertex <= arc.source {
                offsets.write_u64(arcs)?;
                next_vertex += 1;
            }
            if width == 4 {
                targets.write_u32(arc.target as u32)?;
            } else {
                targets.write_u64(arc.target)?;
            }
            if let Some(w) = weights.as_mut() {
                w.write_f64(arc.weight)?;
            }
            arcs += 1;
        }
        while next_vertex <= vertices {
            offsets.write_u64(arcs)?;
            next_vertex += 1;
        }
        self.add_layout(name, width, offsets, targets, weights)?;
        Ok(arcs)
    }

    /// Writes a CSR layout from arrays already in memory: `offsets` (|V| + 1 entries, the
    /// last one `targets.len()`), every list's targets in order (each list sorted by target,
    /// as [`write_csr`](Self::write_csr) requires) and, for weighted layouts, their weights.
    /// The files are byte for byte those `write_csr` writes for the same arcs; they are
    /// encoded in large chunks instead of value by value. Returns the number of arcs.
    pub fn write_csr_arrays(
        &mut self,
        name: &str,
        offsets: &[u64],
        targets: &[u32],
        weights: Option<&[f64]>,
    ) -> Result<u64> {
        let vertices = offsets.len().saturating_sub(1) as u64;
        let arcs = targets.len() as u64;
        if offsets.first() != Some(&0)
            || offsets.last() != Some(&arcs)
            || weights.is_some_and(|w| w.len() != targets.len())
        {
            return Err(Error::invalid(format!(
                "{name}: offsets, targets and weights given to the CSR writer disagree"
            )));
        }
        let width = target_bytes_for(vertices);
        let mut offsets_file = self.create_file(&format!("{name}/offsets"))?;
        let mut targets_file = self.create_file(&format!("{name}/targets"))?;
        let mut weights_file =
            if weights.is_some() { Some(self.create_file(&format!("{name}/weights"))?) } else { None };
        write_le_chunks(&mut offsets_file, offsets, 8, |v, out| out.extend_from_slice(&v.to_le_bytes()))?;
        if width == 4 {
            write_le_chunks(&mut targets_file, targets, 4, |t, out| out.extend_from_slice(&t.to_le_bytes()))?;
        } else {
            write_le_chunks(&mut targets_file, targets, 8, |t, out| out.extend_from_slice(&(*t as u64).to_le_bytes()))?;
        }
        if let (Some(file), Some(weights)) = (weights_file.as_mut(), weights) {
            write_le_chunks(file, weights, 8, |w, out| out.extend_from_slice(&w.to_le_bytes()))?;
        }
        self.add_layout(name, width, offsets_file, targets_file, weights_file)?;
        Ok(arcs)
    }

    /// Finishes the files of a CSR layout and registers them and the layout.
    fn add_layout(
        &mut self,
        name: &str,
        width: u64,
        offsets: StoreFileWriter,
        targets: StoreFileWriter,
        weights: Option<StoreFileWriter>,
    ) -> Result<()> {
        let mut layout = LayoutEntry::default();
        let mut add = |this: &mut Self, rel: String, entry: FileEntry| {
            layout.files.push(rel.clone());
            layout.bytes += entry.bytes;
            this.add_file(&rel, entry);
        };
        add(self, format!("{name}/offsets"), offsets.finish()?);
        add(self, format!("{name}/targets"), targets.finish()?);
        if let Some(w) = weights {
            add(self, format!("{name}/weights"), w.finish()?);
        }
        layout.params.insert("target_bytes".into(), width.into());
        self.layouts.push((name.to_string(), layout));
        Ok(())
    }

    /// Writes the manifest (last), moves the store into place (replacing an existing one only
    /// now), and opens it. A manifest without [`max_degree`](Manifest::max_degree) (a build that
    /// did not hold the offsets in memory) gets it from the offsets written.
    pub fn commit(mut self, mut manifest: Manifest) -> Result<Store> {
        let scratch = self.work_dir.join("tmp");
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch).context(|| format!("removing {}", scratch.display()))?;
        }
        if manifest.max_degree.is_none() {
            manifest.max_degree = Some(self.written_max_degree(manifest.vertices, manifest.directed)?);
        }
        for (rel, entry) in std::mem::take(&mut self.files) {
            manifest.files.insert(rel, entry);
        }
        for (name, layout) in std::mem::take(&mut self.layouts) {
            manifest.layouts.insert(name, layout);
        }
        manifest.write(&self.work_dir.join(MANIFEST_FILE))?;
        let lock = self.work_dir.join(generation::LOCK_FILE);
        std::fs::File::create(&lock).context(|| format!("creating {}", lock.display()))?;
        sync_dir(&self.work_dir).context(|| format!("syncing {}", self.work_dir.display()))?;
        generation::commit(&self.root, &self.work_dir)?;
        self.committed = true;
        if self.replaces_legacy {
            self.swap_in_for_legacy()?;
        }
        Store::open_with(&self.final_dir, self.counters.clone())
    }

    /// [`max_degree`](super::csr::max_degree) of the csr-out and csr-in written, in one pass
    /// over their offsets ([`busiest_by_offsets`]).
    fn written_max_degree(&self, vertices: u64, directed: bool) -> Result<u64> {
        let open = |name: &str| StoreFile::open(&self.work_dir.join(format!("{name}/offsets")), self.counters.clone());
        let out = open("csr-out")?;
        let inn = if directed { Some(open("csr-in")?) } else { None };
        let busiest = busiest_by_offsets(vertices, directed, |direction, first, offsets| match direction {
            Direction::In => inn.as_ref().expect("read only when directed").read_u64s_at(first, offsets),
            Direction::Out => out.read_u64s_at(first, offsets),
        })?;
        Ok(busiest.1)
    }

    /// Replaces a store from before generations by the generational root built beside it.
    fn swap_in_for_legacy(&self) -> Result<()> {
        let name = self.final_dir.file_name().unwrap().to_string_lossy().to_string();
        let old = self.root.with_file_name(format!(".{name}.replaced-{}", std::process::id()));
        std::fs::rename(&self.final_dir, &old).context(|| format!("moving aside {}", self.final_dir.display()))?;
        std::fs::rename(&self.root, &self.final_dir)
            .context(|| format!("moving the new store into {}", self.final_dir.display()))?;
        if let Some(parent) = self.final_dir.parent() {
            let _ = sync_dir(if parent.as_os_str().is_empty() { Path::new(".") } else { parent });
        }
        std::fs::remove_dir_all(&old).context(|| format!("removing the replaced store {}", old.display()))
    }
}

/// Writes `values` little-endian through a 1 MiB buffer (`bytes` each).
fn write_le_chunks<T>(
    file: &mut StoreFileWriter,
    values: &[T],
    bytes: usize,
    encode: impl Fn(&T, &mut Vec<u8>),
) -> Result<()> {
    const CHUNK_BYTES: usize = 1 << 20;
    let mut buffer = Vec::with_capacity(CHUNK_BYTES);
    for chunk in values.chunks(CHUNK_BYTES / bytes) {
        buffer.clear();
        for value in chunk {
            encode(value, &mut buffer);
        }
        file.write_all(&buffer)?;
    }
    Ok(())
}

/// Checks that an import may write to `dir`: missing, a store (with or without generations), or
/// an empty directory (or one holding only what a killed import left).
pub fn check_replaceable(dir: &Path) -> Result<()> {
    Target::of(dir).map(|_| ())
}

/// What an import finds at the store path.
enum Target {
    Missing,
    /// A generational root, or a directory holding only what a killed first import leaves.
    Generational,
    /// A store from before generations (`manifest.json` in the directory itself).
    Legacy,
}

impl Target {
    fn of(dir: &Path) -> Result<Target> {
        if !dir.exists() {
            return Ok(Target::Missing);
        }
        if generation::is_generational(dir) {
            return Ok(Target::Generational);
        }
        if dir.join(MANIFEST_FILE).exists() {
            return Ok(Target::Legacy);
        }
        let entries = std::fs::read_dir(dir).context(|| format!("listing {}", dir.display()))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let ours = name.starts_with('.')
                || name == generation::WRITER_LOCK
                || generation::generation_number(&name).is_some();
            if !ours {
                return Err(Error::invalid(format!(
                    "{} exists and is not an outcore store ({name} is in it, no manifest.json): refusing to replace it",
                    dir.display()
                )));
            }
        }
        Ok(Target::Generational)
    }
}

impl Drop for StoreBuilder {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.work_dir);
            if self.replaces_legacy {
                let _ = std::fs::remove_dir_all(&self.root);
            } else if self.created_root {
                // Only if empty: another import may be building its first generation here too.
                let _ = std::fs::remove_dir(&self.root);
            }
        }
    }
}

/// Original ids of an in-memory graph.
#[derive(Debug, Clone, PartialEq)]
pub enum OriginalIds {
    U64(Vec<u64>),
    Str(Vec<String>),
}

/// A small graph given entirely in memory, in original ids.
#[derive(Debug, Clone, PartialEq)]
pub struct InMemoryGraph {
    /// Every vertex (isolated ones included); duplicates are ignored.
    pub vertices: OriginalIds,
    /// Edges as (source index, target index, weight), indices into `vertices`.
    pub edges: Vec<(usize, usize, f64)>,
    pub directed: bool,
    pub weighted: bool,
}

/// Builds a store the simple way: ids sorted in memory, arcs sorted in memory. Dense ids are
/// assigned in ascending original-id order (as the import pipeline does). `edges` index into
/// `vertices`; duplicates and self-loops are kept as given.
pub fn build_in_memory(dir: &Path, graph: &InMemoryGraph) -> Result<Store> {
    let n = match &graph.vertices {
        OriginalIds::U64(v) => v.len(),
        OriginalIds::Str(v) => v.len(),
    };
    // rank[i] = dense id of vertices[i]
    let mut order: Vec<usize> = (0..n).collect();
    match &graph.vertices {
        OriginalIds::U64(v) => order.sort_by_key(|&i| v[i]),
        OriginalIds::Str(v) => order.sort_by(|&a, &b| v[a].cmp(&v[b])),
    }
    let mut rank = vec![0u64; n];
    for (dense, &i) in order.iter().enumerate() {
        rank[i] = dense as u64;
    }
    let mut builder = StoreBuilder::new(dir, IoCounters::new())?;
    let id_type = match &graph.vertices {
        OriginalIds::U64(v) => {
            builder.write_u64_ids(order.iter().map(|&i| v[i]))?;
            IdType::U64
        }
        OriginalIds::Str(v) => {
            builder.write_string_ids(order.iter().map(|&i| v[i].as_str()))?;
            IdType::String
        }
    };
    builder.write_by_original(0..n as u64)?;
    let mut arcs: Vec<Arc> = Vec::new();
    for &(s, t, w) in &graph.edges {
        let (s, t) = (rank[s], rank[t]);
        arcs.push(Arc { source: s, target: t, weight: w });
        if !graph.directed && s != t {
            arcs.push(Arc { source: t, target: s, weight: w });
        }
    }
    let key = |a: &Arc| (a.source, a.target, a.weight.to_bits());
    arcs.sort_by_key(key);
    let stored = builder.write_csr("csr-out", n as u64, graph.weighted, arcs.iter().map(|a| Ok(*a)))?;
    if graph.directed {
        let mut reversed: Vec<Arc> =
            arcs.iter().map(|a| Arc { source: a.target, target: a.source, weight: a.weight }).collect();
        reversed.sort_by_key(key);
        builder.write_csr("csr-in", n as u64, graph.weighted, reversed.iter().map(|a| Ok(*a)))?;
    }
    let weights = graph.weighted.then_some(WeightType::F64);
    let mut manifest = Manifest::new(n as u64, stored, graph.edges.len() as u64, graph.directed, weights, id_type);
    manifest.max_degree = Some(max_degree_of_arcs(n, &arcs));
    manifest.created.insert("builder".into(), "in-memory".into());
    builder.commit(manifest)
}

/// [`max_degree`](super::csr::max_degree) of the store whose csr-out holds `arcs`: each arc is an
/// out-arc of its source and an in-arc of its target (an undirected store's csr-out holds every
/// edge both ways and serves as csr-in).
fn max_degree_of_arcs(vertices: usize, arcs: &[Arc]) -> u64 {
    let mut degrees = vec![0u64; vertices];
    for arc in arcs {
        degrees[arc.source as usize] += 1;
        degrees[arc.target as usize] += 1;
    }
    degrees.into_iter().max().unwrap_or(0)
}
