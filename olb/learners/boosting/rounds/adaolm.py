"""Adaboost.OLM's rounds (paper 001, Algorithm 2), compiled: its chain of weak predictions and votes
(:func:`adaolm_chain`, over the logistic costs of eq. 9, :func:`logistic_cost_parts`), the trees' importance
weights (:func:`importance_weights`), its update once the label is known (:func:`adaolm_update`), and a whole
prequential pass over the VFDT forest (:func:`adaolm_pass`: all of them per row, in one compiled loop).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from olb.kernel_declarations import Boolean, Float64, Float64Array1D, Float64Array2D, Int64, Int64Array1D, kernel
from olb.learners.boosting.rounds.shared import (
    expit,
    hedge_index,
    hedge_update,
    projected_alpha_step,
    vote_states,
    vote_states_into,
)
from olb.weak.vfdt_arrays import ForestArrays
from olb.weak.vfdt_core import learn
from olb.weak.vfdt_rows import has_room, masses_into, route_into
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
            rows[i, r] = logistic_cost_row(S, i, r, G[i, r])
    return G, rows


@njit(cache=True, nogil=True, inline="always")
def logistic_cost_row(S, i, r, out):  # pragma: no cover - compiled
    """Row r of :func:`logistic_cost_parts` at the votes s = ``S[i]``: out[l] = 1 / (1 + exp(s[r] - s[l])) into
    ``out`` (k,); returns their sum over l != r (paper 001, eq. 9: -C[r, r])."""
    k = S.shape[1]
    for label in range(k):
        out[label] = expit(S[i, label] - S[i, r])
    return pairwise_sum(out, 0, k) - 0.5


@njit(cache=True, nogil=True, inline="always")
def argmax_with_tie(A, a, tie, half, i):  # pragma: no cover - compiled
    """The first l of the largest ``A[a, l] + tie[half, i, l]`` (numpy's argmax of the sum, without the sum's
    array)."""
    best, top = 0, A[a, 0] + tie[half, i, 0]
    for label in range(1, A.shape[1]):
        value = A[a, label] + tie[half, i, label]
        if value > top:
            best, top = label, value
    return best


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
def expected_costs(H, tie, i, M, out):  # pragma: no cover - compiled
    """Learner i's expected logistic costs e[l] = sum_r h[r] C(s)[r, l] (paper 001, eq. 9), h = ``H[i]``, into
    ``out`` (k,); rows are read by index (a view per learner would count references).

    With M[r, l] = sigma(s[l] - s[r]), e = h M + h * (1 M) - k h (eq. 9 expanded); ``tie[i]`` (k,) is subtracted
    to break ties. The products h M and 1 M add their terms in order, each with one rounding (a fused multiply-add),
    as the BLAS kernel behind numpy's ``@`` did on this (2, k) @ (k, k) product.
    """
    k = H.shape[1]
    for label in range(k):
        hm, om = 0.0, 0.0
        for r in range(k):
            hm = fma(H[i, r], M[r, label], hm)  # type: ignore[call-arg]  # a numba intrinsic (numba passes its context)
            om = fma(1.0, M[r, label], om)
        out[label] = hm + H[i, label] * om - (k * H[i, label] - tie[i, label])


@kernel
def adaolm_chain(H: Float64Array2D, tie: Float64Array2D, alpha: Float64Array1D):  # pragma: no cover - compiled
    """Adaboost.OLM's weak predictions l^i = argmin_l h^i . C(s^{i-1})[:, l], one learner after the other
    (paper 001, eq. 9; Algorithm 2; :func:`expected_costs`), and the votes s^0..s^N they cast: returns
    (labels, states). ``tie`` (N, k) breaks ties.
    """
    N, k = H.shape
    labels = np.empty(N, np.intp)
    chain_into(H, tie, alpha, np.empty(k), np.empty((k, k)), np.empty(k), labels)
    return labels, vote_states(labels, alpha, k)


@njit(cache=True, nogil=True, inline="always")
def chain_into(H, tie, alpha, s, M, costs, labels):  # pragma: no cover - compiled
    """:func:`adaolm_chain`'s weak predictions into ``labels`` (N,); ``s`` (k,), ``M`` (k, k) and ``costs`` (k,)
    are scratch."""
    N, k = H.shape
    s[:] = 0.0
    changed = True
    for i in range(N):
        if changed:
            for r in range(k):
                for label in range(k):
                    M[r, label] = expit(s[label] - s[r])
        expected_costs(H, tie, i, M, costs)
        labels[i] = np.argmin(costs)
        changed = alpha[i] != 0.0
        if changed:
            s[labels[i]] += alpha[i]


@njit(cache=True, nogil=True, inline="always")
def importance_weight(i, paper_weight, constants, first, floor):  # pragma: no cover - compiled
    """Tree i's importance weight from its paper weight (Algorithm 2: the cost of the true label, eq. 9,
    / (k - 1)); with the authors' per-tree ``constants`` (none: the paper's), ``first`` for tree 0 and
    ``max(constants[i] * paper_weight, floor)`` for the others, as the authors' code."""
    if constants.shape[0] == 0:
        return paper_weight
    return first if i == 0 else max(constants[i] * paper_weight, floor)


