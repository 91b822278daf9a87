"""numpy's pairwise summation order, compiled: the VFDT forest's sums over labels give numpy's bits
(:func:`pairwise_sum` of a slice, :func:`planned_sum` of a whole array by its :func:`olb.weak.vfdt.pairwise_plan`).
numba helpers of the kernels of :mod:`olb.weak.vfdt_core`."""

from __future__ import annotations

import numpy as np
from numba import njit


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
def planned_sum(a, plan_starts, plan_lengths, plan_ops, stack):  # pragma: no cover - compiled
    """:func:`pairwise_sum` of all of ``a`` by its :func:`olb.weak.vfdt.pairwise_plan` (len(a)), without allocating: ``stack``
    holds at least as many values as the plan has blocks."""
    if plan_starts.shape[0] == 1:
        return _block_sum(a, 0, a.shape[0])
    top = -1
    for op in plan_ops:
        if op >= 0:
            top += 1
            stack[top] = _block_sum(a, plan_starts[op], plan_lengths[op])
        else:
            stack[top - 1] = stack[top - 1] + stack[top]
            top -= 1
    return stack[0]
