# Two commands matter: `make run` (the app) and `make test` (the whole suite).
# Both create .venv from the pinned requirements first, and only reinstall when a
# requirements file changed (the stamp .venv/.installed depends on both).

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT  ?= 8501
# localhost only by default (and Streamlit then skips its external-IP lookup);
# ADDRESS=0.0.0.0 serves other machines, e.g. a workshop room.
ADDRESS ?= localhost
# Extra arguments for pytest, e.g. `make test ARGS="-k layering -x"`.
ARGS  ?=
# pytest-xdist workers: one per core (2 on CI). Whole files go to one worker (loadfile),
# so a file's tests share its in-process caches, in collection order (browser files first,
# see tests/conftest.py), not by test count; the browser files share one app server
# (tests/app_server.py). JOBS=0 runs in this process only.
JOBS  ?= auto
# Rounds of `make test-stress` (the browser tests with every core kept busy).
ROUNDS ?= 3

# The interpreter the venv is made from: python3.11, or python3 when that is 3.11.
BASE_PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)

# Numba would write its cache next to the sources; keep it in one ignored folder (the same
# one explorer/core/emulator uses when the variable is not set, so `make venv`'s warmup
# serves the CLI and the app however they are started).
NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache
export NUMBA_CACHE_DIR

.PHONY: help venv run serve lint test test-stress fuzz bench clean

help:
	@echo "make run    start the app on http://$(ADDRESS):$(PORT) (PORT=, ADDRESS= to change)"
	@echo "make serve  the app for a workshop room: all interfaces, a worker pool, tight limits"
	@echo "make test   run the whole test suite (browser tests need chromium-headless-shell)"
	@echo "make fuzz   10,000 hostile scenarios, CLI calls and uploads; prints crash/hang/oom counts"
	@echo "make test-stress  the browser tests 3 times in a row with every core kept busy"
	@echo "make bench  print the emulator benchmarks"
	@echo "make venv   create .venv with the pinned requirements"
	@echo "make clean  remove caches and test output (keeps .venv)"

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt requirements-dask.txt
	@test -n "$(BASE_PYTHON)" || { echo "python3.11 not found" >&2; exit 1; }
	@$(BASE_PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if v == (3, 11) else f"Python 3.11 is required; {sys.executable} is {v[0]}.{v[1]}")'
	@test -x $(PY) || $(BASE_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-input -r requirements-dev.txt
	$(PY) -m explorer warmup
	@touch $@

run: venv
	$(PY) -m streamlit run app.py --server.headless true --server.port $(PORT) \
		--server.address $(ADDRESS) --browser.gatherUsageStats false

# Workshop server mode (README "Serving a workshop"): every interface, one emulation worker
# per core, uploads capped at the largest file a page accepts (MiB), and a third of the
# CLI's array budget per request (kernels/budget.py: 512 MiB, about 1.5 million
# instructions) so that one student cannot hold a worker for long or the memory of all.
# One BLAS thread per process: the workers are the parallelism, and idle OpenBLAS threads
# spin (bench.page_cost: decode 2.5 s -> 1.1 s of CPU per change with one thread).
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
SERVE_ARRAY_BYTES ?= 536870912
serve: venv
	EXPLORER_WORKERS=$(WORKERS) EXPLORER_MAX_ARRAY_BYTES=$(SERVE_ARRAY_BYTES) \
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	$(PY) -m streamlit run app.py --server.headless true --server.port $(PORT) \
		--server.address 0.0.0.0 --browser.gatherUsageStats false \
		--server.maxUploadSize 64 --server.fileWatcherType none --server.runOnSave false

# Static checks (pyproject.toml [tool.ruff]): pyflakes, pycodestyle, isort, bugbear, pyupgrade.
lint: venv
	$(PY) -m ruff check .

test: venv lint
	$(PY) -m pytest -q -n $(JOBS) --dist loadfile --no-loadscope-reorder --durations=15 $(ARGS)

test-stress: venv
	$(PY) -m tests.stress --rounds $(ROUNDS) --jobs $(JOBS) $(ARGS)

# Hostile inputs: CASES=, SEED= to change (bench/fuzz.py); exits non-zero on any crash,
# hang or out-of-memory.
CASES ?= 10000
SEED  ?= 0
fuzz: venv
	$(PY) -m bench.fuzz --cases $(CASES) --seed $(SEED)

bench: venv
	$(PY) -m bench.engine
	$(PY) -m bench.gemm
	$(PY) -m bench.decode
	$(PY) -m bench.balance
	$(PY) -m bench.sweep

clean:
	rm -rf .numba_cache test-output .pytest_cache .hypothesis
