"""The VFDT forest's per-example loops, compiled with numba (see docs/speed.md).

The forest (:class:`olb.weak.vfdt.VFDTForest`) keeps N trees in shared arrays; these functions walk them for
one example: :func:`route` finds every tree's leaf, :func:`update_statistics` adds the weighted labels to
the leaves' class masses and Gaussian estimators. They do the same arithmetic, in the same order, as the
numpy expressions they replaced, so results are bit-identical. Compiled code is cached on disk next to
this file (or in ``NUMBA_CACHE_DIR`` where that is not writable), so only the first process compiles.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def route(x, covariates, root, split_feature, threshold, left, right, nan_left):  # pragma: no cover - compiled
    """Leaf node of every tree for the input ``x`` (d,); a missing value goes to the ``nan_left`` side."""
    n_trees = root.shape[0]
    leaves = np.empty(n_trees, np.int64)
    for i in range(n_trees):
        node = root[i]
        while split_feature[node] >= 0:
            v = x[covariates[i, split_feature[node]]]
            if np.isnan(v):
                go_left = nan_left[node]
            else:
                go_left = v <= threshold[node]
            node = left[node] if go_left else right[node]
        leaves[i] = node
    return leaves


@njit(cache=True, nogil=True)
def update_statistics(x, weights, leaves, covariates, slot, class_mass, seen, g_weight, g_mean, g_m2, g_min,
                      g_max, pseudo_count):  # pragma: no cover - compiled
    """Feed label l to tree i's leaf with weight ``weights[i, l]`` (> 0) and return which trees were fed.

    Class masses get the weight, plus ``pseudo_count`` the first time a class reaches the node; every
    covariate's weighted Gaussian estimator (West's incremental update) and min/max take x, skipping NaN.
    """
    n_trees, k = weights.shape
    d = covariates.shape[1]
    fed = np.zeros(n_trees, np.bool_)
    for i in range(n_trees):
        node = leaves[i]
        s = slot[node]
        for label in range(k):
            w = weights[i, label]
            if not w > 0:
                continue
            fed[i] = True
            first = 0.0 if seen[node, label] else 1.0
            class_mass[node, label] += w + pseudo_count * first
            seen[node, label] = True
            for j in range(d):
                xv = x[covariates[i, j]]
                wv = w
                if np.isnan(xv):
                    xv, wv = 0.0, 0.0
                mean = g_mean[s, j, label]
                total = g_weight[s, j, label] + wv
                diff = xv - mean
                new_mean = mean + (wv * diff / total if total > 0 else 0.0)
                g_m2[s, j, label] += wv * diff * (xv - new_mean)
                g_mean[s, j, label] = new_mean
                g_weight[s, j, label] = total
                if wv > 0:
                    g_min[s, j, label] = min(g_min[s, j, label], xv)
                    g_max[s, j, label] = max(g_max[s, j, label], xv)
    return fed
