//! One scatter pass over the frontier through the page cache (module doc of [`super`], "One
//! iteration"): active vertices in ascending id, their lists cut into batches of pages, missing
//! pages read by the reader threads while the previous batch is scattered.

use std::collections::VecDeque;

use crossbeam_channel::Receiver;

use super::page_cache::{self, PageCache};
use super::parts::{ListRun, Sink};
use super::requests::{merge_requests, perform, PagedFile, ReadJob, MAX_PAGES_PER_REQUEST};
use super::static_cache::StaticCache;
use super::{Adjacency, CacheOptions, EngineCounters};
use crate::error::{Error, Result};

/// Batches in flight (one computing, the next being read).
const PIPELINE_DEPTH: usize = 2;
/// Upper bound on the pages of one batch, so that computation starts early.
const MAX_BATCH_PAGES: usize = 1024;

/// A bit per vertex.
#[derive(Debug, Clone)]
pub(super) struct Bitmap {
    pub(super) words: Vec<u64>,
}

impl Bitmap {
    pub(super) fn new(n: u64) -> Bitmap {
        Bitmap { words: vec![0; n.div_ceil(64) as usize] }
    }
    pub(super) fn set(&mut self, v: u64) {
        self.words[(v / 64) as usize] |= 1 << (v % 64);
    }
    pub(super) fn count(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }
    pub(super) fn clear(&mut self) {
        self.words.fill(0);
    }
    /// The first set bit at or after `from`.
    pub(super) fn next_one(&self, from: u64) -> Option<u64> {
        let mut word = (from / 64) as usize;
        if word >= self.words.len() {
            return None;
        }
        let mut bits = self.words[word] & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some(word as u64 * 64 + bits.trailing_zeros() as u64);
            }
            word += 1;
            if word >= self.words.len() {
                return None;
            }
            bits = self.words[word];
        }
    }
    pub(super) fn iter_ones(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                Some(i as u64 * 64 + b)
            })
        })
    }
}

/// A part of one vertex's list read through the page cache: edges `[first, end)`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    vertex: u64,
    first: u64,
    end: u64,
}

/// The requests of one batch: its segments, the frames it pinned, and where its reads report.
struct Batch {
    segments: Vec<Segment>,
    pinned: Vec<usize>,
    done: Receiver<Result<()>>,
    reads: usize,
}

/// Where the scan of the active vertices stands.
struct Cursor {
    next: Option<u64>,
    /// First edge still to do of `next` when its list was split across batches.
    resume_edge: Option<u64>,
}

/// One scatter pass over the frontier in one direction.
pub(super) struct Frontier<'a> {
    pub(super) options: &'a CacheOptions,
    pub(super) page_cache: &'a mut PageCache,
    pub(super) files: &'a [PagedFile],
    pub(super) adjacency: &'a Adjacency,
    pub(super) static_cache: Option<&'a StaticCache>,
    /// The cached lists were scattered already ([`Parallel::static_lists`]): skip them.
    pub(super) static_scattered: bool,
    pub(super) with_weights: bool,
    pub(super) counters: &'a mut EngineCounters,
}

