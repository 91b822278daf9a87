"""The per-example loops of :class:`olb.learners.stream_br.hoeffding.BRHT`, compiled with numba.

One Hoeffding tree per label, all in the shared arrays of :class:`TreeArrays` (nodes numbered across the trees).
Each function does river 0.26's arithmetic in river's order (``tree/nodes/htc_nodes.py``,
``tree/splitter/gaussian_splitter.py``, ``proba/gaussian.py``, ``tree/utils.py``), so that every value, and so every
choice, is river's bit for bit: numba calls the C library's ``log``, ``exp``, ``log2`` and ``erf``, as Python's
``math`` does. river's ``t ** 2`` and ``v ** 0.5`` are the C library's ``pow``, which can differ from ``t * t`` and
``sqrt(v)`` in the last bit; a constant exponent would let the compiler turn ``pow`` into those, so the kernels
take the exponents (``two``, ``half``) as arguments. ``pow`` costs more than a product: the naive Bayes sums call it
only where ``t * t`` may differ from it (:func:`near_tie`).

A row's features are present when nonzero (river receives a row's nonzero entries: a zero is a missing key). The
splitters' own arithmetic (their estimators' update, a binary split's weights and entropies) is
:mod:`olb.learners.stream_br.gaussian_splitter`'s.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from olb.kernel_declarations import (
    BooleanArray1D,
    BooleanArray2D,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Int64,
    Int64Array1D,
    Int8Array1D,
    kernel,
)
from olb.learners.stream_br.gaussian_splitter import binary_split, dict_sum, sigmas, split_entropy, update_splitters
from olb.learners.stream_br.tree_arrays import TreeArrays

HALF_LOG_TAU = 0.5 * math.log(math.tau)  # river's proba.gaussian._HALF_LOG_TAU
N_SPLITS = 10  # river's GaussianSplitter(n_splits=10): split points per feature
MIN_BRANCH_FRACTION = 0.01  # river's HoeffdingTreeClassifier(min_branch_fraction=0.01)


@njit(cache=True, nogil=True)
def leaf_weight(t, node):  # pragma: no cover - compiled
    """river's ``total_weight`` of a node: a leaf's (:func:`leaf_weight_of_leaf`), a branch's sum over its children
    (left, then right), walked in post-order with explicit stacks (kernels take no recursion)."""
    if t.feature[node] < 0:
        return leaf_weight_of_leaf(t, node)
    size = 64
    stack = np.empty(size, np.int64)
    sums = np.empty(size)
    state = np.zeros(size, np.int64)  # children visited
    top, result = 0, 0.0
    stack[0], sums[0] = node, 0.0
    while top >= 0:
        current = stack[top]
        if t.feature[current] < 0 or state[top] == 2:
            value = leaf_weight_of_leaf(t, current) if t.feature[current] < 0 else sums[top]
            top -= 1
            if top < 0:
                result = value
            else:
                sums[top] += value
            continue
        child = t.left[current] if state[top] == 0 else t.right[current]
        state[top] += 1
        top += 1
        if top == size:  # a deeper tree: grow the stacks
            stack = np.concatenate((stack, np.empty(size, np.int64)))
            sums = np.concatenate((sums, np.empty(size)))
            state = np.concatenate((state, np.zeros(size, np.int64)))
            size *= 2
        stack[top], sums[top], state[top] = child, 0.0, 0
    return result


@njit(cache=True, nogil=True, inline="always")
def leaf_weight_of_leaf(t, node):  # pragma: no cover - compiled
    """river's ``sum(leaf.stats.values())``, in the dict's order."""
    total = 0.0
    c = t.first_class[node]
    if c >= 0:
        total += t.weight[node, c]
        if t.has_class[node, 1 - c]:
            total += t.weight[node, 1 - c]
    return total


@njit(cache=True, nogil=True, inline="always")
def route(t, label, x):  # pragma: no cover - compiled
    """The leaf of ``label``'s tree for ``x``, and whether the way down met a branch whose feature ``x`` lacks (river
    then takes the heavier child, the left on a tie, and learns without attempting a split)."""
    node = t.root[label]
    detoured = False
    while t.feature[node] >= 0:
        value = x[t.feature[node]]
        if value == 0.0:
            detoured = True
            heavier_right = leaf_weight(t, t.left[node]) < leaf_weight(t, t.right[node])
            node = t.right[node] if heavier_right else t.left[node]
        else:
            node = t.left[node] if value <= t.threshold[node] else t.right[node]
    return node, detoured


@njit(cache=True, nogil=True, inline="always")
def near_tie(square, diff):  # pragma: no cover - compiled
    """Whether ``pow(diff, 2)`` may differ from ``square = diff * diff`` (rounded to nearest): the exact square lies
    within 0.42 of a unit in the last place of ``square`` from a rounding tie, which the C library's ``pow`` (within
    0.54 of a unit of the exact value) may round either way; or ``square`` is tiny."""
    if square < 1e-290:
        return square != 0.0
    # Dekker's exact product: diff * diff = square + error, |error| <= half a unit of square
    split = 134217729.0 * diff
    high = split - (split - diff)
    low = diff - high
    error = ((high * high - square) + 2.0 * high * low) + low * low
    # 1.2 |error| >= half a unit (of the floats around square: the finer ones below a power of two) moves square
    return square + 1.2 * error != square


@kernel
def predict(
    t: TreeArrays,
    x: Float64Array1D,
    two: Float64,
    leaves: Int64Array1D,
    detoured: BooleanArray1D,
    proba: Float64Array2D,
    labels: Int8Array1D,
    scores: Float64Array1D,
) -> None:  # pragma: no cover - compiled
    """Each label's leaf for ``x`` (:func:`route`); river's ``do_naive_bayes_prediction`` there: ``proba[label]`` the
    probabilities of False and True (NaN for a class that is not a key of the leaf's stats; all NaN when river
    returns ``{}``); then the label's prediction and score (:func:`choose`)."""
    votes = np.empty(2)
    g_has, g_var, g_half_log_var, g_mean, order = t.g_has, t.g_var, t.g_half_log_var, t.g_mean, t.order
    for label in range(leaves.shape[0]):
        leaves[label], detoured[label] = route(t, label, x)
        leaf = leaves[label]
        proba[label, 0] = np.nan
        proba[label, 1] = np.nan
        first = t.first_class[leaf]
        total = leaf_weight_of_leaf(t, leaf)
        if first < 0 or total == 0.0:
            continue
        keys = 2 if t.has_class[leaf, 1 - first] else 1
        for rank in range(keys):
            c = first if rank == 0 else 1 - first
            class_weight = t.weight[leaf, c]
            if class_weight <= 0.0:
                votes[rank] = 0.0  # river's vote of a class without weight: 0, no likelihoods
                continue
            vote = math.log(class_weight / total)
            for position in range(t.n_order[leaf]):
                f = order[leaf, position]
                if x[f] == 0.0:
                    continue
                variance = g_var[leaf, c, f]
                if variance > 0.0 and g_has[leaf, c, f]:  # river's log density is finite
                    diff = x[f] - g_mean[leaf, c, f]
                    square = diff * diff
                    if near_tie(square, diff):
                        square = math.pow(diff, two)
                    vote += square / (-2.0 * variance) - HALF_LOG_TAU - g_half_log_var[leaf, c, f]
            votes[rank] = vote
        max_ll = votes[0]
        if keys == 2 and votes[1] > max_ll:
            max_ll = votes[1]
        exp_sum = 0.0
        for rank in range(keys):
            exp_sum += math.exp(votes[rank] - max_ll)
        lse = max_ll + math.log(exp_sum)
        for rank in range(keys):
            c = first if rank == 0 else 1 - first
            proba[label, c] = math.exp(votes[rank] - lse)
    mine = np.empty(2)
    for label in range(leaves.shape[0]):
        labels[label], scores[label] = choose(t, label, leaves[label], proba[label], mine)


