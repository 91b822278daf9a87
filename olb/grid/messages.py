"""What the grid's rooms tell one another: a cell's task, its result or failure, a status, and a grid run's
outcome and exit code.

One cell travels as a :class:`CellTask` (driver -> backend -> worker) and comes back as a :class:`CellResult`
or a :class:`CellFailure` (worker or backend -> driver: recording, tracker, table). They are plain frozen
dataclasses, so they pickle for Ray. Status values are the strings MLflow, ``cells.csv`` and the tables show
(``Status.FINISHED == "FINISHED"``), so a status read back from any of them compares equal to its member.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

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
# the rest finished, but cells of the grid's own plan were unavailable (no data) and the command line did not say
# allow_unavailable=true (an experiment file that sets it lets the grid run the rest, not succeed without them)
EXIT_UNAVAILABLE = 5


@dataclass(frozen=True)
class CellTask:
    """What a worker needs to run one cell (:func:`olb.grid.worker.execute_cell`)."""

    cell_id: str
    spec: dict  # olb.run.CellSpec's keyword arguments
    imports: tuple[str, ...] = ()  # plugin modules the worker imports first (they register learners)
    plot: bool = False  # whether the worker draws the curve's PNG
    title: str = ""  # the PNG's title
    predicted_memory_mb: float = 0.0  # the cost model's peak memory (olb.grid.cost.planned_memory_mb); Ray reserves it


@dataclass(frozen=True, kw_only=True)
class CellReport:
    """What every answer about one cell says: which cell, when, for how long, and where it ran."""

    status: ClassVar[Status]
    cell_id: str
    start_time: float  # epoch seconds
    end_time: float
    wall_s: float = 0.0  # everything, data loading included
    cpu_s: float = 0.0
    host: str = ""
    node_ip: str = ""  # the Ray node's IP; "" in the driver (serial backend)
    pid: int = 0


@dataclass(frozen=True, kw_only=True)
class CellResult(CellReport):
    """A finished cell: its metrics, learning curve, timings and the data it read."""

    status: ClassVar[Status] = Status.FINISHED
    metrics: dict[str, float]
    primary_metric: str
    curve: dict[str, list]  # {"step": [...], "phase": [...], "value": [...]}: running mean of primary_metric
    phases: dict[str, dict[str, float]]  # phase name -> its timings
    data_fingerprint: str  # what the cell read (the driver checks it against its plan)
    data_files: str
    setup_s: float
    runtime_s: float  # learner construction + stream (data loading, compiling excluded)
    train_us_per_example: float  # training CPU per training row
    compile_s: float  # numba compiling/loading kernels first called in this process
    peak_rss_mb: float
    curve_png: bytes | None = None  # the worker's plot of the curve (CellTask.plot), None if not drawn


@dataclass(frozen=True, kw_only=True)
class CellFailure(CellReport):
    """A cell that raised (its traceback), or whose worker died in each of its ``attempts``."""

    status: ClassVar[Status] = Status.FAILED
    error: str
    traceback: str = ""
    attempts: int = 1
    peak_rss_mb: float | None = None  # when killed for memory: its use then (None: not said), in MB
    memory_limit_mb: float | None = None  # ... and the node's limit Ray kills above


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
