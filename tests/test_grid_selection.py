"""The grid's cross-validation stage end to end (backend=serial, MLflow on SQLite): only the chosen setting's
cells run, the choice is the one a direct computation makes, it is recorded, and a killed stage resumes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from olb.data import load_dataset
from olb.grid import compose, run_grid
from olb.grid.planning.expand import plan_grid
from olb.grid.messages import CVResult
from olb.grid.planning.plan import GridConfigError
from olb.grid.selection import cv_scores, select
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
        folds = cv_scores("falt_kernel", params, data, tuple(METRICS_), 3, 0).folds
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


def _cv_runs(client: MlflowClient, experiment: str = "olb/cv") -> list:
    exp = client.get_experiment_by_name(experiment)
    return [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("olb.kind") == "cv"]


def _parent_metrics(outcome) -> dict:
    return MlflowClient(outcome.tracking_uri).get_run(outcome.parent_run_id).data.metrics


def test_each_task_is_a_child_run_and_a_rerun_resumes_them_bit_for_bit(first):
    tmp, o = first
    client = MlflowClient(o.tracking_uri)
    runs = _cv_runs(client)
    assert len(runs) == 2 and {r.data.tags["mlflow.parentRunId"] for r in runs} == {o.parent_run_id}
    for run in runs:
        assert run.data.params["folds"] == "3" and run.data.tags["olb.data_fingerprint"]
        assert {f"fold/{f}/{m}" for f in (1, 2, 3) for m in METRICS_} <= set(run.data.metrics)
    again = run_grid(grid(tmp), tmp / "out2")
    assert again.n_run == 0 and again.n_resumed == 2
    assert _parent_metrics(again)["cv_resumed"] == 2 and _parent_metrics(again)["cv_run"] == 0
    tables = []
    for outcome in (o, again):
        [choice] = [
            r
            for r in client.search_runs([runs[0].info.experiment_id])
            if r.data.tags.get("olb.kind") == "selection" and r.data.tags["mlflow.parentRunId"] == outcome.parent_run_id
        ]
        tables.append((Path(client.download_artifacts(choice.info.run_id, "cv_folds.csv", str(tmp))).read_text()))
    assert tables[0] == tables[1]  # the resumed folds are the computed ones, to the last digit


def test_a_killed_stage_recomputes_only_the_missing_tasks(first):
    tmp, o = first
    client = MlflowClient(o.tracking_uri)
    killed = _cv_runs(client)[0]
    client.update_run(killed.info.run_id, status="RUNNING")  # as a driver killed while logging it leaves it
    third = run_grid(grid(tmp), tmp / "out3")
    assert third.exit_code == 0 and third.n_run == 0
    assert _parent_metrics(third)["cv_run"] == 1 and _parent_metrics(third)["cv_resumed"] == 1
    [rerun] = [r for r in _cv_runs(client) if r.data.tags["mlflow.parentRunId"] == third.parent_run_id]
    assert rerun.data.tags["olb.cv_task_id"] == killed.data.tags["olb.cv_task_id"]


def _legacy_store(cfg, path: Path) -> list[str]:
    """A JSON-lines store as earlier versions wrote it (one ``execute_cv`` payload per line), of the grid's tasks
    and one of another grid; the ids of the grid's tasks."""
    from olb.grid.driver.crossval import _candidates, cv_task, selected_entries
    from olb.grid.driver.stages import prepare
    from olb.grid.running.worker import execute_cv

    plan, data = prepare(cfg)
    selected = selected_entries(plan)
    lines, ids = [], []
    for (entry, dataset), cells in _candidates(plan, selected).items():
        for cell in cells:
            task = cv_task(cell, dataset, data.sources[dataset].fingerprint, selected[entry])
            result = execute_cv(task)
            assert isinstance(result, CVResult), result
            record = {"cell_id": task.task_id, "kind": "cv", "status": "FINISHED", "folds": result.folds}
            lines.append(json.dumps({**record, "cpu_s": result.cpu_s, "wall_s": result.wall_s}))
            ids.append(task.task_id)
    other = {**json.loads(lines[0]), "cell_id": "0123456789abcdef"}
    path.write_text("\n".join([*lines, json.dumps(other), lines[0][:20]]))  # the last line cut by a kill
    return ids


def test_a_json_lines_store_of_an_earlier_version_is_moved_into_the_tracker(tmp_path, caplog):
    store = tmp_path / "cv.jsonl"
    ids = _legacy_store(grid(tmp_path), store)
    with caplog.at_level("WARNING", logger="olb.grid"):
        o = run_grid(grid(tmp_path), tmp_path / "out")
    assert o.exit_code == 0 and _parent_metrics(o)["cv_resumed"] == 2 and _parent_metrics(o)["cv_run"] == 0
    assert not store.exists() and (tmp_path / "cv.jsonl.migrated").exists()
    assert "3 cross-validation task(s) of" in caplog.text and "moved into the tracking store" in caplog.text
    runs = {r.data.tags["olb.cv_task_id"]: r for r in _cv_runs(MlflowClient(o.tracking_uri))}
    assert set(runs) == {*ids, "0123456789abcdef"}
    assert runs[ids[0]].data.params["algorithm"] == "falt_kernel" and "olb.data_fingerprint" in runs[ids[0]].data.tags
    assert runs["0123456789abcdef"].data.params == {"task_id": "0123456789abcdef"}  # known by its id only
    again = run_grid(grid(tmp_path), tmp_path / "out2")  # the store is read once
    assert _parent_metrics(again)["cv_resumed"] == 2 and len(_cv_runs(MlflowClient(o.tracking_uri))) == 3


def test_tracking_off_resumes_no_task_and_leaves_a_json_lines_store_alone(tmp_path, caplog):
    store = tmp_path / "cv.jsonl"
    _legacy_store(grid(tmp_path), store)
    before = store.read_text()
    with caplog.at_level("INFO", logger="olb.grid"):
        o = run_grid(grid(tmp_path, "tracking=off", "seeds=1"), tmp_path / "out")
    assert o.exit_code == 0 and o.tracking_uri is None
    assert "cross-validation: 2 task(s), 2 run, 0 resumed" in caplog.text
    assert "is not read: tracking=off resumes nothing" in caplog.text and store.read_text() == before


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
            "imports=[olb.ops.testing]",
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
