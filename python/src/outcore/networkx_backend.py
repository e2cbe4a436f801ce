"""A networkx backend: ``nx.pagerank(G, backend="outcore")`` and friends run on outcore.

Registered through the ``networkx.backends`` entry point. A networkx graph is converted to an
outcore store in a temporary directory (nodes numbered in ``G``'s node order); results come
back in networkx's shapes, keyed by the original nodes. An :class:`outcore.Graph` opened from a
store can be passed to these functions directly (``nx.pagerank(outcore.open("g"))``).

For very large graphs the networkx shapes (Python dicts) are the bottleneck: use the numpy
results of :class:`outcore.Graph` methods instead.

Dispatched functions and where definitions differ from networkx:

* ``pagerank`` — same definition (dangling mass spread uniformly); outcore runs ``max_iter``
  power iterations instead of stopping at ``tol`` (values are at least as converged), and
  raises ``PowerIterationFailedConvergence`` like networkx when the last iteration still
  changed the ranks by more than ``N·tol`` (it runs ``max_iter − 1`` iterations too, to
  measure that). ``personalization``, ``nstart``, ``dangling`` and non-unit weights are not
  supported: the backend raises ``NotImplementedError`` and networkx falls back to itself
  when ``nx.config.fallback_to_nx`` is set.
* ``single_source_shortest_path_length`` (BFS depths), ``single_source_dijkstra_path_length``
  (SSSP, non-negative weights) — same; ``cutoff`` is applied to the result.
* ``connected_components``, ``number_connected_components`` (undirected),
  ``weakly_connected_components``, ``number_weakly_connected_components`` (directed) — same.
* ``clustering`` — undirected, unweighted only: identical to the Graphalytics LCC. networkx's
  directed clustering (Fagiolo) differs from Graphalytics' and is not dispatched.
* ``triangles``, ``transitivity``, ``average_clustering`` (undirected; triangles from the
  engine's ``tc``, coefficients from ``lcc``).
* Reachability and hop distances (BFS; ``sssp`` when a ``weight`` is given):
  ``has_path``, ``descendants``, ``ancestors`` (undirected), ``descendants_at_distance``,
  ``bfs_layers`` (each layer in ``G``'s node order), ``shortest_path_length``,
  ``dijkstra_path_length``, ``bellman_ford_path_length``, ``single_source_*_path_length``,
  ``single_target_shortest_path_length`` (undirected), ``multi_source_dijkstra_path_length``,
  ``all_pairs_*_path_length`` (one BFS/SSSP per source), ``eccentricity``, ``diameter``,
  ``radius``, ``center``, ``periphery``. Negative weights are refused (networkx runs them).
* ``is_connected``, ``is_weakly_connected``, ``node_connected_component`` (wcc);
  ``is_strongly_connected``, ``average_shortest_path_length`` and ``closeness_centrality``
  from ``msbfs`` with every vertex a source (per vertex the number of sources reaching it and
  the sum of their distances: networkx's closeness uses exactly these incoming distances).
* ``wiener_index`` and ``barycenter`` (undirected) — unweighted, from the same ``msbfs``.
* ``betweenness_centrality`` — exact (``k=None``), unweighted, ``endpoints=False``.
* ``approximate_diameter`` (``nx.approximation.diameter``) — undirected: the engine's
  repeated double sweeps, a lower bound like networkx's 2-sweep.
* ``katz_centrality`` — the same iteration, stopping rule (L1 change < ``N·tol``), failure
  (``PowerIterationFailedConvergence``) and normalisation; scalar ``beta``, no ``nstart``,
  unit weights, and no self-loops on undirected graphs.
* ``eigenvector_centrality`` — the same power iteration on ``A^T + I``, stopping rule (L1
  change < ``N·tol``), failure (``PowerIterationFailedConvergence``) and unit norm; ``weight``
  supported; no ``nstart``, and no self-loops on undirected graphs.
* ``hits`` — networkx's power iteration (``a = A^T h``, ``h = A a``, scaled by their maxima,
  until the L1 change of ``h`` < ``tol``; sums of 1 when ``normalized``), weights included.
  networkx's ``hits`` reaches the same vectors by ARPACK's SVD (its ``max_iter``/``tol`` are
  ARPACK's): equal to about ``tol`` where the leading singular value is simple; on graphs
  where it is not (bipartite ones) both are valid HITS vectors but may differ. No ``nstart``,
  no self-loops on undirected graphs, no graphs without edges.

``can_run`` binds positional and keyword arguments to each function's signature, so
``nx.pagerank(G, 0.85, None, 100, backend="outcore")`` is judged like its keyword form; a call
it cannot run gets a reason string (networkx then falls back, or xfails the test).

Algorithms still to come from the engine are listed in :data:`PLANNED` (networkx name →
engine algorithm name); each is dispatched as soon as the engine registers that name and an
adapter is added to :data:`ADAPTERS`.
* ``core_number`` and ``k_core`` (engine ``kcore``; self-loops refused like networkx).
* ``bfs_edges``, ``bfs_tree``, ``bfs_predecessors``, ``bfs_successors`` (engine
  ``bfs-parents``): a BFS tree, but not always networkx's: where a vertex can hang under
  several vertices one level up, outcore takes the one first in ``G``'s node order (networkx:
  the first one its traversal reaches). Edges come layer by layer, ordered by the parent's
  position then the child's. ``sort_neighbors`` and ``reverse=True`` on directed graphs are
  not supported.
* ``louvain_communities`` (engine ``louvain``): the same objective, resolution, threshold
  and levels, undirected graphs only (networkx's directed modularity is not implemented).
  The first level moves vertices in synchronous rounds rather than one at a time in a seeded
  random order, so partitions can differ from networkx's for the same seed (modularity within
  0.02 of networkx's mean on the test graphs); ``seed`` shuffles the later levels.
* Label propagation is not dispatched: networkx's ``label_propagation_communities`` is
  semi-synchronous with random tie-breaking, Graphalytics CDLP is synchronous with ties to
  the smallest label.
"""

