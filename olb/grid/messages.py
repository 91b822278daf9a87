"""What the grid's rooms tell one another: a cell's or a cross-validation's task, its result or failure, a cell's
outcome, a status, and a grid run's outcome and exit code.

One cell travels as a :class:`CellTask` (driver -> backend -> worker) and comes back as a :class:`CellResult`
or a :class:`CellFailure` (worker or backend -> driver: recording, tracker, table); one candidate setting's
cross-validation as a :class:`CVTask`, answered by a :class:`CVResult` or a :class:`CVFailure`. The driver keeps
what it knows of each cell as a :class:`CellOutcome`. They are plain dataclasses, so they pickle for Ray. Status values are the strings MLflow, ``cells.csv`` and the tables show
(``Status.FINISHED == "FINISHED"``), so a status read back from any of them compares equal to its member.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeAlias

if TYPE_CHECKING:
    import pandas as pd

    from olb.data.files import DataDirs
    from olb.run import CellSpec

    from olb.grid.planning.plan import Plan


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


EXIT_LOST = 4  # the Ray head or the tracking server stopped answering (olb/grid/lost.py), or a disk is full
# the rest finished, but cells of the grid's own plan were unavailable (no data) and the command line did not say
# allow_unavailable=true (an experiment file that sets it lets the grid run the rest, not succeed without them)
EXIT_UNAVAILABLE = 5


@dataclass(frozen=True)
class CellTask:
    """What a worker needs to run one cell (:func:`olb.grid.running.worker.execute_cell`)."""

    cell_id: str
    spec: CellSpec  # checked when the grid planned it (CellSpec.validated)
    imports: tuple[str, ...] = ()  # plugin modules the worker imports first (they register learners)
    plot: bool = False  # whether the worker draws the curve's PNG
    title: str = ""  # the PNG's title
    predicted_memory_mb: float = 0.0  # peak memory, as planning/cost.py predicts it; Ray reserves it


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
    # {"step": [...], "phase": [...], "value": [...]}: running mean of primary_metric; "window": over the last examples
    curve: dict[str, list]
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


@dataclass(frozen=True, kw_only=True)
class CVTask:
    """One candidate setting's k-fold cross-validation on one data set's training split, every fold in one worker
    call (:func:`olb.grid.running.worker.execute_cv`); ``task_id`` hashes what decides its result
    (:func:`olb.grid.driver.crossval.cv_task`)."""

    task_id: str
    algorithm: str
    params: dict[str, object]  # the candidate setting (resolved hyperparameters)
    dataset: str
    fingerprint: str  # the data the driver planned with
    folds: int
    seed: int  # the fold seed
    metrics: tuple[str, ...]
    data_dir: DataDirs = None
    imports: tuple[str, ...] = ()
    verify_checksums: bool = True
    predicted_memory_mb: float = 0.0


@dataclass(frozen=True, kw_only=True)
class CVResult:
    """A finished cross-validation task: each fold's metrics, in the task's metric order."""

    status: ClassVar[Status] = Status.FINISHED
    task_id: str
    folds: list[dict[str, float]]
    cpu_s: float | None = None  # None: not recorded (a task moved from an earlier version's store)
    wall_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class CVFailure:
    """A cross-validation task that raised, or whose worker died in each of its ``attempts``."""

    status: ClassVar[Status] = Status.FAILED
    task_id: str
    error: str
    traceback: str = ""
    attempts: int = 1


@dataclass(frozen=True)
class Choice:
    """The setting cross-validation chose for one (entry, data set), and why."""

    entry: str
    dataset: str
    params: dict[str, object]
    loops: int
    reason: str
    rule: str
    table: pd.DataFrame  # one row per (setting, fold), one column per metric
    partial: bool  # some settings have no cross-validation result (failed)


@dataclass(frozen=True, kw_only=True)
class SelectionStats:
    """The cross-validation stage's figures: its tasks (run, resumed, failed), wall and busy seconds, CPUs."""

    tasks: int
    run: int
    resumed: int
    failed: int
    wall_s: float
    busy_s: float  # the tasks' wall seconds, summed
    cpus: int

    def metrics(self) -> dict[str, float]:
        """As the grid's parent run records them (``cv_tasks``, ``cv_run``, ...)."""
        return {f"cv_{key}": float(value) for key, value in dataclasses.asdict(self).items()}


Task: TypeAlias = CellTask | CVTask  # what a backend runs
Answer: TypeAlias = CellResult | CellFailure | CVResult | CVFailure  # what it yields for each task


@dataclass(frozen=True, kw_only=True)
class CellOutcome:
    """What the driver knows of one cell: its status and, once run (here or by an earlier invocation), its
    figures and where they are recorded. One row of ``cells.csv``, with the cell's settings beside it."""

    status: Status
    source: str = ""  # "run" (by this invocation), "resumed" (an earlier one's tracked run), "" (not run)
    error: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    runtimes: dict[str, float] = field(default_factory=dict)  # olb.grid.planning.plan.RUNTIME_COLUMNS and wall_s
    run_id: str | None = None  # the cell's tracked run
    curve: dict[str, list[float]] | None = None  # the running mean, when this invocation ran it
    primary_metric: str | None = None
    host: str = ""
    node_ip: str = ""


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
    planned_cpu_s: float = 0.0  # the cost model's CPU seconds for the cells this invocation ran (an idle CPU each)
    cpu_s: float = 0.0  # ... and their measured CPU seconds
    compile_s: float = 0.0  # ... and the seconds their workers spent building or loading kernels
    cpus: int = 1
    parent_run_id: str | None = None
    tracking_uri: str | None = None
    ui_page: str | None = None  # the MLflow UI's page of the experiment's runs (after the UI's address)
    files: dict[str, Path] = field(default_factory=dict)  # what was written, by name (cells, table_csv, ...)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (cell's run name, its traceback)
    untracked: list[str] = field(default_factory=list)  # cells that finished but could not be logged to MLflow
