# grapeshot: `make demo` installs into .venv and runs the demo; `make test` installs and runs
# lint, format check and the whole test suite; `make test-fast`, after each change, runs the
# tests that start no process and take under a few seconds, in parallel (under 2 minutes).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

PYTEST := $(BIN)/python -m pytest

.PHONY: demo test test-fast slow-list lint format bench clean install

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "grapeshot needs Python >= 3.11 (found $$($(PYTHON) --version))"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || \
	  { echo "could not create $(VENV): on Debian, install python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/grapeshot demo

# ruff, and the layers of docs/architecture.md (import-linter's contracts in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

# Two lanes, one after the other (tests/conftest.py marks them): every test but the MPI ones on
# both cores (xdist; a test that starts one process of its own, the command line or a compiler,
# shares the cores as a test in one process does), then the MPI tests one at a time, since two
# runs of several ranks sharing 2 cores time out. Both lanes run even if the first fails; any
# exit status but 0 fails, 5 (no test selected) included. Each prints its 20 slowest tests.
test: lint
	status=0; \
	$(PYTEST) -q -n 2 -m "not mpi" --durations=20 || status=$$?; \
	$(PYTEST) -q -p no:xdist -m mpi --durations=20 || status=$$?; \
	exit $$status

# After each change: no process started, nothing slow (tests/slow.txt), every core.
test-fast: $(STAMP)
	$(PYTEST) -q -n auto -m "not process and not slow"

# Rewrite tests/slow.txt from the durations of the tests that start no process.
slow-list: $(STAMP)
	$(PYTEST) -q -n 2 -m "not process" --write-slow tests/slow.txt

# Every benchmark (bench_runtime under the venv's mpiexec -n 2), then benchmarks/RESULTS.md.
bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
