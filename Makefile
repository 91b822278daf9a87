# olb: every command sets up the virtual environment first (idempotent), so a fresh clone needs one command.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup lock demo grid ui test test-fast test-lowest test-any-cpu test-jit lint bench clean docs docs-check

setup: $(STAMP)

# pip's install with a line every 10 s while it works (its last step, installing them all, says nothing for a minute
# or more): $(call pip_install,PYTHON,STAGE,ARGUMENTS)
pip_install = @$(1) -m pip install --progress-bar on $(3) & pip=$$!; trap "kill $$pip" INT TERM; waited=0; \
	while kill -0 $$pip 2>/dev/null; do sleep 1; waited=$$((waited + 1)); \
	if [ $$((waited % 10)) = 0 ]; then echo "olb: $(2): pip still working, $$waited s"; fi; done; \
	wait $$pip

# The locked set: requirements.lock pins every package `make setup` and CI install (pyproject.toml declares the
# ranges olb supports; `make lock` compiles the lock from them). Each stage says what it does; pip lists every
# package it collects and downloads.
EXTRAS := grid,cluster,test,moa
LOCK := requirements.lock

$(STAMP): pyproject.toml $(LOCK)
	@echo "olb: setup 1/3: the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "olb: setup 2/3: pip itself, upgraded"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "olb: setup 3/3: olb and its dependencies (.[$(EXTRAS)] at the versions of $(LOCK); pip lists each package it collects)"
	$(call pip_install,$(PY),setup 3/3,-c $(LOCK) -e ".[$(EXTRAS)]")
	touch $(STAMP)

# The lowest versions of the ranges (uv's lowest-direct resolution: each declared dependency at its lower bound),
# without the moa extra: capymoa requires numpy, pandas, scipy, matplotlib and scikit-learn far above olb's own
# lower bounds. `make test-lowest` runs the fast suite on them in a second environment, $(LOWEST_VENV).
LOWEST_EXTRAS := grid,cluster,test
LOWEST_LOCK := requirements-lowest.lock
LOWEST_VENV ?= .venv-lowest
LOWEST_STAMP := $(LOWEST_VENV)/.installed

# `make lock` regenerates both lock files from pyproject.toml's ranges with uv (in a small environment of its own,
# $(UV_VENV), so that it runs whatever $(VENV) holds), for CI's platform, Linux on x86-64 with Python 3.11 (elsewhere `pip install -c` still pins the
# packages it names); `make setup` then installs the new lock
UV_VENV := .venv-uv
comma := ,
# $(call compile_lock,EXTRAS,OUTPUT[,UV OPTIONS])
compile_lock = $(UV_VENV)/bin/uv pip compile pyproject.toml --python-platform x86_64-unknown-linux-gnu --python-version 3.11 --quiet \
	$(foreach e,$(subst $(comma), ,$(1)),--extra $(e)) $(3) -o $(2)

