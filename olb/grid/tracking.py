"""MLflow tracking of a grid: one experiment per olb experiment, one parent run per invocation, one child
run per cell.

Only the driver writes to the tracking store. Workers return their results (a small payload) and the
driver logs each cell the moment it arrives, while the other cells keep running: a single writer makes
parallel cells safe on any store (SQLite included, where concurrent schema creation crashes), and cells on
other machines of a Ray cluster need no access to the store. Every write is retried with backoff on
"database is locked" errors (another grid writing to the same SQLite file); a tracking server that does not
answer within about ``tracking.timeout_s`` (MLflow's HTTP retries bounded to it) raises
:class:`~olb.grid.lost.TrackingLost`, which ends the grid.

A child run's status becomes FINISHED (or FAILED) only after everything about it is logged, so a driver
killed while logging leaves a RUNNING run that resume does not count as finished.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from olb.grid.config import TrackingConfig
from olb.grid.lost import TrackingLost
from olb.grid.messages import CellFailure, CellResult, Status
from olb.grid.plan import Cell
from olb.grid.tracker import Tracker
from olb.grid.worker import curve_csv

log = logging.getLogger("olb.grid")

MAX_PARAM = 6000
MAX_TAG = 8000
# SQLite under concurrent writers. (MLflow's REST client retries HTTP errors and lost connections itself.)
TRANSIENT = ("database is locked", "database table is locked", "database is busy")
# A server that is gone, after MLflow's own retries (requests/urllib3 messages).
UNREACHABLE = (
    "max retries exceeded",
    "connection refused",
    "failed to establish a new connection",
    "connection aborted",
    "remotedisconnected",
    "read timed out",
    "connection reset",
)


def bound_http_retries(timeout_s: float) -> None:
    """MLflow's HTTP retries (7 with backoff factor 2 and 120 s per request: ~4 minutes per write by default)
    bounded to about ``timeout_s`` in all, unless the MLFLOW_HTTP_REQUEST_* variables are set."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")  # backoff 1 + 2 + 4 s
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0.5")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(1, int((timeout_s - 7) / 4))))


def resolve_uri(uri: str | None) -> str:
    """``uri`` as given, else MLflow's default (``$MLFLOW_TRACKING_URI``, else sqlite:///mlflow.db in the cwd)."""
    import mlflow

    if uri:
        return uri
    return mlflow.get_tracking_uri()


def _quiet_mlflow_logs() -> None:
    for name in ("alembic", "mlflow", "sqlalchemy", "urllib3", "pooch"):
        logging.getLogger(name).setLevel(logging.WARNING)


@dataclass
class FinishedRun:
    """A cell finished by an earlier (or this) invocation, as the tracking store has it."""

    run_id: str
    cell_id: str
    metrics: dict
    params: dict
    tags: dict
    start_time: float
    end_time: float


def sqlite_artifact_location(uri: str, experiment_name: str) -> str | None:
    """For a SQLite store, ``mlruns/<experiment name>`` beside the database file (MLflow's default is relative to
    the working directory, so artifacts would land wherever the grid was started); None for any other store.

    >>> sqlite_artifact_location("sqlite:////tmp/grid/mlflow.db", "olb/table3")
    'file:///tmp/grid/mlruns/olb/table3'
    """
    if not uri.startswith("sqlite:///") or uri == "sqlite:///:memory:":
        return None
    return (Path(uri[len("sqlite:///") :]).resolve().parent / "mlruns" / experiment_name).as_uri()


