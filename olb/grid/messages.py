"""What the grid's rooms tell one another: a cell's status, and a grid run's outcome and exit code.

The values are the strings MLflow, ``cells.csv`` and the tables show (``Status.FINISHED == "FINISHED"``), so a
status read back from any of them compares equal to its member.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from olb.grid.plan import Plan


class Status(StrEnum):
    """A cell's (or a grid run's) status."""

    FINISHED = "FINISHED"  # the cell ran to its end; its metrics are recorded
    FAILED = "FAILED"  # the cell raised, or its worker process died more often than backend.max_retries
    KILLED = "KILLED"  # the run was interrupted (Ctrl-C, SIGTERM) or abandoned by a driver that died
    UNAVAILABLE = "UNAVAILABLE"  # the cell's data set has no local copy and cannot be downloaded
    NOT_RUN = "NOT_RUN"  # planned, never run (an interrupted or lost grid)


# 1: some cell failed (or could not be recorded); 2: refused before start; 3: no cell failed but none has a
# result either (every data set unavailable); 130: interrupted.
EXIT_OK, EXIT_FAILED_CELLS, EXIT_CONFIG, EXIT_NOTHING_COMPUTED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


EXIT_LOST = 4  # the Ray head or the tracking server stopped answering (olb/grid/lost.py)


@dataclass
class GridOutcome:
    exit_code: int
    output_dir: Path
    cells: pd.DataFrame
    table: pd.DataFrame
    plan: Plan
    n_run: int = 0
    n_resumed: int = 0
    n_failed: int = 0
    n_unavailable: int = 0
    wall_s: float = 0.0
    startup_s: float = 0.0
    fanout_s: float = 0.0  # wall time from the first submitted cell to the last result
    efficiency: float = math.nan  # sum of cell runtimes and compile times / (CPUs x fanout_s)
    cpus: int = 1
    parent_run_id: str | None = None
    tracking_uri: str | None = None
    files: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    untracked: list = field(default_factory=list)  # cells that finished but could not be logged to MLflow
