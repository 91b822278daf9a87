"""Experiment grids: algorithm x data set x hyperparameters x seeds, in parallel on Ray, tracked in MLflow.

Command line: ``python -m olb.grid [+experiment=NAME] [key=value ...]`` (see docs/grid.md).
"""

import importlib.util

_missing = [
    m for m in ("hydra", "ray", "mlflow", "pandas", "matplotlib", "tqdm") if importlib.util.find_spec(m) is None
]
if _missing:  # a core install (pip install olb): name the extra before any import fails deep inside
    raise ModuleNotFoundError(
        f'olb.grid needs {", ".join(_missing)}, not installed: pip install "olb[grid]"', name=_missing[0]
    )

from olb.grid.app import run_grid  # noqa: E402
from olb.grid.cli import compose  # noqa: E402
from olb.grid.messages import GridOutcome  # noqa: E402
from olb.grid.expand import plan_grid  # noqa: E402
from olb.grid.plan import Cell, CellKey, GridConfigError, Plan, cell_id  # noqa: E402

__all__ = ["Cell", "CellKey", "GridConfigError", "GridOutcome", "Plan", "cell_id", "compose", "plan_grid", "run_grid"]
