"""Checks that a learner keeps olb's learner contract (:class:`olb.learners.base.OnlineLearner`), on synthetic data.

``check_learner(cls)`` runs every check on small seeded streams shaped like the benchmarks (no data folder
needed): a dense multi-label stream (emotions' 72 features and 6 labels), a sparse one (a CSR matrix, for learners
that accept sparse rows) and a multiclass one (balance's 4 features and 3 classes). Each check raises an
``AssertionError`` naming the learner and what broke. ``yield_checks(cls)`` gives the checks one by one (e.g. to
parametrize a test), as river's ``utils.estimator_checks`` and scikit-learn's ``check_estimator`` do.

>>> from olb.checks import check_learner
>>> from olb.learners import FALT
>>> check_learner(FALT)
check_learner: FALT (falt) passed all 8 contract checks
"""

from __future__ import annotations

import functools
import math
import pickle
from collections.abc import Callable, Iterator

import numpy as np

from olb.data.dataset import Dataset
from olb.learners.base import OnlineLearner, Param

N_TRAIN, N_TEST = 60, 20
OUTPUT_CHECKS = {
    "scores": lambda v, m: isinstance(v, np.ndarray)
    and v.shape == (m,)
    and v.dtype.kind == "f"
    and np.isfinite(v).all(),
    "labels": lambda v, m: isinstance(v, np.ndarray) and v.shape == (m,) and set(np.unique(v)) <= {0, 1},
    "class": lambda v, m: isinstance(v, (int, np.integer)) and 0 <= v < m,
}


# ---------------------------------------------------------------------------------------------------
# the synthetic streams
# ---------------------------------------------------------------------------------------------------


@functools.cache
def dense_multilabel_stream(n_train: int = N_TRAIN, n_test: int = N_TEST) -> Dataset:
    """72 Gaussian features, 6 correlated labels, ~1.9 relevant per example (emotions' shape)."""
    from olb.data.synthetic import make_multilabel_stream

    return make_multilabel_stream(n_train, n_test, n_features=72, n_labels=6, cardinality=1.9, seed=0)


@functools.cache
def sparse_multilabel_stream() -> Dataset:
    """The dense stream's labels over 300 non-negative features, 95% of them zero, as a CSR matrix (a bag of
    words' shape)."""
    import scipy.sparse as sp

    dense = dense_multilabel_stream()
    rng = np.random.default_rng(1)
    words = np.abs(np.repeat(dense.X, 5, axis=1) + rng.normal(size=(dense.n_examples, 360)))[:, :300]
    words[rng.random(words.shape) < 0.95] = 0.0
    names = tuple(f"w{j + 1}" for j in range(300))
    return Dataset("synthetic-sparse", sp.csr_array(words), dense.Y, "multilabel", names, dense.label_names, N_TRAIN)


@functools.cache
def multiclass_stream(n_train: int = N_TRAIN, n_test: int = N_TEST) -> Dataset:
    """4 features on a 1..5 grid, 3 classes by a noisy linear rule, the largest class near half (balance's shape)."""
    rng = np.random.default_rng(2)
    X = rng.integers(1, 6, size=(n_train + n_test, 4)).astype(float)
    margin = X[:, 0] * X[:, 1] - X[:, 2] * X[:, 3] + rng.normal(size=len(X))
    y = np.where(margin > 2, 0, np.where(margin < -2, 2, 1)).astype(np.int64)
    return Dataset("synthetic-multiclass", X, y, "multiclass", ("a", "b", "c", "d"), ("L", "B", "R"), n_train)


def stream_for(cls: type[OnlineLearner], n_train: int = N_TRAIN, n_test: int = N_TEST) -> Dataset:
    """The dense stream of the learner's task."""
    return (multiclass_stream if cls.task == "multiclass" else dense_multilabel_stream)(n_train, n_test)


# ---------------------------------------------------------------------------------------------------
# driving a learner
# ---------------------------------------------------------------------------------------------------


def _make(cls, data: Dataset, seed=0):
    return cls(data.n_features, data.n_labels, seed=seed, **cls.test_params)


def _outputs(learner, prediction) -> dict:
    return prediction if isinstance(prediction, dict) else {learner.outputs[0]: prediction}


def _feedback(learner, prediction, y):
    if learner.feedback == "topk":
        from olb.feedback import TopKFeedback

        return TopKFeedback.from_prediction(_outputs(learner, prediction)["scores"], y, learner.k)
    return y


def _train(learner, data: Dataset, rows) -> list:
    """Predict then learn each row (the protocol's order for every learner); the predictions."""
    out = []
    for i in rows:
        x = data.rows(i)[0]
        prediction = learner.predict_one(x)
        learner.learn_one(x, _feedback(learner, prediction, data.Y[i]))
        out.append(prediction)
    return out


def _predictions(learner, data: Dataset, rows) -> list:
    return [learner.predict_one(data.rows(i)[0]) for i in rows]


