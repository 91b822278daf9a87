"""olb.grid end to end in the driver process (backend=serial, MLflow on SQLite): outputs, resume, failure
isolation, unavailable data sets."""

from __future__ import annotations

import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import olb.ops.testing  # noqa: F401 - registers _grid_stub in this process
from olb.grid import compose, run_grid

TINY = ["backend=serial", "seeds=2", "num_learners=2", "algorithm.onlinebmr.params.gamma=[0.1,0.01]"]


def tracked(tmp_path, name, *extra):
    return compose([*TINY, f"name={name}", f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}", *extra])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grid")
    outcome = run_grid(tracked(tmp, "tiny"), tmp / "out1")
    return tmp, outcome


def test_outputs(first_run):
    tmp, o = first_run
    assert o.exit_code == 0 and o.n_run == 6 and o.n_failed == 0
    cells = pd.read_csv(o.files["cells"])
    assert len(cells) == 6 and set(cells["status"]) == {"FINISHED"}
    for col in (
        "cell_id",
        "algorithm",
        "dataset",
        "num_learners",
        "gamma",
        "seed",
        "status",
        "runtime_s",
        "compile_s",
        "rank_loss",
    ):
        assert col in cells.columns
    assert cells["rank_loss"].between(0, 1).all()
    table = pd.read_csv(o.files["table_csv"])
    assert list(table.columns[:8]) == ["dataset", "algorithm", "metric", "mean", "std", "n_seeds", "paper", "diff"]
    bmr = table[(table["algorithm"] == "OnlineBMR") & (table["metric"] == "rank_loss")].iloc[0]
    # a reduced grid: the paper's value only in the note, with what differs from the paper's settings
    assert math.isnan(bmr["paper"]) and bmr["n_seeds"] == 2
    assert bmr["note"].startswith("not comparable: paper (100 trees, 10 seeds) 0.1654; here 2 seed(s) (paper: 10)")
    # "best of gamma": the gamma with the best mean over seeds
    means = cells[cells["algorithm"] == "onlinebmr"].groupby("gamma")["rank_loss"].mean()
    assert bmr["mean"] == pytest.approx(means.min())
    assert bmr["selected"] == f"gamma={means.idxmin()}"
    md = o.files["table_md"].read_text()
    assert "| emotions |" in md and "[0.1600]" not in md and "paper (100 trees, 10 seeds) 0.1600" in md
    plots = sorted(p.name for p in (o.output_dir / "plots").iterdir())
    assert plots == ["curves_emotions.png", "onlinebmr_rank_loss_vs_gamma.png"]


def test_mlflow_records(first_run):
    from mlflow.tracking import MlflowClient

    tmp, o = first_run
    client = MlflowClient(o.tracking_uri)
    exp = client.get_experiment_by_name("olb/tiny")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    children = [r for r in runs if r.data.tags.get("olb.kind") == "cell"]
    parents = [r for r in runs if r.data.tags.get("olb.kind") == "grid"]
    assert len(children) == 6 and len(parents) == 1
    assert all(r.data.tags["mlflow.parentRunId"] == o.parent_run_id for r in children)
    assert parents[0].info.status == "FINISHED"
    run = next(r for r in children if r.data.params["algorithm"] == "onlinebmr")
    for key in ("algorithm", "dataset", "seed", "num_learners", "gamma", "margin", "loops", "protocol", "cell_id"):
        assert key in run.data.params
    for key in ("rank_loss", "runtime_s", "cpu_s", "peak_rss_mb", "phase/train/wall_s", "phase/test/cpu_s"):
        assert key in run.data.metrics
    # one curve per phase: training's, then the test split's, whose last value is the cell's metric
    train, test = (client.get_metric_history(run.info.run_id, f"curve/{p}/rank_loss") for p in ("train", "test"))
    assert len(train) > 5 and test and max(m.step for m in train) < min(m.step for m in test)
    assert test[-1].value == pytest.approx(run.data.metrics["rank_loss"], rel=1e-12)
    assert client.list_artifacts(run.info.run_id) == []  # the curve is the metric history; no files by default
    assert {a.path for a in client.list_artifacts(o.parent_run_id)} >= {
        "cells.csv",
        "table.csv",
        "table.md",
        "config.yaml",
        "plots",
    }
    assert run.data.tags["olb.code_version"].startswith("0.")
    # artifacts beside the SQLite file, not in whatever directory the grid was started from
    assert exp.artifact_location == (tmp / "mlruns" / "olb" / "tiny").as_uri()
    assert run.info.artifact_uri == f"{exp.artifact_location}/{run.info.run_id}/artifacts"


