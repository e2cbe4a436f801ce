//! U_c, one rank's computing unit (GraphD §4): the superstep loop.
//!
//! Each step U_c streams its vertex array A with S^E (and S^I, or A_r in recoded mode) and
//! computes the awake vertices, wave by wave, on all cores when the lists are resident
//! ([`super::parallel`]). Messages are appended to one buffer per destination; a full buffer
//! (`message_file_size`) becomes a file of the outgoing stream and is handed to U_s at once
//! ([`super::units`]). In recoded mode with a combiner, messages to the rank's own vertices are
//! folded in memory instead, and a pulling rank only offers its messages ([`super::pull`]).
//! Right after computing, the ranks' aggregators and halting figures are combined and each rank
//! decides to stop or go on; U_c then takes what U_r received for the next step.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use rayon::prelude::*;

use super::checkpoint;
use super::lists::{ListCursor, ResidentColumn, ResidentEdges};
use super::parallel::{self, Route, Sink, WaveFigures};
use super::partition::PartitionInfo;
use super::pull::Offers;
use super::rank::{RankSettings, StepProgram, Totals, VertexRecord};
use super::sizing::{RankShare, RankSizing};
use super::streams::{write_file, EdgeStream, MergedBatches, EDGE_BUFFER_BYTES};
use super::units::{corrupt, Incoming, SenderJob};
use crate::engine::{Delivery, IterationFigures, IterationStats, PregelIteration, Runner};
use crate::error::{Error, Result};
use crate::program::Wire;
use crate::runtime::chunks::{self, Cut};
use crate::runtime::io::IoSnapshot;
use crate::runtime::{IoCounters, ProgressUnit};
use crate::store::FileChecks;

/// U_c's inputs, borrowed by every step of the superstep loop.
pub(super) struct ComputeUnit<'a, S: StepProgram> {
    pub(super) runner: &'a Runner,
    pub(super) program: &'a S,
    pub(super) settings: &'a RankSettings<'a>,
    pub(super) info: &'a PartitionInfo,
    pub(super) rank_dir: &'a Path,
    pub(super) vertices: &'a [VertexRecord],
    /// The rank's scratch directory of message files.
    pub(super) work: &'a Path,
    pub(super) to_sender: Sender<SenderJob>,
    pub(super) record_bytes: usize,
    /// B, the compute buffers' bytes, the lists read and kept resident, push or pull.
    pub(super) sizing: RankSizing,
    pub(super) share: RankShare,
    pub(super) fingerprint: &'a str,
    pub(super) counters: IoCounters,
}

/// The block checks of the edge streams, loaded once: each block is verified once per run, not
/// once per superstep that reads it.
struct EdgeChecks {
    out: Option<Arc<FileChecks>>,
    inn: Option<Arc<FileChecks>>,
}

/// What U_c carries from one superstep to the next.
struct LoopState<S: StepProgram> {
    halted: Vec<bool>,
    previous: Totals,
    arrived: Option<Incoming<S::Msg>>,
    first_step: usize,
    /// Numbers the outgoing message files of the whole run.
    seq: u64,
    /// Messages to this rank's own vertices skip the outgoing streams when messages are combined
    /// in memory (recoded mode with a combiner): they are folded into `local` as they are
    /// generated, an array like A_r, and joined with what U_r folded from the other ranks. With
    /// W = 1 no message file is written at all (issue 16: 10 GB written, 15 GB read for PageRank
    /// x10 on RMAT-22 before).
    local: Vec<Option<S::Msg>>,
    /// The messages of the vertex being collected.
    messages: Vec<S::Msg>,
    /// The messages of a wave's vertices, when they come from batch files.
    inbox: WaveInbox<S::Msg>,
    /// A_r of the step last computed, every slot taken: at W = 1 it becomes the next step's
    /// `local`, so that no array of |V| slots is allocated and filled per step.
    emptied: Vec<Option<S::Msg>>,
    /// One sink per chunk of a wave, kept with their capacity from wave to wave.
    sinks: Vec<Sink<S::Msg>>,
    /// A pulling rank's offers of the step.
    offers: Option<Offers<S::Msg>>,
}

