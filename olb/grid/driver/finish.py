"""The last stage of a grid run: the output files (cells.csv, table.csv, table.md with the chosen settings and
the leaderboard, the plots), the parent run closed with the grid's status, the exit code, the report on the
console. A full disk ends it with :class:`~olb.grid.writing.DiskFull` (exit 4), the parent run closed FAILED
where the store can still take it, and the files as they were before (each is written whole or not at all)."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import pandas as pd

from olb.grid.reporting.comparable import differences
from olb.data.files import data_dirs
from olb.grid.driver.context import GridRun, Stages
from olb.grid.planning.cost import planned_cell_s
from olb.grid.reporting.coverage import cover, with_summary
from olb.grid.running.fanout import FanoutStats
from olb.grid.messages import (
    EXIT_FAILED_CELLS,
    EXIT_INTERRUPTED,
    EXIT_LOST,
    EXIT_NOTHING_COMPUTED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    GridOutcome,
    Status,
)
from olb.grid.reporting.export import export_results
from olb.grid.recording.recorder import code_version
from olb.grid.reporting.markdown import TableLayout, grid_title, selection_markdown, table_markdown
from olb.grid.reporting.references import reference_source
from olb.grid.reporting.report import print_report, write_leaderboard, write_plots
from olb.grid.recording.results import cells_frame
from olb.grid.recording.tracking_cells import MAX_TAG
from olb.grid.reporting.table import build_table
from olb.grid.driver.stages import grid_data_dir
from olb.grid.writing import DiskFull, disk_full, write_csv, write_text

log = logging.getLogger("olb.grid")
NOTE_TAG = "mlflow.note.content"  # a run's description in the MLflow UI (markdown)


def write_outputs(run: GridRun, st: Stages) -> tuple[pd.DataFrame, pd.DataFrame, str, dict[str, Path]]:
    """cells.csv, table.csv, table.md (with the chosen settings and the leaderboard) and the plots: the cells, the
    table, table.md's text and the files written by name."""
    cfg, plan, out = run.cfg, run.plan, run.out
    cells = cells_frame(plan, st.outcomes, run.data)
    table = build_table(
        plan, st.outcomes, cfg.reference, run.data.unavailable, differences(plan, cfg.reference, cfg.verify_checksums)
    )
    table = cover(table, cfg.reference, plan.entries, plan.datasets, run.data.unavailable, plan.lower_is_better)
    files = {"cells": out / "cells.csv", "table_csv": out / "table.csv", "table_md": out / "table.md"}
    write_csv(files["cells"], cells)
    write_csv(files["table_csv"], table)
    markdown = table_markdown(
        table,
        grid_title(cfg, plan, run.overrides),
        TableLayout(list(cfg.table.rows), list(cfg.table.columns), cfg.table.decimals, cfg.table.bold_best),
        reference_source(cfg.reference),
    )
    markdown = with_summary(markdown, table, cfg.reference)
    if st.choices:
        markdown += "\n" + selection_markdown(st.choices)
    if cfg.leaderboard:
        board_md, board_files = write_leaderboard(plan, table, cells, out / "leaderboard")
        markdown += "\n" + board_md
        if board_files:
            files["leaderboard"] = out / "leaderboard"
    write_text(files["table_md"], markdown)
    plot_paths = write_plots(plan, st.outcomes, table, cells, run.tracker.curve, out / "plots") if cfg.plots else []
    if plot_paths:
        files["plots"] = out / "plots"
    return cells, table, markdown, files


def _exit_code(fan: FanoutStats, n_failed: int, n_finished: int, untracked: list[str], missing_data: bool) -> int:
    if fan.lost is not None:
        return EXIT_LOST
    if fan.interrupted:
        return EXIT_INTERRUPTED
    if n_failed or untracked:
        return EXIT_FAILED_CELLS
    if n_finished == 0:
        return EXIT_NOTHING_COMPUTED
    return EXIT_UNAVAILABLE if missing_data else EXIT_OK


def allowed_unavailable(overrides: list[str]) -> bool:
    """Whether the command line (``overrides``) set ``allow_unavailable=true``."""
    values = [
        o.split("=", 1)[1] for o in overrides if "=" in o and o.lstrip("+~").split("=", 1)[0] == "allow_unavailable"
    ]
    return bool(values) and values[-1].strip().lower() == "true"


def parent_note(markdown: str) -> str:
    """The parent run's description (the MLflow UI shows it on the run's page): the table's summary, cut to what a
    tag holds, pointing to the whole table."""
    summary = markdown.split("## All values")[0].strip()
    more = "\n\nEvery value, with the paper's where comparable: the artifact table.md."
    room = MAX_TAG - len(more)
    return (summary if len(summary) <= room else summary[: room - 4] + " ...") + more


