"""Paper 004's adaptive rounds, compiled: TopAda's update on one example with observed pairs (:func:`topada_round`:
the estimated logistic gradients and rank losses). TopOpt's cost vectors are
:func:`~olb.learners.boosting.rounds.potentials.pair_cost_vectors`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from olb.kernel_declarations import (
    Boolean,
    BooleanArray1D,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Int64,
    Int64Array1D,
    kernel,
)
from olb.learners.boosting.rounds.shared import expit, fed_weights, hedge_update, projected_alpha_step, row_dots


@njit(cache=True, nogil=True)
def pair_logistic_gradients(S, a_idx, b_idx, weights):  # pragma: no cover - compiled
    """TopAda's estimated logistic gradients (paper 004, Algorithm 3) at every row s of ``S`` (m, k): the gradient of
    sum_p w_p log(1 + exp(s[b_p] - s[a_p])), +w_p sigma(s[b_p] - s[a_p]) at b_p and -w_p sigma at a_p.

    Each entry adds its pairs' terms in pair order from 0.0, as numpy's per-pair column updates did."""
    m, k = S.shape
    P = a_idx.shape[0]
    grad = np.zeros((m, k))
    for i in range(m):
        for p in range(P):
            sig = weights[p] * expit(S[i, b_idx[p]] - S[i, a_idx[p]])
            grad[i, b_idx[p]] += sig
            grad[i, a_idx[p]] -= sig
    return grad


@njit(cache=True, nogil=True)
def pair_rank_losses(S, a_idx, b_idx, weights):  # pragma: no cover - compiled
    """TopAda's estimated rank losses sum_p w_p 1(s[b_p] >= s[a_p]) of every row s of ``S`` (m, k), ties counting.

    numpy computed them as a (m, P) boolean matrix @ w: the 0/1 matrix times w by numba's ``np.dot``, the BLAS
    ``dgemv`` (``ddot`` for a single row) numpy's ``@`` calls, so the terms add in the same order (tested)."""
    m = S.shape[0]
    P = a_idx.shape[0]
    M = np.empty((m, P))
    for i in range(m):
        for p in range(P):
            M[i, p] = 1.0 if S[i, b_idx[p]] >= S[i, a_idx[p]] else 0.0
    w = np.ascontiguousarray(weights)
    if m == 1:
        out = np.empty(1)
        out[0] = np.dot(M[0], w)
        return out
    return np.dot(M, w)


@kernel
def topada_round(
    H: Float64Array2D,
    states: Float64Array2D,
    a_idx: Int64Array1D,
    b_idx: Int64Array1D,
    weights: Float64Array1D,
    alpha: Float64Array1D,
    hedge: Float64Array1D,
    step: Float64,
    t: Int64,
    clip_gradient: Boolean,
    fed: BooleanArray1D,
    weight_scale: Float64,
):  # pragma: no cover - compiled
    """TopAda's update on one example with observed pairs (paper 004, Algorithm 3): returns (importance weights,
    alpha, Hedge, gradients at s^0..s^N).

    Costs c-hat^1..c-hat^{N+1} are the estimated logistic gradients at s^0..s^N (:func:`pair_logistic_gradients`);
    learner i is fed the labels in ``fed`` with weight ``weight_scale`` (max(c^i) - c^i[l]); alpha^i takes the step
    (step / sqrt(t)) g^i with g^i = c-hat^{i+1} . h^i (clipped to [-1, 1] when ``clip_gradient``), projected to
    [-2, 2]; Hedge's weights become v^i exp(-(L-hat_rnk(s^i) - min_j L-hat_rnk(s^j))).
    """
    N = H.shape[0]
    gradients = pair_logistic_gradients(states, a_idx, b_idx, weights)
    slopes = row_dots(gradients[1:], H)
    rate = step / math.sqrt(t)
    for i in range(N):
        if clip_gradient:
            slopes[i] = min(max(slopes[i], -1.0), 1.0)
        slopes[i] = rate * slopes[i]
    new_alpha = projected_alpha_step(alpha, slopes)
    losses = pair_rank_losses(states[1:], a_idx, b_idx, weights)
    least = losses.min()
    for i in range(N):
        losses[i] = losses[i] - least
    new_hedge = hedge_update(hedge, losses)
    return fed_weights(gradients[:N], fed, weight_scale), new_alpha, new_hedge, gradients
