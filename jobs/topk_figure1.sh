#!/usr/bin/env bash
# Paper 004 Figure 1: TopOpt learning curves on yeast for k = 3, 5, 8, 11 (10 seeds, 1-sd bands), logged to MLflow.
# Extra arguments are Hydra overrides, e.g.  jobs/topk_figure1.sh seeds=3 backend.num_cpus=2 allow_unavailable=true
# The topk experiments share the MLflow experiment olb/topk: cells already finished there are resumed.
set -euo pipefail
cd "$(dirname "$0")/.."
# The grid's curve plot (plots/curves_yeast.png, logged to MLflow) shows per-phase running means; the paper's form
# (running mean over the whole stream) is drawn by:  python benchmarks/topk_figure1.py --mlflow sqlite:///mlflow.db
exec "${PYTHON:-.venv/bin/python}" -m olb.grid +experiment=topk_figure1 "$@"
