"""The Pythonic API over the native module: :class:`Graph` and :class:`Result`."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _inputs, _native, _plot
from . import _progress as _progress_mod
from ._progress import ProgressArg
from ._errors import InvalidParameter, StoreError, native_errors

PathLike = Union[str, "os.PathLike[str]"]


def _progress(progress: ProgressArg) -> Any:
    """``progress=`` for the native layer (see :func:`outcore._progress.resolve`)."""
    return _progress_mod.resolve(progress)


class Result:
    """An algorithm's output: ``ids`` (original vertex ids, ascending) and one numpy array per
    value column, aligned with ``ids``. ``values`` is the first column.

    ``stats`` holds the run's figures (time, bytes read, peak RSS, per-iteration figures, and
    under ``"plan"`` the plan of the engine that ran), ``summary`` a short digest (top vertices,
    component counts...) and ``explanation`` the planner's table: every engine, whether it fits
    the budget and why, its memory, expected bytes and seconds (``engine="auto"`` picks the
    fastest that fits).
    """

    def __init__(self, algorithm: str, raw: Dict[str, Any]):
        self.algorithm = algorithm
        ids = raw["ids"]
        self.ids = ids if isinstance(ids, np.ndarray) else np.array(ids, dtype=object)
        self.columns: Dict[str, np.ndarray] = {}
        self.kinds: Dict[str, str] = {}
        for name, kind, data in raw["columns"]:
            self.columns[name] = data if isinstance(data, np.ndarray) else np.array(data, dtype=object)
            self.kinds[name] = kind
        self.stats: Dict[str, Any] = json.loads(raw["stats"])
        self.summary: Dict[str, Any] = json.loads(raw["summary"])
        self.explanation: Optional[str] = raw.get("explanation")

    @property
    def values(self) -> np.ndarray:
        """The first (usually only) value column."""
        return next(iter(self.columns.values()))

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        cols = ", ".join(f"{n}: {self.kinds[n]}" for n in self.columns)
        return f"<outcore.Result {self.algorithm}: {len(self)} vertices ({cols})>"

    def to_dict(self, column: Optional[str] = None) -> Dict[Any, Any]:
        """``{original id: value}`` for one column (default: the first).

        Values are Python scalars (int, float or str).
        """
        data = self.columns[column] if column else self.values
        return dict(zip(self.ids.tolist(), data.tolist()))

    def to_pandas(self):
        """A DataFrame with a ``vertex`` column and one column per value (``value`` when
        there is a single one). Unreachable vertices of hop and distance columns (BFS, SSSP)
        are NA: hops become pandas' nullable ``Int64``, distances ``Float64``.

        >>> g = Graph.from_edges([1, 2, 4], [2, 3, 1])
        >>> g.bfs(1, progress=False).to_pandas()
           vertex  value
        0       1      0
        1       2      1
        2       3      2
        3       4   <NA>
        """
        pd = _inputs.optional("pandas", "Result.to_pandas")
        frame = {"vertex": self.ids}
        columns = {n: _nullable(pd, self.kinds[n], c) for n, c in self.columns.items()}
        if len(columns) == 1:
            frame["value"] = next(iter(columns.values()))
        else:
            frame.update(columns)
        return pd.DataFrame(frame)

    def report(self, path: PathLike, *others: "Result") -> str:
        """Write a run report to ``path``: a self-contained HTML page (inline SVG, no script)
        with, per iteration, the time (split into compute and I/O wait where the engine
        records it), bytes read and written, active vertices and edges processed. Further
        results given in ``others`` are drawn side by side and compared (e.g. one run per
        engine). Runs are labelled by their engine. Returns the path written.

        >>> import os, tempfile
        >>> g = Graph.from_edges([1, 2, 3], [2, 3, 1])
        >>> page = os.path.join(tempfile.mkdtemp(), "pr.html")
        >>> g.pagerank(engine="inmem", progress=False).report(page) == page
        True
        """
        _native.run_report(_plot.labelled([r.stats for r in (self,) + others]), os.fspath(path))
        return os.fspath(path)

    def plot(self, *others: "Result") -> "_plot.RunPlot":
        """The run's per-iteration charts (those of :meth:`report`) for a notebook: Jupyter
        shows them inline (SVG, no network, no matplotlib); ``.save("run.svg")`` or
        ``.save("run.html")`` writes them. ``others`` are drawn beside this run and compared.

        >>> g = Graph.from_edges([1, 2, 3], [2, 3, 1])
        >>> g.pagerank(iterations=3, engine="inmem", progress=False).plot().num_charts
        4
        """
        return _plot.RunPlot([r.stats for r in (self,) + others])


def _nullable(pd: Any, kind: str, column: np.ndarray) -> Any:
    """A column for pandas with NA where a hop count (``Int64``) or a distance (``Float64``)
    means unreachable; other columns as they are."""
    if kind == "hops":
        return pd.arrays.IntegerArray(column.astype(np.int64), column == UNREACHABLE)
    if kind == "float" and np.isinf(column).any():
        return pd.arrays.FloatingArray(column.astype(np.float64), np.isinf(column))
    return column


# The hop count of a vertex the source does not reach (Graphalytics' convention).
UNREACHABLE = np.iinfo(np.int64).max


class Graph:
    """A graph store on disk. Opening is cheap: nothing is loaded until an algorithm runs.

    Every algorithm method accepts ``engine=`` (``"auto"``, ``"inmem"``, ...), ``memory=``
    (a budget such as ``"512MiB"``; default a quarter of RAM), ``progress=`` (default: when
    interactive) and ``engine_options=``, a dict of the engine's CLI flags by name: for the
    shards engine ``shards``, ``dynamic`` (``"off"``, ``"ads"``, ``"ods"``),
    ``shadow_edge_share``, ``delay_buffer``, ``delayed_delivery`` (``"adjacency"``,
    ``"shadow"``) and ``shards_values`` (``"auto"``, ``"memory"``, ``"disk"``); for the pregel
    engine ``recode`` (run on the recoded partition: messages fold in memory, and PageRank,
    Katz and eigenvector on one rank pull), ``message_file_size``, ``checkpoint_every`` and
    ``resume``.
    """

    def __init__(self, path: PathLike, _keepalive: Any = None):
        self.path = os.fspath(path)
        with native_errors():
            self._manifest = json.loads(_native.store_manifest(self.path))
        self._keepalive = _keepalive  # a TemporaryDirectory owning the store, if any

    # -- construction -------------------------------------------------------------------

    @classmethod
    def open(cls, path: PathLike) -> "Graph":
        """Opens an existing store (sizes and checksums are checked)."""
        return cls(path)

    @classmethod
    def from_edges(
        cls,
        edges: Any = None,
        dst: Any = None,
        weights: Any = None,
        *,
        src: Any = None,
        weight: Any = None,
        store: Optional[PathLike] = None,
        directed: bool = True,
        memory: Union[str, int, None] = None,
        dedup: bool = False,
        drop_self_loops: bool = False,
        overwrite: bool = False,
        progress: ProgressArg = None,
    ) -> "Graph":
        """Builds a store from edges, streamed into the importer a chunk at a time (within
        ``memory``; only one chunk is copied beside the caller's data).

        ``edges`` (or ``src=``) with ``dst`` (and ``weights``): arrays or sequences of ids,
        integers (≥ 0) or strings. Or ``edges`` is a table: a pandas DataFrame, a pyarrow
        Table, the path of a Parquet (``.parquet``) or Arrow IPC (``.arrow``, ``.feather``)
        file; ``src=``, ``dst=`` and ``weight=`` name its columns (defaults: ``src``/``dst``,
        ``source``/``target``, ``from``/``to`` or ``u``/``v``, and ``weight`` when present).
        Or a scipy.sparse adjacency matrix (vertices ``0..n-1``, weights from its entries
        unless all are 1) or a networkx graph (see :meth:`from_networkx`).

        With ``store=None`` the store lives in a temporary directory removed with the Graph; an
        existing ``store`` is replaced only with ``overwrite=True``.

        >>> import pandas as pd
        >>> df = pd.DataFrame({"a": [1, 2], "b": [2, 3], "w": [0.5, 2.0]})
        >>> g = Graph.from_edges(df, src="a", dst="b", weight="w")
        >>> g.num_edges, g.weighted
        (2, True)
        """
        table = edges is not None and (dst is None or isinstance(dst, str)) and _is_table(edges)
        chunk = _inputs.chunk_edges(memory)
        if table:
            data = _inputs.edge_input(edges, None, None, src, dst, weight, chunk)
        else:
            arrays = edges if edges is not None else src
            w = weights if weights is not None else weight
            data = _inputs.edge_input(arrays, dst, w, None, None, None, chunk)
        if data.directed is not None:
            directed = data.directed
        return cls._import(data, store, directed, memory, dedup, drop_self_loops, overwrite, progress)

    @classmethod
    def from_networkx(cls, G: Any, *, weight: Optional[str] = "weight", **kw: Any) -> "Graph":
        """A store from a networkx graph: its nodes (non-negative integers or strings; isolated
        ones kept) and edges, directed as ``G`` is. ``weight`` names the edge attribute to
        keep (None: unweighted; edges without it weigh 1). Takes ``from_edges``'s keywords.

        >>> import networkx as nx
        >>> g = Graph.from_networkx(nx.path_graph(4))
        >>> g.num_vertices, g.directed, g.bfs(0, progress=False).to_dict()
        (4, False, {0: 0, 1: 1, 2: 2, 3: 3})
        """
        data = _inputs.from_networkx(G, weight, _inputs.chunk_edges(kw.get("memory")))
        if kw.pop("directed", G.is_directed()) != G.is_directed():
            raise InvalidParameter("from_networkx: the store is directed as G is; convert G first "
                                   "(G.to_undirected() or G.to_directed())")
        return cls._import(data, kw.pop("store", None), G.is_directed(), kw.pop("memory", None),
                           kw.pop("dedup", False), kw.pop("drop_self_loops", False), kw.pop("overwrite", False),
                           kw.pop("progress", None), **kw)

    @classmethod
    def _import(cls, data: "_inputs.EdgeInput", store: Optional[PathLike], directed: bool, memory: Any,
                dedup: bool, drop_self_loops: bool, overwrite: bool, progress: ProgressArg, **unknown: Any) -> "Graph":
        if unknown:
            raise InvalidParameter(f"from_edges does not take {', '.join(sorted(unknown))}")
        memory = _memory(memory)
        path, keep = _store_path(store, overwrite)
        with native_errors():
            _native.import_chunks(
                data.chunks(), path, data.weighted, directed=directed, memory=memory, ids=data.ids, dedup=dedup,
                drop_self_loops=drop_self_loops, progress=_progress(progress), vertices=data.vertices,
                total_edges=data.total,
            )
        return cls(path, keep)

    # -- facts --------------------------------------------------------------------------

    @property
    def num_vertices(self) -> int:
        return int(self._manifest["vertices"])

    @property
    def num_edges(self) -> int:
        return int(self._manifest["edges"])

    @property
    def directed(self) -> bool:
        return bool(self._manifest["directed"])

    @property
    def weighted(self) -> bool:
        return self._manifest.get("weights") is not None

    def info(self) -> Dict[str, Any]:
        """The store's manifest: counts, id type, layouts and their sizes."""
        return dict(self._manifest)

    # -- the graph itself, out to numpy, scipy and networkx --------------------------------

    def vertices(self) -> Any:
        """Every vertex's original id, ascending (a numpy uint64 array, or a list of str)."""
        with native_errors():
            return _native.vertices(self.path)

    def edges(self, chunk_size: int = 1 << 20) -> Iterator[Tuple[Any, Any, Optional[np.ndarray]]]:
        """The edges, streamed from disk in chunks of about ``chunk_size`` arcs: an iterator of
        ``(src, dst, weights or None)`` in original ids (numpy arrays; lists of str for string
        ids). An undirected graph gives each edge once.

        >>> g = Graph.from_edges([1, 1, 2], [2, 3, 3])
        >>> [(s.tolist(), d.tolist()) for s, d, _ in g.edges()]
        [([1, 1, 2], [2, 3, 3])]
        """
        if not _is_int(chunk_size) or chunk_size < 1:
            raise InvalidParameter(f"chunk_size must be a positive integer, got {chunk_size!r}")
        with native_errors():
            reader = _native.EdgeReader(self.path)
        while True:
            with native_errors():
                chunk = reader.read(chunk_size)
            if chunk is None:
                return
            yield chunk

    def degree(self) -> Result:
        """Degrees as a :class:`Result`: column ``degree`` (for a directed graph in + out, as
        networkx's ``G.degree``), and for a directed graph ``out_degree`` and ``in_degree``.

        >>> Graph.from_edges([1, 1, 2], [2, 3, 3]).degree().to_dict("in_degree")
        {1: 0, 2: 1, 3: 2}
        """
        with native_errors():
            ids, out, into = _native.degrees(self.path)
        columns = [("degree", "count", out if into is None else out + into)]
        if into is not None:
            columns += [("out_degree", "count", out), ("in_degree", "count", into)]
        return Result("degree", {"ids": ids, "columns": columns, "stats": "{}", "summary": "{}"})

    def to_scipy(self, format: str = "csr") -> Any:
        """The adjacency matrix as a scipy.sparse array (``format``: ``"csr"``, ``"csc"``,
        ``"coo"``...): row and column i are the vertex ``vertices()[i]``; entries are the
        weights (1 unweighted; parallel arcs add up). Undirected graphs give a symmetric
        matrix.

        >>> Graph.from_edges([1, 2], [2, 3], weights=[0.5, 2.0]).to_scipy().toarray().tolist()
        [[0.0, 0.5, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
        """
        sparse = _inputs.optional("scipy.sparse", "Graph.to_scipy")
        ids = self.vertices()
        position = _positions(ids)
        rows, cols, vals = [], [], []
        for src, dst, w in self.edges():
            r, c = position(src), position(dst)
            v = np.ones(len(r)) if w is None else w
            rows.append(r)
            cols.append(c)
            vals.append(v)
            if not self.directed:  # the other direction of every edge but self-loops
                off = r != c
                rows.append(c[off])
                cols.append(r[off])
                vals.append(v[off])
        n = len(ids)
        cat = (lambda xs, t: np.concatenate(xs).astype(t) if xs else np.zeros(0, dtype=t))
        matrix = sparse.coo_array((cat(vals, np.float64), (cat(rows, np.int64), cat(cols, np.int64))), shape=(n, n))
        return matrix.asformat(format)

    def to_networkx(self, weight: str = "weight") -> Any:
        """A networkx ``DiGraph`` (``Graph`` when undirected) with every vertex and edge; the
        weights as the edge attribute ``weight``. For graphs that fit in memory.

        >>> sorted(Graph.from_edges([1, 2], [2, 3]).to_networkx().edges)
        [(1, 2), (2, 3)]
        """
        nx = _inputs.optional("networkx", "Graph.to_networkx")
        G = nx.DiGraph() if self.directed else nx.Graph()
        ids = self.vertices()
        G.add_nodes_from(ids.tolist() if isinstance(ids, np.ndarray) else ids)
        for src, dst, w in self.edges():
            us = src.tolist() if isinstance(src, np.ndarray) else src
            vs = dst.tolist() if isinstance(dst, np.ndarray) else dst
            if w is None:
                G.add_edges_from(zip(us, vs))
            else:
                G.add_weighted_edges_from(zip(us, vs, w.tolist()), weight=weight)
        return G

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"<outcore.Graph {self.path}: {self.num_vertices} vertices, {self.num_edges} edges, {kind}>"

    # -- algorithms ---------------------------------------------------------------------

    def run(self, algorithm: str, *, engine: str = "auto", memory: Optional[str] = None,
            progress: ProgressArg = None, engine_options: Optional[dict] = None,
            explain: bool = False, **params: Any) -> Result:
        """Runs any algorithm by name (see :func:`outcore.algorithms`).

        ``explain=True`` prints the planner's table (also kept as ``Result.explanation``).
        """
        _check_params(algorithm, params)
        with native_errors():
            raw = _native.run(self.path, algorithm, params, engine=engine, memory=_memory(memory),
                              progress=_progress(progress), engine_options=engine_options)
        result = Result(algorithm, raw)
        if explain and result.explanation:
            print(result.explanation)
        return result

    def pagerank(self, iterations: int = 10, damping: float = 0.85, **kw: Any) -> Result:
        """Graphalytics PageRank with a fixed number of iterations.

        >>> g = Graph.from_edges([1, 2, 3], [2, 3, 1])
        >>> pr = g.pagerank(iterations=10, progress=False)
        >>> [round(x, 6) for x in pr.values.tolist()]
        [0.333333, 0.333333, 0.333333]
        >>> pr.stats["iterations"]
        10
        """
        return self.run("pr", iterations=iterations, damping=damping, **kw)

    def pagerank_delta(self, tolerance: Optional[float] = None, damping: float = 0.85, **kw: Any) -> Result:
        """Convergent accumulation-based PageRank (no sink redistribution)."""
        return self.run("pr-delta", tolerance=tolerance, damping=damping, **kw)

    def bfs(self, source: Any, **kw: Any) -> Result:
        """Hop depth from ``source``; unreachable vertices get 9223372036854775807."""
        return self.run("bfs", source=source, **kw)

    def bfs_parents(self, source: Any, **kw: Any) -> Result:
        """A BFS tree from ``source`` along out-edges: columns ``depth`` (hops, as :meth:`bfs`)
        and ``parent`` (an original id). Among the vertices one level up that reach a vertex,
        its parent is the one of smallest original id, so every engine gives the same tree.
        The source and unreachable vertices are their own parent.

        >>> g = Graph.from_edges([1, 1, 2, 3], [2, 3, 4, 4])
        >>> g.bfs_parents(1, progress=False).to_dict("parent")
        {1: 1, 2: 1, 3: 1, 4: 2}
        """
        return self.run("bfs-parents", source=source, **kw)

    def core_number(self, **kw: Any) -> Result:
        """Core numbers (k-core decomposition, directions ignored; networkx ``core_number``):
        the largest k such that the vertex lies in a subgraph where every vertex has degree
        at least k. ``summary["degeneracy"]`` is the largest core number.

        >>> g = Graph.from_edges([1, 1, 2, 3], [2, 3, 3, 4], directed=False)
        >>> g.core_number(progress=False).to_dict()
        {1: 2, 2: 2, 3: 2, 4: 1}
        """
        return self.run("kcore", **kw)

    def louvain(self, resolution: float = 1.0, threshold: float = 1e-7, max_level: Optional[int] = None,
                seed: Optional[int] = None, **kw: Any) -> Result:
        """Louvain communities (Blondel et al. 2008; networkx ``louvain_communities``) of an
        undirected graph, weights counted when the store has them: each vertex's label is the
        smallest original id of its community; ``summary["modularity"]`` is the partition's
        modularity with ``resolution``. ``seed`` shuffles the order of the in-memory levels;
        the result is deterministic for a given seed. Directed graphs are refused.

        >>> g = Graph.from_edges([1, 1, 2, 4, 4, 5, 3], [2, 3, 3, 5, 6, 6, 4], directed=False)
        >>> g.louvain(progress=False).to_dict()
        {1: 1, 2: 1, 3: 1, 4: 4, 5: 4, 6: 4}
        """
        return self.run("louvain", resolution=resolution, threshold=threshold, max_level=max_level, seed=seed, **kw)

    def sssp(self, source: Any, **kw: Any) -> Result:
        """Weighted shortest-path distances from ``source``; unreachable: inf.

        >>> g = Graph.from_edges(["a", "a", "b"], ["b", "c", "c"], weights=[1.0, 5.0, 1.0])
        >>> g.sssp("a", progress=False).to_dict()
        {'a': 0.0, 'b': 1.0, 'c': 2.0}
        """
        return self.run("sssp", source=source, **kw)

    def wcc(self, **kw: Any) -> Result:
        """Weakly connected components; the label is the smallest original id inside.

        >>> g = Graph.from_edges([5, 7, 9], [6, 5, 10])
        >>> g.wcc(progress=False).to_dict()
        {5: 5, 6: 5, 7: 5, 9: 9, 10: 9}
        """
        return self.run("wcc", **kw)

    def cdlp(self, iterations: int = 10, **kw: Any) -> Result:
        """Community detection by label propagation (Graphalytics)."""
        return self.run("cdlp", iterations=iterations, **kw)

    def kmeans(self, k: int = 2, max_iterations: int = 100, seed: Optional[int] = None, **kw: Any) -> Result:
        """k-means (Lloyd) over points stored as arcs ``v -> j`` with weight ``x_j`` per
        dimension ``j``; the cluster index (0..k) per point. The first k points are the initial
        centres unless ``seed`` samples them.

        >>> g = Graph.from_edges([0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 0, 1, 0, 1, 0, 1],
        ...                      weights=[0.0, 0.0, 10.0, 10.0, 0.0, 1.0, 10.0, 11.0])
        >>> g.kmeans(k=2, progress=False).values.tolist()
        [0, 1, 0, 1]
        """
        return self.run("kmeans", k=k, iterations=max_iterations, seed=seed, **kw)

    def lcc(self, **kw: Any) -> Result:
        """Local clustering coefficient (Graphalytics definition)."""
        return self.run("lcc", **kw)

    def mssp(self, sources: Optional[Sequence[Any]] = None, num_sources: Optional[int] = None,
             seed: int = 1, **kw: Any) -> Result:
        """Multi-source shortest paths: one distance column per source (named by its id)."""
        return self.run("mssp", sources=list(sources) if sources else None, num_sources=num_sources, seed=seed, **kw)

    def betweenness(self, sources: Optional[Sequence[Any]] = None, num_sources: Optional[int] = None,
                    seed: int = 1, normalized: bool = True, **kw: Any) -> Result:
        """Betweenness centrality (Brandes) from sampled or given sources; exact when
        ``num_sources >= num_vertices``. Normalised like networkx's
        ``betweenness_centrality``."""
        return self.run("bc", sources=list(sources) if sources else None, num_sources=num_sources, seed=seed,
                        unnormalized=not normalized, **kw)

    def katz(self, alpha: float = 0.1, beta: float = 1.0, max_iter: int = 1000, tol: float = 1e-6,
             normalized: bool = True, **kw: Any) -> Result:
        """Katz centrality as networkx's ``katz_centrality`` computes it (unweighted): from 0,
        ``x = alpha * A^T x + beta`` until the L1 change is below ``len(G) * tol``, then scaled
        to unit norm unless ``normalized=False``. Fails (``ValueError``) when ``max_iter``
        updates do not converge (``alpha`` must be below 1 / the largest eigenvalue)."""
        return self.run("katz", alpha=alpha, beta=beta, iterations=max_iter, tolerance=tol,
                        unnormalized=not normalized, **kw)

    def eigenvector(self, max_iter: int = 100, tol: float = 1e-6, weighted: bool = False, **kw: Any) -> Result:
        """Eigenvector centrality as networkx's ``eigenvector_centrality`` computes it: power
        iteration on ``A^T + I`` from ``1/len(G)``, each update scaled to unit norm, until the L1
        change is below ``len(G) * tol``. ``weighted=True`` uses the store's weights (networkx's
        ``weight="weight"``). Fails (``OutcoreError``, "did not converge") when ``max_iter``
        updates are not enough."""
        return self.run("eigenvector", iterations=max_iter, tolerance=tol, weighted=weighted, **kw)

    def hits(self, max_iter: int = 100, tol: float = 1e-8, normalized: bool = True, weighted: bool = False,
             **kw: Any) -> Result:
        """HITS hubs and authorities as networkx's power iteration computes them: from
        ``h = 1/len(G)``, ``a = A^T h`` and ``h = A a``, each scaled by its maximum, until the L1
        change of ``h`` is below ``tol``; then each divided by its sum unless
        ``normalized=False``. ``weighted=True`` uses the store's weights. The result has two
        columns, ``hub`` and ``authority``. Fails (``OutcoreError``, "did not converge") when
        ``max_iter`` steps are not enough."""
        return self.run("hits", iterations=max_iter, tolerance=tol, unnormalized=not normalized, weighted=weighted,
                        **kw)

    def diameter(self, sweeps: int = 4, seed: int = 1, **kw: Any) -> int:
        """Approximate diameter (a lower bound) from repeated BFS sweeps."""
        r = self.run("diameter", sweeps=sweeps, seed=seed, **kw)
        return int(r.summary["diameter_lower_bound"])

    def msbfs(self, sources: Optional[Sequence[Any]] = None, num_sources: Optional[int] = None,
              seed: int = 1, **kw: Any) -> Result:
        """Multi-source BFS (64 sources at a time): per vertex, how many sources reach it and
        the sum of their distances."""
        return self.run("msbfs", sources=list(sources) if sources else None, num_sources=num_sources, seed=seed, **kw)

    def reorder(self, order: str, *, seed: int = 1, memory: Optional[str] = None,
                progress: ProgressArg = None) -> "Graph":
        """Renumbers the store (``degree``, ``random``, ``norder``); results stay in original ids."""
        with native_errors():
            _native.reorder(self.path, order, seed=seed, memory=_memory(memory), progress=_progress(progress))
            self._manifest = json.loads(_native.store_manifest(self.path))
        return self


def _positions(ids: Any):
    """original ids → row numbers (``ids`` ascending: a numpy array, or a list of str)."""
    if isinstance(ids, np.ndarray):
        return lambda values: np.searchsorted(ids, values)
    index = {v: i for i, v in enumerate(ids)}
    return lambda values: np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))


