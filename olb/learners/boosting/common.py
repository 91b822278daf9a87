"""What the online boosters of papers 000 (multi-label) and 001 (multiclass) share.

- ``NUM_LEARNERS``, ``NUM_COVARIATES``, ``WEAK_LEARNER``, ``AUTHORS_WEIGHTS``: the shared hyperparameters;
  each booster adjusts defaults where its paper differs.
- ``build_weak_learners``: the pool of N weak learners of a booster (:func:`olb.weak.make_weak_learners`).
- ``ALL_FEATURES_PARAM``: ``num_covariates`` defaulting to all features (paper 001's learners).
- ``GAMMA_PARAM`` / ``MARGIN_PARAM``: the edge of the potential-based boosters' baseline and their hinge margin.
- ``hedge_init`` / ``hedge_draw``: the adaptive boosters' Hedge over their N experts.
- ``rounds``: the compiled per-round arithmetic they share (Hedge, the experts' states, importance weights), the
  kernels of :mod:`~olb.learners.boosting.rounds.shared` as :mod:`olb.kernels` loads them.
"""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import Param
from olb.weak import WEAK_LEARNERS, WeakLearners, make_weak_learners

NUM_LEARNERS = Param(int, 100, low=1, doc="number of weak learners N")
NUM_COVARIATES = Param(int, 20, low=1, doc="random features per weak learner")
WEAK_LEARNER = Param(str, "vfdt", choices=WEAK_LEARNERS, doc="weak learner family")
AUTHORS_WEIGHTS = Param(
    bool,
    False,
    doc="scale each tree's importance weights by a constant from U[3, 10], as the authors' code does (not in the paper)",
)
ALL_FEATURES_PARAM = Param(
    int,
    0,
    low=0,
    doc="random features per tree; 0 (default): every tree sees all features, as in the authors' multiclass code",
)
GAMMA_PARAM = Param(float, 0.1, low=0.0, high=1.0, open_low=True, open_high=True, doc="edge of the baseline")
MARGIN_PARAM = Param(float, 1.0, low=0.0, doc="hinge margin inside the potential (authors' code: 0)")

rounds = KernelModule("olb.learners.boosting.rounds.shared")


def hedge_init(n_experts: int) -> np.ndarray:
    """The uniform Hedge weights 1/N of the first round."""
    return np.full(n_experts, 1.0 / n_experts)


def hedge_draw(weights: np.ndarray, rng: np.random.Generator) -> int:
    """An expert index drawn with probability proportional to ``weights`` (one uniform draw)."""
    return rounds.hedge_index(weights, rng.random())


def build_weak_learners(
    kind: str,
    n_learners: int,
    n_features: int,
    n_labels: int,
    num_covariates: int,
    rng: np.random.Generator,
    importance_scale_range: tuple[float, float] | None = None,
) -> WeakLearners:
    """The booster's N weak learners; ``num_covariates`` <= 0 means every tree sees all features."""
    covariates = n_features if num_covariates <= 0 else num_covariates
    return make_weak_learners(kind, n_learners, n_features, n_labels, covariates, importance_scale_range, rng)
