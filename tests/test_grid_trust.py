"""Issue 11, "how we will know": every result traceable to its data, every decidable mistake refused before
work starts. Real planner, real data files, a real MLflow store (SQLite in tmp_path), serial backend."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from olb.data import dataset_spec
from olb.data.opening import EMBEDDED_DIR
from olb.grid import GridConfigError, compose, run_grid
from olb.grid.messages import EXIT_INTERRUPTED, EXIT_NOTHING_COMPUTED
from olb.grid.running.backends import SerialBackend
from olb.grid.datacheck import FINGERPRINT_TAG
from olb.ops.testing import GridStub
from olb.learners.base import Param
from olb.learners.registry import ALGORITHMS

ROOT = Path(__file__).resolve().parents[1]


def emotions_copy(root: Path) -> Path:
    """A data dir holding a copy of the registered emotions files."""
    for file in dataset_spec("emotions").files.values():
        (root / file.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(EMBEDDED_DIR / Path(file.path).name, root / file.path)
    return root


def flip_last_label(train: Path) -> None:
    """Flip the last label column (the last attribute) of every data row."""
    lines = train.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lower().startswith("@data")) + 1
    for i in range(start, len(lines)):
        if lines[i].strip():
            head, _, last = lines[i].rpartition(",")
            lines[i] = f"{head},{1 - int(last)}"
    train.write_text("\n".join(lines) + "\n")


def grid(tmp_path: Path, *extra: str):
    return compose(
        [
            "backend=serial",
            "algorithms=[adaolmr]",
            "datasets=[emotions]",
            "seeds=1",
            "num_learners=2",
            "plots=false",
            "name=trust",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            *extra,
        ]
    )


def cell_runs(tmp_path: Path) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("olb/trust")
    runs = client.search_runs([experiment.experiment_id], max_results=1000) if experiment else []
    return [r for r in runs if r.data.tags.get("olb.kind") == "cell"]


def test_changed_data_is_refused_then_rerun_and_restored_data_resumes(tmp_path):
    data = emotions_copy(tmp_path / "data")
    train = data / dataset_spec("emotions").files["train"].path
    original = train.read_bytes()
    first = run_grid(grid(tmp_path, f"data_dir={data}"), tmp_path / "out1")
    assert (first.exit_code, first.n_run) == (0, 1)
    (run,) = cell_runs(tmp_path)
    fingerprint = run.data.tags[FINGERPRINT_TAG]
    assert run.data.tags["olb.data_files"].startswith(f"train={train}") and run.data.tags["olb.code_version"]
    assert pd.read_csv(first.files["cells"])["data_fingerprint"].tolist() == [fingerprint]

    flip_last_label(train)
    with pytest.raises(GridConfigError) as refused:
        run_grid(grid(tmp_path, f"data_dir={data}"), tmp_path / "out2")
    expected = dataset_spec("emotions").files["train"].sha256
    assert f"{train}: sha256 " in str(refused.value) and f"expected {expected}" in str(refused.value)
    assert "verify_checksums=false" in str(refused.value)
    assert not (tmp_path / "out2").exists() and len(cell_runs(tmp_path)) == 1

    edited = run_grid(grid(tmp_path, f"data_dir={data}", "verify_checksums=false"), tmp_path / "out3")
    assert (edited.exit_code, edited.n_run, edited.n_resumed) == (0, 1, 0)
    new = [r for r in cell_runs(tmp_path) if r.info.run_id != run.info.run_id]
    assert len(new) == 1 and new[0].data.tags[FINGERPRINT_TAG] != fingerprint
    assert new[0].data.tags["olb.cell_id"] == run.data.tags["olb.cell_id"]  # same cell, other data

    train.write_bytes(original)
    restored = run_grid(grid(tmp_path, f"data_dir={data}"), tmp_path / "out4")
    assert (restored.n_run, restored.n_resumed) == (0, 1)
    assert restored.cells["run_id"].tolist() == [run.info.run_id]


def test_runs_recorded_before_fingerprints_resume_only_on_verified_data(tmp_path):
    from mlflow.tracking import MlflowClient

    first = run_grid(grid(tmp_path), tmp_path / "out1")
    (run,) = cell_runs(tmp_path)
    MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").delete_tag(run.info.run_id, FINGERPRINT_TAG)
    assert first.n_run == 1 and FINGERPRINT_TAG not in cell_runs(tmp_path)[0].data.tags
    verified = run_grid(grid(tmp_path), tmp_path / "out2")
    assert (verified.n_run, verified.n_resumed) == (0, 1)  # today's files are the registered ones
    unverified = run_grid(grid(tmp_path, "verify_checksums=false"), tmp_path / "out3")
    assert (unverified.n_run, unverified.n_resumed) == (1, 0)  # nothing says which data the old run read


class RuledStub(GridStub):
    """A learner with rules across its parameters and against the data's shape."""

    name = "_ruled_stub"
    k = Param(int, 2, low=1)
    rho = Param(float, 0.1, low=0.0, high=1.0)

    @classmethod
    def check_params(cls, params, shape):
        problems = []
        if params["k"] >= shape.n_labels:
            problems.append(f"k={params['k']} must be smaller than the number of labels ({shape.n_labels})")
        if params["rho"] > 0.2 and params["k"] == 2:
            problems.append(f"rho={params['rho']} with k=2: allowed rho <= 0.2")
        return problems


