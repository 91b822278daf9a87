"""Orchestration: a grid run's stages, in order: validate (plan and data), choose the backend, open the tracker
while Ray starts, cross-validate, resume, fan out the cells, finish (tables, plots, the parent run, the summary).

The command line and :func:`olb.grid.cli.compose` are in :mod:`olb.grid.cli`; planning's cost model in
:mod:`olb.grid.cost`; recording in :mod:`olb.grid.recording`; reporting in :mod:`olb.grid.report`.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from datetime import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from olb.data import dataset_names
from olb.grid.datacheck import DataCheck, check_data
from olb.grid.backend import Backend
from olb.grid.fanout import FanoutStats, fan_out
from olb.grid.plan import GridConfigError, Plan, Problems, collect_plan, describe
from olb.grid.comparable import differences
from olb.grid.coverage import cover, with_summary
from olb.grid.results import (
    build_table,
    cells_frame,
    grid_title,
    reference_source,
    table_markdown,
)
from olb.grid.cost import check_memory, choose, planned_memory_mb
from olb.grid.messages import (
    EXIT_FAILED_CELLS,
    EXIT_INTERRUPTED,
    EXIT_LOST,
    EXIT_NOTHING_COMPUTED,
    EXIT_OK,
    GridOutcome,
    Status,
)
from olb.grid.tracker import Tracker
from olb.grid.recording import Recorder, code_version, open_tracker, resumed_outcomes
from olb.grid.report import print_report, write_leaderboard, write_plots

log = logging.getLogger("olb.grid")


def _cell_task(cell, cfg: DictConfig, data_dir, plot: bool) -> dict:
    return {
        "cell_id": cell.cell_id,
        "spec": cell.spec_dict(data_dir, cfg.verify_checksums),
        "imports": list(cfg.imports),
        "plot": plot,
        "title": f"{cell.run_name} ({cell.cell_id})",
        "predicted_memory_mb": planned_memory_mb(cell.algorithm, cell.params, cell.dataset),
    }


def grid_data_dir(cfg: DictConfig):
    """``data_dir`` of the grid (a string, several joined by os.pathsep, or a list), else ``$OLB_DATA_DIR``."""
    return _plain_value(cfg.data_dir) or os.environ.get("OLB_DATA_DIR") or None


def _plain_value(value):
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value


def prepare(cfg: DictConfig) -> tuple[Plan, DataCheck]:
    """Plan the grid and check its data; every problem of both, or GridConfigError (nothing started yet)."""
    problems = Problems()
    plan = collect_plan(cfg, problems)
    datasets = (
        plan.datasets if plan is not None else [d for d in (_plain_value(cfg.datasets) or []) if d in dataset_names()]
    )
    data = check_data(list(dict.fromkeys(datasets)), grid_data_dir(cfg), cfg.verify_checksums, problems)
    if data.unavailable and not cfg.allow_unavailable:
        lines = "; ".join(f"{name}: {msg}" for name, msg in data.unavailable.items())
        problems.add(
            f"{len(data.unavailable)} data set(s) unavailable: {lines} Put the files there, or rerun "
            "with allow_unavailable=true to run the rest of the grid (their cells are marked unavailable), "
            "or drop them with datasets=[...]."
        )
    problems.raise_if_any()
    return plan, data


def start_tracker_and_backend(cfg: DictConfig, backend):
    """Open the MLflow store (in a thread) while a local Ray starts (in this, the main thread: the processes Ray
    starts die with the thread that started them); the tracker, or GridConfigError with nothing left running."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        opening = pool.submit(open_tracker, cfg, code_version())
        try:
            if backend.name == "ray":
                backend.start()
                log.info("olb.grid: Ray ready in %.1f s with %d CPU(s)", backend.startup_s, backend.cpus)
        finally:
            try:
                tracker = opening.result()
            except GridConfigError:
                backend.stop()
                raise
    return tracker


