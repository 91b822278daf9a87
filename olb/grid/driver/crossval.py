"""The grid's cross-validation stage: choose each entry's setting per data set before its test cells run.

An algorithm entry with ``select`` (``{folds: 10, rule: majority, seed: 0, metrics: null}``) lists candidate
settings in its ``params`` (lists expand to a product, as everywhere). Before any test cell runs, every
candidate is cross-validated on the training split of every data set (:mod:`olb.grid.selection`: one task per
setting, all its folds in one worker call, so that scheduling and tracking cost stays small); the rule picks
one setting per (entry, data set); only that setting's cells (one per seed) are run and reported, and its
values are printed beside the table row like a ``best_of`` choice.

Resume: each finished cross-validation task is recorded in the grid's tracker as it arrives (one run per task,
not per fold; :mod:`olb.grid.recording.cvstore`), keyed by a hash of everything that determines it (algorithm, setting,
data set, data fingerprint, folds, fold seed, metrics); a rerun, or a killed stage restarted, recomputes only the
missing tasks. The tracker also gets one run per selection: the rule, the chosen setting, why, and the
fold-by-setting table as an artifact.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from olb.grid.running.backend import Backend
from olb.grid.planning.cost import planned_memory_mb
from olb.grid.recording.cvstore import finished_tasks, migrate, record_choice, record_task
from olb.grid.datacheck import DataCheck
from olb.grid.running.fanout import FanoutStats
from olb.grid.messages import Choice, CVFailure, CVResult, CVTask, SelectionStats
from olb.grid.planning.plan import Cell, Plan
from olb.grid.selection import SelectionSettings
from olb.grid.recording.tracker import Tracker

log = logging.getLogger("olb.grid")

CV_VERSION = 1

FanOut = Callable[..., FanoutStats]  # olb.grid.running.fanout.fan_out, or a stand-in


def cv_task(
    cell: Cell, dataset: str, fingerprint: str, settings: SelectionSettings, ctx: SelectionContext | None = None
) -> CVTask:
    """The cross-validation of ``cell``'s setting on ``dataset``, its id hashing everything that decides its result
    (algorithm, setting, data set, data fingerprint, folds, fold seed, metrics); ``ctx`` says where a worker finds
    the data (None: the defaults, for a task only counted or looked up)."""
    metrics = tuple(settings.metrics or cell.metrics)
    identity = {
        "algorithm": cell.algorithm,
        "params": cell.params,
        "dataset": dataset,
        "fingerprint": fingerprint,
        "folds": settings.folds,
        "seed": settings.seed,
        "metrics": list(metrics),
    }
    payload = {"v": CV_VERSION, **identity}
    return CVTask(
        task_id=hashlib.sha1(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16],
        algorithm=cell.algorithm,
        params=dict(cell.params),
        dataset=dataset,
        fingerprint=fingerprint,
        folds=settings.folds,
        seed=settings.seed,
        metrics=metrics,
        data_dir=ctx.data_dir if ctx else None,
        imports=tuple(ctx.imports) if ctx else (),
        verify_checksums=ctx.verify_checksums if ctx else True,
        predicted_memory_mb=planned_memory_mb(cell.algorithm, cell.params, dataset),
    )


@dataclasses.dataclass
class SelectionContext:
    """What the stage works with: the checked data, where tasks run (``fan_out`` on ``backend``) and are recorded
    (``tracker``), what a worker needs to load the data (``data_dir``, ``imports``, ``verify_checksums``), whether
    earlier results are reused (``resume``), and a JSON-lines store of earlier versions to move into the tracker."""

    data: DataCheck
    backend: Backend
    tracker: Tracker
    fan_out: FanOut
    data_dir: str | list[str] | None = None
    imports: list[str] = dataclasses.field(default_factory=list)
    verify_checksums: bool = True
    resume: bool = True
    legacy_store: Path | None = None


@dataclasses.dataclass(frozen=True)
class SelectionOutcome:
    """The stage's answer: the plan restricted to the chosen settings, the choices, the stage's statistics, and
    the (entry, data set) rows where every candidate failed, with why (their row keeps one setting's cells, to be
    reported failed, not dropped)."""

    plan: Plan
    choices: list[Choice]
    stats: SelectionStats | None  # None: no entry is cross-validated
    unselected: dict[tuple[str, str], str]


def selected_entries(plan: Plan) -> dict[str, SelectionSettings]:
    """Entry -> its ``select`` settings, for the plan's entries that are cross-validated."""
    return {key: SelectionSettings.of(info["select"]) for key, info in plan.entries.items() if info.get("select")}


def _candidates(plan: Plan, selected: dict[str, SelectionSettings]) -> dict[tuple[str, str], list[Cell]]:
    """(entry, data set) -> one representative cell per candidate setting."""
    out: dict[tuple[str, str], dict[str, Cell]] = {}
    for cell in plan.unique_cells:
        if cell.entry in selected:
            key = json.dumps([cell.params, cell.loops], sort_keys=True, default=str)
            out.setdefault((cell.entry, cell.dataset), {}).setdefault(key, cell)
    return {k: list(v.values()) for k, v in out.items()}


