"""Exact potentials (OnlineBMR, TopOpt, OnlineMBBM) against exact enumeration and large Monte Carlo."""

import itertools
from fractions import Fraction
from math import factorial

import numpy as np
import pytest
from scipy.special import gammaln, xlogy

from olb.learners.boosting.potentials import (
    PairwisePotential,
    TopkPairPotential,
    ZeroOnePotential,
    baseline,
    baseline_probs,
    mbbm_cost_matrix,
    monte_carlo_potential,
    pair_hinge_loss,
    pairwise_hinge_loss,
    zero_one_loss,
    zero_one_potential,
)
from olb.learners.boosting.potentials.draws import DifferenceLaw

N_MC = 200_000  # Monte Carlo samples per check; tolerance 5 standard errors


def _compositions(n, k):
    """All count vectors (x_1..x_k) >= 0 with sum n, shape (C(n+k-1, k-1), k)."""
    if n == 0:
        return np.zeros((1, k), int)
    return np.array([np.bincount(c, minlength=k) for c in itertools.combinations_with_replacement(range(k), n)])


def _enumerate(loss, s, u, n):
    """E[loss(s + X)], X ~ Multinomial(n, u), by summing over every outcome."""
    X = _compositions(n, len(u))
    logp = gammaln(n + 1) - gammaln(X + 1).sum(1) + xlogy(X, u).sum(1)
    return float(np.exp(logp) @ loss(np.asarray(s, float) + X))