class MlflowTracker(Tracker):
    """The driver's MLflow writer (a SQLite file or a tracking server). Writes are retried with backoff while SQLite reports a lock."""

    def __init__(self, cfg: TrackingConfig, experiment_name: str, code_version: str = "unknown"):
        import mlflow
        from mlflow.tracking import MlflowClient

        _quiet_mlflow_logs()  # after the import: mlflow sets its own logger up when imported

        self.retries = max(1, int(cfg.retries))
        self.cell_artifacts = cfg.cell_artifacts
        self.uri = resolve_uri(cfg.uri)
        bound_http_retries(float(cfg.timeout_s))
        self.experiment_name = experiment_name
        self.code_version = code_version
        if self.uri.startswith(("http://", "https://")):
            _check_server(self.uri)
        mlflow.set_tracking_uri(self.uri)
        # Creates the store (schema migration) and the experiment once, here, before any cell runs; on SQLite
        # under a file lock, so that grids started at the same time on a fresh store do not race in the migration.
        with _sqlite_lock(self.uri):
            self.client = MlflowClient(tracking_uri=self.uri)
            self.experiment_id = self._retry(self._get_or_create_experiment, experiment_name)
        self.parent_run_id: str | None = None

    # -- robustness ---------------------------------------------------------------------------------------
    def _retry(self, fn, *args, **kwargs):
        delay = 0.05
        for attempt in range(self.retries):
            try:
                return fn(*args, **kwargs)
            except Exception as err:  # noqa: BLE001 - classified below
                text = str(err).lower()
                if any(t in text for t in UNREACHABLE):
                    raise TrackingLost(
                        f"the tracking server at {self.uri} does not answer ({_first_line(err)})"
                    ) from err
                if attempt + 1 >= self.retries or not any(t in text for t in TRANSIENT):
                    raise
                log.debug("MLflow write failed (%s), retrying in %.2fs", err, delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _get_or_create_experiment(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            try:
                # "model training" experiment: the UI's runs view, not the GenAI traces overview
                return self.client.create_experiment(
                    name,
                    artifact_location=sqlite_artifact_location(self.uri, name),
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
    def _search(self, filter_string: str, order_by=None) -> list:
        from mlflow.entities import ViewType

        runs, token = [], None
        while True:
            page = self._retry(
                self.client.search_runs,
                [self.experiment_id],
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

    def finished_cells(self, accept=None) -> dict[str, FinishedRun]:
        """cell id -> the newest successful child run of this experiment (any earlier invocation) for which
        ``accept(run)`` holds (every run without ``accept``)."""
        runs = self._search(
            "tags.`olb.status` = 'FINISHED' and attributes.status = 'FINISHED'", order_by=["attributes.start_time DESC"]
        )
        found: dict[str, FinishedRun] = {}
        for run in runs:
            cid = run.data.tags.get("olb.cell_id")
            if cid and cid not in found:
                finished = FinishedRun(
                    run.info.run_id,
                    cid,
                    dict(run.data.metrics),
                    dict(run.data.params),
                    dict(run.data.tags),
                    run.info.start_time / 1000.0,
                    (run.info.end_time or run.info.start_time) / 1000.0,
                )
                if accept is None or accept(finished):
                    found[cid] = finished
        return found

    def curve(self, run_id: str, metric: str) -> dict:
        history = self._retry(self.client.get_metric_history, run_id, f"curve/{metric}")
        history = sorted(history, key=lambda m: m.step)
        return {"step": [m.step for m in history], "value": [m.value for m in history]}

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

    # -- writes -------------------------------------------------------------------------------------------
    def start_parent(self, run_name: str, params: dict, tags: dict, config_yaml: str) -> str:
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
            tags={k: _clip(str(v), MAX_TAG) for k, v in all_tags.items()},
        )
        self.parent_run_id = run.info.run_id
        self._log_batch(run.info.run_id, params=params)
        self._retry(self.client.log_text, run.info.run_id, config_yaml, "config.yaml")
        return run.info.run_id

    def finish_parent(self, status: str, metrics: dict, files: list[Path], tags: dict | None = None) -> None:
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

    def log_run(self, run_name: str, params: dict, tags: dict, files: list[Path]) -> str:
        """A finished run (under this invocation's parent run, if any) with ``params``, ``tags`` and ``files``
        as artifacts; its id. The grid's stages other than cells (e.g. a cross-validated selection) use it."""
        parent = {"mlflow.parentRunId": self.parent_run_id} if self.parent_run_id else {}
        run = self._retry(
            self.client.create_run,
            self.experiment_id,
            run_name=run_name,
            tags={"olb.code_version": self.code_version, **parent, **tags},
        )
        self._log_batch(run.info.run_id, params=params)
        for path in files:
            self._retry(self.client.log_artifact, run.info.run_id, str(path))
        self._retry(self.client.set_terminated, run.info.run_id, Status.FINISHED)
        return run.info.run_id

    def log_cell(self, cell: Cell, message: CellResult | CellFailure, data_tags: dict | None = None) -> str:
        """One child run with the cell's parameters, metrics, curve (one batch), tags (``data_tags``: which
        data it read) and artifacts."""
        status = message.status
        start_ms = int(message.start_time * 1000)
        end_ms = int(message.end_time * 1000)
        tags = self._cell_tags(cell, message, data_tags)
        run = self._retry(
            self.client.create_run,
            self.experiment_id,
            start_time=start_ms,
            run_name=cell.run_name,
            tags={k: _clip(str(v), MAX_TAG) for k, v in tags.items() if k != "olb.status"},
        )
        run_id = run.info.run_id
        params = _cell_params(cell)
        if isinstance(message, CellResult):
            params["phases"] = ",".join(message.phases)
        self._log_batch(run_id, metrics=_cell_metrics(message, end_ms), params=params, tags={"olb.status": status})
        files = self._cell_files(message)
        if files:
            with tempfile.TemporaryDirectory(prefix="olb-cell-") as tmp:
                for fname, data in files.items():
                    Path(tmp, fname).write_bytes(data)
                self._retry(self.client.log_artifacts, run_id, tmp)
        self._retry(
            self.client.set_terminated, run_id, Status.FINISHED if status == Status.FINISHED else Status.FAILED, end_ms
        )
        return run_id

    def _cell_tags(self, cell: Cell, message: CellResult | CellFailure, data_tags: dict | None) -> dict:
        tags = {
            "mlflow.runName": cell.run_name,
            "olb.kind": "cell",
            "olb.cell_id": cell.cell_id,
            "olb.experiment": self.experiment_name,
            "olb.code_version": self.code_version,
            "olb.entry": cell.entry,
            "olb.label": cell.label,
            "olb.host": message.host,
            "olb.node_ip": message.node_ip,
            "olb.status": message.status,
            **(data_tags or {}),
        }
        if self.parent_run_id:
            tags["mlflow.parentRunId"] = self.parent_run_id
        if isinstance(message, CellFailure):
            tags["olb.error"] = message.error
        return tags

    def _cell_files(self, message: CellResult | CellFailure) -> dict[str, bytes]:
        """The cell's artifacts: its curve (CSV, and the worker's plot) when finished, else its traceback."""
        if isinstance(message, CellFailure):
            return {"traceback.txt": message.traceback.encode()}
        files = {}
        if self.cell_artifacts:
            files["curve.csv"] = curve_csv(message).encode()
            if message.curve_png:
                files["curve.png"] = message.curve_png
        return files

    def _log_batch(self, run_id: str, metrics=(), params: dict | None = None, tags: dict | None = None) -> None:
        from mlflow.entities import Metric, Param, RunTag

        if isinstance(metrics, dict):
            now = int(time.time() * 1000)
            metrics = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
        plist = [Param(str(k), _clip(str(v), MAX_PARAM)) for k, v in (params or {}).items()]
        tlist = [RunTag(str(k), _clip(str(v), MAX_TAG)) for k, v in (tags or {}).items()]
        self._retry(self.client.log_batch, run_id, metrics=list(metrics), params=plist, tags=tlist)


def _cell_params(cell: Cell) -> dict:
    """A cell's run parameters: what decides its result; a hyperparameter named like one of them gets ``param.``."""
    params = {
        "algorithm": cell.algorithm,
        "dataset": cell.dataset,
        "seed": cell.seed,
        "protocol": cell.protocol,
        "loops": cell.loops,
        "metrics": ",".join(cell.metrics),
        "curve_every": cell.curve_every,
        "label": cell.label,
        "cell_id": cell.cell_id,
    }
    for key, value in cell.params.items():
        params[key if key not in params else f"param.{key}"] = value
    return params


def _cell_metrics(message: CellResult | CellFailure, end_ms: int) -> list:
    """A finished cell's metrics, timings, phase timings and curve (one point per step); a failed one's wall time."""
    from mlflow.entities import Metric

    if isinstance(message, CellFailure):
        return [Metric("wall_s", float(message.wall_s), end_ms, 0)]
    metrics = [Metric(key, float(value), end_ms, 0) for key, value in message.metrics.items()]
    for key in ("runtime_s", "cpu_s", "compile_s", "train_us_per_example", "wall_s", "setup_s", "peak_rss_mb"):
        metrics.append(Metric(key, float(getattr(message, key)), end_ms, 0))
    for phase, timing in message.phases.items():
        for key, value in timing.items():
            metrics.append(Metric(f"phase/{phase}/{key}", float(value), end_ms, 0))
    curve, name = message.curve, f"curve/{message.primary_metric}"
    metrics.extend(Metric(name, float(v), end_ms, int(s)) for s, v in zip(curve["step"], curve["value"]))
    return metrics


@contextmanager
def _sqlite_lock(uri: str):
    """An exclusive lock for a sqlite URI's database file (nothing for other stores), kept in the temp dir and
    removed when released (a driver that finds the file replaced meanwhile locks the new one)."""
    import fcntl
    import hashlib

    path = uri[len("sqlite:///") :].split("?")[0] if uri.startswith("sqlite:///") else None
    if not path or path.startswith(":memory:"):
        yield
        return
    key = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"olb-sqlite-{os.getuid()}-{key}.lock"
    while True:
        fh = open(lock, "a")
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            if os.stat(lock).st_ino == os.fstat(fh.fileno()).st_ino:
                break  # the file we hold is still the lock (not removed by its previous holder)
        except FileNotFoundError:
            pass
        fh.close()
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


def _check_server(uri: str, attempts: int = 3) -> None:
    """Fail fast (seconds, not MLflow's minutes of retries) when a tracking server does not answer."""
    import requests

    for attempt in range(attempts):
        try:
            requests.get(uri.rstrip("/") + "/health", timeout=5)
            return  # any answer: the server is there (auth or a proxy may answer differently)
        except requests.RequestException as err:
            if attempt + 1 == attempts:
                raise ConnectionError(f"no MLflow server answers at {uri}: {err}") from None
            time.sleep(1.0)


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (on this host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