@pytest.fixture
def ruled_stub():
    ALGORITHMS[RuledStub.name] = RuledStub
    yield RuledStub.name
    del ALGORITHMS[RuledStub.name]


@pytest.fixture
def own_registry(tmp_path, monkeypatch):
    """The configs (a copy: $OLB_CONF_DIR) plus two data sets of one's own: emotions' train file without a
    split, and a broken ARFF."""
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    conf = tmp_path / "conf" / "dataset"
    data = emotions_copy(tmp_path / "data")
    entry = {
        "name": "nosplit",
        "task": "multilabel",
        "format": "mulan_arff",
        "files": {"data": {"path": "emotions/emotions-train.arff"}, "labels": {"path": "emotions/emotions.xml"}},
        "shape": {"n_examples": 391, "n_train": None, "n_features": 72, "n_labels": 6},
    }
    (conf / "nosplit.yaml").write_text(yaml.safe_dump(entry))
    broken = data / "broken" / "broken.arff"
    broken.parent.mkdir()
    text = (data / "emotions" / "emotions-train.arff").read_text().splitlines()
    broken.write_text("\n".join(text[:-3] + ["0.1,0.2,oops"] + text[-2:]) + "\n")
    entry = {
        **entry,
        "name": "broken",
        "files": {"data": {"path": "broken/broken.arff"}, "labels": {"path": "emotions/emotions.xml"}},
    }
    (conf / "broken.yaml").write_text(yaml.safe_dump(entry))
    monkeypatch.setenv("OLB_CONF_DIR", str(tmp_path / "conf"))
    return data


def test_every_decidable_mistake_is_refused_together_before_any_work(tmp_path, ruled_stub, own_registry):
    cfg = compose(
        [
            "backend=serial",
            f"algorithms=[adaolmr,{ruled_stub}]",
            "datasets=[nosplit,broken,emotions]",
            "protocol=train_test",
            "metrics=[hamming_loss]",
            "k=[2,6]",
            "rho=0.3",
            f"data_dir={own_registry}",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
        ]
    )
    start = time.monotonic()
    with pytest.raises(GridConfigError) as refused:
        run_grid(cfg, tmp_path / "out")
    assert time.monotonic() - start < 30
    message = str(refused.value)
    for culprit in [
        "protocol 'train_test' needs a train/test split, and data set 'nosplit' has none",
        "declare one in nosplit.yaml",
        "protocol=prequential_last20",
        "metric 'hamming_loss' needs the learner's 'labels' output, and adaolmr gives only 'scores'",
        "k=6 must be smaller than the number of labels (6)",
        "rho=0.3 with k=2: allowed rho <= 0.2",
        "data set 'broken'",
        "broken.arff",
    ]:
        assert culprit in message, culprit
    assert message.startswith(f"{message.count(chr(10) + '  - ')} problems, nothing was run")
    assert not (tmp_path / "out").exists() and not (tmp_path / "mlflow.db").exists()


