"""Paper 000's rounds, compiled: Ada.OLMR's update on one example (:func:`adaolmr_round`: the logistic rank
gradients, the rank losses) and OnlineBMR's (:func:`onlinebmr_round`, on the exact cost vectors of its pairwise
potential, :func:`~olb.learners.boosting.rounds.potentials.pairwise_cost_vectors`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from olb.kernel_declarations import (
    BooleanArray1D,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Float64Array3D,
    Int64,
    kernel,
)
from olb.learners.boosting.rounds.potentials import pairwise_cost_vectors
from olb.learners.boosting.rounds.shared import expit, fed_weights, hedge_update, projected_alpha_step, row_dots


@njit(cache=True, nogil=True)
def logistic_rank_gradient(S, relevant):  # pragma: no cover - compiled
    """Gradient of the weighted logistic loss of paper 000, eq. (8), at each row of ``S``.

    L_log(s) = w_Y sum_{l in Y} sum_{r notin Y} log(1 + exp(s[r] - s[l])), w_Y = 1 / (|Y| |Y^c|), so
    c[l] = -w_Y sum_r sigma(s[r] - s[l]) for l in Y and c[r] = w_Y sum_l sigma(s[r] - s[l]) for r notin Y.
    ``S`` is (m, k), ``relevant`` a boolean (k,) mask with 0 < |Y| < k; returns (m, k). Both sums add their
    terms in index order: numpy's order on the boosters' states (m = N + 1 >= 2 rows; its fancy-indexed
    differences were laid out row-fastest, so it summed row vectors one after the other).

    >>> logistic_rank_gradient(np.zeros((1, 3)), np.array([True, False, False]))
    array([[-0.5 ,  0.25,  0.25]])
    """
    m, k = S.shape
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    w = 1.0 / (rel.shape[0] * irr.shape[0])
    grad = np.empty((m, k))
    for row in range(m):
        for l in rel:
            grad[row, l] = -0.0
        for r in irr:
            grad[row, r] = -0.0
        for l in rel:
            for r in irr:
                sig = expit(S[row, r] - S[row, l])
                grad[row, l] += sig
                grad[row, r] += sig
        for l in rel:
            grad[row, l] = -w * grad[row, l]
        for r in irr:
            grad[row, r] = w * grad[row, r]
    return grad


@njit(cache=True, nogil=True)
def rank_losses(S, relevant):  # pragma: no cover - compiled
    """Paper 000's rank loss L_rnk of every row of S (m, k) against one label set, 0 < |Y| < k: the share of
    (relevant, irrelevant) pairs in the wrong order, a tie counting 1/2 (the value of
    :func:`olb.metrics.rank_loss_many`)."""
    m = S.shape[0]
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    n_pairs = rel.shape[0] * irr.shape[0]
    out = np.empty(m)
    for row in range(m):
        gt, eq = 0, 0
        for a in rel:
            for b in irr:
                if S[row, b] > S[row, a]:
                    gt += 1
                elif S[row, b] == S[row, a]:
                    eq += 1
        out[row] = (gt + 0.5 * eq) / n_pairs
    return out


@kernel
def adaolmr_round(
    H: Float64Array2D,
    states: Float64Array2D,
    relevant: BooleanArray1D,
    alpha: Float64Array1D,
    hedge: Float64Array1D,
    t: Int64,
):  # pragma: no cover - compiled
    """Ada.OLMR's update on one example (paper 000, Algorithm 3): returns (importance weights, alpha, Hedge).

    Costs c^1..c^{N+1} are the logistic gradients at s^0..s^N (eq. 8); learner i is fed the relevant labels with
    weight max(c^i) - c^i[l]; alpha^i takes the step f'(alpha^i) / sqrt(t) with f'(alpha) = c^{i+1} . h^i,
    projected to [-2, 2]; Hedge's weights become v^i exp(-L_rnk(s^i)).
    """
    gradients = logistic_rank_gradient(states, relevant)
    N = H.shape[0]
    slopes = row_dots(gradients[1:], H)
    root = math.sqrt(t)
    for i in range(N):
        slopes[i] = slopes[i] / root
    new_alpha = projected_alpha_step(alpha, slopes)
    new_hedge = hedge_update(hedge, rank_losses(states[1:], relevant))
    return fed_weights(gradients[:N], relevant, 1.0), new_alpha, new_hedge


@kernel
def onlinebmr_round(
    states: Float64Array2D,
    relevant: BooleanArray1D,
    table: Float64Array3D,
    offset: Float64,
    top: Float64,
    margin: Float64,
):  # pragma: no cover - compiled
    """OnlineBMR's importance weights (N, k) on one example (paper 000, Algorithm 2): learner i's cost vector at
    s^{i-1} with horizon N - i (:func:`pairwise_cost_vectors`), each relevant label fed with weight max(c^i) - c^i[l]."""
    N = states.shape[0] - 1
    horizons = np.empty(N, np.intp)
    for i in range(N):
        horizons[i] = N - 1 - i
    costs = pairwise_cost_vectors(states[:N], relevant, horizons, table, offset, top, margin)
    return fed_weights(costs, relevant, 1.0)
