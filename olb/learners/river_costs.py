"""The cost models of river's multi-label learners (:mod:`olb.learners.river_family`) and of the MLHAT table's
(:mod:`olb.learners.river_mlhat`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from olb.learners.base import StreamShape
from olb.learners.costs import ROUND_OVERHEAD_S, CostModel, Params

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


TABLE_LABEL_FEATURE_COST_S = {
    "ht": 2.5e-6,
    "efdt": 1e-5,
    "hat": 3.5e-6,
    "arf": 2e-5,
    "amf": 4e-5,
    "mt": 2.5e-6,
    "sgt": 5e-5,
    "knn": 4.2e-6,
    "nb": 3.5e-6,
    "amr": 7.3e-6,
    "abalr": 2.7e-6,
    "abolr": 3.2e-6,
    "isoupt": 1.2e-5,
}
"""CPU seconds of one prequential round (a prediction and an update) per label and feature of the MLHAT table's
learners (:mod:`olb.learners.river_mlhat`) at the table's settings, given every feature (``dense_rows``): measured
on emotions (every row) and yeast (its first 800 rows), 72 and 103 features, 6 and 14 labels; BR+HT on medical's first
250 rows (1,449 features, 45 labels) measured the same 2.3 us (2026-12-01, the 2-core machine shared with other
jobs). The ensembles' figures are at 10 members, kNN's at a window of 200: they scale with ``n_models`` and
``window_size``. The iSOUP tree's cost varies most with the stream: 2.3 us on yeast, 3.7 us on emotions, 42-56 us on
the synthetic stream of :mod:`olb.checks.costs` (where it grows more leaves); its figure is set between."""

TABLE_LABEL_FEATURE_BYTES = {
    "ht": 8192,
    "efdt": 30_000,
    "hat": 8192,
    "arf": 70_000,
    "sgt": 150_000,
    "knn": 8192,
    "nb": 8192,
    "amr": 24_000,
    "abalr": 1000,
    "abolr": 1000,
    "isoupt": 14_000,
}
"""Resident bytes per label and feature of each learner's model (ensembles: at 10 members; kNN: at a window of 200),
measured on the synthetic stream of :mod:`olb.checks.costs` (400 rows, 72 features, 6 labels, the learners'
``test_params``; Python's objects alive at the end, 2026-12-02: HT 3.1 MB, EFDT 12.9, ARF 11.2, AMRules 10.6, iSOUP
tree 6.0, SGT 81): a Hoeffding tree's leaf keeps a Gaussian splitter per feature (~5 KB), EFDT's leaves their split
candidates, ARF's trees and SGT's quantizers more, a linear model a weight."""

MONDRIAN_NODE_BYTES = 1100
"""Resident bytes per label, feature, tree and square root of the rows learned of a Mondrian forest (AMF, MT): each
node keeps the range of every feature, and the trees grow with the stream (measured 1,100-1,150 B on the synthetic
stream with 1 and 2 trees; the square root is an assumption: a Mondrian tree splits when a row falls outside its
node's box, ever more rarely)."""


@dataclass(frozen=True)
class TableColumnCost(CostModel):
    """One column of the MLHAT table (:mod:`olb.learners.river_mlhat`): a cost per label and feature."""

    code: str

    def _scale(self, params: Params) -> float:
        """The ensembles' and the window's size against the ones the costs were measured at."""
        return params.get("n_models", 10) / 10 * params.get("window_size", 200) / 200

    def _features(self, params: Params, shape: StreamShape) -> int:
        """Features that reach river per row: every one (``dense_rows``), else the nonzeros, capped at 2000 as
        for the other river learners (the registry does not record a sparse row's nonzeros)."""
        return shape.n_features if params.get("dense_rows", True) else min(shape.n_features, 2000)

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol plus the learner's cost per label and feature (``TABLE_LABEL_FEATURE_COST_S``)."""
        per_label_feature = TABLE_LABEL_FEATURE_COST_S[self.code] * self._scale(params)
        return ROUND_OVERHEAD_S + per_label_feature * shape.n_labels * self._features(params, shape)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """``TABLE_LABEL_FEATURE_BYTES`` per label and feature (scaled as the CPU); a Mondrian forest's
        ``MONDRIAN_NODE_BYTES`` per label, feature, tree and square root of the training rows."""
        label_features = shape.n_labels * self._features(params, shape)
        if self.code in ("amf", "mt"):
            trees = params.get("n_models", 1)
            return MONDRIAN_NODE_BYTES * label_features * trees * math.sqrt(shape.n_train or 1) / 2**20
        return TABLE_LABEL_FEATURE_BYTES[self.code] * self._scale(params) * label_features / 2**20
