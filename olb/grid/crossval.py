"""The grid's cross-validation stage: choose each entry's setting per data set before its test cells run.

An algorithm entry with ``select`` (``{folds: 10, rule: majority, seed: 0, metrics: null}``) lists candidate
settings in its ``params`` (lists expand to a product, as everywhere). Before any test cell runs, every
candidate is cross-validated on the training split of every data set (:mod:`olb.grid.selection`: one task per
setting, all its folds in one worker call, so that scheduling and tracking cost stays small); the rule picks
one setting per (entry, data set); only that setting's cells (one per seed) are run and reported, and its
values are printed beside the table row like a ``best_of`` choice.

Resume: each finished cross-validation task is appended, as it arrives, to a JSON-lines store
(``selection.store``, default ``olb_cv.jsonl`` in the working directory), keyed by a hash of everything that
determines it (algorithm, setting, data set, data fingerprint, folds, fold seed, metrics); a rerun, or a
killed stage restarted, recomputes only the missing tasks. MLflow gets one run per selection (not per fold):
the rule, the chosen setting, why, and the fold-by-setting table as an artifact.
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
from pathlib import Path

import numpy as np
import pandas as pd

from olb.grid.cost import planned_memory_mb
from olb.grid.messages import Status
from olb.grid.plan import Cell, Plan

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


class SelectionStore:
    """Finished cross-validation tasks, one JSON line each (appended by the driver as results arrive)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.results: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a kill: that task runs again
                    continue
                self.results[record["cell_id"]] = record

    def add(self, payload: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab+") as fh:
            cut = False
            if fh.seek(0, 2) > 0:
                fh.seek(-1, 2)
                cut = fh.read(1) != b"\n"  # the last line was cut by a kill
            fh.write((("\n" if cut else "") + json.dumps(payload, default=float) + "\n").encode())
        self.results[payload["cell_id"]] = payload


def _candidates(plan: Plan, selected: dict[str, dict]) -> dict[tuple[str, str], list[Cell]]:
    """(entry, data set) -> one representative cell per candidate setting."""
    out: dict[tuple[str, str], dict] = {}
    for cell in plan.unique_cells:
        if cell.entry in selected:
            key = json.dumps([cell.params, cell.loops], sort_keys=True, default=str)
            out.setdefault((cell.entry, cell.dataset), {}).setdefault(key, cell)
    return {k: list(v.values()) for k, v in out.items()}


def run_selection(
    plan: Plan,
    selected: dict[str, dict],
    data,
    backend,
    tracker,
    store_path: Path,
    data_dir,
    imports: list[str],
    verify_checksums: bool,
    fan_out,
) -> tuple[Plan, list[Choice], dict, dict]:
    """Cross-validate every candidate of the ``selected`` entries, choose, and return the plan restricted to
    the chosen settings (with the choices, statistics of the stage, and the (entry, data set) rows where every
    candidate failed, with why: their row keeps one setting's cells, to be reported failed, not dropped)."""
    from olb.grid.selection import select
    from olb.metrics import METRICS

    store = SelectionStore(store_path)
    candidates = _candidates(plan, selected)
    tasks, task_ids = [], {}  # task_ids: (entry, data set) -> the task id of each candidate, in order
    for (entry, dataset), cells in candidates.items():
        if dataset in data.unavailable:
            continue
        settings = selected[entry]
        for cell in cells:
            task = {
                "kind": "cv",
                **cv_identity(cell, dataset, data.sources[dataset].fingerprint, settings),
                "data_dir": data_dir,
                "imports": imports,
                "verify_checksums": verify_checksums,
                "predicted_memory_mb": planned_memory_mb(cell.algorithm, cell.params, dataset),
            }
            task["cell_id"] = task_id(task)
            task_ids.setdefault((entry, dataset), []).append(task["cell_id"])
            tasks.append(task)
    todo = [t for t in tasks if store.results.get(t["cell_id"], {}).get("status") != Status.FINISHED]
    failed: list[str] = []

    def on_result(payload: dict) -> None:
        if payload["status"] == Status.FINISHED:
            store.add(payload)
        else:
            failed.append(payload.get("error", ""))
            log.error("olb.grid: cross-validation task %s FAILED: %s", payload["cell_id"], payload.get("error"))

    t0 = time.perf_counter()
    fan = (
        fan_out(backend, todo, on_result, "cross-validation", skipped=len(tasks) - len(todo), unit="task")
        if todo
        else None
    )
    stats = {
        "cv_tasks": len(tasks),
        "cv_run": len(todo),
        "cv_resumed": len(tasks) - len(todo),
        "cv_failed": len(failed),
        "cv_wall_s": time.perf_counter() - t0,
        "cv_busy_s": sum(store.results[t["cell_id"]].get("wall_s", 0.0) for t in todo if t["cell_id"] in store.results),
        "cv_cpus": fan.cpus if fan else 1,
        "interrupted": bool(fan and fan.interrupted),
    }
    if stats["interrupted"]:
        raise KeyboardInterrupt

    choices, keep, unselected = [], {}, {}
    for (entry, dataset), cells in candidates.items():
        if dataset in data.unavailable:  # no data, no choice: one setting stands for the row, marked unavailable
            keep[(entry, dataset)] = (cells[0].params, cells[0].loops)
            continue
        rows, means = [], {}
        for tid, cell in zip(task_ids[(entry, dataset)], cells):
            if tid not in store.results:
                continue
            label = _setting_label(cell)
            folds = store.results[tid]["folds"]
            rows += [{"setting": label, "fold": f + 1, **values} for f, values in enumerate(folds)]
            means[label] = {m: float(np.mean([v[m] for v in folds])) for m in folds[0]}
        if not means:  # every candidate failed (logged above)
            keep[(entry, dataset)] = (cells[0].params, cells[0].loops)
            unselected[(entry, dataset)] = (
                f"cross-validation: all {len(cells)} candidate settings failed, nothing to choose (see the log)"
            )
            continue
        metrics = next(iter(means.values())).keys()
        choice = select(means, {m: METRICS[m].lower_is_better for m in metrics}, str(selected[entry]["rule"]))
        cell = next(c for c in cells if _setting_label(c) == choice.chosen)
        partial = len(means) < len(cells)
        reason = choice.reason + (
            f"; {len(cells) - len(means)} of {len(cells)} settings have no result (partial)" if partial else ""
        )
        choices.append(
            Choice(entry, dataset, dict(cell.params), cell.loops, reason, choice.rule, pd.DataFrame(rows), partial)
        )
        keep[(entry, dataset)] = (cell.params, cell.loops)
    for choice in choices:
        _log_choice(tracker, choice, selected[choice.entry])
    cells = []
    for cell in plan.cells:
        if cell.entry not in selected:
            cells.append(cell)
        elif keep.get((cell.entry, cell.dataset)) == (cell.params, cell.loops):
            chosen_keys = tuple(k for k, _ in cell.varying)
            cells.append(dataclasses.replace(cell, best_of=tuple(dict.fromkeys((*cell.best_of, *chosen_keys)))))
    return dataclasses.replace(plan, cells=cells), choices, stats, unselected


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
