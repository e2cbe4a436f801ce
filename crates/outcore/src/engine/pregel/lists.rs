//! The adjacency lists a vertex's `compute` reads: from the edge streams S^E (and S^I of
//! in-lists), read sequentially and skipped over vertices that do not read them (GraphD §3.2),
//! or from the rank's lists held in memory ([`ResidentEdges`]).
//!
//! Resident lists are read once, at the first step, when the budget holds them (a part of
//! [`super::sizing::RankMemory`]), and every later step reads no edge byte; names are kept in 4
//! bytes when every name of the partition fits (dense and recoded names up to 2^32), halving
//! them. Any number of cursors read resident lists at once, each from its own offset, which
//! is what lets a rank compute chunks of its vertices in parallel.

use rayon::prelude::*;

use super::rank::VertexRecord;
use super::streams::EdgeStream;
use crate::error::Result;
use crate::program::Wire;
use crate::runtime::prefetch;

/// Names of a resident list, as they are held.
pub enum Names<'a> {
    Narrow(&'a [u32]),
    Wide(&'a [u64]),
}

/// One direction's lists of all the rank's vertices, in the order of A.
pub struct ResidentColumn {
    narrow: Vec<u32>,
    wide: Vec<u64>,
    weights: Vec<f64>,
}

impl ResidentColumn {
    /// Reads `arcs` arcs from `stream` (names of `name_bytes`, and weights when `weighted`).
    fn read(
        stream: &mut EdgeStream,
        arcs: u64,
        weighted: bool,
        name_bytes: u64,
        narrow: bool,
    ) -> Result<ResidentColumn> {
        let arc = name_bytes + if weighted { 8 } else { 0 };
        let mut column = ResidentColumn { narrow: Vec::new(), wide: Vec::new(), weights: Vec::new() };
        if narrow {
            column.narrow.reserve_exact(arcs as usize);
        } else {
            column.wide.reserve_exact(arcs as usize);
        }
        if weighted {
            column.weights.reserve_exact(arcs as usize);
        }
        let mut raw = Vec::new();
        let mut left = arcs;
        while left > 0 {
            let take = left.min(1 << 16);
            stream.read((take * arc) as usize, &mut raw)?;
            for record in raw.chunks_exact(arc as usize) {
                let name = name_at(record, name_bytes);
                if narrow {
                    column.narrow.push(name as u32);
                } else {
                    column.wide.push(name);
                }
                if weighted {
                    column.weights.push(f64::get(&record[name_bytes as usize..]));
                }
            }
            left -= take;
        }
        Ok(column)
    }

    /// Copies the `degree` arcs from arc `at` into `names`, and into `weights` when `weighted`.
    fn list_into(&self, at: usize, degree: u64, names: &mut Vec<u64>, weights: &mut Vec<f64>, weighted: bool) {
        let len = degree as usize;
        names.clear();
        if self.wide.is_empty() {
            names.extend(self.narrow[at..at + len].iter().map(|&n| n as u64));
        } else {
            names.extend_from_slice(&self.wide[at..at + len]);
        }
        if weighted {
            weights.clear();
            weights.extend_from_slice(&self.weights[at..at + len]);
        }
    }

    /// The names of the `degree` arcs from arc `at`.
    pub fn names(&self, at: usize, degree: usize) -> Names<'_> {
        if self.wide.is_empty() {
            Names::Narrow(&self.narrow[at..at + degree])
        } else {
            Names::Wide(&self.wide[at..at + degree])
        }
    }

    /// Replaces every name `n` by `table[n]`, on all cores. Fails with a name beyond the table
    /// or whose entry is `u32::MAX` (no such vertex), leaving the column partly renamed.
    pub fn rename_by(&mut self, table: &[u32]) -> std::result::Result<(), u64> {
        rename_names(&mut self.narrow, table)?;
        rename_names(&mut self.wide, table)
    }
}

/// Names renamed per task of [`rename_names`].
const NAMES_PER_TASK: usize = 1 << 16;
/// How many names ahead a renaming asks for its table entry: names are anywhere in the table
/// (9.6 MB for RMAT-22's 2.4 M vertices), and without the hint each waited on its cache miss.
const RENAME_AHEAD: usize = 16;

/// Replaces every name `n` of `names` by `table[n]` (see [`ResidentColumn::rename_by`]).
fn rename_names<N>(names: &mut [N], table: &[u32]) -> std::result::Result<(), u64>
where
    N: Copy + Into<u64> + From<u32> + Send,
{
    names.par_chunks_mut(NAMES_PER_TASK).try_for_each(|names| {
        for i in 0..names.len() {
            if let Some(&later) = names.get(i + RENAME_AHEAD) {
                prefetch(table.as_ptr().wrapping_add(later.into() as usize));
            }
            let name: u64 = names[i].into();
            match table.get(name as usize) {
                Some(&renamed) if renamed != u32::MAX => names[i] = N::from(renamed),
                _ => return Err(name),
            }
        }
        Ok(())
    })
}

