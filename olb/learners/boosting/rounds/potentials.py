"""The exact pairwise potentials' cost vectors, compiled: OnlineBMR's (:func:`pairwise_cost_vectors`, paper 000) and
TopOpt's (:func:`pair_cost_vectors`, paper 004), each pair's terms read off the tabulated law of D_n
(:class:`~olb.learners.boosting.potentials.draws.DifferenceLaw`'s slope/intercept rows over floor(t)).
"""

from __future__ import annotations

import numpy as np

from olb.kernel_declarations import (
    BooleanArray1D,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Float64Array3D,
    Int64Array1D,
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
