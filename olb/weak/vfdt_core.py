"""The VFDT forest's per-example loops, compiled with numba (see docs/speed.md).

The forest (:class:`olb.weak.vfdt.VFDTForest`) keeps N trees in shared arrays; these functions walk them for
one example: :func:`route` finds every tree's leaf, :func:`update_statistics` adds the weighted labels to
the leaves' class masses and Gaussian estimators, :func:`evaluate_splits`, :func:`branch_masses` and
:func:`apply_splits` attempt and make the splits. They do the same arithmetic, in the same order, as the
numpy expressions they replaced, so results are bit-identical. Their numba helpers beside them: numpy's pairwise
sums (:mod:`olb.weak.vfdt_sums`), one row's routing, masses and update, inlined into the per-row kernels and the
whole pass (:mod:`olb.weak.vfdt_rows`), a leaf's statistics (:mod:`olb.weak.vfdt_leaves`), its candidate splits
(:mod:`olb.weak.vfdt_candidates`), their merit and the Hoeffding test (:mod:`olb.weak.vfdt_merit`) and the screen
of the split attempts (:mod:`olb.weak.vfdt_screen`). The ``@kernel`` functions take the forest's arrays
as one record (:class:`olb.weak.vfdt_arrays.ForestArrays`); they are compiled ahead of time, once per machine,
and reached through :mod:`olb.kernels` (numba's JIT under ``OLB_KERNELS=jit``).
"""

from __future__ import annotations


import numpy as np
from numba import njit

from olb.kernel_declarations import (
    Boolean,
    BooleanArray1D,
    BooleanArray2D,
    Float64Array1D,
    Float64Array2D,
    Float64Array3D,
    Int64,
    Int64Array1D,
    Int64Array2D,
    kernel,
)
from olb.weak.vfdt_arrays import ForestArrays
from olb.weak.vfdt_candidates import class_sigma, mass_left
from olb.weak.vfdt_leaves import free_pool_rows, new_leaf
from olb.weak.vfdt_merit import entropy_bits, hoeffding_bound, hoeffding_test, score_covariate
from olb.weak.vfdt_screen import stays_a_leaf
from olb.weak.vfdt_rows import due_leaves, feed, masses_into, has_room, route_into


@kernel
def route(forest: ForestArrays, x: Float64Array1D):  # pragma: no cover - compiled
    """Leaf node of every tree for the input ``x`` (d,); a missing value goes to the ``nan_left`` side."""
    leaves = np.empty(forest.root.shape[0], np.int64)
    route_into(forest, x, leaves)
    return leaves


@kernel
def leaf_masses(forest: ForestArrays, leaves: Int64Array1D, normalize: Boolean):  # pragma: no cover - compiled
    """Prediction masses (N, k) of the leaves: the class masses, with 1 for a class the leaf has not seen (the
    smoothed histogram); divided by their sum per leaf if ``normalize``."""
    mass = np.empty((leaves.shape[0], forest.class_mass.shape[1]))
    masses_into(forest, leaves, normalize, mass)
    return mass


@kernel
def update_statistics(
    forest: ForestArrays, x: Float64Array1D, weights: Float64Array2D, leaves: Int64Array1D
):  # pragma: no cover - compiled
    """Feed label l to tree i's leaf with weight ``weights[i, l]`` (> 0); return the fed leaves due for a split
    attempt, in increasing node order, and their trees.

    Class masses get the weight, plus ``pseudo_count`` the first time a class reaches the node; every
    covariate's weighted Gaussian estimator (West's incremental update) and min/max take x, skipping NaN. A fed
    leaf is due when its weight grew by more than its tree's grace period since the last attempt and it has seen
    more than one class; its weight is then recorded as the last attempt's.

    The estimators of label l at slot s live in row ``pair_of[s, l]`` of the pool (``g_*``, rows x d'), taken
    at l's first weight there: from the free rows ``free_pairs[:pairs[1]]`` first, else the next unused row
    ``pairs[0]`` (the caller keeps room for every label of every tree). A row's min/max are meaningful only
    where its weight is positive (the pool starts as zeros, not +-inf, so its untouched pages cost no memory).
    """
    due = np.empty(weights.shape[0], np.bool_)
    feed(forest, x, weights, leaves, due)
    return due_leaves(leaves, due)


