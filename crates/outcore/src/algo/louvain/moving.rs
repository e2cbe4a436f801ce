//! Level 1 of Louvain on the stored graph: parallel local moving as a Pregel program whose
//! community state lives in memory (the program's own arrays, O(|V|)) while the engine
//! streams the adjacency (inmem, or the out-of-core pregel engine within `--memory`).
//!
//! Every superstep each vertex sends its dense id and the arc's weight along its out-arcs
//! ([`announce`]): the engine's lists name vertices its own way (original ids, recoded names),
//! so this is how a vertex learns its adjacency in the dense ids the state is indexed by, one
//! superstep later. Superstep 1 records each vertex's weighted degree k_v (a self-loop counts
//! twice, as in networkx). Each later superstep is one round of moves decided from the state
//! after the previous round (synchronous, so the result does not depend on the order vertices are visited): every
//! vertex sums the weights of its arcs per neighbouring community and moves to the community
//! of largest modularity gain (Blondel et al. 2008, eq. 2, in networkx's form), ties to the
//! smaller community id. Synchronous moves can swap two vertices forever; the minimum-label
//! rule of Lu, Halappanavar and Kalyanaraman ("Parallel heuristics for scalable community
//! detection", Parallel Computing 2015, §4.1) forbids the swap of singletons: a singleton
//! moves to another singleton only when that community's id is smaller.
//!
//! The same superstep also sums, for the partition it reads, twice the weight inside
//! communities (aggregate slot 0); `end_superstep_aggregates` turns it into that partition's
//! modularity, keeps the best partition seen and commits the round's moves. A round whose
//! partition does not beat the best by more than `threshold` is a stall; the level ends when a
//! round moves nothing, after [`MAX_STALLS`] stalls in a row, or after [`MAX_ROUNDS`] rounds.
//! Its result is the best partition, so modularity never falls below the singletons'.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::program::{Control, GraphInfo, PregelContext, PregelProgram};
use crate::VertexId;

/// Rounds in a row without a gain above the threshold after which level 1 ends.
pub const MAX_STALLS: usize = 3;
/// The most rounds level 1 runs (each one pass over the arcs).
pub const MAX_ROUNDS: usize = 200;
/// Vertices are dealt into this many subsets by a hash of their id; round s moves only subset
/// s mod SUBSETS, so most neighbours never move in the same round.
pub const SUBSETS: usize = 8;

/// The subset of vertex `v` (a splitmix64 hash of its id).
fn subset(v: VertexId) -> usize {
    let mut z = v.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) % SUBSETS as u64) as usize
}

/// Bytes of in-memory state per vertex (degree, Σtot, current and next community, size, best).
pub const STATE_BYTES_PER_VERTEX: u64 = 8 + 8 + 4 + 4 + 4 + 4;

/// Sends `(dense id, arc weight)` along every out-arc: on an undirected store each vertex then
/// receives its whole adjacency in dense ids, whatever names the engine gives vertices (the
/// pregel engine's lists hold original ids or recoded names, not dense ids).
pub fn announce(ctx: &mut dyn PregelContext<(u64, f64)>) {
    let v = ctx.vertex();
    let arcs: Vec<(u64, f64)> = ctx.out_neighbors().iter().copied().zip(ctx.out_weights().iter().copied()).collect();
    for (name, w) in arcs {
        ctx.send(name, (v, w));
    }
}

/// A vertex's adjacency from the announcements it received, in a fixed order (by neighbour,
/// then weight) so that sums do not depend on the order messages arrive in.
pub fn sorted_adjacency(messages: &[(u64, f64)]) -> Vec<(VertexId, f64)> {
    let mut adjacency = messages.to_vec();
    adjacency.sort_unstable_by_key(|a| (a.0, a.1.to_bits()));
    adjacency
}

/// An f64 in an atomic cell (written by one vertex or between supersteps only).
#[derive(Default)]
struct AtomicF64(AtomicU64);

impl AtomicF64 {
    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
    fn set(&self, value: f64) {
        self.0.store(value.to_bits(), Ordering::Relaxed)
    }
}

/// The level's bookkeeping between rounds.
struct Rounds {
    /// The best partition so far and its modularity.
    best: Vec<u32>,
    best_q: f64,
    /// Modularity of the singletons (the first round's partition).
    initial_q: Option<f64>,
    stalls: usize,
    /// Rounds in a row that moved nothing.
    idle: usize,
    rounds: usize,
}

