//! Weakly connected components (LDBC Graphalytics WCC): vertices joined by a path when edge
//! directions are ignored share a label, the smallest vertex id of their component. Dense ids
//! are assigned in ascending original-id order at import, so the smallest dense id is the
//! smallest original id, and outputs print the label as that vertex's original id.
//!
//! As a vertex program: minimum-label propagation (the HCC algorithm of Kang et al., also
//! Redio's and GraphD's WCC) along out- and in-edges ([`EdgeDirection::Both`]); a vertex whose
//! label dropped sends it on in the next iteration.
//!
//! On a reordered store (`outcore reorder`, `import --order`) dense ids no longer follow
//! original ids, so labels propagate as original-id *ranks* ([`Runner::original_ranks`]) and
//! are mapped back to the dense id of the component's smallest original id at the end.
//!
//! Where the vertex state is in memory (inmem, stream, cache) components come from **union-find** in
//! one pass over the arcs instead ([`UnionFind`], an [`EdgePass`]): each arc hooks the larger of
//! its two roots under the smaller with a compare-and-swap (Shiloach–Vishkin hooking, as in the
//! GAP benchmark's Afforest; Sutton et al., IPDPS'18), finds halve their paths as they go. A
//! root is only ever hooked under a smaller id, so every set's root is its smallest dense id —
//! the Graphalytics label — and one pass replaces the diameter's worth of propagation rounds
//! (issue 15: semi-external connectivity).
//!
//! On engines that run neighborhood queries (nwsm) each propagation round is a one-level
//! query ([`WccRound`], TurboGraph++ §2.3 with k = 1): every vertex of a level-1 window sends
//! its label over its full list (both directions), targets gather the minimum, and apply keeps
//! the smaller of the old label and the gathered one; rounds run until no label drops.

use super::{single_column, AlgorithmResult, ValueColumn};
use crate::engine::planner::ProgramShape;
use crate::engine::Runner;
use crate::error::Result;
use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use crate::program::{EdgeDirection, EdgePass, EdgeRef, GraphInfo, IterationContext, MessageKind, VertexProgram};
use crate::program::{Emitter, Min, Nbr, NeighborhoodQuery, NeighborhoodView};
use crate::VertexId;

/// WCC parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    /// How components are found. Default: [`Method::Auto`].
    pub method: Method,
}

/// The ways to find components; all give the same labels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Method {
    /// Whatever the planner expects to be fastest within the budget.
    #[default]
    Auto,
    /// Union-find in one pass over the arcs (inmem, stream, cache; below 2^32 vertices).
    UnionFind,
    /// Label propagation rounds (a vertex program, or one-level queries on nwsm).
    Propagation,
}

impl Method {
    pub const NAMES: &'static [&'static str] = &["auto", "union-find", "propagation"];

    /// The method named `name` (None: `auto`).
    pub fn parse(name: Option<&str>) -> Result<Method> {
        match name.unwrap_or("auto") {
            "auto" => Ok(Method::Auto),
            "union-find" => Ok(Method::UnionFind),
            "propagation" => Ok(Method::Propagation),
            other => Err(crate::error::Error::invalid(format!(
                "unknown wcc method '{other}' (available: {})",
                Self::NAMES.join(", ")
            ))),
        }
    }
}

/// Component label (dense id of the component's smallest vertex) per vertex, in dense-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WccOutput {
    pub component: Vec<VertexId>,
}

impl WccOutput {
    /// Number of components.
    pub fn count(&self) -> usize {
        self.component.iter().enumerate().filter(|&(v, &c)| v as u64 == c).count()
    }
}

struct Wcc<'a> {
    /// Original-id rank per dense id on reordered stores.
    rank: Option<&'a [u64]>,
}

