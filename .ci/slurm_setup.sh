#!/usr/bin/env bash
# Installs what tests/test_slurm.py needs: Debian's slurm-wlm (slurmctld, slurmd, sbatch, srun, ...) and munge.
# Idempotent; starts nothing (the test starts a private cluster with slurm/local_cluster.py and stops it by PID).
# Where the packages cannot be installed the Slurm test is skipped with the reason; this script never fails CI.
set -uo pipefail
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if have slurmctld && have slurmd && have sbatch && have munged; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "slurm_setup: not root, cannot install slurm-wlm munge; the Slurm test will be skipped"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "slurm_setup: no apt-get; install Slurm and munge yourself or the Slurm test will be skipped"
  exit 0
fi
apt-get update -qq >/dev/null 2>&1 || true
if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1; then
  echo "slurm_setup: installed slurm-wlm and munge"
else
  echo "slurm_setup: could not install slurm-wlm munge; the Slurm test will be skipped"
fi
exit 0
