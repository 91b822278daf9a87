"""Paper 004's boosters TopOpt and TopAda: unbiased costs, exact potentials, validation, determinism, protocol."""

import itertools
import math

import numpy as np
import pytest

from olb.learners.boosting import mlr as mlr_boosting
from olb.feedback import TopKFeedback, observed_pairs, ranking
from olb.learners.boosting.exploration import UniformExploration, importance_weights
from olb.learners.boosting.rounds import logistic_rank_gradient, pair_logistic_gradients, pair_rank_losses
from olb.learners.boosting.potentials import baseline
from olb.learners.boosting.topk import TopAda, TopOpt
from olb.learners.registry import get_algorithm
from olb.run import CellSpec, run_cell


def _outcomes(scheme, order):
    """Every top-k set the explored ranking can have, with its exact probability."""
    m, k, rho = scheme.m, scheme.k, scheme.rho
    yield order[:k], 1.0 - rho
    if isinstance(scheme, UniformExploration):
        for top in itertools.combinations(range(m), k):
            yield np.array(top), rho / math.comb(m, k)
    else:
        for i1, j1, i2, j2 in itertools.product(range(k), range(k, m), range(k), range(k, m)):
            o = order.copy()
            o[[i1, j1]] = o[[j1, i1]]
            o[[i2, j2]] = o[[j2, i2]]
            yield o[:k], rho / (k * (m - k)) ** 2


def _expected(model, states, relevant, quantity):
    """E[quantity(a, b, w)] over the exploration of sigma(states[N]), with the model's exact weights."""
    order = ranking(states[-1])
    in_top = np.zeros(model.n_labels, bool)
    in_top[order[: model.k]] = True
    total = 0.0
    for top, p in _outcomes(model.explorer, order):
        a, b = observed_pairs(TopKFeedback(top, relevant[top]))
        if a.size:
            w = importance_weights(model.explorer.pair_probabilities(in_top, a, b), clip=False)
            total = total + p * quantity(a, b, w)
    return total


def _state(N, m, seed):
    rng = np.random.default_rng(seed)
    H = rng.dirichlet(np.ones(m), size=N)
    states = np.zeros((N + 1, m))
    states[1:] = np.cumsum(H, axis=0)
    relevant = np.zeros(m, bool)
    relevant[rng.choice(m, 3, replace=False)] = True
    return H, states, relevant


@pytest.mark.parametrize(
    "exploration,m,k", [("uniform", 6, 3), ("uniform", 7, 2), ("single_swap", 6, 3), ("single_swap", 7, 4)]
)
def test_topopt_costs_are_unbiased_estimates_of_the_full_surrogate_costs(exploration, m, k):
    N = 4
    model = TopOpt(
        n_features=2,
        n_labels=m,
        seed=0,
        num_learners=N,
        gamma=0.2,
        k=k,
        rho=0.2,
        exploration=exploration,
        clip_probabilities=False,
    )
    _, states, relevant = _state(N, m, seed=m + k)
    expected = _expected(model, states, relevant, lambda a, b, w: model._cost_vectors(states, a, b, w))
    A, B = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    a_all, b_all = np.repeat(A, B.size), np.tile(B, A.size)
    full = np.stack([model.potential.cost_vector(states[i], a_all, b_all, N - 1 - i) for i in range(N)])
    assert np.allclose(expected, full, atol=1e-12)


@pytest.mark.parametrize("exploration,m,k", [("uniform", 6, 3), ("single_swap", 6, 3), ("single_swap", 8, 3)])
def test_topada_costs_and_rank_losses_are_unbiased(exploration, m, k):
    N = 5
    model = TopAda(
        n_features=2,
        n_labels=m,
        seed=0,
        num_learners=N,
        k=k,
        rho=0.2,
        exploration=exploration,
        clip_probabilities=False,
    )
    _, states, relevant = _state(N, m, seed=m)
    states[3, :2] = states[3, 2]  # ties count as mis-ordered in the Hedge loss
    costs = _expected(model, states, relevant, lambda a, b, w: pair_logistic_gradients(states, a, b, w)[:-1])
    n_pairs = relevant.sum() * (~relevant).sum()
    assert np.allclose(costs, n_pairs * logistic_rank_gradient(states, relevant)[:-1], atol=1e-12)
    losses = _expected(model, states, relevant, lambda a, b, w: pair_rank_losses(states[1:], a, b, w))
    A, B = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    unweighted = (states[1:, None, B] >= states[1:, A, None]).sum(axis=(1, 2))
    assert np.allclose(losses, unweighted, atol=1e-12)


