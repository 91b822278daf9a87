"""The MLHAT table's river learners (olb/learners/river_mlhat.py): the table's settings reach river's objects, a seed
fixes the result, the first example is not predicted; the table's published figures (conf/reference/mlhat_tables.csv)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import olb
from olb.data import load_dataset
from olb.learners.river_mlhat import LEARNERS
from olb.learners.registry import get_algorithm

SPEC_COLUMNS = ("HT", "EFDT", "HAT", "ARF", "AMF", "MT", "SGT", "KNN", "NB", "AMR", "ABALR", "ABOLR", "iSOUPT")
PUBLISHED_ONLY = ("MLHAT", "MLHT", "MLHTPS", "MLBELS")
STREAMS = ("Flags", "Emotions", "Birds", "Yeast", "Scene", "Medical", "Slashdot", "Enron", "Tmc", "Corel5k", "Bibtex")


def model(name: str, n_labels: int = 3):
    return get_algorithm(name)(5, n_labels, seed=0).models[0]


def test_the_hoeffding_trees_get_the_tables_settings():
    for name in ("mlhat_ht", "mlhat_efdt", "mlhat_hat"):
        tree = model(name)
        assert (tree.grace_period, tree.delta, tree.tau) == (200, 1e-5, 0.05)
        assert (tree._split_criterion, tree.leaf_prediction, tree.nb_threshold) == ("info_gain", "nba", 0)
        assert type(tree.splitter).__name__ == "GaussianSplitter"
    assert model("mlhat_efdt").min_samples_reevaluate == 20
    hat = model("mlhat_hat")
    assert (hat.drift_window_threshold, hat.switch_significance, type(hat.drift_detector).__name__) == (
        50,
        0.05,
        "ADWIN",
    )


def test_the_ensembles_and_the_others_get_the_tables_settings():
    arf = model("mlhat_arf")
    assert (arf.n_models, arf.max_features, arf.lambda_value, arf.grace_period, arf.delta, arf.tau) == (
        10,
        "sqrt",
        6,
        50,
        0.01,
        0.05,
    )
    assert (arf.drift_detector.delta, arf.warning_detector.delta, arf.leaf_prediction) == (0.001, 0.01, "nba")
    amf, mt = model("mlhat_amf"), model("mlhat_mt")
    assert (amf.n_estimators, amf.step, amf.use_aggregation, amf.dirichlet, amf.split_pure) == (
        10,
        1.0,
        True,
        0.5,
        False,
    )
    assert (mt.n_estimators, mt.step, mt.use_aggregation, mt.dirichlet) == (1, 0.1, True, 0.5)
    sgt = model("mlhat_sgt")
    assert (sgt.grace_period, sgt.delta, sgt.init_pred, sgt.lambda_value, sgt.gamma) == (200, 1e-5, 0.0, 0.1, 1.0)
    knn = model("mlhat_knn")
    assert (knn.n_neighbors, knn.weighted, knn.engine.window_size, type(knn.engine).__name__) == (
        5,
        True,
        200,
        "LazySearch",
    )
    amr = model("mlhat_amr")
    assert (amr.n_min, amr.delta, amr.tau, amr.fading_factor, amr.anomaly_threshold, amr.m_min) == (
        200,
        1e-5,
        0.05,
        0.99,
        -0.75,
        30,
    )
    assert amr.pred_type == "model"
    assert [type(o).__name__ for o in (amr.pred_model, amr.splitter, amr.drift_detector)] == [
        "LogisticRegression",
        "TEBSTSplitter",
        "ADWIN",
    ]
    for name, kind in (("mlhat_abalr", "ADWINBaggingClassifier"), ("mlhat_abolr", "ADWINBoostingClassifier")):
        ensemble = model(name)
        assert (type(ensemble).__name__, ensemble.n_models, type(ensemble.model).__name__) == (
            kind,
            10,
            "LogisticRegression",
        )
    isoup = get_algorithm("mlhat_isoupt")(5, 3, seed=0)
    tree = isoup.models[0]
    assert len(isoup.models) == 1 and type(tree).__name__ == "ISOUPTreeRegressor"
    assert (tree.grace_period, tree.delta, tree.tau, tree.model_selector_decay) == (200, 1e-5, 0.05, 0.95)
    assert tree.leaf_prediction == "model"
    assert (type(tree.leaf_model).__name__, type(tree.splitter).__name__) == ("LogisticRegression", "TEBSTSplitter")
    assert type(model("mlhat_nb")).__name__ == "GaussianNB"
    assert len(get_algorithm("mlhat_ht")(5, 3).models) == 3  # binary relevance: one copy per label


def test_every_column_of_the_table_is_registered_once():
    assert sorted(cls.column.label for cls in LEARNERS) == sorted(SPEC_COLUMNS)
    assert all(get_algorithm(cls.name) is cls for cls in LEARNERS)


SMALL = {"mlhat_hat": {"grace_period": 20}, "mlhat_arf": {"n_models": 3}, "mlhat_amf": {"n_models": 3}}


@pytest.mark.parametrize("name", ["mlhat_hat", "mlhat_arf", "mlhat_amf", "mlhat_abolr", "mlhat_ht"])
def test_a_seed_fixes_the_predictions_and_the_first_example_is_not_predicted(name):
    ds = load_dataset("emotions")

    def run(seed):
        learner = get_algorithm(name)(ds.n_features, ds.n_labels, seed=seed, **SMALL.get(name, {}))
        out = []
        for i in range(120):
            out.append(learner.predict_one(ds.X[i]))
            learner.learn_one(ds.X[i], ds.Y[i])
        return out

    first, again = run(3), run(3)
    assert first[0] is None and all(p is not None for p in first[1:])
    assert all(np.array_equal(a["scores"], b["scores"]) for a, b in zip(first[1:], again[1:]))


def test_dense_rows_give_river_every_feature_zeros_included():
    import scipy.sparse as sp

    row = sp.csr_array(np.array([[0.0, 2.0, 0.0, 1.0, 0.0]]))
    assert get_algorithm("mlhat_nb")(5, 2)._row(row) == {0: 0.0, 1: 2.0, 2: 0.0, 3: 1.0, 4: 0.0}
    assert get_algorithm("mlhat_nb")(5, 2, dense_rows=False)._row(row) == {1: 2.0, 3: 1.0}


def test_the_reference_file_holds_the_tables_figures():
    with open(olb.conf_file("reference/mlhat_tables.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["paper"] for r in rows} == {"mlhat_benchmark"} and {r["table"] for r in rows} == {"per_dataset"}
    assert {r["dataset"] for r in rows} == set(STREAMS)
    assert {r["algorithm"] for r in rows} == set(SPEC_COLUMNS) | set(PUBLISHED_ONLY)
    assert len(rows) == len(STREAMS) * 17 * 12  # every stream x learner x metric (11 metrics and the time)
    by = {(r["dataset"], r["algorithm"], r["metric"]): r for r in rows}
    # two figures copied from the published CSVs (results/per_dataset of aestebant/mlhat)
    assert float(by[("Emotions", "HT", "example_f1")]["value"]) == pytest.approx(0.5441911665249151, abs=0)
    assert float(by[("Flags", "KNN", "subset_acc")]["value"]) == pytest.approx(0.07231649578076106, abs=0)
    assert all(r["note"].startswith("published only") for r in rows if r["algorithm"] in PUBLISHED_ONLY)
    assert not any(r["note"].startswith("published only") for r in rows if r["algorithm"] in SPEC_COLUMNS)


def test_a_river_learner_that_raises_mid_stream_fails_its_cell_and_the_grid_goes_on(tmp_path, monkeypatch):
    """river 0.26's AMRules divides by a rule's target variance: a label constant over its first n_min rows raises
    ZeroDivisionError (docs/stream_benchmark.md). That cell fails, named with the error; the others finish."""
    import pandas as pd
    import yaml

    from olb.grid import compose, run_grid

    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(60, 3)), (rng.random((60, 2)) < 0.5).astype(int)
    Y[:, 0] = 0  # a label never relevant
    lines = ["@relation constant", *(f"@attribute f{i} numeric" for i in range(3)), "@attribute a {0,1}"]
    lines += [
        "@attribute b {0,1}",
        "@data",
        *(",".join([*(f"{v:.5f}" for v in x), *map(str, y)]) for x, y in zip(X, Y)),
    ]
    (tmp_path / "data" / "constant").mkdir(parents=True)
    (tmp_path / "data" / "constant" / "constant.arff").write_text("\n".join(lines) + "\n")
    (tmp_path / "data" / "constant" / "constant.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n'
        '<label name="a"></label>\n<label name="b"></label>\n</labels>\n'
    )
    entry = {
        "name": "constant",
        "task": "multilabel",
        "format": "mulan_arff",
        "files": {"data": {"path": "constant/constant.arff"}, "labels": {"path": "constant/constant.xml"}},
        "shape": {"n_examples": 60, "n_train": None, "n_features": 3, "n_labels": 2},
    }
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "constant.yaml").write_text(yaml.safe_dump(entry))
    monkeypatch.setenv("OLB_CONF_DIR", str(tmp_path / "conf"))
    overrides = ["backend=serial", "seeds=1", "tracking=off", "plots=false", "protocol=prequential"]
    overrides += [f"data_dir=[{tmp_path / 'data'}]", "verify_checksums=false", "datasets=[constant]"]
    overrides += ["algorithms=[mlhat_amr,mlhat_nb]", "+algorithm.mlhat_amr.params.n_min=20", "metrics=[mlhat_micro_f1]"]
    o = run_grid(compose(overrides), tmp_path / "out")
    assert o.exit_code == 1 and o.n_failed == 1 and o.n_run == 2
    cells = pd.read_csv(o.files["cells"]).set_index("algorithm")
    assert cells.loc["mlhat_amr", "status"] == "FAILED" and "ZeroDivisionError" in cells.loc["mlhat_amr", "error"]
    assert cells.loc["mlhat_nb", "status"] == "FINISHED" and cells.loc["mlhat_nb", "mlhat_micro_f1"] >= 0
