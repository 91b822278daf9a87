"""OML's step sizes against explicit-matrix computations, and OML's prediction against kNN."""

import doctest

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from olb.learners.neighbors import oml as oml_module
from olb.learners.neighbors.knn import KNN
from olb.learners.neighbors.oml import (
    OML,
    cubic_coefficients,
    cubic_step,
    exact_dual,
    exact_dual_step,
    update_spectrum,
)


def random_case(seed, q=5, d=3):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(q, d))
    z = rng.normal(size=q)
    y_true, y_neighbor = (rng.random(q) < 0.5).astype(float), (rng.random(q) < 0.5).astype(float)
    y_neighbor[0] = 1.0 - y_true[0]  # delta >= 1
    a, b = z - y_neighbor, z - y_true
    return V, a, b, float(np.abs(y_true - y_neighbor).sum())


def lagrangian(V_new, V, A, lam, delta):
    """The Lagrangian of eq. 5: 1/2 ||V' - V||^2 + lam (delta - tr(V'^T A V'))."""
    return 0.5 * np.sum((V_new - V) ** 2) + lam * (delta - np.trace(V_new.T @ A @ V_new))


@pytest.mark.parametrize("seed", range(8))
def test_spectrum_traces_equal_explicit_matrix_traces(seed):
    V, a, b, _ = random_case(seed)
    A, Q = np.outer(a, a) - np.outer(b, b), V @ V.T
    mu, _, r = update_spectrum(V, a, b)
    for k in (1, 2, 3):
        assert r @ mu**k == pytest.approx(np.trace(Q @ np.linalg.matrix_power(A, k)), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_cubic_coefficients_are_the_rederived_ones_and_fit_the_approximated_dual(seed):
    V, a_vec, b_vec, delta = random_case(seed)
    A, Q = np.outer(a_vec, a_vec) - np.outer(b_vec, b_vec), V @ V.T
    a, b, c = cubic_coefficients(*update_spectrum(V, a_vec, b_vec)[::2], delta)
    expected = (-4 * np.trace(Q @ A @ A @ A), -2 * np.trace(Q @ A @ A), delta - np.trace(Q @ A))
    np.testing.assert_allclose([a, b, c], expected, rtol=1e-9, atol=1e-9)
    # the approximated dual: the Lagrangian at V' = (I + 2 lam A) V (eq. 6), a cubic through 0
    lams = np.linspace(-0.5, 0.5, 9)
    values = [lagrangian((np.eye(len(A)) + 2 * lam * A) @ V, V, A, lam, delta) for lam in lams]
    fitted = np.polyfit(lams, values, 3)
    np.testing.assert_allclose(fitted, [a, b, c, 0.0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("seed", range(12))
def test_exact_dual_step_maximises_the_exact_dual_found_by_brute_force(seed):
    for case in range(100 * seed, 100 * seed + 100):  # the first case with a positive loss (a step to take)
        V, a_vec, b_vec, delta = random_case(case)
        mu, _, r = update_spectrum(V, a_vec, b_vec)
        if delta - r @ mu > 0:
            break
    A = np.outer(a_vec, a_vec) - np.outer(b_vec, b_vec)
    top = 1.0 / (2.0 * mu.max())

    def dual(lam):  # the Lagrangian at its exact minimiser V' = (I - 2 lam A)^{-1} V, explicit matrices
        return lagrangian(np.linalg.solve(np.eye(len(A)) - 2 * lam * A, V), V, A, lam, delta)

    best = minimize_scalar(
        lambda lam: -dual(lam), bounds=(0.0, top * (1 - 1e-9)), method="bounded", options={"xatol": 1e-12}
    )
    lam = exact_dual_step(mu, r, delta, 0.0, 1e5)
    assert exact_dual(lam, mu, r, delta) == pytest.approx(dual(lam), rel=1e-9)
    assert lam == pytest.approx(best.x, rel=1e-4, abs=1e-9)
    assert dual(lam) >= -best.fun - 1e-12


def test_exact_dual_step_has_the_bits_of_its_numpy_expression():
    """The bisection on Python floats takes the steps the numpy expression of the derivative takes, bit for bit."""

    def numpy_step(mu, r, delta, lam_min, lam_max, iterations=100):
        def slope(lam):
            return delta - float(np.sum(r * mu / (1.0 - 2.0 * lam * mu) ** 2))

        positive = (mu > 0) & (r > 0)
        if not positive.any():
            return lam_max
        lo, hi = 0.0, min(1.0 / (2.0 * float(np.max(mu[positive]))), lam_max)
        if hi == lam_max and slope(hi) > 0:
            return lam_max
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
        return float(np.clip(0.5 * (lo + hi), lam_min, lam_max))

    rng = np.random.default_rng(5)
    for case in range(300):
        n = 2 if case < 200 else 1 + case % 7  # OML's two eigenvalues, and up to 7 terms
        mu, r = rng.normal(size=n) * 10.0 ** rng.integers(-3, 3), rng.random(n) * 10.0 ** rng.integers(-3, 3)
        delta = float(rng.integers(1, 6))
        assert exact_dual_step(mu, r, delta, 1e-5, 1e5) == numpy_step(mu, r, delta, 1e-5, 1e5)


def test_steps_are_clipped_to_m_and_M():
    mu, r = np.array([-1.0, 0.5]), np.array([1.0, 0.0])
    assert exact_dual_step(mu, r, 1.0, 1e-5, 3.0) == 3.0  # no positive curvature seen by V: unbounded dual
    assert cubic_step(np.array([-1.0]), np.array([1.0]), 1.0, 1e-5, 7.0) == 7.0  # increasing cubic: M
    assert exact_dual_step(np.array([1.0]), np.array([1e9]), 1.0, 0.25, 1e5) == 0.25


def test_cubic_step_is_the_local_maximum_of_the_cubic():
    mu, r = np.array([-0.4, 0.7]), np.array([1.5, 2.0])
    a, b, c = cubic_coefficients(mu, r, 2.0)
    lam = cubic_step(mu, r, 2.0, 0.0, 1e5)
    assert 3 * a * lam**2 + 2 * b * lam + c == pytest.approx(0.0, abs=1e-9) and 6 * a * lam + 2 * b < 0


def stream(seed=0, n=120, p=8, q=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    Y = (X[:, :q] + 0.3 * rng.normal(size=(n, q)) > 0).astype(float)
    return X, Y


def test_oml_with_a_frozen_metric_equals_knn_on_the_projected_features():
    X, Y = stream()
    oml = OML(8, 5, seed=3, n_neighbors=5)
    oml.learn_many(X, Y)  # the initial block only: P fitted, V never updated
    knn = KNN(3, 5, n_neighbors=5)
    knn.learn_many(X @ oml.P @ oml.V, Y)
    for x in np.random.default_rng(9).normal(size=(15, 8)):
        np.testing.assert_array_equal(oml.predict_one(x)["scores"], knn.predict_one(x @ oml.P @ oml.V)["scores"])


@pytest.mark.parametrize("rule", ["exact_dual", "cubic"])
def test_oml_is_deterministic_by_seed_and_updates_its_metric(rule):
    X, Y = stream(1)

    def run(seed):
        learner = OML(8, 5, seed=seed, lambda_rule=rule, n_neighbors=3)
        learner.learn_many(X[:30], Y[:30])
        for x, y in zip(X[30:], Y[30:]):
            learner.learn_one(x, y)
        return learner

    first, again, other = run(4), run(4), run(5)
    np.testing.assert_array_equal(first.V, again.V)
    assert not np.array_equal(first.V, other.V)
    assert first.n_updates > 0 and len(first.memory) == 120
    assert first.stream_report(0)["oml_lambda_capped"] == first.n_capped / first.n_updates


def test_oml_update_removes_the_loss_under_the_exact_dual_step():
    V, a, b, delta = random_case(2)
    learner = OML(4, 5, seed=0, latent_dim=3)
    learner.V = V.copy()
    z, y_true, y_neighbor = np.zeros(5), -b, -a  # a = z - y_neighbor, b = z - y_true
    lam = learner.update_metric(z, y_true, y_neighbor)
    assert lam > 0
    A = np.outer(a, a) - np.outer(b, b)
    np.testing.assert_allclose(learner.V, np.linalg.solve(np.eye(5) - 2 * lam * A, V), atol=1e-10)
    # at the dual optimum the constraint is active: the loss is exactly zero
    assert delta - np.trace(learner.V.T @ A @ learner.V) == pytest.approx(0.0, abs=1e-8)


def test_oml_metric_neighbour_search_option_runs():
    X, Y = stream(2)
    learner = OML(8, 5, seed=0, update_neighbor="metric")
    learner.learn_many(X[:20], Y[:20])
    for x, y in zip(X[20:], Y[20:]):
        learner.learn_one(x, y)
    assert learner.n_updates > 0


def test_oml_refuses_a_latent_dim_not_below_the_label_count():
    with pytest.raises(ValueError, match="latent_dim=5 must be below the number of labels 5"):
        OML(8, 5, latent_dim=5)
    with pytest.raises(ValueError, match="lambda_rule"):
        OML(8, 5, lambda_rule="newton")


def test_doctests():
    assert doctest.testmod(oml_module).failed == 0