/// The local-moving program of level 1 (see the module doc).
pub struct LocalMoving {
    resolution: f64,
    threshold: f64,
    degree: Vec<AtomicF64>,
    /// Σtot: the sum of the degrees of each community's members (by community id).
    sigma: Vec<AtomicF64>,
    size: Vec<AtomicU32>,
    community: Vec<AtomicU32>,
    next: Vec<AtomicU32>,
    /// 2m, the sum of all degrees (known after superstep 0).
    total: AtomicF64,
    empty: AtomicBool,
    rounds: Mutex<Rounds>,
}

/// What level 1 found.
pub struct LevelOne {
    /// Community per vertex (a member's dense id).
    pub community: Vec<u32>,
    pub modularity: f64,
    pub initial_modularity: f64,
    /// Twice the total edge weight.
    pub total: f64,
    pub rounds: usize,
}

impl LocalMoving {
    pub fn new(vertices: usize, resolution: f64, threshold: f64) -> LocalMoving {
        LocalMoving {
            resolution,
            threshold,
            degree: (0..vertices).map(|_| AtomicF64::default()).collect(),
            sigma: (0..vertices).map(|_| AtomicF64::default()).collect(),
            size: (0..vertices).map(|_| AtomicU32::new(1)).collect(),
            community: (0..vertices as u32).map(AtomicU32::new).collect(),
            next: (0..vertices as u32).map(AtomicU32::new).collect(),
            total: AtomicF64::default(),
            empty: AtomicBool::new(false),
            rounds: Mutex::new(Rounds {
                best: (0..vertices as u32).collect(),
                best_q: f64::NEG_INFINITY,
                initial_q: None,
                stalls: 0,
                idle: 0,
                rounds: 0,
            }),
        }
    }

    /// The best partition and its figures, once the run has ended.
    pub fn finish(self) -> LevelOne {
        let total = self.total.get();
        let rounds = self.rounds.into_inner().unwrap_or_else(|e| e.into_inner());
        let empty = self.empty.load(Ordering::Relaxed) || rounds.initial_q.is_none();
        LevelOne {
            modularity: if empty { 0.0 } else { rounds.best_q },
            initial_modularity: rounds.initial_q.unwrap_or(0.0),
            community: rounds.best,
            total,
            rounds: rounds.rounds,
        }
    }

    fn community_of(&self, v: VertexId) -> u32 {
        self.community[v as usize].load(Ordering::Relaxed)
    }

    /// The arcs of `v` as (community, weight) pairs summed per community, self-loops left out,
    /// ascending by community; and the self-loops' weight.
    fn weights_to_communities(&self, v: VertexId, adjacency: &[(VertexId, f64)]) -> (Vec<(u32, f64)>, f64) {
        let mut pairs = Vec::with_capacity(adjacency.len());
        let mut loops = 0.0;
        for &(u, w) in adjacency {
            if u == v {
                loops += w;
            } else {
                pairs.push((self.community_of(u), w));
            }
        }
        pairs.sort_unstable_by_key(|&(c, _)| c);
        let mut folded: Vec<(u32, f64)> = Vec::with_capacity(pairs.len());
        for (c, w) in pairs {
            match folded.last_mut() {
                Some(last) if last.0 == c => last.1 += w,
                _ => folded.push((c, w)),
            }
        }
        (folded, loops)
    }

    /// The community `v` moves to (its own when no move gains), networkx's gain formula with
    /// every Σtot as the previous round left it, and the minimum-label rule for singletons.
    fn best_move(&self, v: VertexId, own: u32, to: &[(u32, f64)]) -> u32 {
        let m = self.total.get() / 2.0;
        let k = self.degree[v as usize].get();
        let scale = self.resolution * k / (2.0 * m * m);
        let w_own = to.iter().find(|&&(c, _)| c == own).map_or(0.0, |&(_, w)| w);
        let remove = -w_own / m + scale * (self.sigma[own as usize].get() - k);
        let singleton = self.size[own as usize].load(Ordering::Relaxed) == 1;
        let (mut best, mut best_gain) = (own, 0.0);
        for &(c, w) in to.iter().filter(|&&(c, _)| c != own) {
            if singleton && self.size[c as usize].load(Ordering::Relaxed) == 1 && c > own {
                continue;
            }
            let gain = remove + w / m - scale * self.sigma[c as usize].get();
            if gain > best_gain {
                (best, best_gain) = (c, gain);
            }
        }
        best
    }

