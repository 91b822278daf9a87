"""The MLflow trackers' connection to their store (:class:`MlflowConnection`): the store and the experiment
opened, every call to it retried and bounded; :class:`olb.grid.recording.tracking.MlflowTracker` reads and writes
through it, and :mod:`olb.grid.recording.tracking_sqlite`, :mod:`olb.grid.recording.tracking_server` and
:mod:`olb.grid.recording.tracking_database` add what their stores need (the hooks of :class:`MlflowConnection`).

Every write is retried with backoff on "database is locked" errors (another grid writing to the same SQLite file).
On a SQL store (SQLite, a database URI) every call to the store has a deadline, ``tracking.timeout_s`` plus
:data:`DEADLINE_SLACK_S`: a store that stops answering without closing its connection (a stopped server, a hung
file system) raises :class:`~olb.grid.lost.TrackingLost` rather than hanging the grid, and so does every later call.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from olb.grid.deadline import DeadlineExceeded, call_within
from olb.grid.lost import TrackingLost
from olb.grid.planning.config import TrackingConfig
from olb.grid.recording.tracker import Params, Tags, Tracker
from olb.grid.recording.tracking_cells import MAX_PARAM, MAX_TAG, clip
from olb.grid.recording.tracking_sql import bulk_store
from olb.grid.recording.ui_view import runs_page

if TYPE_CHECKING:
    from mlflow.entities import Metric, Run

    from olb.grid.recording.tracking_sql import SqlStore

T = TypeVar("T")

log = logging.getLogger("olb.grid")
# SQLite under concurrent writers. (MLflow's REST client retries HTTP errors and lost connections itself.)
TRANSIENT = ("database is locked", "database table is locked", "database is busy")
# beyond tracking.timeout_s, so that the store's own time-outs (a database's statement and socket time-outs, SQLite's
# busy time-out), which say more, are heard first
DEADLINE_SLACK_S = 5.0


def resolve_uri(uri: str | None) -> str:
    """``uri`` as given, else MLflow's default (``$MLFLOW_TRACKING_URI``, else sqlite:///mlflow.db in the cwd)."""
    import mlflow

    return uri or mlflow.get_tracking_uri()


class MlflowConnection(Tracker):
    """An MLflow store, open: the experiment found or created, every call retried with backoff while SQLite reports
    a lock and, on a bounded store, within its deadline."""

    uri: str  # resolved: always somewhere
    store_uri: str  # what MLflow connects with: ``uri`` with the store's time-outs (:meth:`_store_uri`)
    bounded = False  # whether each call to the store has a deadline (a SQL store; an MLflow server bounds its own)

    def __init__(
        self, cfg: TrackingConfig, experiment_name: str, code_version: str = "unknown", read_only: bool = False
    ):
        """Opens the store (``read_only``, the dry run: a store that does not exist is not created, nor is an
        experiment)."""
        import mlflow
        from mlflow.tracking import MlflowClient

        for name in ("alembic", "mlflow", "sqlalchemy", "urllib3", "pooch"):  # after the import: mlflow sets
            logging.getLogger(name).setLevel(logging.WARNING)  # its own logger up when imported
        # on a server MLflow would read every run back when it ends, to print a link to it: a request and two lines
        # of output per cell
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        super().__init__(cfg, experiment_name, code_version, read_only)
        self.retries = max(1, int(cfg.retries))
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

    # -- shared by reads and writes ---------------------------------------------------------------------
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


def first_line(err: BaseException) -> str:
    """An error's type and first line (a database driver's own error, without SQLAlchemy's wrapping)."""
    cause = getattr(err, "orig", None) or err
    text = str(cause).strip()
    return f"{type(cause).__name__}: {text.splitlines()[0] if text else ''}"[:300]
