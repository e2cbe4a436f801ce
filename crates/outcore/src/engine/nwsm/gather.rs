//! Gather buffers (TurboGraph++ §4.1, Algorithms 2–4).
//!
//! * [`LocalGather`] — the local gather buffer `LGB^l` of one scatter task: a fixed number of
//!   (target, value) updates; when full, it is sorted by target, equal targets are folded with
//!   `vertex_gather`, and the result goes to the owner rank's global gather buffer.
//! * [`GlobalGather`] — the global gather buffer `GGB` of one rank: the values of its first
//!   vertex range are gathered in memory; updates to its other `q − 1` ranges are spilled to one
//!   disk partition per range (Algorithm 2), to be gathered range by range before apply
//!   (Algorithm 3), as `runtime::spill` files (removed once read, or dropped).
//!   [`GlobalGather::apply_ranges`] double-buffers: a loader thread gathers the spilled updates
//!   of range i + 1 while apply runs over range i (Algorithm 4).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::query::{GatherValue, NeighborhoodQuery};
use crate::error::Result;
use crate::runtime::spill::{SpillFile, SpillWriter};
use crate::runtime::IoCounters;
use crate::VertexId;

/// Bytes of one spilled update: target (u32) and value (u64).
pub const SPILL_RECORD_BYTES: usize = 12;
/// Largest write buffer of a spill partition (the plan may give less).
pub const SPILL_BUFFER_BYTES: usize = 64 << 10;
/// Bytes a local gather buffer spends per update it holds: `(u32, V)` in memory, padded.
pub const LOCAL_RECORD_BYTES: u64 = std::mem::size_of::<(u32, u64)>() as u64;

/// Counters of a rank's gathering; a query's figures ([`NwsmQuery`](crate::engine::NwsmQuery))
/// write them, summed over the ranks, as their keys.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GatherStats {
    /// Updates sent to gather tasks.
    pub updates_sent: u64,
    /// Of those, to other ranks.
    pub updates_to_other_ranks: u64,
    /// Updates gathered in memory.
    pub updates_gathered_in_memory: u64,
    /// Updates spilled to range files.
    pub updates_spilled: u64,
    /// Bytes of spill files written.
    pub spill_bytes_written: u64,
    /// Bytes of spill files read.
    pub spill_bytes_read: u64,
    /// Time spent gathering updates (the key `busy_gather_seconds`).
    #[serde(rename = "busy_gather_seconds", with = "crate::engine::stats::seconds")]
    pub gather_time: Duration,
}

/// The spilled updates of one range: written during scatter, complete after it.
#[derive(Default)]
struct SpillPartition {
    writer: Option<SpillWriter>,
    file: Option<SpillFile>,
    records: u64,
}

/// A rank's global gather buffer: range 0 in memory, ranges 1..q spilled.
pub struct GlobalGather<V: GatherValue> {
    /// Bounds of the rank's vertex ranges (q + 1 BBP ids).
    bounds: Vec<u64>,
    resident: Vec<V>,
    spills: Vec<SpillPartition>,
    spill_dir: PathBuf,
    tag: String,
    counters: IoCounters,
    buffer_bytes: usize,
    pub stats: GatherStats,
}

impl<V: GatherValue> GlobalGather<V> {
    /// `bounds`: the rank's range bounds; spill files go to `spill_dir` named after `tag`.
    /// Each spill partition writes through a buffer of `buffer_bytes`.
    pub fn new(
        bounds: Vec<u64>,
        spill_dir: PathBuf,
        tag: &str,
        counters: IoCounters,
        buffer_bytes: usize,
    ) -> GlobalGather<V> {
        let resident = vec![V::default(); (bounds[1] - bounds[0]) as usize];
        let spills = (1..bounds.len() - 1).map(|_| SpillPartition::default()).collect();
        let tag = tag.to_string();
        GlobalGather { bounds, resident, spills, spill_dir, tag, counters, buffer_bytes, stats: GatherStats::default() }
    }

    /// Gathers combined updates (targets in this rank) into memory or spills them (Algorithm 2).
    pub fn gather<Q: NeighborhoodQuery<Value = V>>(&mut self, query: &Q, updates: &[(u32, V)]) -> Result<()> {
        self.gather_all(query, updates.iter().copied())
    }

    /// Gathers a batch as it came over the transport ([`encode_updates`]), without decoding it
    /// into a second buffer first.
    pub fn gather_encoded<Q: NeighborhoodQuery<Value = V>>(&mut self, query: &Q, bytes: &[u8]) -> Result<()> {
        self.gather_all(query, decoded(bytes))
    }

