"""The MLflow trackers' shared base: one experiment per olb experiment, one parent run per invocation, one child
run per cell and per cross-validation task. Used as is for a store other than a SQLite file or a server (a
database URI); :mod:`olb.grid.recording.tracking_sqlite` and :mod:`olb.grid.recording.tracking_server` add what their stores need.

Only the driver writes to the tracking store. Workers return their results (a small payload) and the driver's
writer thread (:mod:`olb.grid.recording.writer`) logs them in batches while the other cells keep running: a single writer
makes parallel cells safe on any store (SQLite included, where concurrent schema creation crashes), and cells on
other machines of a Ray cluster need no access to the store. Every write is retried with backoff on "database is
locked" errors (another grid writing to the same SQLite file). On a SQL store (SQLite, a database URI) every call
to the store has a deadline, ``tracking.timeout_s`` plus :data:`DEADLINE_SLACK_S`: a store that stops answering
without closing its connection (a stopped server, a hung file system) raises
:class:`~olb.grid.lost.TrackingLost` rather than hanging the grid, and so does every later call.

A child run's status becomes FINISHED (or FAILED) only after everything about it is logged, so a driver killed
while logging leaves either nothing or a RUNNING run, which resume does not count as finished. On a SQL store
(SQLite, a database URI) a batch of cells is one transaction with each run written whole
(:mod:`olb.grid.recording.tracking_sql`); on a server each cell is three requests (create, log, terminate), several cells
at a time (``tracking.write_threads``).
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from olb.grid.planning.config import TrackingConfig
from olb.grid.deadline import DeadlineExceeded, call_within
from olb.grid.lost import TrackingLost
from olb.grid.messages import CellFailure, CellResult, Status
from olb.grid.planning.plan import Cell
from olb.grid.recording.tracker import CV_TASK_TAG, Accept, Curve, FinishedRun, Metrics, Params, Tags, Tracker
from olb.grid.recording.tracking_cells import (
    MAX_PARAM,
    MAX_TAG,
    CellRecord,
    DatasetRecord,
    cell_record,
    clip,
    curve_key,
)
from olb.grid.recording.tracking_sql import DATASET_CONTEXT_TAG, bulk_store, finished_runs, insert_runs
from olb.grid.recording.ui_view import VIEW_TAG, runs_page, runs_view

if TYPE_CHECKING:
    from mlflow.entities import DatasetInput, Metric, Run

    from olb.grid.recording.tracking_sql import SqlStore

T = TypeVar("T")

log = logging.getLogger("olb.grid")
# SQLite under concurrent writers. (MLflow's REST client retries HTTP errors and lost connections itself.)
TRANSIENT = ("database is locked", "database table is locked", "database is busy")
FINISHED = "tags.`olb.status` = 'FINISHED' and attributes.status = 'FINISHED'"
# beyond tracking.timeout_s, so that the store's own time-outs (a database's statement and socket time-outs, SQLite's
# busy time-out), which say more, are heard first
DEADLINE_SLACK_S = 5.0


def resolve_uri(uri: str | None) -> str:
    """``uri`` as given, else MLflow's default (``$MLFLOW_TRACKING_URI``, else sqlite:///mlflow.db in the cwd)."""
    import mlflow

    return uri or mlflow.get_tracking_uri()


