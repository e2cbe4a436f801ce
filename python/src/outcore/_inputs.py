"""Edge inputs for :meth:`outcore.Graph.from_edges`, turned into chunks the native importer
pulls one at a time: numpy arrays and sequences, pandas DataFrames, pyarrow Tables, Parquet and
Arrow IPC files, scipy.sparse matrices and networkx graphs. Only a chunk is copied at a time,
so the importer stays within ``memory=`` beside the caller's own arrays.

A chunk is ``(src, dst, weights or None)``: numpy uint64 arrays for integer ids, lists of str
for string ids.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np

from ._errors import InputError, InvalidParameter, MissingDependency

Chunk = Tuple[Any, Any, Optional[np.ndarray]]

# Edges per chunk: a 1/1024 share of the budget (about 60 bytes per edge in flight between
# Python and the importer), within these bounds.
MIN_CHUNK, MAX_CHUNK, DEFAULT_CHUNK = 1 << 12, 1 << 20, 1 << 18
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def chunk_edges(memory: Any) -> int:
    """Edges per chunk for a ``memory=`` budget (a size string or bytes)."""
    if isinstance(memory, str):
        m = re.fullmatch(r"\s*([0-9.]+)\s*([kmgtKMGT]?)(?:i?[bB])?\s*", memory)
        budget = float(m.group(1)) * _UNITS[m.group(2).lower()] if m else None
    else:
        budget = memory
    if not budget:
        return DEFAULT_CHUNK
    return int(min(MAX_CHUNK, max(MIN_CHUNK, budget // 1024)))


def optional(module: str, purpose: str) -> Any:
    """Imports an optional dependency, or says which package to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise MissingDependency(f"{purpose} needs {package}: pip install {package}") from None


@dataclass
class EdgeInput:
    """Edges ready for the importer: a chunk factory plus what the store needs to know."""

    chunks: Callable[[], Iterator[Chunk]]
    ids: str  # "u64" or "string"
    weighted: bool
    total: int = 0  # edges, 0 when unknown
    vertices: Optional[Any] = None  # ids that must exist even when isolated
    directed: Optional[bool] = None  # fixed by the input (networkx graphs)
    extra: dict = field(default_factory=dict)


# -- id columns ----------------------------------------------------------------------------

_ID_WORDS = {"u64": "integers", "string": "strings"}


def id_kind(values: Any, what: str) -> Tuple[np.ndarray, str]:
    """A column as a numpy array and its id kind, checked: non-negative integers or strings."""
    # numpy turns [1, "b"] into strings: look at a plain sequence's items before it does
    arr = np.asarray(values, dtype=object) if isinstance(values, (list, tuple)) else np.asarray(values)
    if arr.dtype == object and arr.size:
        kinds = {isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in arr.tolist()}
        if len(kinds) > 1:
            raise InputError(f"from_edges: {what} ids mix integers and strings; give one kind")
        arr = arr.astype(np.int64) if kinds == {True} else arr.astype(str)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
            raise InputError(f"from_edges: {what} ids must be non-negative integers or strings")
        return arr, "u64"
    if arr.dtype.kind == "b":
        raise InputError(f"from_edges: {what} ids are booleans; give integers or strings")
    if arr.dtype.kind == "f":
        raise InputError(f"from_edges: {what} ids are floats; give integers or strings")
    return arr, "string"


def _same_kind(src_kind: str, dst_kind: str) -> str:
    if src_kind != dst_kind:
        raise InputError(
            f"from_edges: src ids are {_ID_WORDS[src_kind]} but dst ids are {_ID_WORDS[dst_kind]}; "
            "give both as integers or both as strings"
        )
    return src_kind


def _as_chunk_ids(values: np.ndarray, kind: str) -> Any:
    if kind == "u64":
        return np.ascontiguousarray(values, dtype=np.uint64)
    return [str(x) for x in values.tolist()]


def from_arrays(src: Any, dst: Any, weights: Any, chunk: int) -> EdgeInput:
    """Edges from two id columns and optional weights (numpy arrays or sequences)."""
    s, s_kind = id_kind(src, "src")
    d, d_kind = id_kind(dst, "dst")
    kind = _same_kind(s_kind, d_kind) if len(s) and len(d) else (s_kind if len(s) else d_kind)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    if len(s) != len(d) or (w is not None and len(w) != len(s)):
        raise InvalidParameter(
            f"from_edges: src, dst (and weights) must have the same length, got {len(s)}, {len(d)}"
            + ("" if w is None else f", {len(w)}")
        )

    def chunks() -> Iterator[Chunk]:
        for at in range(0, len(s), chunk):
            end = at + chunk
            yield (_as_chunk_ids(s[at:end], kind), _as_chunk_ids(d[at:end], kind),
                   None if w is None else np.ascontiguousarray(w[at:end]))

    return EdgeInput(chunks, kind, w is not None, len(s))