@njit(cache=True, nogil=True, inline="always")
def first_max(values, first, keys):  # pragma: no cover - compiled
    """river's ``max(d, key=d.get)`` over a leaf's two-class dict: the class of the larger value, ``first`` (the
    first key) on a tie."""
    if keys == 2 and values[1 - first] > values[first]:
        return 1 - first
    return first


@njit(cache=True, nogil=True, inline="always")
def majority_proba(t, leaf, out):  # pragma: no cover - compiled
    """river's ``normalize_values_in_dict(stats)``: each class weight times 1 / their sum (NaN: not a key)."""
    out[0] = np.nan
    out[1] = np.nan
    total = leaf_weight_of_leaf(t, leaf)
    for c in range(2):
        if t.has_class[leaf, c]:
            out[c] = t.weight[leaf, c] if total == 0.0 else t.weight[leaf, c] * (1.0 / total)


@njit(cache=True, nogil=True, inline="always")
def choose(t, label, leaf, nb_proba, proba):  # pragma: no cover - compiled
    """A label's prediction and score: river's leaf probabilities (naive Bayes, ``nb_proba``, when it has hit at least
    as often as the majority class, else the majority class) over the tree's classes (a missing one 0); relevant
    iff True's probability exceeds False's (river's ``max`` over the sorted classes, False first), or True is the
    only class learned. The score is True's probability."""
    if t.nb_correct[leaf] >= t.mc_correct[leaf]:
        proba[0] = nb_proba[0]
        proba[1] = nb_proba[1]
    else:
        majority_proba(t, leaf, proba)
    false = 0.0 if np.isnan(proba[0]) else proba[0]
    true = 0.0 if np.isnan(proba[1]) else proba[1]
    if t.classes[label, 0]:
        return (1 if t.classes[label, 1] and true > false else 0), true
    return (1 if t.classes[label, 1] else 0), true


