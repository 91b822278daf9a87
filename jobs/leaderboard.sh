#!/usr/bin/env bash
# One board across papers 000-004: every multi-label learner on every multi-label data set available offline,
# every metric that applies, mean ranks and a critical-difference diagram (conf/experiment/leaderboard.yaml).
#
#   jobs/leaderboard.sh                                        # this machine
#   jobs/leaderboard.sh seeds=2 datasets=[emotions,yeast]   # a smaller version
#   RAY_JOB_ADDRESS=http://HEAD:8265 jobs/leaderboard.sh ray   # a running Ray cluster (ray job submit)
#   jobs/leaderboard.sh slurm --nodes=4 --cpus-per-task=32 --time=24:00:00   # Slurm; resubmit to resume
#
# The table lands in outputs/leaderboard/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db by default).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
olb_recipe leaderboard "${BASH_SOURCE[0]}" "$@"
