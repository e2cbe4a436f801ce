"""The Pythonic API over the native module: :class:`Graph` and :class:`Result`."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import _native

PathLike = Union[str, "os.PathLike[str]"]


def _progress(progress: Optional[bool]) -> bool:
    """Progress bars by default only when stderr is a terminal."""
    if progress is None:
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return progress


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
        there is a single one).

        >>> g = Graph.from_edges([1, 2], [2, 3])
        >>> g.bfs(1, progress=False).to_pandas()
           vertex  value
        0       1      0
        1       2      1
        2       3      2
        """
        import pandas as pd

        frame = {"vertex": self.ids}
        if len(self.columns) == 1:
            frame["value"] = self.values
        else:
            frame.update(self.columns)
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
        results = (self,) + others
        engines = [r.stats.get("engine", "?") for r in results]
        labels = [e if engines.count(e) == 1 else f"{e} #{k + 1}" for k, e in enumerate(engines)]
        _native.run_report([(label, json.dumps(r.stats)) for label, r in zip(labels, results)], os.fspath(path))
        return os.fspath(path)


class Graph:
    """A graph store on disk. Opening is cheap: nothing is loaded until an algorithm runs.

    Every algorithm method accepts ``engine=`` (``"auto"``, ``"inmem"``, ...), ``memory=``
    (a budget such as ``"512MiB"``; default a quarter of RAM), ``progress=`` (default: when
    interactive) and ``engine_options=``, a dict of the engine's CLI flags by name: for the
    shards engine ``shards``, ``dynamic`` (``"off"``, ``"ads"``, ``"ods"``),
    ``shadow_edge_share``, ``delay_buffer`` and ``delayed_delivery`` (``"adjacency"``,
    ``"shadow"``).
    """

    def __init__(self, path: PathLike, _keepalive: Any = None):
        self.path = os.fspath(path)
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
        src: Any,
        dst: Any = None,
        weights: Any = None,
        *,
        store: Optional[PathLike] = None,
        directed: bool = True,
        memory: Optional[str] = None,
        dedup: bool = False,
        drop_self_loops: bool = False,
        overwrite: bool = False,
        progress: Optional[bool] = None,
    ) -> "Graph":
        """Builds a store from edge arrays: numpy arrays / sequences of ids, or a pandas
        DataFrame as ``src`` with columns ``src``/``dst`` (or ``source``/``target``) and an
        optional ``weight`` column. Ids may be integers or strings.

        With ``store=None`` the store lives in a temporary directory removed with the Graph; an
        existing ``store`` is replaced only with ``overwrite=True``.
        """
        if dst is None:
            src, dst, weights = _columns_of_frame(src, weights)
        src_list, ids = _id_list(src)
        dst_list, dst_ids = _id_list(dst)
        if ids != dst_ids:
            raise _native.InputError(
                f"from_edges: src ids are {_ID_WORDS[ids]} but dst ids are {_ID_WORDS[dst_ids]}; "
                "give both as integers or both as strings"
            )
        w = None if weights is None else np.asarray(weights, dtype=np.float64).tolist()
        path, keep = _store_path(store, overwrite)
        _native.from_edges(
            src_list, dst_list, path, weights=w, directed=directed, memory=_memory(memory), ids=ids,
            dedup=dedup, drop_self_loops=drop_self_loops, progress=_progress(progress),
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

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"<outcore.Graph {self.path}: {self.num_vertices} vertices, {self.num_edges} edges, {kind}>"

    # -- algorithms ---------------------------------------------------------------------

    def run(self, algorithm: str, *, engine: str = "auto", memory: Optional[str] = None,
            progress: Optional[bool] = None, engine_options: Optional[dict] = None,
            explain: bool = False, **params: Any) -> Result:
        """Runs any algorithm by name (see :func:`outcore.algorithms`).

        ``explain=True`` prints the planner's table (also kept as ``Result.explanation``).
        """
        _check_params(algorithm, params)
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
                progress: Optional[bool] = None) -> "Graph":
        """Renumbers the store (``degree``, ``random``, ``norder``); results stay in original ids."""
        _native.reorder(self.path, order, seed=seed, memory=_memory(memory), progress=_progress(progress))
        self._manifest = json.loads(_native.store_manifest(self.path))
        return self


def _columns_of_frame(frame: Any, weights: Any):
    columns = list(getattr(frame, "columns", []))
    for s, d in (("src", "dst"), ("source", "target"), ("from", "to")):
        if s in columns and d in columns:
            w = weights
            if w is None and "weight" in columns:
                w = frame["weight"].to_numpy()
            return frame[s].to_numpy(), frame[d].to_numpy(), w
    raise _native.InputError(
        "from_edges: give src and dst arrays, or a DataFrame with src/dst (or source/target) columns"
    )