impl VertexProgram for Wcc<'_> {
    type Value = VertexId;
    type Msg = VertexId;

    fn message_kind(&self) -> MessageKind {
        MessageKind::Value
    }
    fn direction(&self) -> EdgeDirection {
        EdgeDirection::Both
    }
    fn init(&self, v: VertexId, _: &GraphInfo) -> VertexId {
        self.rank.map_or(v, |rank| rank[v as usize])
    }
    fn scatter(&self, label: &VertexId, _: EdgeRef) -> Option<VertexId> {
        Some(*label)
    }
    fn combine(&self, a: VertexId, b: VertexId) -> VertexId {
        a.min(b)
    }
    fn identity(&self) -> VertexId {
        VertexId::MAX
    }
    fn has_global_contributions(&self) -> bool {
        false
    }
    fn apply(&self, _: VertexId, label: &mut VertexId, candidate: VertexId, _: &IterationContext) -> bool {
        let improved = candidate < *label;
        if improved {
            *label = candidate;
        }
        improved
    }
}

/// One round of label propagation as a one-level neighborhood query over full lists.
struct WccRound<'a> {
    labels: &'a [u64],
}

impl NeighborhoodQuery for WccRound<'_> {
    type Value = Min<u64>;
    type Output = u64;

    fn levels(&self) -> usize {
        1
    }
    fn adj_scatter(&self, _: usize, view: &dyn NeighborhoodView, out: &mut dyn Emitter<Min<u64>>, u: u64, adj: &[Nbr]) {
        let label = self.labels[view.store_id(u) as usize];
        adj.iter().for_each(|v| out.update(v.id(), Min(label)));
    }
    fn vertex_gather(&self, gathered: Min<u64>, update: Min<u64>) -> Min<u64> {
        gathered.min(update)
    }
    fn vertex_apply(&self, v: VertexId, _: u64, gathered: Min<u64>) -> u64 {
        self.labels[v as usize].min(gathered.0)
    }
}

/// Disjoint sets of dense ids (below 2^32) updated from many threads at once; see the module
/// doc. `parent[v] <= v` always, so a set's root is its smallest member.
pub struct UnionFind {
    parent: Vec<AtomicU32>,
}

impl UnionFind {
    /// `n` singletons; None when ids do not fit 32 bits.
    pub fn new(n: u64) -> Option<UnionFind> {
        (n <= u32::MAX as u64).then(|| UnionFind { parent: (0..n as u32).map(AtomicU32::new).collect() })
    }

    /// The root of `x`'s set, halving the path on the way: a vertex that is not a root gets its
    /// grandparent as parent. Only non-roots are written here and only roots are hooked, so the
    /// two never race; a parent only ever moves to an ancestor.
    fn find(&self, mut x: u32) -> u32 {
        loop {
            let parent = self.parent[x as usize].load(Ordering::Relaxed);
            if parent == x {
                return x;
            }
            let grandparent = self.parent[parent as usize].load(Ordering::Relaxed);
            if grandparent != parent {
                self.parent[x as usize].store(grandparent, Ordering::Relaxed);
            }
            x = grandparent;
        }
    }

    /// Joins the sets of `a` and `b`: the larger root is hooked under the smaller one, retrying
    /// when another thread hooked it first.
    pub fn union(&self, a: u32, b: u32) {
        let (mut a, mut b) = (a, b);
        loop {
            let (ra, rb) = (self.find(a), self.find(b));
            if ra == rb {
                return;
            }
            let (high, low) = if ra > rb { (ra, rb) } else { (rb, ra) };
            let hooked = self.parent[high as usize].compare_exchange(high, low, Ordering::AcqRel, Ordering::Relaxed);
            if hooked.is_ok() {
                return;
            }
            (a, b) = (high, low);
        }
    }

    /// Points every vertex straight at its root, in parallel (no hooks run meanwhile).
    pub fn compress(&self) {
        self.parent.par_iter().enumerate().for_each(|(v, parent)| {
            let p = parent.load(Ordering::Relaxed);
            if p as usize != v {
                let root = self.find(p);
                if root != p {
                    parent.store(root, Ordering::Relaxed);
                }
            }
        });
    }

