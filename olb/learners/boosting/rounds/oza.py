"""Oza's online boosting, compiled: the chain of Poisson weights over the trees for one example
(:func:`oza_chain`), its draws numpy's own (:func:`poisson_draw`, from the generator's uniforms drawn ahead), and
a whole prequential pass over the VFDT forest (:func:`oza_pass`: the vote, the chain and the update per row).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from olb.kernel_declarations import Float64Array1D, Float64Array2D, Int64, Int64Array1D, kernel
from olb.weak.vfdt_arrays import ForestArrays
from olb.weak.vfdt_core import learn
from olb.weak.vfdt_rows import has_room, masses_into, route_into


# numpy's log-gamma series (SPECFUN, numpy/random/src/distributions/distributions.c, ``random_loggam``)
_LOGGAM_SERIES = np.array(
    [
        8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04, -5.952380952380952e-04,
        8.417508417508418e-04, -1.917526917526918e-03, 6.410256410256410e-03, -2.955065359477124e-02,
        1.796443723688307e-01, -1.39243221690590e00,
    ]
)  # fmt: skip


@njit(cache=True, nogil=True)
def _loggam(x):  # pragma: no cover - compiled
    """log Gamma(x) as numpy's ``random_loggam`` computes it (the same operations in the same order)."""
    if x == 1.0 or x == 2.0:
        return 0.0
    n = int(7 - x) if x < 7.0 else 0
    x0 = x + n
    x2 = (1.0 / x0) * (1.0 / x0)
    gl0 = _LOGGAM_SERIES[9]
    for k in range(8, -1, -1):
        gl0 *= x2
        gl0 += _LOGGAM_SERIES[k]
    gl = gl0 / x0 + 0.5 * 1.8378770664093453 + (x0 - 0.5) * math.log(x0) - x0
    if x < 7.0:
        for _ in range(n):
            gl -= math.log(x0 - 1.0)
            x0 -= 1.0
    return gl


@njit(cache=True, nogil=True)
def poisson_draw(lam, uniforms, position):  # pragma: no cover - compiled
    """numpy's ``Generator.poisson(lam)`` from its uniform doubles ``uniforms[position:]`` (what ``Generator.random``
    gives, in order): numpy's multiplication method below 10, Hoermann's transformed rejection (PTRS) from 10 on,
    the same operations in the same order; returns the draw and the next unused position, or (-1, -1) when the
    uniforms run out."""
    end = uniforms.shape[0]
    if lam == 0.0:
        return 0, position
    if lam < 10.0:
        enlam = math.exp(-lam)
        count, prod = 0, 1.0
        while position < end:
            prod *= uniforms[position]
            position += 1
            if prod > enlam:
                count += 1
            else:
                return count, position
        return -1, -1
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while position + 1 < end:
        U = uniforms[position] - 0.5
        V = uniforms[position + 1]
        position += 2
        us = 0.5 - abs(U)
        k = int(math.floor((2 * a / us + b) * U + lam + 0.43))
        if us >= 0.07 and V <= vr:
            return k, position
        if k < 0 or (us < 0.013 and V > us):
            continue
        if (math.log(V) + math.log(invalpha) - math.log(a / (us * us) + b)) <= (
            -lam + k * loglam - _loggam(float(k + 1))
        ):
            return k, position
    return -1, -1


@kernel
def oza_chain(
    mass: Float64Array2D,
    y: Int64,
    right: Float64Array1D,
    wrong: Float64Array1D,
    uniforms: Float64Array1D,
    position: Int64,
    counts: Float64Array1D,
):  # pragma: no cover - compiled
    """Oza's chain over the N trees for one example of label ``y`` (Oza & Russell 2001): lambda = 1; tree m draws
    its weight K ~ Poisson(lambda) (:func:`poisson_draw`, from ``uniforms[position:]``) into ``counts[m]``; it is
    right after the update when its leaf mass of the label plus K (``mass[m, y] + K``, its leaf's unnormalized
    masses before the update, N x k) beats the lower labels' strictly and the higher ones' weakly (the argmax after
    the update, first index on ties): then ``right[m] += lambda`` and lambda *= (right + wrong) / (2 right), else
    the same with ``wrong``. Returns the next unused position of ``uniforms``; -1 (nothing written) when they run
    out."""
    n, k = mass.shape
    sc, sw = right.copy(), wrong.copy()
    lam = 1.0
    for m in range(n):
        draw, position = poisson_draw(lam, uniforms, position)
        if position < 0:
            return -1
        kk = float(draw)
        counts[m] = kk
        below, above = -np.inf, -np.inf
        for c in range(y):
            below = max(below, mass[m, c])
        for c in range(y + 1, k):
            above = max(above, mass[m, c])
        if mass[m, y] + kk > below and mass[m, y] + kk >= above:
            sc[m] += lam
            lam *= (sc[m] + sw[m]) / (2.0 * sc[m])
        else:
            sw[m] += lam
            lam *= (sc[m] + sw[m]) / (2.0 * sw[m])
    right[:] = sc
    wrong[:] = sw
    return position