from __future__ import annotations

import inspect
import itertools
import tempfile
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

from . import _inputs, _native
from ._errors import native_errors
from ._graph import Graph, _memory

BACKEND = "outcore"


class EmptyGraph:
    """A networkx graph without nodes (the store format needs at least one vertex)."""

    __networkx_backend__ = BACKEND
    num_vertices = 0

    def __init__(self, directed: bool):
        self._directed = directed

    def is_directed(self) -> bool:
        return self._directed

    def is_multigraph(self) -> bool:
        return False


class NxStore(Graph):
    """An outcore store made from a networkx graph; remembers the node objects."""

    __networkx_backend__ = BACKEND

    def __init__(self, path: str, nodes: List[Any], directed: bool, weight: Optional[str], keepalive: Any,
                 unit_weights: bool = True):
        super().__init__(path, keepalive)
        self.nodes = nodes
        self.unit_weights = unit_weights
        self.weight_attr = weight
        self._directed = directed

    def is_directed(self) -> bool:
        return self._directed

    def is_multigraph(self) -> bool:
        return False

    def node_of(self, ids: Iterable[Any]) -> List[Any]:
        return [self.nodes[int(i)] for i in ids]


# An outcore.Graph opened from a store also belongs to this backend.
Graph.__networkx_backend__ = BACKEND  # type: ignore[attr-defined]
Graph.is_directed = lambda self: self.directed  # type: ignore[attr-defined]
Graph.is_multigraph = lambda self: False  # type: ignore[attr-defined]


def _nodes_of(G: Graph, ids: Iterable[Any]) -> List[Any]:
    return G.node_of(ids) if isinstance(G, NxStore) else list(ids)


def _vertex_of(G: Graph, node: Any) -> Any:
    if isinstance(G, NxStore):
        try:
            return G.nodes.index(node)
        except ValueError:
            raise _native_node_error(node) from None
    return node


def _native_node_error(node: Any) -> Exception:
    return _nx().NodeNotFound(f"Source {node} is not in G")


def _nx():
    import networkx as nx

    return nx


def _index(G: Any) -> Dict[Any, Any]:
    """node → the vertex id the engine takes (cached on the graph)."""
    index = getattr(G, "_nx_index", None)
    if index is None:
        if isinstance(G, NxStore):
            index = {node: i for i, node in enumerate(G.nodes)}
        elif isinstance(G, EmptyGraph):
            index = {}
        else:
            index = {v: v for v in _native.vertices(G.path).tolist()}
        G._nx_index = index
    return index


def _all_nodes(G: Any) -> List[Any]:
    return list(_index(G))


def _check_node(G: Any, node: Any, message: str, error: str = "NodeNotFound") -> Any:
    try:
        return _index(G)[node]
    except (KeyError, TypeError):
        raise getattr(_nx(), error)(message) from None


def _distances(G: Any, source: Any, weight: Any = None, cutoff: Any = None) -> Dict[Any, Any]:
    """{node: distance} of the vertices reachable from ``source`` (hops, or weighted when
    ``weight`` names the store's weights)."""
    vid = _check_node(G, source, f"Source {source} is not in G")
    if weight is not None and _weighted(G):
        r = G.sssp(vid, progress=False)
        keep = np.isfinite(r.values)
    else:
        r = G.bfs(vid, progress=False)
        keep = r.values != np.iinfo(np.int64).max
    if cutoff is not None:
        keep &= r.values <= cutoff
    return dict(zip(_nodes_of(G, r.ids[keep].tolist()), r.values[keep].tolist()))


def _weighted(G: Any) -> bool:
    if isinstance(G, NxStore):
        return G.weight_attr is not None and not G.unit_weights
    return not isinstance(G, EmptyGraph) and G.weighted


def _by_node(G: Any, result: Any, column: Optional[str] = None) -> Dict[Any, Any]:
    values = result.columns[column] if column else result.values
    return dict(zip(_nodes_of(G, result.ids.tolist()), values.tolist()))


def _all_sources_msbfs(G: Any):
    """Per node: (number of sources reaching it, sum of their hop distances), every node a
    source."""
    r = G.msbfs(num_sources=G.num_vertices, progress=False)
    names = list(r.columns)
    reach, total = r.columns[names[0]], r.columns[names[1]]
    nodes = _nodes_of(G, r.ids.tolist())
    return nodes, reach.astype(np.int64), total.astype(np.float64)


def _simple_degrees(G: Any) -> Dict[Any, int]:
    """Degrees in the simple undirected graph (no self-loops, no duplicate edges)."""
    src, dst, _ = _native.edges(G.path)
    src, dst = np.asarray(src, dtype=np.uint64), np.asarray(dst, dtype=np.uint64)
    keep = src != dst
    lo, hi = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    pairs = np.unique(np.stack([lo, hi]), axis=1) if lo.size else np.zeros((2, 0), dtype=np.uint64)
    ids, counts = np.unique(pairs.ravel(), return_counts=True)
    degree = dict.fromkeys(_all_nodes(G), 0)
    degree.update(zip(_nodes_of(G, ids.tolist()), counts.tolist()))
    return degree


def _is_node(index: Dict[Any, Any], x: Any) -> bool:
    try:
        return x in index
    except TypeError:  # unhashable: a list of nodes
        return False