@pytest.mark.e2e
def test_a_refused_command_line_run_leaves_no_folder(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OLB_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["metrics=[hamming_loss]"], ["num_lerners=2"]):
        proc = subprocess.run(
            [sys.executable, "-m", "olb.grid", "tracking=sqlite", "backend=serial", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 2, proc.stderr
        assert "hamming_loss" in proc.stderr or "did you mean 'num_learners'" in proc.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"], proc.stderr


def test_a_grid_that_computed_nothing_exits_non_zero(tmp_path):
    outcome = run_grid(grid(tmp_path, "datasets=[image]", "allow_unavailable=true"), tmp_path / "out")
    assert outcome.exit_code == EXIT_NOTHING_COMPUTED and outcome.n_unavailable == 1
    assert "unavailable" in outcome.files["table_md"].read_text()


def test_an_interrupted_grid_marks_partial_figures(tmp_path, monkeypatch):
    serial_run = SerialBackend.run

    def interrupted_after_one(self, tasks):  # as if Ctrl-C arrived once the first cell finished
        yield from serial_run(self, tasks[:1])
        raise KeyboardInterrupt

    monkeypatch.setattr(SerialBackend, "run", interrupted_after_one)
    cfg = grid(tmp_path, "algorithms=[onlinebmr]", "seeds=2", "gamma=[0.1,0.01]", "tracking=off")
    outcome = run_grid(cfg, tmp_path / "out")
    assert outcome.exit_code == EXIT_INTERRUPTED and outcome.n_run == 1
    row = outcome.table[outcome.table["metric"] == "rank_loss"].iloc[0]
    assert bool(row["partial"]) and (row["n_seeds"], row["n_planned"]) == (1, 2)
    assert (row["n_values"], row["n_values_planned"]) == (1, 2)
    assert "partial: 1/2 seeds, 1/2 gamma" in outcome.files["table_md"].read_text()
    assert bool(pd.read_csv(outcome.files["table_csv"])["partial"].iloc[0])


def test_paper_values_only_beside_the_papers_settings(tmp_path):
    from olb.grid import plan_grid
    from olb.grid.reporting.comparable import differences

    overrides = ["backend=serial", "seeds=1", "tracking=off", "plots=false", "num_learners=2", "gamma=[0.1]"]
    outcome = run_grid(compose(overrides), tmp_path / "out", overrides=overrides)
    table = outcome.table[outcome.table["metric"] == "rank_loss"]
    assert table["paper"].isna().all() and table["note"].str.contains("not comparable").all()
    md = outcome.files["table_md"].read_text()
    assert "10 trees" not in md.splitlines()[0]  # the experiment's description no longer holds
    assert "Ada.OLMR (adaolmr, train_test, num_learners=2" in md

    def differing(*overrides):
        cfg = compose(["+experiment=table3", "datasets=[emotions]", *overrides])
        return {
            key[0] for key, found in differences(plan_grid(cfg), cfg.reference, cfg.verify_checksums).items() if found
        }

    assert differing() == set()
    assert differing("algorithm.adaolmr.params.num_learners=2") == {"adaolmr"}
    assert differing("gamma=[0.5]") == {"onlinebmr"}
    assert differing("backend=serial", "tracking=off") == set()
    assert differing("verify_checksums=false") == {"adaolmr", "onlinebmr"}
