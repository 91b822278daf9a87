"""References for the compiled kernels that hold on every x86-64 processor.

numpy picks its ``exp`` by the processor's SIMD extensions (its AVX-512 ``exp`` differs from the C library's in
about 5% of values) and OpenBLAS its ``dgemm`` kernel by the processor (with or without fused multiply-adds), so a
numpy expression is no reference for bit-exact tests. The kernels call the C library's ``exp`` (LLVM lowers
``math.exp`` to it; numba's SVML is off) and LLVM's ``fma``, both IEEE-specified or the same code in one process:
:func:`libm_exp` and :func:`libm_fma` call them through Python. numpy's sums (pairwise), cumulative sums, ``einsum``,
``sqrt``, ``clip`` and element-wise arithmetic stay valid references: numpy runs them in a fixed order with one
rounding per operation on every x86-64 processor. So do scipy's ``expit`` and ``ndtr``: the kernels bind these very
C functions (scipy compiles them once, with no dispatch by processor; the C library's ``exp`` they call is picked by
the processor, but it is the same code for the kernel and its reference: ``docs/speed.md``, "On other CPUs").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np
from numba import njit

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
libm_fma = _libm.fma
libm_fma.argtypes = (ctypes.c_double, ctypes.c_double, ctypes.c_double)
libm_fma.restype = ctypes.c_double


def libm_exp(values) -> np.ndarray:
    """``exp`` of each value by the C library (Python's ``math.exp``), not numpy's processor-dispatched loop."""
    values = np.asarray(values, float)
    return np.array([math.exp(v) for v in values.ravel()]).reshape(values.shape)


def fma_vector_matrix(h: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``h @ M`` with the terms of each entry added in order, each by one fused multiply-add (the C library's
    ``fma``, correctly rounded by the C standard, on any processor)."""
    out = np.zeros(M.shape[1])
    for label in range(M.shape[1]):
        acc = 0.0
        for r in range(M.shape[0]):
            acc = libm_fma(h[r], M[r, label], acc)
        out[label] = acc
    return out


def assert_same_as_ufunc(scalar_function, ufunc, scales, special_values) -> None:
    """``scalar_function`` called per value from a compiled loop equals ``ufunc`` bit for bit, on 50,000 normal
    draws at each of ``scales`` and on ``special_values``."""

    @njit
    def apply(z):
        out = np.empty_like(z)
        for i in range(z.size):
            out[i] = scalar_function(z[i])
        return out

    rng = np.random.default_rng(0)
    z = np.concatenate([rng.normal(size=50_000) * scale for scale in scales] + [np.asarray(special_values, float)])
    assert np.array_equal(apply(z), ufunc(z))
