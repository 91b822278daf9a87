"""The grid's driver: cells recorded by a writer thread in batches (bounded queue, one transaction per batch on
SQLite, runs written whole), the resume index, a driver killed mid-grid resuming with no cell lost or duplicated,
and workers that import none of the driver's libraries."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import olb.ops.testing  # noqa: F401 - registers _grid_stub in this process
from olb.grid import compose, run_grid
from olb.grid.lost import TrackingLost
from olb.grid.messages import CellFailure, CellTask
from olb.grid.recording.tracker import Tracker
from olb.grid.recording.tracking_noop import NoopTracker
from olb.grid.running.worker import execute_cell
from olb.grid.recording.writer import CellWriter
from support import finished_cells

ROOT = Path(__file__).resolve().parents[1]
STUB = ["imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "plots=false", "backend=serial"]


@pytest.mark.parametrize("module", ["olb.grid.running.worker", "olb.grid.running.backends.ray_worker"])
def test_a_worker_module_imports_none_of_the_drivers_libraries(module):
    code = (
        f"import {module}, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'hydra', 'pandas', 'tqdm', 'omegaconf', 'mlflow', 'matplotlib'}))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


class _Cell:
    def __init__(self, cell_id: str):
        self.cell_id = cell_id


class _GatedTracker(NoopTracker):
    """Records the batches it is handed; waits for ``gate`` first; fails for the cells in ``bad`` (and raises
    TrackingLost at the cell ``lose_at``)."""

    def __init__(self, bad=(), lose_at=None):
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.bad, self.lose_at = set(bad), lose_at

    def log_cells(self, cells):
        self.gate.wait(30)
        ids = [c.cell_id for c, _, _ in cells]
        if self.lose_at in ids:
            raise TrackingLost("the tracking server does not answer")
        if self.bad & set(ids):
            raise ValueError(f"cannot record {sorted(self.bad & set(ids))}")
        self.batches.append(ids)
        return [f"run-{i}" for i in ids]


def _writer(tracker: Tracker, batch: int, queue: int):
    written, untracked = {}, {}
    writer = CellWriter(tracker, written.__setitem__, untracked.__setitem__, batch, queue)
    return writer, written, untracked


def test_the_writer_batches_what_waits_and_the_driver_waits_only_for_a_full_queue():
    tracker = _GatedTracker()
    writer, written, untracked = _writer(tracker, batch=4, queue=5)
    feeder_done = threading.Event()

    def feed():
        for i in range(20):
            writer.put((_Cell(f"c{i}"), None, None))
        feeder_done.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    time.sleep(0.5)
    assert not feeder_done.is_set()  # the writer is held: the queue (5) filled and the driver waits
    tracker.gate.set()
    feeder.join(10)
    writer.close()
    assert [c for batch in tracker.batches for c in batch] == [f"c{i}" for i in range(20)]  # all, in order, once
    assert max(len(b) for b in tracker.batches) == 4 and len(tracker.batches) < 20  # batched
    assert written == {f"c{i}": f"run-c{i}" for i in range(20)} and not untracked
    assert writer.stats.cells == 20 and writer.stats.batches == len(tracker.batches)


def test_a_cell_that_cannot_be_recorded_leaves_the_rest_of_its_batch_recorded():
    tracker = _GatedTracker(bad={"c3"})
    writer, written, untracked = _writer(tracker, batch=10, queue=100)
    for i in range(8):
        writer.put((_Cell(f"c{i}"), None, None))
    tracker.gate.set()
    writer.close()
    assert set(untracked) == {"c3"} and "cannot record" in str(untracked["c3"])
    assert set(written) == {f"c{i}" for i in range(8)} - {"c3"}


def test_a_lost_tracker_reports_every_cell_not_written_and_ends_the_driver():
    tracker = _GatedTracker(lose_at="c2")
    writer, written, untracked = _writer(tracker, batch=1, queue=100)
    for i in range(6):
        writer.put((_Cell(f"c{i}"), None, None))
    tracker.gate.set()
    with pytest.raises(TrackingLost):
        writer.close()
    assert set(written) == {"c0", "c1"} and set(untracked) == {"c2", "c3", "c4", "c5"}
    with pytest.raises(TrackingLost):
        writer.put((_Cell("c6"), None, None))


@pytest.fixture(scope="module")
def store(tmp_path_factory, data_dir):
    """A SQLite tracker and a real finished and failed cell of a small stub grid."""
    tmp = tmp_path_factory.mktemp("driver")
    return stub_store(f"sqlite:///{tmp / 'mlflow.db'}", "driver", data_dir)


def stub_store(uri: str, name: str, data_dir: Path):
    """A tracker on ``uri`` (its parent run open), the plan of a 3-cell stub grid, a real finished cell's result
    and a real failed cell's failure."""
    from olb.grid.planning.expand import plan_grid
    from olb.grid.recording.recorder import open_tracker

    cfg = compose([*STUB, "seeds=3", f"name={name}", f"tracking.uri={uri}"])
    plan = plan_grid(cfg)
    tracker = open_tracker(cfg, "test")
    tracker.start_parent(name, {}, {}, "")
    cell = plan.unique_cells[0]
    spec = cell.spec(str(data_dir))
    result = execute_cell(CellTask(cell.cell_id, spec, imports=("olb.ops.testing",)))
    failing_spec = dataclasses.replace(spec, params={**spec.params, "fail_at": 3})
    failing = CellTask(cell.cell_id, failing_spec, ("olb.ops.testing",))
    failure = execute_cell(failing)
    assert isinstance(failure, CellFailure)
    return tracker, plan, result, failure


