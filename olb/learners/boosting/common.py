"""What the online boosters of papers 000 (multi-label) and 001 (multiclass) share.

- ``BOOSTER_PARAMS``: the shared hyperparameter names (``num_learners``, ``num_covariates``,
  ``weak_learner``, ``authors_weights``); each booster adjusts defaults where its paper differs.
- ``build_weak_learners``: the pool of N weak learners of a booster (:func:`olb.weak.make_weak_learners`).
- ``ALL_FEATURES_PARAM``: ``num_covariates`` defaulting to all features (paper 001's learners).
- ``GAMMA_PARAM`` / ``MARGIN_PARAM``: the edge of the potential-based boosters' baseline and their hinge margin.

The per-round arithmetic they share (Hedge, the step on alpha, the experts' states) is compiled, in
:mod:`~olb.learners.boosting.rounds`.
"""

from __future__ import annotations

import numpy as np

from olb.learners.base import Param, StreamShape
from olb.weak import WEAK_LEARNERS, VFDTForest, WeakLearners, make_weak_learners

BOOSTER_PARAMS = {
    "num_learners": Param(int, 100, low=1, doc="number of weak learners N"),
    "num_covariates": Param(int, 20, low=1, doc="random features per weak learner"),
    "weak_learner": Param(str, "vfdt", choices=WEAK_LEARNERS, doc="weak learner family"),
    "authors_weights": Param(
        bool,
        False,
        doc="scale each tree's importance weights by a constant from "
        "U[3, 10], as the authors' code does (not in the paper)",
    ),
}
ALL_FEATURES_PARAM = Param(
    int,
    0,
    low=0,
    doc="random features per tree; 0 (default): every tree sees all features, as in the authors' multiclass code",
)
GAMMA_PARAM = Param(float, 0.1, low=0.0, high=1.0, open_low=True, open_high=True, doc="edge of the baseline")
MARGIN_PARAM = Param(float, 1.0, low=0.0, doc="hinge margin inside the potential (authors' code: 0)")


def weak_memory_mb(params: dict, shape: StreamShape) -> float:
    """A booster's planned model memory (``OnlineLearner.model_memory_mb``): its N trees' storage after the
    training rows (:meth:`olb.weak.VFDTForest.planned_memory_mb`; river's trees are taken alike)."""
    covariates = params["num_covariates"] or shape.n_features
    return VFDTForest.planned_memory_mb(
        params["num_learners"], min(covariates, shape.n_features), shape.n_labels, shape.n_train or 0
    )


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