def _select(values: Dict[Any, Any], G: Any, nodes: Any) -> Any:
    """networkx's ``nodes=`` convention: None → all, a node → its value, else a dict."""
    if nodes is None:
        return values
    if _is_node(_index(G), nodes):
        return values[nodes]
    return {n: values[n] for n in nodes}


def _eccentricities(G: Any, v: Any = None, weight: Any = None) -> Any:
    nx = _nx()
    order = len(_index(G))
    single = v is not None and _is_node(_index(G), v)
    nodes = _all_nodes(G) if v is None else ([v] if single else list(v))
    ecc = {}
    for n in nodes:
        dist = _distances(G, n, weight)
        if len(dist) != order:
            msg = ("Found infinite path length because the digraph is not strongly connected"
                   if G.is_directed() else "Found infinite path length because the graph is not connected")
            raise nx.NetworkXError(msg)
        ecc[n] = max(dist.values())
    return ecc[v] if single else ecc


def _need_nodes(G: Any, what: str) -> None:
    if G.num_vertices == 0:
        raise _nx().NetworkXPointlessConcept(what)


def _config_memory() -> Any:
    """The budget of conversions: ``nx.config.backends.outcore.memory`` (None: the default)."""
    config = getattr(_nx().config.backends, BACKEND, None)
    return None if config is None else config.get("memory")


class _NxEdgeChunks:
    """A networkx graph's edges as the importer's chunks: numpy arrays of ``chunk`` dense ids
    (node positions) and weights, filled from ``G.edges`` one chunk at a time, so a conversion
    holds one chunk of edges beside ``G`` rather than every edge as Python lists. Records on
    the way whether every weight is 1 (the engines then ignore the weights)."""

    def __init__(self, G: Any, index: Dict[Any, int], weight: Optional[str], default: float, chunk: int):
        self.G, self.index, self.weight, self.default, self.chunk = G, index, weight, default, chunk
        self.unit_weights = True

    def chunks(self) -> Iterable[tuple]:
        index, weighted = self.index, self.weight is not None
        if weighted:
            rows = ((index[u], index[v], w) for u, v, w in self.G.edges(data=self.weight, default=self.default))
        else:
            rows = ((index[u], index[v]) for u, v in self.G.edges())
        # One structured array per chunk, filled straight from the edge view: no Python list.
        dtype = np.dtype([("src", np.uint64), ("dst", np.uint64)] + ([("w", np.float64)] if weighted else []))
        while True:
            block = np.fromiter(itertools.islice(rows, self.chunk), dtype=dtype)
            if len(block) == 0:
                return
            w = np.ascontiguousarray(block["w"]) if weighted else None
            if w is not None and self.unit_weights:
                self.unit_weights = bool(np.all(w == 1.0))
            yield np.ascontiguousarray(block["src"]), np.ascontiguousarray(block["dst"]), w