    fn gather_all<Q: NeighborhoodQuery<Value = V>>(
        &mut self,
        query: &Q,
        updates: impl Iterator<Item = (u32, V)>,
    ) -> Result<()> {
        let started = Instant::now();
        let (lo, hi) = (self.bounds[0], self.bounds[1]);
        for (target, value) in updates {
            let t = target as u64;
            if t >= lo && t < hi {
                let slot = &mut self.resident[(t - lo) as usize];
                *slot = query.vertex_gather(*slot, value);
                self.stats.updates_gathered_in_memory += 1;
            } else {
                let range = self.bounds.partition_point(|&b| b <= t) - 1;
                let mut record = [0u8; SPILL_RECORD_BYTES];
                record[..4].copy_from_slice(&target.to_le_bytes());
                record[4..].copy_from_slice(&value.to_bits().to_le_bytes());
                self.spill_writer(range)?.write(&record)?;
                self.spills[range - 1].records += 1;
                self.stats.updates_spilled += 1;
                self.stats.spill_bytes_written += SPILL_RECORD_BYTES as u64;
            }
        }
        self.stats.gather_time += started.elapsed();
        Ok(())
    }

    /// The writer of range `range`'s spill file, created at its first update. Its buffer is
    /// whole records, so every write is.
    fn spill_writer(&mut self, range: usize) -> Result<&mut SpillWriter> {
        let part = &mut self.spills[range - 1];
        if part.writer.is_none() {
            let name = format!("{}-range-{range}.spill", self.tag);
            let buffer = whole_records(self.buffer_bytes);
            part.writer = Some(SpillWriter::create(&self.spill_dir, "nwsm", &name, buffer, self.counters.clone())?);
        }
        Ok(part.writer.as_mut().expect("created above"))
    }

    /// Gathers the spilled updates of range `range` (≥ 1) into a fresh array (Algorithm 3); the
    /// spill file is removed once read.
    fn load_spilled<Q: NeighborhoodQuery<Value = V>>(
        query: &Q,
        part: SpillPartition,
        buffer_bytes: usize,
        lo: u64,
        len: usize,
    ) -> Result<(Vec<V>, u64)> {
        let mut values = vec![V::default(); len];
        let Some(file) = part.file.filter(|_| part.records > 0) else { return Ok((values, 0)) };
        let mut reader = file.into_reader(whole_records(buffer_bytes))?;
        let mut read = 0;
        while let Some(record) = reader.next_record(SPILL_RECORD_BYTES)? {
            read += 1;
            let target = u32::from_le_bytes(record[..4].try_into().unwrap()) as u64;
            let value = V::from_bits(u64::from_le_bytes(record[4..].try_into().unwrap()));
            let slot = &mut values[(target - lo) as usize];
            *slot = query.vertex_gather(*slot, value);
        }
        if read != part.records {
            let message = format!("{} holds {read} updates, not the {} spilled", reader.path().display(), part.records);
            return Err(crate::Error::io(message, std::io::ErrorKind::InvalidData.into()));
        }
        Ok((values, part.records * SPILL_RECORD_BYTES as u64))
    }

    /// Flushes the spill writers (end of the scatter phase).
    pub fn finish_scatter(&mut self) -> Result<()> {
        for part in &mut self.spills {
            if let Some(writer) = part.writer.take() {
                part.file = Some(writer.finish()?);
            }
        }
        Ok(())
    }

    /// Calls `apply(first id, gathered values)` for each range in order; spilled ranges are
    /// gathered by a loader thread one range ahead of apply (double buffering). Each spill file
    /// is removed once loaded (or dropped).
    pub fn apply_ranges<Q: NeighborhoodQuery<Value = V>>(
        mut self,
        query: &Q,
        mut apply: impl FnMut(VertexId, &[V]) -> Result<()>,
    ) -> Result<GatherStats> {
        self.finish_scatter()?;
        let resident = std::mem::take(&mut self.resident);
        let bounds = self.bounds.clone();
        let spills = std::mem::take(&mut self.spills);
        let spilled_ranges = spills.len();
        let buffer_bytes = self.buffer_bytes;
        let mut stats = self.stats;
        let result = std::thread::scope(|scope| -> Result<()> {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<(Vec<V>, u64, Duration)>>(1);
            let bounds_ref = &bounds;
            scope.spawn(move || {
                for (k, part) in spills.into_iter().enumerate() {
                    let (lo, hi) = (bounds_ref[k + 1], bounds_ref[k + 2]);
                    let started = Instant::now();
                    let loaded = Self::load_spilled(query, part, buffer_bytes, lo, (hi - lo) as usize)
                        .map(|(v, bytes)| (v, bytes, started.elapsed()));
                    let failed = loaded.is_err();
                    if tx.send(loaded).is_err() || failed {
                        return;
                    }
                }
            });
            apply(bounds[0], &resident)?;
            drop(resident);
            for k in 0..spilled_ranges {
                let (values, bytes, time) = rx.recv().expect("the spill loader sends one result per range")?;
                stats.spill_bytes_read += bytes;
                stats.gather_time += time;
                apply(bounds[k + 1], &values)?;
            }
            Ok(())
        });
        result.map(|_| stats)
    }
}