def _same(a, b) -> bool:
    """Predictions equal bit for bit: lists and dicts of arrays (same dtype, shape and bytes) and numbers."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and (a.dtype, a.shape) == (b.dtype, b.shape) and a.tobytes() == b.tobytes()
    return type(a) is type(b) and pickle.dumps(a) == pickle.dumps(b)


def _metrics(cls) -> tuple[str, ...]:
    if cls.task == "multiclass":
        return ("accuracy",)
    return ("rank_loss", "hamming_loss") if "labels" in cls.outputs else ("rank_loss",)


# ---------------------------------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------------------------------


def check_declarations(cls):
    """Name, task, feedback and outputs are known values; ``test_params`` are valid declared hyperparameters;
    every hyperparameter has a doc."""
    from olb.protocol import FEEDBACK_SETTINGS

    assert isinstance(cls.name, str) and cls.name, f"{cls.__name__}: no name"
    assert cls.task in ("multilabel", "multiclass"), f"{cls.name}: task {cls.task!r}"
    assert cls.feedback in FEEDBACK_SETTINGS, f"{cls.name}: feedback {cls.feedback!r}"
    assert cls.outputs and set(cls.outputs) <= set(OUTPUT_CHECKS), f"{cls.name}: outputs {cls.outputs!r}"
    assert set(cls.test_params) <= set(cls.params), f"{cls.name}: test_params names undeclared hyperparameters"
    cls.validate(dict(cls.test_params))
    for name, param in cls.params.items():
        assert isinstance(param, Param), f"{cls.name}: hyperparameter {name} is not a Param"
        assert param.doc, f"{cls.name}: hyperparameter {name} has no doc"


def invalid_values(param: Param) -> list:
    """Values ``param`` must refuse: for numbers NaN, the infinities, the bounds' outside, a string (and a
    fraction for integers); for booleans a string and a number; for choices an unknown value and None (None
    unless the parameter allows it)."""
    none = [] if type(None) in param.kinds else [None]
    if param.choices is not None:
        return ["not-one-of-the-choices", *none]
    if bool in param.kinds:
        return ["yes", 2, *none]
    bad = [math.nan, math.inf, -math.inf, "1", *none]
    if int in param.kinds:
        bad.append(1.5 if param.low is None else param.low + 0.5)
    if param.low is not None:
        bad.append(param.low if param.open_low else param.low - 1)
    if param.high is not None:
        bad.append(param.high if param.open_high else param.high + 1)
    return bad


def check_invalid_hyperparameters_are_refused(cls):
    """Every declared hyperparameter refuses each of its :func:`invalid_values` with a ValueError or TypeError
    naming it, from the constructor and from ``validate`` (which the grid and olb.run call)."""
    data = stream_for(cls)
    for name, param in cls.params.items():
        for value in invalid_values(param):
            hyper = {**cls.test_params, name: value}
            for attempt in (
                lambda: cls(data.n_features, data.n_labels, seed=0, **hyper),
                lambda: cls.validate(hyper),
            ):
                try:
                    attempt()
                except (ValueError, TypeError) as err:
                    assert name in str(err), (
                        f"{cls.name}: refusing {name}={value!r}, the message {err} does not name it"
                    )
                else:
                    raise AssertionError(f"{cls.name}: {name}={value!r} was accepted")


def check_predicts_before_learning_what_it_declares(cls):
    """Predictions before and while learning are the declared outputs: finite scores, 0/1 label vectors, classes;
    before its first example a learner may abstain instead (``None``, olb/protocol/stream.py), never after it."""
    data = stream_for(cls)
    learner = _make(cls, data)
    before = [*_predictions(learner, data, range(2)), *_train(learner, data, range(1))]
    after = _train(learner, data, range(1, 30))
    assert all(p is not None for p in after), f"{cls.name}: abstains (None) after learning an example"
    for prediction in [*(p for p in before if p is not None), *after]:
        outputs = _outputs(learner, prediction)
        assert set(outputs) == set(cls.outputs), f"{cls.name}: outputs {sorted(outputs)}, declared {cls.outputs}"
        for name, value in outputs.items():
            assert OUTPUT_CHECKS[name](value, data.n_labels), f"{cls.name}: bad {name!r} output {value!r}"


def check_same_seed_same_stream_and_pickling_mid_stream(cls):
    """Two learners with one seed give the same predictions; a copy pickled mid-stream continues identically."""
    data = stream_for(cls)
    first, second = _make(cls, data, seed=7), _make(cls, data, seed=7)
    assert _same(_train(first, data, range(40)), _train(second, data, range(40))), f"{cls.name}: seed not followed"
    clone = pickle.loads(pickle.dumps(first))
    assert _same(_train(first, data, range(40, 60)), _train(clone, data, range(40, 60))), f"{cls.name}: unpickled"
    assert _same(_predictions(first, data, range(60, 80)), _predictions(clone, data, range(60, 80)))


def check_predicting_does_not_change_the_model(cls):
    """Extra predictions on other rows, between the rounds, change nothing the learner later outputs, except
    through its random draws (a randomized prediction consumes them): both copies share one random state."""
    data = stream_for(cls)
    plain, probed = _make(cls, data, seed=3), _make(cls, data, seed=3)
    _train(plain, data, range(20))
    _train(probed, data, range(20))
    for i in range(20, 40):
        state = probed.random_state
        probed.predict_one(data.rows(70)[0])
        probed.random_state = state
        assert _same(_train(plain, data, [i]), _train(probed, data, [i])), f"{cls.name}: a prediction changed it"
    assert _same(_predictions(plain, data, range(60, 80)), _predictions(probed, data, range(60, 80)))


def check_keeps_no_reference_to_the_callers_arrays(cls):
    """Overwriting x and y after a round changes nothing the learner later outputs."""
    data = stream_for(cls)
    learner, twin = _make(cls, data, seed=5), _make(cls, data, seed=5)
    for i in range(30):
        x, y = data.rows(i)[0], np.array(data.Y[i], copy=True)
        prediction = learner.predict_one(x)
        learner.learn_one(x, _feedback(learner, prediction, y))
        x[:] = 1e6  # the caller reuses its buffers
        if np.ndim(y):
            y[:] = 1 - y
        _train(twin, data, [i])
    assert _same(_predictions(learner, data, range(60, 80)), _predictions(twin, data, range(60, 80))), (
        f"{cls.name}: keeps a reference to the caller's x or y"
    )


def check_initial_block_and_protocol_runs(cls):
    """The protocol runs the learner (its initial block through ``learn_many``) with the same metrics twice."""
    from olb.protocol import make_phases, run_stream

    data = stream_for(cls)
    phases = make_phases(data, "train_frozen", rng=np.random.default_rng(0))
    first = run_stream(_make(cls, data, seed=2), data, phases, metrics=_metrics(cls))
    again = run_stream(_make(cls, data, seed=2), data, phases, metrics=_metrics(cls))
    assert first.metrics == again.metrics, f"{cls.name}: {first.metrics} then {again.metrics}"
    assert all(np.isfinite(v) for v in first.metrics.values()), f"{cls.name}: metrics {first.metrics}"


def check_sparse_rows_give_the_dense_results(cls):
    """A learner with ``accepts_sparse`` gives on CSR rows the results of the same rows dense (to 1e-9)."""
    if not cls.accepts_sparse:
        return
    from olb.protocol import make_phases, run_stream

    sparse = sparse_multilabel_stream()
    assert not isinstance(sparse.X, np.ndarray), "the sparse stream is CSR"
    dense = Dataset(sparse.name, sparse.X.toarray(), sparse.Y, sparse.task, sparse.feature_names,
                    sparse.label_names, sparse.n_train)  # fmt: skip
    phases = make_phases(dense, "train_frozen", rng=np.random.default_rng(0))
    on_dense = run_stream(_make(cls, dense, seed=2), dense, phases, metrics=_metrics(cls))
    on_sparse = run_stream(_make(cls, sparse, seed=2), sparse, phases, metrics=_metrics(cls))
    for name, value in on_dense.metrics.items():
        assert abs(on_sparse.metrics[name] - value) <= 1e-9, (
            f"{cls.name}: {name} {on_sparse.metrics[name]} sparse, {value} dense"
        )


CHECKS: tuple[Callable, ...] = (
    check_declarations,
    check_invalid_hyperparameters_are_refused,
    check_predicts_before_learning_what_it_declares,
    check_same_seed_same_stream_and_pickling_mid_stream,
    check_predicting_does_not_change_the_model,
    check_keeps_no_reference_to_the_callers_arrays,
    check_initial_block_and_protocol_runs,
    check_sparse_rows_give_the_dense_results,
)


def yield_checks(cls: type[OnlineLearner]) -> Iterator[Callable[[], None]]:
    """Each check bound to ``cls`` (a ``functools.partial`` whose ``func.__name__`` names the check)."""
    for check in CHECKS:
        yield functools.partial(check, cls)


def check_learner(cls: type[OnlineLearner], verbose: bool = True) -> None:
    """Run every contract check on ``cls`` with its ``test_params``; an AssertionError names the first failure.
    When every check passes, one line says so (``verbose=False``: nothing)."""
    if not (isinstance(cls, type) and issubclass(cls, OnlineLearner)):
        raise TypeError(f"check_learner takes an OnlineLearner subclass, got {cls!r}")
    checks = list(yield_checks(cls))
    for check in checks:
        check()
    if verbose:
        print(f"check_learner: {cls.__name__} ({cls.name}) passed all {len(checks)} contract checks")
