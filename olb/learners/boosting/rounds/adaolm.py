"""Adaboost.OLM's rounds (paper 001, Algorithm 2), compiled: its chain of weak predictions and votes
(:func:`adaolm_chain`, over the logistic costs of eq. 9, :func:`logistic_cost_parts`) and its update once the label
is known (:func:`adaolm_update`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from olb.kernel_declarations import Boolean, Float64, Float64Array1D, Float64Array2D, Int64, Int64Array1D, kernel
from olb.learners.boosting.rounds.shared import expit, hedge_update, projected_alpha_step, vote_states
from olb.weak.vfdt_sums import pairwise_sum


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's ``llvm.fma``, the processor's fused multiply-add)."""

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@kernel
def logistic_cost_parts(S: Float64Array2D):  # pragma: no cover - compiled
    """For votes S (m, k): G[m, r, l] = 1 / (1 + exp(s[r] - s[l])) and rows[m, r] = sum_{l != r} G[m, r, l].

    The logistic cost matrix of paper 001 eq. (9) is C[r, l] = G[r, l] for l != r and C[r, r] = -rows[r].
    """
    m, k = S.shape
    G = np.empty((m, k, k))
    rows = np.empty((m, k))
    for i in range(m):
        for r in range(k):
            for label in range(k):
                G[i, r, label] = expit(S[i, label] - S[i, r])
            rows[i, r] = pairwise_sum(G[i, r], 0, k) - 0.5
    return G, rows


@njit(cache=True, nogil=True)
def alpha_gradient(S, labels, alpha, y, authors=False):  # pragma: no cover - compiled
    """f'(alpha^i) for f(a) = L^y(s^{i-1} + a e_{l^i}), for every learner i at once.

    ``S`` (N, k) holds s^{i-1}. If l^i != y: sigma(s[l] + a - s[y]); if l^i = y: -sum_{j != y} sigma(s[j] - s[y] - a)
    (the true derivative). ``authors=True`` returns the authors' code's value in the second case,
    -sum_{j != y} sigma(s[y] + a - s[j]) (= -(k-1) - the true one; ``docs/authors_code.md``).
    """
    N, k = S.shape
    out = np.empty(N)
    terms = np.empty(k - 1)
    for i in range(N):
        sy = S[i, y]
        if labels[i] != y:
            out[i] = expit(S[i, labels[i]] + alpha[i] - sy)
            continue
        j = 0
        for label in range(k):
            if label != y:
                if authors:
                    terms[j] = expit(sy + alpha[i] - S[i, label])
                else:
                    terms[j] = expit(S[i, label] - sy - alpha[i])
                j += 1
        out[i] = -pairwise_sum(terms, 0, k - 1)
    return out


@njit(cache=True, nogil=True)
def expected_costs(h, tie, M, out):  # pragma: no cover - compiled
    """A learner's expected logistic costs e[l] = sum_r h[r] C(s)[r, l] (paper 001, eq. 9), into ``out`` (k,).

    With M[r, l] = sigma(s[l] - s[r]), e = h M + h * (1 M) - k h (eq. 9 expanded); ``tie`` (k,) is subtracted to
    break ties. The products h M and 1 M add their terms in order, each with one rounding (a fused multiply-add),
    as the BLAS kernel behind numpy's ``@`` did on this (2, k) @ (k, k) product.
    """
    k = h.shape[0]
    for label in range(k):
        hm, om = 0.0, 0.0
        for r in range(k):
            hm = fma(h[r], M[r, label], hm)  # type: ignore[call-arg]  # a numba intrinsic (numba passes its context)
            om = fma(1.0, M[r, label], om)
        out[label] = hm + h[label] * om - (k * h[label] - tie[label])


@kernel
def adaolm_chain(H: Float64Array2D, tie: Float64Array2D, alpha: Float64Array1D):  # pragma: no cover - compiled
    """Adaboost.OLM's weak predictions l^i = argmin_l h^i . C(s^{i-1})[:, l], one learner after the other
    (paper 001, eq. 9; Algorithm 2; :func:`expected_costs`), and the votes s^0..s^N they cast: returns
    (labels, states). ``tie`` (N, k) breaks ties.
    """
    N, k = H.shape
    s = np.zeros(k)
    M = np.empty((k, k))
    costs = np.empty(k)
    labels = np.empty(N, np.intp)
    changed = True
    for i in range(N):
        if changed:
            for r in range(k):
                for label in range(k):
                    M[r, label] = expit(s[label] - s[r])
        expected_costs(H[i], tie[i], M, costs)
        labels[i] = np.argmin(costs)
        changed = alpha[i] != 0.0
        if changed:
            s[labels[i]] += alpha[i]
    return labels, vote_states(labels, alpha, k)


@kernel
def adaolm_update(
    states: Float64Array2D,
    labels: Int64Array1D,
    experts: Int64Array1D,
    alpha: Float64Array1D,
    hedge: Float64Array1D,
    y: Int64,
    eta: Float64,
    authors: Boolean,
):  # pragma: no cover - compiled
    """Adaboost.OLM's update once the label y is known (paper 001, Algorithm 2): alpha^i takes the step
    eta f'(alpha^i), projected to [-2, 2]; Hedge's weights become v^i exp(-1(yhat^i != y)). Returns (alpha, Hedge)."""
    N = labels.shape[0]
    change = alpha_gradient(states[:N], labels, alpha, y, authors)
    mistakes = np.empty(N)
    for i in range(N):
        change[i] = eta * change[i]
        mistakes[i] = 1.0 if experts[i] != y else 0.0
    return projected_alpha_step(alpha, change), hedge_update(hedge, mistakes)