/// The rank's lists held in memory (see the module docs).
pub struct ResidentEdges {
    pub out: Option<ResidentColumn>,
    pub inn: Option<ResidentColumn>,
}

impl ResidentEdges {
    /// Bytes of `arcs` resident arcs.
    pub fn bytes(arcs: u64, weighted: bool, narrow: bool) -> u64 {
        arcs * (if narrow { 4 } else { 8 } + if weighted { 8 } else { 0 })
    }

    /// Reads the streams of `cursor` (just opened) whole: `out_arcs` and `in_arcs` arcs.
    pub fn read(cursor: &mut ListCursor, out_arcs: u64, in_arcs: u64, narrow: bool) -> Result<ResidentEdges> {
        let (weighted, name_bytes) = (cursor.weighted, cursor.name_bytes);
        let ListSource::Streams { out, inn } = &mut cursor.source else {
            return Ok(ResidentEdges { out: None, inn: None });
        };
        let read = |s: &mut EdgeStream, arcs| ResidentColumn::read(s, arcs, weighted, name_bytes, narrow);
        let out = out.as_mut().map(|s| read(s, out_arcs)).transpose()?;
        let inn = inn.as_mut().map(|s| read(s, in_arcs)).transpose()?;
        Ok(ResidentEdges { out, inn })
    }
}

enum ListSource<'r> {
    Streams { out: Option<EdgeStream>, inn: Option<EdgeStream> },
    Resident { edges: &'r ResidentEdges, out_at: usize, in_at: usize },
}

/// The adjacency lists of the vertex being computed, read only when asked for.
pub struct ListCursor<'r> {
    source: ListSource<'r>,
    weighted: bool,
    directed: bool,
    /// Bytes of a name in the streams ([`super::partition::name_bytes`]).
    name_bytes: u64,
    current: VertexRecord,
    loaded: bool,
    raw: Vec<u8>,
    out_names: Vec<u64>,
    out_weights: Vec<f64>,
    in_names: Vec<u64>,
    in_weights: Vec<f64>,
    /// 1.0 for every arc of the longest unweighted list so far.
    ones: Vec<f64>,
    pub edges_read: u64,
}

impl<'r> ListCursor<'r> {
    /// A cursor over edge streams whose names take `name_bytes` bytes.
    pub fn streams(
        out: Option<EdgeStream>,
        inn: Option<EdgeStream>,
        weighted: bool,
        directed: bool,
        name_bytes: u64,
    ) -> Self {
        ListCursor { name_bytes, ..Self::with(ListSource::Streams { out, inn }, weighted, directed) }
    }

    /// A cursor over resident lists, at arc `out_at` of the out-lists and `in_at` of the in-lists.
    pub fn resident(edges: &'r ResidentEdges, out_at: u64, in_at: u64, weighted: bool, directed: bool) -> Self {
        Self::with(ListSource::Resident { edges, out_at: out_at as usize, in_at: in_at as usize }, weighted, directed)
    }

    fn with(source: ListSource<'r>, weighted: bool, directed: bool) -> Self {
        ListCursor {
            source,
            weighted,
            directed,
            name_bytes: 8,
            current: VertexRecord { name: 0, dense: 0, out_degree: 0, in_degree: 0 },
            loaded: false,
            raw: Vec::new(),
            out_names: Vec::new(),
            out_weights: Vec::new(),
            in_names: Vec::new(),
            in_weights: Vec::new(),
            ones: Vec::new(),
            edges_read: 0,
        }
    }

    pub(crate) fn begin(&mut self, vertex: VertexRecord) {
        self.current = vertex;
        self.loaded = false;
    }

    fn arc_bytes(&self) -> u64 {
        self.name_bytes + if self.weighted { 8 } else { 0 }
    }

    pub fn out_names(&self) -> &[u64] {
        &self.out_names
    }

    pub fn out_weights(&self) -> &[f64] {
        if self.weighted {
            &self.out_weights
        } else {
            &self.ones[..self.out_names.len()]
        }
    }

    /// The in-lists (on undirected stores, the out-lists).
    pub fn in_names(&self) -> &[u64] {
        if self.directed {
            &self.in_names
        } else {
            &self.out_names
        }
    }

    pub fn in_weights(&self) -> &[f64] {
        if !self.directed {
            self.out_weights()
        } else if self.weighted {
            &self.in_weights
        } else {
            &self.ones[..self.in_names.len()]
        }
    }