def test_a_batch_on_sqlite_holds_what_mlflows_own_calls_would(store):
    assert_bulk_writes_as_mlflow(*store)


def assert_bulk_writes_as_mlflow(tracker, plan, result, failure) -> None:
    """A batch written in bulk (one transaction into MLflow's tables) reads back through MLflow's client as the
    same cells written through the client do, data set inputs, metric history and artifacts included."""
    from mlflow.tracking import MlflowClient

    assert tracker.sql is not None  # the bulk path
    cells = plan.unique_cells
    read = {"olb.data_fingerprint": "f", "olb.data_files": "train=/d/my data/a.arff test=/d/my data/b.arff"}
    items = [(cells[0], result, read), (cells[1], failure, None)]
    bulk = tracker.log_cells(items)  # one transaction through the SQL store
    sql, tracker.sql = tracker.sql, None
    try:
        one_by_one = tracker.log_cells(items)  # MLflow's client, as on a server
    finally:
        tracker.sql = sql
    client = MlflowClient(tracker.uri)
    for a, b in zip(bulk, one_by_one):
        run_a, run_b = client.get_run(a), client.get_run(b)
        assert run_a.info.status == run_b.info.status and run_a.info.status in ("FINISHED", "FAILED")
        assert (run_a.info.start_time, run_a.info.end_time) == (run_b.info.start_time, run_b.info.end_time)
        assert run_a.data.params == run_b.data.params and run_a.data.metrics == run_b.data.metrics
        assert run_a.data.tags == run_b.data.tags
        assert dataset_inputs(run_a) == dataset_inputs(run_b)
        assert run_a.info.artifact_uri == f"{tracker.artifact_location}/{a}/artifacts"
        assert {f.path for f in client.list_artifacts(a)} == {f.path for f in client.list_artifacts(b)}
    history = lambda run_id: [(m.step, m.value) for m in client.get_metric_history(run_id, "curve/train/rank_loss")]  # noqa: E731
    assert history(bulk[0]) == history(one_by_one[0]) and len(history(bulk[0])) > 3
    assert [f.path for f in client.list_artifacts(bulk[1])] == ["traceback.txt"]  # a failure's traceback
    # the data set read, its fingerprint, its files' folder and the protocol; no data named, no input
    source = json.dumps({"uri": "/d/my data"})
    context = [("mlflow.data.context", cells[0].protocol)]
    assert dataset_inputs(client.get_run(bulk[0])) == [(cells[0].dataset, "f", "local", source, context)]
    assert dataset_inputs(client.get_run(bulk[1])) == []


