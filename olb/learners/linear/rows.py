"""A feature row as (indices, values) of its nonzero entries, sparse or dense alike, with an optional bias."""

from __future__ import annotations

import numpy as np


def nonzero_entries(x, bias: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, values)`` of the nonzero entries of one row: a dense vector or a (1, d) CSR row (never
    densified). With ``bias`` the constant-1 feature is appended at index d.

    Dense and sparse rows with the same entries give the same arrays, so a learner working on them gives the
    same result for both.

    >>> import scipy.sparse as sp
    >>> nonzero_entries(np.array([0.0, 2.0, 0.0, 3.0]), bias=True)
    (array([1, 3, 4]), array([2., 3., 1.]))
    >>> nonzero_entries(sp.csr_array(np.array([[0.0, 2.0, 0.0, 3.0]])), bias=False)
    (array([1, 3]), array([2., 3.]))
    """
    if isinstance(x, np.ndarray):
        x = np.ravel(x)
        idx = np.flatnonzero(x)
        val, d = x[idx].astype(float), x.shape[0]
    else:  # scipy.sparse CSR row, shape (1, d)
        keep = x.data != 0
        idx, val, d = np.asarray(x.indices, dtype=np.int64)[keep], np.asarray(x.data, dtype=float)[keep], x.shape[1]
        order = np.argsort(idx, kind="stable")
        idx, val = idx[order], val[order]
    idx = idx.astype(np.int64)
    if bias:
        idx, val = np.append(idx, d), np.append(val, 1.0)
    return idx, val
