"""The stored examples of a nearest-neighbour learner and the exact k-nearest search over them."""

from __future__ import annotations

import numpy as np


class RowMemory:
    """Rows appended over a stream, kept in a preallocated array that doubles when full.

    ``rows`` is a view of the filled part; ``sq_norms`` caches each row's squared norm for the search.

    >>> mem = RowMemory(2)
    >>> mem.extend(np.array([[0.0, 0.0], [3.0, 4.0]]))
    >>> mem.append(np.array([1.0, 0.0]))
    >>> len(mem), mem.sq_norms.tolist()
    (3, [0.0, 25.0, 1.0])
    """

    def __init__(self, n_columns: int, capacity: int = 64):
        self._data = np.empty((max(int(capacity), 1), int(n_columns)))
        self._sq = np.empty(self._data.shape[0])
        self.n = 0

    def __len__(self) -> int:
        return self.n

    @property
    def rows(self) -> np.ndarray:
        return self._data[: self.n]

    @property
    def sq_norms(self) -> np.ndarray:
        return self._sq[: self.n]

    def _reserve(self, n_more: int) -> None:
        need = self.n + n_more
        if need > self._data.shape[0]:
            size = max(need, 2 * self._data.shape[0])
            data = np.empty((size, self._data.shape[1]))
            data[: self.n] = self.rows
            sq = np.empty(size)
            sq[: self.n] = self.sq_norms
            self._data, self._sq = data, sq

    def extend(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=float)
        self._reserve(rows.shape[0])
        self._data[self.n : self.n + rows.shape[0]] = rows
        self._sq[self.n : self.n + rows.shape[0]] = np.einsum("ij,ij->i", rows, rows)
        self.n += rows.shape[0]

    def append(self, row: np.ndarray) -> None:
        self.extend(np.asarray(row, dtype=float)[None, :])


def k_nearest(
    rows: np.ndarray, sq_norms: np.ndarray, x: np.ndarray, k: int, tie_rng: np.random.Generator | None = None
) -> np.ndarray:
    """Indices of the ``k`` rows nearest to ``x`` in Euclidean distance, nearest first (ties: the tie rule below).

    Squared distances are expanded as ||r||^2 - 2 r.x + ||x||^2 (one matrix-vector product over the memory).
    Rows within rounding error (1e-9 relative) of the k-th distance count as tied with it. When more rows tie
    than places are left, the tie rule decides which are taken: by default the lower indices, as a stable
    brute-force sort breaks ties (ties are frequent on binary rows; when a learned metric collapses, every
    distance ties and the first rows stored decide); with ``tie_rng``, a uniformly random subset drawn from that
    generator (it is drawn from only then, so a search without such ties returns the same rows either way).

    >>> rows = np.array([[0.0], [5.0], [1.0], [2.0], [1.0]])
    >>> k_nearest(rows, (rows ** 2).ravel(), np.array([1.2]), 2).tolist()
    [2, 4]
    >>> k_nearest(np.zeros((6, 1)), np.zeros(6), np.zeros(1), 2).tolist()  # all tied: the first two
    [0, 1]
    """
    n = rows.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.intp)
    x_sq = float(x @ x)
    dist = sq_norms - 2.0 * (rows @ x) + x_sq
    k = min(int(k), n)
    kth = np.partition(dist, k - 1)[k - 1]
    slack = 1e-9 * (float(sq_norms.max()) + x_sq + 1.0)
    inside = np.flatnonzero(dist < kth - slack)
    tied = np.flatnonzero(np.abs(dist - kth) <= slack)
    free = k - inside.size
    if tie_rng is not None and tied.size > free:
        tied = np.sort(tie_rng.choice(tied, free, replace=False))
    else:
        tied = tied[:free]
    inside = inside[np.lexsort((inside, dist[inside]))]
    return np.concatenate([inside, tied])


def vote(labels: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """Per-label vote fraction of the ``neighbours`` (rows of the 0/1 matrix ``labels``); zeros if none."""
    if neighbours.size == 0:
        return np.zeros(labels.shape[1])
    return labels[neighbours].mean(axis=0)
