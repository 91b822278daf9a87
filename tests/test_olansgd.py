"""OLANSGD* (the labelled stand-in for OLANSGD): its gradient against finite differences, sparse = dense."""

import doctest

import numpy as np
import pytest
import scipy.sparse as sp

from olb.learners.linear import olansgd
from olb.learners.linear.olansgd import OLANSGDStar, smoothed_rank_gradient


def smoothed_rank_loss(scores, y, gamma):
    relevant = y > 0
    z = 1.0 - (scores[relevant][:, None] - scores[~relevant][None, :])
    u = np.clip(z / gamma, 0.0, 1.0)
    return float(np.mean(u * z - gamma * u**2 / 2))


@pytest.mark.parametrize("seed", range(5))
def test_gradient_matches_finite_differences_of_the_smoothed_rank_loss(seed):
    rng = np.random.default_rng(seed)
    scores, y = rng.normal(size=6), np.array([1, 0, 1, 0, 0, 1])
    grad = smoothed_rank_gradient(scores, y, 0.5)
    eps = 1e-6
    numeric = [
        (smoothed_rank_loss(scores + eps * e, y, 0.5) - smoothed_rank_loss(scores - eps * e, y, 0.5)) / (2 * eps)
        for e in np.eye(6)
    ]
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


def test_no_pairs_no_gradient():
    assert not smoothed_rank_gradient(np.ones(3), np.array([1, 1, 1]), 0.1).any()


def run(rows, Y, **hyper):
    learner = OLANSGDStar(rows[0].shape[-1], Y.shape[1], **hyper)
    for x, y in zip(rows, Y):
        learner.learn_one(x, y)
    return learner


def test_sparse_and_dense_rows_give_the_same_model_and_the_shrinkage_is_exact():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 8)) * (rng.random((60, 8)) < 0.4)
    Y = (rng.random((60, 3)) < 0.4).astype(int)
    dense = run(list(X), Y, bias=True, regularization=0.05)
    sparse = run([sp.csr_array(x[None, :]) for x in X], Y, bias=True, regularization=0.05)
    np.testing.assert_allclose(dense.scale * dense.weights, sparse.scale * sparse.weights)
    # one step by hand: W <- (1 - eta_t lam) W - eta_t x grad^T
    W = dense.scale * dense.weights
    x, y = rng.normal(size=8), np.array([1, 0, 0])
    step = 0.1 / np.sqrt(61)
    grad = smoothed_rank_gradient(np.append(x, 1.0) @ W, y, 0.1)
    dense.learn_one(x, y)
    np.testing.assert_allclose(
        dense.scale * dense.weights, (1 - step * 0.05) * W - step * np.outer(np.append(x, 1), grad)
    )


def test_bad_smoothing_is_refused_by_name():
    with pytest.raises(ValueError, match="smoothing"):
        OLANSGDStar(3, 2, smoothing=0.0)


def test_doctests():
    assert doctest.testmod(olansgd).failed == 0