@kernel
def learn(
    t: TreeArrays,
    leaves: Int64Array1D,
    detoured: BooleanArray1D,
    nb_proba: Float64Array2D,
    x: Float64Array1D,
    nonzero: Int64Array1D,
    y: Int8Array1D,
    grace_period: Float64,
    attempts: BooleanArray1D,
):  # pragma: no cover - compiled
    """river's ``learn_one`` of every label's tree at its leaf (``nb_proba``: :func:`naive_bayes` there, before this
    example): the adaptive leaf's hit counts, the class weights, the splitters of the row's ``nonzero`` features;
    ``attempts[label]`` is set when the leaf, reached without a detour, has gained ``grace_period`` weight since its
    last split attempt (the caller attempts the split)."""
    proba = np.empty(2)
    for label in range(leaves.shape[0]):
        leaf = leaves[label]
        c = np.int64(y[label])
        t.classes[label, c] = True
        first = t.first_class[leaf]
        _count_hits(t, leaf, first, c, nb_proba[label], proba)
        if t.has_class[leaf, c]:
            t.weight[leaf, c] += 1.0
        else:
            t.has_class[leaf, c] = True
            t.weight[leaf, c] = 1.0
            if first < 0:
                t.first_class[leaf] = c
        update_splitters(t, leaf, c, x, nonzero)
        attempts[label] = False
        if not detoured[label]:
            attempts[label] = leaf_weight_of_leaf(t, leaf) - t.last_attempt[leaf] >= grace_period


