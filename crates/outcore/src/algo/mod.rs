//! Algorithms: each a short file written only against the program API, with a `Config` of
//! documented defaults and a named output type that converts into an [`AlgorithmResult`].

use crate::VertexId;

/// A per-vertex output column, in dense-id order.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueColumn {
    /// Hop counts; `u64::MAX` means unreachable and prints as 9223372036854775807 (Graphalytics).
    Hops(Vec<u64>),
    /// Real values; infinity prints as `infinity`, others in scientific notation (15 digits).
    Float(Vec<f64>),
    /// Vertex labels given as dense ids; printed as the label vertex's original id.
    Label(Vec<VertexId>),
    /// Plain counts.
    Count(Vec<u64>),
}

impl ValueColumn {
    pub fn len(&self) -> usize {
        match self {
            ValueColumn::Hops(v) | ValueColumn::Count(v) | ValueColumn::Label(v) => v.len(),
            ValueColumn::Float(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a run produces: named per-vertex columns plus scalar figures (e.g. triangle total).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlgorithmResult {
    pub algorithm: String,
    pub columns: Vec<(String, ValueColumn)>,
    pub summary: serde_json::Map<String, serde_json::Value>,
}

/// Parameters of any algorithm, as the CLI, the validator and Python pass them. Each
/// algorithm reads the fields it needs into its own `Config` (with documented defaults) and
/// rejects missing required ones with a clear message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlgorithmParams {
    /// Source vertex (original id as text): bfs, sssp.
    pub source: Option<String>,
    /// Several sources (original ids): mssp, bc, msbfs.
    pub sources: Vec<String>,
    /// Number of sampled sources when `sources` is empty.
    pub num_sources: Option<usize>,
    pub seed: Option<u64>,
    /// Fixed iteration count: pr, cdlp.
    pub iterations: Option<usize>,
    /// PageRank damping factor (default 0.85).
    pub damping: Option<f64>,
    /// Convergence tolerance: pr-delta.
    pub tolerance: Option<f64>,
    /// BFS sweeps: diameter (default 4).
    pub sweeps: Option<usize>,
    /// Raw instead of normalised values: bc (default false: normalised as networkx).
    pub unnormalized: bool,
    /// Number of clusters: kmeans (default 2).
    pub k: Option<usize>,
    /// How wcc finds components: `union-find` or `propagation` (default: the planner chooses).
    pub method: Option<String>,
    /// Attenuation: katz (default 0.1).
    pub alpha: Option<f64>,
    /// Every vertex's own weight: katz (default 1.0).
    pub beta: Option<f64>,
    /// Arcs count with their stored weights: eigenvector, hits (default false: each counts 1).
    pub weighted: bool,
    /// Modularity resolution γ: louvain (default 1).
    pub resolution: Option<f64>,
    /// Least modularity gain for another level: louvain (default 1e-7).
    pub threshold: Option<f64>,
    /// Most levels: louvain (default: no limit).
    pub max_level: Option<usize>,
}

pub mod bc;
pub mod bfs;
pub mod bfs_parents;
pub mod bp;
pub mod cdlp;
pub mod diameter;
pub mod eigenvector;
pub mod heat;
pub mod hits;
pub mod katz;
pub mod kcore;
pub mod kmeans;
pub mod lcc;
pub mod louvain;
pub mod msbfs;
pub mod mssp;
pub mod pagerank;
pub mod pagerank_delta;
pub mod sssp;
pub mod support;
pub mod tc;
pub mod wcc;

use crate::engine::Runner;
use crate::error::{Error, Result};

/// The algorithms [`run_algorithm`] knows: (name, one-line description).
pub const ALGORITHMS: &[(&str, &str)] = &[
    ("bfs", "breadth-first search: hop depth from --source along out-edges (Graphalytics BFS)"),
    ("pr", "PageRank, fixed iterations, sink mass redistributed (Graphalytics PR)"),
    ("pr-delta", "PageRank by delta accumulation until --tolerance (Maiter; no sink redistribution)"),
    ("wcc", "weakly connected components; label = smallest vertex id of the component (Graphalytics WCC)"),
    ("cdlp", "community detection by synchronous label propagation (Graphalytics CDLP)"),
    ("lcc", "local clustering coefficient over in- and out-neighbours (Graphalytics LCC)"),
    ("sssp", "single-source shortest paths over non-negative weights from --source (Graphalytics SSSP)"),
    ("diameter", "approximate diameter (lower bound) by --sweeps BFS sweeps from a random then the farthest vertices"),
    ("bc", "betweenness centrality (Brandes) from --sources or --num-sources K sampled with --seed; exact when K >= |V|"),
    ("msbfs", "multi-source BFS from --sources or --num-sources sampled ones, 64 at once: per-vertex reach count and distance sum"),
    ("tc", "triangle count: total and per vertex, directions ignored (TurboGraph++ Figure 19; engines inmem, nwsm)"),
    ("mssp", "multi-source shortest paths: one distance column per source (--sources ID,... or --num-sources K --seed N)"),
    ("heat", "heat simulation: steady temperature from --sources (or --num-sources) with conduction --damping (0.5)"),
    ("kmeans", "k-means (Lloyd) over points stored as arcs v -> dimension j of weight x_j: --k, --iterations (max, 100), --seed; cluster per point"),
    ("kcore", "core numbers (k-core decomposition), directions ignored: h-index iteration of Montresor et al. 2013 (networkx core_number)"),
    ("bfs-parents", "BFS tree from --source along out-edges: depth and parent (smallest original id at the previous depth; networkx bfs_tree)"),
    ("katz", "Katz centrality x = alpha A^T x + beta until the L1 change < |V| --tolerance (1e-6), --iterations (max, 1000), --alpha (0.1), --beta (1); unit norm unless --unnormalized (networkx katz_centrality)"),
    ("eigenvector", "eigenvector centrality: power iteration on A^T + I from 1/|V|, unit norm, until the L1 change < |V| --tolerance (1e-6), --iterations (max, 100), --weighted (networkx eigenvector_centrality)"),
    ("hits", "HITS hubs and authorities (columns hub, authority): power iteration a = A^T h, h = A a scaled by their maxima until the L1 change of h < --tolerance (1e-8), --iterations (max, 100), --weighted; divided by their sums unless --unnormalized (networkx hits)"),
    ("louvain", "Louvain communities (Blondel et al. 2008), undirected stores: --resolution (1), --threshold (1e-7), --max-level, --seed; community = its smallest vertex id, modularity in the summary (networkx louvain_communities)"),
    ("bp", "belief propagation, 2-state pairwise MRF, evidence at --sources (or --num-sources); P(state 1) per vertex"),
];

/// Runs the algorithm called `name` with `params` on `runner`.
///
/// Defaults for parameters not given: `pr` 10 iterations and damping 0.85 (the values of the
/// LDBC Graphalytics data sets); `cdlp` 10 iterations; `pr-delta` damping 0.85, tolerance 1e-9
/// and no iteration cap (see each module's `Config`). `bfs` and `sssp` need `source`.
pub fn run_algorithm(runner: &Runner, name: &str, params: &AlgorithmParams) -> Result<AlgorithmResult> {
    let source = || -> Result<VertexId> {
        let text = params
            .source
            .as_deref()
            .ok_or_else(|| Error::invalid(format!("{name} needs a source vertex (--source ID)")))?;
        runner.resolve_vertex(text)
    };
    Ok(match name {
        "bfs" => bfs::run(runner, &bfs::Config { source: source()? })?.into(),
        "bfs-parents" => bfs_parents::run(runner, &bfs_parents::Config { source: source()? })?.into(),
        "kcore" => kcore::run(runner, &kcore::Config)?.into(),
        "sssp" => sssp::run(runner, &sssp::Config { source: source()? })?.into(),
        "pr" => {
            let defaults = pagerank::Config::default();
            let config = pagerank::Config {
                damping: params.damping.unwrap_or(defaults.damping),
                iterations: params.iterations.unwrap_or(defaults.iterations),
            };
            pagerank::run(runner, &config)?.into()
        }
        "pr-delta" => {
            let defaults = pagerank_delta::Config::default();
            let config = pagerank_delta::Config {
                damping: params.damping.unwrap_or(defaults.damping),
                tolerance: params.tolerance.unwrap_or(defaults.tolerance),
                max_iterations: params.iterations.or(defaults.max_iterations),
            };
            pagerank_delta::run(runner, &config)?.into()
        }
        "wcc" => wcc::run(runner, &wcc::Config { method: wcc::Method::parse(params.method.as_deref())? })?.into(),
        "cdlp" => {
            let iterations = params.iterations.unwrap_or(cdlp::Config::default().iterations);
            cdlp::run(runner, &cdlp::Config { iterations })?.into()
        }
        "lcc" => lcc::run(runner, &lcc::Config)?.into(),
        "tc" => tc::run(runner, &tc::Config)?.into(),
        "diameter" => {
            let defaults = diameter::Config::default();
            let first_source = if params.source.is_some() { Some(source()?) } else { None };
            let config = diameter::Config {
                sweeps: params.sweeps.unwrap_or(defaults.sweeps),
                seed: params.seed.unwrap_or(defaults.seed),
                first_source,
            };
            diameter::run(runner, &config)?.into()
        }
        "bc" => {
            let sources = many_sources(runner, params, bc::DEFAULT_NUM_SOURCES)?;
            bc::run(runner, &bc::Config { sources, normalized: !params.unnormalized })?.into()
        }
        "msbfs" => {
            let sources = many_sources(runner, params, msbfs::DEFAULT_NUM_SOURCES)?;
            msbfs::run(runner, &msbfs::Config { sources })?.into()
        }
        "mssp" => {
            let sources = if !params.sources.is_empty() || params.num_sources.is_some() {
                many_sources(runner, params, 0)?
            } else if params.source.is_some() {
                vec![source()?]
            } else {
                return Err(Error::invalid(
                    "mssp needs sources (--sources ID,ID,... or --num-sources K [--seed N], or one --source ID)",
                ));
            };
            mssp::run(runner, &mssp::Config { sources })?.into()
        }
        "heat" => {
            let config = heat::Config {
                sources: many_sources(runner, params, heat::DEFAULT_NUM_SOURCES)?,
                conduction: params.damping.unwrap_or(0.5),
                tolerance: params.tolerance.unwrap_or(1e-9),
                max_iterations: params.iterations,
            };
            heat::run(runner, &config)?.into()
        }
        "kmeans" => {
            let defaults = kmeans::Config::default();
            let config = kmeans::Config {
                k: params.k.unwrap_or(defaults.k),
                max_iterations: params.iterations.unwrap_or(defaults.max_iterations),
                seed: params.seed,
            };
            kmeans::run(runner, &config)?.into()
        }
        "katz" => {
            let defaults = katz::Config::default();
            let config = katz::Config {
                alpha: params.alpha.unwrap_or(defaults.alpha),
                beta: params.beta.unwrap_or(defaults.beta),
                tolerance: params.tolerance.unwrap_or(defaults.tolerance),
                max_iterations: params.iterations.unwrap_or(defaults.max_iterations),
                normalized: !params.unnormalized,
            };
            katz::run(runner, &config)?.into()
        }
        "eigenvector" => {
            let defaults = eigenvector::Config::default();
            let config = eigenvector::Config {
                tolerance: params.tolerance.unwrap_or(defaults.tolerance),
                max_iterations: params.iterations.unwrap_or(defaults.max_iterations),
                weighted: params.weighted,
            };
            eigenvector::run(runner, &config)?.into()
        }
        "hits" => {
            let defaults = hits::Config::default();
            let config = hits::Config {
                tolerance: params.tolerance.unwrap_or(defaults.tolerance),
                max_iterations: params.iterations.unwrap_or(defaults.max_iterations),
                normalized: !params.unnormalized,
                weighted: params.weighted,
            };
            hits::run(runner, &config)?.into()
        }
        "louvain" => {
            let defaults = louvain::Config::default();
            let config = louvain::Config {
                resolution: params.resolution.unwrap_or(defaults.resolution),
                threshold: params.threshold.unwrap_or(defaults.threshold),
                max_level: params.max_level.or(defaults.max_level),
                seed: params.seed.or(defaults.seed),
            };
            louvain::run(runner, &config)?.into()
        }
        "bp" => {
            let config = bp::Config {
                evidence: many_sources(runner, params, bp::DEFAULT_NUM_EVIDENCE)?,
                homophily: params.damping.unwrap_or(0.2),
                tolerance: params.tolerance.unwrap_or(1e-6),
                max_iterations: params.iterations.unwrap_or(50),
            };
            bp::run(runner, &config)?.into()
        }
        other => {
            let names: Vec<&str> = ALGORITHMS.iter().map(|(n, _)| *n).collect();
            return Err(Error::invalid(format!("unknown algorithm '{other}' (available: {})", names.join(", "))));
        }
    })
}

/// The sources of a many-source algorithm: `sources` when given, else `num_sources` (or
/// `default`) sampled with `seed` (default 0).
fn many_sources(runner: &Runner, params: &AlgorithmParams, default: usize) -> Result<Vec<VertexId>> {
    if !params.sources.is_empty() {
        return params.sources.iter().map(|s| runner.resolve_vertex(s)).collect();
    }
    msbfs::sample_sources(runner, params.num_sources.unwrap_or(default), params.seed.unwrap_or(0))
}

/// Runs `round` (the values of the next round from those of the last) until a round changes
/// nothing, and returns that fixed point: label and distance propagation as repeated
/// one-level neighborhood queries (wcc, sssp on nwsm).
fn until_stable<T: PartialEq>(mut values: Vec<T>, mut round: impl FnMut(&[T]) -> Result<Vec<T>>) -> Result<Vec<T>> {
    loop {
        let next = round(&values)?;
        if next == values {
            return Ok(values);
        }
        values = next;
    }
}

/// Counts each vertex's out-neighbours from the full lists of a one-level neighborhood query.
struct OutDegrees;

impl crate::program::NeighborhoodQuery for OutDegrees {
    type Value = f64;
    type Output = f64;

    fn levels(&self) -> usize {
        1
    }
    fn adj_scatter(
        &self,
        _: usize,
        _: &dyn crate::program::NeighborhoodView,
        out: &mut dyn crate::program::Emitter<f64>,
        u: u64,
        adj: &[crate::program::Nbr],
    ) {
        out.update(u, adj.iter().filter(|v| v.is_out()).count() as f64);
    }
    fn vertex_gather(&self, gathered: f64, update: f64) -> f64 {
        gathered + update
    }
    fn vertex_apply(&self, _: VertexId, _: u64, count: f64) -> f64 {
        count
    }
}

/// The out-degree of every vertex (store order), counted by a one-level neighborhood query, once
/// it has checked that the graph has no duplicate arcs or self-loops. Full lists keep one entry
/// per neighbour and drop loops, so rounds of one-level queries compute `algorithm` as its other
/// forms do only on such a graph; on any other the error is [`Error::Unsupported`], and
/// [`Runner::run_forms`] chooses among the algorithm's other forms.
fn simple_graph_out_degrees(runner: &Runner, algorithm: &str) -> Result<Vec<f64>> {
    let out_degree = runner.run_neighborhood_query(&OutDegrees)?.values;
    let arcs = out_degree.iter().sum::<f64>() as u64;
    let stored = runner.graph_info().num_arcs;
    if arcs != stored {
        return Err(Error::Unsupported(format!(
            "{algorithm} as neighborhood queries needs a graph without duplicate arcs or self-loops; this store \
             has {stored} arcs, {arcs} of them distinct and not loops"
        )));
    }
    Ok(out_degree)
}

thread_local! {
    /// [`with_neighbor_values`]'s values of one vertex's neighbours, reused across vertices.
    static SCRATCH_NEIGHBOR_VALUES: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Hands `f` the query column's values of the neighbours in full list `adj`: one per arc on a
/// directed graph (a neighbour joined both ways twice, as a Pregel program receives one message
/// per arc), one per neighbour on an undirected one. Used by one-level rounds that need the
/// multiset (cdlp's mode, kcore's h-index); the vector is per thread, reused across vertices.
fn with_neighbor_values<R>(
    view: &dyn crate::program::NeighborhoodView,
    adj: &[crate::program::Nbr],
    directed: bool,
    f: impl FnOnce(&[u64]) -> R,
) -> R {
    SCRATCH_NEIGHBOR_VALUES.with_borrow_mut(|values| {
        values.clear();
        for w in adj {
            let copies = if directed { w.arcs() } else { 1 };
            values.extend(std::iter::repeat_n(view.column(w.id()), copies as usize));
        }
        f(values)
    })
}

/// An [`AlgorithmResult`] with one column and a summary.
fn single_column(
    algorithm: &str,
    column: &str,
    values: ValueColumn,
    summary: impl IntoIterator<Item = (&'static str, serde_json::Value)>,
) -> AlgorithmResult {
    AlgorithmResult {
        algorithm: algorithm.to_string(),
        columns: vec![(column.to_string(), values)],
        summary: summary.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    }
}
