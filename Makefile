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

test: deps test-rust test-mpi check-features test-python

test-rust:
	$(CARGO) test --locked

# The distributed engines under real mpirun (feature `mpi`, Open MPI from scripts/install-deps.sh):
# the MPI transport, then every tests/mpi_*.rs of the CLI (each mpirun under `timeout`).
test-mpi:
	$(CARGO) test --locked -p outcore --features mpi --test mpi_transport
	$(CARGO) test --locked -p outcore-cli --features mpi --test 'mpi_*'

# The Python package, built from source into a fresh virtualenv, with its tests, doctests and
# a subset of networkx's own tests dispatched to the outcore backend.
test-python:
	@scripts/test-python.sh

# Every feature combination of the library builds (features are few: see ARCHITECTURE.md).
check-features:
	@scripts/check-features.sh

clean:
	$(CARGO) clean
	rm -rf "$(DEMO_DIR)"
