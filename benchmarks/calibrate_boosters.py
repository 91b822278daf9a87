"""Fit the boosters' planned CPU (``olb.learners.boosting.costs.ForestCost``) to measured cells.

    python benchmarks/calibrate_boosters.py                      # run the calibration grid, then fit
    python benchmarks/calibrate_boosters.py --cells CELLS_CSV    # fit the cells of an earlier run
    python benchmarks/calibrate_boosters.py --cells CELLS_CSV --holdout scene,birds,medical,corel5k,cars

Without ``--cells``, runs ``python -m olb.grid +experiment=calibrate_boosters`` (conf/experiment/calibrate_boosters.yaml:
every booster at 10, 40 and 100 trees, the leaderboard's and the papers' settings; ~15 CPU minutes on a 2-core
Xeon) under ``nice -n 10``, without tracking, into ``--out``. Then fits, by least squares on log(predicted /
measured) CPU seconds of each cell (the planned seconds are ``olb.grid.planning.cost.planned_stream``'s, so exactly what the
grid plans, with ``COST_MARGIN`` = 1 while fitting):

1. the forest's coefficients (``FOREST_COST``) on Ada.OLMR's cells, with and without a threshold;
2. then each other booster's ``forest_learning``, and where its cells vary them, its fall with gamma
   (``gamma_scale``, ``gamma_power``: three gammas or more) and with ``weight_scale`` (``weight_power``).

Prints the fitted constants (to copy into ``olb/learners/boosting/costs.py``'s ``FOREST_COST`` and each booster's ``@register(cost=...)``) and, per
learner, the ratio predicted/measured (with ``COST_MARGIN``) over the cells it was fitted on and, with
``--holdout``, over the held-out data sets' cells (fitted without them).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from olb.grid.planning.cost import planned_stream
from olb.learners.boosting import costs as forest_costs
from olb.learners.registry import get_algorithm, get_cost_model, register

SHARED = "adaolmr"  # the family the forest's coefficients are fitted on


def family(algorithm: str) -> str:
    return algorithm.split("+")[0]


def booster_class(name: str):
    cls = get_algorithm(name)
    return getattr(cls, "scorer_class", cls)


def refitted(model, attrs: dict):
    """``model`` (a booster's ``ForestCost``) with ``attrs`` replaced (a thresholded booster's model follows its
    scorer's, looked up by name)."""
    return dataclasses.replace(model, **attrs)


@contextlib.contextmanager
def constants(forest: dict | None = None, margin: float | None = None, **learning):
    """The cost constants set to these values while inside: ``FOREST_COST`` entries, ``COST_MARGIN``, and per
    family (``onlinebmr={"forest_learning": 0.5}``) its registered cost model (a thresholded booster's follows it)."""
    saved_forest, saved_margin = dict(forest_costs.FOREST_COST), forest_costs.COST_MARGIN
    saved_models = {name: get_cost_model(name) for name in learning}
    forest_costs.FOREST_COST.update(forest or {})
    forest_costs.COST_MARGIN = forest_costs.COST_MARGIN if margin is None else margin
    for name, attrs in learning.items():
        register(get_algorithm(name), refitted(saved_models[name], attrs))
    try:
        yield
    finally:
        forest_costs.FOREST_COST.update(saved_forest)
        forest_costs.COST_MARGIN = saved_margin
        for name, model in saved_models.items():
            register(get_algorithm(name), model)


def params_of(row: pd.Series) -> dict:
    cls = get_algorithm(row["algorithm"])
    return cls.validate({k: row[k] for k in cls.params if k in row.index and pd.notna(row[k])})


def predicted_s(cells: pd.DataFrame) -> np.ndarray:
    """The CPU seconds the grid plans for each cell, with the constants as they are now."""
    out = []
    for row in cells.itertuples(index=False):
        cost, _, rows = planned_stream(row.algorithm, row.params, row.dataset, int(row.loops), row.protocol)
        out.append(cost * rows)
    return np.array(out)


def log_ratios(cells: pd.DataFrame) -> np.ndarray:
    return np.log(predicted_s(cells) / cells["cpu_s"].to_numpy())


def fit_forest(cells: pd.DataFrame) -> dict:
    """``FOREST_COST`` fitted on the shared family's cells."""

    def forest(theta):
        return {
            "predict_s": float(np.exp(theta[0])),
            "learn_s": float(np.exp(theta[1])),
            "fed_exponent": float(theta[2]),
            "label_exponent": float(theta[3]),
        }

    def residuals(theta):
        with constants(forest(theta), margin=1.0):
            return log_ratios(cells)

    start = np.array([np.log(5e-8), np.log(5e-7), 1.0, 0.3])
    return forest(least_squares(residuals, start).x)


def distinct(cells: pd.DataFrame, key: str) -> int:
    """How many values of the hyperparameter ``key`` the cells have."""
    return len({p[key] for p in cells["params"] if key in p})


def fit_learning(cells: pd.DataFrame, name: str, forest: dict) -> dict:
    """The family ``name``'s ``forest_learning``, the forest's fixed; with its fall with gamma where its cells
    have three gammas or more, and with weight_scale where they have two or more."""
    with_gamma, with_weights = distinct(cells, "gamma") >= 3, distinct(cells, "weight_scale") >= 2

    def attrs(theta):
        fitted = {"forest_learning": float(np.exp(theta[0])), "trees_power": float(theta[1])}
        if with_gamma:
            fitted.update(gamma_scale=float(np.exp(theta[2])), gamma_power=float(theta[3]))
        if with_weights:
            fitted.update(weight_power=float(theta[-1]))
        return fitted

    def residuals(theta):
        with constants(forest, margin=1.0, **{name: attrs(theta)}):
            return log_ratios(cells)

    start = [0.0, 1.0] + ([np.log(0.05), 1.5] if with_gamma else []) + ([0.5] if with_weights else [])
    return attrs(least_squares(residuals, np.array(start)).x)


def fit(cells: pd.DataFrame) -> tuple[dict, dict]:
    forest = fit_forest(cells[cells["family"] == SHARED])
    learning = {
        name: fit_learning(group, name, forest)
        for name, group in cells[cells["family"] != SHARED].groupby("family")
        if name != SHARED
    }
    return forest, learning


def ratio_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per learner: cells, data sets, and predicted/measured CPU (median, min, max, and of their sums)."""
    cells = cells.assign(predicted_s=predicted_s(cells))
    cells["ratio"] = cells["predicted_s"] / cells["cpu_s"]
    table = cells.groupby("algorithm").agg(
        cells=("ratio", "size"),
        datasets=("dataset", "nunique"),
        ratio_median=("ratio", "median"),
        ratio_p10=("ratio", lambda r: r.quantile(0.1)),
        ratio_min=("ratio", "min"),
        ratio_max=("ratio", "max"),
        predicted_s=("predicted_s", "sum"),
        measured_s=("cpu_s", "sum"),
    )
    table["ratio_sum"] = table["predicted_s"] / table["measured_s"]
    return table


def load_cells(paths: list[str]) -> pd.DataFrame:
    cells = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    cells = cells[(cells["status"] == "FINISHED") & (cells["cpu_s"] > 0)].copy()
    cells["params"] = [params_of(row) for _, row in cells.iterrows()]
    cells["family"] = cells["algorithm"].map(family)
    return cells


def run_grid(out: Path, overrides: list[str]) -> Path:
    command = ["nice", "-n", "10", sys.executable, "-m", "olb.grid", "+experiment=calibrate_boosters", "tracking=off"]
    command += [f"hydra.run.dir={out}", *overrides]
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True, env=os.environ)
    return out / "cells.csv"


def show(title: str, cells: pd.DataFrame, forest: dict, learning: dict) -> None:
    with constants(forest, **learning):
        print(f"\n{title}")
        print(ratio_table(cells).to_string(float_format=lambda v: f"{v:.3g}"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", help="cells.csv of earlier calibration runs (default: run the grid)")
    parser.add_argument("--out", default="outputs/calibrate_boosters", help="the grid's output folder")
    parser.add_argument("--holdout", default="", help="data sets left out of the fit and checked (comma-separated)")
    parser.add_argument("overrides", nargs="*", help="extra overrides of the grid (e.g. backend=serial)")
    args = parser.parse_args(argv)
    paths = args.cells or [str(run_grid(Path(args.out), args.overrides))]
    pd.set_option("display.width", 160)
    cells = load_cells(paths)
    held = set(filter(None, args.holdout.split(",")))
    train, test = cells[~cells["dataset"].isin(held)], cells[cells["dataset"].isin(held)]
    print(f"{len(cells)} finished cells; fitted on {len(train)}, held out {len(test)} ({', '.join(sorted(held))})")
    print("\nnow (the constants in the code)")
    print(ratio_table(cells).to_string(float_format=lambda v: f"{v:.3g}"))
    forest, learning = fit(train)
    print(f"\nFOREST_COST = {forest!r}  # COST_MARGIN = {forest_costs.COST_MARGIN}")
    for name, attrs in learning.items():
        print(f"{booster_class(name).__name__}: " + ", ".join(f"{k} = {v:.3g}" for k, v in attrs.items()))
    show("fitted, on the cells fitted on", train, forest, learning)
    if len(test):
        show("fitted, on the held-out cells", test, forest, learning)


if __name__ == "__main__":
    main()