/// The messages of a wave's vertices read from batch files, one after the other: vertex `k` of
/// the wave has `of(k)`. (Messages in A_r are taken from its slots by the chunks that compute
/// their vertices.)
struct WaveInbox<M> {
    msgs: Vec<M>,
    /// The end of vertex `k`'s messages.
    ends: Vec<usize>,
}

impl<M> WaveInbox<M> {
    fn of(&self, k: usize) -> &[M] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.msgs[start..self.ends[k]]
    }
}

/// The messages that arrived for one step, opened: the merged batch files, or A_r.
struct Arrived<M> {
    merged: Option<MergedBatches>,
    array: Option<Vec<Option<M>>>,
    batches: u64,
    bytes: u64,
}

/// Figures of one step's compute pass, for its stats.
struct StepFigures {
    computed: u64,
    /// Threads that computed a chunk of the step.
    threads: u64,
    edges_read: u64,
    seeks: u64,
    messages_local: u64,
    message_files: u64,
    batches: u64,
    bytes_received: u64,
    /// The rank pulled the step's messages.
    pulled: bool,
}

/// U_c: the superstep loop. Returns the number of steps run.
pub(super) fn compute_unit<S: StepProgram>(
    unit: ComputeUnit<S>,
    values: &mut [S::Value],
    incoming: Receiver<Incoming<S::Msg>>,
    resumed: Option<checkpoint::Saved<S::Value, S::Msg>>,
) -> Result<usize> {
    let checks = unit.load_checks()?;
    let mut state = unit.start_state(values, resumed)?;
    let mut resident: Option<ResidentEdges> = None;
    let bar = unit.runner.progress().start("supersteps (pregel)", None, ProgressUnit::Iterations);
    for step in state.first_step.. {
        unit.runner.cancel_token().check()?;
        let started = Instant::now();
        let io_before = unit.runner.io_snapshot();
        let mut lists = unit.open_lists(&checks, resident.is_none())?;
        if unit.sizing.resident() && resident.is_none() {
            let (out_arcs, in_arcs) = unit.sizing.arcs(&unit.share);
            let mut edges = ResidentEdges::read(&mut lists, out_arcs, in_arcs, unit.sizing.narrow)?;
            unit.renumber_pulled_lists(state.offers.as_ref(), &mut edges)?;
            resident = Some(edges);
        }
        let arrived = unit.open_arrived(state.arrived.take())?;
        let (totals, figures) = unit.compute_step(step, &mut state, values, &mut lists, resident.as_ref(), arrived)?;
        // Aggregators and halting, right after computing.
        let global = unit.gather_totals(&totals)?;
        let stop = unit.program.stop_after(step, &global);
        let received = unit.receive_step(&incoming, &mut state.local, &mut state.emptied)?;
        unit.record_step(step, started, &io_before, &totals, &global, &figures);
        bar.inc(1);
        state.previous = global;
        if stop {
            unit.end_run(&received);
            bar.finish();
            return Ok(step);
        }
        unit.checkpoint_if_due(step, &state, values, &received)?;
        state.arrived = Some(received);
    }
    unreachable!("the superstep loop returns")
}