impl Frontier<'_> {
    fn max_batch_pages(&self) -> usize {
        (self.page_cache.frames() / PIPELINE_DEPTH).clamp(2, MAX_BATCH_PAGES)
    }

    pub(super) fn scatter(&mut self, active: &Bitmap, sink: &mut dyn Sink) -> Result<()> {
        let threads = self.options.io_threads.max(1);
        let files = self.files;
        std::thread::scope(|scope| {
            let (jobs, queue) = crossbeam_channel::unbounded::<ReadJob>();
            for _ in 0..threads {
                let queue = queue.clone();
                scope.spawn(move || {
                    for job in queue {
                        let result = perform(&files[job.request.file], &job.request);
                        let _ = job.done.send(result);
                    }
                });
            }
            let result = self.pipeline(active, sink, &jobs);
            drop(jobs);
            result
        })
    }

    fn pipeline(
        &mut self,
        active: &Bitmap,
        sink: &mut dyn Sink,
        jobs: &crossbeam_channel::Sender<ReadJob>,
    ) -> Result<()> {
        let mut cursor = Cursor { next: active.next_one(0), resume_edge: None };
        let mut in_flight: VecDeque<Batch> = VecDeque::new();
        loop {
            while in_flight.len() < PIPELINE_DEPTH && cursor.next.is_some() {
                let batch = self.build_batch(active, &mut cursor, sink, jobs)?;
                if !batch.segments.is_empty() {
                    in_flight.push_back(batch);
                }
            }
            let Some(batch) = in_flight.pop_front() else { break };
            let mut failure = None;
            for _ in 0..batch.reads {
                match batch.done.recv() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => failure = Some(e),
                    Err(_) => failure = Some(Error::invalid("a reader thread stopped unexpectedly")),
                }
            }
            if let Some(e) = failure {
                // Wait for the other batches' reads so that no reader still writes a frame.
                for other in &in_flight {
                    for _ in 0..other.reads {
                        let _ = other.done.recv();
                    }
                }
                return Err(e);
            }
            self.compute(&batch, sink);
            for &frame in &batch.pinned {
                self.page_cache.unpin(frame);
            }
        }
        Ok(())
    }

    /// Collects segments until the batch's distinct pages would exceed the limit, pins their
    /// pages, allocates frames for the missing ones and issues the merged reads. Lists in the
    /// static cache are scattered on the spot.
    fn build_batch(
        &mut self,
        active: &Bitmap,
        cursor: &mut Cursor,
        sink: &mut dyn Sink,
        jobs: &crossbeam_channel::Sender<ReadJob>,
    ) -> Result<Batch> {
        let page_size = self.options.page_size;
        let tb = self.adjacency.target_bytes;
        let weights_file = if self.with_weights { self.adjacency.weights } else { None };
        let max_pages = self.max_batch_pages();
        let mut segments = Vec::new();
        let mut pinned = Vec::new();
        let mut missing = Vec::new();
        let mut last_target_page: Option<u64> = None;
        let mut last_weight_page: Option<u64> = None;
        let pages_of = |first: u64, end: u64, width: u64| (first * width / page_size, (end * width - 1) / page_size);
        while let Some(v) = cursor.next {
            let (s, e) = (self.adjacency.offsets[v as usize], self.adjacency.offsets[v as usize + 1]);
            let start = cursor.resume_edge.unwrap_or(s);
            if start == e {
                cursor.next = active.next_one(v + 1);
                cursor.resume_edge = None;
                continue;
            }
            if start == s {
                if let Some((targets, weights)) = self.static_cache.and_then(|c| c.get(v)) {
                    if !self.static_scattered {
                        self.counters.static_hits += 1;
                        sink.lists(&[ListRun {
                            source: v,
                            targets,
                            weights: if self.with_weights { weights } else { None },
                        }]);
                    }
                    cursor.next = active.next_one(v + 1);
                    continue;
                }
            }
            let new_pages = |first: u64, end: u64, last_t: Option<u64>, last_w: Option<u64>| {
                let (t0, t1) = pages_of(first, end, tb);
                let mut count = (t1 - t0 + 1) as usize - (last_t == Some(t0)) as usize;
                if weights_file.is_some() {
                    let (w0, w1) = pages_of(first, end, 8);
                    count += (w1 - w0 + 1) as usize - (last_w == Some(w0)) as usize;
                }
                count
            };
            let mut end = e;
            let batch_pages = pinned.len();
            if batch_pages + new_pages(start, end, last_target_page, last_weight_page) > max_pages {
                if !segments.is_empty() {
                    break;
                }
                // A list larger than a batch: take as many edges as fit, the rest goes on in
                // the next batch.
                let per_edge = tb + if weights_file.is_some() { 8 } else { 0 };
                let fit = ((max_pages as u64).saturating_sub(2) * page_size / per_edge).max(1);
                end = (start + fit).min(e);
                while end > start + 1 && new_pages(start, end, last_target_page, last_weight_page) > max_pages {
                    end = start + (end - start) / 2;
                }
            }
            // Pin (and request) the pages of [start, end).
            let (t0, t1) = pages_of(start, end, tb);
            for page in t0..=t1 {
                if last_target_page != Some(page) {
                    self.need_page(self.adjacency.targets, page, &mut pinned, &mut missing)?;
                    last_target_page = Some(page);
                }
            }
            if let Some(wf) = weights_file {
                let (w0, w1) = pages_of(start, end, 8);
                for page in w0..=w1 {
                    if last_weight_page != Some(page) {
                        self.need_page(wf, page, &mut pinned, &mut missing)?;
                        last_weight_page = Some(page);
                    }
                }
            }
            self.counters.paged_lists += 1;
            segments.push(Segment { vertex: v, first: start, end });
            if end == e {
                cursor.next = active.next_one(v + 1);
                cursor.resume_edge = None;
            } else {
                cursor.resume_edge = Some(end);
                break;
            }
        }
        // Merge adjacent missing pages and issue the reads.
        let max_request_pages = ((self.options.max_request_bytes / page_size) as usize).clamp(1, MAX_PAGES_PER_REQUEST);
        // Target and weight pages were collected interleaved: sort by file and page so that
        // runs of each file merge.
        missing.sort_unstable_by_key(|&(file, page, _, _)| (file, page));
        let requests = merge_requests(&missing, max_request_pages);
        let (done_tx, done) = crossbeam_channel::unbounded();
        let reads = requests.len();
        for request in requests {
            self.counters.requests += 1;
            self.counters.pages_requested += request.frames.len() as u64;
            if request.frames.len() > 1 {
                self.counters.merged_requests += 1;
            }
            jobs.send(ReadJob { request, done: done_tx.clone() })
                .map_err(|_| Error::invalid("the reader threads stopped unexpectedly"))?;
        }
        Ok(Batch { segments, pinned, done, reads })
    }

    /// Looks `page` of `file` up; pins its frame, allocating one (and queueing a read) if absent.
    fn need_page(
        &mut self,
        file: usize,
        page: u64,
        pinned: &mut Vec<usize>,
        missing: &mut Vec<(usize, u64, page_cache::FramePtr, usize)>,
    ) -> Result<()> {
        let paged = &self.files[file];
        let global = paged.first_page + page;
        let frame = match self.page_cache.lookup(global) {
            Some(frame) => frame,
            None => {
                let valid = paged.page_bytes(page);
                let frame = self.page_cache.allocate(global, valid)?;
                missing.push((file, page, self.page_cache.frame_ptr(frame), valid));
                frame
            }
        };
        self.page_cache.pin(frame);
        pinned.push(frame);
        Ok(())
    }

    /// Scatters the segments of a batch whose reads have all completed.
    fn compute(&mut self, batch: &Batch, sink: &mut dyn Sink) {
        let page_size = self.options.page_size;
        let tb = self.adjacency.target_bytes;
        let weights_file = if self.with_weights { self.adjacency.weights } else { None };
        let targets_first_page = self.files[self.adjacency.targets].first_page;
        // First where each run lies (marking the bytes used), then the runs to the sink at once.
        let mut spans = Vec::new();
        for seg in &batch.segments {
            let mut edge = seg.first;
            while edge < seg.end {
                // The run of edges whose targets (and weights) lie in one page each.
                let t_page = edge * tb / page_size;
                let mut run_end = seg.end.min((t_page + 1) * page_size / tb);
                let w_page = edge * 8 / page_size;
                if weights_file.is_some() {
                    run_end = run_end.min((w_page + 1) * page_size / 8);
                }
                let t_frame =
                    self.page_cache.resident_frame(targets_first_page + t_page).expect("pinned page is resident");
                let (ts, te) =
                    ((edge * tb - t_page * page_size) as usize, (run_end * tb - t_page * page_size) as usize);
                self.page_cache.mark_used(t_frame, ts, te);
                let weights_range = weights_file.map(|wf| {
                    let w_frame = self
                        .page_cache
                        .resident_frame(self.files[wf].first_page + w_page)
                        .expect("pinned page is resident");
                    let (ws, we) =
                        ((edge * 8 - w_page * page_size) as usize, (run_end * 8 - w_page * page_size) as usize);
                    self.page_cache.mark_used(w_frame, ws, we);
                    (w_frame, ws, we)
                });
                spans.push((seg.vertex, t_frame, ts, te, weights_range));
                edge = run_end;
            }
        }
        let cache = &*self.page_cache;
        let runs: Vec<ListRun> = spans
            .into_iter()
            .map(|(source, frame, ts, te, weights)| ListRun {
                source,
                targets: &cache.frame_bytes(frame)[ts..te],
                weights: weights.map(|(f, ws, we)| &cache.frame_bytes(f)[ws..we]),
            })
            .collect();
        sink.lists(&runs);
    }
}
