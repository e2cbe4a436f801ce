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
# The dev profile (as `cargo test`'s): the suites need no release speed, and the dependencies
# the test build compiled are reused instead of compiled again with release optimisations.
MATURIN_PEP517_ARGS="--profile dev" "$venv/bin/pip" install --quiet "./python[test]"

# The CLI the tests start, with the features of the test build (Makefile) so it is reused.
cargo build --quiet --locked -p outcore-cli ${OUTCORE_CLI_FEATURES:+--features "$OUTCORE_CLI_FEATURES"}
export OUTCORE_BIN=$PWD/target/debug/outcore

echo "test-python: pytest suite and doctests"
(cd python/tests && "../../$venv/bin/python" -m pytest -q -p no:cacheprovider .)
"$venv/bin/python" -m pytest -q -p no:cacheprovider --doctest-modules --pyargs outcore

echo "test-python: networkx's own tests with the outcore backend, no fallback to networkx"
# Calls the backend cannot run (can_run says why) are xfailed by networkx's test mechanism;
# every dispatched function's module is listed here. one summary line per module.
modules=(
    link_analysis.tests.test_pagerank
    components.tests.test_connected
    components.tests.test_weakly_connected
    components.tests.test_strongly_connected
    shortest_paths.tests.test_unweighted
    shortest_paths.tests.test_weighted
    shortest_paths.tests.test_generic
    tests.test_cluster
    tests.test_distance_measures
    tests.test_dag
    traversal.tests.test_bfs
    centrality.tests.test_betweenness_centrality
    centrality.tests.test_closeness_centrality
    centrality.tests.test_katz_centrality
    centrality.tests.test_eigenvector_centrality
    link_analysis.tests.test_hits
    approximation.tests.test_distance_measures
    tests.test_wiener
    tests.test_core
    community.tests.test_louvain
)
# Tests left out of a module, each with why (printed beside the module's line): tests that
# assert networkx's exact output for one seed of its random visiting order, which outcore's
# synchronous first level does not follow (its karate partition for seed=2 moves vertex 9 and
# has higher modularity, 0.4198 against 0.4188).
declare -A skip=(
    [community.tests.test_louvain]="not test_karate_club_partition and not test_undirected_selfloops"
)
status=0
for m in "${modules[@]}"; do
    select=()
    if [[ -n "${skip[$m]:-}" ]]; then
        select=(-k "${skip[$m]}")
    fi
    line=$(NETWORKX_TEST_BACKEND=outcore NETWORKX_FALLBACK_TO_NX= \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider --pyargs "networkx.algorithms.$m" "${select[@]}" 2>&1 | tail -1)
    printf '%-50s %s%s\n' "$m" "$line" "${skip[$m]:+ (left out: ${skip[$m]})}"
    # "3 xfailed" is a pass (the backend declined the call); "1 failed", "2 errors" or a last
    # line that is no pytest summary at all is not.
    if [[ "$line" =~ [0-9]+\ (failed|errors?)([^a-z]|$) || ! "$line" =~ (passed|xfailed|skipped) ]]; then
        status=1
    fi
done
exit $status
