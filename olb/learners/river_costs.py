"""The cost models of river's multi-label learners (:mod:`olb.learners.river_family`)."""

from __future__ import annotations

from dataclasses import dataclass

from olb.learners.base import OnlineLearner, StreamShape
from olb.learners.costs import ROUND_OVERHEAD_S, CostModel, Params
from olb.learners.river_family import LEARNERS

LABEL_FEATURE_COST_S = {"pa": 1.6e-7, "lr": 9e-8, "ht": 1.6e-6}
"""CPU seconds of one round (a prediction, and an update on a training row) per label and feature of each
classifier, in binary relevance; measured on emotions and yeast (72 and 103 features, 6 and 14 labels) on one pass
of train_frozen (the test rows included), see docs/river.md."""

STRATEGY_FACTOR = {"br": 1.0, "cc": 1.3}
"""The strategies' CPU over binary relevance: a chain's classifiers also read the previous labels."""

TREE_LEAF_FEATURE_BYTES = 8192
"""Resident bytes of a Hoeffding tree's leaf per feature it has seen (river's Gaussian splitter of the feature,
per class): 7.9 KB on emotions, 6.6 KB on yeast, 7.8 KB on scene, 2.5 KB on medical (sparse: a leaf sees a third
of its 1,449 features in 333 rows), measured with ``river_br_ht`` at its defaults (2026-11-27, 2-core Intel Xeon
with AVX-512). No tree split on these (up to 1,500 training rows at ``split_confidence`` 1e-7): one leaf per label."""


@dataclass(frozen=True)
class RiverCost(CostModel):
    """A river ``strategy`` around one ``classifier`` per label."""

    strategy: str
    classifier: str

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol plus a classifier's cost per label and feature (features capped at 2000: only a
        sparse row's nonzeros reach river, and the registry does not record them), times the strategy's factor
        over binary relevance: a chain's classifiers also read the previous labels (1.3x), a Monte Carlo chain
        samples m label sets per prediction (0.6 m x: emotions 10x, yeast 5x at m = 10)."""
        factor = 0.6 * params.get("m", 10) if self.strategy == "mcc" else STRATEGY_FACTOR[self.strategy]
        features = min(shape.n_features, 2000)
        return ROUND_OVERHEAD_S + factor * LABEL_FEATURE_COST_S[self.classifier] * shape.n_labels * features

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """A Hoeffding tree per label, of one leaf that has seen every feature (capped at 2000, as for the CPU;
        a chain's trees also see the labels before theirs): ``TREE_LEAF_FEATURE_BYTES`` each. A tree that splits
        holds more; the linear classifiers' weights are the base model's few d x q floats."""
        if self.classifier != "ht":
            return super().model_memory_mb(params, shape)
        features = min(shape.n_features, 2000) + (shape.n_labels if self.strategy != "br" else 0)
        return shape.n_labels * features * TREE_LEAF_FEATURE_BYTES / 2**20


COST_MODELS: dict[type[OnlineLearner], CostModel] = {cls: RiverCost(cls.strategy, cls.classifier) for cls in LEARNERS}
