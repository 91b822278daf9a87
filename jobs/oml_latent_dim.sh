#!/usr/bin/env bash
# Paper 003: OML's four metrics against the latent dimension d
# (conf/experiment/oml_latent_dim.yaml; benchmarks/oml_figures.py draws the figure).
#
#   jobs/oml_latent_dim.sh                                        # this machine
#   jobs/oml_latent_dim.sh seeds=2 datasets=[emotions,scene]   # a smaller version
#   RAY_JOB_ADDRESS=http://HEAD:8265 jobs/oml_latent_dim.sh ray   # a running Ray cluster (ray job submit)
#   jobs/oml_latent_dim.sh slurm --nodes=4 --cpus-per-task=32 --time=24:00:00   # Slurm; resubmit to resume
#
# The table lands in outputs/oml_latent_dim/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db by default).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
olb_recipe oml_latent_dim "${BASH_SOURCE[0]}" "$@"