def test_topopt_potential_costs_match_monte_carlo():
    """c[l] = sum_p w_p E[(1 + (s + e_l + X)[b_p] - (s + e_l + X)[a_p])_+], X ~ n draws from u_{a_p}^gamma."""
    m, N, gamma = 5, 6, 0.2
    model = TopOpt(n_features=2, n_labels=m, seed=0, num_learners=N, gamma=gamma, k=3, rho=0.1)
    s = np.array([1.0, 2.0 / 3.0, 2.5, 0.0, 1.5])
    a, b, w = np.array([0, 2, 0]), np.array([1, 1, 3]), np.array([1.0, 2.0, 0.5])
    rng = np.random.default_rng(0)
    n_samples = 200_000
    for n in (0, 2, 5):
        exact = model.potential.cost_vector(s, a, b, n, w)
        mc = np.zeros(m)
        for ap, bp, wp in zip(a, b, w):
            X = rng.multinomial(n, baseline(m, [ap], gamma), size=n_samples)
            S = s + X  # (samples, m); adding e_l shifts the pair only when l is a or b
            for lab in range(m):
                diff = S[:, bp] - S[:, ap] + (lab == bp) - (lab == ap)
                mc[lab] += wp * np.maximum(0.0, 1.0 + diff).mean()
        assert np.allclose(exact, mc, atol=0.02), (n, exact, mc)


def test_registry_and_hyperparameters():
    assert get_algorithm("topopt") is TopOpt and get_algorithm("topada") is TopAda
    for cls in (TopOpt, TopAda):
        assert {"num_learners", "rho", "k", "exploration"} <= set(cls.params) and cls.feedback == "topk"
    assert "gamma" in TopOpt.params and "gamma" not in TopAda.params
    assert "loops" not in TopOpt.params  # a protocol setting (CellSpec.loops), not a hyperparameter


@pytest.mark.parametrize(
    "cls,params,match",
    [
        (TopOpt, {"k": 6}, r"topopt: k=6 must be smaller than the number of labels \(6\)"),
        (TopAda, {"k": 9}, r"topada: k=9 must be smaller than the number of labels \(6\)"),
        (TopAda, {"rho": 0.0}, r"rho=0.0 is out of range"),
        (TopAda, {"rho": 1.0}, r"rho=1.0 is out of range"),
        (TopOpt, {"exploration": "single_swap", "k": 2}, r"single_swap' needs k >= 3 and rho < 0.25"),
        (TopAda, {"exploration": "single_swap", "rho": 0.3}, r"single_swap' needs k >= 3 and rho < 0.25"),
        (TopAda, {"exploration": "d_swap"}, r"exploration='d_swap' is not allowed"),
        (TopOpt, {"gamma": 1.0}, r"gamma=1.0 is out of range"),
        (TopAda, {"gamma": 0.1}, r"unknown hyperparameter\(s\) \['gamma'\]"),
    ],
)
def test_bad_settings_fail_before_any_tree_is_built(monkeypatch, cls, params, match):
    monkeypatch.setattr(mlr_boosting, "build_weak_learners", lambda *a, **kw: pytest.fail("trees were built"))
    with pytest.raises(ValueError, match=match):
        cls(n_features=3, n_labels=6, seed=0, **params)


