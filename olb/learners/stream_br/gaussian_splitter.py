"""river's ``GaussianSplitter`` of :class:`olb.learners.stream_br.hoeffding.BRHT`'s trees, compiled: each
feature's per-class Gaussian estimators updated (``tree/splitter/gaussian_splitter.py``, ``stats.Var``), and the
class weights and entropies of a binary split at a value (``tree/utils.py``), in river's order. numba helpers of
the kernels of :mod:`olb.learners.stream_br.hoeffding_core`."""

from __future__ import annotations

import math

from numba import njit

SQRT_2 = math.sqrt(2.0)


@njit(cache=True, nogil=True, inline="always")
def update_splitters(t, leaf, c, x, nonzero):  # pragma: no cover - compiled
    """river's GaussianSplitter.update of each present feature of ``x`` for class ``c`` at ``leaf``: min, max,
    Welford's update of stats.Var (w = 1), and the variance and half its log that proba.Gaussian.log_pdf uses."""
    g_first, g_has, order, n_order = t.g_first, t.g_has, t.order, t.n_order
    g_n, g_mean, g_S, g_min, g_max = t.g_n, t.g_mean, t.g_S, t.g_min, t.g_max
    g_var, g_half_log_var = t.g_var, t.g_half_log_var
    for i in range(nonzero.shape[0]):
        f = nonzero[i]
        value = x[f]
        if g_first[leaf, f] < 0:  # a new splitter, last in the leaf's order
            g_first[leaf, f] = c
            order[leaf, n_order[leaf]] = f
            n_order[leaf] += 1
        if not g_has[leaf, c, f]:
            g_has[leaf, c, f] = True
            g_min[leaf, c, f] = value
            g_max[leaf, c, f] = value
            g_n[leaf, c, f] = 0.0
            g_mean[leaf, c, f] = 0.0
            g_S[leaf, c, f] = 0.0
        else:
            if value < g_min[leaf, c, f]:
                g_min[leaf, c, f] = value
            if value > g_max[leaf, c, f]:
                g_max[leaf, c, f] = value
        mean_old = g_mean[leaf, c, f]
        n = g_n[leaf, c, f] + 1.0
        g_n[leaf, c, f] = n
        mean_new = mean_old + (1.0 / n) * (value - mean_old)
        g_mean[leaf, c, f] = mean_new
        S = g_S[leaf, c, f] + 1.0 * (value - mean_old) * (value - mean_new)
        g_S[leaf, c, f] = S
        variance = S / (n - 1.0) if n > 1.0 else 0.0  # proba.Gaussian.log_pdf's, with its log
        g_var[leaf, c, f] = variance if variance > 0.0 else 0.0
        g_half_log_var[leaf, c, f] = 0.5 * math.log(variance) if variance > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def split_entropy(a, has_a, b, has_b):  # pragma: no cover - compiled
    """river's ``_compute_entropy_dict`` of a dict of (at most) two weights (their order does not change the sums)."""
    entropy = 0.0
    sums = 0.0
    if has_a and a > 0.0:
        entropy -= a * math.log2(a)
        sums += a
    if has_b and b > 0.0:
        entropy -= b * math.log2(b)
        sums += b
    return (entropy + sums * math.log2(sums)) / sums if sums > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def dict_sum(a, has_a, b, has_b):  # pragma: no cover - compiled
    total = 0.0
    if has_a:
        total += a
    if has_b:
        total += b
    return total


@njit(cache=True, nogil=True, inline="always")
def sigmas(t, leaf, f, half, out):  # pragma: no cover - compiled
    """The standard deviations of feature ``f``'s estimators as river's ``Gaussian.sigma``, ``variance ** 0.5`` with
    ``half`` = 0.5 (``stats.Var.get``: 0 below a weight of 2)."""
    for c in range(2):
        n = t.g_n[leaf, c, f]
        out[c] = math.pow(t.g_S[leaf, c, f] / (n - 1.0) if n > 1.0 else 0.0, half)


@njit(cache=True, nogil=True, inline="always")
def binary_split(t, leaf, f, sigma, value, lhs, lhs_has, rhs, rhs_has):  # pragma: no cover - compiled
    """river's ``_class_dists_from_binary_split`` of feature ``f`` at ``value``: each class's weight left and right,
    from its estimator's CDF (``sigma``: :func:`sigmas`)."""
    for c in range(2):
        lhs_has[c] = False
        rhs_has[c] = False
        if not t.g_has[leaf, c, f]:
            continue
        n = t.g_n[leaf, c, f]
        if value < t.g_min[leaf, c, f]:
            rhs[c] = n
            rhs_has[c] = True
        elif value >= t.g_max[leaf, c, f]:
            lhs[c] = n
            lhs_has[c] = True
        else:
            s = sigma[c]
            cdf = 0.0 if s == 0.0 else 0.5 * (1.0 + math.erf(((value - t.g_mean[leaf, c, f]) / s) / SQRT_2))
            lhs[c] = cdf * n
            rhs[c] = n - lhs[c]
            lhs_has[c] = True
            rhs_has[c] = True