impl<S: StepProgram> ComputeUnit<'_, S> {
    fn rank(&self) -> usize {
        self.settings.transport.rank()
    }

    fn file_size(&self) -> usize {
        self.sizing.message_file_size.max(self.record_bytes as u64) as usize
    }

    /// Whether this rank folds the messages to its own vertices into `LoopState::local`.
    fn combines_locally(&self) -> bool {
        self.sizing.in_memory_combine
    }

    fn load_checks(&self) -> Result<EdgeChecks> {
        let part = &self.info.parts[self.rank()];
        let out = part.checks(self.rank_dir, "edges-out", &self.counters)?;
        let inn = if self.info.directed { part.checks(self.rank_dir, "edges-in", &self.counters)? } else { None };
        Ok(EdgeChecks { out, inn })
    }

    /// The state of the first step: fresh, or the resumed checkpoint's (which also sets `values`).
    fn start_state(
        &self,
        values: &mut [S::Value],
        resumed: Option<checkpoint::Saved<S::Value, S::Msg>>,
    ) -> Result<LoopState<S>> {
        let n = self.vertices.len();
        let offers = match self.program.dense_uniform_identity().filter(|_| self.sizing.pulls) {
            Some(identity) => Some(Offers::new(self.vertices, identity, self.settings.transport)?),
            None => None,
        };
        let mut state = LoopState {
            halted: vec![false; n],
            previous: Totals::new(self.program.aggregate_width()),
            arrived: None,
            first_step: 0,
            seq: 0,
            local: if self.combines_locally() { vec![None; n] } else { Vec::new() },
            messages: Vec::new(),
            inbox: WaveInbox { msgs: Vec::new(), ends: Vec::new() },
            emptied: Vec::new(),
            sinks: Vec::new(),
            offers,
        };
        if let Some(saved) = resumed {
            values.clone_from_slice(&saved.values);
            state.halted = saved.halted;
            state.previous = saved.previous;
            state.first_step = saved.next_step;
            state.arrived = Some(Incoming { files: saved.files, array: saved.array, batches: 0, bytes: 0 });
            let resumed_at = state.first_step as u64;
            self.runner.record_figures(|figures| figures.pregel_resumed_at_superstep = Some(resumed_at));
        }
        Ok(state)
    }

    /// Opens S^E (and S^I) for one pass, when the program reads them (and `streamed`: resident
    /// lists need no stream after they are read).
    fn open_lists(&self, checks: &EdgeChecks, streamed: bool) -> Result<ListCursor<'static>> {
        let open = |name: &str, checks: &Option<Arc<FileChecks>>| {
            EdgeStream::open_checked(&self.rank_dir.join(name), self.counters.clone(), checks.clone())
        };
        let info = self.info;
        let out = streamed && self.sizing.reads.out;
        let inn = streamed && self.sizing.reads.inn;
        Ok(ListCursor::streams(
            if out { Some(open("edges-out", &checks.out)?) } else { None },
            if inn { Some(open("edges-in", &checks.inn)?) } else { None },
            info.weighted,
            info.directed,
            info.name_bytes(),
        ))
    }

    /// Opens the previous step's batch files as one merged stream (A_r needs no opening).
    fn open_arrived(&self, arrived: Option<Incoming<S::Msg>>) -> Result<Arrived<S::Msg>> {
        let Some(inc) = arrived else {
            return Ok(Arrived { merged: None, array: None, batches: 0, bytes: 0 });
        };
        let merge_buffer =
            (2 * self.file_size() / inc.files.len().max(1)).clamp(self.record_bytes * 2, EDGE_BUFFER_BYTES);
        let merged = if inc.files.is_empty() {
            None
        } else {
            Some(MergedBatches::open(inc.files, self.record_bytes, merge_buffer, &self.counters)?)
        };
        Ok(Arrived { merged, array: inc.array, batches: inc.batches, bytes: inc.bytes })
    }

    /// Streams A with the lists and the arrived messages, computes the awake vertices wave by
    /// wave ([`super::parallel`]), and hands the step's message files to U_s, then its end.
    /// Returns the rank's totals and figures.
    fn compute_step(
        &self,
        step: usize,
        state: &mut LoopState<S>,
        values: &mut [S::Value],
        lists: &mut ListCursor,
        resident: Option<&ResidentEdges>,
        mut arrived: Arrived<S::Msg>,
    ) -> Result<(Totals, StepFigures)> {
        let program = self.program;
        let chunks = if resident.is_some() { 4 * rayon::current_num_threads().max(1) } else { 1 };
        self.prepare_sinks(&mut state.sinks, chunks);
        let mut outbox = Outbox::new(self, step, &mut state.seq);
        let mut totals = Totals::new(program.aggregate_width());
        let mut figures = WaveFigures::default();
        let (mut threads, mut edges_read, mut at, mut arcs_at) = (Vec::new(), 0, 0, (0, 0));
        while at < self.vertices.len() {
            let end = self.collect_wave(at, &mut arrived, &mut state.messages, &mut state.inbox)?;
            let wave = WaveSlices {
                values: &mut values[at..end],
                halted: &mut state.halted[at..end],
                arrived: arrived.slots().map(|slots| &mut slots[at..end]),
            };
            let run = self.wave_run(step, &state.previous, &state.inbox, at);
            let used = match resident {
                Some(edges) => {
                    let (used, read) = self.compute_chunks(&run, edges, &mut arcs_at, wave, &mut state.sinks)?;
                    edges_read += read;
                    used
                }
                None => {
                    let job = Chunk { start: at, end, out_at: 0, in_at: 0 };
                    compute_chunk(&run, &job, wave, lists, &mut state.sinks[0]);
                    1
                }
            };
            threads.extend(state.sinks[..used].iter().map(|s| s.thread));
            if let Some(offers) = state.offers.as_mut() {
                state.sinks[..used].iter_mut().for_each(|sink| sink.hand_offers(offers));
            }
            let append = &mut |dest: usize, records: &[u8]| outbox.append(dest, records);
            parallel::deliver(program, &mut state.sinks[..used], &mut state.local, &mut totals, &mut figures, append)?;
            at = end;
        }
        arrived.check_drained(self.rank())?;
        if let (Some(offers), Some(column)) = (state.offers.as_mut(), resident.and_then(|e| self.pulled_lists(e))) {
            offers.exchange(self.settings.transport)?;
            let reads = self.sizing.reads;
            edges_read += offers.pull_into(program, column, self.vertices, |v| reads.degree(v), &mut state.local);
        }
        let Arrived { merged, array, batches, bytes } = arrived;
        if let Some(m) = merged {
            m.remove();
        }
        if let Some(array) = array.filter(|_| self.settings.transport.ranks() == 1 || self.sizing.pulls) {
            state.emptied = array;
        }
        let message_files = outbox.flush()?;
        totals.messages = figures.sent;
        threads.sort_unstable();
        threads.dedup();
        let step_figures = StepFigures {
            computed: figures.computed,
            threads: threads.len().max(1) as u64,
            edges_read: edges_read + lists.edges_read,
            seeks: lists.seeks(),
            messages_local: figures.combined_locally,
            message_files,
            batches,
            bytes_received: bytes,
            pulled: state.offers.is_some(),
        };
        Ok((totals, step_figures))
    }

    /// The resident lists a pulling rank folds its offers over: the in-lists (the lists of an
    /// undirected store).
    fn pulled_lists<'e>(&self, edges: &'e ResidentEdges) -> Option<&'e ResidentColumn> {
        if self.sizing.reads.inn {
            edges.inn.as_ref()
        } else {
            edges.out.as_ref()
        }
    }

    /// A pulling rank's lists, just read, name its offers' slots ([`Offers::renumber`]).
    fn renumber_pulled_lists(&self, offers: Option<&Offers<S::Msg>>, edges: &mut ResidentEdges) -> Result<()> {
        let column = if self.sizing.reads.inn { edges.inn.as_mut() } else { edges.out.as_mut() };
        let (Some(offers), Some(column)) = (offers, column) else {
            return Ok(());
        };
        offers.renumber(column).map_err(|name| {
            let file = self.rank_dir.join(self.sizing.reads.pulled_file());
            Error::store(&file, format!("names vertex {name}, which no vertex of the partition has"))
        })
    }

    /// At least `chunks` sinks, routed for this rank.
    fn prepare_sinks(&self, sinks: &mut Vec<Sink<S::Msg>>, chunks: usize) {
        let t = self.settings.transport;
        let threads = rayon::current_num_threads();
        let slot = size_of::<Option<S::Msg>>();
        let mut route = Route::new(t.rank(), t.ranks(), self.combines_locally(), self.vertices.len(), threads, slot);
        route.pulls = self.sizing.pulls;
        while sinks.len() < chunks {
            sinks.push(Sink::new(route, self.program.aggregate_width()));
        }
    }

    /// Arcs of the lists the program reads of `vertex` (none when the rank pulls: the in-lists
    /// are read after the step's waves).
    fn arcs_of(&self, vertex: &VertexRecord) -> u64 {
        if self.sizing.pulls {
            0
        } else {
            self.sizing.reads.degree(vertex)
        }
    }

    /// Collects the messages of the vertices from `at` on into `inbox`, up to what the compute
    /// buffers hold (one vertex at least). Returns the end of the wave. Messages in A_r stay
    /// there: the chunks take them ([`Arrived::slots`]).
    fn collect_wave(
        &self,
        at: usize,
        arrived: &mut Arrived<S::Msg>,
        messages: &mut Vec<S::Msg>,
        inbox: &mut WaveInbox<S::Msg>,
    ) -> Result<usize> {
        let per_arc = parallel::per_arc_bytes::<S::Msg>();
        let per_vertex = parallel::per_vertex_bytes::<S::Msg>();
        let in_slots = arrived.slots().is_some();
        let (mut bytes, mut i) = (0, at);
        inbox.msgs.clear();
        inbox.ends.clear();
        while i < self.vertices.len() && (i == at || bytes < self.sizing.memory.compute) {
            let vertex = &self.vertices[i];
            if !in_slots {
                arrived.take_messages(self.program, self.rank(), vertex, messages)?;
                bytes += (messages.len() * size_of::<S::Msg>()) as u64;
                inbox.msgs.append(messages);
                inbox.ends.push(inbox.msgs.len());
            }
            bytes += per_vertex + self.arcs_of(vertex) * per_arc;
            i += 1;
        }
        Ok(i)
    }

    /// Cuts the wave in chunks of about equal arcs and computes them on rayon's threads over the
    /// resident lists (`arcs_at`: the wave's first arc of each list, moved past the wave).
    /// Returns the chunks used and the arcs they read.
    fn compute_chunks(
        &self,
        run: &WaveRun<S>,
        edges: &ResidentEdges,
        arcs_at: &mut (u64, u64),
        wave: WaveSlices<S>,
        sinks: &mut [Sink<S::Msg>],
    ) -> Result<(usize, u64)> {
        let jobs = self.chunks(run.first, run.first + wave.values.len(), arcs_at, sinks.len());
        let mut pieces = Vec::with_capacity(jobs.len());
        let mut rest = wave;
        for job in &jobs {
            let (piece, tail) = rest.split_at(job.end - job.start);
            pieces.push(piece);
            rest = tail;
        }
        let (weighted, directed) = (self.info.weighted, self.info.directed);
        let mut cursors: Vec<ListCursor> =
            jobs.iter().map(|j| ListCursor::resident(edges, j.out_at, j.in_at, weighted, directed)).collect();
        pieces
            .into_par_iter()
            .zip(sinks[..jobs.len()].par_iter_mut())
            .zip(cursors.par_iter_mut())
            .zip(jobs.par_iter())
            .for_each(|(((piece, sink), cursor), job)| compute_chunk(run, job, piece, cursor, sink));
        Ok((jobs.len(), cursors.iter().map(|c| c.edges_read).sum()))
    }

    /// Splits vertices `start..end` in at most `count` runs of about equal arcs + vertices, each
    /// filling a share ([`Cut::Shares`]); `arcs_at` gives each run's first arcs and moves past them.
    fn chunks(&self, start: usize, end: usize, arcs_at: &mut (u64, u64), count: usize) -> Vec<Chunk> {
        let wave = &self.vertices[start..end];
        let ranges = chunks::balanced(wave.len(), |i| 1 + self.arcs_of(&wave[i]), count, Cut::Shares);
        let chunk = |r: Range<usize>| {
            let job = Chunk { start: start + r.start, end: start + r.end, out_at: arcs_at.0, in_at: arcs_at.1 };
            for v in &wave[r] {
                arcs_at.0 += v.out_degree;
                arcs_at.1 += v.in_degree;
            }
            job
        };
        ranges.into_iter().map(chunk).collect()
    }

    fn wave_run<'a>(
        &'a self,
        step: usize,
        previous: &'a Totals,
        inbox: &'a WaveInbox<S::Msg>,
        first: usize,
    ) -> WaveRun<'a, S> {
        WaveRun { program: self.program, vertices: self.vertices, step, previous, inbox, first }
    }

    /// Combines the ranks' totals (`all_gather`, folded in rank order).
    fn gather_totals(&self, totals: &Totals) -> Result<Totals> {
        let program = self.program;
        let mut global = Totals::new(program.aggregate_width());
        for (from, bytes) in self.settings.transport.all_gather(totals.encode())?.iter().enumerate() {
            let part = Totals::decode(bytes).ok_or_else(|| corrupt(from))?;
            global.sum += part.sum;
            global.aggregates.merge(&part.aggregates, |a, b| program.fold_aggregate(a, b));
            global.awake += part.awake;
            global.messages += part.messages;
        }
        Ok(global)
    }

    /// Everything of this step has arrived here (joined with this rank's own messages); then
    /// everywhere (barrier) before step + 1 sends.
    fn receive_step(
        &self,
        incoming: &Receiver<Incoming<S::Msg>>,
        local: &mut Vec<Option<S::Msg>>,
        emptied: &mut Vec<Option<S::Msg>>,
    ) -> Result<Incoming<S::Msg>> {
        let mut received = incoming
            .recv()
            .map_err(|_| Error::Remote { rank: Some(self.rank()), message: "receiver unit ended".into() })?;
        if self.combines_locally() {
            join_local(self.program, local, emptied, &mut received.array);
        }
        self.settings.transport.barrier()?;
        Ok(received)
    }

    fn record_step(
        &self,
        step: usize,
        started: Instant,
        io_before: &IoSnapshot,
        totals: &Totals,
        global: &Totals,
        figures: &StepFigures,
    ) {
        let io = self.runner.io_snapshot().since(io_before);
        let stats = IterationStats {
            iteration: step,
            active_vertices: figures.computed,
            edges_processed: figures.edges_read,
            bytes_read: io.bytes_read,
            bytes_written: io.bytes_written,
            seconds: started.elapsed().as_secs_f64(),
            delivery: figures.pulled.then_some(Delivery::Pull),
            figures: IterationFigures::Pregel(PregelIteration {
                messages_sent: totals.messages,
                messages_sent_all_ranks: global.messages,
                messages_combined_locally: figures.messages_local,
                message_files: figures.message_files,
                batches_received: figures.batches,
                message_bytes_received: figures.bytes_received,
                edge_stream_seeks: figures.seeks,
                awake_after: global.awake,
                threads: figures.threads,
            }),
        };
        self.runner.record_iteration(stats);
    }

    /// After the last step: the messages nobody will read and the checkpoints go.
    fn end_run(&self, received: &Incoming<S::Msg>) {
        for path in &received.files {
            let _ = std::fs::remove_file(path);
        }
        if self.settings.checkpoint_every.is_some() || self.settings.resume {
            checkpoint::remove(self.rank_dir);
        }
    }

    /// Checkpoints the state before step + 1 when one is due, committed once every rank wrote.
    fn checkpoint_if_due(
        &self,
        step: usize,
        state: &LoopState<S>,
        values: &[S::Value],
        received: &Incoming<S::Msg>,
    ) -> Result<()> {
        if !self.settings.checkpoint_every.is_some_and(|n| (step + 1).is_multiple_of(n.max(1))) {
            return Ok(());
        }
        checkpoint::write(
            self.rank_dir,
            self.fingerprint,
            step + 1,
            &state.previous,
            values,
            &state.halted,
            &received.files,
            received.array.as_deref(),
            &self.counters,
        )?;
        self.settings.transport.barrier()?;
        checkpoint::commit(self.rank_dir)
    }
}

