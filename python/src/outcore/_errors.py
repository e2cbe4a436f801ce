"""The exceptions outcore raises, and the translation of native errors into them.

Every error is an :class:`OutcoreError`. The native layer words its messages for the command
line (``raise it with --memory 64MiB``); :func:`native_errors` rewrites them in Python's terms
(``memory=``) and turns the plain ``ValueError``/``TypeError``/``OverflowError`` a native call
can raise for a bad argument into :class:`InvalidParameter`.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator

from . import _native

OutcoreError = _native.OutcoreError
InputError = _native.InputError
StoreError = _native.StoreError
BudgetError = _native.MemoryBudgetError
MemoryBudgetError = BudgetError  # the name of earlier releases


class InvalidParameter(OutcoreError, ValueError):
    """A parameter outcore cannot use: an unknown algorithm, engine or vertex, a negative
    count, a parameter the algorithm does not take... Raised before any work starts. Also a
    ``ValueError``."""


class Interrupted(OutcoreError, KeyboardInterrupt):
    """The call was cancelled (Ctrl-C / KeyboardInterrupt) at a safe point; stores are left
    as they were. Also a ``KeyboardInterrupt``."""


# Engine options are keys of ``engine_options=``, not parameters of their own.
_ENGINE_OPTIONS = {"shards", "dynamic", "shadow-edge-share", "delay-buffer", "delayed-delivery", "shards-values"}
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")
_PARTITION_COMMAND = re.compile(r"`outcore partition[^`]*`")


def python_terms(message: str) -> str:
    """A native message with the command line's flags as Python parameters.

    >>> python_terms("needs 3 MiB; raise it with --memory 3MiB")
    'needs 3 MiB; raise it with memory="3MiB"'
    >>> python_terms("unknown --dynamic policy 'fast'")
    'unknown engine_options["dynamic"] policy \\'fast\\''
    """
    message = _PARTITION_COMMAND.sub("`outcore partition` (the pregel engine also builds it on first use)", message)
    message = message.replace("--explain shows", "explain=True shows")

    def flag(match: "re.Match[str]") -> str:
        name = match.group(1)
        if name in _ENGINE_OPTIONS:
            return f'engine_options["{name.replace("-", "_")}"]'
        return f"{name.replace('-', '_')}="

    # "--memory 3MiB" reads as memory="3MiB"; a flag without a value as memory=
    message = re.sub(r"--(memory|engine|format|ids) ([0-9A-Za-z.]+)", r'\1="\2"', message)
    return _FLAG.sub(flag, message)


@contextmanager
def native_errors() -> Iterator[None]:
    """Runs a native call, re-raising its errors as outcore's exceptions in Python's terms."""
    try:
        yield
    except OutcoreError as exc:
        raise type(exc)(python_terms(str(exc))) from None
    except KeyboardInterrupt as exc:
        raise Interrupted(str(exc) or "interrupted") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidParameter(python_terms(str(exc))) from None


class MissingDependency(OutcoreError, ImportError):
    """An optional package (pandas, pyarrow, scipy, networkx, tqdm) a call needs is not
    installed; the message says what to ``pip install``. Also an ``ImportError``."""
