"""A grid whose tracking server or Ray head dies mid-grid ends within its time-out (``tracking.timeout_s``,
``backend.head_timeout_s``) with exit code 4 (not 1, "cells failed"), writes the table of what finished, and the
same command run again closes what the lost driver left RUNNING and completes the grid. Real parts: an
``mlflow server`` on loopback stopped by its process group id, a local Ray whose GCS server is killed by PID."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import requests
from ray_probe import descendants
from test_mlflow_server import MlflowServer

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
GRID = ["imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "plots=false", "tracking.cell_artifacts=false"]


def _start_grid(tmp: Path, *overrides: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "MLFLOW_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "olb.grid", *GRID, *overrides, f"hydra.run.dir={tmp}/out"],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, f"the grid ended before {what}:\n{proc.stdout.read()}"
        assert time.monotonic() < deadline, f"no {what} within {timeout:g} s"
        time.sleep(0.3)


def _finish(proc: subprocess.Popen, timeout: float) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out = proc.communicate()[0]
        pytest.fail(f"the grid did not end within {timeout:g} s:\n{out[-3000:]}")
    return proc.returncode, out, time.monotonic() - t0


def _runs(url: str) -> list[dict]:
    """Every run of the experiment olb/lost ([] before it exists)."""
    exp = (
        requests.get(
            f"{url}/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": "olb/lost"}, timeout=10
        )
        .json()
        .get("experiment")
    )
    if exp is None:
        return []
    r = requests.post(
        f"{url}/api/2.0/mlflow/runs/search",
        json={"experiment_ids": [exp["experiment_id"]], "max_results": 500},
        timeout=10,
    )
    return r.json().get("runs", [])


def _tags(run: dict) -> dict:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def test_a_dead_tracking_server_ends_the_grid_quickly_and_a_rerun_completes_it(tmp_path):
    server = MlflowServer(tmp_path).start()
    grid = ["backend=serial", "seeds=8", "name=lost", "+algorithm._grid_stub.params.delay_s=1.0"]
    grid += [f"tracking.uri={server.url}", "tracking.timeout_s=10"]
    try:
        proc = _start_grid(tmp_path, *grid)
        finished_cells = lambda: sum(_tags(r).get("olb.kind") == "cell" for r in _runs(server.url)) >= 2  # noqa: E731
        _wait_for(finished_cells, 240, "two recorded cells", proc)
        server.stop(signal.SIGKILL)  # the server vanishes mid-grid
        code, out, seconds = _finish(proc, 120)
        assert code == 4, out[-3000:]
        assert seconds < 60, (seconds, out[-2000:])  # bounded: not minutes of HTTP retries per cell
        assert "does not answer" in out and "rerun the same command" in out, out[-2000:]
        cells = pd.read_csv(tmp_path / "out" / "cells.csv")
        assert (cells["status"] == "FINISHED").sum() >= 2 and (tmp_path / "out" / "table.md").exists()
        # the server comes back; the same command closes the lost driver's runs and completes the grid
        server.start()
        proc = _start_grid(tmp_path, *grid)
        code, out, _ = _finish(proc, 240)
        assert code == 0, out[-3000:]
        assert "8 cells:" in out and "0 failed" in out, out[-2000:]
        runs = _runs(server.url)
        assert not [r for r in runs if r["info"]["status"] == "RUNNING"], runs
        closed = [r for r in runs if "olb.closed_by" in _tags(r)]
        assert closed and all(r["info"]["status"] == "KILLED" for r in closed), closed
        assert any(_tags(r).get("olb.kind") == "grid" for r in closed)  # the lost grid's parent run
    finally:
        server.stop()


def test_a_dead_ray_head_ends_the_grid_quickly_and_a_rerun_completes_it(tmp_path):
    import mlflow

    db = f"sqlite:///{tmp_path}/mlflow.db"
    grid = ["backend=ray", "backend.num_cpus=2", "backend.head_timeout_s=5", "seeds=10", "name=lost"]
    grid += ["+algorithm._grid_stub.params.delay_s=2.0", f"tracking.uri={db}"]
    proc = _start_grid(tmp_path, *grid)

    def gcs_pid() -> int | None:
        for pid in descendants(proc.pid):
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "gcs_server":
                    return pid
            except OSError:
                continue
        return None

    def recorded() -> int:
        if not (tmp_path / "mlflow.db").exists():
            return 0
        with sqlite3.connect(tmp_path / "mlflow.db") as db:
            try:
                return db.execute("select count(*) from tags where key = 'olb.cell_id'").fetchone()[0]
            except sqlite3.OperationalError:  # the schema is being made
                return 0

    _wait_for(lambda: recorded() >= 2, 240, "two recorded cells", proc)
    pid = gcs_pid()
    assert pid, "no gcs_server below the grid's driver"
    os.kill(pid, signal.SIGKILL)  # the head's control server dies
    code, out, seconds = _finish(proc, 120)
    assert code == 4, out[-3000:]
    assert seconds < 45, (seconds, out[-2000:])
    assert "the Ray head at" in out and "has not answered" in out, out[-2000:]
    assert (tmp_path / "out" / "table.md").exists() and (tmp_path / "out" / "cells.csv").exists()
    client = mlflow.tracking.MlflowClient(db)
    exp = client.get_experiment_by_name("olb/lost")
    parents = client.search_runs([exp.experiment_id], "tags.`olb.kind` = 'grid'")
    assert [p.info.status for p in parents] == ["FAILED"]
    assert "Ray head" in parents[0].data.tags["olb.ended_by"]
    proc = _start_grid(tmp_path, *grid)
    code, out, _ = _finish(proc, 300)
    assert code == 0, out[-3000:]
    assert "10 cells:" in out and "0 failed" in out, out[-2000:]
