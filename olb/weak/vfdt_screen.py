"""The screen of the VFDT forest's split attempts: a leaf's candidates scored with a bound on their error, so that
a leaf that certainly stays a leaf is settled without its exact scores (:func:`stays_a_leaf`). numba helpers of
:func:`olb.weak.vfdt_core.evaluate_splits`."""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from olb.weak.vfdt_candidates import best_two, gather_covariate, left_masses, place_thresholds


# The screen. Most split attempts end without a split (98% on bibtex and corel5k), so each leaf's candidates are
# first scored with an error bound: the masses exactly (the same normal CDF), the entropies regrouped
# (H = log2 w - sum m log2 m / w) with a polynomial log2 whose absolute error is below 2e-14, in a loop the compiler
# may vectorize and reorder. A merit computed so comes with a bound on its distance from the exact one, and the
# Hoeffding test's outcome is then certain whenever best - second best stays below eps by twice that bound.
# Leaves whose outcome the screen cannot certify (a split, a near tie with eps, a branch weight at the 1% bound)
# are scored exactly, so results are the same bits with or without the screen (tests/test_vfdt.py).
_SCREEN_RELATIVE = 1e-10  # >> the rounding of n <= 10^4 terms (n * 2^-53 relative to their absolute sum)
_SCREEN_ABSOLUTE = 1e-10  # >> twice the polynomial log2's error per branch entropy
_SCREEN_BRANCH = 1e-9  # a branch weight this close (relative) to the 1% bound is left to the exact score
_SCREEN_FASTMATH = {"reassoc", "nsz", "contract"}  # sums in any order and fused multiply-adds; no NaN/inf promise
_SQRT2 = math.sqrt(2.0)
_LN2_INV = 1.0 / math.log(2.0)


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_float(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 ``bits``."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@njit(cache=True, nogil=True, fastmath=_SCREEN_FASTMATH, error_model="numpy")
def _approx_log2(x):  # pragma: no cover - compiled
    """log2 x for x >= 0 within 2e-14 (plus the rounding of the result) where x is normal, without a branch or a
    library call: x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh s = 2 (s + s^3/3 + ... + s^15/15),
    s = (m - 1) / (m + 1), |s| < 0.1716 (the rest of the series is below 1.2e-14). 0 (and a subnormal x) gives
    about -1023, finite, so that x log2 x is 0 (or below 1e-305)."""
    bits: int = _float_bits(x)  # type: ignore[call-arg]  # a numba intrinsic (numba passes its context)
    m = _bits_float((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)
    e = float((bits >> 52) - 1023)
    high = m >= _SQRT2
    m = 0.5 * m if high else m
    e = e + 1.0 if high else e
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    series = 1 / 13 + z * (1 / 15)
    series = 1 / 11 + z * series
    series = 1 / 9 + z * series
    series = 1 / 7 + z * series
    series = 1 / 5 + z * series
    series = 1 / 3 + z * series
    series = 1.0 + z * series
    return e + 2.0 * _LN2_INV * s * series


@njit(cache=True, nogil=True, fastmath=_SCREEN_FASTMATH, error_model="numpy")
def _screened_merit(masses_left, a_weight, n_active, pre, min_branch_fraction):  # pragma: no cover - compiled
    """A candidate's information gain from its classes' masses left of it, and a bound on its distance from the
    exact :func:`olb.weak.vfdt_merit.information_gain`: (merit, bound), (-inf, 0) for a candidate certainly void,
    (nan, -1) when a branch weight is too close to the 1% bound to tell."""
    wl = wr = sl = sr = scale = 0.0
    for a in range(n_active):
        m = masses_left[a]
        r = a_weight[a] - m
        ml, rl = m * _approx_log2(m), r * _approx_log2(r)
        wl += m
        wr += r
        sl += ml
        sr += rl
        scale += abs(ml) + abs(rl)
    total = wl + wr
    near = _SCREEN_BRANCH * total
    gap_l, gap_r = wl - min_branch_fraction * total, wr - min_branch_fraction * total
    if abs(gap_l) <= near or abs(gap_r) <= near:
        return np.nan, -1.0
    if gap_l < 0 or gap_r < 0:
        return -np.inf, 0.0
    left, right = wl * math.log2(wl), wr * math.log2(wr)
    merit = pre - (left - sl + right - sr) / total
    bound = _SCREEN_RELATIVE * (scale + abs(left) + abs(right)) / total + _SCREEN_ABSOLUTE
    return merit, bound


@njit(cache=True, nogil=True)
def stays_a_leaf(pre, eps, stats, gathered, fractions, min_branch_fraction, scratch):  # pragma: no cover
    """Whether the Hoeffding test (best - second best > eps, with eps >= tau) certainly fails for a leaf, judged on
    merits with a bound on their error (:func:`_screened_merit`): the exact best and second best lie within the
    largest bound of the screened ones. ``scratch``: room for the thresholds, the masses left of them and the
    covariates' merits."""
    n_thr = fractions.shape[0]
    t, a_left, merits = scratch
    merits[:] = -np.inf
    _, a_weight, a_mean, a_sigma, a_min, a_max = gathered
    largest_bound = 0.0
    for f in range(merits.shape[0]):
        n_active, lo, hi = gather_covariate(f, stats, gathered)
        if not hi > lo:
            continue
        place_thresholds(lo, hi, fractions, t)
        left_masses(t, n_active, a_weight, a_mean, a_sigma, a_min, a_max, a_left)
        for j in range(n_thr):
            merit, bound = _screened_merit(a_left[j], a_weight, n_active, pre, min_branch_fraction)
            if not bound >= 0.0 or merit != merit:
                return False
            largest_bound = max(largest_bound, bound)
            merits[f] = max(merits[f], merit)
    best, second, _ = best_two(merits)
    if best == -np.inf:
        return True
    return best - second + 2.0 * largest_bound < eps
