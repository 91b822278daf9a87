"""What a learner costs, for planning only: the interface of every family's cost model and its shared constants.

A cost model says, from a learner's resolved hyperparameters and the :class:`~olb.learners.base.StreamShape` the
data registry declares, how many CPU seconds one example of the stream takes and how much memory the learner
holds at its peak. The grid plans with it (its ``backend=auto``, its start-up estimate, the memory each cell
asks Ray for) and never runs a learner to find out. Each family keeps its models beside its learners, apart from
the learner classes, in a ``costs`` module (``olb/learners/boosting/costs.py``, ``olb/learners/elm_costs.py``,
...) whose ``COST_MODELS`` maps each learner class to its model; :mod:`olb.learners.registry` collects them by the
learners' names, and :mod:`olb.checks.costs` checks each against what its learner measures on a synthetic stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from olb.learners.base import StreamShape

Params = Mapping[str, Any]
"""A learner's resolved hyperparameters (``OnlineLearner.validate``'s output)."""

ROUND_OVERHEAD_S = 8e-5
"""CPU seconds of one example of the stream spent outside the learner (copying and scaling the row, the metric
updates of scored rows): the intercept of every family's fit on a finished multi-label grid (docs/grid.md)."""

MULTICLASS_ROUND_OVERHEAD_S = 2.5e-5
"""The same for one example of a multiclass stream: the row copied and its class scored, no label-set metric.
best_vfdt's whole round, its tree included, measured 6.2-6.4 us on the synthetic stream of balance's shape of
:mod:`olb.checks.costs`, and the same machine, busy, measured up to 5x more for a learner (Oza: 32 and 172 us);
the figure is set between (2026-12-02, the 2-core AMD EPYC machine)."""


def round_overhead_s(multiclass: bool) -> float:
    """The protocol's CPU seconds per example outside the learner: ``MULTICLASS_ROUND_OVERHEAD_S`` on a multiclass
    stream, ``ROUND_OVERHEAD_S`` on a multi-label one."""
    return MULTICLASS_ROUND_OVERHEAD_S if multiclass else ROUND_OVERHEAD_S


MB_PER_FLOAT = 8 / 2**20
"""Megabytes of one float64 (the memory formulas count floats)."""


class CostModel:
    """A learner's planning model. This base is the model of a learner registered without one: ~2 us per weak
    learner (``num_learners``) or per label beyond the protocol's share, and a few d x q float64 matrices (a linear
    learner's weights and its working copies). Each family subclasses it with its own fitted formulas.

    >>> from olb.learners.base import StreamShape
    >>> CostModel().cost_per_example_s({}, StreamShape(n_features=72, n_labels=6)) < 1e-4
    True
    >>> CostModel().model_memory_mb({}, StreamShape(n_features=72, n_labels=6)) < 1
    True
    """

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """A rough CPU cost in seconds of one example of the stream (a round, or a test row): ``ROUND_OVERHEAD_S``
        (the protocol's share) plus what the learner does with the row."""
        return ROUND_OVERHEAD_S + 2e-6 * max(1, int(params.get("num_learners", shape.n_labels)))

    def predict_cost_s(self, params: Params, shape: StreamShape) -> float:
        """A rough CPU cost in seconds of a row the learner only predicts (a frozen model's test row). By default a
        learned row's; families whose learning is most of their work (the boosters' trees) override it."""
        return self.cost_per_example_s(params, shape)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """A rough peak in MB of what the learner holds on a stream of ``shape`` (its model at the stream's end,
        with the copies it makes while growing); the grid adds the process floor and the data."""
        return 4 * MB_PER_FLOAT * (shape.n_features + 1) * shape.n_labels

    def process_memory_mb(self) -> float:
        """Resident MB a process gains once, the first time it runs the learner, beyond the grid's process floor (a
        runtime the learner starts: MOA's JVM); 0 by default."""
        return 0.0

    def stream_cost_s(
        self, params: Params, shape: StreamShape, n_test: int, loops: int = 1, frozen: bool = False
    ) -> float:
        """Mean CPU seconds per example of a stream of ``loops`` passes over the ``shape.n_train`` training rows then
        ``n_test`` test rows, each at :meth:`cost_per_example_s`, but a test row of a frozen model (predicted, not
        learned) at :meth:`predict_cost_s`."""
        n_train = shape.n_train or 0
        learned = self.cost_per_example_s(params, shape)
        tested = self.predict_cost_s(params, shape) if frozen else learned
        return (loops * n_train * learned + n_test * tested) / (loops * n_train + n_test)


DEFAULT_COST_MODEL = CostModel()
"""The model of a learner registered without one (:func:`olb.learners.registry.register`)."""