def _is_table(data: Any) -> bool:
    """A table-like input whose columns ``src=``/``dst=``/``weight=`` name (or a matrix or
    graph), rather than an array of ids."""
    if isinstance(data, (str, os.PathLike)):
        return True
    module = type(data).__module__.split(".")[0]
    return module in ("pandas", "pyarrow", "scipy", "networkx") and not hasattr(data, "dtype")


def _store_path(store: Optional[PathLike], overwrite: bool = False):
    if store is not None:
        path = os.fspath(store)
        if os.path.exists(path):
            if not overwrite:
                raise StoreError(f"store {path} exists; pass overwrite=True to replace it")
            import shutil

            shutil.rmtree(path)
        return path, None
    keep = tempfile.TemporaryDirectory(prefix="outcore-")
    return os.path.join(keep.name, "store"), keep


# RMAT-32 is 4 G vertices and 68 G edges at the default edge factor: larger is a typo.
MAX_RMAT_SCALE = 32

# Parameters each algorithm reads (names as in Graph.run); others are refused, not ignored.
ALGORITHM_PARAMS: Dict[str, frozenset] = {
    "bfs": frozenset({"source"}),
    "bfs-parents": frozenset({"source"}),
    "kcore": frozenset(),
    "sssp": frozenset({"source"}),
    "pr": frozenset({"iterations", "damping"}),
    "pr-delta": frozenset({"tolerance", "damping", "iterations"}),
    "wcc": frozenset(),
    "lcc": frozenset(),
    "tc": frozenset(),
    "cdlp": frozenset({"iterations"}),
    "diameter": frozenset({"sweeps", "seed"}),
    "bc": frozenset({"sources", "num_sources", "seed", "unnormalized"}),
    "katz": frozenset({"alpha", "beta", "tolerance", "iterations", "unnormalized"}),
    "eigenvector": frozenset({"tolerance", "iterations", "weighted"}),
    "hits": frozenset({"tolerance", "iterations", "unnormalized", "weighted"}),
    "msbfs": frozenset({"sources", "num_sources", "seed"}),
    "mssp": frozenset({"sources", "num_sources", "seed", "source"}),
    "kmeans": frozenset({"k", "iterations", "seed"}),
    "louvain": frozenset({"resolution", "threshold", "max_level", "seed"}),
}
_COUNTS = ("iterations", "num_sources", "sweeps", "k", "seed", "max_level")


