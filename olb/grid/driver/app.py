"""Orchestration: a grid run's stages, in order: validate (plan and data), choose the backend, open the tracker
while Ray starts, cross-validate (:mod:`olb.grid.driver.stages`), resume, fan out the cells, finish (tables, plots, the
parent run, the summary: :mod:`olb.grid.driver.finish`).

``dry_run=true`` only plans and prints (:mod:`olb.grid.driver.dryrun`). The command line and
:func:`olb.grid.cli.compose` are in :mod:`olb.grid.cli`; planning's cost model in
:mod:`olb.grid.planning.cost`; recording in :mod:`olb.grid.recording.recorder`; the output files in :mod:`olb.grid.driver.finish`.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TextIO


from olb.grid.planning.config import GridBase, config_yaml
from olb.grid.driver.context import GridRun, Stages
from olb.grid.planning.cost import check_memory, planned_memory_mb
from olb.grid.driver.dryrun import DryRun, dry_run, print_dry_run
from olb.grid.running.fanout import fan_out
from olb.grid.driver.finish import allowed_unavailable, finish
from olb.grid.messages import EXIT_UNAVAILABLE, CellOutcome, CellTask, GridOutcome, Status
from olb.data import DataDirs
from olb.grid.planning.plan import Cell, describe
from olb.grid.recording.recorder import Recorder, resumed_outcomes
from olb.grid.driver.stages import choose, cross_validate, grid_data_dir, prepare, start_tracker_and_backend

log = logging.getLogger("olb.grid")


def _cell_task(cell: Cell, cfg: GridBase, data_dir: DataDirs, plot: bool) -> CellTask:
    return CellTask(
        cell_id=cell.cell_id,
        spec=cell.spec(data_dir, cfg.verify_checksums),
        imports=tuple(cfg.imports),
        plot=plot,
        title=f"{cell.run_name} ({cell.cell_id})",
        predicted_memory_mb=planned_memory_mb(cell.algorithm, cell.params, cell.dataset),
    )


def run_grid(
    cfg: GridBase,
    output_dir: str | os.PathLike[str],
    overrides: list[str] | None = None,
    stream: TextIO | None = None,
) -> GridOutcome | DryRun:
    """Run every cell of ``cfg`` not finished yet, record them, and write cells.csv, table.csv/.md, plots.

    Raises GridConfigError before any work (no output folder, no MLflow run) when the config or the data is
    invalid, listing every problem. ``overrides`` (the command line's) decide the table's title and which
    entries still have the experiment file's settings (only those are shown beside the paper's values).
    With ``dry_run=true``: the dry run (olb/grid/driver/dryrun.py), printed, nothing run, written or recorded.
    """
    if cfg.dry_run:
        planned = dry_run(cfg)
        print_dry_run(planned, cfg, stream or sys.stdout)
        return planned
    t_start = time.perf_counter()
    plan, data = prepare(cfg)
    for warning in plan.warnings:
        log.warning("warning: %s", warning)
    accepted = (
        "allow_unavailable=true"
        if allowed_unavailable(overrides or [])
        else f"the experiment's allow_unavailable: true; the grid exits {EXIT_UNAVAILABLE} without them unless the "
        "command line says allow_unavailable=true"
    )
    for name, msg in data.unavailable.items():
        log.warning(
            "olb.grid: data set %r is unavailable; its cells are marked unavailable (%s): %s", name, accepted, msg
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
    selection = cross_validate(cfg, run.plan, run.data, run.tracker, run.backend)
    run.plan = selection.plan
    outcomes = resumed_outcomes(run.tracker, cfg, run.plan, run.data)
    n_resumed = len(outcomes)
    _mark_not_runnable(run, outcomes, selection.unselected)
    n_unavailable = sum(1 for o in outcomes.values() if o.status == Status.UNAVAILABLE)
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
    stages = Stages(outcomes, recorder, fan, n_resumed, n_unavailable, parent_id, selection.choices, selection.stats)
    return finish(run, stages)


def _mark_not_runnable(run: GridRun, outcomes: dict[str, CellOutcome], unselected: dict[tuple[str, str], str]) -> None:
    """Outcomes for the cells that will not run: their data set is unavailable, or cross-validation chose no
    setting for their entry."""
    for c in run.plan.unique_cells:
        if c.dataset in run.data.unavailable and c.cell_id not in outcomes:
            error, status = run.data.unavailable[c.dataset], Status.UNAVAILABLE
        elif (c.entry, c.dataset) in unselected:
            error, status = unselected[(c.entry, c.dataset)], Status.FAILED
        else:
            continue
        outcomes[c.cell_id] = CellOutcome(status=status, error=error)


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
        "seeds": str(cfg.seeds),
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
    # a name the UI's runs table shows whole (the start time is the run's)
    parent_id = run.tracker.start_parent(f"{cfg.name} {datetime.now():%m-%d %H:%M}", params, tags, config_yaml(cfg))
    varying = dict.fromkeys(key for c in plan.unique_cells for key, _ in c.varying)
    run.tracker.show_runs(["label", "seed", *varying], [*plan.table_metrics, "runtime_s"])
    return parent_id
