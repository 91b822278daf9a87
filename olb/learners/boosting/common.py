"""What the online boosters of papers 000 (multi-label) and 001 (multiclass) share.

- ``BOOSTER_PARAMS``: the shared hyperparameter names (``num_learners``, ``num_covariates``,
  ``weak_learner``, ``authors_weights``); each booster adjusts defaults where its paper differs.
- ``build_weak_learners``: the pool of N weak learners of a booster (:func:`olb.weak.make_weak_learners`).
- ``ALL_FEATURES_PARAM``: ``num_covariates`` defaulting to all features (paper 001's learners).
- ``GAMMA_PARAM`` / ``MARGIN_PARAM``: the edge of the potential-based boosters' baseline and their hinge margin.
- ``ForestCost``: every booster's planned CPU per row (``cost_per_example_s``), one formula over the forest.
- ``hedge_init`` / ``hedge_draw``: the adaptive boosters' Hedge over their N experts.
- ``rounds``: the compiled per-round arithmetic they share (Hedge, the step on alpha, the experts' states), the
  kernels of :mod:`~olb.learners.boosting.rounds` as :mod:`olb.kernels` loads them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import ROUND_OVERHEAD_S, Param, StreamShape
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

rounds = KernelModule("olb.learners.boosting.rounds")


def hedge_init(n_experts: int) -> np.ndarray:
    """The uniform Hedge weights 1/N of the first round."""
    return np.full(n_experts, 1.0 / n_experts)


def hedge_draw(weights: np.ndarray, rng: np.random.Generator) -> int:
    """An expert index drawn with probability proportional to ``weights`` (one uniform draw)."""
    return rounds.hedge_index(weights, rng.random())


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


FOREST_COST = {
    "predict_s": 0.0,  # fitted ~1e-21: a row only predicted costs the protocol's share and no more, within the noise
    "learn_s": 1.13e-7,
    "fed_exponent": 0.837,
    "label_exponent": 0.238,
}
"""The compiled forest's cost coefficients (``ForestCost``), fitted by ``benchmarks/calibrate_boosters.py``:
``predict_s`` per tree and label of a row, ``learn_s`` per tree and covariate of a learned row, times the fed
labels to ``fed_exponent`` and the labels to ``label_exponent``."""

COST_MARGIN = 1.3
"""The forest's planned cost over its fit: the fit is a geometric mean over the calibration cells (least squares
in log space), the margin puts a booster's median cell at ~1.1-1.3x its plan (docs/grid.md)."""

UNKNOWN_CARDINALITY = 4.0
"""Relevant labels per row assumed where the registry does not record the label cardinality (above 8 of the
11 registered multi-label data sets), at most the labels."""


class ForestCost:
    """A booster's planned CPU per row (``cost_per_example_s`` and ``predict_cost_s``): the protocol's
    ``ROUND_OVERHEAD_S`` plus its N trees' (and its own per-label arithmetic's) work, one formula for every
    booster over the compiled VFDT forest:

        margin x N x [predict_s x k + learning x learn_s x c x fed^fed_exponent x k^label_exponent
                      x (N / 100)^(trees_power - 1)]

    (k labels or classes, c features per tree, ``fed`` labels fed to a tree per learned row: the label
    cardinality for the full-feedback boosters, at most k for the top-k ones, 1 for the multiclass ones;
    ``learning`` 0 on a row only predicted). ``learning`` is ``forest_learning``, how hard the booster makes its
    trees learn against Ada.OLMR (its importance weights grow the trees faster or slower); with ``gamma_scale``
    set it falls with the baseline's edge as ``1 / (1 + (gamma / gamma_scale)^gamma_power)`` (a larger edge
    zeroes more weights). ``trees_power`` > 1: a booster whose own work per tree grows with N (OnlineMBBM's
    potentials). The coefficients are fitted by ``benchmarks/calibrate_boosters.py`` (docs/grid.md, "The cost
    model")."""

    task: ClassVar[str]
    forest_learning: ClassVar[float] = 1.0
    gamma_scale: ClassVar[float | None] = None
    gamma_power: ClassVar[float] = 1.0
    trees_power: ClassVar[float] = 1.0

    @classmethod
    def cost_per_example_s(cls, params: dict, shape: StreamShape) -> float:
        fed, learning = cls._fed_labels(params, shape), cls._learning(params)
        return ROUND_OVERHEAD_S + forest_cost_s(params, shape, fed, learning, cls.trees_power)

    @classmethod
    def predict_cost_s(cls, params: dict, shape: StreamShape) -> float:
        return ROUND_OVERHEAD_S + forest_cost_s(params, shape, 0.0, 0.0)

    @classmethod
    def _learning(cls, params: dict) -> float:
        if cls.gamma_scale is None:
            return cls.forest_learning
        return cls.forest_learning / (1.0 + (params["gamma"] / cls.gamma_scale) ** cls.gamma_power)

    @classmethod
    def _fed_labels(cls, params: dict, shape: StreamShape) -> float:
        """Labels fed to a tree per learned row: the true class, or the relevant labels (the registered
        cardinality, else ``UNKNOWN_CARDINALITY``)."""
        if cls.task == "multiclass":
            return 1.0
        return shape.cardinality or min(UNKNOWN_CARDINALITY, shape.n_labels)


def forest_cost_s(
    params: dict, shape: StreamShape, fed_labels: float, learning: float, trees_power: float = 1.0
) -> float:
    """CPU seconds N compiled VFDTs spend on one row (``ForestCost``'s formula, without the protocol's share)."""
    c = FOREST_COST
    trees, k = params["num_learners"], shape.n_labels
    covariates = min(params["num_covariates"] or shape.n_features, shape.n_features)
    learn = c["learn_s"] * covariates * fed_labels ** c["fed_exponent"] * k ** c["label_exponent"] if learning else 0.0
    return COST_MARGIN * trees * (c["predict_s"] * k + learning * learn * (trees / 100) ** (trees_power - 1))
