"""The VFDT forest's per-example loops, compiled with numba (see docs/speed.md).

The forest (:class:`olb.weak.vfdt.VFDTForest`) keeps N trees in shared arrays; these functions walk them for
one example: :func:`route` finds every tree's leaf, :func:`update_statistics` adds the weighted labels to
the leaves' class masses and Gaussian estimators. They do the same arithmetic, in the same order, as the
numpy expressions they replaced, so results are bit-identical. Compiled code is cached on disk next to
this file (or in ``NUMBA_CACHE_DIR`` where that is not writable), so only the first process compiles.
"""

from __future__ import annotations

import llvmlite.binding
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address

# scipy's normal CDF (the very function behind the ufunc ``scipy.special.ndtr``, bit for bit), called per value
# from the compiled loops; bound by symbol name so that numba's on-disk cache stays usable.
llvmlite.binding.add_symbol("olb_scipy_ndtr", get_cython_function_address("scipy.special.cython_special",
                                                                         "__pyx_fuse_1ndtr"))
ndtr = types.ExternalFunction("olb_scipy_ndtr", types.float64(types.float64))


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


# ---------------------------------------------------------------------------------------------------------
# Split attempts, for a batch of leaves at once. The normal CDF and log2 stay numpy/scipy ufunc calls on the
# whole batch (numba's own versions differ from them in the last bits); the loops around them are compiled.
# Sums over labels follow numpy's pairwise order (:func:`pairwise_sum`), so merits are bit-identical too.
# ---------------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _block_sum(a, start, n):  # pragma: no cover - compiled
    """numpy's unrolled sum of at most 128 contiguous values: sequential below 8, else 8 interleaved partial sums."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[start + i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i = 8
    while i < n - n % 8:
        p = start + i
        r0, r1, r2, r3 = r0 + a[p], r1 + a[p + 1], r2 + a[p + 2], r3 + a[p + 3]
        r4, r5, r6, r7 = r4 + a[p + 4], r5 + a[p + 5], r6 + a[p + 6], r7 + a[p + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def pairwise_sum(a, start, n):  # pragma: no cover - compiled
    """Sum of ``a[start:start + n]`` in numpy's order for a contiguous reduction: blocks of at most 128 values
    (:func:`_block_sum`), combined by halving (the halves' split rounded down to a multiple of 8).

    The halving recursion runs on an explicit stack (numba's cached code and recursion do not mix well).
    """
    if n <= 128:
        return _block_sum(a, start, n)
    depth = 64
    starts = np.empty(depth, np.int64)
    sizes = np.empty(depth, np.int64)
    partial = np.empty(depth)  # the left half's sum, once known
    phase = np.zeros(depth, np.int64)  # 0: left half to do, 1: right half to do
    starts[0], sizes[0], top, result = start, n, 0, 0.0
    while top >= 0:
        m = sizes[top]
        half = m // 2
        half -= half % 8
        if phase[top] == 0:
            phase[top] = 1
            child_start, child_n = starts[top], half
        else:
            phase[top] = 2
            child_start, child_n = starts[top] + half, m - half
        if child_n <= 128:
            value = _block_sum(a, child_start, child_n)
        else:
            top += 1
            starts[top], sizes[top], phase[top] = child_start, child_n, 0
            continue
        # fold the finished child into its ancestors
        while True:
            if phase[top] == 1:
                partial[top] = value
                break
            value = partial[top] + value
            top -= 1
            if top < 0:
                result = value
                break
    return result


@njit(cache=True, nogil=True)
def candidate_masses(leaves, slot, class_mass, g_weight, g_mean, g_m2, g_min, g_max, fractions, min_variance,
                     min_branch_fraction):  # pragma: no cover - compiled
    """Every candidate split of every leaf, in one pass: which covariates have candidates (L, d'), the candidate
    thresholds (L, d', T), the class masses left and right of each (L, d', T, k), the total mass of every
    distribution whose entropy the merit needs (L, 1 + 2 d' T: the leaf's own, then each candidate's left and right
    branch), their class shares (L, 1 + 2 d' T, k; read again by :func:`split_decisions`), and the positive class
    shares of the leaf and of the candidates whose branches both hold more than ``min_branch_fraction`` of the
    weight, in the order :func:`split_decisions` reads them (it needs their log2).

    Thresholds lie at ``fractions`` of the way from the covariate's smallest to its largest observed value. A
    class's weight left of t is W_c Phi((t - mu_c) / sigma_c) (scipy's normal CDF): none below the class's
    smallest value (or without weight), all above its largest.
    """
    n_leaves, n_thr = leaves.shape[0], fractions.shape[0]
    _, d, k = g_weight.shape
    usable = np.zeros((n_leaves, d), np.bool_)
    thresholds = np.zeros((n_leaves, d, n_thr))
    # left, right and shares are only written (and read) where a candidate is usable and not void
    left = np.empty((n_leaves, d, n_thr, k))
    right = np.empty((n_leaves, d, n_thr, k))
    totals = np.zeros((n_leaves, 1 + 2 * d * n_thr))
    shares = np.empty((n_leaves, 1 + 2 * d * n_thr, k))
    positive = np.empty(totals.size * k)
    sigma = np.empty(k)
    n_pos = 0
    for b in range(n_leaves):
        leaf = leaves[b]
        s = slot[leaf]
        totals[b, 0] = pairwise_sum(class_mass[leaf], 0, k)
        shares[b, 0] = 0.0
        n_pos = _shares(class_mass[leaf], totals[b, 0], shares[b, 0], positive, n_pos)
        for f in range(d):
            lo, hi = np.inf, -np.inf
            for c in range(k):
                if g_weight[s, f, c] > 0:
                    lo = min(lo, g_min[s, f, c])
                    hi = max(hi, g_max[s, f, c])
            if not hi > lo:
                continue
            usable[b, f] = True
            for c in range(k):
                W = g_weight[s, f, c]
                if W > 0:
                    sigma[c] = np.sqrt(max(g_m2[s, f, c] / W, min_variance))
            for j in range(n_thr):
                t = thresholds[b, f, j] = lo + (hi - lo) * fractions[j]
                for c in range(k):
                    W = g_weight[s, f, c]
                    m = 0.0
                    if W > 0 and not t < g_min[s, f, c]:
                        if t > g_max[s, f, c]:
                            m = W
                        else:
                            m = W * ndtr((t - g_mean[s, f, c]) / sigma[c])
                    left[b, f, j, c] = m
                    right[b, f, j, c] = W - m
                row = 1 + 2 * (f * n_thr + j)
                wl = totals[b, row] = pairwise_sum(left[b, f, j], 0, k)
                wr = totals[b, row + 1] = pairwise_sum(right[b, f, j], 0, k)
                if _two_branches(wl, wr, min_branch_fraction):  # otherwise the merit is -inf: no entropies
                    n_pos = _shares(left[b, f, j], wl, shares[b, row], positive, n_pos)
                    n_pos = _shares(right[b, f, j], wr, shares[b, row + 1], positive, n_pos)
    return usable, thresholds, left, right, totals, shares, positive[:n_pos]


@njit(cache=True, nogil=True)
def _two_branches(wl, wr, min_branch_fraction):  # pragma: no cover - compiled
    """Whether both branches hold more than ``min_branch_fraction`` of the weight (else the candidate is void)."""
    total = wl + wr
    return wl > min_branch_fraction * total and wr > min_branch_fraction * total


@njit(cache=True, nogil=True)
def _shares(mass, total, share, positive, n_pos):  # pragma: no cover - compiled
    """Write the shares mass / total to ``share`` (left as it is if the total is 0) and append the positive ones to
    ``positive``."""
    if total > 0:
        for c in range(mass.shape[0]):
            p = share[c] = mass[c] / total
            if p > 0:
                positive[n_pos] = p
                n_pos += 1
    return n_pos


@njit(cache=True, nogil=True)
def _entropy(share, log_positive, cursor, terms):  # pragma: no cover - compiled
    """Entropy in bits of the class shares ``share``; ``log_positive[cursor:]`` holds log2 of the positive
    shares in order, ``terms`` is scratch space. Returns the entropy and the next cursor."""
    for c in range(share.shape[0]):
        p = share[c]
        terms[c] = 0.0
        if p > 0:
            terms[c] = p * log_positive[cursor]
            cursor += 1
    return -pairwise_sum(terms, 0, terms.shape[0]), cursor


@njit(cache=True, nogil=True)
def split_decisions(leaves, trees, n_weight, seen, usable, totals, shares, log_positive, eps_factor,
                    ln_inv_delta, tau, min_branch_fraction):  # pragma: no cover - compiled
    """Information-gain merits of every candidate and the Hoeffding test of each leaf.

    Returns per leaf whether it splits, the best feature and threshold index, whether the best merit is tied
    across features (then the caller picks the feature as numpy's argsort would), and the merit per feature.
    A candidate scores -inf unless both branches hold more than ``min_branch_fraction`` of the weight; the
    leaf splits when best - second best > eps or eps < tau, eps = sqrt(log2(#classes)^2 ln(1/delta) / (2 n)).
    """
    n_leaves, d = usable.shape
    k = shares.shape[2]
    n_thr = (shares.shape[1] - 1) // (2 * d)
    splits = np.zeros(n_leaves, np.bool_)
    tied = np.zeros(n_leaves, np.bool_)
    best_feature = np.zeros(n_leaves, np.int64)
    best_threshold = np.zeros((n_leaves, d), np.int64)
    per_feature = np.full((n_leaves, d), -np.inf)
    cursor = 0
    terms = np.empty(k)
    for b in range(n_leaves):
        pre, cursor = _entropy(shares[b, 0], log_positive, cursor, terms)
        for f in range(d):
            if not usable[b, f]:
                continue
            for j in range(n_thr):
                row = 1 + 2 * (f * n_thr + j)
                wl, wr = totals[b, row], totals[b, row + 1]
                total = wl + wr
                merit = -np.inf
                if _two_branches(wl, wr, min_branch_fraction):
                    h_left, cursor = _entropy(shares[b, row], log_positive, cursor, terms)
                    h_right, cursor = _entropy(shares[b, row + 1], log_positive, cursor, terms)
                    merit = pre - (wl * h_left + wr * h_right) / (total if total > 0 else 1.0)
                if merit > per_feature[b, f] or j == 0:
                    per_feature[b, f] = merit
                    best_threshold[b, f] = j
        best, second, where = -np.inf, -np.inf, 0
        for f in range(d):
            v = per_feature[b, f]
            if v > best:
                second, best, where = best, v, f
                tied[b] = False
            elif v == best:
                second = v
                tied[b] = True
            elif v > second:
                second = v
        best_feature[b] = where
        if not np.isfinite(best):
            continue
        leaf = leaves[b]
        n_classes = 0
        for c in range(k):
            n_classes += seen[leaf, c]
        eps = np.sqrt(eps_factor[max(n_classes, 2)] * ln_inv_delta[trees[b]] / (2.0 * n_weight[b]))
        splits[b] = best - second > eps or eps < tau[trees[b]]
    return splits, best_feature, best_threshold, tied, per_feature


@njit(cache=True, nogil=True)
def apply_splits(splits, feature, best_threshold, leaves, thresholds, left, right, n_nodes, n_slots,
                 split_feature, threshold, left_child, right_child, nan_left, slot, class_mass, seen,
                 weight_at_last_attempt, g_weight, g_mean, g_m2, g_min, g_max):  # pragma: no cover - compiled
    """Split every leaf ``leaves[b]`` with ``splits[b]`` on covariate ``feature[b]`` at its best threshold.

    Its children are the next two nodes (left first), holding the candidate's branch masses; the left child
    takes the leaf's slot of Gaussian statistics, cleared, the right child the next unused slot. Missing values
    will go to the heavier child. The arrays must have room for the new nodes and slots (the caller grows them).
    """
    k = class_mass.shape[1]
    for b in range(splits.shape[0]):
        if not splits[b]:
            continue
        leaf, f = leaves[b], feature[b]
        j = best_threshold[b, f]
        s = slot[leaf]
        g_weight[s] = 0.0
        g_mean[s] = 0.0
        g_m2[s] = 0.0
        g_min[s] = np.inf
        g_max[s] = -np.inf
        for child, mass, child_slot in ((n_nodes, left[b, f, j], s), (n_nodes + 1, right[b, f, j], n_slots)):
            slot[child] = child_slot
            for c in range(k):
                class_mass[child, c] = mass[c]
                seen[child, c] = mass[c] > 0
            weight_at_last_attempt[child] = pairwise_sum(mass, 0, k)
        split_feature[leaf] = f
        threshold[leaf] = thresholds[b, f, j]
        left_child[leaf], right_child[leaf] = n_nodes, n_nodes + 1
        nan_left[leaf] = weight_at_last_attempt[n_nodes] >= weight_at_last_attempt[n_nodes + 1]
        slot[leaf] = -1
        n_nodes += 2
        n_slots += 1
    return n_nodes, n_slots
