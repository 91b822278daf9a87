"""The cost models of MOA's learners (:mod:`olb.learners.moa`), measured on the synthetic streams of
:mod:`olb.checks.costs` and on the benchmarks' data sets (2026-12-02, the 2-core machine shared with other jobs, at
load 17-20)."""

from __future__ import annotations

from dataclasses import dataclass

from olb.learners.base import StreamShape
from olb.learners.costs import CostModel, Params, round_overhead_s

JVM_FOOTPRINT_MB = 200.0
"""Resident MB a process gains from its JVM, apart from MOA's models: 50 MB when it starts with MOA's jar, 100-150 MB
more once MOA's classes are loaded and compiled by the JIT and the young generation is touched (measured over a
serial run of the six learners: 220 MB more than the process before its JVM)."""

CROSSING_S = 5e-5
"""CPU seconds of one round's crossings into Java and back (the instance built, a prediction, an update)."""

UNIT_COST_S = {
    "moa_br_ht": 1e-6,
    "moa_isoupt": 1e-6,
    "moa_amr": 1.5e-6,
    "moa_ht": 3e-7,
    "moa_ozaboost": 3e-7,
    "moa_ozabag": 3e-7,
}
"""CPU seconds of one round per feature and label (multi-label) or per feature and tree (multiclass): MOA's binary
relevance copies each row once per label, the iSOUP tree and AMRules update one statistic per feature and label.
On the leaderboard's data (emotions, scene, yeast, birds: 432-4,940 features x labels; results/moa_leaderboard) a
training row took 0.3-2.1 ms, 0.2-1.2 us per feature and label; on the synthetic stream of emotions' shape 1.3-4.9
ms (a short stream: the JIT still compiling). OzaBoost and OzaBag of 100 trees: 230-750 us a row on balance, cars,
mushroom and nursery (4-22 features; results/moa_multiclass_table1), a single tree 25-60 us."""

TREE_COST_S = 1e-6
"""CPU seconds of one round per multiclass tree apart from its features (its weight drawn, its vote added)."""

UNIT_BYTES = {
    "moa_br_ht": 18_000,
    "moa_isoupt": 14_000,
    "moa_amr": 17_000,
    "moa_ht": 30_000,
    "moa_ozaboost": 30_000,
    "moa_ozabag": 30_000,
}
"""Resident bytes the JVM gains per unit (feature and label, or feature and tree) of a model, the young generation
apart (:data:`olb.learners.moa_jvm.JVM_YOUNG_MB`, in the JVM's footprint): measured on the synthetic stream (72
features and 6 labels: 3.5-12.4 MB, varying with when the collector runs; 4 features and 3 classes: 0.3 MB a tree, 1.4-1.9 MB for 3)."""

TREE_BYTES = 100_000
"""Resident bytes of a multiclass tree apart from its features' statistics (its nodes, its ensemble's records)."""


@dataclass(frozen=True)
class MOACost(CostModel):
    """A MOA learner: a round's crossings into Java, and its work per feature and label (or tree)."""

    name: str
    multi_label: bool
    heap_mb: float  # the JVM's maximum heap: no model grows beyond it

    def _units(self, params: Params, shape: StreamShape) -> int:
        """Features times labels (multi-label) or times trees (multiclass)."""
        per_feature = shape.n_labels if self.multi_label else params.get("ensemble_size", 1)
        return per_feature * shape.n_features

    def _trees(self, params: Params) -> int:
        """The multiclass learner's trees (none counted apart for a multi-label one)."""
        return 0 if self.multi_label else params.get("ensemble_size", 1)

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        units = UNIT_COST_S[self.name] * self._units(params, shape)
        return round_overhead_s(not self.multi_label) + CROSSING_S + TREE_COST_S * self._trees(params) + units

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """``UNIT_BYTES`` per unit, and ``TREE_BYTES`` per multiclass tree, at most the JVM's heap (``heap_mb``)."""
        bytes_ = UNIT_BYTES[self.name] * self._units(params, shape) + TREE_BYTES * self._trees(params)
        return min(self.heap_mb, bytes_ / 2**20)

    def process_memory_mb(self) -> float:
        """The JVM's footprint, once per process (``JVM_FOOTPRINT_MB``)."""
        return JVM_FOOTPRINT_MB
