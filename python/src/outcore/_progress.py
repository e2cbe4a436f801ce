"""Progress of long calls: ``progress=`` and the module-wide hook :func:`set_progress`.

The native layer reports events to a callable, from its worker thread:
``callback(event, bar, label, position, total, unit, message)`` with ``event`` one of
``"start"``, ``"update"``, ``"finish"``, ``"note"``; ``bar`` is an integer naming the bar
(several can be open), ``total`` is None when unknown. :class:`TqdmProgress` draws these with
``tqdm.auto``, which renders as a widget in Jupyter and as a text bar in a terminal.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Optional, Union

ProgressArg = Union[None, bool, Callable[..., Any]]

_hook: Optional[Callable[..., Any]] = None


def set_progress(callback: Optional[Callable[..., Any]]) -> None:
    """Sends the progress of every call made with ``progress=None`` (the default) to
    ``callback`` (see the module's docstring for its arguments); None restores the default
    (tqdm bars in interactive sessions when tqdm is installed, else nothing)."""
    global _hook
    if callback is not None and not callable(callback):
        from ._errors import InvalidParameter

        raise InvalidParameter(f"set_progress takes a callable or None, got {callback!r}")
    _hook = callback


class TqdmProgress:
    """Draws progress events with ``tqdm.auto`` bars, one per native bar."""

    def __init__(self) -> None:
        from tqdm.auto import tqdm

        self._tqdm = tqdm
        self._bars: Dict[int, Any] = {}

    def __call__(self, event: str, bar: int, label: str, position: int, total: Optional[int], unit: str,
                 message: str) -> None:
        if event == "note":
            from ._errors import python_terms

            self._tqdm.write(python_terms(message), file=sys.stderr)
            return
        if event == "start":
            self._bars[bar] = self._tqdm(total=total, desc=label, unit=unit or "it", unit_scale=unit == "B",
                                         leave=False)
            return
        current = self._bars.get(bar)
        if current is None:
            return
        current.update(position - current.n)
        if message:
            current.set_postfix_str(message, refresh=False)
        if event == "finish":
            current.close()
            del self._bars[bar]


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _tqdm_or(fallback: Any) -> Any:
    try:
        return TqdmProgress()
    except ImportError:
        return fallback


def resolve(progress: ProgressArg) -> Any:
    """What the native layer gets for ``progress=``: a callable is used as is; True draws
    tqdm bars (the native stderr line without tqdm); False is silent; None uses the hook of
    :func:`set_progress`, else tqdm bars in interactive sessions, else nothing."""
    if callable(progress):
        return progress
    if progress is True:
        return _tqdm_or(True)
    if progress is None:
        if _hook is not None:
            return _hook
        return _tqdm_or(False) if _interactive() else False
    if progress is False:
        return False
    from ._errors import InvalidParameter

    raise InvalidParameter(f"progress must be True, False, None or a callable, got {progress!r}")
