"""The prequential protocols (the whole stream predicted, scored, then learned), the MLHAT table's metrics against
river's own metric objects, abstaining predictions, running min-max scaling and windowed curves (olb/protocol/,
olb/metrics/)."""

import numpy as np
import pytest
import scipy.sparse as sp
from river import evaluate
from river import metrics as rm
from river import multioutput
from river.metrics.multioutput.base import MultiOutputClassificationMetric

from olb import metrics as M
from olb.data import load_with_provenance
from olb.data.dataset import Dataset
from olb.learners.base import OnlineLearner
from olb.learners.params import FEATURE_SCALING
from olb.protocol import make_phases, run_stream
from olb.protocol.rows import _minmax
from olb.learners.registry import get_algorithm


class TableHammingLoss(rm.base.MeanMetric, MultiOutputClassificationMetric):
    """The MLHAT table's own Hamming loss (its repository's ``metrics/multioutput/hamming_loss.py``)."""

    def _eval(self, y_true, y_pred):
        return len([label for label, val in y_true.items() if y_pred[label] != val]) / len(y_true)


RIVER = {  # each mlhat_* metric as the table computes it with river
    "mlhat_subset_accuracy": rm.multioutput.ExactMatch,
    "mlhat_hamming_loss": TableHammingLoss,
    **{
        f"mlhat_{kind}_{part}": (lambda wrap, binary: lambda: wrap(binary()))(wrap, binary)
        for kind, wrap in (
            ("example", rm.multioutput.SampleAverage),
            ("micro", rm.multioutput.MicroAverage),
            ("macro", rm.multioutput.MacroAverage),
        )
        for part, binary in (("precision", rm.Precision), ("recall", rm.Recall), ("f1", rm.F1))
    },
}
MLHAT = tuple(RIVER)


def _as_dict(vector) -> dict:
    return {f"y{j}": bool(v) for j, v in enumerate(vector)}


def _river_values(predictions, truths) -> dict[str, float]:
    """Every table metric as river's objects give it, fed the label vectors as river's dicts."""
    objects = {name: make() for name, make in RIVER.items()}
    for labels, y in zip(predictions, truths):
        for metric in objects.values():
            metric.update(_as_dict(y), _as_dict(labels))
    return {name: metric.get() for name, metric in objects.items()}


def _olb_values(predictions, truths) -> dict[str, float]:
    accumulators = {name: M.METRICS[name].accumulator() for name in MLHAT}
    for labels, y in zip(predictions, truths):
        for acc in accumulators.values():
            acc.update(np.asarray(labels), np.asarray(y))
    return {name: acc.value() for name, acc in accumulators.items()}


def _emotions():
    return load_with_provenance("emotions")[0]


def test_the_table_metrics_equal_rivers_on_hand_made_edge_cases():
    """Empty prediction, empty truth, both empty, a label never relevant, a label never predicted."""
    cases = {
        "empty prediction": ([[0, 0, 0], [1, 0, 1]], [[1, 0, 0], [1, 0, 1]]),
        "empty truth": ([[1, 0, 0], [1, 1, 0]], [[0, 0, 0], [1, 0, 0]]),
        "all empty": ([[0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0]]),
        "mixed": ([[0, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 0]], [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 1]]),
    }
    for case, (predictions, truths) in cases.items():
        ours, rivers = _olb_values(predictions, truths), _river_values(predictions, truths)
        for name in MLHAT:
            assert ours[name] == pytest.approx(rivers[name], abs=1e-12), (case, name, ours[name], rivers[name])
    # the conventions that set them apart from the papers' metrics: both sets empty score 0, not 1
    assert _olb_values(*cases["all empty"])["mlhat_example_f1"] == 0.0
    assert M.METRICS["example_f1"](np.zeros(3), np.zeros(3)) == 1.0


def test_the_table_metrics_equal_rivers_on_a_real_stream():
    """emotions' label sets, each predicted by the one before it (the first by the empty set): every table metric
    equals river's to 1e-12, and the micro ones, one division of the same counts, exactly."""
    Y = _emotions().Y
    predictions = np.vstack([np.zeros((1, Y.shape[1]), np.int8), Y[:-1]])
    ours, rivers = _olb_values(predictions, Y), _river_values(predictions, Y)
    for name in MLHAT:
        assert ours[name] == pytest.approx(rivers[name], abs=1e-12), (name, ours[name], rivers[name])
    for name in ("mlhat_micro_precision", "mlhat_micro_recall"):
        assert ours[name] == rivers[name]
    assert 0.05 < ours["mlhat_subset_accuracy"] < 0.5 and 0.1 < ours["mlhat_macro_f1"] < 0.9  # not degenerate


