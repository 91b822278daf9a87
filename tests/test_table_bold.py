"""Paper 002's bold rule in the grid's tables (olb/grid/reporting/table.py): the best mean per data set and metric,
and every mean not significantly different from it by a paired t-test over the seeds."""

import math

from scipy.stats import ttest_rel

from olb.grid.reporting.table import _mark_best


def _row(algorithm, values, metric="f1"):
    return {
        "dataset": "d",
        "metric": metric,
        "algorithm": algorithm,
        "n_seeds": len(values),
        "mean": sum(values) / len(values),
        "per_seed": dict(enumerate(values)),
    }


def test_best_and_not_significantly_worse_are_bold():
    top = _row("top", [0.70, 0.72, 0.71, 0.73, 0.69])
    close = _row("close", [0.69, 0.73, 0.70, 0.72, 0.70])  # paired differences straddle 0
    worse = _row("worse", [0.60, 0.62, 0.61, 0.63, 0.59])  # 0.10 below on every seed
    rows = [close, top, worse]
    _mark_best(rows, {"f1": False})
    assert [r["best"] for r in rows] == [True, True, False]
    assert ttest_rel([0.69, 0.73, 0.70, 0.72, 0.70], [0.70, 0.72, 0.71, 0.73, 0.69]).pvalue >= 0.05


def test_direction_follows_the_metric():
    low, high = _row("low", [0.1, 0.11, 0.12], "hamming_loss"), _row("high", [0.3, 0.31, 0.33], "hamming_loss")
    _mark_best([low, high], {"hamming_loss": True})
    assert low["best"] and not high["best"]


def test_rows_without_results_are_never_bold():
    empty = {"dataset": "d", "metric": "f1", "algorithm": "x", "n_seeds": 0, "mean": math.nan, "per_seed": {}}
    top = _row("top", [0.5, 0.6])
    _mark_best([empty, top], {"f1": False})
    assert top["best"] and not empty["best"]
