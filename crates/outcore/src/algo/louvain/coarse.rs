//! The levels after the first: the community graph (Blondel et al. 2008, §2 "second phase":
//! one vertex per community, the weights between communities summed, the weight inside a
//! community as a self-loop) in memory, and networkx's sequential local moving on it.
//!
//! The community graph of level 1 is collected by a two-superstep Pregel pass over the stored
//! arcs ([`CommunityArcs`]): each vertex sums its arcs per pair of communities and hands the
//! sums to a shared sink, which is then sorted and folded. It has at most as many arcs as the
//! stored graph and usually far fewer; its bytes are checked against the budget.

use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::program::{Control, GraphInfo, PregelContext, PregelProgram};
use crate::runtime::format_size;
use crate::VertexId;

/// Bytes per collected (community, community, weight) entry.
pub const ENTRY_BYTES: u64 = 16;

/// A weighted undirected graph in memory. `loops[v]` is twice the weight of v's self-loops
/// (what they add to v's degree); the arcs hold every other edge in both directions.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedGraph {
    pub offsets: Vec<usize>,
    pub targets: Vec<u32>,
    pub weights: Vec<f64>,
    pub loops: Vec<f64>,
}

impl WeightedGraph {
    pub fn vertices(&self) -> usize {
        self.loops.len()
    }

    pub fn degree(&self, v: usize) -> f64 {
        self.weights[self.offsets[v]..self.offsets[v + 1]].iter().sum::<f64>() + self.loops[v]
    }

    /// Twice the total edge weight.
    pub fn total(&self) -> f64 {
        (0..self.vertices()).map(|v| self.degree(v)).sum()
    }

    fn arcs(&self, v: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.offsets[v]..self.offsets[v + 1];
        self.targets[range.clone()].iter().map(|&t| t as usize).zip(self.weights[range].iter().copied())
    }

    /// The graph of `entries` (source, target, weight; any order, duplicates summed) over
    /// `vertices` vertices; an entry with source = target adds to that vertex's `loops`.
    pub fn from_entries(vertices: usize, mut entries: Vec<(u32, u32, f64)>) -> WeightedGraph {
        entries.sort_unstable_by_key(|a| (a.0, a.1, a.2.to_bits()));
        let mut graph = WeightedGraph {
            offsets: vec![0; vertices + 1],
            targets: vec![],
            weights: vec![],
            loops: vec![0.0; vertices],
        };
        let mut last = None;
        for (s, t, w) in entries {
            if s == t {
                graph.loops[s as usize] += w;
            } else if last == Some((s, t)) {
                *graph.weights.last_mut().expect("the arc just pushed") += w;
            } else {
                graph.targets.push(t);
                graph.weights.push(w);
                graph.offsets[s as usize + 1] = graph.targets.len();
                last = Some((s, t));
            }
        }
        for v in 0..vertices {
            graph.offsets[v + 1] = graph.offsets[v + 1].max(graph.offsets[v]);
        }
        graph
    }

    /// The community graph of `partition` (community index per vertex, `communities` of them).
    pub fn coarsen(&self, partition: &[u32], communities: usize) -> WeightedGraph {
        let mut entries = Vec::with_capacity(self.targets.len() + self.vertices());
        for v in 0..self.vertices() {
            let c = partition[v];
            entries.push((c, c, self.loops[v]));
            entries.extend(self.arcs(v).map(|(u, w)| (c, partition[u], w)));
        }
        WeightedGraph::from_entries(communities, entries)
    }

