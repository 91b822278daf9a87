"""A VFDT leaf's candidate splits on one covariate: its labels with weight gathered, the thresholds placed
between the covariate's smallest and largest value, each class's Gaussian weight left of each threshold (scipy's
normal CDF, bound by symbol), and the best two of the covariates' merits. numba helpers of the kernels of
:mod:`olb.weak.vfdt_core` and of its screen (:mod:`olb.weak.vfdt_screen`)."""

from __future__ import annotations

import llvmlite.binding
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address

# scipy's normal CDF (the very function behind the ufunc ``scipy.special.ndtr``, bit for bit), called per value
# from the compiled loops; bound by symbol name so that numba's on-disk cache stays usable.
llvmlite.binding.add_symbol(
    "olb_scipy_ndtr", get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1ndtr")
)
ndtr = types.ExternalFunction("olb_scipy_ndtr", types.float64(types.float64))


@njit(cache=True, nogil=True)
def gather_covariate(f, stats, gathered):  # pragma: no cover - compiled
    """Covariate f's labels with weight at a slot (the others have 0 on both sides of every threshold), into the
    contiguous arrays ``gathered`` (label, weight, mean, sigma, min, max); returns their number and the smallest
    and largest value among them. ``stats``: the slot's ``pair_of`` row, the pool's arrays and the least variance."""
    pair_row, g_weight, g_mean, g_m2, g_min, g_max, min_variance = stats
    active, a_weight, a_mean, a_sigma, a_min, a_max = gathered
    n_active = 0
    lo, hi = np.inf, -np.inf
    for c in range(pair_row.shape[0]):
        p = pair_row[c]
        if p >= 0 and g_weight[p, f] > 0:
            active[n_active] = c
            W = a_weight[n_active] = g_weight[p, f]
            a_mean[n_active] = g_mean[p, f]
            a_sigma[n_active] = class_sigma(W, g_m2[p, f], min_variance)
            lo = min(lo, g_min[p, f])
            hi = max(hi, g_max[p, f])
            a_min[n_active], a_max[n_active] = g_min[p, f], g_max[p, f]
            n_active += 1
    return n_active, lo, hi


@njit(cache=True, nogil=True)
def place_thresholds(lo, hi, fractions, t):  # pragma: no cover - compiled
    """The candidate thresholds, at ``fractions`` of the way from lo to hi."""
    for j in range(fractions.shape[0]):
        t[j] = lo + (hi - lo) * fractions[j]


@njit(cache=True, nogil=True)
def best_two(merits):  # pragma: no cover - compiled
    """The best and second best of the covariates' merits (equal if the best is tied) and the lowest index of
    the best."""
    best, second, where = -np.inf, -np.inf, 0
    for f in range(merits.shape[0]):
        v = merits[f]
        if v > best:
            second, best, where = best, v, f
        elif v == best:
            second = v
        elif v > second:
            second = v
    return best, second, where


@njit(cache=True, nogil=True)
def left_masses(t, n_active, a_weight, a_mean, a_sigma, a_min, a_max, out):  # pragma: no cover - compiled
    """Each class's weight left of each threshold (``out[j, a]``, as :func:`mass_left`), class by class: the
    thresholds below its smallest value, those within its range, those above its largest (t increases), so
    that the loops do not branch on the data."""
    n_thr = t.shape[0]
    for a in range(n_active):
        below = within = 0
        for j in range(n_thr):
            below += t[j] < a_min[a]
            within += t[j] <= a_max[a]
        W = a_weight[a]
        for j in range(below):
            out[j, a] = 0.0
        for j in range(below, within):
            out[j, a] = gaussian_mass(t[j], W, a_mean[a], a_sigma[a])
        for j in range(within, n_thr):
            out[j, a] = W


@njit(cache=True, nogil=True)
def class_sigma(W, m2, min_variance):  # pragma: no cover - compiled
    """A class's standard deviation from its Gaussian estimator's weight and M2, at least sqrt(min_variance)."""
    return np.sqrt(max(m2 / W, min_variance))


@njit(cache=True, nogil=True)
def gaussian_mass(t, W, mean, sigma):  # pragma: no cover - compiled
    """The weight W of a class left of threshold t under its Gaussian estimate: W Phi((t - mean) / sigma)."""
    return W * ndtr((t - mean) / sigma)


@njit(cache=True, nogil=True)
def mass_left(t, W, mean, sigma, smallest, largest):  # pragma: no cover - compiled
    """A class's weight left of threshold t: :func:`gaussian_mass`, none below its smallest value, all above its
    largest."""
    if t < smallest:
        return 0.0
    if t > largest:
        return W
    return gaussian_mass(t, W, mean, sigma)