def test_prequential_is_rivers_progressive_validation_of_the_wrapped_learner():
    """olb's protocol and river's ``progressive_val_score`` on the same learner (FALT, olb.river's wrapper with its
    features and labels given, so that it predicts from the first example) over emotions in file order: the same
    table metrics."""
    import olb.river

    data = _emotions()
    learner = get_algorithm("falt")(data.n_features, data.n_labels, seed=0)
    ours = run_stream(learner, data, make_phases(data, "prequential"), MLHAT).metrics
    model = olb.river.FALT(
        seed=0, features=list(range(data.n_features)), labels=[f"y{j}" for j in range(data.n_labels)]
    )
    stream = [(dict(enumerate(data.X[i])), _as_dict(data.Y[i])) for i in range(data.n_examples)]
    rivers = evaluate.progressive_val_score(stream, model, rm.base.Metrics([make() for make in RIVER.values()]))
    for name, metric in zip(MLHAT, rivers):
        assert ours[name] == pytest.approx(metric.get(), abs=1e-12), (name, ours[name], metric.get())


def test_a_river_learner_abstains_before_its_first_example_as_river_does():
    """river's lazily built multi-output model predicts ``{}`` before its first example, which progressive
    validation does not score; olb's river learner abstains then (``None``), so the protocol gives river's figures."""
    from river import linear_model, optim

    data = _emotions()
    learner = get_algorithm("river_br_lr")(data.n_features, data.n_labels, seed=0)
    assert learner.predict_one(data.rows(0)[0]) is None
    result = run_stream(learner, data, make_phases(data, "prequential"), MLHAT, curve_every=100)
    model = multioutput.PerOutputClassifier(linear_model.LogisticRegression(optimizer=optim.SGD(0.01)))
    stream = [({j: v for j, v in enumerate(data.X[i]) if v}, _as_dict(data.Y[i])) for i in range(data.n_examples)]
    rivers = evaluate.progressive_val_score(stream, model, rm.base.Metrics([make() for make in RIVER.values()]))
    for name, metric in zip(MLHAT, rivers):
        assert result.metrics[name] == pytest.approx(metric.get(), abs=1e-12), name
    assert result.phases["stream"]["n_examples"] == data.n_examples and result.training == ("stream",)
    assert result.train_us_per_example > 0  # a prequential stream is all training: its CPU per example


def _toy(n=12, sparse=False, n_train=None):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 0.0]) + 2.0
    Y = (X[:, :2] > 2.0).astype(np.int8)
    if sparse:
        X = sp.csr_array(np.where(X > 2.0, X, 0.0))
    return Dataset("toy", X, Y, "multilabel", ("a", "b", "c"), ("p", "q"), n_train)


class Diary(OnlineLearner):
    """Predicts ``x[:2] > 0.5`` as labels, abstains on its first prediction, writes down the rows it is given."""

    name = "diary"
    outputs = ("scores", "labels")
    feature_scaling = FEATURE_SCALING

    def __post_init__(self) -> None:
        super().__post_init__()
        self.seen, self.learned = [], 0

    def predict_one(self, x):
        x = x.toarray()[0] if sp.issparse(x) else x
        self.seen.append(np.array(x))
        if not self.learned:
            return None
        return {"scores": x[:2].copy(), "labels": (x[:2] > 0.5).astype(np.int8)}

    def learn_one(self, x, feedback):
        self.learned += 1


@pytest.mark.parametrize("n_train", [None, 8])
def test_prequential_streams_every_row_in_file_order_or_shuffled_by_the_seed(n_train):
    data = _toy(n_train=n_train)  # with or without a train/test split: the whole data set either way
    (phase,) = make_phases(data, "prequential", loops=3)
    assert (phase.name, phase.update, phase.scored) == ("stream", True, True)
    assert phase.rows.tolist() == list(range(12))
    shuffled = [make_phases(data, "prequential_shuffled", rng=np.random.default_rng(s))[0].rows for s in (0, 0, 1)]
    assert sorted(shuffled[0]) == list(range(12)) and shuffled[0].tolist() == shuffled[1].tolist()
    assert shuffled[0].tolist() != shuffled[2].tolist()


def test_an_abstaining_prediction_is_not_scored_but_the_row_is_learned():
    data = _toy()
    learner = Diary(3, 2)
    result = run_stream(learner, data, make_phases(data, "prequential"), ("hamming_loss",), curve_every=1)
    labels = (data.X[1:, :2] > 0.5).astype(np.int8)
    assert learner.learned == 12 and len(learner.seen) == 12
    assert result.metrics["hamming_loss"] == pytest.approx(float(np.mean(labels != data.Y[1:])))
    assert np.isnan(result.curve["value"][0]) and len(result.curve["value"]) == 12


