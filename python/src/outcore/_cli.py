"""The ``outcore`` console script that ``pip install`` ships: the native command line
(``outcore import``, ``run``, ``partition``...), compiled into the extension module.

Child runs of ``outcore bench`` re-execute the running program, which here is Python: run the
benchmarks from a ``cargo build`` of the CLI instead.
"""

import sys

from . import _native


def main() -> None:
    """Runs ``outcore ARGS...`` and exits with its status."""
    sys.exit(_native.main(["outcore", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
