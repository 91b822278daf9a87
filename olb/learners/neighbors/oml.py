"""OML: online metric learning for multi-label classification (paper 003, Gong et al. 2020).

Features are mapped into label space by a projection P fitted once on the initial memory; a low-rank metric
Q = V V^T is learned online there with a large-margin loss against the nearest stored neighbour (eq. 4), and
prediction is a k-nearest vote under Q. The printed formulas of the paper's step size contain errors; the
corrected ones are used (see :func:`cubic_coefficients`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from olb.learners.base import Param, StreamShape
from olb.learners.neighbors.knn import NeighborLearner
from olb.learners.neighbors.memory import RowMemory, k_nearest, vote
from olb.learners.neighbors.costs import MetricLearningCost
from olb.learners.registry import register


def update_spectrum(V: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigen-decomposition of the rank-2 matrix A = a a^T - b b^T within span{a, b}.

    Returns ``(mu, U, r)``: A's non-zero-space eigenvalues ``mu``, their orthonormal eigenvectors (columns of
    ``U``) and ``r_i = ||u_i^T V||^2``, so that tr(Q A^k) = sum_i r_i mu_i^k for Q = V V^T.
    """
    basis, _ = np.linalg.qr(np.stack([a, b], axis=1))
    ca, cb = basis.T @ a, basis.T @ b
    mu, w = np.linalg.eigh(np.outer(ca, ca) - np.outer(cb, cb))
    U = basis @ w
    r = ((U.T @ V) ** 2).sum(axis=1)
    return mu, U, r


def cubic_coefficients(mu: np.ndarray, r: np.ndarray, delta: float) -> tuple[float, float, float]:
    """Coefficients of the paper's approximated dual f(lam) = a lam^3 + b lam^2 + c lam (eq. 6 substituted in
    eq. 5), re-derived: a = -4 tr(QA^3), b = -2 tr(QA^2), c = delta - tr(QA) (the printed b and c are wrong)."""
    return -4.0 * float(r @ mu**3), -2.0 * float(r @ mu**2), float(delta - r @ mu)


def cubic_step(mu: np.ndarray, r: np.ndarray, delta: float, lam_min: float, lam_max: float) -> float:
    """The paper's step (eq. 7): the local maximiser of the cubic dual on lam > 0, clipped to [m, M]; M when
    the cubic increases for every lam > 0."""
    a, b, c = cubic_coefficients(mu, r, delta)
    roots = np.roots([3.0 * a, 2.0 * b, c]) if a != 0.0 else (np.array([-c / (2.0 * b)]) if b != 0.0 else np.empty(0))
    maxima = [
        float(z.real)
        for z in np.atleast_1d(roots)
        if abs(z.imag) < 1e-12 and z.real > 0 and 6.0 * a * z.real + 2.0 * b < 0
    ]
    return float(np.clip(min(maxima), lam_min, lam_max)) if maxima else lam_max


def exact_dual(lam: float, mu: np.ndarray, r: np.ndarray, delta: float) -> float:
    """The exact Lagrange dual g(lam) = lam delta - sum_i r_i lam mu_i / (1 - 2 lam mu_i), concave on
    0 <= lam < 1 / (2 max mu)."""
    return float(lam * delta - np.sum(r * lam * mu / (1.0 - 2.0 * lam * mu)))


def exact_dual_step(
    mu: np.ndarray, r: np.ndarray, delta: float, lam_min: float, lam_max: float, iterations: int = 100
) -> float:
    """The maximiser of :func:`exact_dual` by bisection on its derivative delta - sum r mu / (1 - 2 lam mu)^2
    (positive at 0, where it equals the loss), clipped to [m, M]; M when the dual increases without bound.

    The derivative is computed on Python floats (OML's two eigenvalues: a numpy call per term and iteration cost
    ~5 us, most of an update), term by term as numpy's elementwise expression does and added in order from -0.0,
    which is numpy's sum of fewer than 8 values: the same bits as ``np.sum(r * mu / (1 - 2 lam mu) ** 2)``."""
    terms = list(zip(np.asarray(mu, dtype=float).tolist(), np.asarray(r, dtype=float).tolist()))

    def slope(lam):
        twice, total = 2.0 * lam, -0.0
        for m, w in terms:
            d = 1.0 - twice * m
            total += w * m / (d * d)
        return delta - total

    positive = (mu > 0) & (r > 0)
    if not positive.any():
        return lam_max
    lo, hi = 0.0, min(1.0 / (2.0 * float(np.max(mu[positive]))), lam_max)
    if hi == lam_max and slope(hi) > 0:  # the maximiser lies beyond M
        return lam_max
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if slope(mid) > 0:
            lo = mid
        else:
            hi = mid
    return float(np.clip(0.5 * (lo + hi), lam_min, lam_max))


