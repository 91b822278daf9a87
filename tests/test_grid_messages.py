"""The messages a cell travels as (olb/grid/messages.py): what the worker answers, and that it pickles for Ray."""

import dataclasses
import pickle

import pytest

from olb.grid.running.backends import SerialBackend
from olb.grid.messages import CellFailure, CellResult, CellTask, Status
from olb.run import CellSpec


def _task(data_dir, fail_at: int, plot: bool = False) -> CellTask:
    spec = CellSpec("_grid_stub", "emotions", seed=1, params={"fail_at": fail_at}, data_dir=str(data_dir))
    return CellTask(cell_id=f"stub{fail_at}", spec=spec, imports=("olb.ops.testing",), plot=plot)


def test_a_cell_answers_with_a_typed_result_or_failure_that_pickles(data_dir):
    tasks = [_task(data_dir, -1, plot=True), _task(data_dir, 5)]
    result, failure = SerialBackend().run(tasks)

    assert isinstance(result, CellResult) and result.status == Status.FINISHED == "FINISHED"
    assert result.cell_id == "stub-1" and result.curve_png.startswith(b"\x89PNG")
    assert set(result.metrics) and result.primary_metric in result.metrics and result.runtime_s > 0
    assert isinstance(failure, CellFailure) and failure.status == Status.FAILED
    assert "injected failure at update 5" in failure.error and "Traceback" in failure.traceback
    assert failure.attempts == 1 and failure.peak_rss_mb is None  # raised in the cell: not retried, not a memory kill

    for message in (*tasks, result, failure):
        assert pickle.loads(pickle.dumps(message)) == message
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.cell_id = "other"


def test_a_planned_cell_is_validated_once_when_planned_and_trusted_by_the_worker(monkeypatch):
    from olb.grid import compose, plan_grid
    from olb.grid.running.worker import execute_cell
    from olb.ops.testing import GridStub

    seen = {"validate": 0, "check_params": 0}
    for name in seen:
        original = getattr(GridStub, name).__func__

        def counted(cls, *args, _original=original, _name=name):
            seen[_name] += 1
            return _original(cls, *args)

        monkeypatch.setattr(GridStub, name, classmethod(counted))
    cfg = compose(["imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "seeds=1", "datasets=[emotions]"])
    cell = plan_grid(cfg).unique_cells[0]
    planned = dict(seen)
    assert planned["validate"] >= 1 and planned["check_params"] >= 1 and cell.spec().checked

    result = execute_cell(CellTask(cell.cell_id, cell.spec(), imports=("olb.ops.testing",)))
    assert isinstance(result, CellResult) and seen == planned  # nothing checked again in the worker

    with pytest.raises(ValueError, match="fail_at"):  # a spec built by hand is still checked
        CellSpec("_grid_stub", "emotions", params={"fail_at": -5}).validated()


def test_a_cross_validation_task_answers_with_a_typed_result_or_failure():
    from ray.exceptions import WorkerCrashedError

    from olb.grid.messages import CVFailure, CVResult, CVTask
    from olb.grid.running.backends.ray_lost import lost_failure
    from olb.grid.running.worker import execute
    from olb.ops.testing import GridStub

    task = CVTask(
        task_id="t1",
        algorithm="_grid_stub",
        params=GridStub.validate({}),  # a planned cell's: resolved and checked
        dataset="emotions",
        fingerprint="",
        folds=3,
        seed=0,
        metrics=("rank_loss",),
        imports=("olb.ops.testing",),
    )
    result = execute(task)
    assert isinstance(result, CVResult) and result.task_id == "t1" and result.status == Status.FINISHED
    assert len(result.folds) == 3 and all(set(fold) == {"rank_loss"} for fold in result.folds)
    failure = execute(dataclasses.replace(task, params={**task.params, "fail_at": 0}))
    assert isinstance(failure, CVFailure) and "injected failure" in failure.error and "Traceback" in failure.traceback
    lost = lost_failure(task, WorkerCrashedError(), max_retries=1)
    assert isinstance(lost, CVFailure) and lost.attempts == 2 and "died in each of 2 attempt(s)" in lost.error
    for message in (task, result, failure, lost):
        assert pickle.loads(pickle.dumps(message)) == message
