"""One example's steps through a VFDT forest, the numba helpers behind :mod:`olb.weak.vfdt_core`'s per-row kernels:
routing, the leaves' prediction masses and the statistics update, each writing into arrays its caller provides.

They are inlined into their callers (``inline="always"``): a kernel that calls them (``route``, ``predict_row``,
``learn_row``, a whole ``voting_pass``) is one compiled body, without a call per step that would count a
reference to every array of the forest's record in and out, and a whole pass allocates its scratch once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from olb.weak.vfdt_leaves import add_to_estimators, pool_row, weight_and_classes
from olb.weak.vfdt_sums import pairwise_sum


@njit(cache=True, nogil=True, inline="always")
def route_into(forest, x, leaves):  # pragma: no cover - compiled
    """Every tree's leaf for ``x`` into ``leaves`` (N,): ``vfdt_core.route``'s walk."""
    root, covariates, split_feature = forest.root, forest.covariates, forest.split_feature
    threshold, left, right, nan_left = forest.threshold, forest.left, forest.right, forest.nan_left
    for i in range(root.shape[0]):
        node = root[i]
        while split_feature[node] >= 0:
            v = x[covariates[i, split_feature[node]]]
            if np.isnan(v):
                go_left = nan_left[node]
            else:
                go_left = v <= threshold[node]
            node = left[node] if go_left else right[node]
        leaves[i] = node


@njit(cache=True, nogil=True, inline="always")
def masses_into(forest, leaves, normalize, mass):  # pragma: no cover - compiled
    """The leaves' prediction masses into ``mass`` (N, k): ``vfdt_core.leaf_masses``'."""
    class_mass, seen = forest.class_mass, forest.seen
    k = class_mass.shape[1]
    for i in range(leaves.shape[0]):
        leaf = leaves[i]
        for c in range(k):
            mass[i, c] = class_mass[leaf, c] + (0.0 if seen[leaf, c] else 1.0)
        if normalize:
            total = pairwise_sum(mass[i], 0, k)
            for c in range(k):
                mass[i, c] /= total


@njit(cache=True, nogil=True, inline="always")
def feed(forest, x, weights, leaves, due):  # pragma: no cover - compiled
    """``vfdt_core.update_statistics``' update: label l to tree i's leaf with weight ``weights[i, l]`` (> 0);
    ``due[i]`` whether tree i's fed leaf is due for a split attempt (its weight then recorded as the last
    attempt's). Returns the number of leaves due. A tree's due test reads only its own leaf, so each tree is tested
    right after its update."""
    slot, class_mass, seen, pseudo_count = forest.slot, forest.class_mass, forest.seen, forest.pseudo_count
    pool = (forest.pair_of, forest.pairs, forest.free_pairs)
    estimators = (forest.g_weight, forest.g_mean, forest.g_m2, forest.g_min, forest.g_max)
    covariates = forest.covariates
    n_trees, k = weights.shape
    n_due = 0
    for i in range(n_trees):
        node = leaves[i]
        s = slot[node]
        fed = False
        for label in range(k):
            w = weights[i, label]
            if not w > 0:
                continue
            fed = True
            first = 0.0 if seen[node, label] else 1.0
            class_mass[node, label] += w + pseudo_count * first
            seen[node, label] = True
            add_to_estimators(estimators, x, covariates[i], pool_row(pool, s, label), w)
        due[i] = False
        if fed:
            weight, n_classes = weight_and_classes(class_mass, seen, node)
            if weight - forest.weight_at_last_attempt[node] > forest.grace[i] and n_classes > 1:
                due[i] = True
                forest.weight_at_last_attempt[node] = weight
                n_due += 1
    return n_due


@njit(cache=True, nogil=True, inline="always")
def due_leaves(leaves, due):  # pragma: no cover - compiled
    """The leaves ``due`` marks, in increasing node order, and their trees."""
    trees = np.flatnonzero(due)
    trees = trees[np.argsort(leaves[trees])]  # node numbers are unique: any sort gives this order
    return leaves[trees], trees


@njit(cache=True, nogil=True, inline="always")
def has_room(forest, n_nodes, n_slots):  # pragma: no cover - compiled
    """Whether the arrays hold one more ``learn_row``: a new pool row for every (tree, label), two nodes and one
    slot per tree."""
    n_trees, k = forest.root.shape[0], forest.class_mass.shape[1]
    return (
        forest.pairs[0] + n_trees * k <= forest.g_weight.shape[0]
        and n_nodes + 2 * n_trees <= forest.split_feature.shape[0]
        and n_slots + n_trees <= forest.pair_of.shape[0]
    )