/// The values, halt flags and A_r slots of a wave's vertices, or of a chunk's.
struct WaveSlices<'a, S: StepProgram> {
    values: &'a mut [S::Value],
    halted: &'a mut [bool],
    /// A_r's slots, when the step's messages are there (their messages are taken as the
    /// vertices are computed); otherwise the messages are in the wave's inbox.
    arrived: Option<&'a mut [Option<S::Msg>]>,
}

impl<'a, S: StepProgram> WaveSlices<'a, S> {
    /// The first `len` vertices, and the rest.
    fn split_at(self, len: usize) -> (Self, Self) {
        let (values, values_rest) = self.values.split_at_mut(len);
        let (halted, halted_rest) = self.halted.split_at_mut(len);
        let (arrived, arrived_rest) = match self.arrived.map(|slots| slots.split_at_mut(len)) {
            Some((slots, rest)) => (Some(slots), Some(rest)),
            None => (None, None),
        };
        (
            WaveSlices { values, halted, arrived },
            WaveSlices { values: values_rest, halted: halted_rest, arrived: arrived_rest },
        )
    }
}

/// Computes one chunk's vertices into `sink` (`chunk`'s slices start at the chunk).
fn compute_chunk<S: StepProgram>(
    run: &WaveRun<S>,
    job: &Chunk,
    chunk: WaveSlices<S>,
    lists: &mut ListCursor,
    sink: &mut Sink<S::Msg>,
) {
    sink.thread = rayon::current_thread_index();
    let program = run.program;
    let WaveSlices { values, halted, mut arrived } = chunk;
    for (k, vertex) in run.vertices[job.start..job.end].iter().enumerate() {
        let taken;
        let messages = match arrived.as_deref_mut() {
            Some(slots) => {
                taken = slots[k].take();
                taken.as_slice()
            }
            None => run.inbox.of(job.start - run.first + k),
        };
        lists.begin(*vertex);
        if program.wakes(halted[k], !messages.is_empty()) {
            sink.computed += 1;
            match program.compute(run.step, vertex, &mut values[k], messages, lists, run.previous, sink) {
                Ok(halts) => halted[k] = halts,
                Err(e) => {
                    sink.failure.get_or_insert(e);
                    return;
                }
            }
        }
        if let Err(e) = lists.finish() {
            sink.failure.get_or_insert(e);
            return;
        }
    }
}

