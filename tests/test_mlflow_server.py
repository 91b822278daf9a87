"""olb.grid against a real ``mlflow server`` on 127.0.0.1: the runs, their parameters and metrics over the
REST API, and the MLflow UI in headless Chromium."""

from __future__ import annotations

import html
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from olb.grid import compose, run_grid

pytestmark = pytest.mark.e2e

EXPERIMENT = "olb/served"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mlflow_server")
    port = free_port()
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no background job runner processes
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen(
        [
            str(mlflow_bin),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{tmp / 'server.db'}",
            "--artifacts-destination",
            str(tmp / "artifacts"),
        ],
        cwd=tmp,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while True:
            assert proc.poll() is None, (tmp / "server.log").read_text()[-3000:]
            try:
                if requests.get(f"{url}/health", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            assert time.time() < deadline, "mlflow server did not start"
            time.sleep(0.5)
        yield url, tmp
    finally:
        # the server and its uvicorn worker are in their own process group (start_new_session): stop that group
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # anything of the group still alive
        except ProcessLookupError:
            pass
        log.close()


@pytest.fixture(scope="module")
def grid(server):
    url, tmp = server
    cfg = compose(
        [
            "backend=serial",
            "seeds=2",
            "num_learners=2",
            "algorithm.onlinebmr.params.gamma=[0.1,0.01]",
            "name=served",
            f"tracking.uri={url}",
            "plots=false",
        ]
    )
    outcome = run_grid(cfg, tmp / "out")
    assert outcome.exit_code == 0
    return url, outcome


def api(url: str, method: str, path: str, **kwargs) -> dict:
    r = requests.request(method, f"{url}/api/2.0/mlflow/{path}", timeout=30, **kwargs)
    r.raise_for_status()
    return r.json()


def test_runs_params_and_metrics_over_rest(grid):
    url, o = grid
    exp = api(url, "GET", "experiments/get-by-name", params={"experiment_name": EXPERIMENT})["experiment"]
    runs = api(url, "POST", "runs/search", json={"experiment_ids": [exp["experiment_id"]], "max_results": 100})["runs"]
    tags = lambda run: {t["key"]: t["value"] for t in run["data"].get("tags", [])}  # noqa: E731
    children = [r for r in runs if tags(r).get("olb.kind") == "cell"]
    parents = [r for r in runs if tags(r).get("olb.kind") == "grid"]
    assert len(children) == 6 and len(parents) == 1
    assert parents[0]["info"]["run_id"] == o.parent_run_id and parents[0]["info"]["status"] == "FINISHED"
    assert {tags(r)["mlflow.parentRunId"] for r in children} == {o.parent_run_id}
    assert {r["info"]["status"] for r in children} == {"FINISHED"}
    by_id = o.cells.set_index("cell_id")
    for run in children:
        params = {p["key"]: p["value"] for p in run["data"]["params"]}
        metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
        row = by_id.loc[params["cell_id"]]
        assert params["algorithm"] == row["algorithm"] and params["dataset"] == "emotions"
        assert int(params["seed"]) == row["seed"] and int(params["num_learners"]) == 2
        if params["algorithm"] == "onlinebmr":
            assert float(params["gamma"]) == row["gamma"]
        assert metrics["rank_loss"] == pytest.approx(row["rank_loss"], rel=1e-12)
        assert metrics["runtime_s"] > 0 and "phase/test/wall_s" in metrics
    run_id = children[0]["info"]["run_id"]
    history = api(url, "GET", "metrics/get-history", params={"run_id": run_id, "metric_key": "curve/rank_loss"})
    assert len(history["metrics"]) > 5
    files = api(url, "GET", "artifacts/list", params={"run_id": run_id})["files"]
    assert {f["path"] for f in files} == {"curve.csv", "curve.png"}
    files = api(url, "GET", "artifacts/list", params={"run_id": o.parent_run_id})["files"]
    assert {"cells.csv", "table.csv", "table.md", "config.yaml"} <= {f["path"] for f in files}


def page_text(url: str, tmp: Path) -> str:
    """The text of ``url`` as headless Chromium renders it (the MLflow UI is a React app)."""
    chromium = shutil.which("chromium")
    profile = tmp / f"chromium-{time.time_ns()}"
    proc = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=30000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    dom = re.sub(r"<(script|style)\b.*?</\1>", " ", proc.stdout, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", dom)))


@pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="headless Chromium is not installed (Debian package 'chromium'; .ci/system_packages.sh)",
)
def test_mlflow_ui_in_headless_chromium(grid, tmp_path):
    url, o = grid
    exp = api(url, "GET", "experiments/get-by-name", params={"experiment_name": EXPERIMENT})["experiment"]
    runs_page = page_text(f"{url}/#/experiments/{exp['experiment_id']}/runs", tmp_path)
    assert EXPERIMENT in runs_page
    parent = api(url, "GET", "runs/get", params={"run_id": o.parent_run_id})["run"]["info"]["run_name"]
    assert parent in runs_page  # the grid's parent run, its 6 cells nested below it
    assert "7 matching runs" in runs_page
    child = o.cells[o.cells["algorithm"] == "onlinebmr"].iloc[0]
    run_page = page_text(f"{url}/#/experiments/{exp['experiment_id']}/runs/{child['run_id']}", tmp_path)
    name = api(url, "GET", "runs/get", params={"run_id": child["run_id"]})["run"]["info"]["run_name"]
    assert name in run_page and parent in run_page  # the run and its parent
    for text in ("rank_loss", "gamma", "num_learners", str(child["cell_id"])):
        assert text in run_page
