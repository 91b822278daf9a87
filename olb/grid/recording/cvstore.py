"""Where finished cross-validation tasks are kept: in the grid's tracker, like cells (one store for both).

Each finished task becomes a run tagged ``olb.kind=cv`` and :data:`~olb.grid.recording.tracker.CV_TASK_TAG` (its task id,
which hashes everything that decides its result), with the data it read (``olb.data_fingerprint``), its
identity as parameters and its figures as metrics: ``fold/<k>/<metric>`` for fold k (1-based), ``cpu_s`` and
``wall_s``. Resume takes the newest finished run of each planned task from any experiment of the store, under the
cells' rule (:func:`~olb.grid.datacheck.matches_data`): ``tracking=off`` resumes nothing, a shared server resumes
every grid's tasks. A JSON-lines store written by earlier versions (``selection_store``) is moved into the tracker
the first time a grid with tracking on finds it, then renamed ``<name>.migrated``. Each choice is a run too
(:func:`record_choice`): the rule, the chosen setting, why, and the fold-by-setting table as an artifact.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

from olb.grid.datacheck import DataCheck, matches_data, provenance_tags
from olb.grid.lost import TrackingLost
from olb.grid.messages import Choice, CVResult, CVTask, Status
from olb.grid.selection import SelectionSettings
from olb.grid.recording.tracker import CV_TASK_TAG, FinishedRun, Tracker

log = logging.getLogger("olb.grid")


def record_task(tracker: Tracker, task: CVTask, result: CVResult, data: DataCheck) -> None:
    """Log one finished task's run; a failed write is reported (a rerun computes the task again), a lost server
    ends the stage (:class:`~olb.grid.lost.TrackingLost`)."""
    try:
        tracker.log_run(*_task_run(task.task_id, task, result, data))
    except TrackingLost:
        raise
    except Exception as err:  # noqa: BLE001 - the result is used all the same; only its record is missing
        log.error(
            "olb.grid: could not record cross-validation task %s (%s: %s); a rerun computes it again",
            task.task_id,
            type(err).__name__,
            err,
        )


def finished_tasks(tracker: Tracker, tasks: dict[str, CVTask], data: DataCheck) -> dict[str, CVResult]:
    """Task id -> the result of each of ``tasks`` finished earlier on the same data."""

    def same_task_same_data(run: FinishedRun) -> bool:
        task = tasks.get(run.cell_id)
        return task is not None and matches_data(run.tags, data.sources.get(task.dataset))

    found = tracker.finished_cv_tasks(same_task_same_data)
    return {tid: _result(run, tasks[tid]) for tid, run in found.items()}


def migrate(path: Path, tracker: Tracker, tasks: dict[str, CVTask], data: DataCheck) -> None:
    """Move the finished tasks of a JSON-lines store of earlier versions into ``tracker`` (those the grid plans
    with their identity and data, the others by id), then rename the file; on failure it stays, for next time."""
    if not path.is_file():
        return
    records = _read_jsonl(path)
    if tracker.uri is None:
        log.warning(
            "olb.grid: %s (%d cross-validation task(s) of an earlier version) is not read: tracking=off resumes "
            "nothing; a run with tracking on moves them into its tracker",
            path,
            len(records),
        )
        return
    try:
        known = tracker.finished_cv_tasks()  # moved by an earlier, interrupted migration
        moved = [tid for tid in records if tid not in known]
        for tid in moved:
            migrated = {"olb.migrated_from": str(path.resolve())}
            tracker.log_run(*_task_run(tid, tasks.get(tid), records[tid], data, migrated))
        target = path.with_name(path.name + ".migrated")
        path.rename(target)
    except Exception as err:  # noqa: BLE001 - the tasks not moved run again; the file is read again next time
        log.error("olb.grid: could not move %s into the tracker (%s: %s); it stays", path, type(err).__name__, err)
        return
    log.warning(
        "olb.grid: %d cross-validation task(s) of %s moved into the tracking store %s (%d already there); "
        "the file is now %s",
        len(moved),
        path,
        tracker.uri,
        len(records) - len(moved),
        target,
    )


def record_choice(tracker: Tracker, choice: Choice, settings: SelectionSettings) -> None:
    """One run per selection: the rule, the chosen setting, why, and the fold-by-setting table."""
    params = {
        "rule": choice.rule,
        "folds": settings.folds,
        "fold_seed": settings.seed,
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


RunRecord = tuple[str, dict[str, object], dict[str, str], list[Path], dict[str, float]]


def _task_run(
    tid: str, task: CVTask | None, result: CVResult, data: DataCheck, tags: dict[str, str] | None = None
) -> RunRecord:
    """``log_run``'s arguments for a finished task: name, parameters, tags, files, metrics. A task known only by
    its id (``task`` None: migrated, not planned) has no identity and no data tags."""
    params: dict[str, object] = {"task_id": tid}
    all_tags = dict(tags or {})
    if task is not None:
        params.update(
            algorithm=task.algorithm,
            dataset=task.dataset,
            folds=task.folds,
            seed=task.seed,
            metrics=",".join(task.metrics),
        )
        params.update({(f"cv.{k}" if k in params else k): v for k, v in task.params.items()})
        all_tags = {"olb.dataset": task.dataset, **provenance_tags(data.sources[task.dataset]), **all_tags}
    metrics = {f"fold/{f + 1}/{m}": v for f, values in enumerate(result.folds) for m, v in values.items()}
    metrics.update(
        {key: value for key, value in (("cpu_s", result.cpu_s), ("wall_s", result.wall_s)) if value is not None}
    )
    name = f"cv {task.algorithm} {task.dataset}" if task is not None else f"cv {tid}"
    all_tags = {"olb.kind": "cv", CV_TASK_TAG: tid, "olb.status": Status.FINISHED, **all_tags}
    return name, params, all_tags, [], metrics


def _result(run: FinishedRun, task: CVTask) -> CVResult:
    """A recorded task's result as the worker returned it: its folds' metrics (in the task's metric order), CPU
    and wall seconds."""
    folds: dict[int, dict[str, float]] = {}
    for key, value in run.metrics.items():
        if key.startswith("fold/"):
            _, fold, metric = key.split("/", 2)
            folds.setdefault(int(fold), {})[metric] = value
    order = list(task.metrics)
    folds_list = [
        {m: values[m] for m in [*order, *sorted(set(values) - set(order))] if m in values}
        for _, values in sorted(folds.items())
    ]
    return CVResult(
        task_id=run.cell_id, folds=folds_list, cpu_s=run.metrics.get("cpu_s"), wall_s=run.metrics.get("wall_s")
    )


def _read_jsonl(path: Path) -> dict[str, CVResult]:
    """Task id -> the finished tasks of a JSON-lines store (a line cut by a kill is skipped: that task runs again)."""
    records = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("status") == Status.FINISHED:
            tid = record["cell_id"]  # the id's key in earlier versions' files
            records[tid] = CVResult(
                task_id=tid, folds=record["folds"], cpu_s=record.get("cpu_s"), wall_s=record.get("wall_s")
            )
    return records
