"""The ``outcore`` console script that ``pip install`` ships: the native command line
(``outcore import``, ``run``, ``partition``...), compiled into the extension module.

Child runs of ``outcore bench`` re-execute the running program, which here is Python: run the
benchmarks from a ``cargo build`` of the CLI instead.
"""

import signal
import sys

from . import _native


def main() -> None:
    """Runs ``outcore ARGS...`` and exits with its status."""
    # Python ignores SIGPIPE; a command line piped into `head` should end quietly instead.
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(_native.main(["outcore", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