class MlflowTracker(Tracker):
    """The driver's MLflow writer. Writes are retried with backoff while SQLite reports a lock."""

    uri: str  # resolved: always somewhere
    store_uri: str  # what MLflow connects with: ``uri`` with the store's time-outs (:meth:`_store_uri`)
    bounded = False  # whether each call to the store has a deadline (a SQL store; an MLflow server bounds its own)
    concurrent_writes = True  # whether cells written through MLflow's client go ``tracking.write_threads`` at once

    def __init__(
        self, cfg: TrackingConfig, experiment_name: str, code_version: str = "unknown", read_only: bool = False
    ):
        """``read_only`` (the dry run): a store that does not exist is not created, nor is an experiment (nothing
        resumes), and no run is closed or written."""
        import mlflow
        from mlflow.tracking import MlflowClient

        for name in ("alembic", "mlflow", "sqlalchemy", "urllib3", "pooch"):  # after the import: mlflow sets
            logging.getLogger(name).setLevel(logging.WARNING)  # its own logger up when imported
        # on a server MLflow would read every run back when it ends, to print a link to it: a request and two lines
        # of output per cell
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        super().__init__(cfg, experiment_name, code_version, read_only)
        self.retries = max(1, int(cfg.retries))
        self.cell_artifacts = cfg.cell_artifacts
        self.write_threads = max(1, int(cfg.write_threads)) if self.concurrent_writes else 1
        self.uri = resolve_uri(cfg.uri)
        self.timeout_s = float(cfg.timeout_s)
        self.lost: TrackingLost | None = None  # once a call missed its deadline: every later call raises it
        self.deadline_s: float | None = None  # set once the store is open (creating its schema may take longer)
        self.store_uri = self._store_uri(self.uri, self.timeout_s)
        self.experiment_id: str | None = None
        self.sql: SqlStore | None = None  # cells written and read in bulk (None: through MLflow's client)
        self.found = not read_only or store_exists(self.uri)  # a store to read (a read-only one may not exist)
        if not self.found:
            return
        self._connect(self.timeout_s)
        if read_only:
            self.client = MlflowClient(tracking_uri=self.store_uri)
            self._open()
            found = self._retry(self.client.get_experiment_by_name, experiment_name)
            self.experiment_id = found.experiment_id if found and found.lifecycle_stage == "active" else None
            self.sql = self._retry(bulk_store, self.client)
            return
        mlflow.set_tracking_uri(self.store_uri)
        # Creates the store (schema migration) and the experiment once, here, before any cell runs.
        with self._opening():
            self.client = MlflowClient(tracking_uri=self.store_uri)
            self.experiment_id = self._retry(self._get_or_create_experiment, experiment_name)
        self._open()
        self.sql = self._retry(bulk_store, self.client)
        self.artifact_location = self._retry(self.client.get_experiment, self.experiment_id).artifact_location
        self.ui_page = runs_page(self.experiment_id)
        self.parent_run_id: str | None = None
        self.orphans: list[str] = []  # runs logged before the parent run opened (they become its children)
        self.mark_stale_parents()

    # -- what a store adds ----------------------------------------------------------------------------------
    def _store_uri(self, uri: str, timeout_s: float) -> str:
        """``uri`` with what bounds the store's own waits (its client's time-outs), for MLflow to connect with."""
        return uri

    def _connect(self, timeout_s: float) -> None:
        """Check that the store answers, before anything is written."""

    def _opening(self) -> AbstractContextManager[None]:
        """A context held while the store and the experiment are created."""
        return nullcontext()

    def _artifact_location(self, experiment_name: str) -> str | None:
        """Where a new experiment's artifacts go (None: the store's default)."""
        return None

    def _transient(self, err: Exception) -> bool:
        """Whether a failed write is worth retrying; TrackingLost when the store says it is gone (``unreachable``)."""
        message = str(err).lower()
        if any(t in message for t in self.unreachable):
            raise TrackingLost(f"{self.store_name()} does not answer ({first_line(err)})") from err
        return any(t in message for t in TRANSIENT)

    unreachable: tuple[str, ...] = ()  # what the store's client says of a store that is gone (lower case)

    def store_name(self) -> str:
        """The store, as messages name it (never a password)."""
        return f"the tracking store at {self.uri}"

    def _silent(self, seconds: float) -> str:
        """What a call that had no reply within ``seconds`` says of the store."""
        return f"{self.store_name()} does not answer (no reply within {seconds:g} s)"

    # -- robustness ---------------------------------------------------------------------------------------
    def _retry(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """``fn(*args, **kwargs)``, retried while its error is transient; once a bounded store is open, all its
        attempts within one deadline: TrackingLost when it passes (a call is left behind, blocked on the store),
        and for every call after that one."""
        if self.lost is not None:
            raise self.lost
        delay, attempts = 0.05, 0
        deadline = None if self.deadline_s is None else time.monotonic() + self.deadline_s
        while True:
            try:
                if deadline is None:
                    return fn(*args, **kwargs)
                return call_within(deadline - time.monotonic(), fn, *args, **kwargs)
            except DeadlineExceeded:
                assert self.deadline_s is not None
                self.lost = TrackingLost(self._silent(self.deadline_s))
                raise self.lost from None
            except Exception as err:  # noqa: BLE001 - classified by _transient
                attempts += 1
                if not self._transient(err) or attempts >= self.retries:
                    raise
                log.debug("MLflow write failed (%s), retrying in %.2fs", err, delay)
                time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
                delay = min(delay * 2, 5.0)

    def _open(self) -> None:
        """The store is open: from now on, on a bounded store, every call has its deadline."""
        if self.bounded:
            self.deadline_s = self.timeout_s + DEADLINE_SLACK_S

    def _get_or_create_experiment(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            try:
                # "model training" experiment: the UI's runs view, not the GenAI traces overview
                return self.client.create_experiment(
                    name,
                    artifact_location=self._artifact_location(name),
                    tags={"mlflow.experimentKind": "custom_model_development", "olb.kind": "experiment"},
                )
            except MlflowException as err:  # created meanwhile by another driver
                exp = self.client.get_experiment_by_name(name)
                if exp is None:
                    raise err
        if exp.lifecycle_stage == "deleted":
            self.client.restore_experiment(exp.experiment_id)
        return exp.experiment_id

    # -- queries ------------------------------------------------------------------------------------------
    def _search(
        self, filter_string: str, order_by: list[str] | None = None, experiment_ids: list[str] | None = None
    ) -> list[Run]:
        from mlflow.entities import ViewType

        runs: list[Run] = []
        token = None
        if not (experiment_ids or self.experiment_id):  # read-only, and the experiment does not exist
            return runs
        while True:
            page = self._retry(
                self.client.search_runs,
                experiment_ids or [self.experiment_id],
                filter_string=filter_string,
                run_view_type=ViewType.ACTIVE_ONLY,
                max_results=5000,
                order_by=order_by,
                page_token=token,
            )
            runs.extend(page)
            token = page.token
            if not token:
                return runs

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

    def _log_batch(
        self,
        run_id: str,
        metrics: Iterable[Metric] | dict[str, float] = (),
        params: Params | None = None,
        tags: Tags | None = None,
    ) -> None:
        from mlflow.entities import Metric, Param, RunTag

        if isinstance(metrics, dict):
            now = int(time.time() * 1000)
            metrics = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
        plist = [Param(str(k), clip(str(v), MAX_PARAM)) for k, v in (params or {}).items()]
        tlist = [RunTag(str(k), clip(str(v), MAX_TAG)) for k, v in (tags or {}).items()]
        self._retry(self.client.log_batch, run_id, metrics=list(metrics), params=plist, tags=tlist)


def store_exists(uri: str) -> bool:
    """Whether the tracking store at ``uri`` is there to read: a SQLite file, a local folder (opening either
    creates it); a server or a database is asked when opened."""
    if uri.startswith("sqlite:"):
        path = uri[len("sqlite:///") :].split("?")[0]
        return path not in ("", ":memory:") and Path(path).is_file() and Path(path).stat().st_size > 0
    if uri.startswith("file:") or "://" not in uri:
        from mlflow.utils.uri import local_file_uri_to_path  # type: ignore[attr-defined]

        return Path(local_file_uri_to_path(uri)).is_dir()
    return True


def dataset_input(dataset: DatasetRecord) -> DatasetInput:
    """A cell's data set as MLflow's dataset input entity."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    entity = Dataset(dataset.name, dataset.digest, dataset.source_type, dataset.source)
    return DatasetInput(entity, [InputTag(DATASET_CONTEXT_TAG, dataset.context)])


def first_line(err: BaseException) -> str:
    """An error's type and first line (a database driver's own error, without SQLAlchemy's wrapping)."""
    cause = getattr(err, "orig", None) or err
    text = str(cause).strip()
    return f"{type(cause).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (on this host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