# ---------------------------------------------------------------------------------------------------------
# Split attempts, for all due leaves of a round at once. The normal CDF is scipy's and log2 glibc's, called per
# value (numba's own versions differ from them in the last bits, and a last bit changes results: see
# benchmarks/last_bit_sensitivity.py). Sums over labels follow numpy's pairwise order (:func:`pairwise_sum`).
# ---------------------------------------------------------------------------------------------------------


@kernel
def evaluate_splits(
    forest: ForestArrays, leaves: Int64Array1D, trees: Int64Array1D, screen: Boolean
):  # pragma: no cover - compiled
    """Every candidate split of every leaf, its information gain, and the Hoeffding test of each leaf, in one pass.

    Thresholds lie at ``fractions`` of the way from the covariate's smallest to its largest observed value. A
    class's weight left of t is W_c Phi((t - mu_c) / sigma_c) (scipy's normal CDF): none below the class's
    smallest value (or without weight), all above its largest. A candidate scores -inf unless both branches hold
    more than ``min_branch_fraction`` of the weight; the leaf splits when best - second best > eps or eps < tau,
    eps = sqrt(log2(#classes)^2 ln(1/delta) / (2 n)), n the leaf's weight.

    Sums over the k classes are numpy's pairwise sums (``forest.plan_*``: :func:`olb.weak.vfdt.pairwise_plan`
    (k)).

    Returns per leaf whether it splits and the best feature (of exactly tied best merits the lowest covariate
    index, a rule that does not depend on the CPU, unlike numpy's argsort), and per (leaf, covariate) whether it
    has candidates, the merit and index of its best threshold; and the thresholds (L, d', T). The masses a split
    hands to its children are :func:`branch_masses`'.

    ``screen`` first scores a leaf's candidates with bounded error (:func:`stays_a_leaf`); a leaf that cannot
    split whatever the rounding is settled there (no split, no candidates returned), and only the others are
    scored exactly. The splits are the same with or without it.
    """
    slot, pair_of, class_mass = forest.slot, forest.pair_of, forest.class_mass
    g_weight, g_mean, g_m2, g_min, g_max = forest.g_weight, forest.g_mean, forest.g_m2, forest.g_min, forest.g_max
    fractions, min_variance, min_branch_fraction = forest.fractions, forest.min_variance, forest.min_branch_fraction
    tau = forest.tau
    plan_starts, plan_lengths, plan_ops = forest.plan_starts, forest.plan_lengths, forest.plan_ops
    n_leaves, n_thr = leaves.shape[0], fractions.shape[0]
    d, k = g_weight.shape[1], class_mass.shape[1]
    usable = np.zeros((n_leaves, d), np.bool_)
    thresholds = np.zeros((n_leaves, d, n_thr))
    splits = np.zeros(n_leaves, np.bool_)
    best_feature = np.zeros(n_leaves, np.int64)
    best_threshold = np.zeros((n_leaves, d), np.int64)
    per_feature = np.full((n_leaves, d), -np.inf)
    terms, every, nonzero = np.zeros(k), np.arange(k), np.empty(k, np.int64)
    plan = (plan_starts, plan_lengths, plan_ops, np.empty(plan_starts.shape[0]))
    # the covariate's labels with weight (the others have 0 on both sides of every threshold), gathered once per
    # covariate into contiguous arrays: label, weight, mean, sigma, min, max; their masses left of every threshold
    gathered = (np.empty(k, np.int64), np.empty(k), np.empty(k), np.empty(k), np.empty(k), np.empty(k))
    a_left = np.empty((n_thr, k))
    branches = (np.zeros(k), np.zeros(k), terms, nonzero, a_left)  # per label: left, right, entropy terms; scratch
    scratch = (np.empty(n_thr), a_left, np.empty(d))  # the screen's thresholds, masses and merits
    for b in range(n_leaves):
        leaf = leaves[b]
        n_weight, eps = hoeffding_bound(forest, leaf, trees[b])
        pre = entropy_bits(class_mass[leaf], n_weight, terms, every, k, nonzero, plan)
        stats = (pair_of[slot[leaf]], g_weight, g_mean, g_m2, g_min, g_max, min_variance)
        if screen and not eps < tau[trees[b]]:
            if stays_a_leaf(pre, eps, stats, gathered, fractions, min_branch_fraction, scratch):
                continue
        terms[:] = 0.0  # from here on, only the active labels' terms are written
        for f in range(d):
            usable[b, f] = score_covariate(
                b, f, stats, gathered, branches, pre, fractions, min_branch_fraction, plan, thresholds[b, f],
                per_feature, best_threshold,
            )  # fmt: skip
        splits[b], best_feature[b] = hoeffding_test(per_feature[b], eps, tau[trees[b]])
    return splits, best_feature, usable, per_feature, best_threshold, thresholds


