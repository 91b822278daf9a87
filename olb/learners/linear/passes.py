"""The linear learners' rounds, compiled: one row (``learn_one``/``predict_one``) or a whole pass over a block of
rows (``learn_pass``) run the same code, so a pass gives the model that row-by-row learning gives, bit for bit.

Every sum runs in one fixed order on every CPU (numba, no fast-math, so no fused multiply-add): a score is
``sum_a val[a] W[idx[a], i]`` added over a row's nonzero entries in increasing feature order (the bias entry
last), ``<x, x>`` likewise; no BLAS call, whose summation order depends on the CPU it dispatches to.

A block of rows is held as CSR arrays ``(indptr, indices, data)`` of its nonzero entries, each row's indices
increasing (:func:`olb.learners.linear.rows.csr_entries`), dense blocks alike.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from olb.kernel_declarations import (
    Boolean,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Int64,
    Int64Array1D,
    Int8Array1D,
    Int8Array2D,
    kernel,
)
from olb.learners.linear.alt_loss import alt_coefficients, repeat_on_scores
from olb.learners.linear.rows import FALT, OLANSGD, PA_I, SALT
from olb.weak.vfdt_sums import pairwise_sum


@njit(cache=True)
def row_entries(indptr, indices, data, r, d, bias, idx, val):  # pragma: no cover - compiled
    """Copy row ``r``'s entries into ``idx``/``val`` (the constant-1 feature at index d last with ``bias``);
    return their number."""
    m = 0
    for a in range(indptr[r], indptr[r + 1]):
        idx[m], val[m] = indices[a], data[a]
        m += 1
    if bias:
        idx[m], val[m] = d, 1.0
        m += 1
    return m


@kernel
def row_scores(
    W: Float64Array2D, idx: Int64Array1D, val: Float64Array1D, out: Float64Array1D
):  # pragma: no cover - compiled
    """``out[i] = sum_a val[a] W[idx[a], i]``, added in the order of the entries."""
    out[:] = 0.0
    for a in range(idx.shape[0]):
        j, v = idx[a], val[a]
        for i in range(W.shape[1]):
            out[i] += v * W[j, i]
    return out


@njit(cache=True)
def sq_norm(val):  # pragma: no cover - compiled
    """``<x, x>`` over the entries, added in their order."""
    total = 0.0
    for a in range(val.shape[0]):
        total += val[a] * val[a]
    return total


@njit(cache=True)
def add_outer(W, idx, val, scale, coefficients):  # pragma: no cover - compiled
    """``W[idx[a], i] += scale * (val[a] coefficients[i])`` (the rank-one update of FALT and PA-BR)."""
    for a in range(idx.shape[0]):
        j, v = idx[a], val[a]
        for i in range(W.shape[1]):
            W[j, i] += scale * (v * coefficients[i])


@kernel
def falt_round(
    W: Float64Array2D,
    idx: Int64Array1D,
    val: Float64Array1D,
    y: Int8Array1D,
    eta: Float64,
    repeats: Int64,
    s: Float64Array1D,
    c_sum: Float64Array1D,
):  # pragma: no cover - compiled
    """One FALT round on one row: its scores, up to ``repeats`` ALT steps on them, one update of W."""
    row_scores(W, idx, val, s)
    if repeat_on_scores(s, y, eta * sq_norm(val), repeats, c_sum):
        add_outer(W, idx, val, eta, c_sum)


@kernel
def salt_round(
    W: Float64Array2D,
    G: Float64Array2D,
    idx: Int64Array1D,
    val: Float64Array1D,
    y: Int8Array1D,
    eta: Float64,
    delta: Float64,
    repeats: Int64,
):  # pragma: no cover - compiled
    """Up to ``repeats`` diagonal-AdaGrad steps of the ALT loss on one row (nonzero entries ``idx``, ``val``):
    G += g^2 and W -= eta g / (delta + sqrt(G)) entry by entry, with g = -c_i x_j. Returns the steps taken.

    Only the columns with c_i != 0 change, and the row's scores move by the change of its own entries, so a
    repeat costs O(nnz(x) |{i : c_i != 0}|)."""
    q1 = W.shape[1]
    s = np.zeros(q1)
    c = np.empty(q1)
    moving = np.empty(q1, dtype=np.int64)
    for a in range(idx.shape[0]):
        j, v = idx[a], val[a]
        for i in range(q1):
            s[i] += v * W[j, i]
    for r in range(repeats):
        if not alt_coefficients(s, y, c):
            return r
        m = 0
        for i in range(q1):
            if c[i] != 0.0:
                moving[m] = i
                m += 1
        for a in range(idx.shape[0]):
            j, v = idx[a], val[a]
            for t in range(m):
                i = moving[t]
                g = v * c[i]
                G[j, i] += g * g
                step = eta * g / (delta + np.sqrt(G[j, i]))
                W[j, i] += step
                s[i] += v * step
    return repeats


@kernel
def pa_steps_into(
    losses: Float64Array1D, sq_norm: Float64, C: Float64, first_order: Boolean, out: Float64Array1D
):  # pragma: no cover - compiled
    """PA step sizes: PA-I ``min(C, l / ||x||^2)`` (0 if ||x||^2 = 0), PA-II ``l / (||x||^2 + 1 / (2C))``."""
    for i in range(losses.shape[0]):
        if first_order:
            step = losses[i] / sq_norm if sq_norm > 0 else 0.0
            out[i] = C if C < step else step
        else:
            out[i] = losses[i] / (sq_norm + 0.5 / C)
    return out


@kernel
def pa_round(
    W: Float64Array2D,
    idx: Int64Array1D,
    val: Float64Array1D,
    y: Int8Array1D,
    C: Float64,
    first_order: Boolean,
    s: Float64Array1D,
    steps: Float64Array1D,
):  # pragma: no cover - compiled
    """One PA-BR round on one row: hinge losses of the scores against targets 2y - 1, steps, one update of W."""
    row_scores(W, idx, val, s)
    for i in range(s.shape[0]):
        t = 2.0 * y[i] - 1.0
        s[i] = max(0.0, 1.0 - t * s[i])  # the loss
    pa_steps_into(s, sq_norm(val), C, first_order, steps)
    for i in range(s.shape[0]):
        steps[i] = steps[i] * (2.0 * y[i] - 1.0)
    add_outer(W, idx, val, 1.0, steps)


@kernel
def rank_gradient_into(
    scores: Float64Array1D, y: Int8Array1D, smoothing: Float64, grad: Float64Array1D
):  # pragma: no cover - compiled
    """OLANSGD*'s gradient (:func:`olb.learners.linear.olansgd.smoothed_rank_gradient`) into ``grad``: the pair
    weights u = clip((1 - (s_k - s_l)) / gamma, 0, 1) / (|Y| |Ybar|) in a (|Y|, |Ybar|) matrix; a relevant label
    gets minus its row's sum (numpy's pairwise order), an irrelevant one its column's sum (rows in order; pairwise
    when it is the only irrelevant label), as numpy's ``u.sum(axis=1)`` and ``u.sum(axis=0)`` add."""
    q = y.shape[0]
    rel, irr = np.empty(q, np.int64), np.empty(q, np.int64)
    n_rel = n_irr = 0
    for k in range(q):
        if y[k] > 0:
            rel[n_rel] = k
            n_rel += 1
        else:
            irr[n_irr] = k
            n_irr += 1
    grad[:] = 0.0
    if n_rel == 0 or n_irr == 0:
        return grad
    u = np.empty((n_rel, n_irr))
    size = float(n_rel * n_irr)
    for a in range(n_rel):
        for b in range(n_irr):
            v = (1.0 - (scores[rel[a]] - scores[irr[b]])) / smoothing
            u[a, b] = min(max(v, 0.0), 1.0) / size
    for a in range(n_rel):
        grad[rel[a]] = -pairwise_sum(u[a], 0, n_irr)
    if n_irr == 1:  # numpy's iterator drops the length-1 axis: the column is one contiguous run, summed pairwise
        grad[irr[0]] = pairwise_sum(u.ravel(), 0, n_rel)
        return grad
    for b in range(n_irr):
        column = u[0, b]
        for a in range(1, n_rel):
            column += u[a, b]
        grad[irr[b]] = column
    return grad


