"""A candidate split's merit and the Hoeffding test, the numba helpers of
:func:`olb.weak.vfdt_core.evaluate_splits`: the information gain of a candidate from its branch masses (entropies in
bits, summed in numpy's pairwise order), the scoring of one covariate's candidates, a leaf's Hoeffding bound and
its test (Domingos & Hulten, 2000). log2 is glibc's, called per value (numba's own differs in the last bit, and a
last bit changes results: benchmarks/last_bit_sensitivity.py)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from olb.weak.vfdt_candidates import best_two, gather_covariate, left_masses, place_thresholds
from olb.weak.vfdt_leaves import weight_and_classes
from olb.weak.vfdt_sums import planned_sum


@njit(cache=True, nogil=True, inline="always")
def hoeffding_bound(forest, leaf, tree):  # pragma: no cover - compiled
    """A leaf's weight n and its Hoeffding bound eps = sqrt(log2(#classes)^2 ln(1/delta) / (2 n)) in its tree."""
    n_weight, n_classes = weight_and_classes(forest.class_mass, forest.seen, leaf)
    return n_weight, np.sqrt(forest.eps_factor[max(n_classes, 2)] * forest.ln_inv_delta[tree] / (2.0 * n_weight))


@njit(cache=True, nogil=True, inline="always")
def hoeffding_test(merits, eps, tau):  # pragma: no cover - compiled
    """Whether a leaf with its covariates' best ``merits`` splits (a finite best merit, and best - second best >
    eps or eps < tau), and its best covariate (:func:`best_two`)."""
    best, second, where = best_two(merits)
    return np.isfinite(best) and (best - second > eps or eps < tau), where


@njit(cache=True, nogil=True, inline="always")
def score_covariate(
    b, f, stats, gathered, branches, pre, fractions, min_branch_fraction, plan, t, per_feature, best_threshold
):  # pragma: no cover - compiled
    """Score leaf ``b``'s candidate splits on covariate ``f``: its thresholds into ``t``, each one's merit, the
    best kept (:func:`keep_if_better`); whether the covariate has candidates (its observed values are not all equal).
    ``branches``: the per-label left and right masses and entropy terms (zeros outside this call), the entropy's
    scratch and the room for the masses left of the thresholds."""
    n_active, lo, hi = gather_covariate(f, stats, gathered)
    if not hi > lo:
        return False
    active, a_weight, a_mean, a_sigma, a_min, a_max = gathered
    left, right, terms, nonzero, a_left = branches
    place_thresholds(lo, hi, fractions, t)
    left_masses(t, n_active, a_weight, a_mean, a_sigma, a_min, a_max, a_left)
    for j in range(fractions.shape[0]):
        for a in range(n_active):
            left[active[a]] = a_left[j, a]
            right[active[a]] = a_weight[a] - a_left[j, a]
        merit = information_gain(left, right, terms, active, n_active, nonzero, pre, min_branch_fraction, plan)
        keep_if_better(b, f, j, merit, per_feature, best_threshold)
    for a in range(n_active):  # back to zeros for the next covariate
        left[active[a]] = right[active[a]] = terms[active[a]] = 0.0
    return True


@njit(cache=True, nogil=True)
def keep_if_better(b, f, j, merit, per_feature, best_threshold):  # pragma: no cover - compiled
    """Keep candidate j as covariate f's best of leaf b if its merit beats the best so far (or it is the first)."""
    if merit > per_feature[b, f] or j == 0:
        per_feature[b, f] = merit
        best_threshold[b, f] = j


@njit(cache=True, nogil=True)
def information_gain(left, right, terms, active, n_active, nonzero, pre, min_branch_fraction, plan):  # pragma: no cover
    """Information gain of a candidate from its branch masses ``left``/``right`` (k; only the classes
    ``active[:n_active]`` may be nonzero): prior entropy - weighted branch entropies, -inf unless both branches
    hold enough weight."""
    wl = planned_sum(left, *plan)
    wr = planned_sum(right, *plan)
    if not two_branches(wl, wr, min_branch_fraction):
        return -np.inf
    total = wl + wr
    h_left = entropy_bits(left, wl, terms, active, n_active, nonzero, plan)
    h_right = entropy_bits(right, wr, terms, active, n_active, nonzero, plan)
    return pre - (wl * h_left + wr * h_right) / (total if total > 0 else 1.0)


@njit(cache=True, nogil=True)
def two_branches(wl, wr, min_branch_fraction):  # pragma: no cover - compiled
    """Whether both branches hold more than ``min_branch_fraction`` of the weight (else the candidate is void)."""
    total = wl + wr
    return wl > min_branch_fraction * total and wr > min_branch_fraction * total


@njit(cache=True, nogil=True)
def entropy_bits(mass, total, terms, labels, n_labels, nonzero, plan):  # pragma: no cover - compiled
    """Entropy in bits of the class shares mass / total (0 if the total is 0), summed in numpy's order over all k
    classes (``plan``: :func:`olb.weak.vfdt.pairwise_plan` (k) and room for its sums). Only the classes ``labels[:n_labels]``
    may have mass: their terms are written into ``terms``, whose other entries must be 0. A zero mass adds 0
    without a division (its share 0 / total would be 0); the classes with mass are listed first (in ``nonzero``,
    without a branch), so that the loop that takes logarithms does not branch on the data either."""
    n_nonzero = 0
    for a in range(n_labels):
        c = labels[a]
        terms[c] = 0.0
        nonzero[n_nonzero] = c
        n_nonzero += mass[c] != 0.0
    if total > 0:
        for i in range(n_nonzero):
            c = nonzero[i]
            p = mass[c] / total
            if p > 0:
                terms[c] = p * math.log2(p)
    return -planned_sum(terms, *plan)