class BackendInterface:
    """What networkx's dispatcher looks for (``convert_from_nx``, ``convert_to_nx``,
    ``can_run``, and one attribute per dispatched function)."""

    @staticmethod
    def convert_from_nx(G, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                        preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                        graph_name=None):
        if isinstance(G, (Graph, EmptyGraph)):
            return G
        if G.is_multigraph():
            raise NotImplementedError("multigraphs are not supported")
        nodes = list(G)
        if not nodes:
            return EmptyGraph(G.is_directed())
        weight = None
        if edge_attrs:
            weight = next(iter(edge_attrs))
        elif preserve_edge_attrs:
            weight = "weight"
        default = (edge_attrs or {}).get(weight, 1.0) if weight is not None else 1.0
        memory = _config_memory()
        edges = _NxEdgeChunks(G, {node: i for i, node in enumerate(nodes)}, weight,
                              1.0 if default is None else float(default), _inputs.chunk_edges(memory))
        keep = tempfile.TemporaryDirectory(prefix="outcore-nx-")
        path = keep.name + "/store"
        with native_errors():
            _native.import_chunks(
                edges.chunks(), path, weight is not None, directed=G.is_directed(), memory=_memory(memory),
                vertices=np.arange(len(nodes), dtype=np.uint64), total_edges=G.number_of_edges(),
            )
        return NxStore(path, nodes, G.is_directed(), weight, keep, unit_weights=edges.unit_weights)

    @staticmethod
    def convert_to_nx(result, *, name=None):
        if isinstance(result, EmptyGraph):
            import networkx as nx

            return nx.DiGraph() if result.is_directed() else nx.Graph()
        if isinstance(result, Graph):
            import networkx as nx

            src, dst, weights = _native.edges(result.path)
            H = nx.DiGraph() if result.directed else nx.Graph()
            ids = _native.vertices(result.path)
            H.add_nodes_from(_nodes_of(result, ids))
            us, vs = _nodes_of(result, src), _nodes_of(result, dst)
            if weights is None:
                H.add_edges_from(zip(us, vs))
            else:
                H.add_weighted_edges_from(zip(us, vs, weights.tolist()))
            return H
        return result

    @staticmethod
    def can_run(name, args, kwargs):
        impl = getattr(BackendInterface, name, None)
        if impl is None:
            return f"'{name}' is not dispatched by outcore"
        kwargs = {k: v for k, v in kwargs.items() if k != "backend"}
        try:
            bound = inspect.signature(impl).bind(*args, **kwargs)
        except TypeError as exc:
            return f"arguments do not match: {exc}"
        bound.apply_defaults()
        reason = _unsupported(name, bound.arguments)
        return True if reason is None else reason

    @staticmethod
    def should_run(name, args, kwargs):
        return True

    # -- dispatched functions: link analysis, clustering, centrality -----------------------

    @staticmethod
    def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None,
                 weight="weight", dangling=None):
        if G.num_vertices == 0:
            return {}
        nx = _nx()
        r = G.pagerank(iterations=max_iter, damping=alpha, progress=False)
        before = G.pagerank(iterations=max_iter - 1, damping=alpha, progress=False) if max_iter > 1 else None
        change = np.abs(r.values - before.values).sum() if before is not None else np.inf
        if not change < G.num_vertices * tol:
            raise nx.PowerIterationFailedConvergence(max_iter)
        return _by_node(G, r)

    @staticmethod
    def clustering(G, nodes=None, weight=None):
        if G.num_vertices == 0:
            return {}
        return _select(_by_node(G, G.lcc(progress=False)), G, nodes)

    @staticmethod
    def triangles(G, nodes=None):
        if G.num_vertices == 0:
            return {}
        r = G.run("tc", progress=False)
        counts = {n: int(c) for n, c in _by_node(G, r).items()}
        return _select(counts, G, nodes)

    @staticmethod
    def transitivity(G):
        if G.num_vertices == 0:
            return 0
        triangles = sum(BackendInterface.triangles(G).values())
        triads = sum(d * (d - 1) for d in _simple_degrees(G).values())
        return 0 if triangles == 0 else 2 * triangles / triads

    @staticmethod
    def average_clustering(G, nodes=None, weight=None, count_zeros=True):
        values = BackendInterface.clustering(G)
        c = list(values.values()) if nodes is None else [values[n] for n in nodes]
        if not count_zeros:
            c = [v for v in c if abs(v) > 0]
        return sum(c) / len(c)

    @staticmethod
    def betweenness_centrality(G, k=None, normalized=True, weight=None, endpoints=False, seed=None):
        if G.num_vertices == 0:
            return {}
        return _by_node(G, G.betweenness(num_sources=G.num_vertices, normalized=normalized, progress=False))

    @staticmethod
    def closeness_centrality(G, u=None, distance=None, wf_improved=True):
        n = len(_index(G))
        closeness = {}
        if n:
            nodes, reach, total = _all_sources_msbfs(G)
            for node, r, s in zip(nodes, reach.tolist(), total.tolist()):
                c = (r - 1) / s if s > 0 and n > 1 else 0.0
                if wf_improved and n > 1:
                    c *= (r - 1) / (n - 1)
                closeness[node] = c
        return closeness[u] if u is not None else closeness

    # -- components and connectivity -------------------------------------------------------

    @staticmethod
    def connected_components(G):
        return _components(G)

    @staticmethod
    def number_connected_components(G):
        return sum(1 for _ in _components(G))

    @staticmethod
    def weakly_connected_components(G):
        return _components(G)

    @staticmethod
    def number_weakly_connected_components(G):
        return sum(1 for _ in _components(G))

    @staticmethod
    def is_connected(G):
        _need_nodes(G, "Connectivity is undefined for the null graph.")
        return sum(1 for _ in _components(G)) == 1

    @staticmethod
    def is_weakly_connected(G):
        _need_nodes(G, "Connectivity is undefined for the null graph.")
        return sum(1 for _ in _components(G)) == 1

    @staticmethod
    def is_strongly_connected(G):
        _need_nodes(G, "Connectivity is undefined for the null graph.")
        _, reach, _ = _all_sources_msbfs(G)
        return bool((reach == G.num_vertices).all())

    @staticmethod
    def node_connected_component(G, n):
        _check_node(G, n, f"{n}", error="NodeNotFound")
        return next(c for c in _components(G) if n in c)

    # -- reachability and distances ----------------------------------------------------------

    @staticmethod
    def has_path(G, source, target):
        _check_node(G, source, f"Source {source} is not in G")
        _check_node(G, target, f"Target {target} is not in G")
        return target in _distances(G, source)

    @staticmethod
    def descendants(G, source):
        _check_node(G, source, f"The node {source} is not in the graph.", error="NetworkXError")
        return set(_distances(G, source)) - {source}

    @staticmethod
    def ancestors(G, source):
        _check_node(G, source, f"The node {source} is not in the graph.", error="NetworkXError")
        return set(_distances(G, source)) - {source}

    @staticmethod
    def descendants_at_distance(G, source, distance):
        _check_node(G, source, f"The node {source} is not in the graph.", error="NetworkXError")
        return {n for n, d in _distances(G, source).items() if d == distance}

    @staticmethod
    def bfs_layers(G, sources):
        index = _index(G)
        if _is_node(index, sources):
            sources = [sources]
        best: Dict[Any, int] = {}
        for s in sources:
            _check_node(G, s, f"The node {s} is not in the graph.", error="NetworkXError")
            for n, d in _distances(G, s).items():
                best[n] = min(d, best.get(n, d))
        layers: Dict[int, List[Any]] = {}
        for n in index:  # G's node order inside each layer
            if n in best:
                layers.setdefault(best[n], []).append(n)
        for depth in sorted(layers):
            yield layers[depth]

    @staticmethod
    def single_source_shortest_path_length(G, source, cutoff=None):
        return _distances(G, source, cutoff=cutoff)

    @staticmethod
    def single_target_shortest_path_length(G, target, cutoff=None):
        _check_node(G, target, f"Target {target} is not in G")
        return _distances(G, target, cutoff=cutoff)

    @staticmethod
    def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
        return _distances(G, source, weight, cutoff)

    @staticmethod
    def single_source_bellman_ford_path_length(G, source, weight="weight"):
        return _distances(G, source, weight)

    @staticmethod
    def multi_source_dijkstra_path_length(G, sources, cutoff=None, weight="weight"):
        if not sources:
            raise ValueError("sources must not be empty")
        best: Dict[Any, Any] = {}
        for s in sources:
            _check_node(G, s, f"Node {s} not found in graph")
            for n, d in _distances(G, s, weight, cutoff).items():
                best[n] = min(d, best.get(n, d))
        return best

    @staticmethod
    def dijkstra_path_length(G, source, target, weight="weight"):
        _check_node(G, source, f"Node {source} not found in graph")
        if source == target:
            return 0
        dist = _distances(G, source, weight)
        if target not in dist:
            raise _nx().NetworkXNoPath(f"Node {target} not reachable from {source}")
        return dist[target]

    @staticmethod
    def bellman_ford_path_length(G, source, target, weight="weight"):
        _check_node(G, source, f"Node {source} not found in graph")
        if source == target:
            return 0
        dist = _distances(G, source, weight)
        if target not in dist:
            raise _nx().NetworkXNoPath(f"node {target} not reachable from {source}")
        return dist[target]

    @staticmethod
    def shortest_path_length(G, source=None, target=None, weight=None, method="dijkstra"):
        nx = _nx()
        if method not in ("dijkstra", "bellman-ford"):
            raise ValueError(f"method not supported: {method}")
        if source is None and target is None:
            return ((n, _distances(G, n, weight)) for n in _all_nodes(G))
        if source is None:  # undirected only (can_run): distances to target = from target
            return _distances(G, target, weight)
        if target is None:
            return _distances(G, source, weight)
        _check_node(G, target, f"Target {target} is not in G")
        dist = _distances(G, source, weight)
        if target not in dist:
            raise nx.NetworkXNoPath(f"Target {target} cannot be reached from given sources")
        return dist[target]

    @staticmethod
    def all_pairs_shortest_path_length(G, cutoff=None):
        for n in _all_nodes(G):
            yield n, _distances(G, n, cutoff=cutoff)

    @staticmethod
    def all_pairs_dijkstra_path_length(G, cutoff=None, weight="weight"):
        for n in _all_nodes(G):
            yield n, _distances(G, n, weight, cutoff)

    @staticmethod
    def all_pairs_bellman_ford_path_length(G, weight="weight"):
        for n in _all_nodes(G):
            yield n, _distances(G, n, weight)

    @staticmethod
    def average_shortest_path_length(G, weight=None, method=None):
        nx = _nx()
        n = len(_index(G))
        if n == 0:
            raise nx.NetworkXPointlessConcept("the null graph has no paths, thus there is no "
                                              "average shortest path length")
        if n == 1:
            return 0
        _, reach, total = _all_sources_msbfs(G)
        if not (reach == n).all():
            raise nx.NetworkXError("Graph is not strongly connected." if G.is_directed()
                                   else "Graph is not connected.")
        return float(total.sum()) / (n * (n - 1))

    @staticmethod
    def wiener_index(G, weight=None):
        _need_nodes(G, "Connectivity is undefined for the null graph.")
        _, reach, total = _all_sources_msbfs(G)
        if not (reach == G.num_vertices).all():
            return float("inf")
        return float(total.sum()) if G.is_directed() else float(total.sum()) / 2

    @staticmethod
    def barycenter(G, weight=None, attr=None, sp=None):
        nx = _nx()
        if G.num_vertices == 0:
            return []
        nodes, reach, total = _all_sources_msbfs(G)
        if not (reach == G.num_vertices).all():
            raise nx.NetworkXNoPath(
                f"Input graph {G} is disconnected, so every induced subgraph has infinite barycentricity."
            )
        best = total.min()
        return [n for n, t in zip(nodes, total.tolist()) if t == best]

    # -- distance measures -------------------------------------------------------------------

    @staticmethod
    def eccentricity(G, v=None, sp=None, weight=None):
        return _eccentricities(G, v, weight)

    @staticmethod
    def diameter(G, e=None, usebounds=False, weight=None):
        e = e if e is not None else _eccentricities(G, None, weight)
        return max(e.values())

    @staticmethod
    def radius(G, e=None, usebounds=False, weight=None):
        e = e if e is not None else _eccentricities(G, None, weight)
        return min(e.values())

    @staticmethod
    def center(G, e=None, usebounds=False, weight=None):
        e = e if e is not None else _eccentricities(G, None, weight)
        r = min(e.values())
        return [v for v in e if e[v] == r]

    @staticmethod
    def periphery(G, e=None, usebounds=False, weight=None):
        e = e if e is not None else _eccentricities(G, None, weight)
        d = max(e.values())
        return [v for v in e if e[v] == d]

    @staticmethod
    def approximate_diameter(G, seed=None):
        nx = _nx()
        n = len(_index(G))
        if n == 0:
            raise nx.NetworkXError("Expected non-empty NetworkX graph!")
        if n == 1:
            return 0
        if sum(1 for _ in _components(G)) != 1:
            raise nx.NetworkXError("Graph not connected.")
        # networkx may hand over a random.Random: the engine takes an integer seed
        return G.diameter(seed=seed if isinstance(seed, int) and seed >= 0 else 1, progress=False)


