"""What the adaptive boosters' rounds share, compiled: the experts' states s^0..s^N, the step on alpha projected to
[-2, 2], Hedge (its draw and its update), the importance weights read off cost vectors, the dot products over
labels, and scipy's logistic sigma bound for the compiled code (:data:`expit`).
"""

from __future__ import annotations

import math

import llvmlite.binding
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address

from olb.kernel_declarations import BooleanArray1D, Float64, Float64Array1D, Float64Array2D, Int64, Int64Array1D, kernel
from olb.weak.vfdt_sums import pairwise_sum

llvmlite.binding.add_symbol(
    "olb_scipy_expit", get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_0expit")
)
expit = types.ExternalFunction("olb_scipy_expit", types.float64(types.float64))


ALPHA_BOUND = 2.0  # the adaptive boosters project alpha to [-2, 2] (papers 000, 001, 004)


@kernel
def expert_states(alpha: Float64Array1D, H: Float64Array2D):  # pragma: no cover - compiled
    """The experts' states s^0..s^N (N + 1, k): s^0 = 0, s^j = sum_{i<=j} alpha^i h^i (paper 000, Algorithm 1)."""
    N, k = H.shape
    states = np.zeros((N + 1, k))
    for i in range(N):
        for label in range(k):
            vote = alpha[i] * H[i, label]
            states[i + 1, label] = vote if i == 0 else states[i, label] + vote
    return states


@kernel
def vote_states(labels: Int64Array1D, alpha: Float64Array1D, k: Int64):  # pragma: no cover - compiled
    """The votes s^0..s^N (N + 1, k) of single-label learners: s^j = sum_{i<=j} alpha^i e_{l^i} (paper 001)."""
    states = np.empty((labels.shape[0] + 1, k))
    vote_states_into(labels, alpha, states)
    return states


@njit(cache=True, nogil=True, inline="always")
def vote_states_into(labels, alpha, states):  # pragma: no cover - compiled
    """:func:`vote_states` into ``states`` (N + 1, k)."""
    states[0] = 0.0
    for i in range(labels.shape[0]):
        for label in range(states.shape[1]):
            vote = alpha[i] if label == labels[i] else 0.0
            states[i + 1, label] = vote if i == 0 else states[i, label] + vote


@njit(cache=True, nogil=True)
def row_dots(A, B):  # pragma: no cover - compiled
    """The dot products of matching rows of A and B (m, k), added as numpy's ``einsum("ik,ik->i")`` does here:
    two interleaved partial sums (even and odd positions), eight terms per pass, then the tail, then their sum."""
    m, k = A.shape
    out = np.empty(m)
    for i in range(m):
        acc0, acc1, p = 0.0, 0.0, 0
        while k - p >= 8:
            for j in range(2):
                ab = A[i, p + 6 + j] * B[i, p + 6 + j] + (acc0 if j == 0 else acc1)
                ab = A[i, p + 4 + j] * B[i, p + 4 + j] + ab
                ab = A[i, p + 2 + j] * B[i, p + 2 + j] + ab
                ab = A[i, p + j] * B[i, p + j] + ab
                if j == 0:
                    acc0 = ab
                else:
                    acc1 = ab
            p += 8
        while p < k:
            acc0 = A[i, p] * B[i, p] + acc0
            acc1 = (A[i, p + 1] * B[i, p + 1] if p + 1 < k else 0.0) + acc1
            p += 2
        out[i] = 0.0 + (acc0 + acc1)
    return out


@njit(cache=True, nogil=True)
def projected_alpha_step(alpha, change):  # pragma: no cover - compiled
    """``alpha - change`` projected to [-2, 2] (online gradient descent on the weights alpha^i; papers 000, 001, 004)."""
    out = np.empty_like(alpha)
    for i in range(alpha.shape[0]):
        v = alpha[i] - change[i]
        out[i] = min(max(v, -ALPHA_BOUND), ALPHA_BOUND)
    return out


@kernel
def hedge_index(weights: Float64Array1D, u: Float64):  # pragma: no cover - compiled
    """The first expert whose cumulative weight reaches ``u`` times the total (the last if none does)."""
    n = weights.shape[0]
    target = u * pairwise_sum(weights, 0, n)
    cumulative = 0.0
    for i in range(n):
        cumulative = weights[i] if i == 0 else cumulative + weights[i]
        if cumulative >= target:
            return i
    return n - 1


@njit(cache=True, nogil=True)
def hedge_update(weights, losses):  # pragma: no cover - compiled
    """Hedge with step 1: ``weights * exp(-losses)``, renormalized to sum 1.

    Renormalizing every round keeps the largest weight >= 1/N, so the vector never underflows to 0.
    """
    n = weights.shape[0]
    new = np.empty(n)
    for i in range(n):
        new[i] = weights[i] * math.exp(-losses[i])
    total = pairwise_sum(new, 0, n)
    for i in range(n):
        new[i] = new[i] / total
    return new


@kernel
def fed_weights(costs: Float64Array2D, fed: BooleanArray1D, scale: Float64):  # pragma: no cover - compiled
    """Importance weights ``scale * (max(c^i) - c^i[l])`` for the labels l that are fed, 0 for the others
    (papers 000 and 004: each relevant label l is fed to learner i with weight max(c^i) - c^i[l])."""
    N, k = costs.shape
    weights = np.zeros((N, k))
    for i in range(N):
        top = costs[i].max()
        for label in range(k):
            if fed[label]:
                weights[i, label] = scale * (top - costs[i, label])
    return weights