impl<M: Wire> Arrived<M> {
    /// A_r, when the step's messages are there rather than in batch files.
    fn slots(&mut self) -> Option<&mut [Option<M>]> {
        self.array.as_deref_mut().filter(|_| self.merged.is_none())
    }

    /// Collects the messages to `vertex` from the merged batch files into `messages` (combined
    /// as they are read when the program has a combiner).
    fn take_messages<S: StepProgram<Msg = M>>(
        &mut self,
        program: &S,
        rank: usize,
        vertex: &VertexRecord,
        messages: &mut Vec<M>,
    ) -> Result<()> {
        messages.clear();
        if let Some(m) = self.merged.as_mut() {
            while let Some(name) = m.peek_name() {
                if name > vertex.name {
                    break;
                }
                if name < vertex.name {
                    return Err(not_owned(rank, name));
                }
                m.pop_record(&mut |bytes| {
                    let msg = M::get(bytes);
                    match messages.last_mut() {
                        Some(last) if program.has_combiner() => *last = program.combine(last, &msg),
                        _ => messages.push(msg),
                    }
                })?;
            }
        }
        Ok(())
    }

    /// A message left after the rank's last vertex was for a vertex the rank does not own.
    fn check_drained(&self, rank: usize) -> Result<()> {
        match self.merged.as_ref().and_then(MergedBatches::peek_name) {
            Some(name) => Err(not_owned(rank, name)),
            None => Ok(()),
        }
    }
}

