"""The rows a learner sees: copies of the data set's rows, dense or CSR as the learner accepts, scaled as its
``feature_scaling`` asks (the module docstring of :mod:`olb.protocol`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from olb.data.dataset import Dataset
from olb.learners.params import FEATURE_SCALING


class RowReader:
    """The rows a learner sees: copies (never views into the data set), dense or CSR as the learner accepts
    (``Dataset.rows`` / ``Dataset.sparse_rows``), scaled as its ``feature_scaling`` asks with the statistics
    of ``train_rows``; without any (a prequential stream), with those of the rows read so far (:class:`RunningMinMax`:
    then ``row`` must be called once per row, in stream order)."""

    def __init__(self, dataset: Dataset, learner, train_rows: np.ndarray):
        scaling = getattr(learner, "feature_scaling", "none")
        if scaling not in (FEATURE_SCALING.choices or ()):
            raise ValueError(f"feature_scaling={scaling!r} is not allowed; allowed: {FEATURE_SCALING.describe()}")
        self.running = None
        if scaling == "minmax" and len(train_rows):
            dataset = replace(dataset, X=_minmax(dataset.X, train_rows, dataset.is_sparse))
        elif scaling == "minmax":
            self.running = RunningMinMax(dataset.n_features, dataset.is_sparse)
        self.dataset = dataset
        self.sparse_rows = dataset.is_sparse and getattr(learner, "accepts_sparse", False)

    def row(self, index):
        x = self.dataset.sparse_rows(index) if self.sparse_rows else self.dataset.rows(index)[0]
        return x if self.running is None else self.running.scale(x)

    def block(self, indices: np.ndarray):
        assert self.running is None, "blocks come from training phases, which give the statistics"
        return self.dataset.sparse_rows(indices) if self.sparse_rows else self.dataset.rows(indices)


class RunningMinMax:
    """``feature_scaling="minmax"`` with the statistics of the rows scaled so far, the current one included: per
    feature ``(x - min) / (max - min)`` (a feature constant so far becomes 0), or on sparse data ``x / max|x|``
    (olb.protocol's docstring). ``scale(x)`` takes a dense row or a CSR row of shape (1, d) and returns a new one."""

    def __init__(self, n_features: int, sparse: bool):
        self.sparse = sparse
        self.low, self.high = np.full(n_features, np.inf), np.full(n_features, -np.inf)
        self.peak = np.zeros(n_features)

    def scale(self, x):
        if hasattr(x, "indices"):  # a CSR row of a sparse data set: its stored entries only
            columns = x.indices
            self.peak[columns] = np.fmax(self.peak[columns], np.abs(x.data))
            data = np.divide(x.data, self.peak[columns], out=np.zeros(len(columns)), where=self.peak[columns] > 0)
            return type(x)((data, columns.copy(), x.indptr.copy()), shape=x.shape)
        if self.sparse:
            self.peak = np.fmax(self.peak, np.abs(x))
            return np.divide(x, self.peak, out=np.zeros_like(x), where=self.peak > 0)
        self.low, self.high = np.fmin(self.low, x), np.fmax(self.high, x)
        span = self.high - self.low
        return (x - self.low) / np.where(span > 0, span, np.inf)


def _minmax(X, train_rows: np.ndarray, sparse: bool):
    """``X`` scaled with the training rows' statistics (see olb.protocol's docstring)."""
    if sparse:
        import scipy.sparse as sp

        peak = np.asarray(abs(X[train_rows]).max(axis=0).toarray()).ravel()
        inverse = np.divide(1.0, peak, out=np.zeros_like(peak), where=peak > 0)
        return sp.csr_array(X @ sp.diags_array(inverse))
    low = np.nanmin(X[train_rows], axis=0)
    span = np.nanmax(X[train_rows], axis=0) - low
    return (X - low) / np.where(span > 0, span, np.inf)
