"""The array helpers every metric formula shares: safe elementwise ratios, 0/1 arrays as booleans, a 0-d result
as a float, the value of examples without a relevant label."""

import numpy as np


def _value(x):
    """A 0-d result as a Python float, anything else as a float array."""
    return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=float)


def _ratio(num, den, zero_division):
    """num / den elementwise, ``zero_division`` where den == 0 (no warnings)."""
    num = np.asarray(num, dtype=float)
    out = np.full(num.shape, zero_division, dtype=float)
    np.divide(num, den, out=out, where=np.asarray(den) != 0)
    return out


def _unlabelled(values, truth, unlabelled):
    """``values`` (per example) with ``unlabelled`` on examples without a relevant label (None: unchanged)."""
    if unlabelled is not None:
        values = np.where(np.sum(truth, axis=-1) == 0, unlabelled, values)
    return _value(values)


def _bools(pred, y):
    return np.asarray(pred, dtype=bool), np.asarray(y, dtype=bool)
