"""Boost any river classifier: N river models behind the :class:`~olb.weak.base.WeakLearners` interface.

Each model is a single-label learner over the classes 0..k-1 that sees a fixed random subset of the
features (as dicts, river's input format). Label l is fed to model i with river's importance weight
``learn_one(x, l, w=...)``; the prediction is ``predict_proba_one`` spread over the k labels (labels the
model has not seen get probability 0; a model that has seen nothing predicts uniformly).

This is the general, slower path (one Python call per model and label). The default weak learner,
:class:`~olb.weak.vfdt.VFDTForest`, does the same for VFDTs in vectorized numpy.

>>> import numpy as np
>>> from river import tree
>>> pool = RiverWeakLearners(lambda i, rng: tree.HoeffdingTreeClassifier(), n_learners=2, n_features=3, n_labels=2, seed=0)
>>> x = np.array([0.0, 1.0, 2.0])
>>> pool.learn(x, np.array([[1.0, 0.0], [0.0, 1.0]]))
>>> pool.predict_proba(x)
array([[1., 0.],
       [0., 1.]])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from olb.weak.base import DELTA_RANGE, GRACE_RANGE, TAU_RANGE, WeakLearners, log_uniform


class RiverWeakLearners(WeakLearners):
    """N river classifiers built by ``factory(i, rng)``, each on ``num_covariates`` random features."""

    def __init__(
        self,
        factory: Callable,
        n_learners: int,
        n_features: int,
        n_labels: int,
        num_covariates: int = 20,
        seed: int | np.random.Generator | None = None,
    ):
        super().__init__(n_learners, n_features, n_labels)
        rng = np.random.default_rng(seed)
        self.models = [factory(i, rng) for i in range(n_learners)]
        size = min(num_covariates, n_features)
        self.covariates = [np.sort(rng.choice(n_features, size, replace=False)) for _ in range(n_learners)]

    def _features(self, x: np.ndarray, i: int) -> dict:
        cols = self.covariates[i]
        return {int(c): float(v) for c, v in zip(cols, x[cols]) if not np.isnan(v)}

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        H = np.zeros((self.n_learners, self.n_labels))
        for i, model in enumerate(self.models):
            for label, p in model.predict_proba_one(self._features(x, i)).items():
                H[i, label] = p
        total = H.sum(axis=1, keepdims=True)
        return np.divide(H, total, out=np.full_like(H, 1.0 / self.n_labels), where=total > 0)

    def learn(self, x: np.ndarray, weights: np.ndarray) -> None:
        for i, label in zip(*np.nonzero(weights > 0)):
            self.models[i].learn_one(self._features(x, i), int(label), w=float(weights[i, label]))


WEAK_LEARNER_IMPORTS: dict[str, tuple[str, ...]] = {"river_hoeffding_tree": ("river.tree",)}
"""Weak learner family -> the optional modules its pool imports (a booster's warm-up, see :func:`olb.run.warm_up`)."""


def river_hoeffding_tree(i: int, rng: np.random.Generator):
    """river's ``HoeffdingTreeClassifier`` (``leaf_prediction='mc'``) with random parameters drawn from the
    VFDT forest's ranges (grace period truncated to an integer, at least 1); a ``factory`` for the pool."""
    from river import tree

    return tree.HoeffdingTreeClassifier(
        grace_period=max(1, int(rng.uniform(*GRACE_RANGE))),
        delta=log_uniform(rng, *DELTA_RANGE),
        tau=log_uniform(rng, *TAU_RANGE),
        leaf_prediction="mc",
    )
