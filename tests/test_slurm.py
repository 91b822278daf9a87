"""slurm/olb_grid.sbatch on a real Slurm: a private single-node cluster on loopback (slurm/local_cluster.py:
munged, slurmctld and slurmd as root, stopped by PID). Skipped, with the reason, where Debian's slurm-wlm and
munge are not installed (.ci/slurm_setup.sh installs them) or the daemons cannot start.

One job is cancelled while its grid runs (no Ray process may be left), the same command is submitted again and
resumes the grid to the end (every cell finished in the tracking store, the table written), and bad
submissions fail at once with a message that says what is wrong.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import finished_cells, local_cluster

ROOT = Path(__file__).resolve().parents[1]
SBATCH = ROOT / "slurm" / "olb_grid.sbatch"
GRID = ["num_learners=2", "seeds=2", "plots=false", "tracking.cell_artifacts=false"]  # 6 cells on emotions

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
free_port_base, wait_no_leftovers = local_cluster.free_port_base, local_cluster.wait_no_leftovers


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "RAY_"))}
    env.update(extra)
    return env


def expected_cells(overrides: list[str]) -> set[str]:
    from olb.grid import compose, plan_grid

    return {c.cell_id for c in plan_grid(compose(overrides)).unique_cells}


# -- no Slurm needed --------------------------------------------------------------------------------------------
def test_cpus_per_node_come_from_slurms_list():
    tools = ROOT / "slurm" / "cluster_tools.py"
    r = subprocess.run([sys.executable, str(tools), "cpus", "16(x2),8", "3"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["16", "16", "8"]
    r = subprocess.run([sys.executable, str(tools), "cpus", "16(x2)", "3"], capture_output=True, text=True)
    assert r.returncode == 2 and "names 2 node(s), the allocation has 3" in r.stderr


def test_outside_slurm_is_a_clear_error():
    r = subprocess.run(
        ["bash", str(SBATCH), "+experiment=default"], env=_clean_env(), capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2
    assert "not inside a Slurm job" in r.stderr and "sbatch" in r.stderr


# -- a real cluster -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def slurm():
    cluster = local_cluster.LocalSlurm()
    try:
        cluster.start()
    except local_cluster.SlurmUnavailable as err:
        shutil.rmtree(cluster.root, ignore_errors=True)
        pytest.skip(f"no local Slurm cluster: {err}")
    yield cluster
    cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)


def submit(cluster, workdir: Path, args: list[str], sbatch_opts: list[str] = (), **env) -> str:
    env = cluster.env(_clean_env(**{"OLB_PYTHON": sys.executable, **env}))
    r = cluster.run(
        "sbatch",
        "--parsable",
        f"--chdir={workdir}",
        f"--output={workdir}/slurm-%j.out",
        *sbatch_opts,
        str(SBATCH),
        *args,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().split(";")[0]


def job_log(workdir: Path, job: str) -> str:
    path = workdir / f"slurm-{job}.out"
    return path.read_text(errors="replace") if path.exists() else "(no output file)"


def test_bad_submissions_fail_with_clear_errors(slurm, tmp_path):
    no_python = submit(
        slurm, tmp_path, ["+experiment=default"], ["--cpus-per-task=1"], OLB_PYTHON="/nonexistent/venv/bin/python"
    )
    no_experiment = submit(slurm, tmp_path, ["+experiment=no_such_table"], ["--cpus-per-task=1"])
    assert slurm.wait_job(no_python, 60) == "FAILED", job_log(tmp_path, no_python)
    assert slurm.wait_job(no_experiment, 90) == "FAILED", job_log(tmp_path, no_experiment)
    log = job_log(tmp_path, no_python)
    assert "no python at '/nonexistent/venv/bin/python'" in log and "OLB_PYTHON" in log, log
    log = job_log(tmp_path, no_experiment)
    assert "Could not find 'experiment/no_such_table'" in log and "table3" in log, log
    assert "starting Ray" not in log and not list(tmp_path.glob("outputs/*/slurm-*/ray-*.log")), log


def test_cancelled_grid_leaves_no_ray_process_and_resubmission_completes_it(slurm, tmp_path):
    db = tmp_path / "mlflow.db"
    args = [*GRID, f"tracking.uri=sqlite:///{db}"]
    want = expected_cells(args)
    ray_tmp = str(slurm.root)  # short and unique to this cluster: Ray's temp dirs are <it>/olbray.XXXXXX
    env = {"OLB_RAY_TMPDIR": ray_tmp, "OLB_RAY_PORT_BASE": str(free_port_base())}
    opts = [f"--cpus-per-task={slurm.cpus}"]

    # 1. Cancel the job once the grid has recorded a cell.
    first = submit(slurm, tmp_path, args, opts, **env)
    deadline = time.monotonic() + 240
    while not finished_cells(db):
        state = slurm.job_state(first)
        assert state in ("PENDING", "RUNNING", "CONFIGURING"), f"job ended ({state}):\n{job_log(tmp_path, first)}"
        assert time.monotonic() < deadline, f"no cell finished in time:\n{job_log(tmp_path, first)}"
        time.sleep(0.5)
    assert slurm.run("scancel", first).returncode == 0
    assert slurm.wait_job(first, 90) == "CANCELLED", job_log(tmp_path, first)
    job_dir = tmp_path / "outputs" / "default" / f"slurm-{first}"
    head_pid = int((job_dir / "ray-head-localhost.pid").read_text())
    left = wait_no_leftovers([head_pid], f"{ray_tmp}/olbray.")
    assert not left, f"Ray processes left after scancel: {left}\n{job_log(tmp_path, first)}"
    assert not list(Path(ray_tmp).glob("olbray.*"))
    done_before = finished_cells(db)
    assert done_before and done_before <= want

    # 2. The same command again resumes the grid and completes it.
    env["OLB_RAY_PORT_BASE"] = str(free_port_base())
    second = submit(slurm, tmp_path, args, opts, **env)
    state = slurm.wait_job(second, 300)
    log = job_log(tmp_path, second)
    assert state == "COMPLETED", log
    m = re.search(r"(\d+) to run, (\d+) already finished", log)
    assert m, log
    assert int(m.group(2)) >= len(done_before) and int(m.group(1)) + int(m.group(2)) == len(want), log
    assert finished_cells(db) == want
    job_dir = tmp_path / "outputs" / "default" / f"slurm-{second}"
    table = (job_dir / "table.md").read_text()
    assert "emotions" in table and "Ada.OLMR" in table and "OnlineBMR" in table
    assert f"results: {job_dir}" in log and "grid complete" in log
    assert "all 1 Ray node(s) joined" in log and "Ray stopped on every node" in log
    # the job's Ray: a fresh token only the user can read, on loopback (one node), its logs kept
    token = job_dir / ".ray" / "token"
    assert token.stat().st_mode & 0o077 == 0 and (job_dir / ".ray").stat().st_mode & 0o077 == 0
    assert token.read_text() != (tmp_path / "outputs" / "default" / f"slurm-{first}" / ".ray" / "token").read_text()
    assert "at 127.0.0.1:" in log, log
    head_pid = int((job_dir / "ray-head-localhost.pid").read_text())
    assert not wait_no_leftovers([head_pid], f"{ray_tmp}/olbray.", timeout=30)
    assert not list(Path(ray_tmp).glob("olbray.*"))