def _check_params(algorithm: str, params: Dict[str, Any]) -> None:
    """Refuses unknown algorithms, parameters the algorithm would ignore, and bad counts,
    before any work."""
    known = {name for name, _ in _native.algorithms()}
    if algorithm not in known:
        raise InvalidParameter(f"unknown algorithm {algorithm!r} (known: {', '.join(sorted(known))})")
    allowed = ALGORITHM_PARAMS.get(algorithm)
    given = {k for k, v in params.items() if v is not None and v is not False}
    if allowed is not None and given - allowed:
        extra = ", ".join(sorted(given - allowed))
        raise InvalidParameter(f"{algorithm} does not take {extra} (it takes: {', '.join(sorted(allowed)) or 'nothing'})")
    for key in _COUNTS:
        value = params.get(key)
        if value is not None and (not _is_int(value) or value < 0):
            raise InvalidParameter(f"{key} must be a non-negative integer, got {value!r}")
    resolution = params.get("resolution")
    if resolution is not None and not float(resolution) > 0.0:
        raise InvalidParameter(f"resolution must be a positive number, got {resolution!r}")
    threshold = params.get("threshold")
    if threshold is not None and not float(threshold) >= 0.0:
        raise InvalidParameter(f"threshold must be 0 or more, got {threshold!r}")
    if params.get("max_level") == 0:
        raise InvalidParameter("max_level must be a positive integer, got 0")
    damping = params.get("damping")
    if damping is not None and not 0.0 <= float(damping) <= 1.0:
        raise InvalidParameter(f"damping must be in [0, 1], got {damping!r}")


