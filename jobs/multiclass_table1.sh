#!/usr/bin/env bash
# Paper 001, Table 1: accuracy on the final 20% of each shuffled stream and runtime of the best of 100 VFDTs,
# Oza's online boosting, Adaboost.OLM and OnlineMBBM (best of 5 gamma), 100 VFDTs, 10 seeds, on balance, mice,
# cars, mushroom, nursery, isolet and movement (conf/experiment/multiclass_table1.yaml, docs/multiclass.md).
#
#   jobs/multiclass_table1.sh allow_unavailable=true                  # this machine (isolet has no local copy)
#   jobs/multiclass_table1.sh seeds=2 datasets=[balance,cars]         # a smaller version
#   RAY_JOB_ADDRESS=http://HEAD:8265 jobs/multiclass_table1.sh ray    # a running Ray cluster (ray job submit)
#   jobs/multiclass_table1.sh slurm --nodes=4 --cpus-per-task=32 --time=24:00:00   # Slurm; resubmit to resume
#
# The table lands in outputs/multiclass_table1/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
olb_recipe multiclass_table1 "${BASH_SOURCE[0]}" "$@"
