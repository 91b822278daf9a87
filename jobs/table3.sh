#!/usr/bin/env bash
# Paper 000, Table 3: rank loss of Ada.OLMR and OnlineBMR (best of 4 gamma), 100 VFDTs on 20 random covariates,
# train-then-test, 10 seeds, on emotions, scene, yeast, mediamill and m-reduced (conf/experiment/table3.yaml).
#
#   jobs/table3.sh                                        # this machine
#   jobs/table3.sh seeds=2 datasets=[emotions,yeast]      # a smaller version
#   RAY_JOB_ADDRESS=http://HEAD:8265 jobs/table3.sh ray   # a running Ray cluster (ray job submit)
#   jobs/table3.sh slurm --nodes=4 --cpus-per-task=32 --time=24:00:00   # Slurm; resubmit to resume
#
# The table lands in outputs/table3/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db by default).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
# the whole table, full mediamill marked unavailable where they have no local copy: exit 0 (docs/grid.md)
recipe_overrides=(allow_unavailable=true)
olb_recipe table3 "${BASH_SOURCE[0]}" "$@"
