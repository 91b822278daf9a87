"""The messages a cell travels as (olb/grid/messages.py): what the worker answers, and that it pickles for Ray."""

import dataclasses
import pickle

import pytest

from olb.grid.running.backends import SerialBackend
from olb.grid.messages import CellFailure, CellResult, CellTask, Status
from olb.run import CellSpec


def _task(data_dir, fail_at: int, plot: bool = False) -> CellTask:
    spec = CellSpec("_grid_stub", "emotions", seed=1, params={"fail_at": fail_at}, data_dir=str(data_dir))
    return CellTask(cell_id=f"stub{fail_at}", spec=spec, imports=("olb.grid.testing",), plot=plot)


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
