"""Surrogate losses of the boosters and their gradients, vectorized over many score vectors at once."""

from __future__ import annotations

import numpy as np
from scipy.special import expit


def logistic_rank_gradient(S: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """Gradient of the weighted logistic loss of paper 000, eq. (8), at each row of ``S``.

    L_log(s) = w_Y sum_{l in Y} sum_{r notin Y} log(1 + exp(s[r] - s[l])), w_Y = 1 / (|Y| |Y^c|), so
    c[l] = -w_Y sum_r sigma(s[r] - s[l]) for l in Y and c[r] = w_Y sum_l sigma(s[r] - s[l]) for r notin Y.
    ``S`` is (m, k), ``relevant`` a boolean (k,) mask with 0 < |Y| < k; returns (m, k).

    >>> logistic_rank_gradient(np.zeros((1, 3)), np.array([True, False, False]))
    array([[-0.5 ,  0.25,  0.25]])
    """
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    w = 1.0 / (rel.size * irr.size)
    sig = expit(S[:, None, irr] - S[:, rel, None])  # (m, |Y|, |Y^c|): sigma(s[r] - s[l])
    grad = np.empty_like(S, dtype=float)
    grad[:, rel] = -w * sig.sum(axis=2)
    grad[:, irr] = w * sig.sum(axis=1)
    return grad
