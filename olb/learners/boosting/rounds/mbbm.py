"""OnlineMBBM's rounds (paper 001, Algorithm 1), compiled: its chain of weak predictions over its memo of vote
states (:func:`mbbm_chain`; the memo is :class:`~olb.learners.boosting.multiclass.mbbm_memo.StateMemo`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from olb.kernel_declarations import Float64Array2D, Float64Array3D, Int64, Int64Array1D, Int64Array2D, kernel


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
