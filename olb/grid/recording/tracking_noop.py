"""``tracking=off``: the tracker that records nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from olb.grid.recording.tracker import Accept, Curve, FinishedRun, Metrics, Params, Tags, Tracker

if TYPE_CHECKING:
    from olb.grid.messages import CellFailure, CellResult
    from olb.grid.planning.plan import Cell


class NoopTracker(Tracker):
    """Records nothing, so resumes nothing (neither cells nor cross-validation tasks); the output folder's files
    are the only record."""

    def holds(self) -> str:
        return "tracking off: nothing resumes"

    def finished_cells(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        return {}

    def finished_cv_tasks(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        return {}

    def curve(self, run_id: str, metric: str) -> Curve | None:
        return None

    def start_parent(self, run_name: str, params: Params, tags: Tags, config_yaml: str) -> str | None:
        return None

    def finish_parent(self, status: str, metrics: Metrics, files: list[Path], tags: Tags | None = None) -> None:
        pass

    def log_run(
        self, run_name: str, params: Params, tags: Tags, files: list[Path], metrics: Metrics | None = None
    ) -> str | None:
        return None

    def log_cells(self, cells: list[tuple[Cell, CellResult | CellFailure, Tags | None]]) -> list[str | None]:
        return [None] * len(cells)