# -- tables: pandas, pyarrow, Parquet and Arrow IPC files -----------------------------------

_DEFAULT_COLUMNS = (("src", "dst"), ("source", "target"), ("from", "to"), ("u", "v"))


def _pick_columns(names: List[str], src: Optional[str], dst: Optional[str], weight: Optional[str],
                  where: str) -> Tuple[str, str, Optional[str]]:
    """The source, destination and weight columns: as named, else the usual names."""
    if src is None or dst is None:
        for s, d in _DEFAULT_COLUMNS:
            if s in names and d in names:
                src, dst = src or s, dst or d
                break
    if src is None or dst is None:
        raise InvalidParameter(
            f"from_edges: {where} has columns {names}; name the edge columns with src= and dst= "
            "(defaults: src/dst, source/target, from/to, u/v)"
        )
    for given in (src, dst, weight):
        if given is not None and given not in names:
            raise InvalidParameter(f"from_edges: {where} has no column {given!r} (columns: {names})")
    if weight is None and "weight" in names:
        weight = "weight"
    return src, dst, weight


def from_pandas(frame: Any, src: Optional[str], dst: Optional[str], weight: Optional[str], chunk: int) -> EdgeInput:
    names = [str(c) for c in frame.columns]
    s, d, w = _pick_columns(names, src, dst, weight, "the DataFrame")
    return from_arrays(frame[s].to_numpy(), frame[d].to_numpy(),
                       None if w is None else frame[w].to_numpy(dtype=np.float64), chunk)


def _batch_columns(batch: Any, s: str, d: str, w: Optional[str]) -> Chunk:
    def ids(name: str) -> Any:
        column = batch.column(name)
        try:
            values = column.to_numpy(zero_copy_only=False)
        except TypeError:
            values = column.to_numpy()
        return values

    s_values, s_kind = id_kind(ids(s), "src")
    d_values, d_kind = id_kind(ids(d), "dst")
    kind = _same_kind(s_kind, d_kind)
    weights = None if w is None else np.ascontiguousarray(batch.column(w).to_numpy(zero_copy_only=False),
                                                          dtype=np.float64)
    return _as_chunk_ids(s_values, kind), _as_chunk_ids(d_values, kind), weights


def _arrow_kind(schema: Any, name: str) -> str:
    pa = optional("pyarrow", "Arrow input")
    t = schema.field(name).type
    if pa.types.is_integer(t):
        return "u64"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    raise InputError(f"from_edges: column {name!r} is {t}; vertex ids must be integers or strings")


def from_batches(schema: Any, batches: Callable[[], Iterator[Any]], total: int, src: Optional[str],
                 dst: Optional[str], weight: Optional[str], where: str) -> EdgeInput:
    """Edges from Arrow record batches (a Table, a Parquet or an Arrow IPC file)."""
    s, d, w = _pick_columns(list(schema.names), src, dst, weight, where)
    kind = _same_kind(_arrow_kind(schema, s), _arrow_kind(schema, d))

    def chunks() -> Iterator[Chunk]:
        for batch in batches():
            if batch.num_rows:
                yield _batch_columns(batch, s, d, w)

    return EdgeInput(chunks, kind, w is not None, total)


def from_arrow_table(table: Any, src, dst, weight, chunk: int) -> EdgeInput:
    return from_batches(table.schema, lambda: iter(table.to_batches(max_chunksize=chunk)), table.num_rows,
                        src, dst, weight, "the Arrow table")


