"""Exact potentials vs the authors' M = 100 Monte Carlo: time per cost vector and Monte Carlo error.

    python benchmarks/bench_potentials.py

One "cost vector" is what a booster computes per weak learner per example: OnlineBMR and TopOpt
c[l] = phi(s + e_l) for every label, OnlineMBBM the k x k matrix C[r, l] = phi^r(s + e_l). The Monte
Carlo baseline re-estimates every potential value with M = 100 fresh samples and no caching, as the
authors' MLR code does, but vectorized with numpy (so it is faster than their per-sample Python).
Timings are warm (tables built); the one-off table set-up is printed separately.
"""

from __future__ import annotations

import time

import numpy as np

from olb.learners.boosting.potentials import (
    PairwisePotential,
    TopkPairPotential,
    ZeroOnePotential,
    baseline,
    baseline_probs,
    monte_carlo_potential,
    pairwise_hinge_loss,
    zero_one_loss,
)

N = 100  # weak learners
M = 100  # Monte Carlo samples per potential value (authors' default)
GAMMA = 0.1
N_STATES = 5  # states for the Monte Carlo error


def per_call_us(f, budget=0.25):
    """Median over 5 repeats of the mean time of f() in microseconds."""
    f()
    reps = max(1, int(budget / 5 / max(_once(f), 1e-7)))
    return 1e6 * np.median([_once(f, reps) for _ in range(5)])


def _once(f, reps=1):
    t = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t) / reps


# --- the Monte Carlo cost vectors (M samples per potential value) ---------------------------------


def mc_bmr(pot: PairwisePotential, s, y, n, rng):
    rel = np.flatnonzero(y)
    u = baseline(pot.n_labels, rel, pot.effective_gamma(rel.size))
    return monte_carlo_potential(lambda S: pairwise_hinge_loss(S, y, pot.margin), s + np.eye(s.size), u, n, M, rng)


def mc_topk(pot: TopkPairPotential, s, a_idx, b_idx, w, n, rng):
    """Per observed pair the 3-outcome walk (a, b, elsewhere) of the authors' code, M samples per (l, pair)."""
    p, q = baseline_probs(pot.n_labels, 1, pot.gamma)
    eye = np.eye(s.size)
    c = np.zeros(s.size)
    for a, b, wp in zip(a_idx, b_idx, w):
        states = np.stack([s[a] + eye[a], s[b] + eye[b], np.zeros(s.size)], axis=1)  # (m, 3)
        loss = lambda S: np.maximum(pot.margin + S[..., 1] - S[..., 0], 0.0)  # noqa: E731
        c += wp * monte_carlo_potential(loss, states, [p, q, 1 - p - q], n, M, rng)
    return c


def mc_mbbm(pot: ZeroOnePotential, s, n, rng):
    k = s.size
    return np.stack(
        [
            monte_carlo_potential(lambda S: zero_one_loss(S, r), s + np.eye(k), baseline(k, [r], pot.gamma), n, M, rng)
            for r in range(k)
        ]
    )


# --- states ------------------------------------------------------------------------------------------


def soft_state(k, i, rng):
    """s^{i-1}: the sum of i - 1 weak predictions that are distributions (VFDT leaves)."""
    return rng.dirichlet(np.ones(k), size=i - 1).sum(0) if i > 1 else np.zeros(k)


def vote_state(k, i, rng):
    """s^{i-1}: i - 1 single-label votes (OnlineMBBM)."""
    return np.bincount(rng.integers(0, k, i - 1), minlength=k).astype(float)


def row(name, config, exact_us, mc_us, err):
    print(f"{name:8s} {config:28s} {exact_us:11.1f} {mc_us:11.1f} {mc_us / exact_us:9.1f}x {err:10.3f}")


def main():
    rng = np.random.default_rng(0)
    print(f"N = {N} learners, gamma = {GAMMA}, Monte Carlo M = {M}; times per cost vector (warm)")
    print(f"{'':8s} {'config':28s} {'exact [us]':>11s} {'MC [us]':>11s} {'speed-up':>10s} {'max|MC-ex|':>10s}")

    i = 50  # mid-run learner: n = N - i remaining draws
    n = N - i
    for k, n_rel in [(6, 2), (101, 4)]:
        t = time.perf_counter()
        pot = PairwisePotential(N, k, GAMMA)
        pot.law(n_rel)
        setup = time.perf_counter() - t
        y = np.zeros(k, np.int8)
        y[rng.choice(k, n_rel, replace=False)] = 1
        s = soft_state(k, i, rng)
        err = max(
            np.abs(mc_bmr(pot, st, y, n, rng) - pot.cost_vector(st, y, n)).max()
            for st in (soft_state(k, i, rng) for _ in range(N_STATES))
        )
        row(
            "BMR",
            f"k={k} |Y|={n_rel} n={n}",
            per_call_us(lambda: pot.cost_vector(s, y, n)),
            per_call_us(lambda: mc_bmr(pot, s, y, n, rng)),
            err,
        )
        print(f"{'':8s}   (one-off table for |Y|={n_rel}, n=0..{N}: {1e3 * setup:.2f} ms)")

    for m in (6, 101):
        pot = TopkPairPotential(N, m, GAMMA)
        a_idx, b_idx = np.array([0, 0, 1]), np.array([2, 3, 2])  # 3 observed (relevant, irrelevant) pairs
        w = np.array([1.0 / 0.98, 1.0 / 0.98, 1.0 / 0.02])  # 1 / P(pair observed)
        s = soft_state(m, i, rng)
        err = max(
            np.abs(mc_topk(pot, st, a_idx, b_idx, w, n, rng) - pot.cost_vector(st, a_idx, b_idx, n, w)).max()
            for st in (soft_state(m, i, rng) for _ in range(N_STATES))
        )
        row(
            "TopOpt",
            f"m={m} 3 pairs n={n}",
            per_call_us(lambda: pot.cost_vector(s, a_idx, b_idx, n, w)),
            per_call_us(lambda: mc_topk(pot, s, a_idx, b_idx, w, n, rng)),
            err,
        )
    print(f"{'':8s}   (TopOpt max|MC-ex| is on importance-weighted costs, weights up to {w.max():.0f})")

    for i in (1, 50):  # first learner (s = 0, n = 99) and mid-run (49 votes, n = 50)
        n = N - i
        for k in (3, 5, 8, 26):
            pot = ZeroOnePotential(k, GAMMA)
            t = time.perf_counter()
            pot.tables(n)
            setup = time.perf_counter() - t
            s = vote_state(k, i, rng)
            err = max(
                np.abs(mc_mbbm(pot, st, n, rng) - pot.cost_matrix(st, n)).max()
                for st in (vote_state(k, i, rng) for _ in range(N_STATES))
            )
            row(
                "MBBM",
                f"k={k} n={n} ({len(np.unique(s))} score values)",
                per_call_us(lambda: pot.cost_matrix(s, n)),
                per_call_us(lambda: mc_mbbm(pot, s, n, rng)),
                err,
            )
        print(f"{'':8s}   (one-off table for n={n}, k=26: {1e3 * setup:.2f} ms)")


if __name__ == "__main__":
    main()
