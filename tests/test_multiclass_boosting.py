"""Paper 001's multiclass boosters (OnlineMBBM, Adaboost.OLM) and the Table 1 baselines (best VFDT, Oza)."""

import dataclasses

import numpy as np
import pytest

from olb.learners.base import OnlineLearner
from olb.learners.boosting.baselines import BestVFDT, OzaBoost
from olb.learners.boosting.multiclass import (
    AdaBoostOLM,
    MBBMCosts,
    OnlineMBBM,
    logistic_cost_matrix,
    logistic_loss,
)
from olb.learners.boosting.potentials import baseline, mbbm_cost_matrix
from olb.learners.boosting.rounds import alpha_gradient
from olb.protocol import make_phases, run_stream
from olb.learners.registry import get_algorithm
from olb.run import CellSpec, run_cell

ALGORITHMS = (AdaBoostOLM, OnlineMBBM, BestVFDT, OzaBoost)


def brute_force_cost_matrix(s, n, gamma, samples, rng):
    """C[r, l] = P(error | votes s + e_l, n more votes from u^r) by plain Monte Carlo (ties are errors)."""
    k = len(s)
    C = np.empty((k, k))
    for r in range(k):
        X = rng.multinomial(n, baseline(k, [r], gamma), size=samples)
        for l in range(k):
            final = s + np.eye(k)[l] + X
            C[r, l] = (np.delete(final, r, axis=1).max(axis=1) >= final[:, r]).mean()
    return C


# ------------------------------------------------------------------ potentials (OnlineMBBM's costs)
@pytest.mark.parametrize(
    "s, n, gamma",
    [
        ((0, 0, 0), 6, 0.1),
        ((2, 1, 0), 5, 0.2),
        ((3, 0, 1, 1), 7, 0.1),
        ((1, 1, 0, 4), 3, 0.3),
    ],
)
def test_mbbm_costs_match_brute_force_monte_carlo(s, n, gamma):
    """The memoized exact cost matrix agrees with 20,000-sample Monte Carlo within 5 standard errors."""
    s = np.array(s, np.int64)
    C, W, D = MBBMCosts(len(s), gamma).get(s, n)
    mc = brute_force_cost_matrix(s, n, gamma, 20_000, np.random.default_rng(1))
    se = np.sqrt(np.maximum(mc * (1 - mc), 1e-4) / 20_000)
    assert np.all(np.abs(C - mc) <= 5 * se + 1e-12)
    assert W == pytest.approx(C.sum(axis=1) - len(s) * np.diag(C))
    assert np.allclose(D * W[:, None], np.where(C - np.diag(C)[:, None] < 1e-12, 0, C - np.diag(C)[:, None]))
    assert np.allclose(D.sum(axis=1), (W > 0).astype(float)) and np.all(np.diag(D) == 0) and (D >= 0).all()


def test_mbbm_canonical_states_give_the_direct_cost_matrix():
    """Sorting, shifting and clipping the votes (and the decided shortcut) change no entry."""
    rng = np.random.default_rng(0)
    costs = MBBMCosts(4, 0.1)
    for _ in range(60):
        n = int(rng.integers(0, 12))
        s = rng.integers(0, 3 * n + 6, size=4).astype(np.int64)
        C = costs.get(s, n)[0]
        assert np.allclose(C, mbbm_cost_matrix(s.astype(float), n, 0.1), atol=1e-12)
        assert costs.get(s, n)[0] is C  # second lookup is a cache hit


def test_mbbm_monte_carlo_option_estimates_the_exact_costs():
    s = np.array([2, 0, 1], np.int64)
    exact = MBBMCosts(3, 0.2).get(s, 6)[0]
    estimate = MBBMCosts(3, 0.2, samples=4000, rng=np.random.default_rng(3)).get(s, 6)[0]
    assert np.abs(estimate - exact).max() < 0.05


def test_mbbm_horizons_follow_the_paper_or_the_authors():
    paper = OnlineMBBM(2, 3, seed=0, num_learners=4)
    authors = OnlineMBBM(2, 3, seed=0, num_learners=4, authors_horizon=True)
    assert paper.horizons == [3, 2, 1, 0] and authors.horizons == [4, 3, 2, 1]


