"""Checks of a learner: its contract (:mod:`olb.checks.contract`, ``check_learner``) and its cost model against what
it measures (:mod:`olb.checks.costs`, ``check_cost_model``), both on seeded synthetic streams (no data folder).

``python -m olb.checks [ALGORITHM ...]`` runs both on registered learners (default: all) and prints the cost table.
"""

from olb.checks.contract import (
    CHECKS,
    check_learner,
    dense_multilabel_stream,
    multiclass_stream,
    sparse_multilabel_stream,
    stream_for,
    yield_checks,
)
from olb.checks.costs import CostMeasurement, check_cost_model, cost_table, measure_costs

__all__ = [
    "CHECKS",
    "CostMeasurement",
    "check_cost_model",
    "check_learner",
    "cost_table",
    "dense_multilabel_stream",
    "measure_costs",
    "multiclass_stream",
    "sparse_multilabel_stream",
    "stream_for",
    "yield_checks",
]
