"""The boosters' cost models: one formula over the compiled VFDT forest for every booster (``ForestCost``), each
booster with its own fitted coefficients (given where it registers), and the forest's storage as their memory.

The coefficients are fitted by ``benchmarks/calibrate_boosters.py`` (docs/grid.md, "The cost model").
"""

from __future__ import annotations

from dataclasses import dataclass

from olb.learners.base import StreamShape
from olb.learners.costs import CostModel, Params, round_overhead_s
from olb.weak import VFDTForest

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


@dataclass(frozen=True)
class ForestCost(CostModel):
    """A booster's planned CPU per row: the protocol's share (:func:`~olb.learners.costs.round_overhead_s`) plus its N trees' (and its own
    per-label arithmetic's) work, one formula for every booster over the compiled VFDT forest:

        margin x N x [predict_s x k + learning x learn_s x c x fed^fed_exponent x k^label_exponent
                      x (N / 100)^(trees_power - 1)]

    (k labels or classes, c features per tree, ``fed`` labels fed to a tree per learned row: the label
    cardinality for the full-feedback boosters, at most k for the top-k ones, 1 for the multiclass ones;
    ``learning`` 0 on a row only predicted). ``learning`` is ``forest_learning``, how hard the booster makes its
    trees learn against Ada.OLMR (its importance weights grow the trees faster or slower); with ``gamma_scale``
    set it falls with the baseline's edge as ``1 / (1 + (gamma / gamma_scale)^gamma_power)`` (a larger edge
    zeroes more weights). ``trees_power`` > 1: a booster whose own work per tree grows with N (OnlineMBBM's
    potentials). Its memory is its N trees' storage after the training rows
    (:meth:`olb.weak.VFDTForest.planned_memory_mb`; river's trees are taken alike)."""

    multiclass: bool = False
    forest_learning: float = 1.0
    trees_power: float = 1.0
    gamma_scale: float | None = None
    gamma_power: float = 1.0

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        fed, learning = self._fed_labels(params, shape), self._learning(params)
        return round_overhead_s(self.multiclass) + forest_cost_s(params, shape, fed, learning, self.trees_power)

    def predict_cost_s(self, params: Params, shape: StreamShape) -> float:
        return round_overhead_s(self.multiclass) + forest_cost_s(params, shape, 0.0, 0.0)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        covariates = params["num_covariates"] or shape.n_features
        return VFDTForest.planned_memory_mb(
            params["num_learners"], min(covariates, shape.n_features), shape.n_labels, shape.n_train or 0
        )

    def _learning(self, params: Params) -> float:
        if self.gamma_scale is None:
            return self.forest_learning
        return self.forest_learning / (1.0 + (params["gamma"] / self.gamma_scale) ** self.gamma_power)

    def _fed_labels(self, params: Params, shape: StreamShape) -> float:
        """Labels fed to a tree per learned row: the true class, or the relevant labels (the registered
        cardinality, else ``UNKNOWN_CARDINALITY``)."""
        if self.multiclass:
            return 1.0
        return shape.cardinality or min(UNKNOWN_CARDINALITY, shape.n_labels)


@dataclass(frozen=True)
class TopKForestCost(ForestCost):
    """A top-k booster's ``ForestCost``: only the relevant labels among the k revealed are fed (at most k), and
    smaller importance weights grow the trees more slowly (fewer split attempts): the trees' learning falls as
    ``weight_scale ** weight_power`` (fitted, like ``forest_learning``)."""

    weight_power: float = 0.0

    def _learning(self, params: Params) -> float:
        return super()._learning(params) * params["weight_scale"] ** self.weight_power

    def _fed_labels(self, params: Params, shape: StreamShape) -> float:
        return min(super()._fed_labels(params, shape), params["k"])


def forest_cost_s(
    params: Params, shape: StreamShape, fed_labels: float, learning: float, trees_power: float = 1.0
) -> float:
    """CPU seconds N compiled VFDTs spend on one row (``ForestCost``'s formula, without the protocol's share)."""
    c = FOREST_COST
    trees, k = params["num_learners"], shape.n_labels
    covariates = min(params["num_covariates"] or shape.n_features, shape.n_features)
    learn = c["learn_s"] * covariates * fed_labels ** c["fed_exponent"] * k ** c["label_exponent"] if learning else 0.0
    return COST_MARGIN * trees * (c["predict_s"] * k + learning * learn * (trees / 100) ** (trees_power - 1))