    /// Reads the current vertex's lists (out-lists, and in-lists when the program reads them).
    pub fn load(&mut self) -> Result<()> {
        if self.loaded {
            return Ok(());
        }
        self.loaded = true;
        let (out_degree, in_degree) = (self.current.out_degree, self.current.in_degree);
        let (arc, weighted, name_bytes) = (self.arc_bytes(), self.weighted, self.name_bytes);
        match &mut self.source {
            ListSource::Streams { out, inn } => {
                if let Some(stream) = out.as_mut() {
                    stream.read((out_degree * arc) as usize, &mut self.raw)?;
                    decode_list(&self.raw, weighted, name_bytes, &mut self.out_names, &mut self.out_weights);
                    self.edges_read += out_degree;
                }
                if let Some(stream) = inn.as_mut() {
                    stream.read((in_degree * arc) as usize, &mut self.raw)?;
                    decode_list(&self.raw, weighted, name_bytes, &mut self.in_names, &mut self.in_weights);
                    self.edges_read += in_degree;
                }
            }
            ListSource::Resident { edges, out_at, in_at } => {
                if let Some(column) = &edges.out {
                    column.list_into(*out_at, out_degree, &mut self.out_names, &mut self.out_weights, weighted);
                    self.edges_read += out_degree;
                }
                if let Some(column) = &edges.inn {
                    column.list_into(*in_at, in_degree, &mut self.in_names, &mut self.in_weights, weighted);
                    self.edges_read += in_degree;
                }
            }
        }
        let longest = self.out_names.len().max(self.in_names.len());
        if !self.weighted && self.ones.len() < longest {
            self.ones = vec![1.0; longest.next_power_of_two()];
        }
        Ok(())
    }

    /// Leaves the current vertex: skips its lists when they were not read.
    pub(crate) fn finish(&mut self) -> Result<()> {
        let (out_degree, in_degree) = (self.current.out_degree, self.current.in_degree);
        let arc = self.arc_bytes();
        match &mut self.source {
            ListSource::Resident { edges, out_at, in_at } => {
                if edges.out.is_some() {
                    *out_at += out_degree as usize;
                }
                if edges.inn.is_some() {
                    *in_at += in_degree as usize;
                }
            }
            ListSource::Streams { .. } if self.loaded => {}
            ListSource::Streams { out, inn } => {
                if let Some(stream) = out.as_mut() {
                    stream.skip(out_degree * arc)?;
                }
                if let Some(stream) = inn.as_mut() {
                    stream.skip(in_degree * arc)?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn seeks(&self) -> u64 {
        match &self.source {
            ListSource::Streams { out, inn } => {
                out.as_ref().map_or(0, |s| s.seeks) + inn.as_ref().map_or(0, |s| s.seeks)
            }
            ListSource::Resident { .. } => 0,
        }
    }
}

fn decode_list(raw: &[u8], weighted: bool, name_bytes: u64, names: &mut Vec<u64>, weights: &mut Vec<f64>) {
    names.clear();
    weights.clear();
    let arc = name_bytes as usize + if weighted { 8 } else { 0 };
    for record in raw.chunks_exact(arc) {
        names.push(name_at(record, name_bytes));
        if weighted {
            weights.push(f64::get(&record[name_bytes as usize..]));
        }
    }
}

/// The name an arc record starts with, of `name_bytes` (4 or 8) bytes.
fn name_at(record: &[u8], name_bytes: u64) -> u64 {
    if name_bytes == 4 {
        u32::from_le_bytes(record[..4].try_into().expect("4 bytes")) as u64
    } else {
        u64::get(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(narrow: Vec<u32>, wide: Vec<u64>) -> ResidentColumn {
        ResidentColumn { narrow, wide, weights: Vec::new() }
    }

    #[test]
    fn renames_every_name_by_the_table_and_refuses_a_name_beyond_it() {
        // More names than one task renames, so that the tasks' prefetches cross their ends.
        let table: Vec<u32> = (0..1000u32).map(|n| 999 - n).collect();
        let names: Vec<u32> = (0..3 * NAMES_PER_TASK as u32 + 7).map(|i| i * 7919 % 1000).collect();
        let mut narrow = column(names.clone(), Vec::new());
        narrow.rename_by(&table).unwrap();
        assert!(narrow.narrow.iter().zip(&names).all(|(&renamed, &name)| renamed == 999 - name));

        let mut wide = column(Vec::new(), names.iter().map(|&n| n as u64).collect());
        wide.rename_by(&table).unwrap();
        assert!(wide.wide.iter().zip(&names).all(|(&renamed, &name)| renamed == 999 - name as u64));

        let mut corrupt = column(vec![3, 1000, 5], Vec::new());
        assert_eq!(corrupt.rename_by(&table), Err(1000), "a name beyond the table is reported");
        let mut holes = table.clone();
        holes[5] = u32::MAX;
        let mut corrupt = column(vec![3, 4, 5], Vec::new());
        assert_eq!(corrupt.rename_by(&holes), Err(5), "a name without a vertex is reported");
    }
}