fn not_owned(rank: usize, name: u64) -> Error {
    Error::Remote {
        rank: Some(rank),
        message: format!("message for vertex name {name}, which rank {rank} does not own"),
    }
}

/// What every chunk of a wave reads.
struct WaveRun<'a, S: StepProgram> {
    program: &'a S,
    vertices: &'a [VertexRecord],
    step: usize,
    previous: &'a Totals,
    inbox: &'a WaveInbox<S::Msg>,
    /// The wave's first vertex.
    first: usize,
}

/// Vertices `start..end` of a wave, whose lists begin at arcs `out_at` and `in_at`.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    start: usize,
    end: usize,
    out_at: u64,
    in_at: u64,
}

/// The outgoing streams of one step: one buffer per destination, a full one written as a file of
/// the outgoing stream and handed to U_s at once.
struct Outbox<'u, S: StepProgram> {
    unit: &'u ComputeUnit<'u, S>,
    step: usize,
    buffers: Vec<Vec<u8>>,
    seq: &'u mut u64,
    files: u64,
}

impl<'u, S: StepProgram> Outbox<'u, S> {
    fn new(unit: &'u ComputeUnit<'u, S>, step: usize, seq: &'u mut u64) -> Self {
        let buffers = vec![Vec::new(); unit.settings.transport.ranks()];
        Outbox { unit, step, buffers, seq, files: 0 }
    }

