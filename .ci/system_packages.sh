#!/usr/bin/env bash
# System packages the test suite uses (headless Chromium for the MLflow UI test, a C/C++ compiler for the
# compiled kernels' build, PostgreSQL for the shared tracking server's test, a Java runtime for MOA's learners). Tests that need a
# package that could not be installed are skipped with the reason.
set -uo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v gcc >/dev/null 2>&1 || need+=(gcc)  # olb.kernels' one-time build (numba.pycc)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)  # MOA's learners (olb/learners/moa.py)
# olb.ops.serve (tests/test_mlflow_postgres.py) runs its own PostgreSQL; Debian's default cluster (a server on
# port 5432) is not wanted, so none is created
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
  if [ "$(id -u)" = 0 ]; then
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/olb-no-main-cluster.conf
  fi
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
      || echo "system_packages: could not install ${need[*]}; the tests that need them will be skipped"
  else
    echo "system_packages: not root, cannot install ${need[*]}; the tests that need them will be skipped"
  fi
fi
exit 0
