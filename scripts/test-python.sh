#!/usr/bin/env bash
# Builds the Python package from the source tree into a fresh virtualenv and runs its tests:
# the pytest suite, the docstring examples, and a subset of networkx's own tests dispatched to
# the outcore backend (networkx's NETWORKX_TEST_BACKEND mechanism).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-test-venv
python=${PYTHON:-python3}

if ! "$python" -m venv --help >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    else
        echo "error: python3 venv is missing; install it with: sudo apt-get install -y python3-venv" >&2
        exit 1
    fi
fi

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
echo "test-python: installing ./python into a fresh virtualenv (builds the extension)"
"$venv/bin/pip" install --quiet "./python[test]"

cargo build --quiet --locked -p outcore-cli
export OUTCORE_BIN=$PWD/target/debug/outcore

echo "test-python: pytest suite and doctests"
(cd python/tests && "../../$venv/bin/python" -m pytest -q -p no:cacheprovider .)
"$venv/bin/python" -m pytest -q -p no:cacheprovider --doctest-modules --pyargs outcore

echo "test-python: networkx's own tests with the outcore backend"
NETWORKX_TEST_BACKEND=outcore NETWORKX_FALLBACK_TO_NX=True \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider --pyargs \
    networkx.algorithms.link_analysis.tests.test_pagerank \
    networkx.algorithms.components.tests.test_connected \
    networkx.algorithms.components.tests.test_weakly_connected \
    networkx.algorithms.shortest_paths.tests.test_unweighted \
    networkx.algorithms.tests.test_cluster
