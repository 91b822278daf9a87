#!/usr/bin/env bash
# Paper 003, ablation of OML's underspecified readings (feature scaling, step rule, d, vote, initial memory,
# neighbour search) on emotions, scene and yeast (conf/experiment/oml_ablation.yaml; docs/oml.md).
#
#   jobs/oml_ablation.sh                                        # this machine
#   jobs/oml_ablation.sh seeds=2 datasets=[emotions,scene]   # a smaller version
#   RAY_JOB_ADDRESS=http://HEAD:8265 jobs/oml_ablation.sh ray   # a running Ray cluster (ray job submit)
#   jobs/oml_ablation.sh slurm --nodes=4 --cpus-per-task=32 --time=24:00:00   # Slurm; resubmit to resume
#
# The table lands in outputs/oml_ablation/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db by default).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
olb_recipe oml_ablation "${BASH_SOURCE[0]}" "$@"
