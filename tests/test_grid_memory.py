"""Memory on a real local Ray whose memory monitor kills above a threshold set just above what the machine uses:

- a cell that never fits is tried ``backend.max_retries + 1`` times (Ray's own default retries memory kills
  without end), then recorded as failed with "out of memory", the cell's memory use, the node's limit, and its
  predicted and allowed memory; the other cells finish, and Ray's logs are kept in the grid's output folder;
- memory-heavy cells that would be killed if two ran at once, on two CPUs but a Ray memory budget that fits one
  cell's predicted memory: Ray runs them one at a time (each task requests its prediction) and all finish."""

from __future__ import annotations

import importlib
import os

import pytest

from olb.grid import GridConfigError, compose, run_grid
from olb.grid.planning.cost import PROCESS_FLOOR_MB, planned_memory_mb

pytestmark = pytest.mark.e2e


def _available_bytes() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))


def _events(log) -> list[str]:
    """The hogs' "start"/"end" events in time order."""
    lines = [line.split() for line in log.read_text().splitlines()]
    return [event for event, _ in sorted(lines, key=lambda line: float(line[1]))]


def _memory_monitor(monkeypatch, tmp_path, headroom_gb: float, needs_gb: float) -> None:
    """Ray kills once the machine uses ``headroom_gb`` more than now; the hog learner importable by workers."""
    import ray

    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process (its memory monitor is set at start)")
    if _available_bytes() < needs_gb * 2**30:
        pytest.skip(f"needs {needs_gb:g} GB of free memory")
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    threshold = (total - _available_bytes() + headroom_gb * 2**30) / total
    monkeypatch.setenv("RAY_memory_usage_threshold", f"{threshold:.4f}")  # read by the raylet it starts
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "100")
    monkeypatch.setenv("OLB_MEMORY_HOG_LOG", str(tmp_path / "attempts.txt"))
    _hog_importable(monkeypatch)


def _hog_importable(monkeypatch) -> None:
    """memory_hog (registered as ``_memory_hog``) imported here, and importable by workers (PYTHONPATH)."""
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [os.path.dirname(__file__), os.environ.get("PYTHONPATH")]))
    )
    importlib.import_module("memory_hog")


def _hog_grid(*overrides: str):
    """A grid of memory hogs on a local Ray (one seed unless ``overrides`` say otherwise), untracked."""
    base = ["backend=ray", f"backend.temp_dir=/tmp/olbm-{os.getpid()}", "tracking=off", "plots=false", "seeds=1"]
    return compose([*base, "imports=[memory_hog]", "algorithms=[_memory_hog]", *overrides])


def test_a_cell_killed_for_memory_is_retried_max_retries_times_then_failed(tmp_path, monkeypatch):
    _memory_monitor(monkeypatch, tmp_path, headroom_gb=2, needs_gb=8)  # the hog asks for up to 8 GB
    attempts = tmp_path / "attempts.txt"
    cfg = _hog_grid(
        "backend.num_cpus=1",  # one cell at a time: the monitor has only the hog to kill
        "backend.max_retries=1",
        "backend.memory_mb=20000",  # Ray hands out more than the hog's request, whatever the machine has free
        "+algorithm._memory_hog.params.mb=[0,8192]",
    )
    o = run_grid(cfg, tmp_path / "out")
    assert o.exit_code == 1 and o.n_failed == 1, o.cells
    assert _events(attempts).count("start") == 2  # max_retries=1: two attempts, not an endless loop
    failed = o.cells[o.cells["status"] == "FAILED"].iloc[0]
    assert "out of memory" in failed["error"] and "2 attempt(s)" in failed["error"], failed["error"]
    assert "the cell used" in failed["error"] and "? MB" not in failed["error"], failed["error"]
    predicted = planned_memory_mb("_memory_hog", {"mb": 8192, "hold_s": 0.0}, "emotions")
    assert f"predicted {predicted:.0f} MB, allowed {predicted:.0f} MB" in failed["error"], failed["error"]
    assert (o.cells["status"] == "FINISHED").sum() == 1, o.cells  # the rest of the grid went on
    logs = tmp_path / "out" / "ray-logs"
    assert (logs / "raylet.out").exists() and any(logs.glob("worker-*.err")), sorted(logs.iterdir())
    assert not os.path.exists(f"/tmp/olbm-{os.getpid()}")


def test_memory_heavy_cells_run_one_at_a_time_within_a_small_budget(tmp_path, monkeypatch):
    # two hogs at once (2 x 1.5 GB and Ray's processes) would pass the monitor's threshold of 3 GB above now
    _memory_monitor(monkeypatch, tmp_path, headroom_gb=3, needs_gb=6)
    hog_mb = 1536
    predicted = planned_memory_mb("_memory_hog", {"mb": hog_mb, "hold_s": 2.0}, "emotions")
    assert PROCESS_FLOOR_MB + hog_mb <= predicted < PROCESS_FLOOR_MB + hog_mb + 10
    budget = int(1.5 * predicted)  # one cell's request fits, two do not
    cfg = _hog_grid(
        "backend.num_cpus=2",  # CPUs for two cells at once: only the memory requests keep them apart
        f"backend.memory_mb={budget}",
        "backend.max_retries=0",  # a memory kill would fail its cell at once
        "seeds=3",
        f"+algorithm._memory_hog.params.mb={hog_mb}",
        "+algorithm._memory_hog.params.hold_s=2.0",
    )
    o = run_grid(cfg, tmp_path / "out")
    assert o.exit_code == 0 and (o.cells["status"] == "FINISHED").sum() == 3, o.cells[["status", "error"]]
    events = _events(tmp_path / "attempts.txt")
    assert events == ["start", "end"] * 3, events  # each cell started once (none was killed), one at a time


def test_a_cell_bigger_than_every_node_is_refused_before_any_work(tmp_path, monkeypatch):
    _hog_importable(monkeypatch)
    cfg = _hog_grid("backend.num_cpus=1", "backend.memory_mb=1000", "+algorithm._memory_hog.params.mb=[0,4096]")
    with pytest.raises(GridConfigError) as err:
        run_grid(cfg, tmp_path / "out")
    message = str(err.value)
    predicted = planned_memory_mb("_memory_hog", {"mb": 4096, "hold_s": 0.0}, "emotions")
    assert "1 setting(s)" in message and "_memory_hog (mb=4096) on emotions: predicted" in message, message
    assert f"predicted {predicted:.0f} MB" in message and "1000 MB" in message, message
    assert not (tmp_path / "out" / "cells.csv").exists()