def test_check_params_names_every_cross_parameter_problem_before_construction():
    from olb.learners.base import StreamShape

    params = TopOpt.validate({"k": 6, "exploration": "single_swap", "rho": 0.3})
    problems = TopOpt.check_params(params, StreamShape(n_features=3, n_labels=6))
    assert len(problems) == 2
    assert problems[0].startswith("k=6 must be smaller than the number of labels (6)")
    assert "single_swap" in problems[1] and "rho=0.3" in problems[1]
    assert TopAda.check_params(TopAda.validate({"k": 2}), StreamShape(3, 6)) == []


def test_k_too_large_fails_in_run_cell_naming_k_and_the_label_count():
    with pytest.raises(ValueError, match=r"k=6 must be smaller than the number of labels \(6\)"):
        run_cell(CellSpec("topada", "emotions", params={"k": 6, "num_learners": 2}))


@pytest.mark.parametrize("cls", [TopOpt, TopAda])
def test_prediction_is_the_explored_ranking_without_ties(cls):
    rng = np.random.default_rng(0)
    model = cls(n_features=4, n_labels=6, seed=1, num_learners=4, rho=0.5)
    for _ in range(30):
        x, y = rng.normal(size=4), rng.integers(0, 2, 6)
        scores = model.predict_one(x)
        assert sorted(scores.tolist()) == [1, 2, 3, 4, 5, 6]
        assert ranking(scores)[:3].tolist() == model._round[3].tolist()
        model.learn_one(x, TopKFeedback.from_prediction(scores, y, model.k))


def test_without_exploration_topopt_ranks_by_its_last_expert():
    rng = np.random.default_rng(0)
    model = TopOpt(n_features=4, n_labels=6, seed=1, num_learners=4, rho=1e-12)
    for _ in range(40):
        x, y = rng.normal(size=4), rng.integers(0, 2, 6)
        scores = model.predict_one(x)
        _, states = model._experts(x)
        assert ranking(scores).tolist() == ranking(states[-1]).tolist()
        model.learn_one(x, TopKFeedback.from_prediction(scores, y, model.k))


def test_learn_one_accepts_only_the_feedback_on_its_own_ranking():
    model = TopAda(n_features=2, n_labels=5, seed=0, num_learners=2, rho=0.01)
    x = np.zeros(2)
    scores = model.predict_one(x)
    with pytest.raises(TypeError, match="learns from TopKFeedback"):
        model.learn_one(x, np.array([1, 0, 0, 0, 0]))
    wrong = ranking(scores)[::-1][:3]
    with pytest.raises(ValueError, match="feedback on labels"):
        model.learn_one(x, TopKFeedback(wrong, [True, False, False]))
    model.learn_one(x, TopKFeedback.from_prediction(scores, np.array([1, 0, 0, 0, 0]), 3))
    with pytest.raises(RuntimeError, match="preceding predict_one"):
        model.learn_one(x, TopKFeedback.from_prediction(scores, np.array([1, 0, 0, 0, 0]), 3))


def test_topada_steps_are_bounded_and_hedge_survives_huge_weights():
    rng = np.random.default_rng(2)
    m = 14
    model = TopAda(n_features=5, n_labels=m, seed=2, num_learners=6, k=5, rho=0.01, clip_probabilities=False)
    for t in range(1, 301):
        x, y = rng.normal(size=5), rng.integers(0, 2, m)
        before = model.alpha.copy()
        scores = model.predict_one(x)
        model.learn_one(x, TopKFeedback.from_prediction(scores, y, model.k))
        assert (np.abs(model.alpha - before) <= 8 * 0.01 * np.sqrt(2) / m**2 / np.sqrt(t) + 1e-15).all()
    assert model.t == 300 and (np.abs(model.alpha) <= 2).all()
    assert np.isfinite(model.hedge).all() and model.hedge.sum() == pytest.approx(1.0)


def test_run_cell_with_loops_is_deterministic_and_learns():
    spec = CellSpec("topopt", "emotions", seed=1, loops=2, params={"num_learners": 4, "gamma": 0.2, "rho": 0.1})
    first, second = run_cell(spec), run_cell(spec)
    assert first.metrics == second.metrics
    assert list(first.stream.phases) == ["train_loop1", "train_loop2", "test"]
    assert 0.0 < first.metrics["rank_loss"] < 0.4
