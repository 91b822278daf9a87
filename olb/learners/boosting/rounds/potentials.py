"""The exact potentials' costs, compiled: OnlineBMR's cost vectors (:func:`pairwise_cost_vectors`, paper 000) and
TopOpt's (:func:`pair_cost_vectors`, paper 004), each pair's terms read off the tabulated law of D_n
(:class:`~olb.learners.boosting.potentials.draws.DifferenceLaw`'s slope/intercept rows over floor(t)), and
OnlineMBBM's 0-1 cost matrices (:func:`zero_one_no_error`, paper 001, the generating functions of
:class:`~olb.learners.boosting.potentials.zero_one.ZeroOnePotential`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from olb.kernel_declarations import (
    BooleanArray1D,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Float64Array3D,
    Int64Array1D,
    Int64Array2D,
    kernel,
)
from olb.weak.vfdt_sums import pairwise_sum


@kernel
def pairwise_cost_vectors(
    S: Float64Array2D,
    relevant: BooleanArray1D,
    horizons: Int64Array1D,
    table: Float64Array3D,
    offset: Float64,
    top: Float64,
    margin: Float64,
):  # pragma: no cover - compiled
    """OnlineBMR's exact cost vectors c[l] = phi^n(s + e_l) (paper 000, eq. 2) of every row s of ``S`` (m, k), n the
    row's entry of ``horizons``; ``relevant`` a boolean (k,) mask. Returns (m, k); zeros if |Y| is 0 or k.

    ``table``, ``offset``, ``top`` are the tabulated law of D_n of
    :class:`~olb.learners.boosting.potentials.draws.DifferenceLaw` (its slope/intercept rows over floor(t)). For each pair
    (l in Y, r notin Y), t = margin + s[r] - s[l] gives h(t), h(t - 1) - h(t) and h(t + 1) - h(t) (one table row,
    each value t * slope + intercept, two roundings); c = (sum of h + the steps of the pairs containing l) / (|Y||Y^c|).
    The sums add in numpy's order on its (m, |Y|, |Y^c|, 3) array of these values: the steps of relevant l and
    the hinges over all pairs pairwise (contiguous runs of the last axis; the hinges' two axes coalesce into one
    run), the steps of irrelevant r across the relevant labels in index order (pairwise too if r is the only
    irrelevant label: numpy's iterator then drops that axis and the relevant labels become the contiguous run).
    """
    m, k = S.shape
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    n_rel, n_irr = rel.shape[0], irr.shape[0]
    C = np.zeros((m, k))
    if n_rel == 0 or n_irr == 0:
        return C
    pairs = n_rel * n_irr
    hinges = np.empty(pairs)
    down = np.empty(n_irr)
    ups = np.empty(n_rel)  # one irrelevant label: its steps are one contiguous run, which numpy sums pairwise
    for i in range(m):
        n = horizons[i]
        for a in range(n_rel):
            l = rel[a]
            for b in range(n_irr):
                r = irr[b]
                t = margin + S[i, r] - S[i, l]
                j = int(min(max(t + offset, 1.0), top))
                hinges[a * n_irr + b] = t * table[n, j, 0] + table[n, j, 3]
                down[b] = t * table[n, j, 1] + table[n, j, 4]
                up = t * table[n, j, 2] + table[n, j, 5]
                if n_irr == 1:
                    ups[a] = up
                else:
                    C[i, r] = up if a == 0 else C[i, r] + up
            C[i, l] = pairwise_sum(down, 0, n_irr)
        if n_irr == 1:
            C[i, irr[0]] = pairwise_sum(ups, 0, n_rel)
        total = pairwise_sum(hinges, 0, pairs)
        for label in range(k):
            C[i, label] = (C[i, label] + total) / pairs
    return C


@kernel
def pair_cost_vectors(
    S: Float64Array2D,
    a_idx: Int64Array1D,
    b_idx: Int64Array1D,
    weights: Float64Array1D,
    horizons: Int64Array1D,
    table: Float64Array3D,
    offset: Float64,
    top: Float64,
    margin: Float64,
):  # pragma: no cover - compiled
    """TopOpt's estimated cost vectors c-hat[l] = sum_p w_p Lambda^{a_p,b_p,n}(s + e_l) (paper 004, eq. 3) of every row
    s of ``S`` (m, k), n the row's entry of ``horizons``; pairs (a_p relevant, b_p irrelevant) with weights w_p.

    Same table as :func:`pairwise_cost_vectors`. Per pair, t = margin + s[b] - s[a] gives h(t) and its steps to
    t -/+ 1, each times w_p; c = sum_p h + (the steps of the pairs with a_p = l, in pair order from 0.0) + (those with
    b_p = l): numpy's pairwise sum of the hinges (a strided column of its (P, 3) array) and ``np.bincount``'s.
    """
    m, k = S.shape
    P = a_idx.shape[0]
    C = np.empty((m, k))
    hinges = np.empty(P)
    down = np.empty(k)
    up = np.empty(k)
    for i in range(m):
        n = horizons[i]
        for label in range(k):
            down[label] = 0.0
            up[label] = 0.0
        for p in range(P):
            t = margin + S[i, b_idx[p]] - S[i, a_idx[p]]
            j = int(min(max(t + offset, 1.0), top))
            w = weights[p]
            hinges[p] = (t * table[n, j, 0] + table[n, j, 3]) * w
            down[a_idx[p]] += (t * table[n, j, 1] + table[n, j, 4]) * w
            up[b_idx[p]] += (t * table[n, j, 2] + table[n, j, 5]) * w
        total = pairwise_sum(hinges, 0, P)
        for label in range(k):
            C[i, label] = (total + down[label]) + up[label]
    return C


@kernel
def zero_one_no_error(
    c: Float64Array2D,
    e: Int64Array2D,
    tau_re: Float64Array2D,
    tau_im: Float64Array2D,
    w_re: Float64Array2D,
    w_im: Float64Array2D,
    p_up: Float64Array1D,
    p_down: Float64Array2D,
):  # pragma: no cover - compiled
    """OnlineMBBM's probabilities of no error around a vote state (paper 001, eq. 3 and 4), by the generating
    functions of :class:`~olb.learners.boosting.potentials.zero_one.ZeroOnePotential`, for the H groups of equal
    votes: row group r with the bound offsets ``c[r, h]`` and the multiplicities ``e[r, h]`` of the other labels.

    ``p_up[r]`` is P(no error) for a label of group r at s + e_r (every bound + 1), ``p_down[r, h]`` at s + e_l for
    one label l of group h (its bound - 1, its multiplicity - 1). ``tau`` (n + 2, V) and ``w`` (n + 1, V) are the
    real and imaginary planes of the tables of :meth:`ZeroOnePotential.tables` (``w_im`` is -Im W): each
    probability is Re sum_{j, v} prod_h tau^e_h[b_h(j), v] W[j, v], b_h(j) = clip(c_h + j, -1, n) + 1. The
    products are numpy's (tau's powers by repeated products, the other groups' product by prefix and suffix); the
    sum over (j, v) adds in j then v order, not einsum's (the two agree to ~2e-15).
    """
    n = tau_re.shape[0] - 2
    V = tau_re.shape[1]
    H = c.shape[0]
    e_max = max(1, e.max())
    pow_re = np.empty((e_max + 1, n + 2, V))  # tau^i, i = 0..e_max
    pow_im = np.empty((e_max + 1, n + 2, V))
    pow_re[0] = 1.0
    pow_im[0] = 0.0
    for i in range(1, e_max + 1):
        for row in range(n + 2):
            for v in range(V):
                a_re, a_im = pow_re[i - 1, row, v], pow_im[i - 1, row, v]
                pow_re[i, row, v] = a_re * tau_re[row, v] - a_im * tau_im[row, v]
                pow_im[i, row, v] = a_re * tau_im[row, v] + a_im * tau_re[row, v]
    bound = np.empty(H, np.int64)  # the groups' rows of tau at j
    f_re = np.empty((H, V))  # the groups' factors at j
    f_im = np.empty((H, V))
    q_re = np.empty((H, V))  # the product over the other groups
    q_im = np.empty((H, V))
    full_re = np.empty(V)
    full_im = np.empty(V)
    suffix_re = np.empty(V)
    suffix_im = np.empty(V)
    for r in range(H):
        up = 0.0
        for h in range(H):
            p_down[r, h] = 0.0
        for j in range(n + 2):
            for h in range(H):
                bound[h] = int(min(max(c[r, h] + j, -1.0), n)) + 1
                f_re[h] = pow_re[e[r, h], bound[h]]
                f_im[h] = pow_im[e[r, h], bound[h]]
            full_re[:] = f_re[0]
            full_im[:] = f_im[0]
            for h in range(1, H):
                _times(full_re, full_im, f_re[h], f_im[h])
            if j >= 1:
                up += _real_dot(full_re, full_im, w_re[j - 1], w_im[j - 1])
            if j > n:
                break
            q_re[0] = 1.0
            q_im[0] = 0.0
            for h in range(1, H):
                q_re[h] = q_re[h - 1]
                q_im[h] = q_im[h - 1]
                _times(q_re[h], q_im[h], f_re[h - 1], f_im[h - 1])
            if H > 1:
                suffix_re[:] = f_re[H - 1]
                suffix_im[:] = f_im[H - 1]
                for h in range(H - 2, -1, -1):
                    _times(q_re[h], q_im[h], suffix_re, suffix_im)
                    _times(suffix_re, suffix_im, f_re[h], f_im[h])
            for h in range(H):
                down = int(min(max(c[r, h] - 1.0 + j, -1.0), n)) + 1
                _times(q_re[h], q_im[h], tau_re[down], tau_im[down])
                lower = max(e[r, h] - 1, 0)
                _times(q_re[h], q_im[h], pow_re[lower, bound[h]], pow_im[lower, bound[h]])
                p_down[r, h] += _real_dot(q_re[h], q_im[h], w_re[j], w_im[j])
        p_up[r] = up


@njit(cache=True, nogil=True)
def _times(a_re, a_im, b_re, b_im):  # pragma: no cover - compiled
    """a *= b for complex vectors in planes, numpy's complex product ((ac - bd) + (ad + bc)i)."""
    for v in range(a_re.shape[0]):
        x_re, x_im = a_re[v], a_im[v]
        a_re[v] = x_re * b_re[v] - x_im * b_im[v]
        a_im[v] = x_re * b_im[v] + x_im * b_re[v]


@njit(cache=True, nogil=True)
def _real_dot(x_re, x_im, w_re, w_im):  # pragma: no cover - compiled
    """sum_v Re(x_v W_v) with W stored as (Re W, -Im W)."""
    total = 0.0
    for v in range(x_re.shape[0]):
        total += x_re[v] * w_re[v] + x_im[v] * w_im[v]
    return total
