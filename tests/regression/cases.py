"""Reduced cells of every booster experiment (papers 000, 001, 004) whose exact results were recorded before the
learners moved and before the compiled core: ``test_regression.py`` reproduces them.

Record (only when a change is *meant* to alter results, and say why in the commit)::

    python tests/regression/cases.py --record
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REFERENCE = Path(__file__).with_name("reference.json")

# (name, CellSpec keyword arguments): small forests, one seed each, every registered booster and baseline.
CASES = [
    (
        "adaolmr_emotions",
        dict(algorithm="adaolmr", dataset="emotions", seed=1, params={"num_learners": 8, "authors_weights": True}),
    ),
    ("adaolmr_emotions_paper", dict(algorithm="adaolmr", dataset="emotions", seed=2, params={"num_learners": 8})),
    (
        "onlinebmr_emotions",
        dict(
            algorithm="onlinebmr",
            dataset="emotions",
            seed=1,
            params={"num_learners": 8, "gamma": 0.1, "authors_weights": True},
        ),
    ),
    (
        "onlinebmr_yeast",
        dict(algorithm="onlinebmr", dataset="yeast", seed=3, params={"num_learners": 4, "gamma": 0.01, "margin": 0.0}),
    ),
    (
        "topopt_emotions",
        dict(
            algorithm="topopt", dataset="emotions", seed=1, params={"num_learners": 6, "gamma": 0.3, "k": 3, "rho": 0.1}
        ),
    ),
    (
        "topopt_emotions_swap",
        dict(
            algorithm="topopt",
            dataset="emotions",
            seed=4,
            params={"num_learners": 6, "gamma": 0.2, "k": 3, "rho": 0.1, "exploration": "single_swap"},
        ),
    ),
    (
        "topada_emotions",
        dict(algorithm="topada", dataset="emotions", seed=1, params={"num_learners": 6, "k": 2, "rho": 0.1}),
    ),
    ("adaolm_balance", dict(algorithm="adaolm", dataset="balance", seed=1, params={"num_learners": 6})),
    (
        "onlinembbm_balance",
        dict(algorithm="onlinembbm", dataset="balance", seed=1, params={"num_learners": 6, "gamma": 0.1}),
    ),
    ("best_vfdt_cars", dict(algorithm="best_vfdt", dataset="cars", seed=1, params={"num_learners": 4})),
    ("oza_balance", dict(algorithm="oza", dataset="balance", seed=2, params={"num_learners": 5})),
]


def compute(case: dict, data_dir=None) -> dict:
    """The cell's metrics and its learning curve every 20 examples (the curve pins the predictions along the way)."""
    from olb.run import CellSpec, run_cell

    stream = run_cell(CellSpec(data_dir=data_dir, curve_every=20, **case)).stream
    return {"metrics": dict(stream.metrics), "curve": [float(v) for v in stream.curve["value"]]}


# Experiments whose cell ids (what resume matches finished MLflow runs by) must never change by accident.
EXPERIMENTS = ("default", "table3", "multiclass_table1", "topk_table1", "topk_table2", "topk_figure1")


def cell_ids(experiment: str) -> list[str]:
    from olb.grid import compose
    from olb.grid.plan import plan_grid

    return sorted(c.cell_id for c in plan_grid(compose([f"+experiment={experiment}"])).unique_cells)


if __name__ == "__main__":
    if "--record" not in sys.argv:
        raise SystemExit(__doc__)
    results = {name: compute(case) for name, case in CASES}
    results["cell_ids"] = {name: cell_ids(name) for name in EXPERIMENTS}
    REFERENCE.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(json.dumps(results, indent=1))
