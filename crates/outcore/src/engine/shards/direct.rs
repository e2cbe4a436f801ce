//! Direct delivery of delayed messages from the adjacency lists (`--delayed-delivery
//! adjacency`, the default; an addition to "Load the Edges You Need").
//!
//! In the paper (§3, Algorithm 1) a vertex that is active on a dynamic shard but lacks some of
//! its out-edges sends along the edges present and waits in the delay buffer; a shadow
//! iteration, which reads every static shard, sends its folded messages along the missing
//! edges. That works when the vertices that wake up after the dynamic shards were built are
//! few. On R-MAT graphs they are not: right after ODS's first shadow iteration of pr-delta at
//! scale 18, 859 of 1,034 active vertices lacked an out-edge, activity died out within three
//! steps, and from then on every wave of activity waited for a shadow (24 shadows, 42 % more
//! steps than `off`, and more bytes than `off` in all).
//!
//! Here such a vertex instead reads its own adjacency list from the store (`csr-out`; `csr-in`
//! for programs that also send against edge direction): one contiguous read of its targets
//! (and weights). The edges of the list that are not on the loaded dynamic shard — a multiset
//! difference on (neighbour, weight) — receive `scatter(value, edge)` now, into a
//! [`DirectDelivery`] buffer keyed by the receiving interval, and the receivers gather those
//! messages in the next step together with the ones on shard edges. The step count stays that
//! of `off`, and no shadow iteration is forced. The buffer holds a step's messages in memory
//! up to its share of the budget and spills the rest as runs sorted by receiving interval
//! (`runtime::spill` files, each written in one request and read back one interval's record
//! range at a time), so nothing waits: the delay buffer stays empty under this delivery.
//!
//! The messages are the same ones the missing edges would have carried, so results equal the
//! reference engine (delta programs up to summation order).

use std::path::PathBuf;

use super::edges::{pod_bytes, pod_read};
use crate::error::Result;
use crate::runtime::spill::{SpillFile, SpillWriter};
use crate::runtime::IoCounters;
use crate::VertexId;

/// Messages of one step that did not fit in memory: one file, sorted by receiving interval.
struct SpilledRun {
    file: SpillFile,
    /// Entry index where each receiving interval's messages begin (P + 1 entries).
    starts: Vec<u64>,
}

/// Messages sent along missing edges, waiting for their receivers' next gather. Each step's
/// messages are kept by receiving interval in memory up to a limit; beyond it they are written
/// out as sorted runs, which the next step reads interval by interval.
pub struct DirectDelivery<M> {
    /// Sent in the previous step, by receiving interval: gathered in this step.
    arriving: Vec<Vec<(VertexId, M)>>,
    arriving_runs: Vec<SpilledRun>,
    /// Sent in this step, by receiving interval.
    sending: Vec<Vec<(VertexId, M)>>,
    sending_runs: Vec<SpilledRun>,
    sending_entries: usize,
    /// Messages sent in this step, spilled ones included.
    sent: usize,
    /// Messages of this step written to runs.
    spilled: usize,
    /// Most entries one of the two in-memory buffers may hold.
    limit_entries: usize,
    dir: PathBuf,
    next_run: usize,
    counters: IoCounters,
}

impl<M: Copy> DirectDelivery<M> {
    const ENTRY: usize = 8 + std::mem::size_of::<M>();

    /// Buffers for `intervals` receiving intervals, each side holding at most `limit_bytes` in
    /// memory; runs beyond that go to `dir`.
    pub fn new(intervals: usize, limit_bytes: u64, dir: PathBuf, counters: IoCounters) -> Self {
        let entry = std::mem::size_of::<(VertexId, M)>().max(1) as u64;
        DirectDelivery {
            arriving: vec![Vec::new(); intervals],
            arriving_runs: Vec::new(),
            sending: vec![Vec::new(); intervals],
            sending_runs: Vec::new(),
            sending_entries: 0,
            sent: 0,
            spilled: 0,
            limit_entries: (limit_bytes / entry).max(1) as usize,
            dir,
            next_run: 0,
            counters,
        }
    }

    /// Sends `message` to `receiver`, which lies in interval `interval`.
    pub fn send(&mut self, interval: usize, receiver: VertexId, message: M) -> Result<()> {
        if self.sending_entries >= self.limit_entries {
            self.spill()?;
        }
        self.sending[interval].push((receiver, message));
        self.sending_entries += 1;
        self.sent += 1;
        Ok(())
    }

