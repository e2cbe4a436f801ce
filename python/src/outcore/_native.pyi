"""Type stubs for the pyo3 extension ``outcore._native`` (crates/outcore-py/src/lib.rs)."""

from os import PathLike
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

_Path = Union[str, "PathLike[str]"]

__version__: str

class OutcoreError(Exception): ...
class InputError(OutcoreError): ...
class StoreError(OutcoreError): ...
class MemoryBudgetError(OutcoreError): ...

def import_edges(
    inputs: Sequence[_Path],
    store: _Path,
    format: str = "auto",
    undirected: Optional[bool] = None,
    weighted: Optional[bool] = None,
    memory: Optional[str] = None,
    dedup: bool = False,
    drop_self_loops: bool = False,
    ids: str = "u64",
    skip_bad_lines: bool = False,
    src_col: Optional[str] = None,
    dst_col: Optional[str] = None,
    weight_col: Optional[str] = None,
    progress: Any = None,
) -> None: ...
def from_edges(
    src: Sequence[Any],
    dst: Sequence[Any],
    store: _Path,
    weights: Optional[Sequence[float]] = None,
    directed: bool = True,
    memory: Optional[str] = None,
    ids: str = "u64",
    dedup: bool = False,
    drop_self_loops: bool = False,
    progress: Any = None,
    vertices: Optional[Sequence[Any]] = None,
) -> None: ...
def generate_rmat(
    scale: int,
    edge_factor: int,
    seed: int,
    store: _Path,
    weights: bool = False,
    memory: Optional[str] = None,
    progress: Any = None,
) -> None: ...
def reorder(store: _Path, order: str, seed: int = 1, memory: Optional[str] = None, progress: Any = None) -> None: ...
def store_manifest(store: _Path) -> str: ...
def run(
    store: _Path,
    algorithm: str,
    params: Dict[str, Any],
    engine: str = "auto",
    memory: Optional[str] = None,
    progress: Any = None,
    engine_options: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]: ...  # ids, columns, stats (JSON), summary (JSON), explanation (text or None)
def edges(store: _Path) -> Tuple[Any, Any, Optional[np.ndarray]]: ...
def import_chunks(
    chunks: Iterable[Tuple[Any, Any, Optional[np.ndarray]]],
    store: _Path,
    weighted: bool,
    directed: bool = True,
    memory: Optional[str] = None,
    ids: str = "u64",
    dedup: bool = False,
    drop_self_loops: bool = False,
    progress: Any = None,  # None/False, True (stderr line) or callback(event, bar, label, position, total, unit, message)
    vertices: Optional[Sequence[Any]] = None,
    total_edges: int = 0,
) -> str: ...
def degrees(store: _Path) -> Tuple[Any, np.ndarray, Optional[np.ndarray]]: ...  # ids, out-degree, in-degree (directed)
def main(argv: List[str]) -> int: ...  # the outcore command line; returns the exit code

class EdgeReader:
    def __init__(self, store: _Path) -> None: ...
    def read(self, max_arcs: int) -> Optional[Tuple[Any, Any, Optional[np.ndarray]]]: ...
def vertices(store: _Path) -> Any: ...
def algorithms() -> List[Tuple[str, str]]: ...
def run_report(stats: List[Tuple[str, str]], output: _Path) -> None: ...
def run_report_render(stats: List[Tuple[str, str]]) -> Tuple[str, str]: ...
