"""A VFDT leaf's statistics, the numba helpers of :mod:`olb.weak.vfdt_core`'s updates and splits: the pool rows
that hold a leaf's Gaussian estimators per label (taken at a label's first weight, freed when the leaf splits), the
estimators' weighted update, a node's weight and classes, and a new leaf's masses."""

from __future__ import annotations

import numpy as np
from numba import njit

from olb.weak.vfdt_sums import pairwise_sum


@njit(cache=True, nogil=True, inline="always")
def pool_row(pool, s, label):  # pragma: no cover - compiled
    """The pool row of label ``label``'s estimators at slot ``s``, taken at its first weight there: a free row
    (``free_pairs[:pairs[1]]``) first, else the next unused one (``pairs[0]``)."""
    pair_of, pairs, free_pairs = pool
    p = pair_of[s, label]
    if p < 0:
        if pairs[1] > 0:
            pairs[1] -= 1
            p = free_pairs[pairs[1]]
        else:
            p = pairs[0]
            pairs[0] += 1
        pair_of[s, label] = p
    return p


@njit(cache=True, nogil=True, inline="always")
def add_to_estimators(estimators, x, covariates, p, w):  # pragma: no cover - compiled
    """A tree's ``covariates`` of ``x`` into pool row ``p`` of the ``estimators`` (weight, mean, M2, min, max) with
    weight ``w``: each one's weighted Gaussian estimator (West's incremental update) and its min/max, a missing
    value skipped (weight 0)."""
    g_weight, g_mean, g_m2, g_min, g_max = estimators
    for j in range(covariates.shape[0]):
        xv = x[covariates[j]]
        wv = w
        if np.isnan(xv):
            xv, wv = 0.0, 0.0
        mean = g_mean[p, j]
        before = g_weight[p, j]
        total = before + wv
        diff = xv - mean
        new_mean = mean + (wv * diff / total if total > 0 else 0.0)
        g_m2[p, j] += wv * diff * (xv - new_mean)
        g_mean[p, j] = new_mean
        g_weight[p, j] = total
        if wv > 0:  # the first positive weight sets min/max (as min(+inf, x) and max(-inf, x) would)
            g_min[p, j] = min(g_min[p, j], xv) if before > 0 else xv
            g_max[p, j] = max(g_max[p, j], xv) if before > 0 else xv


@njit(cache=True, nogil=True, inline="always")
def weight_and_classes(class_mass, seen, node):  # pragma: no cover - compiled
    """A node's weight (its class masses' pairwise sum) and the number of classes it has seen."""
    k = class_mass.shape[1]
    n_classes = 0
    for label in range(k):
        n_classes += seen[node, label]
    return pairwise_sum(class_mass[node], 0, k), n_classes


@njit(cache=True, nogil=True, inline="always")
def free_pool_rows(forest, s, k):  # pragma: no cover - compiled
    """Clear slot ``s``'s Gaussian statistics: its labels' pool rows zeroed and freed, the slot mapping none."""
    pair_of, pairs, free_pairs = forest.pair_of, forest.pairs, forest.free_pairs
    for c in range(k):
        p = pair_of[s, c]
        if p >= 0:
            forest.g_weight[p] = 0.0
            forest.g_mean[p] = 0.0
            forest.g_m2[p] = 0.0
            forest.g_min[p] = 0.0
            forest.g_max[p] = 0.0
            free_pairs[pairs[1]] = p
            pairs[1] += 1
            pair_of[s, c] = -1


@njit(cache=True, nogil=True, inline="always")
def new_leaf(forest, node, mass, s, k):  # pragma: no cover - compiled
    """Node ``node`` made a leaf of slot ``s`` holding the class masses ``mass`` (its weight as the last attempt's)."""
    forest.slot[node] = s
    for c in range(k):
        forest.class_mass[node, c] = mass[c]
        forest.seen[node, c] = mass[c] > 0
    forest.weight_at_last_attempt[node] = pairwise_sum(mass, 0, k)
