//! GraphD's ID recoding (§5, "Preprocessing") as a 3-superstep job over the basic partition.
//!
//! In recoded mode the vertex at position `pos` of rank `i`'s array A is named W·pos + i, so
//! hash(name) = name mod W still finds its rank and `name / W` its slot. Each rank can name its
//! own vertices from their positions alone; the work is to rename the *targets* in its edge
//! streams, which live on other ranks. GraphD does it with a job in basic mode whose memory stays
//! O(|V|/W) per rank — no rank ever holds the whole old → new table:
//!
//! 1. **Ask.** Every rank streams its edge streams (out-lists, then in-lists) and, for its arc
//!    number `k` pointing at old name `u`, sends the request (u, k) to u's owner, u mod W.
//! 2. **Answer.** Every rank sorts the requests it received by old name and answers them in one
//!    merge pass with its vertex file, whose names ascend along A: the position of `u` is found
//!    by the merge, and (k, W·pos + i) goes back to the asker.
//! 3. **Rewrite.** Every rank sorts the answers by arc number and streams its edge streams once
//!    more, replacing each target by its new name (weights are kept), into `S^E_rec`.
//!
//! Both sorts are [`ExternalSorter`]s sized from the rank's budget: they spill sorted runs to the
//! rank's scratch directory and merge them when the requests exceed it. The messages travel in
//! batches of 64 KiB per destination and each superstep ends with an empty end tag per
//! destination; two receiving threads feed the sorts while the rank sends, and acknowledge every
//! batch once it is in the sort: a sender has at most 4 unacknowledged batches per destination, so
//! while a sort spills its senders wait instead of piling messages up in the transport.
//!
//! Two differences from the paper, both for the output to equal the basic partition renamed
//! byte for byte: a request carries the arc's number rather than the asker's id, so step 3 keeps
//! every list in its order (GraphD appends the answers as they come); and undirected graphs run
//! step 1 too (GraphD lets u push id_n(u) to its neighbours directly, but placing it in the
//! neighbour's list again needs the arc's number, which only the asker has).

use std::cmp::Ordering;
use std::io;
use std::path::Path;
use std::thread::ScopedJoinHandle;

use super::partition::{RankFigures, RankMemory, RankPart, VERTEX_RECORD_BYTES};
use super::streams::EdgeStream;
use crate::error::{Error, Result};
use crate::ingest::extsort::{le_u64, ExternalSorter, SortConfig, SortRecord, SortedStream};
use crate::runtime::{CancelToken, IoCounters, Progress, ProgressBar, ProgressUnit};
use crate::store::files::StoreFileWriter;
use crate::transport::{Tag, Transport};

/// Superstep 1's requests and superstep 2's answers, and the acknowledgements of their batches.
const TAG_REQUESTS: Tag = 120;
const TAG_ANSWERS: Tag = 121;
const TAG_REQUEST_ACKS: Tag = 122;
const TAG_ANSWER_ACKS: Tag = 123;
/// Batches a rank may have sent to one destination that the destination has not yet fed to its
/// sort: the flow control that keeps a sort's spills from piling messages up in the transport.
const BATCHES_IN_FLIGHT: usize = 4;
/// Arcs streamed at once in steps 1 and 3.
const ARCS_PER_READ: usize = 4096;

/// A question of superstep 1, as the owner of `name` sorts it: rank `from` asks for the new name
/// of `name`, the target of its arc number `arc`.
struct Request {
    name: u64,
    from: u64,
    arc: u64,
}

impl SortRecord for Request {
    fn compare(&self, other: &Self) -> Ordering {
        (self.name, self.from, self.arc).cmp(&(other.name, other.from, other.arc))
    }
    fn encode(&self, out: &mut Vec<u8>) {
        for x in [self.name, self.from, self.arc] {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
        if bytes.len() < 24 {
            return Ok(None);
        }
        Ok(Some((Request { name: le_u64(bytes, 0), from: le_u64(bytes, 8), arc: le_u64(bytes, 16) }, 24)))
    }
}

/// An answer of superstep 2: the asker's arc number `arc` points at `new_name`.
struct Answer {
    arc: u64,
    new_name: u64,
}

impl SortRecord for Answer {
    fn compare(&self, other: &Self) -> Ordering {
        self.arc.cmp(&other.arc)
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.arc.to_le_bytes());
        out.extend_from_slice(&self.new_name.to_le_bytes());
    }
    fn decode(bytes: &[u8]) -> io::Result<Option<(Self, usize)>> {
        if bytes.len() < 16 {
            return Ok(None);
        }
        Ok(Some((Answer { arc: le_u64(bytes, 0), new_name: le_u64(bytes, 8) }, 16)))
    }
}