_WEIGHTED = {
    "single_source_dijkstra_path_length", "single_source_bellman_ford_path_length",
    "multi_source_dijkstra_path_length", "dijkstra_path_length", "bellman_ford_path_length",
    "shortest_path_length", "all_pairs_dijkstra_path_length", "all_pairs_bellman_ford_path_length",
    "eccentricity", "diameter", "radius", "center", "periphery",
}
_UNDIRECTED_ONLY = {
    "connected_components", "number_connected_components", "is_connected",
    "node_connected_component", "triangles", "transitivity", "approximate_diameter",
    "single_target_shortest_path_length", "ancestors", "clustering", "average_clustering",
    "barycenter",
}
_DIRECTED_ONLY = {"weakly_connected_components", "number_weakly_connected_components",
                  "is_weakly_connected", "is_strongly_connected"}
# networkx itself raises NetworkXNotImplemented for these on the wrong kind of graph: let it.
_NX_RAISES_ON_KIND = {"connected_components", "number_connected_components", "is_connected",
                      "node_connected_component", "triangles", "transitivity",
                      "weakly_connected_components", "number_weakly_connected_components",
                      "is_weakly_connected", "is_strongly_connected"}


def _unsupported(name: str, a: Dict[str, Any]) -> Optional[str]:
    """Why outcore cannot run this call (arguments bound by name), or None when it can."""
    G = a.get("G")
    if G is None:
        return "no graph"
    if getattr(G, "is_multigraph", lambda: False)():
        return "multigraphs are not supported"
    directed = G.is_directed()
    if name in _UNDIRECTED_ONLY and directed and name not in _NX_RAISES_ON_KIND:
        return "directed graphs are not supported (reverse reachability or another definition)"
    if name in _DIRECTED_ONLY and not directed and name not in _NX_RAISES_ON_KIND:
        return "undirected graphs are not supported"
    check = _CHECKS.get(name)
    if check is not None:
        reason = check(G, a)
        if reason is not None:
            return reason
    if name in _WEIGHTED:
        weight = a.get("weight")
        if callable(weight):
            return "weight functions are not supported"
        if weight is not None and _has_negative_weights(G, weight):
            return "negative weights are not supported"
    return None


