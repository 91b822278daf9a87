"""A growing store of support vectors and their coefficients, with the kernel row of a new example.

Kernel learners keep the examples they updated on (not a precomputed n x n kernel matrix), so they run on
streams; the store doubles its preallocated arrays as it fills.
"""

from __future__ import annotations

import numpy as np


class SupportVectors:
    """Support vectors (n, d) with coefficients (n, m); scores of x are ``kernel_row(x) @ coef``.

    ``kernel``: 'rbf', k(x, x') = exp(-||x - x'||^2 / (2 sigma^2)) [RECON: the paper's parametrisation was lost],
    or 'linear', <x, x'>.

    >>> store = SupportVectors(n_features=2, width=3, kernel="linear", sigma=1.0)
    >>> store.add(np.array([1.0, 2.0]), np.array([1.0, 0.0, -1.0]))
    >>> store.scores(store.kernel_row(np.array([1.0, 1.0])))
    array([ 3.,  0., -3.])
    """

    def __init__(self, n_features: int, width: int, kernel: str, sigma: float, capacity: int = 64):
        self.kernel, self.sigma = kernel, sigma
        self.X = np.empty((capacity, n_features))
        self.sq_norms = np.empty(capacity)
        self.coef = np.empty((capacity, width))
        self.size = 0

    def self_kernel(self, x: np.ndarray) -> float:
        """k(x, x)."""
        return 1.0 if self.kernel == "rbf" else float(x @ x)

    def kernel_row(self, x: np.ndarray) -> np.ndarray:
        """k(x_j, x) for every stored x_j, (n,)."""
        dots = self.X[: self.size] @ x
        if self.kernel == "linear":
            return dots
        sq_dist = np.maximum(self.sq_norms[: self.size] + x @ x - 2.0 * dots, 0.0)
        return np.exp(sq_dist / (-2.0 * self.sigma**2))

    def scores(self, row: np.ndarray) -> np.ndarray:
        return row @ self.coef[: self.size]

    def add(self, x: np.ndarray, coef: np.ndarray) -> None:
        if self.size == self.X.shape[0]:
            grow = lambda a: np.concatenate([a, np.empty_like(a)])  # noqa: E731
            self.X, self.sq_norms, self.coef = grow(self.X), grow(self.sq_norms), grow(self.coef)
        self.X[self.size], self.sq_norms[self.size], self.coef[self.size] = x, x @ x, coef
        self.size += 1