def run_selection(plan: Plan, selected: dict[str, SelectionSettings], ctx: SelectionContext) -> SelectionOutcome:
    """Cross-validate every candidate of the ``selected`` entries, choose, and restrict the plan to the choices."""
    candidates = _candidates(plan, selected)
    tasks = _tasks(candidates, selected, ctx)
    if ctx.legacy_store is not None:
        migrate(ctx.legacy_store, ctx.tracker, tasks, ctx.data)
    results = finished_tasks(ctx.tracker, tasks, ctx.data) if ctx.resume else {}
    stats = _run_tasks([t for tid, t in tasks.items() if tid not in results], len(tasks), results, ctx)
    choices: list[Choice] = []
    keep: dict[tuple[str, str], tuple[dict[str, object], int]] = {}
    unselected: dict[tuple[str, str], str] = {}
    for (entry, dataset), cells in candidates.items():
        if dataset in ctx.data.unavailable:  # no data, no choice: one setting stands for the row, marked unavailable
            keep[(entry, dataset)] = (cells[0].params, cells[0].loops)
            continue
        fingerprint = ctx.data.sources[dataset].fingerprint
        ids = [cv_task(c, dataset, fingerprint, selected[entry], ctx).task_id for c in cells]
        choice = _choose(entry, dataset, [(c, results.get(tid)) for c, tid in zip(cells, ids)], selected[entry])
        if isinstance(choice, str):  # every candidate failed (logged as they did)
            keep[(entry, dataset)], unselected[(entry, dataset)] = (cells[0].params, cells[0].loops), choice
            continue
        choices.append(choice)
        keep[(entry, dataset)] = (choice.params, choice.loops)
    for choice in choices:
        record_choice(ctx.tracker, choice, selected[choice.entry])
    return SelectionOutcome(_restricted(plan, selected, keep), choices, stats, unselected)


def _tasks(
    candidates: dict[tuple[str, str], list[Cell]], selected: dict[str, SelectionSettings], ctx: SelectionContext
) -> dict[str, CVTask]:
    """Task id -> the worker's task, for every candidate on every available data set."""
    tasks = {}
    for (entry, dataset), cells in candidates.items():
        if dataset in ctx.data.unavailable:
            continue
        for cell in cells:
            task = cv_task(cell, dataset, ctx.data.sources[dataset].fingerprint, selected[entry], ctx)
            tasks[task.task_id] = task
    return tasks


def _run_tasks(todo: list[CVTask], n_tasks: int, results: dict[str, CVResult], ctx: SelectionContext) -> SelectionStats:
    """Run the tasks not resumed, each result into ``results`` and the tracker as it arrives; the stage's
    statistics. Raises what ended the fan-out early (an interruption, a lost Ray head or tracking server)."""
    by_id, failed = {t.task_id: t for t in todo}, []

    def on_result(answer: CVResult | CVFailure) -> None:
        if isinstance(answer, CVResult):
            results[answer.task_id] = answer
            record_task(ctx.tracker, by_id[answer.task_id], answer, ctx.data)
        else:
            failed.append(answer.error)
            log.error("olb.grid: cross-validation task %s FAILED: %s", answer.task_id, answer.error)

    t0 = time.perf_counter()
    skipped = n_tasks - len(todo)
    fan = ctx.fan_out(ctx.backend, todo, on_result, "cross-validation", skipped=skipped, unit="task") if todo else None
    if fan and fan.interrupted:
        raise KeyboardInterrupt
    if fan and fan.lost is not None:
        raise fan.lost
    return SelectionStats(
        tasks=n_tasks,
        run=len(todo),
        resumed=skipped,
        failed=len(failed),
        wall_s=time.perf_counter() - t0,
        busy_s=sum(results[tid].wall_s or 0.0 for tid in by_id if tid in results),
        cpus=fan.cpus if fan else 1,
    )


def _choose(
    entry: str, dataset: str, candidates: list[tuple[Cell, CVResult | None]], settings: SelectionSettings
) -> Choice | str:
    """The choice among the ``candidates`` (a cell of each setting, its task's result or None), or why none."""
    from olb.grid.selection import select
    from olb.metrics import METRICS

    cells = [cell for cell, _ in candidates]
    rows: list[dict[str, object]] = []
    means: dict[str, dict[str, float]] = {}
    for cell, result in candidates:
        if result is None:
            continue
        label = _setting_label(cell)
        folds = result.folds
        rows += [{"setting": label, "fold": f + 1, **values} for f, values in enumerate(folds)]
        means[label] = {m: float(np.mean([v[m] for v in folds])) for m in folds[0]}
    if not means:
        return f"cross-validation: all {len(cells)} candidate settings failed, nothing to choose (see the log)"
    metrics = next(iter(means.values())).keys()
    choice = select(means, {m: METRICS[m].lower_is_better for m in metrics}, settings.rule)
    cell = next(c for c in cells if _setting_label(c) == choice.chosen)
    partial = len(means) < len(cells)
    reason = choice.reason + (
        f"; {len(cells) - len(means)} of {len(cells)} settings have no result (partial)" if partial else ""
    )
    return Choice(entry, dataset, dict(cell.params), cell.loops, reason, choice.rule, pd.DataFrame(rows), partial)


def _restricted(
    plan: Plan, selected: dict[str, SelectionSettings], keep: dict[tuple[str, str], tuple[dict[str, object], int]]
) -> Plan:
    """``plan`` with only the kept setting's cells of each selected (entry, data set)."""
    cells = []
    for cell in plan.cells:
        if cell.entry not in selected:
            cells.append(cell)
        elif keep.get((cell.entry, cell.dataset)) == (cell.params, cell.loops):
            chosen_keys = tuple(k for k, _ in cell.varying)
            cells.append(dataclasses.replace(cell, best_of=tuple(dict.fromkeys((*cell.best_of, *chosen_keys)))))
    return dataclasses.replace(plan, cells=cells)


def _setting_label(cell: Cell) -> str:
    varying = dict(cell.varying)
    return ", ".join(f"{k}={v}" for k, v in varying.items()) or "default"
