"""Type stubs for the pyo3 extension ``outcore._native`` (crates/outcore-py/src/lib.rs)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

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
    progress: bool = False,
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
    progress: bool = False,
    vertices: Optional[Sequence[Any]] = None,
) -> None: ...
def generate_rmat(
    scale: int,
    edge_factor: int,
    seed: int,
    store: _Path,
    weights: bool = False,
    memory: Optional[str] = None,
    progress: bool = False,
) -> None: ...
def reorder(store: _Path, order: str, seed: int = 1, memory: Optional[str] = None, progress: bool = False) -> None: ...
def store_manifest(store: _Path) -> str: ...
def run(
    store: _Path,
    algorithm: str,
    params: Dict[str, Any],
    engine: str = "auto",
    memory: Optional[str] = None,
    progress: bool = False,
    engine_options: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]: ...  # ids, columns, stats (JSON), summary (JSON), explanation (text or None)
def edges(store: _Path) -> Tuple[Any, Any, Optional[np.ndarray]]: ...
def vertices(store: _Path) -> Any: ...
def algorithms() -> List[Tuple[str, str]]: ...
def run_report(stats: List[Tuple[str, str]], output: _Path) -> None: ...
