"""The cost models of the thresholded learners (:mod:`olb.learners.thresholds`): their scorer's, plus the threshold's."""

from __future__ import annotations

from dataclasses import dataclass

from olb.learners.base import StreamShape
from olb.learners.costs import CostModel, Params


@dataclass(frozen=True)
class ThresholdedCost(CostModel):
    """The model of algorithm ``scorer`` (the registry's, looked up when planning; its memory: the threshold's own
    weights are a few vectors of q), each row plus the threshold's CPU (:meth:`threshold_cost_s`) under the
    ``learned_rules``."""

    scorer: str
    learned_rules: tuple[str, ...]

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        return self._scorer().cost_per_example_s(params, shape) + self.threshold_cost_s(params, shape)

    def predict_cost_s(self, params: Params, shape: StreamShape) -> float:
        return self._scorer().predict_cost_s(params, shape) + self.threshold_cost_s(params, shape)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        return self._scorer().model_memory_mb(params, shape)

    def threshold_cost_s(self, params: Params, shape: StreamShape) -> float:
        """~55 us and 0.55 us per label for a learned (ALT) threshold, none for a fixed rule.

        Measured as the difference between Ada.OLMR with and without it (10 trees) on enron and cal500.
        """
        return 5.5e-5 + 5.5e-7 * shape.n_labels if params["threshold_rule"] in self.learned_rules else 0.0

    def _scorer(self) -> CostModel:
        from olb.learners.registry import get_cost_model  # the registry imports the learners, this module among them

        return get_cost_model(self.scorer)
