"""OnlineMBBM's rounds (paper 001, Algorithm 1), compiled: its chain of weak predictions over its memo of vote
states (:func:`mbbm_chain`; the memo is :class:`~olb.learners.boosting.multiclass.mbbm_memo.StateMemo`) and the
steps of its cost memo (:class:`~olb.learners.boosting.multiclass.mbbm_memo.MBBMCosts`): a vote state's canonical
form (:func:`canonical_votes`), a cost matrix's weights and normalized costs (:func:`cost_weights`) and a canonical
entry relabelled to the state (:func:`relabelled_costs`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from olb.kernel_declarations import (
    Float64,
    Float64Array1D,
    Float64Array2D,
    Float64Array3D,
    Int64,
    Int64Array1D,
    Int64Array2D,
    kernel,
)
from olb.weak.vfdt_sums import pairwise_sum


@njit(cache=True, nogil=True)
def vector_matrix(h, M, out):  # pragma: no cover - compiled
    """``out = h @ M`` for h (k,) and M (k, k) by numba's ``np.dot``, a BLAS ``dgemv`` (scipy's OpenBLAS) like
    numpy's ``@`` (numpy's OpenBLAS): the same kernel on a given processor, so the same order of additions (tested
    bit for bit against numpy's product)."""
    out[:] = np.dot(h, M)


@kernel
def mbbm_chain(
    H: Float64Array2D,
    tie: Float64Array2D,
    start: Int64,
    node: Int64,
    child: Int64Array2D,
    matrices: Float64Array3D,
    weights: Float64Array2D,
    labels: Int64Array1D,
    out_weights: Float64Array2D,
):  # pragma: no cover - compiled
    """OnlineMBBM's chain of weak predictions (paper 001, Algorithm 1) from learner ``start`` at the vote state
    ``node``, over a memo of the states met so far: node v holds the learner's cost matrix ``matrices[v]`` (C or D,
    whichever the learner predicts with), the weights ``weights[v]`` and its successors ``child[v, l]`` (the state
    after a vote for l; -1 if not in the memo yet).

    Learner i's label is argmin_l (h^i M + tie^i)[l] (h^i M as numpy's ``@``, :func:`vector_matrix`); its weights
    go to ``out_weights[i]``, its label to ``labels[i]``. Returns (i, v): i = N when the chain is done, else learner
    i's successor state is missing from the memo (the caller adds it and resumes from i + 1 at that state).
    """
    N, k = H.shape
    h = np.empty(k)
    costs = np.empty(k)
    for i in range(start, N):
        for label in range(k):
            out_weights[i, label] = weights[node, label]
            h[label] = H[i, label]
        vector_matrix(h, matrices[node], costs)
        for label in range(k):
            costs[label] = costs[label] + tie[i, label]
        chosen = np.argmin(costs)
        labels[i] = chosen
        if i == N - 1:
            break
        nxt = child[node, chosen]
        if nxt < 0:
            return i, node
        node = nxt
    return N, node


@kernel
def canonical_votes(s: Int64Array1D, n: Int64, order: Int64Array1D, gaps: Int64Array1D):  # pragma: no cover - compiled
    """The canonical form of the vote state ``s`` with ``n`` draws to go (:class:`MBBMCosts`): ``order`` the labels
    by decreasing votes, ties in label order (numpy's stable ``argsort(-s)``), ``gaps`` their gaps to the leader,
    clipped at g + n + 2 for g the largest gap of a label that can still win (gap <= n + 1)."""
    k = s.shape[0]
    for i in range(k):  # insertion sort: stable
        label = i
        j = i
        while j > 0 and s[order[j - 1]] < s[label]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = label
    top = s[order[0]]
    live = 0
    for i in range(k):
        gaps[i] = top - s[order[i]]
        if gaps[i] <= n + 1:
            live = gaps[i]
    for i in range(k):
        gaps[i] = min(gaps[i], live + n + 2)


@kernel
def cost_weights(C: Float64Array2D, zero: Float64, W: Float64Array1D, D: Float64Array2D):  # pragma: no cover - compiled
    """Algorithm 1's weights W[r] = sum_l (C[r, l] - C[r, r]) (line 10; numpy's pairwise sum of the row) and the
    normalized costs D[r, l] = (C[r, l] - C[r, r]) / W[r] of eq. (5) (a zero row where W[r] = 0); differences
    below ``zero`` count as 0."""
    k = C.shape[0]
    for r in range(k):
        for label in range(k):
            difference = C[r, label] - C[r, r]
            D[r, label] = difference if difference >= zero else 0.0
        W[r] = pairwise_sum(D[r], 0, k)
        for label in range(k):
            D[r, label] = D[r, label] / W[r] if W[r] > 0 else 0.0


@kernel
def relabelled_costs(
    C: Float64Array2D,
    W: Float64Array1D,
    D: Float64Array2D,
    order: Int64Array1D,
    C_out: Float64Array2D,
    W_out: Float64Array1D,
    D_out: Float64Array2D,
):  # pragma: no cover - compiled
    """A canonical entry (C, W, D), whose label i is label ``order[i]`` of the state, in the state's labels."""
    k = order.shape[0]
    for i in range(k):
        W_out[order[i]] = W[i]
        for j in range(k):
            C_out[order[i], order[j]] = C[i, j]
            D_out[order[i], order[j]] = D[i, j]
