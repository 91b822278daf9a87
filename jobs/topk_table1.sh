#!/usr/bin/env bash
# Paper 004 Table 1: TopOpt/TopAda with uniform exploration (k=3) vs OnlineBMR/Ada.OLMR, Table 5 settings, 10 seeds.
# Extra arguments are Hydra overrides, e.g.  jobs/topk_table1.sh seeds=3 backend.num_cpus=2 allow_unavailable=true
# The topk experiments share the MLflow experiment olb/topk: cells already finished there are resumed.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" -m olb.grid +experiment=topk_table1 "$@"
