"""The grid's cross-validation stage: choose each entry's setting per data set before its test cells run.

An algorithm entry with ``select`` (``{folds: 10, rule: majority, seed: 0, metrics: null}``) lists candidate
settings in its ``params`` (lists expand to a product, as everywhere). Before any test cell runs, every
candidate is cross-validated on the training split of every data set (:mod:`olb.grid.selection`: one task per
setting, all its folds in one worker call, so that scheduling and tracking cost stays small); the rule picks
one setting per (entry, data set); only that setting's cells (one per seed) are run and reported, and its
values are printed beside the table row like a ``best_of`` choice.

Resume: each finished cross-validation task is recorded in the grid's tracker as it arrives (one run per task,
not per fold; :mod:`olb.grid.cvstore`), keyed by a hash of everything that determines it (algorithm, setting,
data set, data fingerprint, folds, fold seed, metrics); a rerun, or a killed stage restarted, recomputes only the
missing tasks. The tracker also gets one run per selection: the rule, the chosen setting, why, and the
fold-by-setting table as an artifact.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from olb.grid.backend import Backend
from olb.grid.cvstore import finished_tasks, migrate, record_task
from olb.grid.datacheck import DataCheck
from olb.grid.cost import planned_memory_mb
from olb.grid.messages import Status
from olb.grid.plan import Cell, Plan
from olb.grid.tracker import Tracker

log = logging.getLogger("olb.grid")

CV_VERSION = 1


def cv_identity(cell, dataset: str, fingerprint: str, settings) -> dict:
    """What identifies the cross-validation of ``cell``'s setting on ``dataset`` (:func:`task_id` hashes it)."""
    return {
        "algorithm": cell.algorithm,
        "params": cell.params,
        "dataset": dataset,
        "fingerprint": fingerprint,
        "folds": settings["folds"],
        "seed": settings["seed"],
        "metrics": list(settings["metrics"] or cell.metrics),
    }


def task_id(task: dict) -> str:
    keys = ("algorithm", "params", "dataset", "fingerprint", "folds", "seed", "metrics")
    payload = {"v": CV_VERSION, **{k: task[k] for k in keys}}
    return hashlib.sha1(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=4)
def _dataset(name: str, data_dir, verify_checksums: bool):
    from olb.data import load_dataset

    return load_dataset(name, json.loads(data_dir), verify_checksums)


def execute_cv(task: dict) -> dict:
    """A worker's share: every fold of one setting (``olb.grid.selection.cv_task_result``); never raises."""
    import importlib

    from olb.grid.selection import cv_task_result

    t0 = time.perf_counter()
    base = {"cell_id": task["cell_id"], "kind": "cv"}
    try:
        for module in task.get("imports", ()):
            importlib.import_module(module)
        dataset = _dataset(task["dataset"], json.dumps(task["data_dir"]), task.get("verify_checksums", True))
        result = cv_task_result(
            task["algorithm"], task["params"], dataset, tuple(task["metrics"]), task["folds"], task["seed"]
        )
    except Exception as err:  # noqa: BLE001 - recorded, never raised in a worker
        return {
            **base,
            "status": Status.FAILED,
            "error": f"{type(err).__name__}: {err}",
            "traceback": traceback.format_exc(),
        }
    return {**base, "status": Status.FINISHED, **result, "wall_s": time.perf_counter() - t0}


@dataclasses.dataclass
class Choice:
    entry: str
    dataset: str
    params: dict
    loops: int
    reason: str
    rule: str
    table: pd.DataFrame  # one row per (setting, fold), one column per metric
    partial: bool  # some settings have no cross-validation result (failed)


