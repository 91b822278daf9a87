"""What a learner's declarations do to its stream: training order by seed, initial block, rounds without a
prediction, feature scaling and sparse rows (olb/protocol/)."""

import numpy as np
import pytest
import scipy.sparse as sp

from olb.data.dataset import Dataset
from olb.learners.base import OnlineLearner, Param
from olb.learners.params import FEATURE_SCALING, INIT_FRACTION
from olb.protocol import make_phases, run_stream


def _dataset(n_train=20, n_test=6, sparse=False):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_train + n_test, 4)) * np.array([1.0, 10.0, 100.0, 0.0]) + 5.0
    Y = (X[:, :3] > 5.0).astype(np.int8)
    if sparse:
        X = sp.csr_array(np.where(X > 5.0, X, 0.0))
    return Dataset("toy", X, Y, "multilabel", tuple(f"f{i}" for i in range(4)), ("a", "b", "c"), n_train)


class Journal(OnlineLearner):
    """Writes down every call it receives (rows as dense copies), predicts the first three features."""

    name = "journal"
    outputs = ("scores", "labels")
    predict_before_learn = False
    init_fraction = INIT_FRACTION
    feature_scaling = FEATURE_SCALING
    sparse = Param(bool, False, doc="accept CSR rows")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.calls = []

    @property
    def accepts_sparse(self):
        return self.sparse

    def predict_one(self, x):
        self.calls.append(("predict", _dense(x)))
        scores = _dense(x)[0, :3]
        return {"scores": scores, "labels": (scores > 0.5).astype(np.int8)}

    def learn_one(self, x, y):
        self.calls.append(("learn", _dense(x)))

    def learn_many(self, X, Y):
        self.calls.append(("learn_many", _dense(X)))


def _dense(x):
    return x.toarray().reshape(-1, 4) if sp.issparse(x) else np.asarray(x).reshape(-1, 4)


def _learned_rows(learner):
    return np.vstack([x for kind, x in learner.calls if kind in ("learn", "learn_many")])


def test_train_frozen_draws_the_training_order_from_the_seed():
    data = _dataset()
    orders = [make_phases(data, "train_frozen", rng=np.random.default_rng(s))[0].rows for s in (0, 0, 1)]
    assert np.array_equal(orders[0], orders[1]) and not np.array_equal(orders[0], orders[2])
    assert sorted(orders[2]) == list(range(20))
    two_loops = make_phases(data, "train_frozen", loops=2, rng=np.random.default_rng(0))
    assert not np.array_equal(two_loops[0].rows, two_loops[1].rows)  # each pass its own order
    assert np.array_equal(make_phases(data, "train_test")[0].rows, np.arange(20))  # paper 000/004: file order


def test_initial_block_and_no_prediction_on_unscored_rounds():
    data = _dataset()
    learner = Journal(4, 3, init_fraction=0.25)
    phases = make_phases(data, "train_frozen", rng=np.random.default_rng(3))
    result = run_stream(learner, data, phases, metrics=("hamming_loss", "rank_loss"))
    kinds = [kind for kind, _ in learner.calls]
    assert kinds == ["learn_many"] + ["learn"] * 15 + ["predict"] * 6  # 5 rows at once, 15 streamed, test predicted
    assert np.array_equal(learner.calls[0][1], data.X[phases[0].rows[:5]])
    assert [*result.phases] == ["init", "train", "test"] and result.phases["init"]["n_examples"] == 5
    assert set(result.curve["phase"]) == {2}  # curves only where there are predictions


def test_minmax_scaling_uses_the_training_rows_only():
    data = _dataset()
    learner = Journal(4, 3, feature_scaling="minmax")
    run_stream(learner, data, make_phases(data, "train_frozen", rng=np.random.default_rng(0)), metrics=("f1",))
    train = _learned_rows(learner)
    assert np.allclose(train[:, :3].min(axis=0), 0) and np.allclose(train[:, :3].max(axis=0), 1)
    assert np.all(train[:, 3] == 0)  # a constant feature becomes 0
    low, high = data.X[:20].min(axis=0), data.X[:20].max(axis=0)
    test = np.vstack([x for kind, x in learner.calls if kind == "predict"])
    assert np.allclose(test[:, :3], (data.X[20:, :3] - low[:3]) / (high - low)[:3])


@pytest.mark.parametrize("scaling", ["none", "minmax"])
def test_sparse_rows_reach_only_learners_that_accept_them(scaling):
    data = _dataset(sparse=True)
    seen = {}
    for accepts in (True, False):
        learner = Journal(4, 3, sparse=accepts, feature_scaling=scaling)
        kinds = []
        learner.learn_one = lambda x, y, kinds=kinds: kinds.append(type(x))
        run_stream(learner, data, make_phases(data, "train_frozen", rng=np.random.default_rng(0)), metrics=("f1",))
        seen[accepts] = set(kinds)
    assert seen == {True: {sp.csr_array}, False: {np.ndarray}}
    if scaling == "minmax":  # sparse data: divided by the training rows' max |x|, zeros stay zeros
        learner = Journal(4, 3, feature_scaling="minmax")
        phases = make_phases(data, "train_frozen", rng=np.random.default_rng(0))
        run_stream(learner, data, phases, metrics=("f1",))
        train = _learned_rows(learner)
        assert np.allclose(train.max(axis=0)[:3], 1) and (train[data.X[phases[0].rows].toarray() == 0] == 0).all()


def test_a_metric_needs_an_output_the_learner_declares():
    data = _dataset()

    class Ranker(Journal):
        name = "ranker"
        outputs = ("scores",)

    with pytest.raises(
        ValueError, match="metric 'hamming_loss' needs the learner's 'labels' output, and ranker gives only 'scores'"
    ):
        run_stream(Ranker(4, 3), data, make_phases(data, "train_frozen"), metrics=("rank_loss", "hamming_loss"))