    /// Writes the in-memory messages of this step out as one run sorted by interval, in one
    /// request (the buffer holds the run, as the messages did).
    fn spill(&mut self) -> Result<()> {
        let name = self.next_run.to_string();
        self.next_run += 1;
        let bytes = self.sending_entries * Self::ENTRY;
        let mut writer = SpillWriter::create(&self.dir, "direct", &name, bytes, self.counters.clone())?;
        let mut starts = Vec::with_capacity(self.sending.len() + 1);
        let mut entries = 0u64;
        for list in &mut self.sending {
            starts.push(entries);
            entries += list.len() as u64;
            for (receiver, message) in list.drain(..) {
                writer.encode(|out| {
                    out.extend_from_slice(&receiver.to_le_bytes());
                    out.extend_from_slice(pod_bytes(&message));
                })?;
            }
        }
        starts.push(entries);
        self.sending_runs.push(SpilledRun { file: writer.finish()?, starts });
        self.spilled += self.sending_entries;
        self.sending_entries = 0;
        Ok(())
    }

    /// The messages for interval `interval` sent in the previous step (emptied).
    pub fn take_arriving(&mut self, interval: usize) -> Result<Vec<(VertexId, M)>> {
        let mut list = std::mem::take(&mut self.arriving[interval]);
        let mut bytes = Vec::new();
        for run in &self.arriving_runs {
            run.file.read_range(Self::ENTRY, run.starts[interval]..run.starts[interval + 1], &mut bytes)?;
            list.extend(bytes.chunks_exact(Self::ENTRY).map(|entry| {
                let receiver = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
                (receiver, pod_read::<M>(&entry[8..]))
            }));
        }
        Ok(list)
    }

    /// Messages sent in the current step so far.
    pub fn sent(&self) -> usize {
        self.sent
    }

    /// Messages of the current step written to runs so far.
    pub fn spilled(&self) -> usize {
        self.spilled
    }

    /// Ends a step: what was sent arrives in the next one; the runs read in this step go.
    pub fn end_step(&mut self) -> Result<()> {
        self.arriving_runs.clear();
        std::mem::swap(&mut self.arriving, &mut self.sending);
        std::mem::swap(&mut self.arriving_runs, &mut self.sending_runs);
        for list in &mut self.sending {
            list.clear();
        }
        self.sending_entries = 0;
        self.sent = 0;
        self.spilled = 0;
        Ok(())
    }
}

/// The edges of `list` (neighbour, weight bits) that are not in `present`, as a multiset
/// difference (parallel edges count one by one). Both are sorted here.
pub fn missing_edges(mut list: Vec<(VertexId, u64)>, mut present: Vec<(VertexId, u64)>) -> Vec<(VertexId, u64)> {
    list.sort_unstable();
    present.sort_unstable();
    let mut missing = Vec::with_capacity(list.len().saturating_sub(present.len()));
    let mut p = present.iter().peekable();
    for edge in list {
        while p.peek().is_some_and(|&&q| q < edge) {
            p.next();
        }
        if p.peek() == Some(&&edge) {
            p.next();
        } else {
            missing.push(edge);
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_edges_is_a_multiset_difference() {
        let list = vec![(5, 0), (3, 0), (5, 0), (7, 1), (7, 2)];
        let present = vec![(5, 0), (7, 2)];
        assert_eq!(missing_edges(list, present), vec![(3, 0), (5, 0), (7, 1)]);
        assert!(missing_edges(vec![(1, 0)], vec![(1, 0)]).is_empty());
    }

    #[test]
    fn messages_sent_in_a_step_arrive_in_the_next_spilled_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let counters = IoCounters::new();
        // Room for 3 messages in memory: the others go to runs on disk.
        let mut d: DirectDelivery<f64> = DirectDelivery::new(3, 3 * 16, dir.path().to_path_buf(), counters.clone());
        let sent = [(1, 7, 0.5), (0, 2, 1.5), (2, 9, 2.5), (1, 8, 3.5), (0, 1, 4.5), (1, 7, 5.5), (2, 9, 6.5)];
        for &(interval, receiver, m) in &sent {
            d.send(interval, receiver, m).unwrap();
        }
        assert_eq!(d.sent(), sent.len());
        assert_eq!(d.spilled(), 6, "two full runs of three");
        assert!(d.take_arriving(1).unwrap().is_empty(), "nothing arrives in the step it is sent");
        d.end_step().unwrap();
        assert!(counters.snapshot().bytes_written > 0, "two runs spilled");
        for interval in 0..3 {
            let mut got = d.take_arriving(interval).unwrap();
            got.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let mut want: Vec<(u64, f64)> = sent.iter().filter(|s| s.0 == interval).map(|&(_, r, m)| (r, m)).collect();
            want.sort_by(|a, b| a.partial_cmp(b).unwrap());
            assert_eq!(got, want, "interval {interval}");
        }
        assert_eq!(d.sent(), 0);
        d.end_step().unwrap();
        assert!(d.take_arriving(0).unwrap().is_empty());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "read runs are removed");
    }
}