@kernel
def branch_masses(
    forest: ForestArrays,
    splits: BooleanArray1D,
    leaves: Int64Array1D,
    feature: Int64Array1D,
    best_threshold: Int64Array2D,
    thresholds: Float64Array3D,
):  # pragma: no cover - compiled
    """The class masses (L, k) left and right of the chosen threshold of every splitting leaf (``splits``), on
    covariate ``feature[b]``: the very numbers :func:`evaluate_splits` scored it with."""
    slot, pair_of, min_variance = forest.slot, forest.pair_of, forest.min_variance
    g_weight, g_mean, g_m2, g_min, g_max = forest.g_weight, forest.g_mean, forest.g_m2, forest.g_min, forest.g_max
    n_leaves, k = leaves.shape[0], pair_of.shape[1]
    left, right = np.zeros((n_leaves, k)), np.zeros((n_leaves, k))
    for b in range(n_leaves):
        if not splits[b]:
            continue
        s, f = slot[leaves[b]], feature[b]
        t = thresholds[b, f, best_threshold[b, f]]
        for c in range(k):
            p = pair_of[s, c]
            if p >= 0 and g_weight[p, f] > 0:
                W = g_weight[p, f]
                sigma = class_sigma(W, g_m2[p, f], min_variance)
                left[b, c] = mass_left(t, W, g_mean[p, f], sigma, g_min[p, f], g_max[p, f])
                right[b, c] = W - left[b, c]
    return left, right


@kernel
def apply_splits(
    forest: ForestArrays,
    splits: BooleanArray1D,
    feature: Int64Array1D,
    best_threshold: Int64Array2D,
    leaves: Int64Array1D,
    thresholds: Float64Array3D,
    branch_left: Float64Array2D,
    branch_right: Float64Array2D,
    n_nodes: Int64,
    n_slots: Int64,
):  # pragma: no cover - compiled
    """Split every leaf ``leaves[b]`` with ``splits[b]`` on covariate ``feature[b]`` at its best threshold.

    Its children are the next two nodes (left first), holding that threshold's branch masses (``branch_left``
    and ``branch_right`` per leaf, from :func:`branch_masses`); the left child
    takes the leaf's slot of Gaussian statistics, cleared (its pool rows zeroed and freed), the right child the
    next unused slot. Missing values will go to the heavier child. The arrays must have room for the new nodes
    and slots (the caller grows them; an unused slot maps no label: ``pair_of`` -1).
    """
    k = forest.class_mass.shape[1]
    for b in range(splits.shape[0]):
        if not splits[b]:
            continue
        leaf, f = leaves[b], feature[b]
        s = forest.slot[leaf]
        free_pool_rows(forest, s, k)
        for child, mass, child_slot in ((n_nodes, branch_left[b], s), (n_nodes + 1, branch_right[b], n_slots)):
            new_leaf(forest, child, mass, child_slot, k)
        forest.split_feature[leaf] = f
        forest.threshold[leaf] = thresholds[b, f, best_threshold[b, f]]
        forest.left[leaf], forest.right[leaf] = n_nodes, n_nodes + 1
        weight_at_last_attempt = forest.weight_at_last_attempt
        forest.nan_left[leaf] = weight_at_last_attempt[n_nodes] >= weight_at_last_attempt[n_nodes + 1]
        forest.slot[leaf] = -1
        n_nodes += 2
        n_slots += 1
    return n_nodes, n_slots