@pytest.mark.parametrize("sparse", [False, True])
def test_minmax_in_a_prequential_stream_uses_the_rows_seen_so_far(sparse):
    """Row i is scaled with the statistics of rows 0..i (no later row), as the training-split rule would with
    those rows as the training split; on sparse data x / max|x|, dense rows or CSR rows alike."""
    data = _toy(sparse=sparse)
    for accepts_sparse in (False, True) if sparse else (False,):
        learner = Diary(3, 2, feature_scaling="minmax")
        learner.accepts_sparse = accepts_sparse
        run_stream(learner, data, make_phases(data, "prequential"), ("hamming_loss",))
        for i, seen in enumerate(learner.seen):
            expected = _minmax(data.X, np.arange(i + 1), sparse)[[i]]
            expected = expected.toarray()[0] if sparse else expected[0]
            assert np.allclose(seen, expected, rtol=1e-15, atol=0), (i, seen, expected)
    first = np.ones(3) * (data.X[[0]].toarray()[0] > 0) if sparse else np.zeros(3)  # x / max|x| is 1; constant: 0
    assert np.array_equal(learner.seen[0], first)


def test_the_windowed_curve_is_the_metric_over_the_last_examples_of_each_phase():
    data = _toy(n=30, n_train=20)
    learner = Diary(3, 2)
    result = run_stream(learner, data, make_phases(data, "train_test"), ("hamming_loss",), curve_every=1, window=4)
    curve = result.curve
    labels = (data.X[:, :2] > 0.5).astype(np.int8)
    losses = np.mean(labels != data.Y, axis=1)
    assert len(curve["window"]) == len(curve["value"]) == 30
    train, test = np.nan, losses[20:]
    for i, (step, phase) in enumerate(zip(curve["step"], curve["phase"])):
        scored = np.arange(1, step) if phase == 0 else np.arange(20, step)  # row 0 abstained
        expected = losses[scored[-4:]].mean() if len(scored) else train
        assert curve["window"][i] == pytest.approx(expected, nan_ok=True), i
    assert curve["value"][-1] == pytest.approx(test.mean()) and curve["window"][-1] == pytest.approx(test[-4:].mean())
    with pytest.raises(ValueError, match="window=-1"):
        run_stream(Diary(3, 2), data, make_phases(data, "train_test"), window=-1)


def test_a_window_accumulator_sums_exactly_the_examples_in_its_window():
    rng = np.random.default_rng(3)
    labels, truths = rng.integers(0, 2, (50, 5)), rng.integers(0, 2, (50, 5))
    for name in ("mlhat_macro_f1", "mlhat_example_f1", "mlhat_micro_precision"):
        window = M.WindowAccumulator(M.METRICS[name], 7)
        for i in range(50):
            window.update(labels[i], truths[i])
            start = max(0, i - 6)
            expected = np.mean(M.METRICS[name](labels[start : i + 1], truths[start : i + 1]))  # per example: mean
            assert window.value() == pytest.approx(expected), (name, i)
    with pytest.raises(ValueError, match="positive integer"):
        M.WindowAccumulator(M.METRICS["hamming_loss"], 0)


def test_every_registered_learner_runs_the_prequential_protocols():
    """Every learner of the registry (river's included) through both prequential protocols on its contract
    stream: finite metrics and windowed curve, every row streamed."""
    from olb.checks.contract import _make, _metrics, stream_for
    from olb.learners.registry import ALGORITHMS

    for cls in ALGORITHMS.values():
        if cls.missing_requirements():  # MOA's without a JVM or olb[moa]: the grid refuses them (tests/test_moa.py)
            continue
        data = stream_for(cls)
        for protocol in ("prequential", "prequential_shuffled"):
            phases = make_phases(data, protocol, rng=np.random.default_rng(4))
            result = run_stream(_make(cls, data, seed=2), data, phases, _metrics(cls), curve_every=10**6, window=5)
            assert all(np.isfinite(list(result.metrics.values()))) and np.isfinite(result.curve["window"][-1]), cls.name
            assert result.phases["stream"]["n_examples"] == data.n_examples


def test_the_command_line_and_the_grid_accept_the_protocols_and_the_window(capsys):
    from olb.grid import GridConfigError, compose, plan_grid
    from olb.run import main

    assert (
        main(["algorithm=falt", "dataset=emotions", "protocol=prequential", "metrics=[mlhat_micro_f1]", "window=50"])
        == 0
    )
    assert "mlhat_micro_f1: 0.39" in capsys.readouterr().out
    grid = ["algorithms=[falt,river_br_lr]", "datasets=[emotions]", "seeds=2", "metrics=[mlhat_macro_f1]"]
    for protocol in ("prequential", "prequential_shuffled"):
        plan = plan_grid(compose([*grid, f"protocol={protocol}", "window=50"]))
        assert {(c.protocol, c.window, c.spec().window) for c in plan.cells} == {(protocol, 50, 50)}
    with pytest.raises(GridConfigError, match=r"window=-1 is out of range"):
        plan_grid(compose([*grid, "protocol=prequential", "window=-1"]))
