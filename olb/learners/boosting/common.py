"""What the online boosters of papers 000 (multi-label) and 001 (multiclass) share.

- ``BOOSTER_PARAMS``: the shared hyperparameter names (``num_learners``, ``num_covariates``,
  ``weak_learner``, ``authors_weights``); each booster adjusts defaults where its paper differs.
- ``build_weak_learners``: the pool of N weak learners of a booster (:func:`olb.weak.make_weak_learners`).
- ``hedge_draw`` / ``hedge_update``: the Hedge distribution over the N experts (Ada.OLMR, Adaboost.OLM).
"""

from __future__ import annotations

import numpy as np

from olb.learners.base import Param
from olb.weak import WEAK_LEARNERS, WeakLearners, make_weak_learners

BOOSTER_PARAMS = {
    "num_learners": Param(int, 100, low=1, doc="number of weak learners N"),
    "num_covariates": Param(int, 20, low=1, doc="random features per weak learner"),
    "weak_learner": Param(str, "vfdt", choices=WEAK_LEARNERS, doc="weak learner family"),
    "authors_weights": Param(bool, False, doc="scale each tree's importance weights by a constant from "
                             "U[3, 10], as the authors' code does (not in the paper)"),
}


def build_weak_learners(kind: str, n_learners: int, n_features: int, n_labels: int, num_covariates: int,
                        rng: np.random.Generator,
                        importance_scale_range: tuple[float, float] | None = None) -> WeakLearners:
    """The booster's N weak learners; ``num_covariates`` <= 0 means every tree sees all features."""
    covariates = n_features if num_covariates <= 0 else num_covariates
    return make_weak_learners(kind, n_learners, n_features, n_labels, covariates, importance_scale_range, rng)


def hedge_draw(weights: np.ndarray, rng: np.random.Generator) -> int:
    """An expert index drawn with probability proportional to ``weights`` (one uniform draw)."""
    return min(int(np.searchsorted(np.cumsum(weights), rng.random() * weights.sum())), len(weights) - 1)


def hedge_update(weights: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """Hedge with step 1: ``weights * exp(-losses)``, renormalized to sum 1.

    Renormalizing every round keeps the largest weight >= 1/N, so the vector never underflows to 0.
    """
    new = weights * np.exp(-losses)
    return new / new.sum()