    /// Modularity of `partition` (community index per vertex) with resolution γ:
    /// Σ_c L_c/m − γ (d_c / 2m)², networkx's `modularity`.
    pub fn modularity(&self, partition: &[u32], communities: usize, resolution: f64) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.0;
        }
        let (mut inside, mut degree) = (vec![0.0; communities], vec![0.0; communities]);
        for v in 0..self.vertices() {
            let c = partition[v] as usize;
            degree[c] += self.degree(v);
            inside[c] +=
                self.loops[v] + self.arcs(v).filter(|&(u, _)| partition[u] as usize == c).map(|(_, w)| w).sum::<f64>();
        }
        inside.iter().zip(&degree).map(|(i, d)| i / total - resolution * (d / total).powi(2)).sum()
    }

    /// networkx's `_one_level`: vertices in `order` move one at a time to the neighbouring
    /// community of largest positive gain until a pass moves none. Returns the community index
    /// of every vertex (renumbered 0.. in order of first member) and whether any vertex moved.
    /// `total` is 2m of the level-1 graph (the same at every level).
    pub fn one_level(&self, order: &[usize], total: f64, resolution: f64) -> (Vec<u32>, usize, bool) {
        let n = self.vertices();
        let m = total / 2.0;
        let degree: Vec<f64> = (0..n).map(|v| self.degree(v)).collect();
        let mut community: Vec<usize> = (0..n).collect();
        let mut sigma = degree.clone();
        let mut to = vec![0.0; n];
        let mut seen = vec![false; n];
        let mut touched: Vec<usize> = Vec::new();
        let (mut moved_any, mut moves) = (false, 1);
        while moves > 0 {
            moves = 0;
            for &v in order {
                let own = community[v];
                touched.clear();
                for (u, w) in self.arcs(v) {
                    let c = community[u];
                    if !seen[c] {
                        seen[c] = true;
                        touched.push(c);
                    }
                    to[c] += w;
                }
                sigma[own] -= degree[v];
                let scale = resolution * degree[v] / (2.0 * m * m);
                let remove = -to[own] / m + scale * sigma[own];
                let (mut best, mut best_gain) = (own, 0.0);
                for &c in &touched {
                    let gain = remove + to[c] / m - scale * sigma[c];
                    if gain > best_gain {
                        (best, best_gain) = (c, gain);
                    }
                }
                sigma[best] += degree[v];
                touched.iter().for_each(|&c| (to[c], seen[c]) = (0.0, false));
                to[own] = 0.0;
                if best != own {
                    community[v] = best;
                    moves += 1;
                    moved_any = true;
                }
            }
        }
        let (partition, count) = renumber(community.iter().map(|&c| c as u32));
        (partition, count, moved_any)
    }
}

/// Community ids renumbered 0.. in order of first appearance; returns them and their count.
pub fn renumber(ids: impl Iterator<Item = u32>) -> (Vec<u32>, usize) {
    let mut index: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    let out = ids
        .map(|c| {
            let next = index.len() as u32;
            *index.entry(c).or_insert(next)
        })
        .collect();
    (out, index.len())
}

/// The vertex order of a level's moves: ascending ids, or a Fisher–Yates shuffle with a
/// splitmix64 stream from `seed`.
pub fn visit_order(n: usize, seed: Option<u64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if let Some(seed) = seed {
        let mut state = seed;
        for i in (1..n).rev() {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            order.swap(i, (z % (i as u64 + 1)) as usize);
        }
    }
    order
}

/// Two supersteps over the stored arcs that collect the community graph of level 1: each vertex
/// announces itself to its neighbours, then hands the arcs it learnt of, summed per target
/// community, to the sink (self-loops twice, so they count as in the degree).
pub struct CommunityArcs<'a> {
    pub partition: &'a [u32],
    /// Most entries the sink may hold (its share of the budget).
    pub capacity: u64,
    pub sink: Mutex<Vec<(u32, u32, f64)>>,
}

impl PregelProgram for CommunityArcs<'_> {
    type Value = u8;
    type Msg = (u64, f64);

    fn init(&self, _: VertexId, _: &GraphInfo) -> u8 {
        0
    }
    fn uses_weights(&self) -> bool {
        true
    }
    fn compute(&self, ctx: &mut dyn PregelContext<(u64, f64)>, _: &mut u8, messages: &[(u64, f64)]) {
        if ctx.superstep() == 0 {
            super::moving::announce(ctx);
            return;
        }
        let v = ctx.vertex();
        let own = self.partition[v as usize];
        let mut pairs: Vec<(u32, f64)> = super::moving::sorted_adjacency(messages)
            .into_iter()
            .map(|(u, w)| (self.partition[u as usize], if u == v { 2.0 * w } else { w }))
            .collect();
        pairs.sort_unstable_by_key(|a| (a.0, a.1.to_bits()));
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        if sink.len() as u64 > self.capacity {
            return; // over budget: `graph` reports it
        }
        for (c, w) in pairs {
            match sink.last_mut() {
                Some(last) if last.0 == own && last.1 == c => last.2 += w,
                _ => sink.push((own, c, w)),
            }
        }
    }
    fn end_superstep(&self, superstep: usize, _: f64) -> Control {
        if superstep == 0 {
            Control::Continue
        } else {
            Control::Stop
        }
    }
    fn max_supersteps(&self) -> Option<usize> {
        Some(2)
    }
}

impl CommunityArcs<'_> {
    /// The collected community graph, or the budget error when the sink outgrew its share.
    pub fn graph(self, communities: usize) -> Result<WeightedGraph> {
        let entries = self.sink.into_inner().unwrap_or_else(|e| e.into_inner());
        if entries.len() as u64 > self.capacity {
            return Err(Error::MemoryBudget(format!(
                "louvain: the community graph after level 1 has more than {} arcs ({}), beyond its share of the memory budget; raise --memory",
                self.capacity,
                format_size(entries.len() as u64 * ENTRY_BYTES)
            )));
        }
        Ok(WeightedGraph::from_entries(communities, entries))
    }
}
