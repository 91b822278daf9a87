"""The cost models of the compiled binary-relevance learners (:mod:`olb.learners.stream_br`)."""

from __future__ import annotations

from olb.learners.base import StreamShape
from olb.learners.costs import MB_PER_FLOAT, ROUND_OVERHEAD_S, CostModel, Params


class WindowSearchCost(CostModel):
    """A search of a sliding window of rows, shared by every label."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol, ~50 us of numpy calls, 1 ns per window-row feature (the distances) and 0.5 us
        per label (the votes); measured on emotions and yeast (72 and 103 features, window 200)."""
        return ROUND_OVERHEAD_S + 5e-5 + 1e-9 * params["window_size"] * shape.n_features + 5e-7 * shape.n_labels

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """The window's rows, dense, with their label vectors, and a copy of it while searching."""
        return 2 * MB_PER_FLOAT * params["window_size"] * (shape.n_features + shape.n_labels)


class TreePerLabelCost(CostModel):
    """A Hoeffding tree per label, all in shared arrays: each example reads every present feature's Gaussian
    estimators at each label's leaf (naive Bayes) and updates one class's."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol, ~20 us of calls, and 40 ns per label and feature (features capped at 2000: only a
        sparse row's nonzeros are read; the split attempts every ``grace_period`` examples included), measured on
        emotions and yeast at grace_period 200."""
        return ROUND_OVERHEAD_S + 2e-5 + 4e-8 * shape.n_labels * min(shape.n_features, 2000)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """Two nodes per label to start (the arrays double as trees split; one split per label is planned for),
        each with d feature slots of 14 float64 values (the 2 classes' seven estimator statistics) and two int64."""
        nodes = 4 * shape.n_labels
        return nodes * shape.n_features * (14 + 2) * MB_PER_FLOAT
