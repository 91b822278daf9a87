"""olb in river (olb/river.py) and river's learners in olb (olb/learners/river_family.py).

The contract of river's learners as olb learners is tests/test_learner_contract.py's (the family registers
them in ``olb.learners.registry``); here: the wrapped learners against olb's own protocol, river's conventions, and the
river family against olb's PA-I-BR.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from river import evaluate, metrics, preprocessing

import olb.river
from olb.data.dataset import Dataset
from olb.learners import river_family
from olb.learners.linear.pa import PA1BR
from olb.protocol import make_phases, run_stream


def _recording(cls):
    """``cls`` that records the ``labels`` output of every prediction the protocol asks of it."""

    class Recording(cls):
        def predict_one(self, x):
            prediction = super().predict_one(x)
            self.predictions.append(prediction["labels"].copy())
            return prediction

    return Recording


def _emotions_head(load, n=200) -> Dataset:
    data = load("emotions")
    return Dataset("emotions-head", data.X[:n], data.Y[:n], data.task, data.feature_names, data.label_names, None)


def _stream(data: Dataset, order, sparse: bool):
    for i in order:
        x = {f"f{j}": float(v) for j, v in enumerate(data.X[i]) if v != 0 or not sparse}
        yield x, {f"l{k}": bool(v) for k, v in enumerate(data.Y[i])}


CASES = [  # (learner class name, hyperparameters, sparse dicts with the names given up front)
    ("FALT", {"eta": 0.1, "repeats": 3}, True),
    ("PA2BR", {"C": 0.5}, False),
    ("AdaOLMRThresholded", {"num_learners": 3, "threshold_rule": "size"}, False),  # random draws, predict-then-learn
    ("OSMLELM", {"num_hidden": 20, "init_fraction": 0.2}, False),  # an initial block
]


@pytest.mark.parametrize(("name", "hyper", "sparse"), CASES, ids=[c[0] for c in CASES])
def test_progressive_val_score_predicts_what_the_protocol_predicts(load, name, hyper, sparse):
    """Same seed, same rows in the same order: ``progressive_val_score`` on the wrapped learner gives the
    predictions of ``run_stream`` under ``prequential_last20`` (every row predicted, then learned)."""
    data = _emotions_head(load)
    wrapper_cls = getattr(olb.river, name)
    cls = wrapper_cls.learner_class
    scaling = {"feature_scaling": "none"} if "feature_scaling" in cls.params else {}
    phases = make_phases(data, "prequential_last20", rng=np.random.default_rng(3))
    learner = _recording(cls)(data.n_features, data.n_labels, seed=11, **hyper, **scaling)
    learner.predictions = []
    result = run_stream(learner, data, phases, metrics=("hamming_loss",))
    order = np.concatenate([p.rows for p in phases])
    n_scored = len(phases[-1].rows)
    expected = learner.predictions[-n_scored:]  # every learner predicts the scored rows, some all the rows

    init_rows = int(round(hyper.get("init_fraction", 0.0) * len(phases[0].rows)))
    wrapped_hyper = {k: v for k, v in hyper.items() if k != "init_fraction"}
    names = {"features": [f"f{j}" for j in range(data.n_features)], "labels": [f"l{k}" for k in range(data.n_labels)]}
    model = wrapper_cls(seed=11, init_rows=init_rows, **wrapped_hyper, **(names if sparse else {}))
    steps = evaluate.iter_progressive_val_score(
        _stream(data, order, sparse), model, metrics.multioutput.ExactMatch(), step=1, yield_predictions=True
    )
    got = [step["Prediction"] for step in steps][-n_scored:]
    assert len(got) == n_scored
    for want, prediction in zip(expected, got):
        assert prediction == {f"l{k}": bool(v) for k, v in enumerate(want)}
    hamming = np.mean([[p[f"l{k}"] != bool(data.Y[i, k]) for k in range(data.n_labels)]
                       for p, i in zip(got, order[-n_scored:])])  # fmt: skip
    assert hamming == pytest.approx(result.metrics["hamming_loss"], abs=1e-12)


def test_in_a_pipeline_with_river_metrics_clone_and_pickle(load):
    data = _emotions_head(load)
    model = preprocessing.MinMaxScaler() | olb.river.FALT(eta=0.1)
    metric = metrics.multioutput.MicroAverage(metrics.F1())
    evaluate.progressive_val_score(_stream(data, range(150), sparse=False), model, metric)
    assert 0.3 < metric.get() <= 1.0
    x = next(_stream(data, [170], sparse=False))[0]
    again = pickle.loads(pickle.dumps(model))
    assert again.predict_one(x) == model.predict_one(x) and set(model.predict_one(x)) == {f"l{k}" for k in range(6)}
    fresh = model.clone()
    assert fresh.predict_one(x) == {} and fresh["FALT"].hyper == {"eta": 0.1}


def test_bad_settings_are_refused_when_built_naming_them():
    with pytest.raises(ValueError, match=r"eta=-1.0 is out of range"):
        olb.river.FALT(eta=-1.0)
    with pytest.raises(ValueError, match=r"feature_scaling= is set by the stream"):
        olb.river.FALTKernel(feature_scaling="minmax")
    with pytest.raises(ValueError, match=r"init_rows=5: falt takes no initial block"):
        olb.river.FALT(init_rows=5)
    with pytest.raises(ValueError, match=r"k=6 must be smaller than the number of labels \(2\)"):
        olb.river.TopOpt(k=6, features=["a"], labels=["x", "y"])  # k must be smaller than the labels
    model = olb.river.PA1BR()
    model.learn_one({"a": 1.0}, {"x": True})
    with pytest.raises(ValueError, match=r"unknown feature\(s\) \['b'\]"):
        model.predict_one({"b": 1.0})
    with pytest.raises(ValueError, match=r"unknown label\(s\) \['z'\]"):
        model.learn_one({"a": 1.0}, {"z": True})


def test_a_ranking_only_learner_scores_and_names_its_thresholded_version():
    model = olb.river.AdaOLMR(num_learners=2, features=["a", "b"], labels=["x", "y", "z"])
    assert set(model.score_one({"a": 1.0})) == {"x", "y", "z"}
    with pytest.raises(NotImplementedError, match="AdaOLMRThresholded"):
        model.predict_one({"a": 1.0})


def test_every_multilabel_learner_is_wrapped():
    from olb.learners.registry import ALGORITHMS

    names = {cls.learner_class.name for cls in olb.river.LEARNERS.values()}
    # a test module's own learner (olb.ops.testing's _grid_stub) may be registered after olb.river was imported
    own = {n for n, c in ALGORITHMS.items() if c.task == "multilabel" and not n.startswith(("river_", "mlhat_", "_"))}
    assert own <= names <= own | {n for n in ALGORITHMS if n.startswith("_")}


@pytest.mark.e2e
def test_river_is_imported_by_olb_river_only():
    code = "import sys, olb.learners.registry, olb.grid.planning.plan; print('river' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_importing_river_is_warm_up_not_the_first_cells_runtime():
    """In a fresh process (river not imported yet) the first river cell's runtime_s is like the second's: the
    import (0.5-2 s) is counted in its compile_s (olb.run.warm_up), before the clock starts."""
    code = (
        "from olb.run import CellSpec, run_cell\n"
        "for seed in (0, 1):\n"
        "    r = run_cell(CellSpec(algorithm='river_br_pa', dataset='emotions', seed=seed))\n"
        "    print(r.runtime_s, r.compile_s)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    (first_runtime, first_warm_up), (second_runtime, second_warm_up) = (
        map(float, line.split()) for line in done.stdout.splitlines()
    )
    assert first_runtime < 2 * second_runtime + 0.1, done.stdout
    assert first_warm_up > 0.05 > second_warm_up, done.stdout  # a first import of river takes 0.3 s or more


def test_rivers_binary_relevance_pa_is_olbs_pa1_br(load):
    """river's PerOutputClassifier(PAClassifier(mode=1, no intercept)) computes PA-I-BR: the same labels, and
    scores that rank alike (river's are the sigmoid of olb's)."""
    data = load("emotions")
    phases = make_phases(data, "train_frozen", rng=np.random.default_rng(0))
    ours = _recording(PA1BR)(data.n_features, data.n_labels, C=0.25)
    theirs = _recording(river_family.RiverBRPA)(data.n_features, data.n_labels, C=0.25, learn_intercept=False)
    for learner in (ours, theirs):
        learner.predictions = []
        run_stream(learner, data, phases, metrics=("hamming_loss",))
    assert len(ours.predictions) == data.n_examples - data.n_train
    assert all(np.array_equal(a, b) for a, b in zip(ours.predictions, theirs.predictions))
    x = data.X[data.n_train]
    assert np.allclose(theirs.predict_one(x)["scores"], 1 / (1 + np.exp(-ours.predict_one(x)["scores"])))


def test_river_learners_refuse_bad_hyperparameters_before_start():
    with pytest.raises(ValueError, match=r"river_br_ht: grace_period=0 is out of range"):
        river_family.RiverBRHT(10, 3, grace_period=0)
    with pytest.raises(ValueError, match=r"river_cc_pa: mode=3 is not allowed"):
        river_family.RiverCCPA.validate({"mode": 3})