def from_file(path: str, src, dst, weight, chunk: int) -> EdgeInput:
    """A Parquet (.parquet, .pq) or Arrow IPC (.arrow, .feather, .ipc) file, read a batch at a
    time."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    suffix = os.path.splitext(path)[1].lower()
    if suffix in (".parquet", ".pq"):
        pq = optional("pyarrow.parquet", "Parquet input")
        meta = pq.ParquetFile(path)
        return from_batches(meta.schema_arrow, lambda: pq.ParquetFile(path).iter_batches(batch_size=chunk),
                            meta.metadata.num_rows, src, dst, weight, path)
    if suffix in (".arrow", ".feather", ".ipc"):
        ipc = optional("pyarrow.ipc", "Arrow IPC input")
        try:
            reader = ipc.open_file(path)
            return from_batches(reader.schema, lambda: (reader.get_batch(i) for i in range(reader.num_record_batches)),
                                0, src, dst, weight, path)
        except Exception:  # an IPC stream rather than a file
            schema = ipc.open_stream(path).schema
            return from_batches(schema, lambda: iter(ipc.open_stream(path)), 0, src, dst, weight, path)
    raise InvalidParameter(
        f"from_edges: {path} is not a Parquet or Arrow file (.parquet, .arrow, .feather); "
        "text edge lists go through outcore.import_edges"
    )


# -- scipy.sparse and networkx ---------------------------------------------------------------


def from_scipy(matrix: Any, chunk: int) -> EdgeInput:
    """A square sparse matrix: an arc i -> j of weight a_ij per stored entry; vertices 0..n-1
    (empty rows included). Unweighted when every stored entry is 1."""
    coo = matrix.tocoo()
    n, m = coo.shape
    if n != m:
        raise InvalidParameter(f"from_edges: the adjacency matrix must be square, got {n}x{m}")
    weights = np.asarray(coo.data, dtype=np.float64)
    unit = bool((weights == 1.0).all())
    edges = from_arrays(np.asarray(coo.row, dtype=np.uint64), np.asarray(coo.col, dtype=np.uint64),
                        None if unit else weights, chunk)
    edges.vertices = np.arange(n, dtype=np.uint64)
    return edges


def from_networkx(G: Any, weight: Optional[str], chunk: int) -> EdgeInput:
    """A networkx graph: its nodes (integers ≥ 0 or strings) and edges, ``weight`` the edge
    attribute to keep (None: unweighted; missing values are 1)."""
    if G.is_multigraph():
        raise InvalidParameter("from_networkx: multigraphs are not supported; convert with nx.DiGraph(G) or nx.Graph(G)")
    nodes, kind = id_kind(list(G), "node")
    keep_weight = weight is not None and any(weight in d for _, _, d in G.edges(data=True))

    def chunks() -> Iterator[Chunk]:
        src, dst, w = [], [], []
        for u, v, d in G.edges(data=True):
            src.append(u)
            dst.append(v)
            if keep_weight:
                w.append(float(d.get(weight, 1.0)))
            if len(src) == chunk:
                yield _networkx_chunk(src, dst, w, kind, keep_weight)
                src, dst, w = [], [], []
        if src:
            yield _networkx_chunk(src, dst, w, kind, keep_weight)

    edges = EdgeInput(chunks, kind, keep_weight, G.number_of_edges(),
                      vertices=_as_chunk_ids(nodes, kind), directed=G.is_directed())
    return edges


def _networkx_chunk(src, dst, w, kind, weighted) -> Chunk:
    as_ids = (lambda x: np.asarray(x, dtype=np.uint64)) if kind == "u64" else (lambda x: [str(n) for n in x])
    return as_ids(src), as_ids(dst), np.asarray(w, dtype=np.float64) if weighted else None


def edge_input(data: Any, dst: Any, weights: Any, src_col: Optional[str], dst_col: Optional[str],
               weight_col: Optional[str], chunk: int) -> EdgeInput:
    """Recognises the input of ``from_edges``."""
    if isinstance(data, (str, os.PathLike)):
        return from_file(os.fspath(data), src_col, dst_col, weight_col, chunk)
    module = type(data).__module__.split(".")[0]
    if module == "pandas" and hasattr(data, "columns"):
        return from_pandas(data, src_col, dst_col, weight_col, chunk)
    if module == "pyarrow" and hasattr(data, "schema"):
        if hasattr(data, "to_batches"):
            return from_arrow_table(data, src_col, dst_col, weight_col, chunk)
        return from_batches(data.schema, lambda: iter(data), 0, src_col, dst_col, weight_col, "the Arrow reader")
    if module == "scipy" and hasattr(data, "tocoo"):
        return from_scipy(data, chunk)
    if module == "networkx" and hasattr(data, "is_multigraph"):
        return from_networkx(data, weight_col or "weight", chunk)
    if dst is None:
        raise InvalidParameter(
            "from_edges: give src and dst arrays, or a table (pandas DataFrame, pyarrow Table, Parquet or "
            "Arrow file), a scipy.sparse matrix or a networkx graph"
        )
    return from_arrays(data, dst, weights, chunk)