/// One rank's recoding: reads its basic files in `basic_dir`, writes the recoded ones to `out_dir`.
/// The recoded files of a rank: name in its directory → size and checksums.
pub(super) type RecodedFiles = std::collections::BTreeMap<String, crate::store::FileEntry>;

pub(super) struct RecodeRank<'a> {
    pub transport: &'a dyn Transport,
    pub basic_dir: &'a Path,
    pub basic: &'a RankPart,
    pub out_dir: &'a Path,
    pub directed: bool,
    pub weighted: bool,
    /// Bytes of a recoded name in the streams written ([`super::partition::name_bytes`]).
    pub name_bytes: usize,
    pub counters: &'a IoCounters,
    pub memory: &'a RankMemory,
    pub progress: &'a dyn Progress,
    pub cancel: &'a CancelToken,
}

impl RecodeRank<'_> {
    /// Runs the three supersteps (see the module docs); returns the size and checksums of each
    /// recoded file, by name, for `partition.json` (reads of them are block-checked).
    pub fn run(&self, figures: &mut RankFigures) -> Result<RecodedFiles> {
        let t = self.transport;
        let sort = |label: &str| {
            let config = SortConfig::new(
                self.basic_dir.join("sort"),
                format!("recode-{label}"),
                self.memory.sort_buffer_bytes,
                self.memory.merge_bytes,
            );
            (config, self.counters.clone(), self.cancel.clone())
        };
        let (config, counters, cancel) = sort("requests");
        let requests = ExternalSorter::<Request>::new(config, counters, cancel);
        let (config, counters, cancel) = sort("answers");
        let answers = ExternalSorter::<Answer>::new(config, counters, cancel);
        let bar = self.progress.start(&format!("recoding (rank {})", t.rank()), None, ProgressUnit::Edges);
        let outcome = std::thread::scope(|scope| {
            let requests = scope.spawn(move || {
                receive(t, [TAG_REQUESTS, TAG_REQUEST_ACKS], requests, |from, name, arc| Request {
                    name,
                    from: from as u64,
                    arc,
                })
            });
            let answers = scope.spawn(move || {
                receive(t, [TAG_ANSWERS, TAG_ANSWER_ACKS], answers, |_, arc, new_name| Answer { arc, new_name })
            });
            let steps = |figures: &mut RankFigures| -> Result<RecodedFiles> {
                figures.requests_sent = self.ask(bar.as_ref())?;
                let requests = joined(requests)?.finish()?;
                figures.sort_runs_spilled += requests.stats().runs_spilled;
                figures.requests_answered = self.answer(requests, bar.as_ref())?;
                let answers = joined(answers)?.finish()?;
                figures.sort_runs_spilled += answers.stats().runs_spilled;
                self.rewrite(answers, bar.as_ref())
            };
            let outcome = steps(figures);
            if outcome.is_err() {
                // Wake this rank's receivers, which may still wait for end tags, so the scope ends.
                for _ in 0..t.ranks() {
                    let _ = t.send(t.rank(), TAG_REQUESTS, Vec::new());
                    let _ = t.send(t.rank(), TAG_ANSWERS, Vec::new());
                }
            }
            outcome
        });
        bar.finish();
        outcome
    }

    /// The edge streams of this rank and their arcs, in arc-number order.
    fn streams(&self) -> Vec<(&'static str, u64)> {
        let mut streams = vec![("edges-out", self.basic.out_arcs)];
        if self.directed {
            streams.push(("edges-in", self.basic.in_arcs));
        }
        streams
    }

    /// Bytes of an arc of the basic streams read (8-byte names).
    fn arc_bytes(&self) -> usize {
        if self.weighted {
            16
        } else {
            8
        }
    }

    /// Superstep 1: a request to the owner of every arc's target. Returns the requests sent.
    fn ask(&self, bar: &dyn ProgressBar) -> Result<u64> {
        let t = self.transport;
        let ranks = t.ranks() as u64;
        let mut batches = Batches::new(t, [TAG_REQUESTS, TAG_REQUEST_ACKS], self.memory.batch_bytes);
        let arc_bytes = self.arc_bytes();
        let mut chunk = Vec::new();
        let mut arc = 0u64;
        for (file, arcs) in self.streams() {
            let mut stream = EdgeStream::open(&self.basic_dir.join(file), self.counters.clone())?;
            let mut left = arcs;
            while left > 0 {
                self.cancel.check()?;
                let take = left.min(ARCS_PER_READ as u64);
                stream.read(take as usize * arc_bytes, &mut chunk)?;
                for record in chunk.chunks_exact(arc_bytes) {
                    let name = le_u64(record, 0);
                    batches.push((name % ranks) as usize, name, arc)?;
                    arc += 1;
                }
                left -= take;
                bar.inc(take);
            }
        }
        batches.finish()?;
        Ok(arc)
    }

    /// Superstep 2: answers the sorted requests by merging them with this rank's vertex file.
    /// Returns the requests answered.
    fn answer(&self, mut requests: SortedStream<Request>, bar: &dyn ProgressBar) -> Result<u64> {
        let t = self.transport;
        let (rank, ranks) = (t.rank() as u64, t.ranks() as u64);
        let path = self.basic_dir.join("vertices");
        let mut vertices = EdgeStream::open(&path, self.counters.clone())?;
        let mut batches = Batches::new(t, [TAG_ANSWERS, TAG_ANSWER_ACKS], self.memory.batch_bytes);
        let mut record = Vec::new();
        // The vertex at position `next_position - 1` and its old name.
        let mut current: Option<(u64, u64)> = None;
        let mut next_position = 0;
        let mut answered = 0u64;
        while let Some(request) = requests.next_record()? {
            while current.is_none_or(|(_, name)| name < request.name) {
                if next_position == self.basic.vertices {
                    break;
                }
                vertices.read(VERTEX_RECORD_BYTES as usize, &mut record)?;
                let name = le_u64(&record, 0);
                if current.is_some_and(|(_, previous)| previous >= name) {
                    return Err(Error::store(&path, "vertex names do not ascend along A (damaged basic partition)"));
                }
                current = Some((next_position, name));
                next_position += 1;
            }
            let position = match current {
                Some((position, name)) if name == request.name => position,
                _ => return Err(not_owned(&path, &request, rank)),
            };
            batches.push(request.from as usize, request.arc, ranks * position + rank)?;
            answered += 1;
            if answered.is_multiple_of(65536) {
                self.cancel.check()?;
                bar.inc(65536);
            }
        }
        bar.inc(answered % 65536);
        batches.finish()?;
        Ok(answered)
    }

    /// Superstep 3: the recoded vertex file and edge streams.
    fn rewrite(&self, mut answers: SortedStream<Answer>, bar: &dyn ProgressBar) -> Result<RecodedFiles> {
        let mut files = RecodedFiles::new();
        let t = self.transport;
        let (rank, ranks) = (t.rank() as u64, t.ranks() as u64);
        let mut chunk = Vec::new();
        let mut vertices = EdgeStream::open(&self.basic_dir.join("vertices"), self.counters.clone())?;
        let mut out = StoreFileWriter::create(&self.out_dir.join("vertices"), self.counters.clone())?;
        let mut position = 0;
        while position < self.basic.vertices {
            let take = (self.basic.vertices - position).min(ARCS_PER_READ as u64);
            vertices.read((take * VERTEX_RECORD_BYTES) as usize, &mut chunk)?;
            for record in chunk.chunks_exact_mut(VERTEX_RECORD_BYTES as usize) {
                record[..8].copy_from_slice(&(ranks * position + rank).to_le_bytes());
                position += 1;
            }
            out.write_all(&chunk)?;
        }
        files.insert("vertices".into(), out.finish()?);

        let arc_bytes = self.arc_bytes();
        let name_bytes = self.name_bytes;
        let mut recoded = Vec::new();
        let mut arc = 0u64;
        for (file, arcs) in self.streams() {
            let path = self.basic_dir.join(file);
            let mut stream = EdgeStream::open(&path, self.counters.clone())?;
            let mut out = StoreFileWriter::create(&self.out_dir.join(file), self.counters.clone())?;
            let mut left = arcs;
            while left > 0 {
                self.cancel.check()?;
                let take = left.min(ARCS_PER_READ as u64);
                stream.read(take as usize * arc_bytes, &mut chunk)?;
                recoded.clear();
                for record in chunk.chunks_exact(arc_bytes) {
                    let answer = answers.next_record()?.filter(|a| a.arc == arc).ok_or_else(|| {
                        Error::store(&path, format!("no answer for arc {arc} of rank {rank} (a rank lost a message)"))
                    })?;
                    // Names are below W·(|V| + 1), so the low bytes hold them when 4 are enough.
                    if name_bytes == 4 && answer.new_name > u32::MAX as u64 {
                        let name = answer.new_name;
                        return Err(Error::store(
                            &path,
                            format!("recoded name {name} of arc {arc} needs more than 4 bytes"),
                        ));
                    }
                    recoded.extend_from_slice(&answer.new_name.to_le_bytes()[..name_bytes]);
                    recoded.extend_from_slice(&record[8..]);
                    arc += 1;
                }
                out.write_all(&recoded)?;
                left -= take;
                bar.inc(take);
            }
            files.insert(file.into(), out.finish()?);
        }
        if answers.next_record()?.is_some() {
            return Err(Error::Remote {
                rank: None,
                message: format!("rank {rank} got more answers than it has arcs ({arc})"),
            });
        }
        Ok(files)
    }
}

