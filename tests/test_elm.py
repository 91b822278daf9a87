"""OSML-ELM and ELM-OMLL*: the recursive least squares equals batch least squares; seeds fix the network."""

import numpy as np
import pytest

from olb.learners.elm import ELMOMLLStar, OSMLELM


def stream(seed=0, n=60, d=4, q=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    Y = (X[:, :q] + 0.3 * rng.normal(size=(n, q)) > 0.5).astype(np.int8)
    return X, Y


def run(learner, X, Y, n_init):
    learner.learn_many(X[:n_init], Y[:n_init])
    for x, y in zip(X[n_init:], Y[n_init:]):
        learner.learn_one(x, y)
    return learner


def test_osml_elm_recursion_equals_batch_least_squares():
    X, Y = stream()
    learner = run(OSMLELM(4, 3, seed=1, num_hidden=8), X, Y, n_init=20)  # initial block >= num_hidden
    H, T = learner.hidden(X), 2.0 * Y - 1.0
    np.testing.assert_allclose(learner.beta, np.linalg.lstsq(H, T, rcond=None)[0], atol=1e-8)
    np.testing.assert_allclose(learner.predict_one(X[0])["scores"], H[0] @ learner.beta)


def test_elm_omll_star_recursion_equals_batch_ridge_regression():
    X, Y = stream(1)
    learner = run(ELMOMLLStar(4, 3, seed=2, num_hidden=30, C=0.5), X, Y, n_init=5)  # fewer rows than units
    H, T = learner.hidden(X), 2.0 * Y - 1.0
    ridge = np.linalg.solve(H.T @ H + np.eye(30) / 0.5, H.T @ T)
    np.testing.assert_allclose(learner.beta, ridge, atol=1e-8)


def test_hidden_layer_is_the_random_sigmoid_layer():
    learner = OSMLELM(4, 3, seed=0, num_hidden=6)
    assert learner.input_weights.shape == (4, 6) and np.abs(learner.input_weights).max() <= 1
    assert learner.biases.min() >= 0 and learner.biases.max() <= 1
    x = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(learner.hidden(x), 1 / (1 + np.exp(-(x @ learner.input_weights + learner.biases))))


def test_labels_are_outputs_above_zero():
    X, Y = stream(2)
    learner = run(ELMOMLLStar(4, 3, seed=0, num_hidden=10, C=10.0), X, Y, n_init=12)
    out = learner.predict_one(X[3])
    np.testing.assert_array_equal(out["labels"], (out["scores"] > 0).astype(np.int8))


def test_learning_without_an_initial_block_starts_from_the_first_row():
    X, Y = stream(3)
    a = ELMOMLLStar(4, 3, seed=0, num_hidden=10, C=1.0)
    for x, y in zip(X, Y):
        a.learn_one(x, y)
    b = run(ELMOMLLStar(4, 3, seed=0, num_hidden=10, C=1.0), X, Y, n_init=1)
    np.testing.assert_allclose(a.beta, b.beta)


@pytest.mark.parametrize("cls", [OSMLELM, ELMOMLLStar])
def test_seed_fixes_the_result(cls):
    X, Y = stream(4)
    a, b, c = (run(cls(4, 3, seed=s, num_hidden=10), X, Y, n_init=15) for s in (7, 7, 8))
    np.testing.assert_array_equal(a.predict_one(X[0])["scores"], b.predict_one(X[0])["scores"])
    assert not np.array_equal(a.predict_one(X[0])["scores"], c.predict_one(X[0])["scores"])  # a random hidden layer


def test_defaults_follow_the_paper_protocol():
    learner = OSMLELM(4, 3)
    assert (learner.init_fraction, learner.feature_scaling, learner.num_hidden) == (0.2, "minmax", 200)
    with pytest.raises(ValueError, match="C=-1"):
        ELMOMLLStar(4, 3, C=-1)
