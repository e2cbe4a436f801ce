//! One interval of a fully external step (GraphChi's parallel sliding windows, Kyrola et al.
//! §4; dynamic shards, Vora et al. §3–5): load the interval's memory shard and its window of
//! every other shard (static, dynamic or overlaid by the dynamic shards since the last shadow
//! iteration), gather the messages its vertices receive, apply, scatter along the loaded
//! edges (forward and backward), serve from adjacency lists the vertices that lack edges on a
//! dynamic shard, and write the sections back, with the dirty edges appended to the next
//! dynamic shards.

use rayon::prelude::*;

use super::{
    edges, ByKind, DelayedDelivery, DynamicShardWriter, EdgeRecord, EdgeSection, Executor, Sections, ShardFiles,
    StepKind, StepPlan,
};
use crate::error::Result;
use crate::program::{add_global_sums, global_contributions, EdgeRef, IterationContext, VertexProgram};
use crate::VertexId;

/// What one interval's processing produced.
#[derive(Default)]
pub(super) struct IntervalOutcome {
    pub(super) active: u64,
    /// Records written in the step (identity messages included).
    pub(super) written: u64,
    pub(super) edges_loaded: u64,
    pub(super) dirty: u64,
    /// Both global sums (`program::global_contributions`).
    pub(super) global: [f64; 2],
    /// Vertices lacking edges on a dynamic shard that were served from their adjacency lists.
    pub(super) served: u64,
    /// Messages sent along missing edges from adjacency lists.
    pub(super) direct_messages: u64,
}

/// What the intervals of one step share.
#[derive(Clone, Copy)]
pub(super) struct StepInputs<'s> {
    pub(super) step: usize,
    pub(super) plan: StepPlan,
    pub(super) ctx: &'s IterationContext,
    /// Whether active vertices scatter (not in the step after `max_iterations`).
    pub(super) scatter_allowed: bool,
}

/// One interval during a step: its vertices' values and degrees, and the edge sections loaded
/// for it (memory shard j whole, block j of every other shard: the windows).
struct IntervalData<P: VertexProgram> {
    j: usize,
    v0: VertexId,
    v1: VertexId,
    values: Vec<P::Value>,
    out_degree: Vec<u64>,
    /// Empty unless backward messages are in use.
    in_degree: Vec<u64>,
    memory: EdgeSection,
    windows: Vec<(usize, EdgeSection)>,
}

impl<P: VertexProgram> IntervalData<P> {
    fn len(&self) -> usize {
        (self.v1 - self.v0) as usize
    }

    fn edges_loaded(&self) -> u64 {
        self.memory.len() as u64 + self.windows.iter().map(|(_, w)| w.len() as u64).sum::<u64>()
    }

    /// The sections holding the interval's out-edges (in their block j): the memory shard and
    /// the windows.
    fn out_sections(&self) -> impl Iterator<Item = &EdgeSection> {
        std::iter::once(&self.memory).chain(self.windows.iter().map(|(_, w)| w))
    }
}

impl<'a, P: VertexProgram> Executor<'a, P> {
    /// Loads blocks `[first, end)` of shard `k` for a step of the given kind.
    fn load(&self, kind: StepKind, k: usize, first: usize, end: usize, by_kind: &mut ByKind) -> Result<EdgeSection> {
        let before = self.runner.io_snapshot();
        let section = match kind {
            StepKind::Static | StepKind::Shadow => {
                let files = self.static_files(k);
                let mut section = files.load(first, end)?;
                by_kind.static_read += self.runner.io_snapshot().since(&before).bytes_read;
                if kind == StepKind::Shadow {
                    self.overlay(&mut section, k, first, end, by_kind)?;
                }
                section
            }
            StepKind::Dynamic => match self.dynamic_sets.last() {
                Some(set) => {
                    let s = ShardFiles::dynamic_shard(set, k, self.layout.width, self.record).load(first, end)?;
                    by_kind.dynamic_read += self.runner.io_snapshot().since(&before).bytes_read;
                    s
                }
                None => unreachable!("a dynamic step always follows the building of a dynamic shard set"),
            },
        };
        Ok(section)
    }

