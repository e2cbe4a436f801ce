# outcore — the two commands of the README:
#   make demo   build (release), generate an RMAT graph, import it, run BFS, PageRank and WCC
#   make test   install what the tests need, build, run every test suite
#
# Variables: DEMO_DIR (where the demo writes, default demo-data), SCALE (RMAT scale, default 20),
# MEMORY (budget of the demo's import and runs, default 1GiB).

CARGO    ?= cargo
DEMO_DIR ?= demo-data
SCALE    ?= 20
MEMORY   ?= 1GiB

.PHONY: all build demo test test-rust test-mpi test-python deps check-features clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --locked

demo: build
	@scripts/demo.sh "$(DEMO_DIR)" "$(SCALE)" "$(MEMORY)"

test: deps test-rust check-features test-python

# One build serves every suite: feature `mpi` is on (Open MPI from scripts/install-deps.sh), so
# the distributed suites (tests/mpi_*.rs, each mpirun under `timeout`) run beside the rest. A
# process that mpirun did not start never initialises MPI, so every other suite runs as in the
# default build, which check-features builds.
TEST_FEATURES ?= outcore-cli/mpi

test-rust:
	$(CARGO) test --locked --features $(TEST_FEATURES)

# The distributed suites alone: the MPI transport, then every tests/mpi_*.rs of the CLI.
test-mpi:
	$(CARGO) test --locked -p outcore --features mpi --test mpi_transport
	$(CARGO) test --locked -p outcore-cli --features mpi --test 'mpi_*'

# The Python package, built from source into a fresh virtualenv, with its tests, doctests and
# a subset of networkx's own tests dispatched to the outcore backend.
test-python:
	@OUTCORE_CLI_FEATURES=mpi scripts/test-python.sh

# Every feature combination of the library builds (features are few: see ARCHITECTURE.md).
check-features:
	@scripts/check-features.sh

clean:
	$(CARGO) clean
	rm -rf "$(DEMO_DIR)"