@dataclasses.dataclass
class SelectionContext:
    """What the stage works with: the checked data, where tasks run (``fan_out`` on ``backend``) and are recorded
    (``tracker``), what a worker needs to load the data (``data_dir``, ``imports``, ``verify_checksums``), whether
    earlier results are reused (``resume``), and a JSON-lines store of earlier versions to move into the tracker."""

    data: DataCheck
    backend: Backend
    tracker: Tracker
    fan_out: Callable
    data_dir: Any = None
    imports: list[str] = dataclasses.field(default_factory=list)
    verify_checksums: bool = True
    resume: bool = True
    legacy_store: Path | None = None


def _candidates(plan: Plan, selected: dict[str, dict]) -> dict[tuple[str, str], list[Cell]]:
    """(entry, data set) -> one representative cell per candidate setting."""
    out: dict[tuple[str, str], dict] = {}
    for cell in plan.unique_cells:
        if cell.entry in selected:
            key = json.dumps([cell.params, cell.loops], sort_keys=True, default=str)
            out.setdefault((cell.entry, cell.dataset), {}).setdefault(key, cell)
    return {k: list(v.values()) for k, v in out.items()}


def run_selection(
    plan: Plan, selected: dict[str, dict], ctx: SelectionContext
) -> tuple[Plan, list[Choice], dict, dict]:
    """Cross-validate every candidate of the ``selected`` entries, choose, and return the plan restricted to
    the chosen settings (with the choices, statistics of the stage, and the (entry, data set) rows where every
    candidate failed, with why: their row keeps one setting's cells, to be reported failed, not dropped)."""
    candidates = _candidates(plan, selected)
    tasks = _tasks(candidates, selected, ctx)
    if ctx.legacy_store is not None:
        migrate(ctx.legacy_store, ctx.tracker, tasks, ctx.data)
    results = finished_tasks(ctx.tracker, tasks, ctx.data) if ctx.resume else {}
    stats = _run_tasks([t for tid, t in tasks.items() if tid not in results], len(tasks), results, ctx)
    choices, keep, unselected = [], {}, {}
    for (entry, dataset), cells in candidates.items():
        if dataset in ctx.data.unavailable:  # no data, no choice: one setting stands for the row, marked unavailable
            keep[(entry, dataset)] = (cells[0].params, cells[0].loops)
            continue
        ids = [task_id(cv_identity(c, dataset, ctx.data.sources[dataset].fingerprint, selected[entry])) for c in cells]
        choice = _choose(entry, dataset, [(c, results.get(tid)) for c, tid in zip(cells, ids)], selected[entry])
        if isinstance(choice, str):  # every candidate failed (logged as they did)
            keep[(entry, dataset)], unselected[(entry, dataset)] = (cells[0].params, cells[0].loops), choice
            continue
        choices.append(choice)
        keep[(entry, dataset)] = (choice.params, choice.loops)
    for choice in choices:
        _log_choice(ctx.tracker, choice, selected[choice.entry])
    return _restricted(plan, selected, keep), choices, stats, unselected


def _tasks(candidates: dict, selected: dict[str, dict], ctx: SelectionContext) -> dict[str, dict]:
    """Task id -> the worker's task, for every candidate on every available data set."""
    tasks = {}
    for (entry, dataset), cells in candidates.items():
        if dataset in ctx.data.unavailable:
            continue
        for cell in cells:
            task = {
                "kind": "cv",
                **cv_identity(cell, dataset, ctx.data.sources[dataset].fingerprint, selected[entry]),
                "data_dir": ctx.data_dir,
                "imports": ctx.imports,
                "verify_checksums": ctx.verify_checksums,
                "predicted_memory_mb": planned_memory_mb(cell.algorithm, cell.params, dataset),
            }
            task["cell_id"] = task_id(task)
            tasks[task["cell_id"]] = task
    return tasks