    /// Appends whole records to the stream of `dest`; a buffer that cannot take one more record
    /// becomes a file, exactly where appending them one by one would cut it.
    fn append(&mut self, dest: usize, mut records: &[u8]) -> Result<()> {
        let (file_size, record) = (self.unit.file_size(), self.unit.record_bytes);
        while !records.is_empty() {
            let buffer = &mut self.buffers[dest];
            if buffer.capacity() == 0 {
                buffer.reserve_exact(file_size);
            }
            let fit = (file_size - record).saturating_sub(buffer.len()) / record + 1;
            let take = fit.min(records.len() / record) * record;
            buffer.extend_from_slice(&records[..take]);
            records = &records[take..];
            if buffer.len() + record > file_size {
                self.write_buffer(dest)?;
                self.buffers[dest].clear();
            }
        }
        Ok(())
    }

    /// Writes the buffer of `dest` as the next file of the step and hands it to U_s.
    fn write_buffer(&mut self, dest: usize) -> Result<()> {
        let step = self.step;
        let path = self.unit.work.join(format!("out-{step}-{dest}-{}", *self.seq));
        *self.seq += 1;
        self.files += 1;
        write_file(&path, &self.buffers[dest], &self.unit.counters)?;
        let _ = self.unit.to_sender.send(SenderJob::File { step, dest, path });
        Ok(())
    }

