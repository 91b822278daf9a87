"""The cost model of the online extreme learning machines (:mod:`olb.learners.elm`)."""

from __future__ import annotations

from olb.learners.base import StreamShape
from olb.learners.costs import MB_PER_FLOAT, ROUND_OVERHEAD_S, CostModel, Params


class ELMCost(CostModel):
    """A random hidden layer of h = ``num_hidden`` units and recursive least squares on its output weights."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol, 0.72 ns x h^2 (the RLS step on the h x h matrix M) and 0.41 ns x h x (d + q)
        (the hidden layer and the output weights).

        Fitted on OSML-ELM and ELM-OMLL* (h = 200 and 500) over ten multi-label data sets.
        """
        h = params["num_hidden"]
        return ROUND_OVERHEAD_S + 7.2e-10 * h * h + 4.1e-10 * h * (shape.n_features + shape.n_labels)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """The input weights (d x h), M and its update's temporaries (3 h x h), beta (h x q), and the initial
        block's hidden layer (n0 x h, n0 = ``init_fraction`` of the training rows) with its dense rows (n0 x d)."""
        h = params["num_hidden"]
        n0 = params["init_fraction"] * (shape.n_train or 0)
        return MB_PER_FLOAT * (h * (shape.n_features + shape.n_labels) + 3 * h * h + n0 * (h + shape.n_features))