def cross_validate(cfg: DictConfig, plan: Plan, data: DataCheck, tracker, backend):
    """The selection stage (olb/grid/crossval.py) for the entries with ``select``: the plan restricted to the
    chosen settings, the choices, the stage's statistics and the rows it could not choose for (nothing to do:
    the plan unchanged)."""
    selected = {key: info["select"] for key, info in plan.entries.items() if info.get("select")}
    if not selected:
        return plan, [], {}, {}
    from olb.grid.crossval import run_selection

    plan, choices, stats, unselected = run_selection(
        plan,
        selected,
        data,
        backend,
        tracker,
        Path(cfg.selection_store),
        grid_data_dir(cfg),
        list(cfg.imports),
        cfg.verify_checksums,
        fan_out,
    )
    log.info(
        "olb.grid: cross-validation: %d task(s), %d run, %d resumed, %d failed, %.1f s wall",
        stats["cv_tasks"],
        stats["cv_run"],
        stats["cv_resumed"],
        stats["cv_failed"],
        stats["cv_wall_s"],
    )
    for choice in choices:
        log.info(
            "olb.grid: %s on %s: %s (%s)",
            choice.entry,
            choice.dataset,
            ", ".join(f"{k}={v}" for k, v in choice.params.items()),
            choice.reason,
        )
    return plan, choices, stats, unselected


def run_grid(
    cfg: DictConfig, output_dir: str | os.PathLike, overrides: list[str] | None = None, stream=None
) -> GridOutcome:
    """Run every cell of ``cfg`` not finished yet, record them, and write cells.csv, table.csv/.md, plots.

    Raises GridConfigError before any work (no output folder, no MLflow run) when the config or the data is
    invalid, listing every problem. ``overrides`` (the command line's) decide the table's title and which
    entries still have the experiment file's settings (only those are shown beside the paper's values).
    """
    t_start = time.perf_counter()
    plan, data = prepare(cfg)
    for warning in plan.warnings:
        log.warning("warning: %s", warning)
    for name, msg in data.unavailable.items():
        log.warning(
            "olb.grid: data set %r is unavailable; its cells are marked unavailable (allow_unavailable=true): %s",
            name,
            msg,
        )
    backend, backend_reason = choose(cfg, plan, data.unavailable)
    backend.log_dir = Path(output_dir)  # where a local Ray's logs of lost cells are kept
    tracker = start_tracker_and_backend(cfg, backend)
    run = GridRun(
        cfg,
        plan,
        data,
        backend,
        backend_reason,
        tracker,
        Path(output_dir),
        overrides or [],
        stream or sys.stdout,
        t_start,
    )
    try:  # every stage runs on the one backend, stopped once at the end
        check_memory(cfg, plan, data.unavailable, backend)
        return _run_stages(run)
    finally:
        backend.stop()


@dataclass
class GridRun:
    """What every stage of one invocation works with: the config, the plan and its data, where cells run and where
    they are recorded, the output folder, the command line's overrides, the console and the start time."""

    cfg: DictConfig
    plan: Plan
    data: DataCheck
    backend: Backend
    backend_reason: str
    tracker: Tracker
    out: Path
    overrides: list[str]
    stream: TextIO
    t_start: float


@dataclass
class Stages:
    """What the stages before the report produced: every cell's outcome, the fan-out's record and statistics,
    how many cells were resumed or unavailable, the parent run, and the cross-validated choices."""

    outcomes: dict
    recorder: Recorder
    fan: FanoutStats
    n_resumed: int
    n_unavailable: int
    parent_id: str | None
    choices: list
    cv_stats: dict


def _run_stages(run: GridRun) -> GridOutcome:
    """Cross-validation, resume, fan-out and the report, on a started backend."""
    cfg, out = run.cfg, run.out
    out.mkdir(parents=True, exist_ok=True)
    log.info(
        "olb.grid: experiment %r, %d cells (%d unique) on %d data set(s)\n%s",
        cfg.name,
        len(run.plan.cells),
        len(run.plan.unique_cells),
        len(run.plan.datasets),
        describe(run.plan),
    )
    run.plan, choices, cv_stats, unselected = cross_validate(cfg, run.plan, run.data, run.tracker, run.backend)
    outcomes = resumed_outcomes(run.tracker, cfg, run.plan, run.data)
    n_resumed = len(outcomes)
    _mark_not_runnable(run, outcomes, unselected)
    n_unavailable = sum(1 for o in outcomes.values() if o["status"] == Status.UNAVAILABLE)
    todo = [c for c in run.plan.unique_cells if c.cell_id not in outcomes]
    data_dir = grid_data_dir(cfg)
    tasks = [_cell_task(c, cfg, data_dir, run.tracker.cell_artifacts) for c in todo]
    log.info(
        "olb.grid: %d to run, %d already finished (resume=%s), %d unavailable; output: %s",
        len(todo),
        n_resumed,
        cfg.resume,
        n_unavailable,
        out,
    )
    parent_id = _start_parent(run, len(todo), n_resumed)
    recorder = Recorder(run.plan, run.data, run.tracker, outcomes, out)
    fan = fan_out(run.backend, tasks, recorder, cfg.name, skipped=n_resumed)
    return _finish(run, Stages(outcomes, recorder, fan, n_resumed, n_unavailable, parent_id, choices, cv_stats))