/// A request for a vertex the rank does not have: the basic partition is damaged.
fn not_owned(path: &Path, request: &Request, rank: u64) -> Error {
    let (from, name) = (request.from, request.name);
    Error::store(
        path,
        format!("rank {from} asks for vertex {name} of rank {rank}, which does not have it (damaged basic partition)"),
    )
}

/// Pairs of u64s to each rank, sent in batches of about `limit` bytes with tag `tags[0]`, at most
/// [`BATCHES_IN_FLIGHT`] of them unacknowledged (`tags[1]`) per destination; `finish` sends the
/// rest and the end tag (an empty message) to every rank, and waits for the last acknowledgements.
struct Batches<'a> {
    transport: &'a dyn Transport,
    tags: [Tag; 2],
    limit: usize,
    pending: Vec<Vec<u8>>,
    in_flight: Vec<usize>,
}

impl<'a> Batches<'a> {
    fn new(transport: &'a dyn Transport, tags: [Tag; 2], limit: usize) -> Self {
        let ranks = transport.ranks();
        Batches { transport, tags, limit, pending: vec![Vec::new(); ranks], in_flight: vec![0; ranks] }
    }

    fn push(&mut self, to: usize, a: u64, b: u64) -> Result<()> {
        let batch = &mut self.pending[to];
        batch.extend_from_slice(&a.to_le_bytes());
        batch.extend_from_slice(&b.to_le_bytes());
        if batch.len() >= self.limit {
            let full = std::mem::take(batch);
            self.send(to, full)?;
        }
        Ok(())
    }

