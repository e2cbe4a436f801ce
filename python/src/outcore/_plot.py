"""Charts of a run in a notebook: :meth:`outcore.Result.plot`.

The charts are the ones ``outcore report`` draws (the native ``run_report`` module renders
them), not a second implementation: a :class:`RunPlot` holds the report as an HTML fragment
(its style scoped to one ``<div>``, so it does not restyle the notebook) and as one standalone
SVG document. Jupyter shows the fragment (``_repr_html_``); frontends that take only images get
the SVG (``_repr_svg_``). Both are inline SVG and CSS: no script, no network, no matplotlib.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Sequence, Tuple, Union

from . import _native
from ._errors import InvalidParameter, native_errors

PathLike = Union[str, "os.PathLike[str]"]


def labelled(stats: Sequence[Dict[str, Any]]) -> List[Tuple[str, str]]:
    """``(label, stats JSON)`` per run, labelled by engine (numbered where engines repeat)."""
    engines = [s.get("engine", "?") for s in stats]
    labels = [e if engines.count(e) == 1 else f"{e} #{k + 1}" for k, e in enumerate(engines)]
    return [(label, json.dumps(s)) for label, s in zip(labels, stats)]


class RunPlot:
    """Per-iteration charts of one or more runs: time (compute and I/O wait where the engine
    records the split), bytes read and written, active vertices, edges processed; with several
    runs, also cumulative time and bytes compared. Shows itself in Jupyter; :meth:`save`
    writes it to a file."""

    def __init__(self, stats: Sequence[Dict[str, Any]]):
        self._runs = labelled(stats)
        with native_errors():
            self.html, self.svg = _native.run_report_render(self._runs)

    @property
    def num_charts(self) -> int:
        """How many charts the plot has (four per run, two more to compare several)."""
        return len(re.findall(r'<svg class="chart"', self.svg))

    def _repr_html_(self) -> str:
        return self.html

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        names = ", ".join(label for label, _ in self._runs)
        return f"<outcore.RunPlot of {names}: {self.num_charts} charts>"

    def save(self, path: PathLike) -> str:
        """Writes the plot to ``path``: an SVG image for ``.svg``, else the self-contained
        HTML page of ``outcore report`` (summary table and charts). Returns the path."""
        path = os.fspath(path)
        if path.lower().endswith(".svg"):
            with open(path, "w", encoding="utf-8") as out:
                out.write(self.svg)
        elif path.lower().endswith((".html", ".htm")):
            with native_errors():
                _native.run_report(self._runs, path)
        else:
            raise InvalidParameter(f"RunPlot.save: {path!r} must end in .svg or .html")
        return path