    /// The root (smallest member) of every vertex's set. Parents are smaller than their
    /// children, so one ascending sweep finishes every path.
    pub fn roots(self) -> Vec<u64> {
        let parent: Vec<u32> = self.parent.into_iter().map(AtomicU32::into_inner).collect();
        let mut root = vec![0u64; parent.len()];
        for v in 0..parent.len() {
            let p = parent[v] as usize;
            root[v] = if p == v { v as u64 } else { root[p] };
        }
        root
    }
}

impl EdgePass for UnionFind {
    /// Most arcs join vertices already in one set, whose parents [`compress`](Self::compress)
    /// has made the same root: two independent loads settle them (no store, no dependent
    /// chain, so the CPU overlaps the misses of many arcs); only the others hook.
    fn arc(&self, source: VertexId, target: VertexId) {
        let (a, b) = (
            self.parent[source as usize].load(Ordering::Relaxed),
            self.parent[target as usize].load(Ordering::Relaxed),
        );
        if a != b {
            self.union(a, b);
        }
    }
    fn between_batches(&self) {
        self.compress();
    }
    fn state_bytes_per_vertex(&self) -> u64 {
        4
    }
}

/// Labels by union-find in one edge pass: the root's dense id, or on a reordered store the
/// smallest original-id rank of the component (as the propagation forms give).
fn union_find_labels(runner: &Runner, rank: Option<&[u64]>) -> Result<Vec<u64>> {
    let n = runner.graph_info().num_vertices;
    let sets = UnionFind::new(n).expect("offered only below 2^32 vertices");
    runner.run_edge_pass(&sets)?;
    let roots = sets.roots();
    let Some(rank) = rank else { return Ok(roots) };
    let mut smallest = vec![u64::MAX; n as usize];
    for (v, &root) in roots.iter().enumerate() {
        smallest[root as usize] = smallest[root as usize].min(rank[v]);
    }
    Ok(roots.iter().map(|&root| smallest[root as usize]).collect())
}

pub fn run(runner: &Runner, config: &Config) -> Result<WccOutput> {
    let fits_u32 = runner.graph_info().num_vertices <= u32::MAX as u64;
    let (union_find, propagation) = match config.method {
        Method::Auto => (fits_u32, true),
        Method::UnionFind if !fits_u32 => {
            return Err(crate::error::Error::invalid("union-find WCC needs fewer than 2^32 vertices"))
        }
        Method::UnionFind => (true, false),
        Method::Propagation => (false, true),
    };
    // Form indices: 0 union-find, 1 vertex program, 2 one-level query rounds.
    let offered: Vec<usize> = [(0, union_find), (1, propagation), (2, propagation)]
        .into_iter()
        .filter_map(|(i, on)| on.then_some(i))
        .collect();
    // On a reordered store the first two forms keep the ranks of original ids beside the
    // engine; the rounds start from them as their labels (8 bytes a vertex either way).
    let ranks = if runner.dense_order_is_original() { 0 } else { 8 };
    let all = [
        ProgramShape::edge_pass(4).with_state(ranks),
        ProgramShape::vertex_wire(&Wcc { rank: None }).with_state(ranks),
        ProgramShape::query_rounds(1, 8, None).with_state(8),
    ];
    let forms: Vec<ProgramShape> = offered.iter().map(|&i| all[i]).collect();
    let labels = runner.run_forms(&forms, |form| match offered[form] {
        0 => union_find_labels(runner, runner.original_ranks()?.as_deref()),
        1 => runner.run_vertex_program_wire(&Wcc { rank: runner.original_ranks()?.as_deref() }),
        _ => {
            let n = runner.graph_info().num_vertices;
            let labels = runner.original_ranks()?.unwrap_or_else(|| (0..n).collect());
            super::until_stable(labels, |labels| Ok(runner.run_neighborhood_query(&WccRound { labels })?.values))
        }
    })?;
    Ok(WccOutput { component: runner.ranks_to_dense(labels)? })
}

impl From<WccOutput> for AlgorithmResult {
    fn from(out: WccOutput) -> Self {
        let count = out.count();
        single_column("wcc", "component", ValueColumn::Label(out.component), [("components", count.into())])
    }
}