    /// Σtot and sizes of the current partition.
    fn recount(&self) {
        self.sigma.iter().for_each(|s| s.set(0.0));
        self.size.iter().for_each(|s| s.store(0, Ordering::Relaxed));
        for (v, c) in self.community.iter().enumerate() {
            let c = c.load(Ordering::Relaxed) as usize;
            self.sigma[c].set(self.sigma[c].get() + self.degree[v].get());
            self.size[c].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Modularity of the current partition from twice its internal weight.
    fn modularity(&self, internal2: f64) -> f64 {
        let total = self.total.get();
        let spread: f64 = self.sigma.iter().map(|s| (s.get() / total).powi(2)).sum();
        internal2 / total - self.resolution * spread
    }

    /// Ends round `round` (≥ 1): records its partition's modularity, commits the moves.
    fn end_round(&self, internal2: f64, moves: f64) -> Control {
        let q = self.modularity(internal2);
        let mut rounds = self.rounds.lock().unwrap_or_else(|e| e.into_inner());
        rounds.rounds += 1;
        rounds.initial_q.get_or_insert(q);
        if q > rounds.best_q + self.threshold || rounds.best_q == f64::NEG_INFINITY {
            rounds.best_q = q;
            for (b, c) in rounds.best.iter_mut().zip(&self.community) {
                *b = c.load(Ordering::Relaxed);
            }
            rounds.stalls = 0;
        } else {
            rounds.stalls += 1;
        }
        rounds.idle = if moves == 0.0 { rounds.idle + 1 } else { 0 };
        if rounds.idle >= SUBSETS || rounds.stalls >= MAX_STALLS * SUBSETS || rounds.rounds >= MAX_ROUNDS {
            return Control::Stop;
        }
        for (c, n) in self.community.iter().zip(&self.next) {
            c.store(n.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.recount();
        Control::Continue
    }
}

impl PregelProgram for LocalMoving {
    type Value = u8;
    type Msg = (u64, f64);

    fn init(&self, _: VertexId, _: &GraphInfo) -> u8 {
        0
    }

    fn uses_weights(&self) -> bool {
        true
    }

    fn aggregate_width(&self) -> usize {
        2
    }

    fn compute(&self, ctx: &mut dyn PregelContext<(u64, f64)>, _: &mut u8, messages: &[(u64, f64)]) {
        let v = ctx.vertex();
        announce(ctx);
        let step = ctx.superstep();
        if step == 0 {
            return;
        }
        let adjacency = sorted_adjacency(messages);
        if step == 1 {
            let loops: f64 = adjacency.iter().filter(|&&(u, _)| u == v).map(|&(_, w)| w).sum();
            let degree = adjacency.iter().map(|&(_, w)| w).sum::<f64>() + loops;
            self.degree[v as usize].set(degree);
            ctx.aggregate_at(0, degree);
            return;
        }
        let own = self.community_of(v);
        let eligible = subset(v) == (step - 2) % SUBSETS;
        let (to, loops) = self.weights_to_communities(v, &adjacency);
        let inside = to.iter().find(|&&(c, _)| c == own).map_or(0.0, |&(_, w)| w);
        ctx.aggregate_at(0, inside + 2.0 * loops);
        let best = if eligible { self.best_move(v, own, &to) } else { own };
        self.next[v as usize].store(best, Ordering::Relaxed);
        ctx.aggregate_at(1, (best != own) as u8 as f64);
    }

    fn end_superstep_aggregates(&self, superstep: usize, aggregates: &[f64]) -> Control {
        match superstep {
            0 => Control::Continue,
            1 => {
                self.total.set(aggregates[0]);
                if aggregates[0] <= 0.0 {
                    self.empty.store(true, Ordering::Relaxed);
                    return Control::Stop;
                }
                self.recount();
                Control::Continue
            }
            _ => self.end_round(aggregates[0], aggregates[1]),
        }
    }

    fn max_supersteps(&self) -> Option<usize> {
        Some(MAX_ROUNDS + 2)
    }

    fn checkpoint_key(&self) -> String {
        format!("louvain-level1 resolution={} threshold={}", self.resolution, self.threshold)
    }
}
