"""The cost models of the compiled binary-relevance learners (:mod:`olb.learners.stream_br`)."""

from __future__ import annotations

from olb.learners.base import OnlineLearner, StreamShape
from olb.learners.costs import MB_PER_FLOAT, ROUND_OVERHEAD_S, CostModel, Params
from olb.learners.stream_br.knn import BRKNN


class WindowSearchCost(CostModel):
    """A search of a sliding window of rows, shared by every label."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol, ~50 us of numpy calls, 1 ns per window-row feature (the distances) and 0.5 us
        per label (the votes); measured on emotions and yeast (72 and 103 features, window 200)."""
        return ROUND_OVERHEAD_S + 5e-5 + 1e-9 * params["window_size"] * shape.n_features + 5e-7 * shape.n_labels

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """The window's rows, dense, with their label vectors, and a copy of it while searching."""
        return 2 * MB_PER_FLOAT * params["window_size"] * (shape.n_features + shape.n_labels)


COST_MODELS: dict[type[OnlineLearner], CostModel] = {BRKNN: WindowSearchCost()}
