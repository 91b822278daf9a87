"""A feature row as (indices, values) of its nonzero entries, sparse or dense alike, with an optional bias; a block
of rows as CSR arrays, for the compiled passes (:mod:`olb.learners.linear.passes`)."""

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


def csr_entries(X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of the nonzero entries of a block of rows, dense (n, d) or CSR, each row's
    indices increasing: the entries :func:`nonzero_entries` gives row by row.

    >>> indptr, indices, data = csr_entries(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]))
    >>> indptr.tolist(), indices.tolist(), data.tolist()
    ([0, 1, 3], [1, 0, 2], [2.0, 1.0, 3.0])
    """
    if isinstance(X, np.ndarray):
        keep = X != 0
        indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
        return indptr.astype(np.int64), np.nonzero(keep)[1].astype(np.int64), X[keep].astype(float)
    import scipy.sparse as sp

    X = sp.csr_array(X, dtype=float, copy=True)
    X.eliminate_zeros()
    X.sort_indices()
    return X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data


# The update rules a pass can run (:func:`olb.learners.linear.passes.learn_pass`).
FALT, SALT, PA_I, PA_II, OLANSGD = 0, 1, 2, 3, 4
NO_STATE = np.zeros(2)  # the ``state`` argument of the rules that have none
