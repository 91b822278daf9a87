"""The MLflow trackers' reads and writes: one experiment per olb experiment, one parent run per invocation, one
child run per cell and per cross-validation task. Used as is for a store other than a SQLite file, a server or a
database URI; the connection to the store (opened, every call retried and bounded) is
:mod:`olb.grid.recording.tracking_connection`.

Only the driver writes to the tracking store. Workers return their results (a small payload) and the driver's
writer thread (:mod:`olb.grid.recording.writer`) logs them in batches while the other cells keep running: a single writer
makes parallel cells safe on any store (SQLite included, where concurrent schema creation crashes), and cells on
other machines of a Ray cluster need no access to the store.

A child run's status becomes FINISHED (or FAILED) only after everything about it is logged, so a driver killed
while logging leaves either nothing or a RUNNING run, which resume does not count as finished. On a SQL store
(SQLite, a database URI) a batch of cells is one transaction with each run written whole
(:mod:`olb.grid.recording.tracking_sql`); on a server each cell is three requests (create, log, terminate), several cells
at a time (``tracking.write_threads``).
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from olb.grid.messages import CellFailure, CellResult, Status
from olb.grid.planning.config import TrackingConfig
from olb.grid.planning.plan import Cell
from olb.grid.recording.tracker import CV_TASK_TAG, Accept, Curve, FinishedRun, Metrics, Params, Tags
from olb.grid.recording.tracking_cells import MAX_TAG, CellRecord, DatasetRecord, cell_record, clip, curve_key
from olb.grid.recording.tracking_connection import MlflowConnection, first_line, resolve_uri
from olb.grid.recording.tracking_sql import DATASET_CONTEXT_TAG, finished_runs, insert_runs
from olb.grid.recording.ui_view import VIEW_TAG, runs_view

if TYPE_CHECKING:
    from mlflow.entities import DatasetInput

__all__ = ["MlflowTracker", "dataset_input", "first_line", "pid_alive", "resolve_uri"]

FINISHED = "tags.`olb.status` = 'FINISHED' and attributes.status = 'FINISHED'"


class MlflowTracker(MlflowConnection):
    """The driver's MLflow writer (and the dry run's reader), through its connection to the store."""

    concurrent_writes = True  # whether cells written through MLflow's client go ``tracking.write_threads`` at once

    def __init__(
        self, cfg: TrackingConfig, experiment_name: str, code_version: str = "unknown", read_only: bool = False
    ):
        """``read_only`` (the dry run): a store that does not exist is not created, nor is an experiment (nothing
        resumes), and no run is closed or written."""
        self.cell_artifacts = cfg.cell_artifacts
        self.write_threads = max(1, int(cfg.write_threads)) if self.concurrent_writes else 1
        super().__init__(cfg, experiment_name, code_version, read_only)
        if read_only:
            return
        self.parent_run_id: str | None = None
        self.orphans: list[str] = []  # runs logged before the parent run opened (they become its children)
        self.mark_stale_parents()

    # -- queries ------------------------------------------------------------------------------------------
    def _finished(
        self, kind: str, key_tag: str, accept: Accept | None, experiment_ids: Sequence[str | None] | None = None
    ) -> dict[str, FinishedRun]:
        """``key_tag``'s value -> the newest successful run of this ``kind`` carrying it that ``accept(run)``
        accepts (every run without ``accept``). One pass over the store's finished runs (the resume index)."""
        found: dict[str, FinishedRun] = {}
        for finished in self._finished_runs(kind, key_tag, experiment_ids or [self.experiment_id]):
            if finished.cell_id and finished.cell_id not in found and (accept is None or accept(finished)):
                found[finished.cell_id] = finished
        return found

    def _finished_runs(self, kind: str, key_tag: str, experiment_ids: Sequence[str | None]) -> list[FinishedRun]:
        """Every finished run of this ``kind``, newest first."""
        ids = [i for i in experiment_ids if i is not None]
        if len(ids) < len(experiment_ids):  # read only, and the experiment does not exist: nothing has finished
            return []
        if self.sql is not None:
            return self._retry(finished_runs, self.sql, ids, kind, key_tag)
        runs = self._search(f"tags.`olb.kind` = '{kind}' and {FINISHED}", ["attributes.start_time DESC"], ids)
        return [
            FinishedRun(
                run.info.run_id,
                run.data.tags.get(key_tag, ""),
                dict(run.data.metrics),
                dict(run.data.params),
                dict(run.data.tags),
                run.info.start_time / 1000.0,
                (run.info.end_time or run.info.start_time) / 1000.0,
            )
            for run in runs
        ]

    def finished_cells(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        """cell id -> the newest successful cell run of this experiment (any earlier invocation)."""
        return self._finished("cell", "olb.cell_id", accept)

    def finished_cv_tasks(self, accept: Accept | None = None) -> dict[str, FinishedRun]:
        if not self.found:
            return {}
        ids: list[str] = []
        token = None
        while True:  # every active experiment
            page = self._retry(self.client.search_experiments, page_token=token)
            ids, token = ids + [e.experiment_id for e in page], page.token
            if not token:
                return self._finished("cv", CV_TASK_TAG, accept, ids)

    def curve(self, run_id: str, metric: str) -> Curve:
        """Each phase's history (``curve_key``, the phases named by the run's ``phases`` parameter), else the one
        history ``curve/<metric>`` of runs recorded before curves were kept per phase."""
        phases = self._retry(self.client.get_run, run_id).data.params.get("phases", "").split(",")
        points = []
        for index, phase in enumerate(filter(None, phases)):
            history = self._retry(self.client.get_metric_history, run_id, curve_key(phase, metric))
            points += [(m.step, index, m.value) for m in history]
        if not points:
            points = [
                (m.step, 0, m.value) for m in self._retry(self.client.get_metric_history, run_id, f"curve/{metric}")
            ]
        points.sort()
        return {"step": [p[0] for p in points], "phase": [p[1] for p in points], "value": [p[2] for p in points]}

    def mark_stale_parents(self) -> int:
        """Runs left RUNNING by a driver of this host that no longer exists (killed outright, or cut off from
        the server) become KILLED, with the tag ``olb.closed_by`` saying why: its parent run, and the cell runs
        under it. Runs of a driver still alive (host and PID in the parent's tags), and of other hosts, are
        left alone. The number of runs closed."""
        host, n = socket.gethostname(), 0
        for run in self._search(
            f"tags.`olb.kind` = 'grid' and attributes.status = 'RUNNING' and tags.`olb.driver_host` = '{host}'"
        ):
            try:
                pid = int(run.data.tags.get("olb.driver_pid", "0"))
            except ValueError:
                continue
            if pid and pid != os.getpid() and not pid_alive(pid):
                why = f"closed by the grid driver {host}:{os.getpid()}: its driver {host}:{pid} no longer exists"
                parent = run.info.run_id
                children = self._search(f"tags.`mlflow.parentRunId` = '{parent}' and attributes.status = 'RUNNING'")
                for stale in [*children, run]:
                    self._retry(self.client.set_tag, stale.info.run_id, "olb.closed_by", why)
                    self._retry(self.client.set_terminated, stale.info.run_id, Status.KILLED)
                    n += 1
        return n

    def holds(self) -> str:
        if not self.found:
            return f"no tracking store at {self.uri} yet: nothing resumes"
        name = self.experiment_name
        return f"{self.uri}, " + (
            f"experiment {name!r}" if self.experiment_id else f"no experiment {name!r} yet: nothing resumes"
        )

    # -- writes -------------------------------------------------------------------------------------------
    def show_runs(self, params: Sequence[str], metrics: Sequence[str]) -> None:
        self._retry(self.client.set_experiment_tag, self.experiment_id, VIEW_TAG, runs_view(params, metrics))

    def start_parent(self, run_name: str, params: Params, tags: Tags, config_yaml: str) -> str:
        all_tags = {
            "olb.kind": "grid",
            "olb.experiment": self.experiment_name,
            "olb.code_version": self.code_version,
            "olb.driver_host": socket.gethostname(),
            "olb.driver_pid": str(os.getpid()),
            **tags,
        }
        run = self._retry(
            self.client.create_run,
            self.experiment_id,
            run_name=run_name,
            tags={k: clip(str(v), MAX_TAG) for k, v in all_tags.items()},
        )
        self.parent_run_id = run.info.run_id
        self._log_batch(run.info.run_id, params=params)
        self._retry(self.client.log_text, run.info.run_id, config_yaml, "config.yaml")
        for orphan in self.orphans:
            self._retry(self.client.set_tag, orphan, "mlflow.parentRunId", self.parent_run_id)
        self.orphans = []
        return run.info.run_id

    def finish_parent(self, status: str, metrics: Metrics, files: list[Path], tags: Tags | None = None) -> None:
        if self.parent_run_id is None:
            return
        run_id = self.parent_run_id
        self._log_batch(run_id, metrics=metrics, tags=tags)
        for path in files:
            if Path(path).is_dir():
                self._retry(self.client.log_artifacts, run_id, str(path), Path(path).name)
            elif Path(path).is_file():
                self._retry(self.client.log_artifact, run_id, str(path))
        self._retry(self.client.set_terminated, run_id, status)

    def log_run(
        self, run_name: str, params: Params, tags: Tags, files: list[Path], metrics: Metrics | None = None
    ) -> str:
        """A finished run (under this invocation's parent run: now, or once it opens) with ``params``, ``tags``,
        ``metrics`` and ``files`` as artifacts; its id. The grid's stages other than cells (a cross-validation
        task, a selection) use it."""
        parent = {"mlflow.parentRunId": self.parent_run_id} if self.parent_run_id else {}
        run = self._retry(
            self.client.create_run,
            self.experiment_id,
            run_name=run_name,
            tags={
                k: clip(str(v), MAX_TAG) for k, v in {"olb.code_version": self.code_version, **parent, **tags}.items()
            },
        )
        self._log_batch(run.info.run_id, metrics=metrics or {}, params=params)
        for path in files:
            self._retry(self.client.log_artifact, run.info.run_id, str(path))
        self._retry(self.client.set_terminated, run.info.run_id, Status.FINISHED)
        if not parent:
            self.orphans.append(run.info.run_id)
        return run.info.run_id

    def log_cells(self, cells: list[tuple[Cell, CellResult | CellFailure, Tags | None]]) -> list[str | None]:
        """Each cell's result or failure as a child run with its parameters, metrics, curve (metric history), tags
        (``data_tags``: which data it read) and artifacts (:mod:`olb.grid.recording.tracking_cells`); their ids. On a SQL
        store, all in one transaction; else each cell's run is made FINISHED (or FAILED) after its data is in."""
        run_tags = self._run_tags()
        records = [cell_record(c, m, tags, run_tags, self.cell_artifacts) for c, m, tags in cells]
        if self.sql is not None:
            return [*self._retry(insert_runs, self.sql, self.experiment_id, self.artifact_location, records)]
        if len(records) == 1 or self.write_threads == 1:
            return [self._log_record(r) for r in records]
        with ThreadPoolExecutor(min(self.write_threads, len(records)), thread_name_prefix="olb-mlflow") as pool:
            return list(pool.map(self._log_record, records))

    def _log_record(self, record: CellRecord) -> str:
        """One cell's run through MLflow's client: created RUNNING, logged, then terminated."""
        from mlflow.entities import Metric

        run = self._retry(
            self.client.create_run,
            self.experiment_id,
            start_time=record.start_ms,
            run_name=record.run_name,
            tags={k: v for k, v in record.tags.items() if k != "olb.status"},
        )
        run_id = run.info.run_id
        metrics = [Metric(*m) for m in record.metrics]
        self._log_batch(run_id, metrics=metrics, params=record.params, tags={"olb.status": record.tags["olb.status"]})
        if record.dataset is not None:
            self._retry(self.client.log_inputs, run_id, datasets=[dataset_input(record.dataset)])
        if record.files:
            with tempfile.TemporaryDirectory(prefix="olb-cell-") as tmp:
                for fname, data in record.files.items():
                    Path(tmp, fname).write_bytes(data)
                self._retry(self.client.log_artifacts, run_id, tmp)
        self._retry(self.client.set_terminated, run_id, record.status, record.end_ms)
        return run_id

    def _run_tags(self) -> Tags:
        """The tags every child run carries: the experiment, olb's version and the parent run (once open)."""
        tags = {"olb.experiment": self.experiment_name, "olb.code_version": self.code_version}
        return {**tags, "mlflow.parentRunId": self.parent_run_id} if self.parent_run_id else tags


def dataset_input(dataset: DatasetRecord) -> DatasetInput:
    """A cell's data set as MLflow's dataset input entity."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    entity = Dataset(dataset.name, dataset.digest, dataset.source_type, dataset.source)
    return DatasetInput(entity, [InputTag(DATASET_CONTEXT_TAG, dataset.context)])


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (on this host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
