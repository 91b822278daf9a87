# olb: every command sets up the virtual environment first (idempotent), so a fresh clone needs one command.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo grid ui test test-fast test-any-cpu lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[grid,cluster,test]"
	touch $(STAMP)

# The main job: a small grid on the embedded emotions data set, tracked in ./mlflow.db
demo: setup
	$(PY) -m olb.grid

# any grid: make grid ARGS="+experiment=table3 datasets=[emotions] seeds=2" (a local Ray listens on 127.0.0.1 only)
grid: setup
	$(PY) -m olb.grid $(ARGS)

# the MLflow UI on the grids' ./mlflow.db, on this machine only: make ui [PORT=5000]
PORT ?= 5000
ui: setup
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port $(PORT)

test: setup
	$(PY) -m pytest

# everything but the end-to-end tests (Ray start-ups, CLI subprocesses, servers, browsers, Slurm, wheel builds)
test-fast: setup
	$(PY) -m pytest -m "not e2e"

# the bit-exact tests with the library code an x86-64 CPU without AVX2, FMA or AVX-512 gets (tests/any_cpu.py:
# glibc's libm, numpy's dispatch, OpenBLAS's kernel): a result must not depend on the CPU (docs/speed.md)
BIT_EXACT_TESTS := tests/regression tests/test_vfdt.py tests/test_rounds.py tests/test_olansgd.py tests/test_alt_learners.py

test-any-cpu: setup
	eval "$$($(PY) tests/any_cpu.py)" && $(PY) -m pytest -m "not e2e" $(BIT_EXACT_TESTS)

# ruff's lint and format checks and mypy's type check (configured in pyproject.toml); CI runs them before the tests
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: setup
	$(PY) benchmarks/bench_boosters.py

clean:
	rm -rf $(VENV) outputs mlruns mlflow.db