def _is_int(value: Any) -> bool:
    """An integer (Python or numpy), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _memory(memory: Any) -> Optional[str]:
    """``memory=`` as a size string ("512MiB") or a number of bytes."""
    if memory is None or isinstance(memory, str):
        return memory
    if isinstance(memory, (int, np.integer)) and not isinstance(memory, bool) and memory > 0:
        return f"{int(memory)}B"
    raise InvalidParameter(f"memory must be a size such as '512MiB' or a positive number of bytes, got {memory!r}")


def open(path: PathLike) -> Graph:  # noqa: A001 - mirrors the usual `open(path)` of storage libraries
    """Opens an existing store."""
    return Graph.open(path)


def import_edges(
    inputs: Union[PathLike, Sequence[PathLike]],
    store: PathLike,
    *,
    format: str = "auto",
    undirected: Optional[bool] = None,
    weighted: Optional[bool] = None,
    memory: Optional[str] = None,
    order: Optional[str] = None,
    dedup: bool = False,
    drop_self_loops: bool = False,
    ids: str = "u64",
    skip_bad_lines: bool = False,
    src_col: Optional[str] = None,
    dst_col: Optional[str] = None,
    weight_col: Optional[str] = None,
    progress: ProgressArg = None,
) -> Graph:
    """Imports edge files (SNAP/TSV, CSV, Matrix Market, Graphalytics, binary, Parquet;
    gzip/zstd detected) into a store within ``memory`` and returns the Graph, natively (as
    ``outcore import`` does). ``src_col``/``dst_col``/``weight_col`` name the columns of a CSV
    file with a header or of a Parquet file."""
    paths: List[str] = [os.fspath(inputs)] if isinstance(inputs, (str, os.PathLike)) else [os.fspath(p) for p in inputs]
    with native_errors():
        _native.import_edges(
            paths, os.fspath(store), format=format, undirected=undirected, weighted=weighted, memory=_memory(memory),
            dedup=dedup, drop_self_loops=drop_self_loops, ids=ids, skip_bad_lines=skip_bad_lines,
            src_col=src_col, dst_col=dst_col, weight_col=weight_col, progress=_progress(progress),
        )
    graph = Graph(store)
    if order not in (None, "none"):
        graph.reorder(order, memory=memory, progress=progress)
    return graph


def generate_rmat(
    scale: int,
    edge_factor: int = 16,
    seed: int = 1,
    path: Optional[PathLike] = None,
    *,
    weights: bool = False,
    memory: Optional[str] = None,
    progress: ProgressArg = None,
) -> Graph:
    """Generates a Graph500 RMAT graph (2**scale vertices, edge_factor * 2**scale edges)
    straight into a store (a temporary one when ``path`` is None)."""
    if not _is_int(scale) or not 1 <= scale <= MAX_RMAT_SCALE:
        raise InvalidParameter(f"generate_rmat: scale must be an integer in 1..{MAX_RMAT_SCALE}, got {scale!r}")
    if not _is_int(edge_factor) or edge_factor < 1:
        raise InvalidParameter(f"generate_rmat: edge_factor must be a positive integer, got {edge_factor!r}")
    store, keep = _store_path(path)
    with native_errors():
        _native.generate_rmat(scale, edge_factor, seed, store, weights=weights, memory=_memory(memory),
                              progress=_progress(progress))
    return Graph(store, keep)


def algorithms() -> List[tuple]:
    """``[(name, description), ...]`` of every algorithm the engines offer."""
    return _native.algorithms()
