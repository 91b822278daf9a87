#!/usr/bin/env bash
# The part of the prequential stream benchmark that fits one 2-core machine in 24 CPU-hours (~12 planned):
# conf/experiment/stream_benchmark_local.yaml. The rest is jobs/stream_benchmark.sh on a cluster (same tracking
# store: it resumes the cells run here).
#
#   jobs/stream_benchmark_local.sh                                  # this machine
#   jobs/stream_benchmark_local.sh datasets=[flags,emotions]        # a smaller version
#
# The table lands in outputs/stream_benchmark_local/<run>/table.md, every cell in MLflow (sqlite:///mlflow.db).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
olb_recipe stream_benchmark_local "${BASH_SOURCE[0]}" "$@"
