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


def numpy_rank_gradient(scores, y, smoothing):
    """The gradient as numpy computed it before it was compiled (the sums' order is what is pinned)."""
    relevant = np.asarray(y) > 0
    if relevant.all() or not relevant.any():
        return np.zeros_like(scores)
    u = np.clip((1.0 - (scores[relevant][:, None] - scores[~relevant][None, :])) / smoothing, 0.0, 1.0)
    u /= u.size
    grad = np.zeros_like(scores)
    grad[relevant] = -u.sum(axis=1)
    grad[~relevant] = u.sum(axis=0)
    return grad


def test_compiled_gradient_adds_in_numpys_order_bit_for_bit():
    rng = np.random.default_rng(0)
    for q in [*range(2, 40), 130, 300]:
        for share in (0.0, 0.05, 0.5, 0.95, 1.0):
            y = (rng.random(q) < share).astype(np.int8)
            y[: q // 40] = 0  # a lone irrelevant label at share 1.0 (numpy sums that column pairwise)
            scores, smoothing = rng.normal(size=q) * 0.5, float(rng.random() + 0.05)
            np.testing.assert_array_equal(
                smoothed_rank_gradient(scores, y, smoothing), numpy_rank_gradient(scores, y, smoothing)
            )


@pytest.mark.parametrize("sparse", [False, True])
def test_a_compiled_pass_learns_what_learn_one_learns_row_by_row(sparse):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 7)) * (rng.random((60, 7)) < 0.5)
    Y = (rng.random((60, 5)) < 0.4).astype(np.int8)
    by_row = OLANSGDStar(7, 5, eta=0.5, regularization=0.3, bias=True)
    for x, y in zip(X, Y):
        by_row.learn_one(x, y)
    whole = OLANSGDStar(7, 5, eta=0.5, regularization=0.3, bias=True)
    whole.learn_pass(sp.csr_array(X) if sparse else X, Y)
    np.testing.assert_array_equal(by_row.weights, whole.weights)
    assert (by_row.scale, by_row.t) == (whole.scale, whole.t) == (by_row.scale, 60)


def test_bad_smoothing_is_refused_by_name():
    with pytest.raises(ValueError, match="smoothing"):
        OLANSGDStar(3, 2, smoothing=0.0)


def test_doctests():
    assert doctest.testmod(olansgd).failed == 0