def _finish_parent(run: GridRun, st: Stages, outcome: GridOutcome, n_finished: int, markdown: str) -> bool:
    """Close the parent run with the grid's status, summary metrics, description and files; False if the tracker
    failed."""
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
        **(st.cv_stats.metrics() if st.cv_stats is not None else {}),
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
            {NOTE_TAG: parent_note(markdown), **({"olb.ended_by": str(fan.lost)} if fan.lost is not None else {})},
        )
    except Exception as err:  # noqa: BLE001 - the files are written; say so and go on
        log.error("olb.grid: could not record the grid's parent run in MLflow (%s: %s)", type(err).__name__, err)
        return False
    return True


def _end_on_full_disk(run: GridRun, st: Stages, full: DiskFull) -> None:
    """Say that the disk is full (unless the fan-out ended on a full disk and said so) and close the parent run
    FAILED; a store on the full disk cannot take that: the next run marks it KILLED."""
    if not isinstance(st.fan.lost, DiskFull):
        log.error("olb.grid: %s", full)
    mlflow_log = logging.getLogger("mlflow")
    level = mlflow_log.level
    mlflow_log.setLevel(logging.CRITICAL)  # not MLflow's traceback of the same full disk: one line says it below
    try:
        run.tracker.finish_parent(Status.FAILED, {"n_run": st.fan.n_done}, [], {"olb.ended_by": str(full)})
    except Exception as err:  # noqa: BLE001 - said in the line below; the next run closes it
        log.warning(
            "olb.grid: the parent run stays RUNNING until the next run marks it KILLED (%s)", type(err).__name__
        )
    finally:
        mlflow_log.setLevel(level)


def _write_files(run: GridRun, st: Stages) -> tuple[pd.DataFrame, pd.DataFrame, str, dict[str, Path]]:
    """cells.csv, table.csv, table.md, the plots and the export written: the cells, the table, table.md's text
    and the files by name; DiskFull (the parent run closed) when the disk cannot take them."""
    plots = ", the leaderboard" * bool(run.cfg.leaderboard) + " and the plots" * bool(run.cfg.plots)
    log.info("olb.grid: writing cells.csv, the table%s to %s...", plots, run.out)
    try:
        cells, table, markdown, files = write_outputs(run, st)
        if run.cfg.export:
            files["export"] = export_results(
                Path(run.cfg.export),
                table,
                cells,
                markdown,
                run.overrides,
                code_version(),
                data_dirs(grid_data_dir(run.cfg)),
                files.get("leaderboard"),
            )
    except (DiskFull, OSError) as err:
        full = disk_full(err, run.out)
        if full is None:
            raise
        _end_on_full_disk(run, st, full)
        raise full from None
    return cells, table, markdown, files


def finish(run: GridRun, st: Stages) -> GridOutcome:
    """Write cells.csv, table.csv, table.md and the plots, close the parent run, print the report; DiskFull
    (said in one line, the parent run closed) when the disk cannot take them."""
    cells, table, markdown, files = _write_files(run, st)
    fan = st.fan
    unique_cells = cells.drop_duplicates("cell_id")
    n_failed = int((unique_cells["status"] == Status.FAILED).sum())
    n_finished = int((unique_cells["status"] == Status.FINISHED).sum())
    ran = cells[(cells["source"] == "run") & (cells["status"] == Status.FINISHED)].drop_duplicates("cell_id")
    busy = float(ran["runtime_s"].sum() + ran["compile_s"].fillna(0).sum()) if len(ran) else 0.0  # CPUs kept busy
    efficiency = busy / (fan.cpus * fan.seconds) if (fan.n_done and fan.seconds > 0) else math.nan
    by_id = {c.cell_id: c for c in run.plan.unique_cells}
    planned_cpu_s = sum(planned_cell_s(by_id[cell_id]) for cell_id in ran["cell_id"] if cell_id in by_id)
    outcome = GridOutcome(
        exit_code=_exit_code(
            fan,
            n_failed,
            n_finished,
            st.recorder.untracked,
            st.n_unavailable > 0 and not allowed_unavailable(run.overrides),
        ),
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
        planned_cpu_s=planned_cpu_s,
        cpu_s=float(ran["cpu_s"].sum()) if len(ran) else 0.0,
        compile_s=float(ran["compile_s"].fillna(0).sum()) if len(ran) else 0.0,
        cpus=fan.cpus,
        parent_run_id=st.parent_id,
        tracking_uri=run.tracker.uri,
        ui_page=run.tracker.ui_page,
        files=files,
        failures=st.recorder.failures,
        untracked=st.recorder.untracked,
    )
    if not _finish_parent(run, st, outcome, n_finished, markdown):
        outcome.exit_code = outcome.exit_code or EXIT_FAILED_CELLS
    print_report(outcome, markdown, run.cfg, efficiency, run.stream)
    return outcome
