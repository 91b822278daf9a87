#!/usr/bin/env bash
# Paper 004 Table 2: single-swap exploration (TopOpt-S/TopAda-S) next to the uniform and full-information columns.
# Extra arguments are Hydra overrides, e.g.  jobs/topk_table2.sh seeds=3 backend.num_cpus=2 allow_unavailable=true
# The topk experiments share the MLflow experiment olb/topk: cells already finished there are resumed.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" -m olb.grid +experiment=topk_table2 "$@"