@njit(cache=True, nogil=True, inline="always")
def _count_hits(t, leaf, first, c, nb_proba, proba):  # pragma: no cover - compiled
    """The adaptive leaf's hit counts for class ``c``: whether its majority class (``proba``: scratch) and its naive
    Bayes prediction (``nb_proba``, before this example) were right; ``first`` is the leaf's first class (-1: none)."""
    if first < 0:
        t.mc_correct[leaf] += 1.0  # an empty leaf: river counts the majority class right
    else:
        keys = 2 if t.has_class[leaf, 1 - first] else 1
        majority_proba(t, leaf, proba)
        if first_max(proba, first, keys) == c:
            t.mc_correct[leaf] += 1.0
        if not np.isnan(nb_proba[first]) and first_max(nb_proba, first, keys) == c:
            t.nb_correct[leaf] += 1.0


@kernel
def split_merits(
    t: TreeArrays, leaf: Int64, half: Float64, merits: Float64Array1D, values: Float64Array1D
):  # pragma: no cover - compiled
    """river's ``best_evaluated_split_suggestion`` of each of the leaf's splitters, in their order: the best
    information gain over the ten split points between the feature's min and max (the first of equals) and its
    point; -inf (no point) when no split leaves two branches with more than 1% of the weight each."""
    w0, w1 = t.weight[leaf, 0], t.weight[leaf, 1]
    h0, h1 = t.has_class[leaf, 0], t.has_class[leaf, 1]
    pre_entropy = split_entropy(w0, h0, w1, h1)
    lhs, rhs = np.empty(2), np.empty(2)
    lhs_has, rhs_has = np.empty(2, np.bool_), np.empty(2, np.bool_)
    sigma = np.empty(2)
    for position in range(t.n_order[leaf]):
        f = t.order[leaf, position]
        sigmas(t, leaf, f, half, sigma)
        low, high = math.inf, -math.inf
        for c in range(2):
            if t.g_has[leaf, c, f]:
                if t.g_min[leaf, c, f] < low:
                    low = t.g_min[leaf, c, f]
                if t.g_max[leaf, c, f] > high:
                    high = t.g_max[leaf, c, f]
        best, best_value = -math.inf, np.nan
        bin_size = (high - low) / (N_SPLITS + 1.0)
        for i in range(N_SPLITS):
            value = low + bin_size * (i + 1)
            if not (low < value < high):
                continue
            binary_split(t, leaf, f, sigma, value, lhs, lhs_has, rhs, rhs_has)
            left = dict_sum(lhs[0], lhs_has[0], lhs[1], lhs_has[1])
            right = dict_sum(rhs[0], rhs_has[0], rhs[1], rhs_has[1])
            total = 0.0 + left + right
            branches = 0
            if total > 0.0:
                branches = int(left / total > MIN_BRANCH_FRACTION) + int(right / total > MIN_BRANCH_FRACTION)
            if branches < 2:
                merit = -math.inf
            else:
                post = 0.0
                post += left * split_entropy(lhs[0], lhs_has[0], lhs[1], lhs_has[1])
                post += right * split_entropy(rhs[0], rhs_has[0], rhs[1], rhs_has[1])
                merit = pre_entropy - post / total
            if merit > best:
                best, best_value = merit, value
        merits[position] = best
        values[position] = best_value


@kernel
def children_stats(
    t: TreeArrays,
    leaf: Int64,
    f: Int64,
    half: Float64,
    value: Float64,
    stats: Float64Array2D,
    has: BooleanArray2D,
):  # pragma: no cover - compiled
    """The class weights of the two leaves a split of ``leaf`` on ``f`` at ``value`` makes (rows: left, right)."""
    lhs, rhs = np.empty(2), np.empty(2)
    lhs_has, rhs_has = np.empty(2, np.bool_), np.empty(2, np.bool_)
    sigma = np.empty(2)
    sigmas(t, leaf, f, half, sigma)
    binary_split(t, leaf, f, sigma, value, lhs, lhs_has, rhs, rhs_has)
    for c in range(2):
        stats[0, c], has[0, c] = lhs[c], lhs_has[c]
        stats[1, c], has[1, c] = rhs[c], rhs_has[c]
