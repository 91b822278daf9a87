#!/usr/bin/env bash
# Paper 003, Figures 1-8: OML, kNN, OSML-ELM and OLANSGD* on eight data sets, 10 training-order permutations,
# macro-F1, example-F1, micro-F1 and Hamming loss (conf/experiment/oml_figures.yaml).
#
#   jobs/oml_figures.sh                                        # this machine
#   jobs/oml_figures.sh seeds=2 datasets=[emotions,scene]   # a smaller version
#   RAY_JOB_ADDRESS=http://HEAD:8265 jobs/oml_figures.sh ray   # a running Ray cluster (ray job submit)
#   jobs/oml_figures.sh slurm --nodes=4 --cpus-per-task=32 --time=24:00:00   # Slurm; resubmit to resume
#
# The table lands in outputs/oml_figures/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db by default).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
# the whole table, image marked unavailable where they have no local copy: exit 0 (docs/grid.md)
recipe_overrides=(allow_unavailable=true)
olb_recipe oml_figures "${BASH_SOURCE[0]}" "$@"