    fn static_files(&self, k: usize) -> ShardFiles<'_> {
        let [f, b] = &self.static_records[k];
        ShardFiles::static_shard(&self.layout, k, [f.as_ref(), b.as_ref()], self.weights, self.record)
    }

    /// Shadow iterations (Algorithm 1, LOAD-ALL-SHARDS): overlays the dynamic shards built
    /// since the last shadow onto a static section; the newer record of an edge wins.
    fn overlay(
        &self,
        section: &mut EdgeSection,
        k: usize,
        first: usize,
        end: usize,
        by_kind: &mut ByKind,
    ) -> Result<()> {
        let msg = std::mem::size_of::<P::Msg>();
        let r = self.record;
        let base_step = self.dynamic_sets.first().map_or(0, |s| s.first_step.saturating_sub(1));
        section.last_present = vec![base_step as u32; section.len()];
        for set in &self.dynamic_sets {
            let before = self.runner.io_snapshot();
            let ds = ShardFiles::dynamic_shard(set, k, self.layout.width, self.record).load(first, end)?;
            by_kind.dynamic_read += self.runner.io_snapshot().since(&before).bytes_read;
            for e in 0..ds.len() {
                let pos = (ds.static_index[e] - section.first_edge) as usize;
                section.last_present[pos] = section.last_present[pos].max(set.last_step as u32);
                for d in 0..2 {
                    if !self.dirs[d] {
                        continue;
                    }
                    let newer = &ds.records[d][e * r..(e + 1) * r];
                    let old = &mut section.records[d][pos * r..(pos + 1) * r];
                    if EdgeRecord::last_stamp(newer, msg) > EdgeRecord::last_stamp(old, msg) {
                        old.copy_from_slice(newer);
                        section.mark_edge(pos);
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes a section back where a step of this kind loaded it from.
    fn write_back(&self, kind: StepKind, k: usize, section: &EdgeSection, by_kind: &mut ByKind) -> Result<()> {
        if !section.is_modified() {
            return Ok(());
        }
        let before = self.runner.io_snapshot();
        match kind {
            StepKind::Static | StepKind::Shadow => {
                self.static_files(k).write_back(section)?;
                by_kind.static_written += self.runner.io_snapshot().since(&before).bytes_written;
            }
            StepKind::Dynamic => {
                let set = self.dynamic_sets.last().expect("dynamic step without dynamic shards");
                ShardFiles::dynamic_shard(set, k, self.layout.width, self.record).write_back(section)?;
                by_kind.dynamic_written += self.runner.io_snapshot().since(&before).bytes_written;
            }
        }
        Ok(())
    }

    /// One interval of one step: load, gather, apply, scatter (and deliver delayed messages in
    /// shadow iterations), write back, append dirty edges to the next dynamic shards.
    pub(super) fn interval(
        &mut self,
        s: StepInputs<'_>,
        j: usize,
        writer: Option<&mut DynamicShardWriter>,
        by_kind: &mut ByKind,
        total: &mut IntervalOutcome,
    ) -> Result<()> {
        let program = self.program;
        let mut iv = self.load_interval(s, j, by_kind)?;
        let (acc, received) = self.gather(s.step, &iv)?;
        let active = self.apply(s, &mut iv, acc, received);
        let active_count = active.iter().filter(|&&a| a).count() as u64;
        for (i, (x, &d)) in iv.values.iter().zip(&iv.out_degree).enumerate() {
            total.global = add_global_sums(total.global, global_contributions(program, iv.v0 + i as u64, x, d));
        }
        let sending = s.scatter_allowed && active_count > 0;
        if sending {
            self.scatter_forward(s.step, &mut iv, &active);
            self.scatter_backward(s.step, &mut iv, &active);
            if s.plan.kind == StepKind::Dynamic {
                self.serve_lacking(s.step, &iv, &active, by_kind, total)?;
            }
        }
        if s.plan.kind == StepKind::Shadow && !self.delay.is_empty() {
            self.deliver_delayed(s.step, &mut iv);
        }
        let (written, dirty) =
            if sending || s.plan.kind == StepKind::Shadow { self.count_records(s.step, &iv) } else { (0, 0) };
        self.write_interval(s.plan.kind, &iv, by_kind)?;
        if let (Some(writer), Some(since)) = (writer, s.plan.build_since) {
            self.append_dirty(writer, since, &iv, by_kind)?;
        }
        total.active += if s.scatter_allowed { active_count } else { 0 };
        total.edges_loaded += iv.edges_loaded();
        total.dirty += dirty;
        total.written += written;
        Ok(())
    }

    /// The interval's vertex values (initial ones in step 0) and degrees, memory shard j (all
    /// blocks) and the windows of the other shards (block j).
    fn load_interval(&self, s: StepInputs<'_>, j: usize, by_kind: &mut ByKind) -> Result<IntervalData<P>> {
        let p = self.layout.shards;
        let (v0, v1) = (self.layout.intervals[j], self.layout.intervals[j + 1]);
        let len = (v1 - v0) as usize;
        let vsize = std::mem::size_of::<P::Value>();
        let info = s.ctx.graph;
        let values: Vec<P::Value> = if s.step == 0 {
            (v0..v1).map(|v| self.program.init(v, &info)).collect()
        } else {
            let mut buf = vec![0u8; len * vsize];
            self.values.read_at(&mut buf, v0 * vsize as u64)?;
            buf.chunks_exact(vsize.max(1)).take(len).map(edges::pod_read::<P::Value>).collect()
        };
        let degrees = |csr: &crate::store::CsrLayout| -> Result<Vec<u64>> {
            let mut offsets = vec![0u64; len + 1];
            csr.read_offsets(v0, &mut offsets)?;
            Ok(offsets.windows(2).map(|w| w[1] - w[0]).collect())
        };
        let out_degree = degrees(&self.out_offsets)?;
        let in_degree = match &self.in_offsets {
            Some(csr) => degrees(csr)?,
            None => Vec::new(),
        };
        let memory = self.load(s.plan.kind, j, 0, p, by_kind)?;
        let mut windows: Vec<(usize, EdgeSection)> = Vec::with_capacity(p.saturating_sub(1));
        for k in (0..p).filter(|&k| k != j) {
            windows.push((k, self.load(s.plan.kind, k, j, j + 1, by_kind)?));
        }
        Ok(IntervalData { j, v0, v1, values, out_degree, in_degree, memory, windows })
    }

    /// Gathers the previous step's messages with `combine`: those delivered directly, forward
    /// ones on in-edges, backward ones on out-edges (the windows and the memory shard's own
    /// block). Returns every vertex's accumulator and whether it received a message.
    fn gather(&mut self, step: usize, iv: &IntervalData<P>) -> Result<(Vec<P::Msg>, Vec<bool>)> {
        let (program, r, j, v0) = (self.program, self.record, iv.j, iv.v0);
        let mut acc = vec![program.identity(); iv.len()];
        let mut received = vec![false; iv.len()];
        let mut fold = |v: VertexId, m: P::Msg| {
            let t = (v - v0) as usize;
            acc[t] = program.combine(acc[t], m);
            received[t] = true;
        };
        for (t, m) in self.direct.take_arriving(j)? {
            fold(t, m);
        }
        if step > 0 && self.dirs[0] {
            let memory = &iv.memory;
            for e in 0..memory.len() {
                if let Some(m) = EdgeRecord::read::<P::Msg>(&memory.records[0][e * r..(e + 1) * r], step - 1) {
                    fold(memory.targets[e], m);
                }
            }
        }
        if step > 0 && self.dirs[1] {
            for section in iv.out_sections() {
                for e in section.block(j) {
                    if let Some(m) = EdgeRecord::read::<P::Msg>(&section.records[1][e * r..(e + 1) * r], step - 1) {
                        fold(section.sources[e], m);
                    }
                }
            }
        }
        Ok((acc, received))
    }

    /// Apply, in parallel over the interval's vertices, with the previous iteration's context;
    /// returns which vertices are active (in step 0: the initially active ones).
    fn apply(&self, s: StepInputs<'_>, iv: &mut IntervalData<P>, acc: Vec<P::Msg>, received: Vec<bool>) -> Vec<bool> {
        let (program, v0) = (self.program, iv.v0);
        if s.step == 0 {
            let info = s.ctx.graph;
            return (v0..iv.v1).map(|v| program.initially_active(v, &info)).collect();
        }
        let all = program.applies_to_all();
        iv.values
            .par_iter_mut()
            .zip(acc.par_iter().zip(received.par_iter()))
            .enumerate()
            .map(|(i, (value, (&m, &got)))| (all || got) && program.apply(v0 + i as u64, value, m, s.ctx))
            .collect()
    }

    /// Scatter of the active vertices into the records of their out-edges present (windows in
    /// parallel, then the memory shard's block j).
    fn scatter_forward(&self, step: usize, iv: &mut IntervalData<P>, active: &[bool]) {
        if !self.dirs[0] {
            return;
        }
        let j = iv.j;
        let senders = Senders::new(self, step, &iv.values, &iv.out_degree, iv.v0, active);
        iv.windows.par_iter_mut().for_each(|(_, w)| senders.send_block(w, j, 0));
        senders.send_block(&mut iv.memory, j, 0);
    }

    /// Scatter of the active vertices against edge direction, into the backward records of their
    /// in-edges (the memory shard), block by block.
    fn scatter_backward(&self, step: usize, iv: &mut IntervalData<P>, active: &[bool]) {
        if !self.dirs[1] {
            return;
        }
        let senders = Senders::new(self, step, &iv.values, &iv.out_degree, iv.v0, active);
        for block in 0..self.layout.shards {
            senders.send_block(&mut iv.memory, block, 1);
        }
    }

    /// Active vertices lacking an edge on a dynamic shard are served from their adjacency lists
    /// at once, or wait in the delay buffer for a shadow iteration.
    fn serve_lacking(
        &mut self,
        step: usize,
        iv: &IntervalData<P>,
        active: &[bool],
        by_kind: &mut ByKind,
        total: &mut IntervalOutcome,
    ) -> Result<()> {
        let lacking = self.lacking(iv, active);
        match self.delivery {
            DelayedDelivery::Adjacency => {
                let sections = Sections { memory: &iv.memory, windows: &iv.windows };
                self.deliver_directly(iv.j, &lacking, sections, &iv.values, &iv.out_degree, by_kind, total)?;
            }
            DelayedDelivery::Shadow => {
                for i in lacking {
                    self.delay.push(step, iv.v0 + i as u64, iv.values[i]);
                }
            }
        }
        Ok(())
    }

    /// The active vertices (offsets in the interval) with fewer edges on the loaded shards than
    /// in the graph, in the directions in use.
    fn lacking(&self, iv: &IntervalData<P>, active: &[bool]) -> Vec<usize> {
        let (len, v0) = (iv.len(), iv.v0);
        let mut present = vec![0u64; len];
        if self.dirs[0] {
            for section in iv.out_sections() {
                for e in section.block(iv.j) {
                    present[(section.sources[e] - v0) as usize] += 1;
                }
            }
        }
        if self.dirs[1] {
            for &t in &iv.memory.targets {
                present[(t - v0) as usize] += 1;
            }
        }
        (0..len)
            .filter(|&i| {
                let needed =
                    if self.dirs[0] { iv.out_degree[i] } else { 0 } + if self.dirs[1] { iv.in_degree[i] } else { 0 };
                active[i] && present[i] < needed
            })
            .collect()
    }

    /// Shadow iterations deliver the delayed messages of the interval's vertices along the
    /// edges that were missing when they were delayed, folded with `combine`.
    fn deliver_delayed(&self, step: usize, iv: &mut IntervalData<P>) {
        let (program, r, j, v0) = (self.program, self.record, iv.j, iv.v0);
        let delayed = self.delay.entries_in(v0, iv.v1);
        let mut slot_of = vec![usize::MAX; iv.len()];
        for (idx, (v, _)) in delayed.iter().enumerate() {
            slot_of[(v - v0) as usize] = idx;
        }
        let out_degree = &iv.out_degree;
        let deliver = |section: &mut EdgeSection, d: usize, e: usize, from: VertexId, to: VertexId| {
            let idx = slot_of[(from - v0) as usize];
            if idx == usize::MAX {
                return;
            }
            let present_until = section.last_present[e] as usize;
            let edge = EdgeRef {
                source: from,
                target: to,
                weight: edge_weight(section, e),
                source_out_degree: out_degree[(from - v0) as usize],
            };
            let mut folded: Option<P::Msg> = None;
            for (_, value) in delayed[idx].1.iter().filter(|(t, _)| *t > present_until) {
                if let Some(m) = program.scatter(value, edge) {
                    folded = Some(folded.map_or(m, |f| program.combine(f, m)));
                }
            }
            if let Some(m) = folded {
                let rec = &mut section.records[d][e * r..(e + 1) * r];
                let m = EdgeRecord::read::<P::Msg>(rec, step).map_or(m, |now| program.combine(now, m));
                EdgeRecord::write(rec, step, &m);
                section.mark_edge(e);
            }
        };
        if self.dirs[0] {
            for section in std::iter::once(&mut iv.memory).chain(iv.windows.iter_mut().map(|(_, w)| w)) {
                for e in section.block(j) {
                    let (s, t) = (section.sources[e], section.targets[e]);
                    deliver(section, 0, e, s, t);
                }
            }
        }
        if self.dirs[1] {
            for e in 0..iv.memory.len() {
                let (s, t) = (iv.memory.sources[e], iv.memory.targets[e]);
                deliver(&mut iv.memory, 1, e, t, s);
            }
        }
    }

    /// Records written in this step, and the dirty ones among them (non-identity message).
    fn count_records(&self, step: usize, iv: &IntervalData<P>) -> (u64, u64) {
        let (r, msg) = (self.record, std::mem::size_of::<P::Msg>());
        let (mut written, mut dirty) = (0u64, 0u64);
        let mut count = |section: &EdgeSection, range: std::ops::Range<usize>, d: usize| {
            for e in range {
                let rec = &section.records[d][e * r..(e + 1) * r];
                if EdgeRecord::read::<P::Msg>(rec, step).is_some() {
                    written += 1;
                    dirty += EdgeRecord::dirty_since(rec, msg, step, &self.identity) as u64;
                }
            }
        };
        if self.dirs[0] {
            for section in iv.out_sections() {
                count(section, section.block(iv.j), 0);
            }
        }
        if self.dirs[1] {
            count(&iv.memory, 0..iv.memory.len(), 1);
        }
        (written, dirty)
    }

    /// Writes back the interval's values and the records that changed.
    fn write_interval(&self, kind: StepKind, iv: &IntervalData<P>, by_kind: &mut ByKind) -> Result<()> {
        let vsize = std::mem::size_of::<P::Value>();
        let mut bytes = Vec::with_capacity(iv.len() * vsize);
        for x in &iv.values {
            bytes.extend_from_slice(edges::pod_bytes(x));
        }
        self.values.write_at(&bytes, iv.v0 * vsize as u64)?;
        drop(bytes);
        self.write_back(kind, iv.j, &iv.memory, by_kind)?;
        for (k, w) in &iv.windows {
            self.write_back(kind, *k, w, by_kind)?;
        }
        Ok(())
    }

    /// Appends the dirty edges whose updates are all known by now to the next dynamic shards.
    fn append_dirty(
        &self,
        writer: &mut DynamicShardWriter,
        since: usize,
        iv: &IntervalData<P>,
        by_kind: &mut ByKind,
    ) -> Result<()> {
        let (r, msg, j) = (self.record, std::mem::size_of::<P::Msg>(), iv.j);
        let before = self.runner.io_snapshot();
        let dirs = self.dirs;
        let identity = &self.identity;
        let keep = |section: &EdgeSection, e: usize| {
            (0..2).any(|d| {
                dirs[d] && EdgeRecord::dirty_since(&section.records[d][e * r..(e + 1) * r], msg, since, identity)
            })
        };
        for block in 0..=j {
            writer.append_block(j, &iv.memory, block, r, |e| keep(&iv.memory, e))?;
        }
        for (k, w) in iv.windows.iter().filter(|(k, _)| *k < j) {
            writer.append_block(*k, w, j, r, |e| keep(w, e))?;
        }
        by_kind.dynamic_written += self.runner.io_snapshot().since(&before).bytes_written;
        Ok(())
    }
}

/// The interval's vertices as senders of one step's scatter.
struct Senders<'i, P: VertexProgram> {
    program: &'i P,
    record: usize,
    step: usize,
    values: &'i [P::Value],
    out_degree: &'i [u64],
    v0: VertexId,
    active: &'i [bool],
}

impl<'i, P: VertexProgram> Senders<'i, P> {
    fn new(
        executor: &Executor<'i, P>,
        step: usize,
        values: &'i [P::Value],
        out_degree: &'i [u64],
        v0: VertexId,
        active: &'i [bool],
    ) -> Self {
        Senders { program: executor.program, record: executor.record, step, values, out_degree, v0, active }
    }

    /// Sends along the edges of block `block` of `section` in direction `d` (0: forward, from
    /// source to target, 1: backward), writing each active sender's message into the edge's
    /// record of that direction; marks the block if any record was written.
    fn send_block(&self, section: &mut EdgeSection, block: usize, d: usize) {
        let r = self.record;
        let mut wrote = false;
        for e in section.block(block) {
            let (s, t) = (section.sources[e], section.targets[e]);
            let (from, to) = if d == 0 { (s, t) } else { (t, s) };
            let i = (from - self.v0) as usize;
            if !self.active[i] {
                continue;
            }
            let weight = edge_weight(section, e);
            let edge = EdgeRef { source: from, target: to, weight, source_out_degree: self.out_degree[i] };
            if let Some(m) = self.program.scatter(&self.values[i], edge) {
                EdgeRecord::write(&mut section.records[d][e * r..(e + 1) * r], self.step, &m);
                wrote = true;
            }
        }
        if wrote {
            section.mark_block(block);
        }
    }
}

/// The weight of edge `e` of a section: 1 when the section carries none.
fn edge_weight(section: &EdgeSection, e: usize) -> f64 {
    if section.weights.is_empty() {
        1.0
    } else {
        section.weights[e]
    }
}