def test_rerun_resumes_everything_and_gives_the_same_table(first_run):
    tmp, o1 = first_run
    o2 = run_grid(tracked(tmp, "tiny"), tmp / "out2")
    assert o2.exit_code == 0 and o2.n_run == 0 and o2.n_resumed == 6
    cols = ["dataset", "algorithm", "metric", "n_seeds", "paper", "selected"]
    loss1 = o1.table[o1.table["metric"] == "rank_loss"]
    loss2 = o2.table[o2.table["metric"] == "rank_loss"]
    pd.testing.assert_frame_equal(loss1[cols].reset_index(drop=True), loss2[cols].reset_index(drop=True))
    assert loss1["mean"].tolist() == loss2["mean"].tolist() and loss1["std"].tolist() == loss2["std"].tolist()
    assert set(o2.cells["source"]) == {"resumed"}
    assert set(o2.cells["host"]) == set(o1.cells["host"]) == {socket.gethostname()}  # where it ran, kept on resume
    assert (o2.output_dir / "plots" / "curves_emotions.png").exists()  # curves come back from the store


def test_partial_resume_and_forced_fresh_run(first_run):
    tmp, o1 = first_run
    # one more seed: only the new cells run
    o3 = run_grid(tracked(tmp, "tiny", "seeds=3"), tmp / "out3")
    assert o3.n_resumed == 6 and o3.n_run == 3
    same = o3.cells.merge(o1.cells, on="cell_id", suffixes=("", "_1"))
    assert len(same) == 6 and (same["rank_loss"] == same["rank_loss_1"]).all()
    o4 = run_grid(tracked(tmp, "tiny", "resume=false", "algorithms=[adaolmr]"), tmp / "out4")
    assert o4.n_resumed == 0 and o4.n_run == 2


def test_failure_isolation(first_run, tmp_path):
    store = first_run[0] / "mlflow.db"  # the module's store (a new SQLite store costs seconds of migrations)
    cfg = compose(
        [
            "backend=serial",
            "seeds=2",
            "name=failing",
            f"tracking.uri=sqlite:///{store}",
            "imports=[olb.ops.testing]",
            "algorithms=[_grid_stub,adaolmr]",
            "num_learners=2",
            "+algorithm._grid_stub.params.fail_at=[-1,5]",
        ]
    )
    o = run_grid(cfg, tmp_path / "out")
    assert o.exit_code == 1 and o.n_failed == 2 and o.n_run == 6
    cells = pd.read_csv(o.files["cells"])
    failed = cells[cells["status"] == "FAILED"]
    assert len(failed) == 2 and set(failed["fail_at"]) == {5}
    assert failed["error"].str.contains("injected failure at update 5").all()
    assert (cells[cells["status"] == "FINISHED"]["rank_loss"].notna()).sum() == 4
    table = pd.read_csv(o.files["table_csv"], keep_default_na=False)
    assert set(table[table["algorithm"] == "_grid_stub (fail_at=5)"]["note"]) == {"2 failed"}
    from mlflow.tracking import MlflowClient

    client = MlflowClient(o.tracking_uri)
    run_id = failed.iloc[0]["run_id"]
    run = client.get_run(run_id)
    assert run.info.status == "FAILED" and "RuntimeError" in run.data.tags["olb.error"]
    text = client.download_artifacts(run_id, "traceback.txt", str(tmp_path))
    assert "Traceback" in open(text).read()
    assert client.get_run(o.parent_run_id).info.status == "FAILED"
    # a rerun retries only the failed cells (they fail again)
    again = run_grid(cfg, tmp_path / "out2")
    assert again.n_resumed == 4 and again.n_run == 2 and again.exit_code == 1


def test_allow_unavailable_marks_cells(tmp_path, monkeypatch):
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "cache"))
    overrides = [
        "backend=serial",
        "seeds=1",
        "num_learners=2",
        "algorithms=[adaolmr]",
        "tracking=off",
        "datasets=[emotions,mediamill]",
        "allow_unavailable=true",
    ]
    o = run_grid(compose(overrides), tmp_path / "out", overrides)
    assert o.exit_code == 0 and o.n_unavailable == 1 and o.n_run == 1
    assert dict(zip(o.cells["dataset"], o.cells["status"])) == {"emotions": "FINISHED", "mediamill": "UNAVAILABLE"}
    row = o.table[(o.table["dataset"] == "mediamill") & (o.table["metric"] == "rank_loss")].iloc[0]
    assert row["note"].startswith("unavailable; not comparable: paper (100 trees, 10 seeds) 0.0508")
    assert math.isnan(row["mean"]) and math.isnan(row["paper"])
    assert "| mediamill | unavailable |" in o.files["table_md"].read_text()