# ---------------------------------------------------------------------------------------------------------
# Whole steps in one call: a round's prediction (routing and masses) and a round's update (statistics and the
# split attempts they make due), so that a booster crosses into compiled code once per step; and a whole
# prequential pass of the trees voting alone (:class:`olb.learners.boosting.baselines.BestVFDT`).
# ---------------------------------------------------------------------------------------------------------


@kernel
def predict_row(forest: ForestArrays, x: Float64Array1D, normalize: Boolean):  # pragma: no cover - compiled
    """Every tree's leaf for ``x`` and the leaves' prediction masses: :func:`route` then :func:`leaf_masses`."""
    leaves = route(forest, x)
    return leaves, leaf_masses(forest, leaves, normalize)


@njit(cache=True, nogil=True, inline="always")
def learn(forest, x, weights, leaves, n_nodes, n_slots, due):  # pragma: no cover - compiled
    """:func:`learn_row` with its scratch ``due`` (N,) given."""
    if feed(forest, x, weights, leaves, due):
        due_nodes, trees = due_leaves(leaves, due)
        splits, feature, usable, merits, best_t, thresholds = evaluate_splits(forest, due_nodes, trees, True)
        if splits.any():
            left, right = branch_masses(forest, splits, due_nodes, feature, best_t, thresholds)
            n_nodes, n_slots = apply_splits(forest, splits, feature, best_t, due_nodes, thresholds, left, right,
                                            n_nodes, n_slots)  # fmt: skip
    return n_nodes, n_slots


@kernel
def learn_row(
    forest: ForestArrays, x: Float64Array1D, weights: Float64Array2D, leaves: Int64Array1D, n_nodes: Int64,
    n_slots: Int64,
):  # pragma: no cover - compiled  # fmt: skip
    """Feed ``weights`` (N, k) at ``leaves`` (:func:`update_statistics`), then attempt the splits that made due
    (:func:`evaluate_splits` with its screen, :func:`branch_masses`, :func:`apply_splits`); returns the numbers of
    nodes and slots in use. The arrays must have room for every label of every tree in the pool and for N splits
    (:func:`has_room`)."""
    return learn(forest, x, weights, leaves, n_nodes, n_slots, np.empty(weights.shape[0], np.bool_))


@kernel
def voting_pass(
    forest: ForestArrays, X: Float64Array2D, Y: Int64Array1D, correct: Int64Array1D, predictions: Int64Array1D,
    hits: BooleanArray2D, start: Int64, n_nodes: Int64, n_slots: Int64,
):  # pragma: no cover - compiled  # fmt: skip
    """Rows ``start``.. of a prequential pass of N trees each fed every example with weight 1: per row, each
    tree's class (the argmax of its normalized leaf masses, the first on ties), the prediction of the tree right
    most often so far (``correct``, the first on ties), which trees were right (``hits``), then the update.
    Stops before a row the arrays have no room for (:func:`has_room`); returns the next row and the numbers of
    nodes and slots in use. One compiled body (the per-row steps inlined), its scratch allocated once."""
    n_trees, k = forest.root.shape[0], forest.class_mass.shape[1]
    weights, mass = np.zeros((n_trees, k)), np.empty((n_trees, k))
    leaves, due = np.empty(n_trees, np.int64), np.empty(n_trees, np.bool_)
    for r in range(start, X.shape[0]):
        if not has_room(forest, n_nodes, n_slots):
            return r, n_nodes, n_slots
        x = X[r]
        route_into(forest, x, leaves)
        masses_into(forest, leaves, True, mass)
        leader = np.argmax(correct)
        y = Y[r]
        for i in range(n_trees):
            vote = np.argmax(mass[i])
            if i == leader:
                predictions[r] = vote
            hits[r, i] = vote == y
            correct[i] += hits[r, i]
            weights[i, y] = 1.0
        n_nodes, n_slots = learn(forest, x, weights, leaves, n_nodes, n_slots, due)
        weights[:, y] = 0.0
    return X.shape[0], n_nodes, n_slots
