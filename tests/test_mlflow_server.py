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


class MlflowServer:
    """``mlflow server`` on 127.0.0.1 with a SQLite store in ``tmp``, in a process group of its own (stopped by
    that group's id); ``start`` again after ``stop`` serves the same store on the same port."""

    def __init__(self, tmp: Path, port: int | None = None):
        self.tmp, self.port = tmp, port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> MlflowServer:
        mlflow_bin = Path(sys.executable).with_name("mlflow")
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no background job runner processes
        with open(self.tmp / "server.log", "a") as log:
            self.proc = subprocess.Popen(
                [
                    str(mlflow_bin),
                    "server",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--workers",
                    "1",
                    "--backend-store-uri",
                    f"sqlite:///{self.tmp / 'server.db'}",
                    "--artifacts-destination",
                    str(self.tmp / "artifacts"),
                ],
                cwd=self.tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.time() + 180
        while True:
            assert self.proc.poll() is None, (self.tmp / "server.log").read_text()[-3000:]
            try:
                if requests.get(f"{self.url}/health", timeout=2).ok:
                    return self
            except requests.RequestException:
                pass
            assert time.time() < deadline, "mlflow server did not start"
            time.sleep(0.5)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """``sig`` to the server's process group, then SIGKILL to whatever of it is left."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # anything of the group still alive
        except ProcessLookupError:
            pass
        self.proc = None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mlflow_server")
    served = MlflowServer(tmp)
    try:
        yield served.start().url, tmp
    finally:
        served.stop()


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
            "tracking.cell_artifacts=true",  # each cell's curve also as files, on request
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
    history = api(url, "GET", "metrics/get-history", params={"run_id": run_id, "metric_key": "curve/train/rank_loss"})
    assert len(history["metrics"]) > 5
    files = api(url, "GET", "artifacts/list", params={"run_id": run_id})["files"]
    assert {f["path"] for f in files} == {"curve.csv", "curve.png"}
    files = api(url, "GET", "artifacts/list", params={"run_id": o.parent_run_id})["files"]
    assert {"cells.csv", "table.csv", "table.md", "config.yaml"} <= {f["path"] for f in files}


def test_cross_validation_tasks_resume_from_the_server_for_every_grid(server):
    url, tmp = server
    grid = [
        "backend=serial",
        "seeds=1",
        "datasets=[emotions]",
        "imports=[olb.ops.testing]",
        "algorithms=[_grid_stub]",
        "protocol=train_frozen",
        "metrics=[rank_loss]",
        "+algorithm._grid_stub.params.delay_s=[0.0,0.001]",
        "+algorithm._grid_stub.select={folds: 2}",
        f"tracking.uri={url}",
        f"selection_store={tmp / 'absent.jsonl'}",
        "plots=false",
    ]
    first = run_grid(compose([*grid, "name=served_cv"]), tmp / "cv1")
    other = run_grid(compose([*grid, "name=served_cv_other"]), tmp / "cv2")  # another experiment, same tasks
    metrics = lambda o: api(url, "GET", "runs/get", params={"run_id": o.parent_run_id})["run"]["data"]["metrics"]  # noqa: E731
    cv = lambda o: {m["key"]: m["value"] for m in metrics(o) if m["key"] in ("cv_run", "cv_resumed")}  # noqa: E731
    assert first.exit_code == other.exit_code == 0
    assert cv(first) == {"cv_run": 2, "cv_resumed": 0} and cv(other) == {"cv_run": 0, "cv_resumed": 2}
    exp = api(url, "GET", "experiments/get-by-name", params={"experiment_name": "olb/served_cv"})["experiment"]
    runs = api(url, "POST", "runs/search", json={"experiment_ids": [exp["experiment_id"]], "max_results": 100})["runs"]
    tags = [{t["key"]: t["value"] for t in r["data"]["tags"]} for r in runs]
    assert sorted(t["mlflow.parentRunId"] for t in tags if t.get("olb.kind") == "cv") == [first.parent_run_id] * 2


def headless_chromium(tmp: Path) -> list[str]:
    """Headless Chromium with a fresh profile in ``tmp``, nothing fetched from outside, up to 30 s of page time."""
    return [
        shutil.which("chromium") or "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / f'chromium-{time.time_ns()}'}",
        "--virtual-time-budget=30000",
    ]


def page_text(url: str, tmp: Path) -> str:
    """The text of ``url`` as headless Chromium renders it (the MLflow UI is a React app)."""
    proc = subprocess.run(
        [*headless_chromium(tmp), "--dump-dom", url],
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


@pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="headless Chromium is not installed (Debian package 'chromium'; .ci/system_packages.sh)",
)
def test_the_printed_address_opens_on_the_runs_with_their_data_sets(grid, tmp_path):
    """The address a grid prints (olb's saved view) shows, without any click, the runs table: every cell's run by
    name and its data set (name and olb's fingerprint as the dataset input's digest), not MLflow's GenAI overview."""
    from olb.grid.recording.ui_view import runs_page

    url, o = grid
    exp = api(url, "GET", "experiments/get-by-name", params={"experiment_name": EXPERIMENT})["experiment"]
    address = f"{url}/{runs_page(exp['experiment_id'])}"
    text = page_text(address, tmp_path)
    for run_id in o.cells["run_id"]:
        run = api(url, "GET", "runs/get", params={"run_id": run_id})["run"]
        (dataset_input,) = run["inputs"]["dataset_inputs"]
        dataset = dataset_input["dataset"]
        assert dataset["name"] == "emotions" and len(dataset["digest"]) == 16
        assert run["info"]["run_name"] in text
    assert f"emotions ({dataset['digest']})" in text or ("emotions" in text and dataset["digest"] in text)
    shot = tmp_path / "runs.png"
    subprocess.run(
        [*headless_chromium(tmp_path), "--window-size=1600,1000", f"--screenshot={shot}", address],
        capture_output=True,
        timeout=180,
    )
    assert shot.stat().st_size > 10_000  # a drawn page, not a blank one
    if os.environ.get("OLB_UI_SCREENSHOT"):  # keep it for a look: OLB_UI_SCREENSHOT=path.png
        shutil.copyfile(shot, os.environ["OLB_UI_SCREENSHOT"])
