"""An MLflow tracking server (``tracking.uri=http://HOST:PORT``), shared by every grid that writes to it."""

from __future__ import annotations

import os
import time

from olb.grid.lost import TrackingLost
from olb.grid.tracking import MlflowTracker

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

    def _connect(self, timeout_s: float) -> None:
        bound_http_retries(timeout_s)
        _check_server(self.uri)

    def _transient(self, err: Exception) -> bool:
        if any(t in str(err).lower() for t in UNREACHABLE):
            raise TrackingLost(f"the tracking server at {self.uri} does not answer ({_first_line(err)})") from err
        return super()._transient(err)


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


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"[:300]
