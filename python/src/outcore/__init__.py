"""outcore: graph analytics for graphs larger than memory.

Import an edge list (or numpy arrays) into an on-disk store once, then run algorithms within a
memory budget. Results are numpy arrays keyed by the original vertex ids.

>>> import outcore, numpy as np, tempfile, os
>>> tmp = tempfile.mkdtemp()
>>> g = outcore.Graph.from_edges(np.array([1, 2, 3]), np.array([2, 3, 1]), store=os.path.join(tmp, "g"))
>>> g.num_vertices, g.num_edges, g.directed
(3, 3, True)
>>> g.bfs(1).to_dict()
{1: 0, 2: 1, 3: 2}
"""

from ._native import __version__
from ._errors import (
    BudgetError,
    InputError,
    Interrupted,
    InvalidParameter,
    MemoryBudgetError,
    MissingDependency,
    OutcoreError,
    StoreError,
)
from ._graph import Graph, Result, algorithms, generate_rmat, import_edges, open
from ._progress import set_progress

__all__ = [
    "Graph",
    "Result",
    "open",
    "import_edges",
    "generate_rmat",
    "algorithms",
    "set_progress",
    "OutcoreError",
    "InputError",
    "StoreError",
    "BudgetError",
    "MemoryBudgetError",
    "InvalidParameter",
    "Interrupted",
    "MissingDependency",
    "__version__",
]
