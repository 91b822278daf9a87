"""Paper 002's linear and kernel learners: hand-computed steps, a plain reference loop, kernels, sparse rows."""

import numpy as np
import pytest
import scipy.sparse as sp

from olb.learners.linear import FALT, PA1BR, PA1BRKernel, PA2BR, PA2BRKernel, SALT, FALTKernel

X1, Y1 = np.array([1.0, 0.5]), np.array([1, 0, 1])
C1 = np.array([0.0, 0.5, -1.0, 0.5])  # ALT coefficients at W = 0: relevant 1/|Y|, irrelevant -1/|Y'|, c_0 = -sum


def reference_alt(X, Y, eta, repeats, delta=None):
    """ALT written plainly on a dense W: recompute scores and violators before every repeat (None delta: FALT)."""
    d, q = X.shape[1], Y.shape[1]
    W, G = np.zeros((d, q + 1)), np.zeros((d, q + 1))
    for x, y in zip(X, Y):
        for _ in range(repeats):
            s = x @ W
            rel, irr = np.flatnonzero(y) + 1, np.flatnonzero(y == 0) + 1
            c = np.zeros(q + 1)
            c[rel[s[rel] - s[0] < 1]] = 1 / max(len(rel), 1)
            c[irr[s[0] - s[irr] < 1]] = -1 / max(len(irr), 1)
            c[0] = -c[1:].sum()
            if not c.any():
                break
            g = np.outer(x, c)
            if delta is None:
                W += eta * g
            else:
                G += g**2
                W += eta * g / (delta + np.sqrt(G))
    return W


