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
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from olb.data import dataset_names
from olb.grid.datacheck import DataCheck, check_data
from olb.grid.fanout import fan_out
from olb.grid.plan import GridConfigError, Plan, Problems, collect_plan, describe
from olb.grid.comparable import differences
from olb.grid.results import (
    build_table,
    cells_frame,
    grid_title,
    reference_source,
    table_markdown,
)
from olb.grid.cost import choose
from olb.grid.messages import (
    EXIT_FAILED_CELLS,
    EXIT_INTERRUPTED,
    EXIT_LOST,
    EXIT_NOTHING_COMPUTED,
    EXIT_OK,
    GridOutcome,
    Status,
)
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
    try:  # every stage runs on the one backend, stopped once at the end
        return _run_stages(
            cfg,
            plan,
            data,
            backend,
            backend_reason,
            tracker,
            Path(output_dir),
            overrides,
            stream or sys.stdout,
            t_start,
        )
    finally:
        backend.stop()


def _run_stages(
    cfg, plan, data, backend, backend_reason, tracker, out: Path, overrides, stream, t_start
) -> GridOutcome:
    """Cross-validation, resume, fan-out and the report, on a started backend."""
    out.mkdir(parents=True, exist_ok=True)
    log.info(
        "olb.grid: experiment %r, %d cells (%d unique) on %d data set(s)\n%s",
        cfg.name,
        len(plan.cells),
        len(plan.unique_cells),
        len(plan.datasets),
        describe(plan),
    )

    plan, choices, cv_stats, unselected = cross_validate(cfg, plan, data, tracker, backend)
    unique = plan.unique_cells
    outcomes = resumed_outcomes(tracker, cfg, plan, data)
    n_resumed = len(outcomes)
    for c in unique:
        if c.dataset in data.unavailable and c.cell_id not in outcomes:
            outcomes[c.cell_id] = {
                "status": Status.UNAVAILABLE,
                "error": data.unavailable[c.dataset],
                "metrics": {},
                "source": "",
            }
        elif (c.entry, c.dataset) in unselected:
            outcomes[c.cell_id] = {
                "status": Status.FAILED,
                "error": unselected[(c.entry, c.dataset)],
                "metrics": {},
                "source": "",
            }
    n_unavailable = sum(1 for o in outcomes.values() if o["status"] == Status.UNAVAILABLE)
    todo = [c for c in unique if c.cell_id not in outcomes]
    data_dir = grid_data_dir(cfg)
    tasks = [_cell_task(c, cfg, data_dir, tracker.cell_artifacts) for c in todo]
    log.info(
        "olb.grid: %d to run, %d already finished (resume=%s), %d unavailable; output: %s",
        len(todo),
        n_resumed,
        cfg.resume,
        n_unavailable,
        out,
    )

    params = {
        "experiment": cfg.name,
        "n_cells": len(plan.cells),
        "n_unique_cells": len(unique),
        "n_to_run": len(todo),
        "n_resumed": n_resumed,
        "algorithms": ",".join(cfg.algorithms),
        "datasets": ",".join(plan.datasets),
        "seeds": str(_plain_value(cfg.seeds)),
        "backend": backend.name,
        "resume": cfg.resume,
        "verify_checksums": cfg.verify_checksums,
    }
    tags = {
        "olb.backend_reason": backend_reason,
        "olb.output_dir": str(out.resolve()),
        "olb.overrides": " ".join(overrides or []),
        "olb.data_fingerprints": " ".join(f"{n}={s.fingerprint}" for n, s in data.sources.items()),
    }
    parent_id = tracker.start_parent(
        f"{cfg.name} {datetime.now():%Y-%m-%d %H:%M:%S}", params, tags, OmegaConf.to_yaml(cfg)
    )

    recorder = Recorder(plan, data, tracker, outcomes, out)
    fan = fan_out(backend, tasks, recorder, cfg.name, skipped=n_resumed)
    return _finish(
        cfg,
        plan,
        data,
        outcomes,
        tracker,
        out,
        overrides,
        stream,
        fan,
        recorder,
        n_resumed,
        n_unavailable,
        parent_id,
        t_start,
        (choices, cv_stats),
    )