@kernel
def importance_weights(
    paper_weights: Float64Array1D, constants: Float64Array1D, first: Float64, floor: Float64
):  # pragma: no cover - compiled
    """Every tree's importance weight (:func:`importance_weight`)."""
    out = np.empty(paper_weights.shape[0])
    for i in range(out.shape[0]):
        out[i] = importance_weight(i, paper_weights[i], constants, first, floor)
    return out


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


@kernel
def adaolm_pass(
    forest: ForestArrays, X: Float64Array2D, Y: Int64Array1D, alpha: Float64Array1D, hedge: Float64Array1D,
    uniforms: Float64Array1D, position: Int64, predictions: Int64Array1D, start: Int64, n_nodes: Int64,
    n_slots: Int64, t: Int64, tie_tolerance: Float64, argmax_labels: Boolean, constants: Float64Array1D,
    first: Float64, floor: Float64, authors_gradient: Boolean,
):  # pragma: no cover - compiled  # fmt: skip
    """Rows ``start``.. of a prequential pass of Adaboost.OLM over the VFDT forest (no importance scales), as
    ``AdaBoostOLM.predict_one`` then ``learn_one`` per row (paper 001, Algorithm 2), from the uniforms of
    ``rng.random()`` drawn ahead (2 N k tie breaks, scaled by ``tie_tolerance``, then Hedge's draw): the trees'
    distributions; their single labels (the chain, :func:`chain_into`, or each tree's most probable class with
    ``argmax_labels``) and the votes; the experts; Hedge's pick into ``predictions``; each tree fed the label with
    its importance weight (:func:`logistic_cost_row`, :func:`importance_weight`); alpha and Hedge updated in place
    (:func:`adaolm_update`, the step at round ``t``). Stops before a row the arrays have no room for
    (``has_room``) or whose draws the uniforms do not hold; returns the next row, the next unused uniform, the
    numbers of nodes and slots in use and the rounds seen. One compiled body, its scratch allocated once."""
    N, k = forest.root.shape[0], forest.class_mass.shape[1]
    per_row = 2 * N * k + 1
    H, tie, weights = np.empty((N, k)), np.empty((2, N, k)), np.zeros((N, k))
    states, labels, experts = np.empty((N + 1, k)), np.empty(N, np.int64), np.empty(N, np.int64)
    s, M, costs = np.empty(k), np.empty((k, k)), np.empty(k)
    leaves, due = np.empty(N, np.int64), np.empty(N, np.bool_)
    for r in range(start, X.shape[0]):
        if position + per_row > uniforms.shape[0] or not has_room(forest, n_nodes, n_slots):
            return r, position, n_nodes, n_slots, t
        x, y = X[r], Y[r]
        route_into(forest, x, leaves)
        masses_into(forest, leaves, True, H)
        for half in range(2):  # rng.random((2, N, k)) * tie_tolerance, in C order
            for i in range(N):
                for label in range(k):
                    tie[half, i, label] = uniforms[position + (half * N + i) * k + label] * tie_tolerance
        if argmax_labels:
            for i in range(N):
                labels[i] = argmax_with_tie(H, i, tie, 0, i)
        else:
            chain_into(H, tie[0], alpha, s, M, costs, labels)
        vote_states_into(labels, alpha, states)
        for i in range(N):
            experts[i] = argmax_with_tie(states, i + 1, tie, 1, i)
        predictions[r] = experts[hedge_index(hedge, uniforms[position + per_row - 1])]
        position += per_row
        for i in range(N):
            paper_weight = logistic_cost_row(states, i, y, costs) / (k - 1)
            weights[i, y] = importance_weight(i, paper_weight, constants, first, floor)
        n_nodes, n_slots = learn(forest, x, weights, leaves, n_nodes, n_slots, due)
        weights[:, y] = 0.0
        t += 1
        eta = 2.0 * math.sqrt(2.0) / ((k - 1) * math.sqrt(t))
        new_alpha, new_hedge = adaolm_update(states, labels, experts, alpha, hedge, y, eta, authors_gradient)
        alpha[:] = new_alpha
        hedge[:] = new_hedge
    return X.shape[0], position, n_nodes, n_slots, t