    fn send(&mut self, to: usize, batch: Vec<u8>) -> Result<()> {
        while self.in_flight[to] >= BATCHES_IN_FLIGHT {
            self.take_ack()?;
        }
        self.transport.send(to, self.tags[0], batch)?;
        self.in_flight[to] += 1;
        Ok(())
    }

    fn take_ack(&mut self) -> Result<()> {
        let ack = self.transport.recv(self.tags[1])?;
        match self.in_flight.get_mut(ack.from) {
            Some(n) if *n > 0 => *n -= 1,
            _ => return Err(Error::Remote { rank: Some(ack.from), message: "acknowledged a batch never sent".into() }),
        }
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        for to in 0..self.pending.len() {
            let rest = std::mem::take(&mut self.pending[to]);
            if !rest.is_empty() {
                self.send(to, rest)?;
            }
            self.transport.send(to, self.tags[0], Vec::new())?;
        }
        while self.in_flight.iter().any(|&n| n > 0) {
            self.take_ack()?;
        }
        Ok(())
    }
}

/// Feeds the pairs received with `tags[0]` into `sorter`, acknowledging each batch (`tags[1]`),
/// until every rank's end tag has come.
fn receive<T: SortRecord>(
    t: &dyn Transport,
    tags: [Tag; 2],
    mut sorter: ExternalSorter<T>,
    record: impl Fn(usize, u64, u64) -> T,
) -> Result<ExternalSorter<T>> {
    let mut ended = 0;
    while ended < t.ranks() {
        let envelope = t.recv(tags[0])?;
        if envelope.payload.is_empty() {
            ended += 1;
            continue;
        }
        if envelope.payload.len() % 16 != 0 {
            return Err(Error::Remote {
                rank: Some(envelope.from),
                message: format!("a recoding batch of {} bytes (not pairs of u64)", envelope.payload.len()),
            });
        }
        for pair in envelope.payload.chunks_exact(16) {
            sorter.push(record(envelope.from, le_u64(pair, 0), le_u64(pair, 8)))?;
        }
        t.send(envelope.from, tags[1], Vec::new())?;
    }
    Ok(sorter)
}

/// The result of a receiving thread (its panic goes on in this thread).
fn joined<T>(handle: ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