EPS_CLIP = 1e-6  # a tree's error rate eps_m is clipped to [EPS_CLIP, 1 - EPS_CLIP] for its vote weight


@njit(cache=True, nogil=True, inline="always")
def tree_vote_weight(right, wrong):  # pragma: no cover - compiled
    """Tree m's vote weight: log((1 - eps_m) / eps_m) where its error rate eps_m = wrong / (right + wrong) (1
    without history), clipped to [EPS_CLIP, 1 - EPS_CLIP], is below 1/2, else 0 (Oza & Russell 2001)."""
    total = right + wrong
    eps = wrong / total if total > 0 else 1.0
    eps = min(max(eps, EPS_CLIP), 1 - EPS_CLIP)
    return math.log((1 - eps) / eps) if eps < 0.5 else 0.0


@kernel
def vote_weights(right: Float64Array1D, wrong: Float64Array1D):  # pragma: no cover - compiled
    """Every tree's vote weight (:func:`tree_vote_weight`)."""
    weights = np.empty(right.shape[0])
    for m in range(right.shape[0]):
        weights[m] = tree_vote_weight(right[m], wrong[m])
    return weights


@njit(cache=True, nogil=True, inline="always")
def vote(proba, right, wrong, votes):  # pragma: no cover - compiled
    """Oza's prediction from the trees' class probabilities ``proba`` (N, k): each tree's class (the first argmax)
    with its vote weight (:func:`tree_vote_weight`), the totals added tree by tree; the first class of the largest
    total, or the first tree's class when no tree's weight is positive. ``votes`` (k,) is scratch."""
    votes[:] = 0.0
    voting = False
    for m in range(proba.shape[0]):
        weight = tree_vote_weight(right[m], wrong[m])
        voting = voting or weight > 0
        votes[np.argmax(proba[m])] += weight
    return np.argmax(votes) if voting else np.argmax(proba[0])


@kernel
def oza_prediction(proba: Float64Array2D, right: Float64Array1D, wrong: Float64Array1D):  # pragma: no cover - compiled
    """Oza's prediction for one example (:func:`vote`)."""
    return vote(proba, right, wrong, np.empty(proba.shape[1]))


@kernel
def oza_pass(
    forest: ForestArrays, X: Float64Array2D, Y: Int64Array1D, right: Float64Array1D, wrong: Float64Array1D,
    uniforms: Float64Array1D, position: Int64, predictions: Int64Array1D, start: Int64, n_nodes: Int64,
    n_slots: Int64,
):  # pragma: no cover - compiled  # fmt: skip
    """Rows ``start``.. of a prequential pass of Oza's boosting over the VFDT forest (pseudo-count 1, no importance
    scales), as ``OzaBoost.predict_one`` then ``learn_one`` per row: the vote (:func:`vote`) into
    ``predictions``; the leaves' unnormalized masses, from which :func:`oza_chain` tells which trees are right after
    their update; then each tree fed the label with weight K. Stops before a row the arrays have no room for (``has_room``) or whose chain the
    uniforms do not cover; returns the next row, the next unused uniform and the numbers of nodes and slots in
    use. One compiled body, its scratch allocated once."""
    n_trees, k = forest.root.shape[0], forest.class_mass.shape[1]
    weights, proba, mass = np.zeros((n_trees, k)), np.empty((n_trees, k)), np.empty((n_trees, k))
    leaves, due = np.empty(n_trees, np.int64), np.empty(n_trees, np.bool_)
    counts, votes = np.empty(n_trees), np.empty(k)
    for r in range(start, X.shape[0]):
        if not has_room(forest, n_nodes, n_slots):
            return r, position, n_nodes, n_slots
        x, y = X[r], Y[r]
        route_into(forest, x, leaves)
        masses_into(forest, leaves, True, proba)
        predictions[r] = vote(proba, right, wrong, votes)
        masses_into(forest, leaves, False, mass)
        after = oza_chain(mass, y, right, wrong, uniforms, position, counts)
        if after < 0:
            return r, position, n_nodes, n_slots
        position = after
        weights[:, y] = counts
        n_nodes, n_slots = learn(forest, x, weights, leaves, n_nodes, n_slots, due)
        weights[:, y] = 0.0
    return X.shape[0], position, n_nodes, n_slots
