"""Experiment grids: algorithm x data set x hyperparameters x seeds, in parallel on Ray, tracked in MLflow.

Command line: ``python -m olb.grid [+experiment=NAME] [key=value ...]`` (see docs/grid.md).
"""

from olb.grid.app import GridOutcome, compose, run_grid
from olb.grid.plan import Cell, GridConfigError, Plan, cell_id, plan_grid

__all__ = ["Cell", "GridConfigError", "GridOutcome", "Plan", "cell_id", "compose", "plan_grid", "run_grid"]