def _check_pagerank(G, a):
    for key in ("personalization", "nstart", "dangling"):
        if a.get(key) is not None:
            return f"'{key}' is not supported"
    if a["max_iter"] < 1:
        return "max_iter must be at least 1"
    if a["weight"] is not None and _has_non_unit_weights(G, a["weight"]):
        return "weighted PageRank is not supported"
    return None


def _check_unweighted(G, a):
    return "weighted clustering is not supported" if a.get("weight") is not None else None


def _check_betweenness(G, a):
    if a["k"] is not None:
        return "sampled betweenness (k) draws other sources than networkx"
    if a["weight"] is not None:
        return "weighted betweenness is not supported"
    if a["endpoints"]:
        return "endpoints=True is not supported"
    return None


def _check_closeness(G, a):
    return "weighted closeness (distance) is not supported" if a["distance"] is not None else None


def _check_shortest_path_length(G, a):
    if a["source"] is None and a["target"] is not None and G.is_directed():
        return "distances to a target on a directed graph need reverse edges"
    if a["method"] == "bellman-ford" and a["weight"] is not None and _has_negative_weights(G, a["weight"]):
        return "negative weights are not supported"
    return None


def _check_distance_measure(G, a):
    if a.get("usebounds"):
        return "usebounds is not supported"
    if a.get("sp") is not None:
        return "precomputed sp is not supported"
    return None


def _check_unweighted_distances(G, a):
    return "weighted distances are not supported" if a["weight"] is not None else None


def _check_barycenter(G, a):
    if a["weight"] is not None or a["attr"] is not None or a["sp"] is not None:
        return "weight, attr and sp are not supported"
    return None


def _check_average_spl(G, a):
    if a["weight"] is not None or a["method"] not in (None, "unweighted", "dijkstra", "bellman-ford"):
        return "weighted average shortest path length is not supported"
    return None


_CHECKS = {
    "pagerank": _check_pagerank,
    "clustering": _check_unweighted,
    "average_clustering": _check_unweighted,
    "betweenness_centrality": _check_betweenness,
    "closeness_centrality": _check_closeness,
    "shortest_path_length": _check_shortest_path_length,
    "eccentricity": _check_distance_measure,
    "diameter": _check_distance_measure,
    "radius": _check_distance_measure,
    "center": _check_distance_measure,
    "periphery": _check_distance_measure,
    "average_shortest_path_length": _check_average_spl,
    "wiener_index": _check_unweighted_distances,
    "barycenter": _check_barycenter,
}

# Hook points for the algorithms the engine is gaining (networkx name -> engine algorithm name).
# An entry is dispatched once the engine registers the name (see ``outcore.algorithms()``) and
# ADAPTERS holds a function ``adapter(G, **networkx_arguments)`` returning networkx's shape.
PLANNED: Dict[str, str] = {
    "core_number": "kcore",
    "k_core": "kcore",
    "bfs_edges": "bfs-parents",
    "bfs_tree": "bfs-parents",
    "bfs_predecessors": "bfs-parents",
    "bfs_successors": "bfs-parents",
    "eigenvector_centrality": "eigenvector",
    "katz_centrality": "katz",
    "hits": "hits",
    "louvain_communities": "louvain",
}
ADAPTERS: Dict[str, Any] = {}

# -- core numbers and BFS trees (engine algorithms kcore and bfs-parents) -------------------

_SELF_LOOPS = ("Input graph has self loops which is not permitted; "
               "Consider using G.remove_edges_from(nx.selfloop_edges(G)).")
_UNREACHABLE = np.iinfo(np.int64).max


def _core_numbers(G: Any) -> Dict[Any, int]:
    """{node: core number}; self-loops refused as networkx does."""
    if G.num_vertices == 0:
        return {}
    src, dst, _ = _native.edges(G.path)
    if len(src) and (np.asarray(src) == np.asarray(dst)).any():
        raise _nx().NetworkXNotImplemented(_SELF_LOOPS)
    return _by_node(G, G.core_number(progress=False))


