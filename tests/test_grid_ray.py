"""olb.grid on a real local Ray (one instance for the module): identical numbers to the serial backend,
failure isolation, retry of a crashed worker."""

from __future__ import annotations

import random

import pandas as pd
import pytest

import olb.ops.testing as stub
from olb.grid import compose, run_grid
from olb.grid.running.backends import LocalRayBackend
from olb.grid.planning.config import BackendConfig

pytestmark = pytest.mark.e2e

GRID = ["seeds=2", "num_learners=3", "algorithm.onlinebmr.params.gamma=[0.1,0.01]", "tracking=off", "plots=false"]


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    local = LocalRayBackend(BackendConfig(num_cpus=2, temp_dir="/tmp/olbt-{pid}"))  # short: Ray's sockets live there
    local.start()  # private: a fresh token, loopback only
    yield ray
    local.stop()


def test_serial_and_ray_give_identical_cell_results(ray_cluster, tmp_path):
    serial = run_grid(compose([*GRID, "backend=serial"]), tmp_path / "serial")
    parallel = run_grid(compose([*GRID, "backend=ray"]), tmp_path / "ray")
    assert serial.exit_code == parallel.exit_code == 0
    assert parallel.startup_s < 5  # the running Ray is reused, not restarted
    a = serial.cells.set_index("cell_id")
    b = parallel.cells.set_index("cell_id").loc[a.index]
    assert len(a) == 6 and (b["status"] == "FINISHED").all()
    assert a["rank_loss"].tolist() == b["rank_loss"].tolist()  # bit for bit
    cols = ["dataset", "algorithm", "metric", "mean", "std", "n_seeds", "selected"]
    loss = lambda t: t[t["metric"] == "rank_loss"][cols].reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(loss(serial.table), loss(parallel.table))
    assert ray_cluster.is_initialized()  # a Ray the grid did not start is left running


def test_failures_are_isolated_and_a_crashed_worker_is_retried(ray_cluster, tmp_path):
    token = random.randrange(1, 2**31)
    marker = stub.crash_marker(token)
    marker.unlink(missing_ok=True)
    cfg = compose(
        [
            "backend=ray",
            "seeds=3",
            "name=crashy",
            "tracking=off",
            "imports=[olb.ops.testing]",
            "algorithms=[_grid_stub]",
            "plots=false",
            "+algorithm._grid_stub.params.fail_at=[-1,7]",
            f"+algorithm._grid_stub.params.crash_token={token}",
        ]
    )
    try:
        o = run_grid(cfg, tmp_path / "out")
        crashed = marker.exists()
        # same numbers as the serial backend for the cells that finished (the marker exists now: no crash)
        marker.touch()
        serial = run_grid(
            compose(
                [
                    "backend=serial",
                    "seeds=3",
                    "tracking=off",
                    "plots=false",
                    "imports=[olb.ops.testing]",
                    "algorithms=[_grid_stub]",
                    "+algorithm._grid_stub.params.fail_at=[-1]",
                    f"+algorithm._grid_stub.params.crash_token={token}",
                ]
            ),
            tmp_path / "serial",
        )
    finally:
        marker.unlink(missing_ok=True)
    assert crashed  # some worker process died (os._exit) ...
    cells = o.cells
    assert o.exit_code == 1 and o.n_failed == 3
    # ... and its cell was re-run on a new worker: every cell without an injected exception finished
    assert (cells[cells["fail_at"] == -1]["status"] == "FINISHED").all()
    assert (cells[cells["fail_at"] == 7]["status"] == "FAILED").all()
    assert cells[cells["fail_at"] == 7]["error"].str.contains("injected failure at update 7").all()
    ok = cells[cells["fail_at"] == -1].set_index("cell_id")
    ref = serial.cells.set_index("cell_id").loc[ok.index]
    assert ok["rank_loss"].tolist() == ref["rank_loss"].tolist()


def test_every_cpu_has_a_warmed_worker_before_the_first_cell(ray_cluster):
    """The backend's start-up leaves one warmed worker process per CPU, and tasks then run in those processes."""
    import os

    from olb.grid.running.backends.ray_nodes import prestart_workers

    warmed = prestart_workers(ray_cluster, 2)
    assert len(set(warmed)) == 2  # a process per slot, not one process warmed twice
    pid = ray_cluster.remote(num_cpus=1)(lambda: os.getpid())
    assert set(ray_cluster.get([pid.remote() for _ in range(4)])) <= set(warmed)
