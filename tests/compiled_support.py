"""Checking a C function bound into compiled code (scipy's ``ndtr``, ``expit``) against the ufunc it stands for."""

from __future__ import annotations

import numpy as np
from numba import njit


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
