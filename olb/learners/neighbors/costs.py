"""The cost models of the nearest-neighbour learners (:mod:`olb.learners.neighbors`)."""

from __future__ import annotations

import math

from olb.learners.base import StreamShape
from olb.learners.costs import MB_PER_FLOAT, ROUND_OVERHEAD_S, CostModel, Params


class NeighborSearchCost(CostModel):
    """A search of a memory of (row, label vector) pairs that grows with the stream."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol, 0.12 us per feature and 0.11 ns per memory-row feature (a search scans the
        memory, rows x d); the memory grows with the stream, taken here as 3/4 of the training rows (its
        average over a training pass and a frozen test pass).

        Fitted on kNN (k = 10) over ten multi-label data sets.
        """
        memory = 0.75 * (shape.n_train or 0)
        return ROUND_OVERHEAD_S + shape.n_features * (1.2e-7 + 1.1e-10 * memory)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """Every training row in the memory, dense, with its squared norm and its label vector."""
        return MB_PER_FLOAT * (shape.n_train or 0) * (shape.n_features + shape.n_labels + 1)


class MetricLearningCost(NeighborSearchCost):
    """OML: kNN's search and memory, plus a metric in label space of ``latent_dim`` columns."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """kNN's search plus ~110 us for the metric step and 6.4 ns x q x the latent dimension (projections
        through P and V).

        Fitted on OML (k = 10, latent_dim ceil(q / 2)) over ten multi-label data sets.
        """
        latent = params["latent_dim"] or math.ceil(shape.n_labels / 2)
        return super().cost_per_example_s(params, shape) + 1.1e-4 + 6.4e-9 * shape.n_labels * latent

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """kNN's memory, plus the least-squares fit of P (a d x d system) and P, V, Q (d x r, q x r, r x r)."""
        latent = params["latent_dim"] or math.ceil(shape.n_labels / 2)
        d, q = shape.n_features, shape.n_labels
        return super().model_memory_mb(params, shape) + MB_PER_FLOAT * (2 * d * d + (d + q + latent) * latent)
