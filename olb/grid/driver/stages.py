"""The stages of a grid run before its cells fan out: validate (plan and data), start the tracker while the
backend starts, cross-validate the entries with ``select``."""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Collection
from pathlib import Path
from typing import TypeVar, cast


from olb.grid.planning.config import GridBase
from olb.kernels import check_folders
from olb.data import DataDirs, dataset_names
from olb.data.files import data_dir_problems
from olb.grid.running.backend import Backend
from olb.grid.running.backends import choose_backend, make_backend
from olb.grid.planning.cost import check_machine_memory, planned_work
from olb.grid.driver.crossval import SelectionContext, SelectionOutcome, run_selection, selected_entries
from olb.grid.datacheck import DataCheck, check_data
from olb.grid.planning.expand import collect_plan
from olb.grid.running.fanout import fan_out
from olb.grid.planning.plan import GridConfigError, Plan, Problems
from olb.grid.recording.recorder import code_version, open_tracker
from olb.grid.recording.tracker import Tracker
from olb.run import missing_data_dirs

log = logging.getLogger("olb.grid")
T = TypeVar("T")


def grid_data_dir(cfg: GridBase) -> str | list[str] | None:
    """``data_dir`` of the grid (a string, several joined by os.pathsep, or a list), else ``$OLB_DATA_DIR``."""
    given = cast(str | list[str] | None, cfg.data_dir)  # the schema: a string or a list
    return given or os.environ.get("OLB_DATA_DIR") or None


def prepare(cfg: GridBase, download: bool = True) -> tuple[Plan, DataCheck]:
    """Plan the grid and check its data; every problem of both, or GridConfigError (nothing started yet).
    Without ``download`` (the dry run) a data set that would be downloaded is listed in ``to_download``, unread."""
    check_folders(GridConfigError)  # nothing is read from a refused cache, not even to check the data
    problems = Problems()
    plan = collect_plan(cfg, problems)
    missing = missing_data_dirs(cfg.data_dir)
    refused = data_dir_problems(cast(DataDirs, cfg.data_dir))
    if missing or refused:  # before the data check, whose every load would warn about (or refuse) the folder
        for problem in filter(None, [missing, *refused]):
            problems.add(problem)
        problems.raise_if_any()
    datasets = plan.datasets if plan is not None else [d for d in cfg.datasets if d in dataset_names()]
    data = check_data(list(dict.fromkeys(datasets)), grid_data_dir(cfg), cfg.verify_checksums, problems, download)
    if data.unavailable and not cfg.allow_unavailable:
        lines = "; ".join(f"{name}: {msg}" for name, msg in data.unavailable.items())
        problems.add(
            f"{len(data.unavailable)} data set(s) unavailable: {lines} Put the files there, or rerun "
            "with allow_unavailable=true to run the rest of the grid (their cells are marked unavailable), "
            "or drop them with datasets=[...]."
        )
    problems.raise_if_any()
    assert plan is not None  # no problem, so a plan
    check_machine_memory(cfg, plan, data.unavailable)
    return plan, data


def start_tracker_and_backend(cfg: GridBase, backend: Backend) -> Tracker:
    """Open the MLflow store (in a thread) while a local Ray starts (in this, the main thread: the processes Ray
    starts die with the thread that started them); the tracker, or GridConfigError with nothing left running."""
    started = time.perf_counter()
    if cfg.tracking.enabled:  # MLflow's import, and a new store's tables: 5-15 s on a loaded machine
        log.info("olb.grid: opening the MLflow store %s...", cfg.tracking.uri or "(MLflow's default)")
    with ThreadPoolExecutor(max_workers=1) as pool:
        opening = pool.submit(open_tracker, cfg, code_version())
        try:
            if backend.name == "ray":
                log.info("olb.grid: starting Ray...")
                backend.start()
                log.info("olb.grid: Ray ready in %.1f s with %d CPU(s)", backend.startup_s, backend.cpus)
        finally:
            try:
                tracker = _waited(opening, "opening the MLflow store", started)
            except GridConfigError:
                backend.stop()
                raise
    if cfg.tracking.enabled:
        log.info("olb.grid: MLflow store open after %.1f s", time.perf_counter() - started)
    return tracker


def _waited(future: Future[T], doing: str, started: float, every_s: float = 5.0) -> T:
    """``future``'s result, saying every ``every_s`` seconds that the grid is still ``doing`` it."""
    while True:
        try:
            return future.result(timeout=every_s)
        except TimeoutError:
            log.info("olb.grid: still %s: %.0f s", doing, time.perf_counter() - started)


def cross_validate(cfg: GridBase, plan: Plan, data: DataCheck, tracker: Tracker, backend: Backend) -> SelectionOutcome:
    """The selection stage (olb/grid/driver/crossval.py) for the entries with ``select``: the plan restricted to the
    chosen settings, the choices, the stage's statistics and the rows it could not choose for (nothing to do:
    the plan unchanged)."""
    selected = selected_entries(plan)
    if not selected:
        return SelectionOutcome(plan, [], None, {})
    context = SelectionContext(
        data, backend, tracker, fan_out, grid_data_dir(cfg), list(cfg.imports), cfg.verify_checksums, cfg.resume
    )
    context.legacy_store = Path(cfg.selection_store)
    selection = run_selection(plan, selected, context)
    stats = selection.stats
    assert stats is not None  # some entries were cross-validated
    log.info(
        "olb.grid: cross-validation: %d task(s), %d run, %d resumed, %d failed, %.1f s wall",
        stats.tasks,
        stats.run,
        stats.resumed,
        stats.failed,
        stats.wall_s,
    )
    for choice in selection.choices:
        log.info(
            "olb.grid: %s on %s: %s (%s)",
            choice.entry,
            choice.dataset,
            ", ".join(f"{k}={v}" for k, v in choice.params.items()),
            choice.reason,
        )
    return selection


def choose(cfg: GridBase, plan: Plan, unavailable: Collection[str] = ()) -> tuple[Backend, str]:
    """The backend for ``plan`` (``backend=auto`` chooses, see olb.grid.running.backends.choose_backend; the work is the cost model's, olb/grid/planning/cost.py) and why; the
    cells of ``unavailable`` data sets are no work."""
    work_s, n_tasks = planned_work(plan, unavailable)
    name, reason = choose_backend(cfg.backend, work_s, n_tasks)
    log.info("olb.grid: backend %s: %s", name, reason)
    return make_backend(cfg.backend, name), reason