# ------------------------------------------------------------------ Adaboost.OLM's logistic costs and alpha
def numerical_derivative(f, a, h=1e-6):
    return (f(a + h) - f(a - h)) / (2 * h)


def test_logistic_cost_rows_are_the_loss_gradients():
    s = np.array([0.3, -1.2, 0.8, 0.0])
    C = logistic_cost_matrix(s)
    for r in range(4):
        grad = [numerical_derivative(lambda a: logistic_loss(s + a * np.eye(4)[l], r), 0.0) for l in range(4)]
        assert C[r] == pytest.approx(grad, abs=1e-7)
    assert np.allclose(C.sum(axis=1), 0) and (np.diag(C) < 0).all()


@pytest.mark.parametrize("y", [0, 2])
def test_alpha_gradient_is_the_derivative_of_the_logistic_loss(y):
    rng = np.random.default_rng(y)
    k, N = 4, 12
    S = rng.normal(size=(N, k))
    labels = rng.integers(0, k, N)
    labels[:4] = y  # both cases: the learner predicts the true label, or another one
    alpha = rng.uniform(-2, 2, N)
    got = alpha_gradient(S, labels, alpha, y)
    for i in range(N):

        def f(a, i=i):
            return logistic_loss(S[i] + a * np.eye(k)[labels[i]], y)

        assert got[i] == pytest.approx(numerical_derivative(f, alpha[i]), abs=1e-7)
    authors = alpha_gradient(S, labels, alpha, y, authors=True)
    right = labels == y
    assert np.allclose(authors[~right], got[~right])
    assert np.allclose(authors[right], -(k - 1) - got[right])  # the authors' derivative (docs/authors_code.md)


def test_adaolm_weak_predictions_minimize_the_expected_logistic_cost():
    model = AdaBoostOLM(3, 4, seed=1, num_learners=6)
    model.alpha = np.array([0.5, -0.3, 1.2, 2.0, 0.1, -1.0])
    H = np.random.default_rng(2).dirichlet(np.ones(4), size=6)
    labels, states, weights = model._weak_predictions(H, np.zeros((6, 4)))
    s = np.zeros(4)
    for i in range(6):
        C = logistic_cost_matrix(s)
        assert labels[i] == np.argmin(H[i] @ C)
        assert weights[i] == pytest.approx(-np.diag(C) / 3)
        s[labels[i]] += model.alpha[i]
        assert states[i + 1] == pytest.approx(s)


def test_adaolm_alpha_is_projected_and_hedge_is_a_distribution():
    rng = np.random.default_rng(0)
    model = AdaBoostOLM(3, 3, seed=0, num_learners=5)
    for _ in range(200):
        x = rng.normal(size=3)
        model.predict_one(x)
        model.learn_one(x, int(x[0] > 0) + int(x[1] > 0))
    assert np.all(np.abs(model.alpha) <= 2.0)
    assert model.hedge.sum() == pytest.approx(1.0) and (model.hedge >= 0).all()


def test_authors_weights_follow_their_code():
    ada = AdaBoostOLM(2, 3, seed=0, num_learners=4, authors_weights=True)
    w = ada._importance_weights(np.array([0.5, 0.5, 0.0, 0.25]))
    assert w[0] == 5.0 and w[2] == 1e-10
    assert w[1] == pytest.approx(ada.weight_constants[1] * 0.5)
    mbbm = OnlineMBBM(2, 3, seed=0, num_learners=2, authors_weights=True)
    assert mbbm._importance_weights(np.array([1.0, 0.0]))[0] == pytest.approx(0.1 * mbbm.weight_constants[0] / 2)
    assert 5 <= mbbm.weight_constants.min() and mbbm.weight_constants.max() <= 200


# ------------------------------------------------------------------ learners on real data
def subset(dataset, n):
    rows = np.arange(n) if isinstance(n, int) else np.asarray(n)
    return dataclasses.replace(dataset, X=dataset.X[rows], Y=dataset.Y[rows], n_train=None)