def _finish(
    cfg,
    plan,
    data,
    outcomes,
    tracker,
    out,
    overrides,
    stream,
    fan,
    recorder,
    n_resumed,
    n_unavailable,
    parent_id,
    t_start,
    selection=((), {}),
) -> GridOutcome:
    """Write cells.csv, table.csv, table.md and the plots, close the parent run, print the report."""
    cells = cells_frame(plan, outcomes, data)
    table = build_table(
        plan, outcomes, cfg.reference, data.unavailable, differences(plan, cfg.reference, cfg.verify_checksums)
    )
    files = {"cells": out / "cells.csv", "table_csv": out / "table.csv", "table_md": out / "table.md"}
    cells.to_csv(files["cells"], index=False)
    table.to_csv(files["table_csv"], index=False)
    markdown = table_markdown(
        table,
        grid_title(cfg, plan, overrides or []),
        list(cfg.table.rows),
        list(cfg.table.columns),
        cfg.table.decimals,
        reference_source(cfg.reference),
        cfg.table.bold_best,
    )
    choices, cv_stats = selection
    if choices:
        from olb.grid.crossval import selection_markdown

        markdown += "\n" + selection_markdown(choices)
    if cfg.leaderboard:
        board_md, board_files = write_leaderboard(plan, table, cells, out / "leaderboard")
        markdown += "\n" + board_md
        if board_files:
            files["leaderboard"] = out / "leaderboard"
    files["table_md"].write_text(markdown)
    plot_paths = write_plots(plan, outcomes, table, cells, tracker, out / "plots") if cfg.plots else []
    if plot_paths:
        files["plots"] = out / "plots"

    unique_cells = cells.drop_duplicates("cell_id")
    n_failed = int((unique_cells["status"] == Status.FAILED).sum())
    n_finished = int((unique_cells["status"] == Status.FINISHED).sum())
    wall_s = time.perf_counter() - t_start
    ran = cells[(cells["source"] == "run") & (cells["status"] == Status.FINISHED)].drop_duplicates("cell_id")
    busy = float(ran["runtime_s"].sum() + ran["compile_s"].fillna(0).sum()) if len(ran) else 0.0  # CPUs kept busy
    efficiency = busy / (fan.cpus * fan.seconds) if (fan.n_done and fan.seconds > 0) else math.nan
    if fan.lost is not None:
        code = EXIT_LOST
    elif fan.interrupted:
        code = EXIT_INTERRUPTED
    elif n_failed or recorder.untracked:
        code = EXIT_FAILED_CELLS
    else:
        code = EXIT_NOTHING_COMPUTED if n_finished == 0 else EXIT_OK
    if not (fan.lost is not None and fan.lost.what == "tracking"):
        status = (
            Status.KILLED if fan.interrupted else (Status.FAILED if n_failed or n_finished == 0 else Status.FINISHED)
        )
        status = Status.FAILED if fan.lost is not None else status
        metrics = {
            "n_run": fan.n_done,
            "n_resumed": n_resumed,
            "n_failed": n_failed,
            "n_unavailable": n_unavailable,
            "wall_s": wall_s,
            "startup_s": fan.startup_s,
            **{k: float(v) for k, v in cv_stats.items() if k != "interrupted"},
        }
        if not math.isnan(efficiency):
            metrics["fanout_efficiency"] = efficiency
        try:
            tracker.finish_parent(
                status,
                metrics,
                [
                    files["cells"],
                    files["table_csv"],
                    files["table_md"],
                    *([out / "plots"] if plot_paths else []),
                    *([files["leaderboard"]] if "leaderboard" in files else []),
                ],
                {"olb.ended_by": str(fan.lost)} if fan.lost is not None else None,
            )
        except Exception as err:  # noqa: BLE001 - the files are written; say so and go on
            log.error("olb.grid: could not record the grid's parent run in MLflow (%s: %s)", type(err).__name__, err)
            code = code or EXIT_FAILED_CELLS

    outcome = GridOutcome(
        exit_code=code,
        output_dir=out,
        cells=cells,
        table=table,
        plan=plan,
        n_run=fan.n_done,
        n_resumed=n_resumed,
        n_failed=n_failed,
        n_unavailable=n_unavailable,
        wall_s=wall_s,
        startup_s=fan.startup_s,
        fanout_s=fan.seconds if fan.n_done else 0.0,
        efficiency=efficiency,
        cpus=fan.cpus,
        parent_run_id=parent_id,
        tracking_uri=tracker.uri,
        files=files,
        failures=recorder.failures,
        untracked=recorder.untracked,
    )
    print_report(outcome, markdown, cfg, efficiency, stream)
    return outcome
