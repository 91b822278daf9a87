"""The weak-learner interface the boosters talk to (paper 000, section 2.1).

A booster holds N weak learners. On every example it asks all of them for a prediction, a distribution
h in Delta[k] over the k labels, and after the feedback it sends each learner importance-weighted labels.
Any learner that can do both fits: a single-label learner predicts its class probabilities and is fed
each relevant label l with weight w[l]; a multi-label prediction {l_1..l_n} is the distribution
(1/n) sum e_{l_i}. Implementations: :class:`olb.weak.vfdt.VFDTForest` (N VFDTs in shared numpy arrays,
the default) and :class:`olb.weak.river_adapter.RiverWeakLearners` (any river classifier).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class WeakLearners(ABC):
    """A pool of N weak learners over d features and k labels."""

    def __init__(self, n_learners: int, n_features: int, n_labels: int):
        if n_learners < 1:
            raise ValueError(f"n_learners must be a positive integer, got {n_learners}")
        if n_labels < 2:
            raise ValueError(f"n_labels must be at least 2, got {n_labels}")
        self.n_learners, self.n_features, self.n_labels = n_learners, n_features, n_labels

    @abstractmethod
    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Predictions of all learners for ``x`` (d,): an (N, k) array whose rows sum to 1."""

    @abstractmethod
    def learn(self, x: np.ndarray, weights: np.ndarray) -> None:
        """Feed label l to learner i with importance weight ``weights[i, l]`` (N, k); 0 means not fed."""


# Ranges of the per-tree random parameters of every Hoeffding-tree pool (the authors' code): split confidence
# delta and tie threshold tau log-uniform, grace period uniform (weight units).
DELTA_RANGE = (0.01, 0.9)
TAU_RANGE = (0.01, 0.9)
GRACE_RANGE = (5.0, 20.0)


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    """A draw whose log10 is uniform on [log10 low, log10 high]."""
    return float(10.0 ** rng.uniform(np.log10(low), np.log10(high)))
