"""An MLflow tracking server (``tracking.uri=http://HOST:PORT``), shared by every grid that writes to it.

A server with authentication (``mlflow server --app-name basic-auth``, as :mod:`olb.ops.serve` starts it) is
reached with MLflow's own credentials: ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` from the
environment, ``~/.mlflow/credentials``, or the file ``tracking.credentials`` names (MLflow's format, refused
unless only its owner can read it). A missing or refused credential ends the grid before any work.
"""

from __future__ import annotations

import configparser
import os
import time
from pathlib import Path

from olb.grid.planning.config import TrackingConfig
from olb.grid.auth import read_private
from olb.grid.recording.tracking import MlflowTracker, first_line

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


class MlflowServerTracker(MlflowTracker):
    """An MLflow server: refused in seconds when it does not answer at the start; one that stops answering during
    the grid raises :class:`~olb.grid.lost.TrackingLost` within about ``tracking.timeout_s`` (MLflow's HTTP
    retries bounded to it), which ends the grid."""

    def __init__(
        self, cfg: TrackingConfig, experiment_name: str, code_version: str = "unknown", read_only: bool = False
    ):
        self.credentials = cfg.credentials
        super().__init__(cfg, experiment_name, code_version, read_only)

    def _connect(self, timeout_s: float) -> None:
        bound_http_retries(timeout_s)
        if self.credentials:
            use_credentials_file(Path(self.credentials).expanduser())
        _check_server(self.uri)
        _check_credentials(self.uri)

    unreachable = UNREACHABLE

    def store_name(self) -> str:
        return f"the tracking server at {self.uri}"


def bound_http_retries(timeout_s: float) -> None:
    """MLflow's HTTP retries (7 with backoff factor 2 and 120 s per request: ~4 minutes per write by default)
    bounded to about ``timeout_s`` in all, unless the MLFLOW_HTTP_REQUEST_* variables are set."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")  # backoff 1 + 2 + 4 s
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0.5")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(1, int((timeout_s - 7) / 4))))


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


def use_credentials_file(path: Path) -> None:
    """The MLflow credentials in ``path`` (``[mlflow]`` with ``mlflow_tracking_username`` and
    ``mlflow_tracking_password``, as in ``~/.mlflow/credentials``) put where MLflow reads them first, this
    process's environment; PermissionError when others may read the file, ValueError when it lacks them."""
    creds = configparser.ConfigParser()
    try:
        creds.read_string(read_private(path))
    except configparser.Error as err:
        raise ValueError(f"tracking.credentials={path}: not an MLflow credentials file ({first_line(err)})") from None
    section = creds["mlflow"] if creds.has_section("mlflow") else {}
    keys = ("mlflow_tracking_username", "mlflow_tracking_password")
    if not all(section.get(key) for key in keys):
        raise ValueError(f"tracking.credentials={path}: needs a [mlflow] section with {' and '.join(keys)}")
    for key in keys:
        os.environ[key.upper()] = section[key]


def _check_credentials(uri: str) -> None:
    """PermissionError naming ``uri`` and what is wrong when the server refuses MLflow's credentials (or asks
    for some and there are none)."""
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    creds = get_default_host_creds(uri)
    answer = http_request(
        creds, "/api/2.0/mlflow/experiments/search", "GET", params={"max_results": 1}, max_retries=0, timeout=10
    )
    if answer.status_code not in (401, 403):
        return
    if not (creds.username or creds.token):
        raise PermissionError(
            f"the MLflow server at {uri} asks for credentials (HTTP {answer.status_code}) and there are none: "
            "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or tracking.credentials=FILE"
        )
    who = f"user '{creds.username}'" if creds.username else "MLFLOW_TRACKING_TOKEN"
    raise PermissionError(
        f"the MLflow server at {uri} refuses the credentials of {who} "
        f"(HTTP {answer.status_code}: {answer.text.strip()[:200]})"
    )