def _induced_subgraph(G: Any, nodes: List[Any]) -> Any:
    """The networkx graph induced by ``nodes`` (in G's node order), weights kept."""
    nx = _nx()
    H = nx.DiGraph() if G.is_directed() else nx.Graph()
    keep = set(nodes)
    H.add_nodes_from(n for n in _all_nodes(G) if n in keep)
    if G.num_vertices == 0 or not keep:
        return H
    src, dst, weights = _native.edges(G.path)
    us, vs = _nodes_of(G, list(src)), _nodes_of(G, list(dst))
    ws = weights.tolist() if weights is not None else [None] * len(us)
    attr = getattr(G, "weight_attr", None) or "weight"
    for u, v, w in zip(us, vs, ws):
        if u in keep and v in keep:
            H.add_edge(u, v, **({} if w is None else {attr: w}))
    return H


def _tree_edges(G: Any, source: Any, depth_limit: Any = None) -> List[tuple]:
    """(parent, child) node pairs of the engine's BFS tree in breadth-first order: layer by
    layer, and inside a layer by the parent's position, then the child's id."""
    vid = _check_node(G, source, f"The node {source} is not in the graph.", error="NetworkXError")
    r = G.bfs_parents(vid, progress=False)
    depth, parent = r.columns["depth"], r.columns["parent"]
    layers: Dict[int, List[tuple]] = {}
    for child, d, p in zip(r.ids.tolist(), depth.tolist(), parent.tolist()):
        if 0 < d != _UNREACHABLE and (depth_limit is None or d <= depth_limit):
            layers.setdefault(d, []).append((child, p))
    position = {r.ids[depth == 0].tolist()[0]: 0}
    pairs = []
    for d in sorted(layers):
        for child, p in sorted(layers[d], key=lambda cp: (position[cp[1]], cp[0])):
            position[child] = len(position)
            pairs.append((p, child))
    if not pairs:
        return []
    parents, children = zip(*pairs)
    return list(zip(_nodes_of(G, parents), _nodes_of(G, children)))


def _nx_core_number(G):
    return _core_numbers(G)


def _nx_k_core(G, k=None, core_number=None):
    core = core_number if core_number is not None else _core_numbers(G)
    if k is None:
        k = max(core.values()) if core else 0
    return _induced_subgraph(G, [n for n, c in core.items() if c >= k])


