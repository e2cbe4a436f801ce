"""``python -m outcore ARGS...``: the same command line as the ``outcore`` console script."""

from ._cli import main

main()