def _assert_mc(exact, loss, s, u, n, rng, n_samples=N_MC):
    """exact within 5 standard errors of a plain Monte Carlo estimate with n_samples samples."""
    chunks = [loss(np.asarray(s, float) + rng.multinomial(n, u, size=n_samples // 10)) for _ in range(10)]
    vals = np.concatenate(chunks)
    se = vals.std() / np.sqrt(vals.size)
    assert se > 0
    assert abs(exact - vals.mean()) <= 5 * se + 1e-12, (exact, vals.mean(), se)


def _relevance(k, n_rel, rng):
    y = np.zeros(k, np.int8)
    y[rng.choice(k, n_rel, replace=False)] = 1
    return y


# ------------------------------------------------------------------------------------------------
# shared machinery
# ------------------------------------------------------------------------------------------------


def test_baseline_is_the_biased_uniform():
    u = baseline(5, [1, 3], 0.1)
    assert np.allclose(u, [0.16, 0.26, 0.16, 0.26, 0.16]) and np.isclose(u.sum(), 1)
    assert np.allclose(baseline_probs(4, 1, 0.2), (0.4, 0.2))


@pytest.mark.parametrize("p, q", [(0.3, 0.2), (0.5, 0.0), (0.1, 0.1)])
def test_difference_law_is_the_trinomial_marginal_and_hinge_is_exact(p, q):
    n_max = 8
    law = DifferenceLaw(n_max, p, q)
    for n in range(n_max + 1):
        X = _compositions(n, 3)
        logp = gammaln(n + 1) - gammaln(X + 1).sum(1) + xlogy(X, [p, q, 1 - p - q]).sum(1)
        pmf = np.bincount(X[:, 0] - X[:, 1] + n, np.exp(logp), minlength=2 * n + 1)
        assert np.allclose(law.pmf[n][(law.support >= -n) & (law.support <= n)], pmf, atol=1e-14)
        # E[(t - D)_+] for real and integer t, including far outside the table (clipped floors)
        t = np.concatenate([np.linspace(-15, 15, 121), [-1e6, 1e6, 0.5, -0.0, 1 - 1e-16]])
        direct = np.maximum(t[:, None] - (law.support[None, :]), 0) @ law.pmf[n]
        assert np.allclose(law.expected_hinge(t, n), direct, rtol=1e-12, atol=1e-12)
        steps = law.hinge_and_steps(t, n)
        assert np.allclose(steps[:, 0], direct, rtol=1e-12, atol=1e-12)
        assert np.allclose(steps[:, 1], law.expected_hinge(t - 1, n) - direct, rtol=1e-9, atol=1e-12)
        assert np.allclose(steps[:, 2], law.expected_hinge(t + 1, n) - direct, rtol=1e-9, atol=1e-12)


def test_monte_carlo_potential_shapes_and_n0():
    rng = np.random.default_rng(0)
    s = np.zeros((4, 3))
    est = monte_carlo_potential(lambda S: S[..., 0], s, [0.5, 0.25, 0.25], 10, 50, rng)
    assert est.shape == (4,)
    assert monte_carlo_potential(lambda S: S[..., 0], np.ones(3), [1, 0, 0], 0, 5, rng) == 1.0


# ------------------------------------------------------------------------------------------------
# OnlineBMR
# ------------------------------------------------------------------------------------------------

BMR_EXACT_CASES = [  # k, |Y|, gamma, n, margin
    (4, 2, 0.1, 6, 1.0),
    (5, 1, 0.2, 5, 0.0),
    (4, 3, 0.3, 7, 1.0),
    (3, 1, 0.0, 6, 1.0),
    (5, 4, 0.25, 4, 0.0),
    (6, 2, 0.1, 0, 1.0),
]


@pytest.mark.parametrize("k, n_rel, gamma, n, margin", BMR_EXACT_CASES)
def test_bmr_value_equals_exact_enumeration(k, n_rel, gamma, n, margin):
    rng = np.random.default_rng(k + 10 * n)
    pot = PairwisePotential(10, k, gamma, margin=margin)
    for _ in range(3):
        y = _relevance(k, n_rel, rng)
        s = rng.normal(scale=2, size=k)
        u = baseline(k, np.flatnonzero(y), gamma)
        exact = _enumerate(lambda S: pairwise_hinge_loss(S, y, margin), s, u, n)
        assert abs(pot.value(s, y, n) - exact) < 1e-12


@pytest.mark.parametrize(
    "k, n_rel, gamma, n, margin",
    [
        (6, 2, 0.1, 20, 1.0),
        (6, 1, 0.2, 99, 0.0),
        (14, 5, 0.05, 40, 1.0),
        (101, 4, 0.01, 60, 0.0),
    ],
)
def test_bmr_value_matches_large_monte_carlo(k, n_rel, gamma, n, margin):
    rng = np.random.default_rng(n)
    pot = PairwisePotential(100, k, gamma, margin=margin)
    y = _relevance(k, n_rel, rng)
    s = rng.dirichlet(np.ones(k), size=30).sum(0)  # 30 weak learners' distributions, as with VFDT
    u = baseline(k, np.flatnonzero(y), gamma)
    _assert_mc(
        pot.value(s, y, n),
        lambda S: pairwise_hinge_loss(S, y, margin),
        s,
        u,
        n,
        rng,
        n_samples=100_000 if k > 100 else N_MC,
    )


@pytest.mark.parametrize("margin", [1.0, 0.0])
def test_bmr_cost_vector_equals_direct_values_and_n0_is_the_loss(margin):
    rng = np.random.default_rng(1)
    for k, n_rel in [(6, 2), (6, 1), (6, 5), (14, 7), (101, 4)]:
        pot = PairwisePotential(100, k, 0.05, margin=margin)
        for n in (0, 1, 37, 100):
            y = _relevance(k, n_rel, rng)
            s = np.round(rng.normal(scale=3, size=k), 1 if n == 37 else 6)  # ties and integer gaps
            direct = [pot.value(s + np.eye(k)[l], y, n) for l in range(k)]
            assert np.allclose(pot.cost_vector(s, y, n), direct, rtol=1e-12, atol=1e-13)
            if n == 0:
                assert np.isclose(pot.value(s, y, 0), pairwise_hinge_loss(s, y, margin))


def test_bmr_degenerate_label_sets_cost_nothing():
    pot = PairwisePotential(10, 5, 0.1)
    s = np.arange(5.0)
    for y in (np.zeros(5, np.int8), np.ones(5, np.int8)):
        assert pot.value(s, y, 4) == 0.0
        assert np.array_equal(pot.cost_vector(s, y, 4), np.zeros(5))
    with pytest.raises(ValueError, match="n=11"):
        pot.value(s, [1, 0, 0, 0, 0], 11)


def test_bmr_costs_are_proper_and_permutation_equivariant():
    rng = np.random.default_rng(2)
    pot = PairwisePotential(50, 8, 0.1)
    for _ in range(20):
        y = _relevance(8, rng.integers(1, 8), rng)
        s = rng.normal(scale=2, size=8)
        c = pot.cost_vector(s, y, int(rng.integers(0, 51)))
        # adding a vote to a relevant label never costs more than adding it to an irrelevant one
        assert c[y == 1].max() <= c[y == 0].min() + 1e-12
        perm = rng.permutation(8)
        assert np.allclose(pot.cost_vector(s[perm], y[perm], 10), pot.cost_vector(s, y, 10)[perm])


def test_bmr_invalid_baseline_cap_and_raise():
    k, gamma = 14, 0.2  # yeast: |Y| up to 11
    rng = np.random.default_rng(3)
    y = _relevance(k, 6, rng)
    s = rng.normal(size=k)
    capped = PairwisePotential(20, k, gamma)  # default "cap"
    assert capped.effective_gamma(6) == pytest.approx(1 / 6) and capped.effective_gamma(5) == gamma
    # capped baseline: all mass on Y (irrelevant labels never receive a vote)
    u = baseline(k, np.flatnonzero(y), 1 / 6)
    assert np.allclose(u[y == 0], 0) and np.isclose(u.sum(), 1)
    assert np.isclose(capped.value(s, y, 20), PairwisePotential(20, k, 1 / 6).value(s, y, 20))
    _assert_mc(capped.value(s, y, 20), lambda S: pairwise_hinge_loss(S, y), s, u, 20, rng)
    strict = PairwisePotential(20, k, gamma, invalid_baseline="raise")
    with pytest.raises(ValueError, match=r"gamma=0\.2 with \|Y\|=6.*1/\|Y\| = 0\.166667"):
        strict.cost_vector(s, y, 5)
    y5 = _relevance(k, 5, rng)  # gamma |Y| = 1 is still a distribution: both rules agree
    assert np.allclose(strict.cost_vector(s, y5, 5), capped.cost_vector(s, y5, 5))
    with pytest.raises(ValueError, match="invalid_baseline"):
        PairwisePotential(20, k, gamma, invalid_baseline="clip")


# ------------------------------------------------------------------------------------------------
# TopOpt
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m, gamma, n, margin", [(4, 0.1, 6, 1.0), (5, 0.3, 5, 0.0), (3, 0.0, 7, 1.0)])
def test_topk_pair_values_equal_exact_enumeration(m, gamma, n, margin):
    rng = np.random.default_rng(m + n)
    pot = TopkPairPotential(10, m, gamma, margin=margin)
    for a, b in [(0, 1), (2, 0), (1, 2)]:
        s = rng.normal(scale=2, size=m)
        exact = _enumerate(lambda S: pair_hinge_loss(S, [a], [b], margin=margin), s, baseline(m, [a], gamma), n)
        assert abs(pot.pair_values(s[b] - s[a], n) - exact) < 1e-12


@pytest.mark.parametrize("m, gamma, n", [(6, 0.2, 30), (101, 0.05, 50)])
def test_topk_pair_values_match_large_monte_carlo(m, gamma, n):
    rng = np.random.default_rng(m)
    pot = TopkPairPotential(60, m, gamma)
    a, b = 3, 1
    s = rng.dirichlet(np.ones(m), size=10).sum(0)
    s[b] += 2.0  # a pair currently ranked wrong: Lambda is far from 0
    _assert_mc(
        pot.pair_values(s[b] - s[a], n),
        lambda S: pair_hinge_loss(S, [a], [b]),
        s,
        baseline(m, [a], gamma),
        n,
        rng,
        n_samples=100_000 if m > 100 else N_MC,
    )


def test_topk_cost_vector_equals_direct_values():
    rng = np.random.default_rng(4)
    for m, margin in [(6, 1.0), (101, 0.0), (4, 1.0)]:
        pot = TopkPairPotential(30, m, 0.2, margin=margin)
        a = np.array([0, 0, 2, 1])  # repeated labels on both sides
        b = np.array([3, 1 if m > 4 else 3, 3, 2])
        w = rng.uniform(1, 200, size=a.size)
        for n in (0, 1, 30):
            s = rng.normal(scale=2, size=m)
            c = pot.cost_vector(s, a, b, n, weights=w)
            direct = [pot.value(s + np.eye(m)[l], a, b, n, weights=w) for l in range(m)]
            assert np.allclose(c, direct, rtol=1e-12, atol=1e-10)
            if n == 0:
                assert np.isclose(pot.value(s, a, b, 0, w), pair_hinge_loss(s, a, b, w, margin))
        # no observed pair: zero costs
        assert np.array_equal(pot.cost_vector(np.zeros(m), [], [], 3), np.zeros(m))


def test_topk_lambda_depends_on_the_difference_only_and_is_proper():
    pot = TopkPairPotential(20, 6, 0.1)
    d = np.linspace(-5, 5, 41)
    vals = pot.pair_values(d, 20)
    assert np.all(np.diff(vals) >= 0)  # larger s[b] - s[a] never lowers the loss
    assert np.all(np.diff(vals, 2) >= -1e-12)  # convex (Assumption 3 of paper 004)
    s = np.array([1.5, 0.0, 2.0, 0.0, 0.0, 0.0])
    assert np.isclose(pot.value(s, [0], [2], 20), pot.value(s + 7.25, [0], [2], 20))


# ------------------------------------------------------------------------------------------------
# OnlineMBBM
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k, gamma, n", [(2, 0.1, 7), (3, 0.1, 6), (4, 0.2, 6), (5, 0.0, 5), (3, 0.3, 0), (4, 0.5, 1)])
def test_zero_one_potential_equals_exact_enumeration(k, gamma, n):
    rng = np.random.default_rng(k * 100 + n)
    for _ in range(4):
        s = rng.integers(0, 4, size=k).astype(float)  # vote counts, with ties
        for r in range(k):
            exact = _enumerate(lambda S: zero_one_loss(S, r), s, baseline(k, [r], gamma), n)
            assert abs(zero_one_potential(s, r, n, gamma) - exact) < 1e-12


def test_zero_one_potential_at_n99_equals_rational_arithmetic():
    k, n, g, s = 3, 99, Fraction(1, 10), [3, 1, 2]
    p, q = (1 - g) / k + g, (1 - g) / k
    for r in range(k):
        l1, l2 = (l for l in range(k) if l != r)
        err = sum(
            Fraction(factorial(n), factorial(j) * factorial(x) * factorial(n - j - x)) * p**j * q ** (n - j)
            for j in range(n + 1)
            for x in range(n - j + 1)
            if max(s[l1] + x, s[l2] + n - j - x) >= s[r] + j
        )
        assert abs(zero_one_potential(np.array(s, float), r, n, 0.1) - float(err)) < 5e-14


def test_zero_one_potential_accepts_real_scores():
    rng = np.random.default_rng(5)
    s = np.array([1.3, 0.2, 1.0, 2.05])
    for r in range(4):
        exact = _enumerate(lambda S: zero_one_loss(S, r), s, baseline(4, [r], 0.1), 6)
        assert abs(zero_one_potential(s, r, 6, 0.1) - exact) < 1e-12
    assert zero_one_potential(rng.normal(size=3), 0, 0, 0.1) in (0.0, 1.0)


@pytest.mark.parametrize(
    "k, gamma, n, votes", [(26, 0.1, 99, 0), (26, 0.05, 50, 49), (8, 0.2, 70, 29), (5, 0.1, 10, 89)]
)
def test_zero_one_potential_matches_large_monte_carlo(k, gamma, n, votes):
    rng = np.random.default_rng(votes)
    s = np.bincount(rng.integers(0, k, votes), minlength=k).astype(float)  # s^{i-1}, sum i - 1 = N - 1 - n
    r = int(np.argsort(s)[k // 2])
    _assert_mc(zero_one_potential(s, r, n, gamma), lambda S: zero_one_loss(S, r), s, baseline(k, [r], gamma), n, rng)


def test_mbbm_cost_matrix_equals_direct_potentials():
    rng = np.random.default_rng(6)
    for k, gamma, n, votes in [
        (3, 0.1, 99, 0),
        (5, 0.2, 40, 59),
        (8, 0.1, 12, 87),
        (26, 0.05, 30, 69),
        (4, 0.1, 0, 6),
        (26, 0.1, 3, 96),
    ]:
        s = np.bincount(rng.integers(0, min(k, 6), votes), minlength=k).astype(float)
        C = mbbm_cost_matrix(s, n, gamma)
        direct = [[zero_one_potential(s + np.eye(k)[l], r, n, gamma) for l in range(k)] for r in range(k)]
        assert np.allclose(C, direct, rtol=0, atol=1e-13)
        if n == 0:
            assert np.array_equal(C, [[zero_one_loss(s + np.eye(k)[l], r) for l in range(k)] for r in range(k)])


def test_mbbm_cost_matrix_sanity():
    rng = np.random.default_rng(7)
    pot = ZeroOnePotential(10, 0.1)
    s = np.bincount(rng.integers(0, 10, 40), minlength=10).astype(float)
    C = pot.cost_matrix(s, 59)
    # proper: voting for the true label is the cheapest choice; potentials are probabilities
    assert np.all(np.diag(C)[:, None] <= C + 1e-13) and np.all((C >= 0) & (C <= 1))
    perm = rng.permutation(10)
    assert np.allclose(pot.cost_matrix(s[perm], 59), C[np.ix_(perm, perm)], atol=1e-14)
    # at s = 0 every row is the same up to relabelling, and gamma = 0 with k = 2 is a fair coin race
    C0 = mbbm_cost_matrix(np.zeros(2), 1, 0.0)
    assert np.allclose(C0, [[0.5, 1.0], [1.0, 0.5]])
    with pytest.raises(ValueError, match="at least 2 labels"):
        ZeroOnePotential(1, 0.1)
    with pytest.raises(ValueError, match="n=-1"):
        zero_one_potential(np.zeros(3), 0, -1, 0.1)