def stream(cls, dataset, seed=0, **hyper):
    learner = cls(dataset.n_features, dataset.n_labels, seed=seed, **hyper)
    phases = make_phases(dataset, "prequential_last20", 1, np.random.default_rng(seed))
    return learner, run_stream(learner, dataset, phases)


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_mushroom_nominal_codes_and_missing_values(load, cls):
    """Mushroom: 22 nominal attributes as category codes, stalk-root '?' as NaN; every learner copes."""
    mushroom = load("mushroom")
    missing = np.isnan(mushroom.X).any(axis=1)
    data = subset(mushroom, np.r_[np.flatnonzero(missing)[:150], np.flatnonzero(~missing)[:250]])
    assert np.isnan(data.X).any() and all(cats is not None for cats in data.nominal)
    learner, result = stream(cls, data, num_learners=5)
    assert result.metrics["accuracy"] >= 0.8  # majority class: 0.52
    assert learner.predict_one(data.X[0]) in (0, 1)


def test_run_cell_uses_the_prequential_protocol(data_dir):
    spec = CellSpec("onlinembbm", "balance", seed=1, params={"num_learners": 5, "gamma": 0.2}, data_dir=str(data_dir))
    result = run_cell(spec)
    assert spec.resolved_protocol() == "prequential_last20"
    assert result.stream.phases["last20"]["n_examples"] == 125
    assert 0.4 <= result.metrics["accuracy"] <= 1.0
    assert run_cell(spec).metrics == result.metrics


def test_mice_missing_values(load):
    mice = subset(load("mice"), 200)
    assert np.isnan(mice.X).any()
    _, result = stream(AdaBoostOLM, mice, num_learners=3, authors_weights=True)
    assert 0.0 <= result.metrics["accuracy"] <= 1.0


# ------------------------------------------------------------------ baselines
def test_best_vfdt_reports_the_best_tree_in_hindsight(load):
    balance = subset(load("balance"), 200)
    learner, result = stream(BestVFDT, balance, num_learners=6)
    report = learner.stream_report(40)  # prequential_last20 of 200 examples scores the last 40
    accuracies = learner.tree_accuracies(40)
    assert report["best_tree_accuracy"] == accuracies.max() >= result.metrics["accuracy"] - 0.2
    assert result.metrics["best_tree_accuracy"] == report["best_tree_accuracy"]  # recorded by the protocol
    assert learner.correct.sum() == pytest.approx(learner.tree_accuracies(200).sum() * 200)


@pytest.mark.parametrize("cls", ALGORITHMS)
@pytest.mark.parametrize("protocol", ["prequential_last20", "prequential_shuffled"])
def test_prequential_passes_are_the_row_by_row_stream(load, cls, protocol):
    """A phase given whole to predict_learn_pass (BestVFDT: one compiled loop, its arrays grown between blocks of
    rows) gives the very metrics, curve and trees of the protocol's predict_one then learn_one row by row."""
    cars = subset(load("cars"), np.random.default_rng(0).permutation(1728)[:600])
    row_by_row = type(f"RowByRow{cls.__name__}", (cls,), {"predicts_passes": False})
    runs = []
    for learner_cls in (cls, row_by_row):
        learner = learner_cls(cars.n_features, cars.n_labels, seed=3, num_learners=7)
        phases = make_phases(cars, protocol, 1, np.random.default_rng(3))
        runs.append((learner, run_stream(learner, cars, phases, curve_every=7)))
    (fast, passes), (slow, rows) = runs
    assert passes.metrics == rows.metrics
    for key in ("step", "phase", "value"):
        np.testing.assert_array_equal(passes.curve[key], rows.curve[key])
    forest, other = (getattr(m, "weak", None) or m.trees for m in (fast, slow))
    assert forest.n_nodes == other.n_nodes > 7 * 3  # the trees split, and alike
    for name in ("split_feature", "threshold", "class_mass"):
        n = forest.n_nodes
        np.testing.assert_array_equal(getattr(forest.arrays, name)[:n], getattr(other.arrays, name)[:n])
    for name in ("lambda_sc", "lambda_sw", "alpha", "hedge", "t"):  # Oza's error counts, the boosters' weights
        np.testing.assert_array_equal(getattr(fast, name, None), getattr(slow, name, None))
    x = cars.X[5].copy()
    assert fast.predict_one(x) == slow.predict_one(x)