def _mark_not_runnable(run: GridRun, outcomes: dict, unselected: dict) -> None:
    """Outcomes for the cells that will not run: their data set is unavailable, or cross-validation chose no
    setting for their entry."""
    for c in run.plan.unique_cells:
        if c.dataset in run.data.unavailable and c.cell_id not in outcomes:
            error, status = run.data.unavailable[c.dataset], Status.UNAVAILABLE
        elif (c.entry, c.dataset) in unselected:
            error, status = unselected[(c.entry, c.dataset)], Status.FAILED
        else:
            continue
        outcomes[c.cell_id] = {"status": status, "error": error, "metrics": {}, "source": ""}


def _start_parent(run: GridRun, n_todo: int, n_resumed: int) -> str | None:
    """Open the invocation's parent run in the tracker: what was planned, where, how and from which data."""
    cfg, plan = run.cfg, run.plan
    params = {
        "experiment": cfg.name,
        "n_cells": len(plan.cells),
        "n_unique_cells": len(plan.unique_cells),
        "n_to_run": n_todo,
        "n_resumed": n_resumed,
        "algorithms": ",".join(cfg.algorithms),
        "datasets": ",".join(plan.datasets),
        "seeds": str(_plain_value(cfg.seeds)),
        "backend": run.backend.name,
        "resume": cfg.resume,
        "verify_checksums": cfg.verify_checksums,
    }
    tags = {
        "olb.backend_reason": run.backend_reason,
        "olb.output_dir": str(run.out.resolve()),
        "olb.overrides": " ".join(run.overrides),
        "olb.data_fingerprints": " ".join(f"{n}={s.fingerprint}" for n, s in run.data.sources.items()),
    }
    return run.tracker.start_parent(
        f"{cfg.name} {datetime.now():%Y-%m-%d %H:%M:%S}", params, tags, OmegaConf.to_yaml(cfg)
    )


def _write_outputs(run: GridRun, st: Stages) -> tuple[pd.DataFrame, pd.DataFrame, str, dict]:
    """cells.csv, table.csv, table.md (with the chosen settings and the leaderboard) and the plots: the cells, the
    table, table.md's text and the files written by name."""
    cfg, plan, out = run.cfg, run.plan, run.out
    cells = cells_frame(plan, st.outcomes, run.data)
    table = build_table(
        plan, st.outcomes, cfg.reference, run.data.unavailable, differences(plan, cfg.reference, cfg.verify_checksums)
    )
    table = cover(table, cfg.reference, plan.entries, plan.datasets, run.data.unavailable, plan.lower_is_better)
    files = {"cells": out / "cells.csv", "table_csv": out / "table.csv", "table_md": out / "table.md"}
    cells.to_csv(files["cells"], index=False)
    table.to_csv(files["table_csv"], index=False)
    markdown = table_markdown(
        table,
        grid_title(cfg, plan, run.overrides),
        list(cfg.table.rows),
        list(cfg.table.columns),
        cfg.table.decimals,
        reference_source(cfg.reference),
        cfg.table.bold_best,
    )
    markdown = with_summary(markdown, table, cfg.reference)
    if st.choices:
        from olb.grid.crossval import selection_markdown

        markdown += "\n" + selection_markdown(st.choices)
    if cfg.leaderboard:
        board_md, board_files = write_leaderboard(plan, table, cells, out / "leaderboard")
        markdown += "\n" + board_md
        if board_files:
            files["leaderboard"] = out / "leaderboard"
    files["table_md"].write_text(markdown)
    plot_paths = write_plots(plan, st.outcomes, table, cells, run.tracker, out / "plots") if cfg.plots else []
    if plot_paths:
        files["plots"] = out / "plots"
    return cells, table, markdown, files


