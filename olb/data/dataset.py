"""The in-memory form every loader returns and every protocol consumes."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scipy import sparse


@dataclass(frozen=True)
class Dataset:
    """A benchmark data set held as numpy arrays (X as a ``scipy.sparse.csr_array`` when sparse on disk).

    Rows are in file order: the official training rows first, then the official test rows.
    ``n_train`` is the size of the official training split (``None`` when the source has no split).

    Attributes
    ----------
    name : registry name, e.g. ``"emotions"``.
    X : float64 array (n, d), or a float64 ``scipy.sparse.csr_array`` for data sets sparse on disk (sparse
        ARFF, LIBSVM; see ``is_sparse``, ``rows`` and ``sparse_rows``). Nominal features hold their category
        code (0..c-1) as a float; missing values are NaN (see ``docs/data.md`` for the missing-value policy).
    Y : multi-label: int8 array (n, k) of 0/1 relevance, columns in ``label_names`` order;
        multiclass: int64 array (n,) of class indices into ``label_names``.
    task : ``"multilabel"`` or ``"multiclass"``.
    feature_names, label_names : column names as in the source file (labels in the order of the
        MULAN XML when there is one).
    nominal : for each feature, ``None`` if numeric, else the tuple of its category names.
    """

    name: str
    X: np.ndarray | sparse.csr_array
    Y: np.ndarray
    task: str
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    n_train: int | None = None
    nominal: tuple[tuple[str, ...] | None, ...] = field(default=())

    def __post_init__(self):
        if self.task not in ("multilabel", "multiclass"):
            raise ValueError(f"dataset {self.name!r}: task must be 'multilabel' or 'multiclass', got {self.task!r}")
        if self.X.shape[0] != len(self.Y):
            raise ValueError(f"dataset {self.name!r}: X has {self.X.shape[0]} rows but Y has {len(self.Y)}")
        if not self.nominal:
            object.__setattr__(self, "nominal", (None,) * self.n_features)

    @property
    def n_examples(self) -> int:
        return self.X.shape[0]

    @property
    def is_sparse(self) -> bool:
        """Whether X is a sparse matrix (never densified by the loader)."""
        return not isinstance(self.X, np.ndarray)

    def rows(self, index) -> np.ndarray:
        """The rows ``index`` (an int, a slice or an index array) as a dense (n, d) float64 copy.

        >>> ds = Dataset("toy", np.arange(6.0).reshape(3, 2), np.zeros((3, 1), np.int8), "multilabel", ("a", "b"), ("y",))
        >>> ds.rows([2, 0])
        array([[4., 5.],
               [0., 1.]])
        """
        entries = self._csr_row(index)
        if entries is not None:
            values, columns = entries
            row = np.zeros((1, self.n_features), dtype=values.dtype)
            row[0, columns] = values
            return row
        index = [index] if np.isscalar(index) else index
        if self.is_sparse:
            return self.X[index].toarray()
        return np.array(self.X[index], dtype=np.float64)

    def sparse_rows(self, index):
        """The rows ``index`` as a ``scipy.sparse.csr_array`` (n, d), from a sparse or a dense X."""
        from scipy import sparse

        entries = self._csr_row(index)
        if entries is not None:
            values, columns = entries
            return sparse.csr_array((values.astype(np.float64), columns, [0, len(columns)]), shape=(1, self.n_features))
        index = [index] if np.isscalar(index) else index
        return sparse.csr_array(self.X[index], dtype=np.float64)

    def _csr_row(self, index) -> tuple[np.ndarray, np.ndarray] | None:
        """The stored values and columns of row ``index`` (an int) of a CSR X without duplicate columns, read from
        its arrays (what ``X[[index]]`` holds, without scipy's row indexing, which costs ~50 us a row); ``None``
        for anything else (scipy's indexing serves it)."""
        if not (self.is_sparse and isinstance(index, (int, np.integer)) and self._csr_without_duplicates):
            return None
        X: Any = self.X
        row = range(self.n_examples)[index]
        start, end = X.indptr[row], X.indptr[row + 1]
        return X.data[start:end], X.indices[start:end]

    @functools.cached_property
    def _csr_without_duplicates(self) -> bool:
        """Whether no row of a sparse X stores a column twice (then a row's entries can be copied as they are)."""
        X: Any = self.X
        if getattr(X, "format", None) != "csr":
            return False
        canonical = X.copy()
        canonical.sum_duplicates()
        return canonical.nnz == X.nnz

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_labels(self) -> int:
        return len(self.label_names)

    @property
    def cardinality(self) -> float:
        """Mean number of relevant labels per example (1 for multiclass)."""
        return float(self.Y.sum(axis=1).mean()) if self.task == "multilabel" else 1.0

    def split(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The official (train, test) split as ((X, Y), (X, Y))."""
        if self.n_train is None:
            raise ValueError(f"dataset {self.name!r} has no official train/test split")
        n = self.n_train
        return (self.X[:n], self.Y[:n]), (self.X[n:], self.Y[n:])
