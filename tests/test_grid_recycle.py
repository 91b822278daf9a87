"""Workers that keep memory between cells, on a real local Ray with one CPU (so every cell runs on the one worker
process there is, unless it ended): a cell that leaves 600 MB in a module-level cache makes its worker end after
it (``backend.worker_memory_mb``, default the process floor), so the next cell's ``peak_rss_mb`` is its own; a
worker under the bound goes on; with the bound off (0) the next cell runs in the same process and reports the
600 MB as its peak; a cell's metrics are the same bits on a recycled worker and on a kept one."""

from __future__ import annotations

import importlib
import os

import pytest

from olb.grid.running.backend import HEARTBEAT
from olb.grid.running.backends import LocalRayBackend
from olb.grid.planning.config import BackendConfig
from olb.grid.planning.cost import PROCESS_FLOOR_MB
from olb.grid.messages import CellResult, CellTask
from olb.run import CellSpec

pytestmark = pytest.mark.e2e

HOG_MB = 600


@pytest.fixture
def one_cpu_ray(monkeypatch):
    import ray

    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process")
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [os.path.dirname(__file__), os.environ.get("PYTHONPATH")]))
    )
    importlib.import_module("memory_hog")  # registers _memory_hog here; workers import it through the task
    backend = LocalRayBackend(BackendConfig(num_cpus=1, temp_dir="/tmp/olbr-{pid}"))
    backend.start()
    yield backend
    backend.stop()


def _task(algorithm: str, seed: int = 0, **params) -> CellTask:
    spec = CellSpec(algorithm, "emotions", seed=seed, params=params)
    return CellTask(cell_id=f"{algorithm}-{seed}", spec=spec, imports=("memory_hog",), predicted_memory_mb=0)


def _run(backend, task: CellTask) -> CellResult:
    """One cell on its own (cells of different memory requests are not run in submission order)."""
    (message,) = [m for m in backend.run([task]) if m is not HEARTBEAT]
    assert isinstance(message, CellResult), message
    return message


def test_a_worker_that_keeps_memory_after_a_cell_ends_and_the_next_cell_reports_its_own_peak(one_cpu_ray):
    backend = one_cpu_ray
    assert backend.worker_memory_mb == PROCESS_FLOOR_MB  # the default bound
    hog = _task("_memory_hog", mb=HOG_MB, retain=True)
    small = _task("adaolmr", num_learners=3)

    big = _run(backend, hog)
    assert big.peak_rss_mb > HOG_MB
    recycled = _run(backend, small)
    assert recycled.pid != big.pid  # the hog's worker held > the bound after its cell: Ray started a fresh one
    assert recycled.peak_rss_mb < PROCESS_FLOOR_MB, recycled.peak_rss_mb  # its own peak, not the hog's 600 MB
    again = _run(backend, _task("adaolmr", seed=1, num_learners=3))
    assert again.pid == recycled.pid  # a worker under the bound runs the next cell too

    backend.worker_memory_mb = 0  # workers keep what they hold (the bound travels with each task)
    big = _run(backend, hog)
    kept = _run(backend, small)
    assert kept.pid == big.pid
    assert kept.peak_rss_mb > HOG_MB + recycled.peak_rss_mb / 2, kept.peak_rss_mb  # the hog's pages, inherited
    assert kept.metrics == recycled.metrics  # same bits on a fresh worker and on a reused one
