"""The tracker interface: where the grid records its runs, and the one store it resumes from (the cells and the
cross-validation tasks finished by earlier runs).

The grid's driver writes against :class:`Tracker` only, which assumes nothing of the store behind it. The trackers,
one class and one file each: :class:`~olb.grid.recording.tracking_noop.NoopTracker` (``tracking=off``: nothing
recorded, nothing resumed) and those of :mod:`olb.grid.recording.tracking` (a SQLite file, a database, a tracking
server). :func:`olb.grid.recording.recorder.tracker_class` picks one from the config: a new tracker is one subclass
and a line there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olb.grid.planning.config import TrackingConfig
    from olb.grid.messages import CellFailure, CellResult
    from olb.grid.planning.plan import Cell

CV_TASK_TAG = "olb.cv_task_id"  # a cross-validation task's run (olb.kind=cv): its id (olb.grid.driver.crossval.task_id)


@dataclass
class FinishedRun:
    """A cell (or cross-validation task) finished by an earlier (or this) invocation, as the tracker has it;
    ``cell_id`` is the cell's id (the task's id)."""

    run_id: str
    cell_id: str
    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]
    start_time: float
    end_time: float


Accept = Callable[[FinishedRun], bool]  # which earlier runs resume
Params = Mapping[str, object]  # a run's parameters (recorded as text)
Tags = dict[str, str]
Metrics = dict[str, float]
Curve = dict[str, list[float]]  # a cell's learning curve: "step", "value", "phase", one entry per point


class Tracker(ABC):
    """Records one invocation as a parent run with one child run per cell (and per other stage's result).

    Built as ``cls(tracking, experiment_name, code_version, read_only=False)``: the ``tracking`` config, the
    experiment's name, olb's version (recorded with every run) and whether the store is only read (the dry run:
    nothing is created, closed or written, and a store or experiment that does not exist resumes nothing)."""

    uri: str | None = None  # where the runs are (shown to the user), None when nowhere
    ui_page: str | None = None  # the UI's page of the experiment's runs (after the server's address)
    cell_artifacts: bool = False  # whether cells should send their curve plot along (the worker draws it)

    def __init__(
        self, tracking: TrackingConfig, experiment_name: str, code_version: str = "unknown", read_only: bool = False
    ):
        self.experiment_name, self.code_version, self.read_only = experiment_name, code_version, read_only
        # the driver's writer thread (olb.grid.recording.writer): cells per log_cells call at most, results queued at most
        self.batch_cells, self.queue_cells = int(tracking.batch_cells), int(tracking.queue_cells)

    @abstractmethod
    def finished_cells(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        """Cell id -> the newest finished run of that cell that ``accept(run)`` accepts (resume)."""

    @abstractmethod
    def finished_cv_tasks(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        """Cross-validation task id -> the newest finished run of that task that ``accept(run)`` accepts, in any
        experiment of the store (a task's id says everything that decides its result; resume)."""

    @abstractmethod
    def curve(self, run_id: str, metric: str) -> Curve | None:
        """The learning curve of a recorded cell run (``{"step": [...], "value": [...], "phase": [...]}``)."""

    @abstractmethod
    def start_parent(self, run_name: str, params: Params, tags: Tags, config_yaml: str) -> str | None:
        """Open this invocation's parent run (the runs logged before it become its children); its id."""

    @abstractmethod
    def finish_parent(self, status: str, metrics: Metrics, files: list[Path], tags: Tags | None = None) -> None:
        """Close the parent run with its ``status``, summary ``metrics`` and output ``files``."""

    @abstractmethod
    def log_run(
        self, run_name: str, params: Params, tags: Tags, files: list[Path], metrics: Metrics | None = None
    ) -> str | None:
        """A finished run besides the cells' (a cross-validation task, a selection); its id."""

    @abstractmethod
    def log_cells(self, cells: list[tuple[Cell, CellResult | CellFailure, Tags | None]]) -> list[str | None]:
        """Cells' results or failures, each ``(cell, message, data_tags)``, as child runs; their ids. All or none
        are recorded (a failed write raises); a run is finished only with all its data."""

    @abstractmethod
    def holds(self) -> str:
        """What the store holds for this experiment, in a line (the dry run's): where it is, and whether earlier
        runs are there to resume."""

    def show_runs(self, params: Sequence[str], metrics: Sequence[str]) -> None:
        """Let :attr:`ui_page` show the experiment's runs with ``params`` and ``metrics`` as columns (nothing for
        a tracker without a UI)."""

    def log_cell(self, cell: Cell, message: CellResult | CellFailure, data_tags: Tags | None = None) -> str | None:
        """One cell's result or failure as a child run; its id."""
        return self.log_cells([(cell, message, data_tags)])[0]