def stream(seed=0, n=40, d=5, q=4, density=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    Y = (rng.random((n, q)) < 0.4).astype(np.int8)
    Y[0] = 0  # an empty label set
    Y[1] = 1  # a full one
    return X, Y


def learn(learner, X, Y):
    for x, y in zip(X, Y):
        learner.learn_one(x, y)
    return learner


def test_falt_one_hand_computed_step():
    learner = FALT(2, 3, eta=0.5, repeats=1)
    learner.learn_one(X1, Y1)
    np.testing.assert_allclose(learner.W, 0.5 * np.outer(X1, C1))
    # scores after the step: 0.5 * ||x||^2 * c = 0.625 c; the margins are still violated, so a second repeat
    # takes the same step again
    twice = FALT(2, 3, eta=0.5, repeats=2)
    twice.learn_one(X1, Y1)
    np.testing.assert_allclose(twice.W, 2 * learner.W)
    out = twice.predict_one(X1)
    np.testing.assert_allclose(out["scores"], 1.25 * C1[1:])
    np.testing.assert_array_equal(out["labels"], [1, 0, 1])


def test_falt_repeats_stop_at_zero_loss():
    # eta = 2: after one step the scores are 2.5 c, every margin >= 1, so repeats beyond 1 change nothing
    once, many = FALT(2, 3, eta=2.0, repeats=1), FALT(2, 3, eta=2.0, repeats=7)
    once.learn_one(X1, Y1)
    many.learn_one(X1, Y1)
    np.testing.assert_array_equal(once.W, many.W)


def test_salt_one_hand_computed_step():
    learner = SALT(2, 3, eta=0.5, delta=1.0, repeats=1)
    learner.learn_one(X1, Y1)
    # g = x c^T: W = eta g / (delta + |g|), G = g^2
    expected = np.array([[0.0, 1 / 6, -1 / 4, 1 / 6], [0.0, 0.1, -1 / 6, 0.1]])
    np.testing.assert_allclose(learner.W, expected)
    np.testing.assert_allclose(learner.G, np.outer(X1, C1) ** 2)


@pytest.mark.parametrize("repeats", [1, 3, 10])
def test_falt_and_salt_equal_the_plain_reference_loop(repeats):
    X, Y = stream()
    np.testing.assert_allclose(
        learn(FALT(5, 4, eta=0.3, repeats=repeats), X, Y).W, reference_alt(X, Y, 0.3, repeats), atol=1e-12
    )
    salt = learn(SALT(5, 4, eta=0.3, delta=0.5, repeats=repeats), X, Y)
    np.testing.assert_allclose(salt.W, reference_alt(X, Y, 0.3, repeats, delta=0.5), atol=1e-12)


def test_salt_accumulates_every_repeats_squared_gradient():
    # two repeats at W = 0 then W = W_1: G is the sum of both squared gradients (same violators, same c)
    learner = SALT(2, 3, eta=0.1, delta=1.0, repeats=2)
    learner.learn_one(X1, Y1)
    np.testing.assert_allclose(learner.G, 2 * np.outer(X1, C1) ** 2)


def test_falt_kernel_with_a_linear_kernel_equals_falt():
    X, Y = stream(1)
    linear = learn(FALT(5, 4, eta=0.4, repeats=5), X, Y)
    kernel = learn(FALTKernel(5, 4, eta=0.4, repeats=5, kernel="linear"), X, Y)
    for x in stream(2)[0]:
        a, b = linear.predict_one(x), kernel.predict_one(x)
        np.testing.assert_allclose(a["scores"], b["scores"], atol=1e-10)
        np.testing.assert_array_equal(a["labels"], b["labels"])


def test_falt_kernel_one_hand_computed_rbf_step():
    learner = FALTKernel(2, 3, eta=0.5, repeats=1, sigma=2.0)
    learner.learn_one(X1, Y1)
    assert learner.support.size == 1
    x2 = np.array([0.0, 1.0])
    k = np.exp(-np.sum((X1 - x2) ** 2) / (2 * 2.0**2))
    np.testing.assert_allclose(learner.predict_one(x2)["scores"], k * 0.5 * C1[1:])
    # an example with zero loss adds no support vector
    learner.learn_one(X1, Y1)  # scores 0.5 c: still violated -> added
    big = FALTKernel(2, 3, eta=4.0, repeats=1, sigma=2.0)
    big.learn_one(X1, Y1)
    big.learn_one(X1, Y1)  # scores 4 c: every margin holds
    assert (learner.support.size, big.support.size) == (2, 1)


def test_support_vector_store_grows_past_its_capacity():
    X, Y = stream(3, n=150)
    learner = learn(FALTKernel(5, 4, eta=0.1, repeats=1, sigma=1.0), X, Y)
    assert learner.support.size > 64
    brute = sum(
        a * np.exp(-np.sum((sv - X[0]) ** 2) / 2)
        for sv, a in zip(learner.support.X[: learner.support.size], learner.support.coef[: learner.support.size])
    )
    np.testing.assert_allclose(learner.predict_one(X[0])["scores"], brute[1:])


@pytest.mark.parametrize(
    "cls, C, tau", [(PA1BR, 1.0, 0.5), (PA1BR, 0.25, 0.25), (PA2BR, 1.0, 0.4), (PA2BR, 0.25, 1 / 4)]
)
def test_pa_linear_hand_computed_steps(cls, C, tau):
    # ||x||^2 = 2, losses 1: PA-I tau = min(C, 1/2); PA-II tau = 1 / (2 + 1/(2C))
    x = np.array([1.0, 1.0])
    learner = cls(2, 3, C=C)
    learner.learn_one(x, Y1)
    t = np.array([1.0, -1.0, 1.0])
    np.testing.assert_allclose(learner.W, tau * np.outer(x, t))
    np.testing.assert_array_equal(learner.predict_one(x)["labels"], Y1)


@pytest.mark.parametrize("cls, C, tau", [(PA1BRKernel, 1.0, 1.0), (PA1BRKernel, 0.3, 0.3), (PA2BRKernel, 1.0, 2 / 3)])
def test_pa_kernel_hand_computed_steps(cls, C, tau):
    # RBF: k(x, x) = 1, losses 1: PA-I tau = min(C, 1); PA-II tau = 1 / (1 + 1/(2C))
    learner = cls(2, 3, C=C, sigma=1.0)
    learner.learn_one(X1, Y1)
    np.testing.assert_allclose(learner.predict_one(X1)["scores"], tau * np.array([1.0, -1.0, 1.0]))


def test_pa_kernel_stores_no_example_without_loss():
    learner = PA1BRKernel(2, 3, C=1.0, sigma=1.0)
    learner.learn_one(X1, Y1)  # tau = 1: every margin is then exactly 1
    learner.learn_one(X1, Y1)
    assert learner.support.size == 1


def test_pa_kernel_with_a_linear_kernel_equals_linear_pa():
    X, Y = stream(4)
    for lin, ker in (
        (PA1BR(5, 4, C=0.5), PA1BRKernel(5, 4, C=0.5, kernel="linear")),
        (PA2BR(5, 4, C=0.5), PA2BRKernel(5, 4, C=0.5, kernel="linear")),
    ):
        learn(lin, X, Y), learn(ker, X, Y)
        np.testing.assert_allclose(lin.predict_one(X[3])["scores"], ker.predict_one(X[3])["scores"], atol=1e-10)


@pytest.mark.parametrize(
    "cls, hyper", [(FALT, {"eta": 0.3, "repeats": 4}), (SALT, {"eta": 0.3, "repeats": 4}), (PA1BR, {}), (PA2BR, {})]
)
@pytest.mark.parametrize("bias", [False, True])
def test_sparse_and_dense_rows_give_identical_results(cls, hyper, bias):
    X, Y = stream(5, n=60, d=8, density=0.3)
    dense = learn(cls(8, 4, bias=bias, **hyper), X, Y)
    sparse = cls(8, 4, bias=bias, **hyper)
    for i in range(len(X)):
        sparse.learn_one(sp.csr_array(X[i : i + 1]), Y[i])
    np.testing.assert_array_equal(dense.W, sparse.W)
    row = sp.csr_array(X[7:8])
    np.testing.assert_array_equal(dense.predict_one(X[7])["scores"], sparse.predict_one(row)["scores"])


@pytest.mark.parametrize(
    "cls, hyper", [(FALT, {"eta": 0.3, "repeats": 4}), (SALT, {"eta": 0.3, "repeats": 4}), (PA1BR, {}), (PA2BR, {})]
)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_compiled_pass_learns_what_learn_one_learns_row_by_row(cls, hyper, bias, sparse):
    X, Y = stream(6, n=80, d=9, density=0.4)
    X[5] = 0.0  # an empty row
    by_row = learn(cls(9, 4, bias=bias, **hyper), X, Y)
    whole = cls(9, 4, bias=bias, **hyper)
    whole.learn_pass(sp.csr_array(X) if sparse else X, Y)
    np.testing.assert_array_equal(by_row.W, whole.W)
    if cls is SALT:
        np.testing.assert_array_equal(by_row.G, whole.G)


def test_the_protocol_gives_a_training_phase_that_does_not_predict_to_learn_pass(monkeypatch):
    from olb.data.dataset import Dataset
    from olb.protocol import make_phases, run_stream

    X, Y = stream(7, n=50, d=6, density=0.5)
    data = Dataset("toy", X, Y, "multilabel", tuple("abcdef"), tuple("wxyz"), n_train=35)
    results, calls = [], []
    for passes in (True, False):
        learner = FALT(6, 4, eta=0.3, repeats=3)
        learner.learns_passes = passes
        monkeypatch.setattr(learner, "learn_pass", lambda X, Y, f=learner.learn_pass: calls.append(len(Y)) or f(X, Y))
        phases = make_phases(data, "train_frozen", loops=2, rng=np.random.default_rng(0))
        results.append((run_stream(learner, data, phases, ("rank_loss",), curve_every=5), learner.W))
    assert calls == [35, 35]  # both training loops, once each, and only with learns_passes
    (with_passes, w_passes), (by_row, w_rows) = results
    np.testing.assert_array_equal(w_passes, w_rows)
    assert with_passes.metrics == by_row.metrics
    np.testing.assert_array_equal(with_passes.curve["value"], by_row.curve["value"])


def test_bias_adds_a_learned_intercept():
    learner = FALT(2, 3, eta=0.5, repeats=1, bias=True)
    learner.learn_one(X1, Y1)
    np.testing.assert_allclose(learner.W[2], 0.5 * C1 * 1.0)  # the constant feature 1 gets the same step


def test_predicting_before_learning_is_all_irrelevant_and_does_not_change_the_model():
    learner = SALT(2, 3, eta=0.5, repeats=3)
    out = learner.predict_one(X1)
    np.testing.assert_array_equal(out["labels"], [0, 0, 0])  # ties go to irrelevant
    assert not learner.W.any()


@pytest.mark.parametrize(
    "cls, bad, message",
    [
        (FALT, {"eta": 0}, "eta=0"),
        (SALT, {"delta": -1.0}, "delta=-1.0"),
        (FALTKernel, {"kernel": "poly"}, "kernel='poly'"),
        (PA1BR, {"C": 0.0}, "C=0.0"),
        (FALT, {"repeats": 0}, "repeats=0"),
        (FALT, {"tau": 3}, "unknown hyperparameter"),
    ],
)
def test_bad_hyperparameters_are_named(cls, bad, message):
    with pytest.raises(ValueError, match=message):
        cls(2, 3, **bad)