def _nx_bfs_edges(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    yield from _tree_edges(G, source, depth_limit)


def _nx_bfs_tree(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    T = _nx().DiGraph()
    T.add_node(source)
    T.add_edges_from(_tree_edges(G, source, depth_limit))
    return T


def _nx_bfs_predecessors(G, source, depth_limit=None, sort_neighbors=None):
    for parent, child in _tree_edges(G, source, depth_limit):
        yield (child, parent)


def _nx_bfs_successors(G, source, depth_limit=None, sort_neighbors=None):
    current, children = source, []
    for parent, child in _tree_edges(G, source, depth_limit):
        if parent != current:
            yield (current, children)
            current, children = parent, []
        children.append(child)
    yield (current, children)


def _check_bfs_tree(G, a):
    if a.get("sort_neighbors") is not None:
        return "sort_neighbors is not supported (the tree takes the smallest parent id)"
    if a.get("reverse") and G.is_directed():
        return "reverse=True on a directed graph is not supported (BFS runs along out-edges)"
    return None


ADAPTERS.update({
    "core_number": _nx_core_number,
    "k_core": _nx_k_core,
    "bfs_edges": _nx_bfs_edges,
    "bfs_tree": _nx_bfs_tree,
    "bfs_predecessors": _nx_bfs_predecessors,
    "bfs_successors": _nx_bfs_successors,
})
for _name in ("bfs_edges", "bfs_tree", "bfs_predecessors", "bfs_successors"):
    _CHECKS[_name] = _check_bfs_tree


def _katz_centrality(G, alpha=0.1, beta=1.0, max_iter=1000, tol=1.0e-6, nstart=None, normalized=True,
                     weight=None):
    if G.num_vertices == 0:
        return {}
    if max_iter < 1:
        raise _nx().PowerIterationFailedConvergence(max_iter)
    try:
        r = G.katz(alpha=alpha, beta=beta, max_iter=max_iter, tol=tol, normalized=normalized, progress=False)
    except (ValueError, _native.OutcoreError) as exc:
        if "did not converge" in str(exc):
            raise _nx().PowerIterationFailedConvergence(max_iter) from exc
        raise
    return _by_node(G, r)


def _check_katz(G, a):
    if a["nstart"] is not None:
        return "'nstart' is not supported"
    if not isinstance(a["beta"], (int, float)) or isinstance(a["beta"], bool):
        return "a per-node beta is not supported"
    if a["weight"] is not None and _has_non_unit_weights(G, a["weight"]):
        return "weighted Katz centrality is not supported"
    # Not nx.number_of_selfloops: under a forced backend that call would be dispatched too.
    if isinstance(G, _nx().Graph) and not G.is_directed() and any(u in nbrs for u, nbrs in G.adjacency()):
        return "self-loops on undirected graphs are not supported"
    return None


ADAPTERS["katz_centrality"] = _katz_centrality
_CHECKS["katz_centrality"] = _check_katz


def _eigenvector_centrality(G, max_iter=100, tol=1.0e-6, nstart=None, weight=None):
    if G.num_vertices == 0:
        raise _nx().NetworkXPointlessConcept("cannot compute centrality for the null graph")
    if max_iter < 1:
        raise _nx().PowerIterationFailedConvergence(max_iter)
    weighted = weight is not None and _weighted(G)
    try:
        r = G.eigenvector(max_iter=max_iter, tol=tol, weighted=weighted, progress=False)
    except (ValueError, _native.OutcoreError) as exc:
        if "did not converge" in str(exc):
            raise _nx().PowerIterationFailedConvergence(max_iter) from exc
        raise
    return _by_node(G, r)


def _check_eigenvector(G, a):
    if a["nstart"] is not None:
        return "'nstart' is not supported"
    # Not nx.number_of_selfloops: under a forced backend that call would be dispatched too.
    if isinstance(G, _nx().Graph) and not G.is_directed() and any(u in nbrs for u, nbrs in G.adjacency()):
        return "self-loops on undirected graphs are not supported"
    return None


ADAPTERS["eigenvector_centrality"] = _eigenvector_centrality
_CHECKS["eigenvector_centrality"] = _check_eigenvector


def _hits(G, max_iter=100, tol=1.0e-8, nstart=None, normalized=True):
    if G.num_vertices == 0:
        return {}, {}
    if max_iter < 1:
        raise _nx().PowerIterationFailedConvergence(max_iter)
    try:
        r = G.hits(max_iter=max_iter, tol=tol, normalized=normalized, weighted=_weighted(G), progress=False)
    except (ValueError, _native.OutcoreError) as exc:
        if "did not converge" in str(exc):
            raise _nx().PowerIterationFailedConvergence(max_iter) from exc
        raise
    return _by_node(G, r, "hub"), _by_node(G, r, "authority")


def _check_hits(G, a):
    reason = _check_eigenvector(G, a)
    if reason is not None:
        return reason
    if isinstance(G, _nx().Graph) and len(G) > 0 and G.number_of_edges() == 0:
        return "graphs without edges are not supported"
    return None


ADAPTERS["hits"] = _hits
_CHECKS["hits"] = _check_hits


def _louvain_communities(G, weight="weight", resolution=1, threshold=1e-07, max_level=None, seed=None):
    if G.num_vertices == 0:
        return []
    if seed is not None and not isinstance(seed, int):
        seed = seed.getrandbits(63)  # networkx's py_random_state hands over a random.Random
    r = G.louvain(resolution=resolution, threshold=threshold, max_level=max_level, seed=seed, progress=False)
    groups: Dict[Any, set] = {}
    for node, label in zip(_nodes_of(G, r.ids.tolist()), r.values.tolist()):
        groups.setdefault(label, set()).add(node)
    return list(groups.values())


def _check_louvain(G, a):
    if G.is_directed():
        return "directed graphs are not supported (networkx uses directed modularity)"
    if not a["resolution"] > 0:
        return "resolution must be positive"
    if not a["threshold"] >= 0:
        return "threshold must be 0 or more"
    if a["max_level"] is not None and a["max_level"] <= 0:
        return None  # networkx raises ValueError; so does outcore
    weight = a["weight"]
    if callable(weight):
        return "weight functions are not supported"
    if weight is None and _has_non_unit_weights(G, "weight") and isinstance(G, Graph) and not isinstance(G, NxStore):
        return "weight=None on a weighted store is not supported"
    if weight is not None and _has_negative_weights(G, weight):
        return "negative weights are not supported"
    return None


ADAPTERS["louvain_communities"] = _louvain_communities
_CHECKS["louvain_communities"] = _check_louvain


def _install_planned() -> None:
    engine = {name for name, _ in _native.algorithms()}
    for nx_name, adapter in ADAPTERS.items():
        if PLANNED.get(nx_name) in engine:
            setattr(BackendInterface, nx_name, staticmethod(adapter))


def _components(G) -> Iterable[set]:
    if G.num_vertices == 0:
        return iter([])
    r = G.wcc(progress=False)
    groups: Dict[Any, set] = {}
    for node, label in zip(_nodes_of(G, r.ids.tolist()), r.values.tolist()):
        groups.setdefault(label, set()).add(node)
    return iter(list(groups.values()))


def _has_non_unit_weights(G, weight: str) -> bool:
    if isinstance(G, EmptyGraph):
        return False
    if isinstance(G, NxStore):
        return not G.unit_weights
    if isinstance(G, Graph):
        return G.weighted
    return any(d.get(weight, 1) != 1 for _, _, d in G.edges(data=True))


def _has_negative_weights(G, weight: str) -> bool:
    if isinstance(G, EmptyGraph):
        return False
    if isinstance(G, Graph):
        if not G.weighted:
            return False
        _, _, w = _native.edges(G.path)
        return bool((np.asarray(w) < 0).any())
    return any(d.get(weight, 1) < 0 for _, _, d in G.edges(data=True))


def _raise_on_kind(name: str, func: Any) -> Any:
    """Raises NetworkXNotImplemented as networkx's ``not_implemented_for`` would."""
    undirected_only = name in _UNDIRECTED_ONLY

    def checked(G, *args, **kwargs):
        if G.is_directed() == undirected_only:
            kind = "directed" if undirected_only else "undirected"
            raise _nx().NetworkXNotImplemented(f"not implemented for {kind} type")
        return func(G, *args, **kwargs)

    checked.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
    checked.__name__ = name
    return checked


for _name in _NX_RAISES_ON_KIND:
    setattr(BackendInterface, _name, staticmethod(_raise_on_kind(_name, getattr(BackendInterface, _name))))

_install_planned()
backend_interface = BackendInterface()

DISPATCHED = tuple(
    name for name, value in vars(BackendInterface).items()
    if isinstance(value, staticmethod) and name not in
    ("convert_from_nx", "convert_to_nx", "can_run", "should_run")
)


def get_info() -> Dict[str, Any]:
    """Metadata shown in networkx's documentation of backends."""
    return {
        "backend_name": BACKEND,
        "project": "outcore",
        "package": "outcore",
        "short_summary": "Out-of-core graph analytics: graphs larger than memory.",
        "functions": {name: {"url": None} for name in DISPATCHED},
        # nx.config.backends.outcore.memory: the budget of converting a networkx graph.
        "default_config": {"memory": None},
    }
