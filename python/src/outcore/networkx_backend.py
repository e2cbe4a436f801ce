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
* Label propagation is not dispatched: networkx's ``label_propagation_communities`` is
  semi-synchronous with random tie-breaking, Graphalytics CDLP is synchronous with ties to
  the smallest label.
"""

from __future__ import annotations

import tempfile
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

from . import _native
from ._graph import Graph

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
    import networkx as nx

    return nx.NodeNotFound(f"Source {node} is not in G")


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
        index = {node: i for i, node in enumerate(nodes)}
        weight = None
        if edge_attrs:
            weight = next(iter(edge_attrs))
        elif preserve_edge_attrs:
            weight = "weight"
        src, dst, w = [], [], []
        for u, v, data in G.edges(data=True):
            src.append(index[u])
            dst.append(index[v])
            if weight is not None:
                default = (edge_attrs or {}).get(weight, 1.0)
                w.append(float(data.get(weight, 1.0 if default is None else default)))
        keep = tempfile.TemporaryDirectory(prefix="outcore-nx-")
        path = keep.name + "/store"
        _native.from_edges(
            src, dst, path, weights=w if weight is not None else None, directed=G.is_directed(),
            vertices=list(range(len(nodes))),
        )
        return NxStore(path, nodes, G.is_directed(), weight, keep, unit_weights=all(x == 1.0 for x in w))

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
        G = args[0] if args else kwargs.get("G")
        reason = _unsupported(name, G, kwargs)
        return True if reason is None else reason

    @staticmethod
    def should_run(name, args, kwargs):
        return True

    # -- dispatched functions --------------------------------------------------------------

    @staticmethod
    def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None,
                 weight="weight", dangling=None):
        _require(
            "pagerank", G,
            dict(personalization=personalization, nstart=nstart, dangling=dangling, weight=weight),
        )
        if G.num_vertices == 0:
            return {}
        import networkx as nx

        r = G.pagerank(iterations=max_iter, damping=alpha, progress=False)
        before = G.pagerank(iterations=max_iter - 1, damping=alpha, progress=False) if max_iter > 1 else None
        change = np.abs(r.values - before.values).sum() if before is not None else np.inf
        if not change < G.num_vertices * tol:
            raise nx.PowerIterationFailedConvergence(max_iter)
        return dict(zip(_nodes_of(G, r.ids.tolist()), r.values.tolist()))

    @staticmethod
    def single_source_shortest_path_length(G, source, cutoff=None):
        _require_nonempty(G, source)
        r = G.bfs(_vertex_of(G, source), progress=False)
        unreachable = np.iinfo(np.int64).max
        keep = r.values != unreachable
        if cutoff is not None:
            keep &= r.values <= cutoff
        return dict(zip(_nodes_of(G, r.ids[keep].tolist()), r.values[keep].tolist()))

    @staticmethod
    def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
        _require_nonempty(G, source)
        if callable(weight):
            raise NotImplementedError("weight functions are not supported")
        r = G.sssp(_vertex_of(G, source), progress=False)
        keep = np.isfinite(r.values)
        if cutoff is not None:
            keep &= r.values <= cutoff
        return dict(zip(_nodes_of(G, r.ids[keep].tolist()), r.values[keep].tolist()))

    @staticmethod
    def connected_components(G):
        import networkx as nx

        if G.is_directed():
            raise nx.NetworkXNotImplemented("not implemented for directed type")
        return _components(G)

    @staticmethod
    def number_connected_components(G):
        return sum(1 for _ in BackendInterface.connected_components(G))

    @staticmethod
    def weakly_connected_components(G):
        import networkx as nx

        if not G.is_directed():
            raise nx.NetworkXNotImplemented("not implemented for undirected type")
        return _components(G)

    @staticmethod
    def number_weakly_connected_components(G):
        return sum(1 for _ in BackendInterface.weakly_connected_components(G))

    @staticmethod
    def clustering(G, nodes=None, weight=None):
        _require("clustering", G, dict(weight=weight))
        if G.num_vertices == 0:
            return {}
        r = G.lcc(progress=False)
        values = dict(zip(_nodes_of(G, r.ids.tolist()), r.values.tolist()))
        if nodes is None:
            return values
        try:
            if nodes in values:  # a single node
                return values[nodes]
        except TypeError:  # unhashable: a list of nodes
            pass
        return {n: values[n] for n in nodes}


def _unsupported(name: str, G: Any, kwargs: Dict[str, Any]) -> Optional[str]:
    """Why outcore cannot run this call, or None when it can."""
    if getattr(G, "is_multigraph", lambda: False)():
        return "multigraphs are not supported"
    if name == "pagerank":
        for key in ("personalization", "nstart", "dangling"):
            if kwargs.get(key) is not None:
                return f"'{key}' is not supported"
        weight = kwargs.get("weight", "weight")
        if G is not None and weight is not None and _has_non_unit_weights(G, weight):
            return "weighted PageRank is not supported"
    if name == "clustering":
        if G is not None and G.is_directed():
            return "directed clustering (Fagiolo) differs from Graphalytics LCC"
        if kwargs.get("weight") is not None:
            return "weighted clustering is not supported"
    return None


def _require(name: str, G: Any, kwargs: Dict[str, Any]) -> None:
    reason = _unsupported(name, G, kwargs)
    if reason is not None:
        raise NotImplementedError(f"outcore backend: {name}: {reason}")


def _require_nonempty(G: Any, source: Any) -> None:
    if G.num_vertices == 0:
        raise _native_node_error(source)


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


backend_interface = BackendInterface()


def get_info() -> Dict[str, Any]:
    """Metadata shown in networkx's documentation of backends."""
    return {
        "backend_name": BACKEND,
        "project": "outcore",
        "package": "outcore",
        "short_summary": "Out-of-core graph analytics: graphs larger than memory.",
        "functions": {
            name: {"url": None}
            for name in (
                "pagerank", "single_source_shortest_path_length", "single_source_dijkstra_path_length",
                "connected_components", "number_connected_components", "weakly_connected_components",
                "number_weakly_connected_components", "clustering",
            )
        },
    }
