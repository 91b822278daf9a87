"""The regression cells give their recorded results also with the library code an x86-64 CPU without AVX2, FMA or
AVX-512 gets (``tests/any_cpu.py``), not only with this CPU's: references recorded on one machine hold on any."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from any_cpu import older_cpu_env

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.e2e
def test_regression_cells_reproduce_with_an_older_cpus_library_code():
    env = {
        **os.environ,
        **older_cpu_env(),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "regression")]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