def dataset_inputs(run) -> list[tuple]:
    """A run's dataset inputs as MLflow reads them back: name, digest, source type, source, tags."""
    return [
        (i.dataset.name, i.dataset.digest, i.dataset.source_type, i.dataset.source, [(t.key, t.value) for t in i.tags])
        for i in run.inputs.dataset_inputs
    ]


def test_a_recorded_curve_is_read_back_phase_by_phase_and_from_older_stores(store):
    """Each phase's history (``curve/<phase>/<metric>``) read back as the cell's curve; a run recorded before
    curves were kept per phase (one ``curve/<metric>``) still gives its curve."""
    from mlflow.tracking import MlflowClient

    tracker, plan, result, _ = store
    (run_id,) = tracker.log_cells([(plan.unique_cells[2], result, None)])
    assert tracker.curve(run_id, result.primary_metric) == {k: result.curve[k] for k in ("step", "phase", "value")}
    client = MlflowClient(tracker.uri)
    older = client.create_run(client.get_run(run_id).info.experiment_id).info.run_id
    for step, value in ((5, 0.5), (1, 0.25)):
        client.log_metric(older, "curve/rank_loss", value, step=step)
    assert tracker.curve(older, "rank_loss") == {"step": [1, 5], "phase": [0, 0], "value": [0.25, 0.5]}


def test_the_resume_index_finds_what_mlflows_search_finds(store):
    tracker, plan, result, _ = store
    tracker.log_cells([(c, dataclasses.replace(result, cell_id=c.cell_id), None) for c in plan.unique_cells])
    index = tracker.finished_cells()
    sql, tracker.sql = tracker.sql, None
    try:
        searched = tracker.finished_cells()
    finally:
        tracker.sql = sql
    assert set(index) == {c.cell_id for c in plan.unique_cells} == set(searched)
    for cell_id, run in index.items():
        assert dataclasses.astuple(run) == dataclasses.astuple(searched[cell_id])


@pytest.mark.e2e
def test_a_killed_driver_resumes_with_no_cell_lost_or_duplicated(tmp_path, data_dir):
    db = tmp_path / "mlflow.db"
    grid = [*STUB, "seeds=200", "name=killed", f"tracking.uri=sqlite:///{db}", "tracking.batch_cells=16"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env["OLB_DATA_DIR"] = str(data_dir)
    proc = subprocess.Popen(
        [sys.executable, "-m", "olb.grid", *grid, f"hydra.run.dir={tmp_path / 'run1'}"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while len(finished_cells(db)) < 20:
            assert proc.poll() is None and time.monotonic() < deadline, "no cells recorded in time"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # mid-grid, likely while writing a batch
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    with sqlite3.connect(db) as con:
        statuses = dict(
            con.execute(
                "select status, count(*) from runs r join tags t on t.run_uuid = r.run_uuid "
                "and t.key = 'olb.kind' and t.value = 'cell' group by status"
            ).fetchall()
        )
        unmeasured = con.execute(
            "select count(*) from runs r join tags t on t.run_uuid = r.run_uuid and t.key = 'olb.kind' "
            "and t.value = 'cell' where not exists (select 1 from latest_metrics m where m.run_uuid = r.run_uuid "
            "and m.key = 'rank_loss')"
        ).fetchone()[0]
    recorded = statuses.get("FINISHED", 0)
    assert 20 <= recorded < 200 and set(statuses) == {"FINISHED"} and unmeasured == 0  # nothing half-written

    rerun = run_grid(compose(grid), tmp_path / "run2")
    assert rerun.exit_code == 0 and rerun.n_resumed == recorded and rerun.n_run == 200 - recorded
    with sqlite3.connect(db) as con:
        per_cell = con.execute(
            "select t.value, count(*) from tags t join runs r on r.run_uuid = t.run_uuid "
            "where t.key = 'olb.cell_id' and r.status = 'FINISHED' group by t.value"
        ).fetchall()
    assert len(per_cell) == 200 and {n for _, n in per_cell} == {1}  # every cell once: none lost, none twice
