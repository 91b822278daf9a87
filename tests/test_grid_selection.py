"""The grid's cross-validation stage end to end (backend=serial, MLflow on SQLite): only the chosen setting's
cells run, the choice is the one a direct computation makes, it is recorded, and a killed stage resumes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from olb.data import load_dataset
from olb.grid import compose, run_grid
from olb.grid.expand import plan_grid
from olb.grid.plan import GridConfigError
from olb.grid.selection import cv_task_result, select
from olb.metrics import METRICS

METRICS_ = ["f1", "hamming_loss", "ranking_loss"]
GRID = [
    "backend=serial",
    "name=cv",
    "algorithms=[falt_kernel]",
    "datasets=[emotions]",
    "seeds=2",
    "protocol=train_frozen",
    f"metrics=[{','.join(METRICS_)}]",
    "+algorithm.falt_kernel.params.eta=[0.05,1.0]",
    "+algorithm.falt_kernel.params.repeats=2",
    "+algorithm.falt_kernel.select={folds: 3, rule: majority}",
    f"table.metrics=[{','.join(METRICS_)}]",
]


def grid(tmp_path, *extra):
    return compose(
        [*GRID, f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}", f"selection_store={tmp_path / 'cv.jsonl'}", *extra]
    )


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cv")
    return tmp, run_grid(grid(tmp), tmp / "out1")


def test_only_the_chosen_setting_runs_and_it_is_the_direct_computations_choice(first, data_dir):
    tmp, o = first
    assert o.exit_code == 0 and o.n_run == 2
    cells = pd.read_csv(o.files["cells"])
    assert cells["eta"].nunique() == 1
    data = load_dataset("emotions")
    means = {}
    for eta in (0.05, 1.0):
        params = {"eta": eta, "repeats": 2, "sigma": 1.0, "kernel": "rbf", "feature_scaling": "minmax"}
        folds = cv_task_result("falt_kernel", params, data, tuple(METRICS_), 3, 0)["folds"]
        means[f"eta={eta}"] = {m: float(np.mean([f[m] for f in folds])) for m in METRICS_}
    expected = select(means, {m: METRICS[m].lower_is_better for m in METRICS_}, "majority").chosen
    assert f"eta={cells['eta'].iloc[0]}" == expected
    md = o.files["table_md"].read_text()
    assert "Settings chosen by cross-validation" in md and "better on more of the 3 metrics" in md
    assert f"(eta={cells['eta'].iloc[0]})" in md.split("## All values")[0]  # the chosen setting beside the row


def test_the_choice_is_recorded_in_mlflow_once(first):
    tmp, o = first
    client = MlflowClient(o.tracking_uri)
    exp = client.get_experiment_by_name("olb/cv")
    runs = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("olb.kind") == "selection"]
    assert len(runs) == 1 and runs[0].data.params["rule"] == "majority" and "chosen.eta" in runs[0].data.params
    artifacts = [a.path for a in client.list_artifacts(runs[0].info.run_id)]
    assert artifacts == ["cv_folds.csv"]


def test_a_rerun_resumes_and_a_killed_stage_recomputes_only_the_missing_tasks(first):
    tmp, o = first
    again = run_grid(grid(tmp), tmp / "out2")
    assert again.n_run == 0 and again.n_resumed == 2
    store = tmp / "cv.jsonl"
    lines = store.read_text().splitlines()
    assert len(lines) == 2
    store.write_text(lines[0] + "\n" + lines[1][:20])  # the second task's line cut by a kill
    third = run_grid(grid(tmp), tmp / "out3")
    assert third.exit_code == 0 and third.n_run == 0
    after = store.read_text().splitlines()
    assert len(after) == 3 and json.loads(after[2])["cell_id"] == json.loads(lines[1])["cell_id"]  # only that one


def test_bad_selection_settings_are_refused_before_work(tmp_path):
    cfg = compose(
        [*GRID[:-2], "+algorithm.falt_kernel.select={folds: 1, rule: vote, extra: 2}", "tracking=off", GRID[-1]]
    )
    with pytest.raises(GridConfigError, match="select: expected a mapping with keys folds, rule, seed, metrics"):
        plan_grid(cfg)
    cfg = compose([*GRID[:-2], "+algorithm.falt_kernel.select={folds: 1, rule: 'best:auc'}", "tracking=off", GRID[-1]])
    with pytest.raises(GridConfigError, match=r"(?s)select.folds=1; allowed: an integer >= 2.*select.rule='best:auc'"):
        plan_grid(cfg)


def test_a_data_set_without_data_stays_in_the_table_as_unavailable(tmp_path):
    outcome = run_grid(
        grid(tmp_path, "datasets=[emotions,mediamill]", "allow_unavailable=true", "seeds=1"), tmp_path / "out"
    )
    table = pd.read_csv(outcome.files["table_csv"])
    assert outcome.n_unavailable == 1 and "mediamill" in set(table["dataset"])


def test_a_row_whose_every_candidate_failed_is_reported_failed_not_dropped(tmp_path):
    cfg = compose(
        [
            "backend=serial",
            "name=cv_failing",
            "imports=[olb.grid.testing]",
            "algorithms=[_grid_stub]",
            "datasets=[emotions]",
            "seeds=1",
            "protocol=train_frozen",
            "metrics=[rank_loss]",
            "+algorithm._grid_stub.params.fail_at=[3,5]",
            "+algorithm._grid_stub.select={folds: 2}",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"selection_store={tmp_path / 'cv.jsonl'}",
        ]
    )
    outcome = run_grid(cfg, tmp_path / "out")
    assert outcome.exit_code == 1 and outcome.n_failed == 1 and outcome.n_run == 0
    table = pd.read_csv(outcome.files["table_csv"], keep_default_na=False)
    row = table[(table["dataset"] == "emotions") & (table["metric"] == "rank_loss")]
    assert len(row) == 1 and row.iloc[0]["note"] == "1 failed"
    cells = pd.read_csv(outcome.files["cells"])
    assert cells["error"].str.contains("all 2 candidate settings failed").all()