    /// The rest of every outgoing buffer becomes a (last) file of this step; then U_s learns
    /// that the step ended. Returns the number of files of the step.
    fn flush(mut self) -> Result<u64> {
        for dest in 0..self.buffers.len() {
            if !self.buffers[dest].is_empty() {
                self.write_buffer(dest)?;
            }
        }
        self.buffers = Vec::new();
        let _ = self.unit.to_sender.send(SenderJob::EndOfStep { step: self.step });
        Ok(self.files)
    }
}

/// Folds the messages this rank sent to its own vertices into the array U_r filled from the
/// other ranks, emptying `local` for the next step. When nothing arrived from other ranks
/// (always at W = 1) `local` itself becomes the step's A_r, and `emptied` (an A_r whose every
/// slot was taken, if one of the right length is at hand) the next `local`.
fn join_local<S: StepProgram>(
    program: &S,
    local: &mut Vec<Option<S::Msg>>,
    emptied: &mut Vec<Option<S::Msg>>,
    array: &mut Option<Vec<Option<S::Msg>>>,
) {
    let Some(array) = array else {
        let n = local.len();
        let next = match std::mem::take(emptied) {
            slots if slots.len() == n => slots,
            _ => vec![None; n],
        };
        debug_assert!(next.iter().all(Option::is_none), "an emptied A_r holds no message");
        *array = Some(std::mem::replace(local, next));
        return;
    };
    array.par_iter_mut().zip(local.par_iter_mut()).for_each(|(slot, mine)| {
        if let Some(msg) = mine.take() {
            *slot = Some(match slot.take() {
                Some(old) => program.combine(&old, &msg),
                None => msg,
            });
        }
    });
}
