"""``tracking=off``: the tracker that records nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from olb.grid.recording.tracker import Accept, FinishedRun, Tracker

if TYPE_CHECKING:
    from olb.grid.messages import CellFailure, CellResult
    from olb.grid.plan import Cell


class NoopTracker(Tracker):
    """Records nothing, so resumes nothing (neither cells nor cross-validation tasks); the output folder's files
    are the only record."""

    def finished_cells(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        return {}

    def finished_cv_tasks(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        return {}

    def curve(self, run_id: str, metric: str) -> dict | None:
        return None

    def start_parent(self, run_name: str, params: dict, tags: dict, config_yaml: str) -> str | None:
        return None

    def finish_parent(self, status: str, metrics: dict, files: list[Path], tags: dict | None = None) -> None:
        pass

    def log_run(
        self, run_name: str, params: dict, tags: dict, files: list[Path], metrics: dict | None = None
    ) -> str | None:
        return None

    def log_cells(self, cells: list[tuple[Cell, CellResult | CellFailure, dict | None]]) -> list[str | None]:
        return [None] * len(cells)
