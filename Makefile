# olb: every command sets up the virtual environment first (idempotent), so a fresh clone needs one command.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo grid ui test test-fast test-any-cpu test-jit lint bench clean docs docs-check

setup: $(STAMP)

# each stage says what it does; pip lists every package it collects and downloads, and while it works (its last
# step, installing them all, says nothing for a minute or more) a line every 10 s says it still does
$(STAMP): pyproject.toml
	@echo "olb: setup 1/3: the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "olb: setup 2/3: pip itself, upgraded"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "olb: setup 3/3: olb and its dependencies (.[grid,cluster,test]; pip lists each package it collects)"
	@$(PY) -m pip install --progress-bar on -e ".[grid,cluster,test]" & pip=$$!; trap "kill $$pip" INT TERM; waited=0; \
	while kill -0 $$pip 2>/dev/null; do sleep 1; waited=$$((waited + 1)); \
	if [ $$((waited % 10)) = 0 ]; then echo "olb: setup 3/3: pip still working, $$waited s"; fi; done; \
	wait $$pip
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
	$(PY) -m olb.grid.ui sqlite:///mlflow.db --port $(PORT)

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

# the kernels' other path, numba's JIT (OLB_KERNELS=jit: the fallback where the extension cannot be built, and what
# stays when numba.pycc goes, docs/speed.md): the fast tests of every learner that calls a kernel, about 6 minutes
JIT_TESTS := $(BIT_EXACT_TESTS) tests/test_mlr_boosting.py tests/test_multiclass_boosting.py \
	tests/test_topk_boosting.py tests/test_potentials.py tests/test_thresholds.py tests/test_learner_contract.py \
	tests/test_kernels.py tests/test_protocol.py tests/test_stream_br.py tests/test_prequential.py

test-jit: setup
	OLB_KERNELS=jit $(PY) -m pytest -m "not e2e" $(JIT_TESTS)

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
	rm -rf $(VENV) outputs mlruns mlflow.db