@pytest.mark.parametrize(
    "options",
    [
        {"authors_weights": True},
        {"authors_gradient": True, "weak_prediction": "argmax"},
        {"authors_weights": True, "authors_gradient": True, "num_covariates": 3},
    ],
)
def test_adaolms_compiled_pass_is_the_row_by_row_stream_under_every_option(load, options):
    """Adaboost.OLM's compiled pass (its tie breaks and Hedge's draws drawn ahead) keeps the row-by-row stream's
    predictions, trees, alpha and Hedge under the authors' weights and gradient and the argmax labels too."""
    cars = subset(load("cars"), np.random.default_rng(1).permutation(1728)[:300])
    fast, slow = (AdaBoostOLM(cars.n_features, cars.n_labels, seed=5, num_learners=6, **options) for _ in range(2))
    row_by_row = OnlineLearner.predict_learn_pass(slow, cars.X, cars.Y)  # predict_one then learn_one per row
    np.testing.assert_array_equal(fast.predict_learn_pass(cars.X, cars.Y), row_by_row)
    assert fast.weak.n_nodes == slow.weak.n_nodes > 6
    np.testing.assert_array_equal(fast.weak.arrays.class_mass, slow.weak.arrays.class_mass)
    for name in ("alpha", "hedge", "t"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
    assert fast.predict_one(cars.X[7].copy()) == slow.predict_one(cars.X[7].copy())


def test_oza_vote_weights_follow_the_error_rates():
    model = OzaBoost(2, 3, seed=0, num_learners=3)
    model.lambda_sc[:] = [3.0, 1.0, 0.0]
    model.lambda_sw[:] = [1.0, 3.0, 0.0]
    assert model.vote_weights() == pytest.approx([np.log(3.0), 0.0, 0.0])


def test_oza_river_cross_check_runs(load):
    balance = subset(load("balance"), 60)
    _, result = stream(OzaBoost, balance, num_learners=3, weak_learner="river_hoeffding_tree")
    assert 0.0 <= result.metrics["accuracy"] <= 1.0


# ------------------------------------------------------------------ registry and parameters
def test_registered_with_the_shared_hyperparameter_names():
    for name in ("onlinembbm", "adaolm", "best_vfdt", "oza"):
        cls = get_algorithm(name)
        assert cls.task == "multiclass" and cls.default_protocol == "prequential_last20"
        assert {"num_learners", "num_covariates"} <= set(cls.params)
    assert "gamma" in get_algorithm("onlinembbm").params


def test_bad_hyperparameters_are_rejected():
    with pytest.raises(ValueError, match="gamma"):
        OnlineMBBM(2, 3, gamma=1.5)
    with pytest.raises(ValueError, match="unknown hyperparameter"):
        AdaBoostOLM(2, 3, gamma=0.1)


def test_mbbm_state_memo_cleared_when_full_changes_no_prediction():
    """OnlineMBBM's compiled chain runs over a bounded memo of vote states; clearing it when full changes neither
    predictions nor updates."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(150, 4)), rng.integers(0, 3, 150)

    def predictions(max_nodes):
        model = OnlineMBBM(4, 3, seed=0, num_learners=20, gamma=0.1)
        model._memo.max_nodes = max_nodes
        out, largest = [], 0
        for x, label in zip(X, y):
            out.append(model.predict_one(x))
            model.learn_one(x, label)
            largest = max(largest, len(model._memo.states))
        return out, largest

    (full, largest), (cleared, _) = predictions(10**9), predictions(30)
    assert largest > 60  # the small memo was cleared several times
    assert np.array_equal(full, cleared)


def test_monte_carlo_costs_refuse_a_missing_generator():
    with pytest.raises(ValueError, match=r"samples > 0\) need a random generator"):
        MBBMCosts(3, 0.1, samples=10)