@kernel
def olansgd_round(
    W: Float64Array2D,
    idx: Int64Array1D,
    val: Float64Array1D,
    y: Int8Array1D,
    state: Float64Array1D,
    eta: Float64,
    regularization: Float64,
    smoothing: Float64,
    s: Float64Array1D,
    grad: Float64Array1D,
):  # pragma: no cover - compiled
    """One OLANSGD* step on one row; ``state`` holds [scale, t] (W's shrinkage factor, the rows seen)."""
    state[1] += 1.0
    step = eta / np.sqrt(state[1])
    row_scores(W, idx, val, s)
    for i in range(s.shape[0]):
        s[i] = state[0] * s[i]
    rank_gradient_into(s, y, smoothing, grad)
    state[0] *= 1.0 - step * regularization if step * regularization < 1 else 0.0
    if state[0] < 1e-9:  # fold the scale back in before it underflows (or after a full shrink)
        for j in range(W.shape[0]):
            for i in range(W.shape[1]):
                W[j, i] *= state[0]
        state[0] = 1.0
    add_outer(W, idx, val, -(step / state[0]), grad)


@kernel
def learn_pass(
    rule: Int64,
    W: Float64Array2D,
    G: Float64Array2D,
    state: Float64Array1D,
    indptr: Int64Array1D,
    indices: Int64Array1D,
    data: Float64Array1D,
    bias: Boolean,
    Y: Int8Array2D,
    hyper: Float64Array1D,
):  # pragma: no cover - compiled
    """One round of ``rule`` on every row of a block, in order, with the hyperparameters ``hyper``:
    FALT :func:`falt_round` [eta, repeats]; SALT :func:`salt_round` [eta, delta, repeats] and its squared
    gradients ``G``; PA_I/PA_II :func:`pa_round` [C]; OLANSGD :func:`olansgd_round` [eta, regularization,
    smoothing] and its ``state`` [scale, t]. A rule ignores the ``G`` or ``state`` it does not have."""
    longest = 0
    for r in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[r + 1] - indptr[r])
    idx, val = np.empty(longest + 1, np.int64), np.empty(longest + 1)  # room for the bias entry
    s, work = np.empty(W.shape[1]), np.empty(W.shape[1])
    for r in range(Y.shape[0]):
        m = row_entries(indptr, indices, data, r, W.shape[0] - 1, bias, idx, val)
        if rule == FALT:
            falt_round(W, idx[:m], val[:m], Y[r], hyper[0], int(hyper[1]), s, work)
        elif rule == SALT:
            salt_round(W, G, idx[:m], val[:m], Y[r], hyper[0], hyper[1], int(hyper[2]))
        elif rule == OLANSGD:
            olansgd_round(W, idx[:m], val[:m], Y[r], state, hyper[0], hyper[1], hyper[2], s, work)
        else:
            pa_round(W, idx[:m], val[:m], Y[r], hyper[0], rule == PA_I, s, work)