def _exit_code(fan: FanoutStats, n_failed: int, n_finished: int, untracked: list) -> int:
    if fan.lost is not None:
        return EXIT_LOST
    if fan.interrupted:
        return EXIT_INTERRUPTED
    if n_failed or untracked:
        return EXIT_FAILED_CELLS
    return EXIT_NOTHING_COMPUTED if n_finished == 0 else EXIT_OK


def _finish_parent(run: GridRun, st: Stages, outcome: GridOutcome, n_finished: int) -> bool:
    """Close the parent run with the grid's status, summary metrics and files; False if the tracker failed."""
    fan = st.fan
    if fan.lost is not None and fan.lost.what == "tracking":
        return True
    status = (
        Status.KILLED
        if fan.interrupted
        else (Status.FAILED if outcome.n_failed or n_finished == 0 else Status.FINISHED)
    )
    status = Status.FAILED if fan.lost is not None else status
    metrics = {
        "n_run": fan.n_done,
        "n_resumed": st.n_resumed,
        "n_failed": outcome.n_failed,
        "n_unavailable": st.n_unavailable,
        "wall_s": outcome.wall_s,
        "startup_s": fan.startup_s,
        **{k: float(v) for k, v in st.cv_stats.items() if k != "interrupted"},
    }
    if not math.isnan(outcome.efficiency):
        metrics["fanout_efficiency"] = outcome.efficiency
    files = outcome.files
    try:
        run.tracker.finish_parent(
            status,
            metrics,
            [
                files["cells"],
                files["table_csv"],
                files["table_md"],
                *([run.out / "plots"] if "plots" in files else []),
                *([files["leaderboard"]] if "leaderboard" in files else []),
            ],
            {"olb.ended_by": str(fan.lost)} if fan.lost is not None else None,
        )
    except Exception as err:  # noqa: BLE001 - the files are written; say so and go on
        log.error("olb.grid: could not record the grid's parent run in MLflow (%s: %s)", type(err).__name__, err)
        return False
    return True


def _finish(run: GridRun, st: Stages) -> GridOutcome:
    """Write cells.csv, table.csv, table.md and the plots, close the parent run, print the report."""
    cells, table, markdown, files = _write_outputs(run, st)
    fan = st.fan
    unique_cells = cells.drop_duplicates("cell_id")
    n_failed = int((unique_cells["status"] == Status.FAILED).sum())
    n_finished = int((unique_cells["status"] == Status.FINISHED).sum())
    ran = cells[(cells["source"] == "run") & (cells["status"] == Status.FINISHED)].drop_duplicates("cell_id")
    busy = float(ran["runtime_s"].sum() + ran["compile_s"].fillna(0).sum()) if len(ran) else 0.0  # CPUs kept busy
    efficiency = busy / (fan.cpus * fan.seconds) if (fan.n_done and fan.seconds > 0) else math.nan
    outcome = GridOutcome(
        exit_code=_exit_code(fan, n_failed, n_finished, st.recorder.untracked),
        output_dir=run.out,
        cells=cells,
        table=table,
        plan=run.plan,
        n_run=fan.n_done,
        n_resumed=st.n_resumed,
        n_failed=n_failed,
        n_unavailable=st.n_unavailable,
        wall_s=time.perf_counter() - run.t_start,
        startup_s=fan.startup_s,
        fanout_s=fan.seconds if fan.n_done else 0.0,
        efficiency=efficiency,
        cpus=fan.cpus,
        parent_run_id=st.parent_id,
        tracking_uri=run.tracker.uri,
        files=files,
        failures=st.recorder.failures,
        untracked=st.recorder.untracked,
    )
    if not _finish_parent(run, st, outcome, n_finished):
        outcome.exit_code = outcome.exit_code or EXIT_FAILED_CELLS
    print_report(outcome, markdown, run.cfg, efficiency, run.stream)
    return outcome
