"""Paper 000's boosters: gradients, weights, Hedge, costs, validation, determinism."""

import numpy as np
import pytest

from olb.learners.boosting.mlr import AdaOLMR, OnlineBMR
from olb.learners.boosting.rounds import logistic_rank_gradient


def logistic_loss(s, relevant):
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    return np.log1p(np.exp(s[irr][None, :] - s[rel][:, None])).sum() / (rel.size * irr.size)


def numerical_gradient(f, s, h=1e-6):
    return np.array([(f(s + h * e) - f(s - h * e)) / (2 * h) for e in np.eye(len(s))])


@pytest.mark.parametrize("k,n_rel", [(3, 1), (6, 2), (14, 11)])
def test_logistic_gradient_matches_numerical_derivative(k, n_rel):
    rng = np.random.default_rng(k)
    relevant = np.zeros(k, bool)
    relevant[rng.choice(k, n_rel, replace=False)] = True
    S = rng.normal(size=(4, k)) * 2
    G = logistic_rank_gradient(S, relevant)
    for s, g in zip(S, G):
        assert np.allclose(g, numerical_gradient(lambda v: logistic_loss(v, relevant), s), atol=1e-7)
        assert g.sum() == pytest.approx(0.0, abs=1e-12)  # paper 000, eq. (9)
        assert (g[relevant] < 0).all() and (g[~relevant] > 0).all()


def test_adaolmr_alpha_slope_is_the_derivative_of_the_logistic_loss_along_h():
    """f'(alpha) = c^{i+1} . h^i (paper 000, section 3.2), checked on a trained model's state."""
    rng = np.random.default_rng(0)
    model = AdaOLMR(n_features=5, n_labels=4, seed=0, num_learners=3)
    X, Y = rng.normal(size=(30, 5)), rng.integers(0, 2, (30, 4))
    for x, y in zip(X, Y):
        model.predict_one(x)
        model.learn_one(x, y)
    x, relevant = X[0], np.array([True, False, True, False])
    H, states = model._experts(x)
    G = logistic_rank_gradient(states, relevant)
    for i in range(3):

        def f(a, i=i):
            return logistic_loss(states[i] + a * H[i], relevant)

        assert G[i + 1] @ H[i] == pytest.approx((f(model.alpha[i] + 1e-6) - f(model.alpha[i] - 1e-6)) / 2e-6, abs=1e-6)


def test_adaolmr_weights_stay_projected_and_hedge_is_a_distribution():
    rng = np.random.default_rng(1)
    model = AdaOLMR(n_features=6, n_labels=5, seed=1, num_learners=8)
    for _ in range(200):
        x, y = rng.normal(size=6), rng.integers(0, 2, 5)
        model.predict_one(x)
        model.learn_one(x, y)
    assert (np.abs(model.alpha) <= 2).all()
    assert model.hedge.sum() == pytest.approx(1.0) and (model.hedge >= 0).all()
    assert model.t == 200


def test_onlinebmr_costs_favor_relevant_labels_and_weights_are_nonnegative():
    model = OnlineBMR(n_features=4, n_labels=6, seed=0, num_learners=10, gamma=0.1)
    relevant = np.array([1, 0, 1, 0, 0, 0], bool)
    states = np.zeros((11, 6))
    states[1:] = np.cumsum(np.full((10, 6), 1 / 6), axis=0)
    C = model.potential.cost_vectors(states[:-1], relevant, np.arange(9, -1, -1))  # horizons N - i
    assert C.shape == (10, 6)
    assert (C[:, relevant].max(axis=1) <= C[:, ~relevant].min(axis=1)).all()  # proper: relevant cost less


def test_examples_without_pairs_change_nothing():
    model = AdaOLMR(n_features=3, n_labels=3, seed=0, num_learners=4)
    x = np.ones(3)
    model.predict_one(x)
    model.learn_one(x, np.array([1, 1, 1]))
    model.learn_one(x, np.array([0, 0, 0]))
    assert (model.alpha == 0).all() and model.weak.n_nodes == 4


@pytest.mark.parametrize(
    "cls,params,match",
    [
        (OnlineBMR, {"gamma": 1.5}, r"onlinebmr: gamma=1.5 is out of range; allowed: float with 0.0 < value < 1.0"),
        (OnlineBMR, {"gamma": 0.0}, r"gamma=0.0 is out of range"),
        (AdaOLMR, {"num_learners": -1}, r"adaolmr: num_learners=-1 is out of range; allowed: int with 1 <= value"),
        (AdaOLMR, {"num_learners": 2.5}, r"num_learners=2.5 is not an integer"),
        (AdaOLMR, {"gamma": 0.1}, r"adaolmr: unknown hyperparameter\(s\) \['gamma'\]"),
        (AdaOLMR, {"weak_learner": "svm"}, r"weak_learner='svm' is not allowed; allowed: one of 'vfdt'"),
        (OnlineBMR, {"invalid_baseline": "ignore"}, r"invalid_baseline='ignore' is not allowed"),
    ],
)
def test_bad_hyperparameters_are_rejected_by_name(cls, params, match):
    with pytest.raises(ValueError, match=match):
        cls(n_features=3, n_labels=3, seed=0, **params)