@register(cost=MetricLearningCost())
class OML(NeighborLearner):
    """Online metric learning in label space (paper 003, Algorithm 1), with a k-nearest vote for prediction.

    - ``learn_many`` (the initial memory, ``init_fraction`` of the training rows) fits the projection
      P = argmin ||X P - Y||^2 + ``ridge`` ||P||^2 (the paper's least squares; a ridge because the initial memory
      often has fewer rows than features) and stores the rows. V (q x d) starts with N(0, 1) entries.
    - ``learn_one(x_t, y_t)``: the nearest stored neighbour (x, y) (``update_neighbor``: Euclidean in input
      space, our reading of the paper, or under the current metric on P^T x), z = P^T x_t, A = (z - y)(z - y)^T -
      (z - y_t)(z - y_t)^T, delta = ||y_t - y||_1 and the hinge loss delta - tr(QA) (eq. 4); on a positive loss
      the step lam (``lambda_rule``) and the exact update V <- (I - 2 lam A)^{-1} V (Algorithm 1, line 9). The
      row is then stored.
    - ``lambda_rule``: ``'cubic'`` is the paper's (the local maximum of its approximated cubic dual, eq. 7,
      with the corrected coefficients), faithful but unstable: it sits at its cap M in most updates and the
      metric collapses. ``'exact_dual'`` (default, our reconstruction) maximises the exact concave dual.
    - Prediction: the ``n_neighbors`` nearest stored rows under Q on P^T x, each label's vote fraction as its
      score (the paper does not state the combining rule).

    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 5)); Y = (X[:, :3] > 0).astype(float)
    >>> oml = OML(5, 3, seed=1, n_neighbors=3)
    >>> oml.learn_many(X[:10], Y[:10])
    >>> for x, y in zip(X[10:], Y[10:]): oml.learn_one(x, y)
    >>> oml.latent_dim_, len(oml.memory), sorted(oml.predict_one(X[0]))
    (2, 40, ['labels', 'scores'])
    """

    name = "oml"
    latent_dim = Param(
        int, 0, low=0, doc="d, the columns of V (d < q); 0: ceil(q / 2), our choice (the paper gives none)"
    )
    lambda_rule = Param(
        str,
        "exact_dual",
        choices=("exact_dual", "cubic"),
        doc="step size: 'exact_dual' (bisection on the exact dual, stable) or 'cubic' (the paper's eq. 7, unstable)",
    )
    lambda_min = Param(float, 1e-5, low=0.0, doc="m, the lower clip of the step (paper: 1e-5)")
    lambda_max = Param(float, 1e5, low=0.0, open_low=True, doc="M, the upper clip of the step (paper: 1e5)")
    ridge = Param(float, 1.0, low=0.0, doc="ridge of the least-squares fit of P on the initial memory")
    update_neighbor = Param(
        str,
        "input",
        choices=("input", "metric"),
        doc="where the update's nearest neighbour is searched: 'input' (Euclidean on x, "
        "our reading of the paper) or 'metric' (under Q on P^T x)",
    )
    test_params: ClassVar[dict] = {"n_neighbors": 3}
    report_metrics: ClassVar[dict[str, bool]] = {"oml_lambda_capped": True}

    @classmethod
    def check_params(cls, params: dict, shape: StreamShape) -> list[str]:
        problems = super().check_params(params, shape)
        if shape.n_labels < 2:
            problems.append(f"OML needs at least 2 labels (d < q); the data set has {shape.n_labels}")
        elif params["latent_dim"] >= shape.n_labels:
            problems.append(
                f"latent_dim={params['latent_dim']} must be below the number of labels "
                f"{shape.n_labels} (or 0 for ceil(q / 2))"
            )
        if params["lambda_min"] > params["lambda_max"]:
            problems.append(f"lambda_min={params['lambda_min']} exceeds lambda_max={params['lambda_max']}")
        return problems

    def __post_init__(self) -> None:
        super().__post_init__()
        self.latent_dim_ = self.latent_dim or math.ceil(self.n_labels / 2)
        self.V = self.rng.normal(size=(self.n_labels, self.latent_dim_))
        self.P: np.ndarray | None = None
        self.memory = RowMemory(self.n_features)  # raw rows, for the input-space search
        self.memory_z = RowMemory(self.n_labels)  # P^T x of each stored row
        self.memory_labels = RowMemory(self.n_labels)
        self.n_updates = self.n_capped = 0
        # ((memory size, V version), Z V, its squared norms)
        self._latent_cache: tuple[tuple[int, int], np.ndarray, np.ndarray] | None = None
        self._version = 0

    def fit_projection(self, X: np.ndarray, Y: np.ndarray) -> None:
        """P by ridge least squares on (X, Y), solved in the smaller of the primal and dual forms."""
        X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
        n, p = X.shape
        if p <= n:
            self.P = np.linalg.lstsq(X.T @ X + self.ridge * np.eye(p), X.T @ Y, rcond=None)[0]
        else:
            self.P = X.T @ np.linalg.lstsq(X @ X.T + self.ridge * np.eye(n), Y, rcond=None)[0]

    def learn_many(self, X, Y) -> None:
        X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
        if self.P is None:
            self.fit_projection(X, Y)
            self.memory.extend(X)
            self.memory_z.extend(X @ self.P)
            self.memory_labels.extend(Y)
        else:
            super().learn_many(X, Y)

    def _latent_memory(self) -> tuple[np.ndarray, np.ndarray]:
        key = (len(self.memory_z), self._version)
        if self._latent_cache is None or self._latent_cache[0] != key:
            W = self.memory_z.rows @ self.V
            self._latent_cache = (key, W, np.einsum("ij,ij->i", W, W))
        return self._latent_cache[1], self._latent_cache[2]

    def _nearest_in_metric(self, z: np.ndarray, k: int) -> np.ndarray:
        W, sq = self._latent_memory()
        return k_nearest(W, sq, z @ self.V, k, self.tie_rng)

    def predict_one(self, x: np.ndarray) -> dict:
        if self.P is None:
            return self._labels_from_votes(np.zeros(self.n_labels))
        z = np.asarray(x, dtype=float) @ self.P
        return self._labels_from_votes(vote(self.memory_labels.rows, self._nearest_in_metric(z, self.n_neighbors)))

    def learn_one(self, x: np.ndarray, y) -> None:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if self.P is None:  # no initial block: the first row starts the memory (and fits P on itself)
            self.learn_many(x[None, :], y[None, :])
            return
        z = x @ self.P
        if self.update_neighbor == "input":
            nearest = k_nearest(self.memory.rows, self.memory.sq_norms, x, 1, self.tie_rng)
        else:
            nearest = self._nearest_in_metric(z, 1)
        self.update_metric(z, y, self.memory_labels.rows[nearest[0]])
        self.memory.append(x)
        self.memory_z.append(z)
        self.memory_labels.append(y)

    def update_metric(self, z: np.ndarray, y_true: np.ndarray, y_neighbor: np.ndarray) -> float:
        """One step of Algorithm 1 against the neighbour's label vector; returns the step lam (0: no update)."""
        delta = float(np.abs(y_true - y_neighbor).sum())
        if delta == 0.0:
            return 0.0
        mu, U, r = update_spectrum(self.V, z - y_neighbor, z - y_true)
        loss = delta - float(r @ mu)
        if loss <= 0.0:
            return 0.0
        step = exact_dual_step if self.lambda_rule == "exact_dual" else cubic_step
        lam = step(mu, r, delta, self.lambda_min, self.lambda_max)
        # (I - 2 lam A)^{-1} = I + sum_i u_i u_i^T (1 / (1 - 2 lam mu_i) - 1): A acts only on span{a, b}
        self.V = self.V + U @ ((1.0 / (1.0 - 2.0 * lam * mu) - 1.0)[:, None] * (U.T @ self.V))
        self._version += 1
        self.n_updates += 1
        self.n_capped += lam >= self.lambda_max
        return lam

    def stream_report(self, n_scored: int) -> dict:
        """The fraction of metric updates whose step sat at its cap M (the cubic rule's failure mode)."""
        return {"oml_lambda_capped": self.n_capped / self.n_updates if self.n_updates else 0.0}