def _run_tasks(todo: list[dict], n_tasks: int, results: dict, ctx: SelectionContext) -> dict:
    """Run the tasks not resumed, each result into ``results`` and the tracker as it arrives; the stage's
    statistics. Raises what ended the fan-out early (an interruption, a lost Ray head or tracking server)."""
    by_id, failed = {t["cell_id"]: t for t in todo}, []

    def on_result(payload: dict) -> None:
        if payload["status"] == Status.FINISHED:
            results[payload["cell_id"]] = payload
            record_task(ctx.tracker, by_id[payload["cell_id"]], payload, ctx.data)
        else:
            failed.append(payload.get("error", ""))
            log.error("olb.grid: cross-validation task %s FAILED: %s", payload["cell_id"], payload.get("error"))

    t0 = time.perf_counter()
    skipped = n_tasks - len(todo)
    fan = ctx.fan_out(ctx.backend, todo, on_result, "cross-validation", skipped=skipped, unit="task") if todo else None
    if fan and fan.interrupted:
        raise KeyboardInterrupt
    if fan and fan.lost is not None:
        raise fan.lost
    return {
        "cv_tasks": n_tasks,
        "cv_run": len(todo),
        "cv_resumed": skipped,
        "cv_failed": len(failed),
        "cv_wall_s": time.perf_counter() - t0,
        "cv_busy_s": sum(results[tid].get("wall_s", 0.0) for tid in by_id if tid in results),
        "cv_cpus": fan.cpus if fan else 1,
    }


def _choose(entry: str, dataset: str, candidates: list[tuple[Cell, dict | None]], settings: dict) -> Choice | str:
    """The choice among the ``candidates`` (a cell of each setting, its task's result or None), or why none."""
    from olb.grid.selection import select
    from olb.metrics import METRICS

    cells = [cell for cell, _ in candidates]
    rows, means = [], {}
    for cell, result in candidates:
        if result is None:
            continue
        label = _setting_label(cell)
        folds = result["folds"]
        rows += [{"setting": label, "fold": f + 1, **values} for f, values in enumerate(folds)]
        means[label] = {m: float(np.mean([v[m] for v in folds])) for m in folds[0]}
    if not means:
        return f"cross-validation: all {len(cells)} candidate settings failed, nothing to choose (see the log)"
    metrics = next(iter(means.values())).keys()
    choice = select(means, {m: METRICS[m].lower_is_better for m in metrics}, str(settings["rule"]))
    cell = next(c for c in cells if _setting_label(c) == choice.chosen)
    partial = len(means) < len(cells)
    reason = choice.reason + (
        f"; {len(cells) - len(means)} of {len(cells)} settings have no result (partial)" if partial else ""
    )
    return Choice(entry, dataset, dict(cell.params), cell.loops, reason, choice.rule, pd.DataFrame(rows), partial)


def _restricted(plan: Plan, selected: dict[str, dict], keep: dict) -> Plan:
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


def _log_choice(tracker, choice: Choice, settings: dict) -> None:
    """One MLflow run per selection: the rule, the chosen setting, why, and the fold-by-setting table."""
    params = {
        "rule": choice.rule,
        "folds": settings["folds"],
        "fold_seed": settings["seed"],
        **{f"chosen.{k}": v for k, v in choice.params.items()},
    }
    tags = {
        "olb.kind": "selection",
        "olb.entry": choice.entry,
        "olb.dataset": choice.dataset,
        "olb.selection_reason": choice.reason[:5000],
        "olb.partial": str(choice.partial),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cv_folds.csv"
        choice.table.to_csv(path, index=False)
        tracker.log_run(f"select {choice.entry} {choice.dataset}", params, tags, [path])


def selection_markdown(choices: list[Choice]) -> str:
    """The chosen settings, for table.md."""
    if not choices:
        return ""
    lines = ["## Settings chosen by cross-validation", "", "| entry | data set | setting | why |", "|---|---|---|---|"]
    for c in choices:
        setting = ", ".join(f"{k}={v}" for k, v in c.params.items())
        lines.append(f"| {c.entry} | {c.dataset} | {setting} | {c.reason} |")
    return "\n".join(lines) + "\n"