/// The largest multiple of the spill record size in `bytes` (at least one record).
fn whole_records(bytes: usize) -> usize {
    (bytes / SPILL_RECORD_BYTES).max(1) * SPILL_RECORD_BYTES
}

/// Where a local gather buffer hands its combined updates: the owner rank's global gather
/// buffer, in memory for this rank's vertices, over the transport for the others'.
pub trait UpdateSink<V>: Sync {
    fn deliver(&self, rank: usize, batch: &[(u32, V)]) -> Result<()>;
}

/// Updates as bytes for the transport: 12 bytes each (target u32, value u64), little-endian.
pub fn encode_updates<V: GatherValue>(batch: &[(u32, V)]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(batch.len() * SPILL_RECORD_BYTES);
    for &(target, value) in batch {
        bytes.extend_from_slice(&target.to_le_bytes());
        bytes.extend_from_slice(&value.to_bits().to_le_bytes());
    }
    bytes
}

/// The updates of an encoded batch, one after another.
pub fn decoded<V: GatherValue>(bytes: &[u8]) -> impl Iterator<Item = (u32, V)> + '_ {
    bytes.chunks_exact(SPILL_RECORD_BYTES).map(|r| {
        let target = u32::from_le_bytes(r[..4].try_into().unwrap());
        (target, V::from_bits(u64::from_le_bytes(r[4..].try_into().unwrap())))
    })
}

/// A scatter task's local gather buffer (`LGB^l`): a direct-mapped table folds updates to the
/// same target in place (skewed graphs send most updates to few vertices); an update whose slot
/// holds another target pushes that one out to a list, which is combined and handed on when full.
pub struct LocalGather<'g, V: GatherValue> {
    capacity: usize,
    table: Vec<(u32, V)>,
    updates: Vec<(u32, V)>,
    /// First BBP id of every rank, plus |V|.
    rank_starts: &'g [u64],
    sink: &'g dyn UpdateSink<V>,
}

const EMPTY_SLOT: u32 = u32::MAX;

impl<'g, V: GatherValue> LocalGather<'g, V> {
    /// Holds up to `capacity` updates (half in the table, half in the list).
    pub fn new(capacity: usize, rank_starts: &'g [u64], sink: &'g dyn UpdateSink<V>) -> Self {
        let table = (capacity / 2).max(16).next_power_of_two() / 2;
        let list = (capacity / 2).max(16);
        LocalGather {
            capacity: list,
            table: vec![(EMPTY_SLOT, V::default()); table.max(8)],
            updates: Vec::with_capacity(list),
            rank_starts,
            sink,
        }
    }

    pub fn push<Q: NeighborhoodQuery<Value = V>>(&mut self, query: &Q, target: VertexId, value: V) -> Result<()> {
        let target = target as u32;
        let mask = self.table.len() - 1;
        let slot = &mut self.table[(target.wrapping_mul(0x9E37_79B1) >> 7) as usize & mask];
        if slot.0 == target {
            slot.1 = query.vertex_gather(slot.1, value);
            return Ok(());
        }
        let evicted = std::mem::replace(slot, (target, value));
        if evicted.0 != EMPTY_SLOT {
            self.updates.push(evicted);
            if self.updates.len() >= self.capacity {
                self.flush_list(query)?;
            }
        }
        Ok(())
    }

    /// Empties the table into the list and hands everything on.
    pub fn flush<Q: NeighborhoodQuery<Value = V>>(&mut self, query: &Q) -> Result<()> {
        for slot in self.table.iter_mut().filter(|s| s.0 != EMPTY_SLOT) {
            self.updates.push(std::mem::replace(slot, (EMPTY_SLOT, V::default())));
        }
        self.flush_list(query)
    }

    /// Combines the listed updates and hands them to their owners' global gather buffers.
    fn flush_list<Q: NeighborhoodQuery<Value = V>>(&mut self, query: &Q) -> Result<()> {
        if self.updates.is_empty() {
            return Ok(());
        }
        self.updates.sort_unstable_by_key(|u| u.0);
        let mut combined = 0;
        for k in 1..self.updates.len() {
            if self.updates[k].0 == self.updates[combined].0 {
                self.updates[combined].1 = query.vertex_gather(self.updates[combined].1, self.updates[k].1);
            } else {
                combined += 1;
                self.updates[combined] = self.updates[k];
            }
        }
        self.updates.truncate(combined + 1);
        let mut start = 0;
        while start < self.updates.len() {
            let rank = self.rank_starts.partition_point(|&s| s <= self.updates[start].0 as u64) - 1;
            let end = start + self.updates[start..].partition_point(|u| (u.0 as u64) < self.rank_starts[rank + 1]);
            self.sink.deliver(rank, &self.updates[start..end])?;
            start = end;
        }
        self.updates.clear();
        Ok(())
    }
}
