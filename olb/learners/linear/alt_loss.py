"""The ALT loss of paper 002 (eqs. (3)-(4), reconstructed) and its repeated subgradient steps, compiled.

The model has q + 1 score columns: column 0 is the threshold predictor, columns 1..q the labels. On an example
with relevant set Y and irrelevant set Y', the loss is

    l(s) = 1/|Y| sum_{k in Y} [1 - (s_k - s_0)]_+  +  1/|Y'| sum_{l in Y'} [1 - (s_0 - s_l)]_+

(a sum is dropped when its set is empty). Its subgradient with respect to column i is ``-c_i x`` with the
coefficients of :func:`alt_coefficients`, so a first-order step is ``w_i += eta c_i x`` (eq. (6)).
"""

from __future__ import annotations

import numpy as np

from olb.kernel_declarations import Float64, Float64Array1D, Int64, Int8Array1D, kernel


@kernel
def alt_coefficients(s: Float64Array1D, y: Int8Array1D, c: Float64Array1D):
    """Fill ``c`` (q + 1) with the ALT step coefficients at scores ``s`` (q + 1; s[0] the threshold) for 0/1
    labels ``y`` (q); return whether the loss is positive.

    c_k = 1/|Y| for a relevant label with s_k - s_0 < 1, c_l = -1/|Y'| for an irrelevant one with
    s_0 - s_l < 1, 0 otherwise, and c_0 = -sum_{i>=1} c_i (the coefficients sum to 0).
    """
    q = y.shape[0]
    n_pos = 0
    for k in range(q):
        n_pos += y[k] != 0
    n_neg = q - n_pos
    total = 0.0
    violated = False
    for k in range(q):
        ck = 0.0
        if y[k] != 0:
            if s[k + 1] - s[0] < 1.0:
                ck = 1.0 / n_pos
        elif s[0] - s[k + 1] < 1.0:
            ck = -1.0 / n_neg
        c[k + 1] = ck
        total += ck
        violated = violated or ck != 0.0
    c[0] = -total
    return violated


@kernel
def repeat_on_scores(s: Float64Array1D, y: Int8Array1D, step: Float64, repeats: Int64, c_sum: Float64Array1D):
    """Up to ``repeats`` first-order ALT steps on one example, tracked on its scores alone.

    A step ``w_i += eta c_i x`` moves the example's own scores by ``eta c_i <x, x>`` (``eta c_i k(x, x)`` for a
    kernel model), so with ``step = eta <x, x>`` the loop needs only the q + 1 scores ``s`` (updated in place).
    The repeats stop at the first zero loss (any further step would be zero). ``c_sum`` receives the summed
    coefficients, so that the model is updated once: ``w_i += eta c_sum_i x``. Returns the steps taken.
    """
    c = np.empty_like(c_sum)
    c_sum[:] = 0.0
    for r in range(repeats):
        if not alt_coefficients(s, y, c):
            return r
        for i in range(s.shape[0]):
            c_sum[i] += c[i]
            s[i] += step * c[i]
    return repeats
