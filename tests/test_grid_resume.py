"""olb.grid: killing the driver mid-grid (SIGKILL, Ray backend) loses nothing that had finished, and the
rerun completes the grid with the same table as an uninterrupted run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pandas as pd
import pytest

import olb.ops.testing  # noqa: F401 - registers _grid_stub in this process
from olb.grid import compose, run_grid
from support import finished_cells, session_processes

pytestmark = pytest.mark.e2e

COMMON = [
    "imports=[olb.ops.testing]",
    "algorithms=[_grid_stub]",
    "+algorithm._grid_stub.params.delay_s=1.0",
    "seeds=6",
    "name=killed",
    "plots=false",
]


def test_killed_driver_loses_nothing_and_the_rerun_completes_the_grid(tmp_path):
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    temp = tempfile.mkdtemp(prefix="olbk", dir="/tmp")
    log = open(tmp_path / "driver.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "olb.grid",
            *COMMON,
            f"tracking.uri={uri}",
            f"backend.temp_dir={temp}",
            "backend.num_cpus=2",
            f"hydra.run.dir={tmp_path / 'run1'}",
        ],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 240
        while len(finished_cells(db)) < 2:
            assert proc.poll() is None, (tmp_path / "driver.log").read_text()
            assert time.time() < deadline, "no cell finished in time"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        done_before = len(finished_cells(db))
        assert 2 <= done_before < 6
        # Ray's core processes (GCS, raylet, workers) die with their driver; its two agents exit on their own
        # after a GCS time-out (about a minute), so they are stopped below.
        deadline = time.time() + 30
        while True:
            left = {p: c for p, c in session_processes(proc.pid).items() if "Agent" not in c}
            if not left or time.time() > deadline:
                break
            time.sleep(0.5)
        assert not left, left
    finally:
        for pid in session_processes(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
    assert not (tmp_path / "run1" / "table.csv").exists()  # it really died mid-grid

    # the rerun skips what finished and runs the rest (serial here: same numbers, no second Ray)
    rerun = run_grid(compose([*COMMON, f"tracking.uri={uri}", "backend=serial"]), tmp_path / "run2")
    assert rerun.exit_code == 0
    assert rerun.n_resumed == done_before and rerun.n_run == 6 - done_before
    assert (rerun.cells["status"] == "FINISHED").all()
    # the stale parent run of the killed driver is marked KILLED
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("olb/killed")
    parents = client.search_runs([exp.experiment_id], "tags.`olb.kind` = 'grid'")
    assert sorted(r.info.status for r in parents) == ["FINISHED", "KILLED"]

    reference = run_grid(compose([*COMMON, "tracking=off", "backend=serial"]), tmp_path / "reference")
    cols = ["dataset", "algorithm", "metric", "mean", "std", "n_seeds"]
    loss = lambda t: t[t["metric"] == "rank_loss"][cols].reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(loss(rerun.table), loss(reference.table), check_exact=True)
    a = rerun.cells.set_index("cell_id")["rank_loss"]
    b = reference.cells.set_index("cell_id")["rank_loss"].loc[a.index]
    assert a.tolist() == b.tolist()
