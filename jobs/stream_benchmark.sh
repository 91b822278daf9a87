#!/usr/bin/env bash
# The field's prequential benchmark: the MLHAT table's 13 river learners at its settings and olb's multi-label
# learners on its 11 offline streams, beside the published figures, ranked (conf/experiment/stream_benchmark.yaml).
# The whole board is a cluster run (~157 planned CPU-hours); stream_benchmark_local.sh is the part that fits one
# 2-core machine in a day.
#
#   jobs/stream_benchmark.sh dry_run=true                                   # every cell and its planned CPU
#   RAY_JOB_ADDRESS=http://HEAD:8265 jobs/stream_benchmark.sh ray           # a running Ray cluster (ray job submit)
#   jobs/stream_benchmark.sh slurm --nodes=4 --cpus-per-task=32 --time=24:00:00   # Slurm; resubmit to resume
#
# The table lands in outputs/stream_benchmark/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db by default).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
olb_recipe stream_benchmark "${BASH_SOURCE[0]}" "$@"