_ID_WORDS = {"u64": "integers", "string": "strings"}


def _id_list(values: Any):
    # numpy turns [1, "b"] into strings: look at a plain sequence's items before it does
    arr = np.asarray(values, dtype=object) if isinstance(values, (list, tuple)) else np.asarray(values)
    if arr.dtype == object and arr.size:
        kinds = {isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in arr.tolist()}
        if kinds == {True}:
            arr = arr.astype(np.int64)
        elif len(kinds) > 1:
            raise _native.InputError("from_edges: vertex ids mix integers and strings; give one kind")
        else:
            arr = arr.astype(str)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
            raise _native.InputError("from_edges: vertex ids must be non-negative integers or strings")
        return arr.astype(np.uint64).tolist(), "u64"
    if arr.dtype.kind == "f":
        raise _native.InputError("from_edges: vertex ids are floats; give integers or strings")
    return [str(x) for x in arr.tolist()], "string"


def _store_path(store: Optional[PathLike], overwrite: bool = False):
    if store is not None:
        path = os.fspath(store)
        if os.path.exists(path):
            if not overwrite:
                raise _native.StoreError(f"store {path} exists; pass overwrite=True to replace it")
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
    "msbfs": frozenset({"sources", "num_sources", "seed"}),
    "mssp": frozenset({"sources", "num_sources", "seed", "source"}),
    "kmeans": frozenset({"k", "iterations", "seed"}),
}
_COUNTS = ("iterations", "num_sources", "sweeps", "k", "seed")


def _check_params(algorithm: str, params: Dict[str, Any]) -> None:
    """Refuses unknown algorithms, parameters the algorithm would ignore, and bad counts,
    before any work."""
    known = {name for name, _ in _native.algorithms()}
    if algorithm not in known:
        raise _native.InputError(f"unknown algorithm {algorithm!r} (known: {', '.join(sorted(known))})")
    allowed = ALGORITHM_PARAMS.get(algorithm)
    given = {k for k, v in params.items() if v is not None and v is not False}
    if allowed is not None and given - allowed:
        extra = ", ".join(sorted(given - allowed))
        raise _native.InputError(f"{algorithm} does not take {extra} (it takes: {', '.join(sorted(allowed)) or 'nothing'})")
    for key in _COUNTS:
        value = params.get(key)
        if value is not None and (not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0):
            raise _native.InputError(f"{key} must be a non-negative integer, got {value!r}")
    damping = params.get("damping")
    if damping is not None and not 0.0 <= float(damping) <= 1.0:
        raise _native.InputError(f"damping must be in [0, 1], got {damping!r}")


def _memory(memory: Any) -> Optional[str]:
    """``memory=`` as a size string ("512MiB") or a number of bytes."""
    if memory is None or isinstance(memory, str):
        return memory
    if isinstance(memory, (int, np.integer)) and not isinstance(memory, bool) and memory > 0:
        return f"{int(memory)}B"
    raise _native.InputError(f"memory must be a size such as '512MiB' or a positive number of bytes, got {memory!r}")


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
    progress: Optional[bool] = None,
) -> Graph:
    """Imports edge files (SNAP/TSV, CSV, Matrix Market, Graphalytics, binary; gzip/zstd
    detected) into a store within ``memory`` and returns the Graph."""
    paths: List[str] = [os.fspath(inputs)] if isinstance(inputs, (str, os.PathLike)) else [os.fspath(p) for p in inputs]
    _native.import_edges(
        paths, os.fspath(store), format=format, undirected=undirected, weighted=weighted, memory=_memory(memory),
        dedup=dedup, drop_self_loops=drop_self_loops, ids=ids, skip_bad_lines=skip_bad_lines,
        progress=_progress(progress),
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
    progress: Optional[bool] = None,
) -> Graph:
    """Generates a Graph500 RMAT graph (2**scale vertices, edge_factor * 2**scale edges)
    straight into a store (a temporary one when ``path`` is None)."""
    if not isinstance(scale, int) or not 1 <= scale <= MAX_RMAT_SCALE:
        raise _native.InputError(f"generate_rmat: scale must be an integer in 1..{MAX_RMAT_SCALE}, got {scale!r}")
    if not isinstance(edge_factor, int) or edge_factor < 1:
        raise _native.InputError(f"generate_rmat: edge_factor must be a positive integer, got {edge_factor!r}")
    store, keep = _store_path(path)
    _native.generate_rmat(scale, edge_factor, seed, store, weights=weights, memory=_memory(memory), progress=_progress(progress))
    return Graph(store, keep)


def algorithms() -> List[tuple]:
    """``[(name, description), ...]`` of every algorithm the engines offer."""
    return _native.algorithms()