@pytest.mark.e2e
def test_concurrent_grids_share_a_fresh_sqlite_store(tmp_path):
    """Two drivers started together on a store that does not exist yet (schema creation, one experiment)."""
    import subprocess
    import sys

    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "olb.grid",
                "backend=serial",
                "imports=[olb.ops.testing]",
                "algorithms=[_grid_stub]",
                f"seeds={n}",
                "name=shared",
                f"tracking.uri={uri}",
                "plots=false",
                f"hydra.run.dir={tmp_path / f'out{i}'}",
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i, n in enumerate((6, 8))
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("olb/shared")
    runs = client.search_runs([exp.experiment_id], "tags.`olb.kind` = 'cell'", max_results=100)
    assert all(r.info.status == "FINISHED" for r in runs)
    # seeds 0..5 may have run twice (both drivers started before either finished them), 6..7 once
    assert {int(r.data.params["seed"]) for r in runs} == set(range(8))
    cells = pd.read_csv(tmp_path / "out1" / "cells.csv")
    assert len(cells) == 8 and (cells["status"] == "FINISHED").all()


def test_progress_lines_count_in_their_unit():
    import io

    from olb.grid.running.progress import Progress

    progress = Progress(3, skipped=1, stream=io.StringIO(), unit="task")
    progress.update("FINISHED", running=1)
    assert progress.line().startswith("[olb.grid] 2/3 tasks: done=2 (resumed 1) failed=0 running=1")
    progress.close()


def test_progress_says_a_lost_node_at_once_and_counts_it():
    import io

    from olb.grid.running.progress import Progress

    out = io.StringIO()
    progress = Progress(4, stream=out)
    progress.node_lost("10.200.0.2", 2, running=1)
    assert out.getvalue().splitlines()[-1] == "[olb.grid] node 10.200.0.2 lost: 2 cells resubmitted"
    progress.node_lost("10.200.0.3", 1, running=1, waiting=3)
    assert out.getvalue().splitlines()[-1] == "[olb.grid] node 10.200.0.3 lost: 1 cell resubmitted with 3 waiting cells"
    assert progress.line().endswith(" nodes_lost=2") and "running=1" in progress.line()
    progress.close()


def test_progress_speaks_at_once_and_its_eta_leaves_compiling_out(monkeypatch):
    import io

    from olb.grid.running import progress as progress_module
    from olb.grid.running.progress import Progress

    now = [100.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: now[0])
    out = io.StringIO()
    progress = Progress(11, stream=out)
    assert out.getvalue().startswith("[olb.grid] 0/11 cells: done=0")  # at the start, not after every_s
    now[0] += 31.0  # the first cell: 30 s of compiling, 1 s of work
    progress.update("FINISHED", running=0, compile_s=30.0)
    assert out.getvalue().count("\n") == 2  # a line after the first result
    assert progress.eta() == pytest.approx(10.0)  # 10 cells of 1 s, not 10 x 31 s
    progress.close()


_PROGRESS_SCRIPT = """
import sys
from olb.grid.running.progress import Progress
progress = Progress(3, stream=sys.stderr)
for _ in range(3):
    progress.update("FINISHED", running=0)
progress.close()
"""


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("script") is None or shutil.which("stty") is None, reason="needs script and stty")
def test_the_progress_bar_draws_on_a_terminal_without_a_size(tmp_path):
    """`script` gives the grid a pseudo-terminal; one of 0 columns and 0 lines (no size, as under a batch job)
    showed no bar, and no progress line either, for as long as the cells ran."""
    (tmp_path / "progress.py").write_text(_PROGRESS_SCRIPT)
    command = f"stty cols 0 rows 0; {shlex.quote(sys.executable)} {tmp_path / 'progress.py'}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        ["script", "-qfec", command, str(tmp_path / "typescript")], env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done
    screen = (tmp_path / "typescript").read_text(errors="replace")
    assert "3/3" in screen and "cells: 100%" in screen, screen


def test_stopwatch_times_compiling_apart():
    """numba's first call of a function compiles it (under numba's compiler lock): compile_s, not wall_s/cpu_s."""
    from numba import njit

    from olb.protocol import Stopwatch

    @njit
    def fresh(x):
        return x * 2.0 + 1.0

    with Stopwatch() as first:
        fresh(1.0)
    with Stopwatch() as second:
        fresh(2.0)
    assert first.compile_s > 0.01 and first.wall_s < first.compile_s / 5 and first.cpu_s < first.compile_s / 5
    assert second.compile_s == 0.0