$(UV_VENV)/bin/uv:
	$(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install --quiet "uv>=0.9,<1"

lock: $(UV_VENV)/bin/uv
	$(call compile_lock,$(EXTRAS),$(LOCK))
	$(call compile_lock,$(LOWEST_EXTRAS),$(LOWEST_LOCK),--resolution lowest-direct)

# The main job: a small grid on the embedded emotions data set, tracked in ./mlflow.db
demo: setup
	$(PY) -m olb.grid

# any grid: make grid ARGS="+experiment=table3 datasets=[emotions] seeds=2" (a local Ray listens on 127.0.0.1 only)
grid: setup
	$(PY) -m olb.grid $(ARGS)

# the MLflow UI on the grids' ./mlflow.db, on this machine only: make ui [PORT=5000]
PORT ?= 5000
ui: setup
	$(PY) -m olb.grid.ui sqlite:///mlflow.db --port $(PORT)

# The fast tests run on every core (pytest-xdist, at most 4 worker processes); the end-to-end tests after them, one at
# a time, since each starts its own processes (Ray nodes, servers, the JVM) and bounds its waits for a quiet machine.
# Both sessions share one build of the compiled kernels, in a private folder removed at the end.
PARALLEL := -n auto --maxprocesses 4

test: setup
	kernels=$$(mktemp -d -t olb-kernels-XXXXXX) && trap 'rm -rf "$$kernels"' EXIT && \
	OLB_KERNELS_DIR=$$kernels $(PY) -m pytest $(PARALLEL) -m "not e2e" && \
	OLB_KERNELS_DIR=$$kernels $(PY) -m pytest -m e2e

# everything but the end-to-end tests (Ray start-ups, CLI subprocesses, servers, browsers, Slurm, wheel builds)
test-fast: setup
	$(PY) -m pytest $(PARALLEL) -m "not e2e"

# the bit-exact tests with the library code an x86-64 CPU without AVX2, FMA or AVX-512 gets (tests/any_cpu.py:
# glibc's libm, numpy's dispatch, OpenBLAS's kernel): a result must not depend on the CPU (docs/speed.md)
BIT_EXACT_TESTS := tests/regression tests/test_vfdt.py tests/test_rounds.py tests/test_olansgd.py tests/test_alt_learners.py

test-any-cpu: setup
	eval "$$($(PY) tests/any_cpu.py)" && $(PY) -m pytest $(PARALLEL) -m "not e2e" $(BIT_EXACT_TESTS)

# the kernels' other path, numba's JIT (OLB_KERNELS=jit: the fallback where the extension cannot be built, and what
# stays when numba.pycc goes, docs/speed.md): the fast tests of every learner that calls a kernel, about 6 minutes
JIT_TESTS := $(BIT_EXACT_TESTS) tests/test_mlr_boosting.py tests/test_multiclass_boosting.py \
	tests/test_topk_boosting.py tests/test_potentials.py tests/test_thresholds.py tests/test_learner_contract.py \
	tests/test_kernels.py tests/test_protocol.py tests/test_stream_br.py tests/test_prequential.py

test-jit: setup
	OLB_KERNELS=jit $(PY) -m pytest $(PARALLEL) -m "not e2e" $(JIT_TESTS)

# the fast suite at the lowest versions of the ranges, in $(LOWEST_VENV) (built from $(LOWEST_LOCK)); CI runs it
$(LOWEST_STAMP): pyproject.toml $(LOWEST_LOCK)
	@echo "olb: test-lowest 1/2: the virtual environment $(LOWEST_VENV)"
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(LOWEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	@echo "olb: test-lowest 2/2: olb and .[$(LOWEST_EXTRAS)] at the versions of $(LOWEST_LOCK)"
	$(call pip_install,$(LOWEST_VENV)/bin/python,test-lowest 2/2,-c $(LOWEST_LOCK) -e ".[$(LOWEST_EXTRAS)]")
	touch $(LOWEST_STAMP)

# less the cost models' calibration on the synthetic stream (about 7 of its 19 minutes on two cores), which holds
# for the timings of the locked versions: at the lowest ones the check is of olb's results and of the APIs it calls
LOWEST_DESELECT := --deselect tests/test_cost_models.py::test_the_cost_model_holds_on_the_synthetic_stream

test-lowest: $(LOWEST_STAMP)
	$(LOWEST_VENV)/bin/python -m pytest $(PARALLEL) -m "not e2e" $(LOWEST_DESELECT)

# ruff's lint and format checks and mypy's type check (configured in pyproject.toml); CI runs them before the tests
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# the result tables of README.md and docs/*.md, generated from the exported results in results/ (olb/ops/doc_tables.py)
DOCS := README.md docs/*.md

docs: setup
	$(PY) -m olb.ops.doc_tables $(DOCS)

# fails, naming the table and its first differing line, when a table in the docs is not what results/ gives; CI runs it
docs-check: setup
	$(PY) -m olb.ops.doc_tables --check $(DOCS)

bench: setup
	$(PY) benchmarks/bench_boosters.py

clean:
	rm -rf $(VENV) $(LOWEST_VENV) $(UV_VENV) outputs mlruns mlflow.db
