"""A cell that never fits in memory, on a real local Ray whose memory monitor kills it: it is tried
``backend.max_retries + 1`` times (Ray's own default retries memory kills without end), then recorded as failed
with "out of memory", the cell's memory use and the node's limit; the other cells finish, and Ray's logs are
kept in the grid's output folder."""

from __future__ import annotations

import os

import pytest

from olb.grid import compose, run_grid

pytestmark = pytest.mark.e2e


def _available_bytes() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))


def test_a_cell_killed_for_memory_is_retried_max_retries_times_then_failed(tmp_path, monkeypatch):
    import ray

    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process (its memory monitor is set at start)")
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    headroom = 2 * 2**30  # Ray kills once the machine uses 2 GB more than now; the hog asks for up to 8 GB
    if _available_bytes() < 8 * 2**30:
        pytest.skip("needs 8 GB of free memory")
    threshold = (total - _available_bytes() + headroom) / total
    monkeypatch.setenv("RAY_memory_usage_threshold", f"{threshold:.4f}")  # read by the raylet it starts
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "100")
    attempts = tmp_path / "attempts.txt"
    monkeypatch.setenv("OLB_MEMORY_HOG_LOG", str(attempts))
    monkeypatch.syspath_prepend(os.path.dirname(__file__))  # memory_hog, for the driver and (PYTHONPATH) workers
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [os.path.dirname(__file__), os.environ.get("PYTHONPATH")]))
    )
    cfg = compose(
        [
            "backend=ray",
            "backend.num_cpus=1",  # one cell at a time: the monitor has only the hog to kill
            "backend.max_retries=1",
            f"backend.temp_dir=/tmp/olbm-{os.getpid()}",
            "tracking=off",
            "plots=false",
            "seeds=1",
            "imports=[memory_hog]",
            "algorithms=[_memory_hog]",
            "+algorithm._memory_hog.params.mb=[0,8192]",
        ]
    )
    o = run_grid(cfg, tmp_path / "out")
    assert o.exit_code == 1 and o.n_failed == 1, o.cells
    assert len(attempts.read_text().split()) == 2  # max_retries=1: two attempts, not an endless loop
    failed = o.cells[o.cells["status"] == "FAILED"].iloc[0]
    assert "out of memory" in failed["error"] and "2 attempt(s)" in failed["error"], failed["error"]
    assert "the cell used" in failed["error"] and "? MB" not in failed["error"], failed["error"]
    assert (o.cells["status"] == "FINISHED").sum() == 1, o.cells  # the rest of the grid went on
    logs = tmp_path / "out" / "ray-logs"
    assert (logs / "raylet.out").exists() and any(logs.glob("worker-*.err")), sorted(logs.iterdir())
    assert not os.path.exists(f"/tmp/olbm-{os.getpid()}")
