"""The tracker interface: where the grid records its runs and finds the cells finished by earlier runs.

The grid's driver writes against :class:`Tracker` only. Two trackers exist: :class:`olb.grid.tracking.MlflowTracker`
(a SQLite file or an MLflow server) and :class:`NoopTracker` (``tracking=off``: nothing recorded, nothing resumed).
``olb.grid.recording.open_tracker`` picks one from the config. A new tracker is one subclass and a line there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olb.grid.messages import CellFailure, CellResult
    from olb.grid.plan import Cell
    from olb.grid.tracking import FinishedRun


class Tracker(ABC):
    """Records one invocation as a parent run with one child run per cell (and per other stage's result)."""

    uri: str | None = None  # where the runs are (shown to the user), None when nowhere
    cell_artifacts: bool = False  # whether cells should send their curve plot along (the worker draws it)

    @abstractmethod
    def finished_cells(self, accept=None) -> dict[str, FinishedRun]:
        """Cell id -> the newest finished run of that cell that ``accept(run)`` accepts (resume)."""

    @abstractmethod
    def curve(self, run_id: str, metric: str) -> dict | None:
        """The learning curve of a recorded cell run (``{"step": [...], "value": [...], "phase": [...]}``)."""

    @abstractmethod
    def start_parent(self, run_name: str, params: dict, tags: dict, config_yaml: str) -> str | None:
        """Open this invocation's parent run; its id."""

    @abstractmethod
    def finish_parent(self, status: str, metrics: dict, files: list[Path], tags: dict | None = None) -> None:
        """Close the parent run with its ``status``, summary ``metrics`` and output ``files``."""

    @abstractmethod
    def log_run(self, run_name: str, params: dict, tags: dict, files: list[Path]) -> str | None:
        """A finished run besides the cells' (e.g. a cross-validated selection); its id."""

    @abstractmethod
    def log_cell(self, cell: Cell, message: CellResult | CellFailure, data_tags: dict | None = None) -> str | None:
        """One cell's result or failure as a child run; its id."""


class NoopTracker(Tracker):
    """``tracking=off``: records nothing, so resumes nothing; the output folder's files are the only record."""

    def finished_cells(self, accept=None) -> dict[str, FinishedRun]:
        return {}

    def curve(self, run_id: str, metric: str) -> dict | None:
        return None

    def start_parent(self, run_name: str, params: dict, tags: dict, config_yaml: str) -> str | None:
        return None

    def finish_parent(self, status: str, metrics: dict, files: list[Path], tags: dict | None = None) -> None:
        pass

    def log_run(self, run_name: str, params: dict, tags: dict, files: list[Path]) -> str | None:
        return None

    def log_cell(self, cell: Cell, message: CellResult | CellFailure, data_tags: dict | None = None) -> str | None:
        return None
