"""The MLflow UI on a tracking store, opened on olb's experiments: ``python -m olb.grid.ui [STORE] [--port N]``
(what ``make ui`` runs).

It starts ``mlflow ui`` on 127.0.0.1 with one worker and no job runner: a single user's UI needs no more, and
MLflow's default, four workers each importing MLflow's server, kept a 2-core machine busy for tens of seconds
after "Uvicorn running" was printed, before the first page could be served. It says when the UI answers, then
the page of each olb experiment in the store (:func:`olb.grid.recording.ui_view.runs_page`: its runs table, not
MLflow's GenAI overview), and stops the server, by its process group, when stopped itself (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from olb.grid.recording.ui_view import runs_page

START_TIMEOUT_S = 300.0  # a loaded machine; the wait says how long it has waited every PROGRESS_S
PROGRESS_S = 10.0
EXIT_USAGE = 2


def how_to_open(store: str, page: str, port: int = 5000) -> str:
    """What opens ``page`` of ``store``: a tracking server's own address, else the command that serves the store
    and the address it serves the page at."""
    if store.startswith(("http://", "https://")):
        return f"{store.rstrip('/')}/{page}"
    return f"python -m olb.grid.ui {store}, then http://127.0.0.1:{port}/{page}"


def ui_command(store: str, port: int) -> list[str]:
    """The ``mlflow ui`` command that serves ``store`` on 127.0.0.1:``port``."""
    return [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--backend-store-uri",
        store,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]


def problem(store: str, port: int) -> str | None:
    """Why the UI cannot start on ``store`` and ``port`` (one line), or None."""
    if store.startswith("sqlite:///") and not Path(store[len("sqlite:///") :]).is_file():
        return f"no tracking store at {store} (a grid writes it: python -m olb.grid; or name another store)"
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return f"port {port} on 127.0.0.1 is in use (--port N, or PORT=N make ui)"
    return None


def olb_experiments(url: str) -> list[tuple[str, str]]:
    """(name, id) of the store's olb experiments, as the running UI's server lists them."""
    import requests

    query: dict[str, str | int] = {"max_results": 1000, "filter": "tags.`olb.kind` = 'experiment'"}
    answer = requests.get(
        f"{url}/api/2.0/mlflow/experiments/search",
        params=query,
        timeout=30,
    )
    answer.raise_for_status()
    return [(e["name"], e["experiment_id"]) for e in answer.json().get("experiments", [])]


def wait_ready(proc: subprocess.Popen, url: str, timeout_s: float = START_TIMEOUT_S) -> float | None:
    """Seconds until ``url`` answers, saying every :data:`PROGRESS_S` how long it has waited; None when the server
    exited or did not answer within ``timeout_s``."""
    import requests

    t0 = time.monotonic()
    next_note = t0 + PROGRESS_S
    while proc.poll() is None:
        try:
            if requests.get(f"{url}/health", timeout=2).ok:
                return time.monotonic() - t0
        except requests.RequestException:
            pass
        now = time.monotonic()
        if now - t0 > timeout_s:
            return None
        if now >= next_note:
            print(f"olb: the MLflow UI is starting ({now - t0:.0f} s)", flush=True)
            next_note += PROGRESS_S
        time.sleep(0.5)
    return None


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, SIGKILL to what is left of it after 15 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=15)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str] | None = None) -> int:
    from olb.grid.recording.tracking import resolve_uri

    parser = argparse.ArgumentParser(prog="python -m olb.grid.ui", description=__doc__.split("\n\n")[0])
    parser.add_argument("store", nargs="?", help="tracking store URI (default: $MLFLOW_TRACKING_URI or ./mlflow.db)")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    store = resolve_uri(args.store)
    why = problem(store, args.port)
    if why:
        print(f"olb: {why}", file=sys.stderr)
        return EXIT_USAGE
    url = f"http://127.0.0.1:{args.port}"
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no job runner: the UI needs none
    print(f"olb: starting the MLflow UI on {store} ...", flush=True)
    proc = subprocess.Popen(ui_command(store, args.port), env=env, start_new_session=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        took = wait_ready(proc, url)
        if took is None:
            print(f"olb: the MLflow UI did not answer at {url} (exit code {proc.poll()})", file=sys.stderr)
            return 1
        print(f"olb: the MLflow UI is ready at {url} after {took:.0f} s (Ctrl-C stops it)", flush=True)
        for name, experiment_id in olb_experiments(url):
            print(f"  {name}: {url}/{runs_page(experiment_id)}", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        stop(proc)


if __name__ == "__main__":
    sys.exit(main())
