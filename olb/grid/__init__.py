"""Experiment grids: algorithm x data set x hyperparameters x seeds, in parallel on Ray, tracked in MLflow.

Command line: ``python -m olb.grid [+experiment=NAME] [key=value ...]`` (see docs/grid.md).

The names below are imported when first used, so that a Ray worker, which imports only
:mod:`olb.grid.running.worker` (through :mod:`olb.grid.running.backends.ray_worker`), loads neither Hydra, pandas nor the driver.
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names' types, for a type checker (at run time each is imported when first used)
    from olb.grid.driver.app import run_grid as run_grid
    from olb.grid.cli import compose as compose
    from olb.grid.messages import GridOutcome as GridOutcome
    from olb.grid.planning.plan import Cell as Cell
    from olb.grid.planning.plan import CellKey as CellKey
    from olb.grid.planning.plan import GridConfigError as GridConfigError
    from olb.grid.planning.plan import Plan as Plan
    from olb.grid.planning.plan import cell_id as cell_id
    from olb.grid.planning.expand import plan_grid as plan_grid

_missing = [
    m for m in ("hydra", "ray", "mlflow", "pandas", "matplotlib", "tqdm") if importlib.util.find_spec(m) is None
]
if _missing:  # a core install (pip install olb): name the extra before any import fails deep inside
    raise ModuleNotFoundError(
        f'olb.grid needs {", ".join(_missing)}, not installed: pip install "olb[grid]"', name=_missing[0]
    )

_EXPORTS = {
    "run_grid": "olb.grid.driver.app",
    "compose": "olb.grid.cli",
    "GridOutcome": "olb.grid.messages",
    "plan_grid": "olb.grid.planning.expand",
    "Cell": "olb.grid.planning.plan",
    "CellKey": "olb.grid.planning.plan",
    "GridConfigError": "olb.grid.planning.plan",
    "Plan": "olb.grid.planning.plan",
    "cell_id": "olb.grid.planning.plan",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'olb.grid' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
