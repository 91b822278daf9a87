"""How well the grid's planning cost model predicts what finished grids measured: the CPU seconds (each learner's
cost model's ``cost_per_example_s``, summed by ``planned_work``) and each cell's peak memory (``planned_memory_mb``:
the process floor, the data and the learner's cost model's ``model_memory_mb``), which Ray reserves per cell.

    python benchmarks/bench_cost_model.py CELLS_CSV [CELLS_CSV ...]
    python benchmarks/bench_cost_model.py CELLS_CSV --cv sqlite:///mlflow.db --grid +experiment=leaderboard ...

Reads the cells.csv of one or more grids (finished cells only) and prints, per learner, the predicted and the
measured CPU microseconds per example of the stream (medians over its cells) and the ratio predicted/measured
(median, min, max over its cells), then the whole grid's predicted and measured CPU seconds. A cell's prediction
is exactly the one ``backend=auto`` uses (``olb.grid.planning.cost.planned_stream``): its resolved hyperparameters from
the csv's columns, the data set's registered shape, and ``loops`` passes over the training rows plus the test rows
(a frozen model's test rows at the learner's ``predict_cost_s``).
Next to it, per learner, the predicted and the measured peak memory in MB (whole process, ``peak_rss_mb``:
medians over its cells) and their ratio (median, min, max), then how many cells peaked above their prediction
(those a node packed by the predictions could run out of memory with).

With ``--cv`` (the tracking store's URI, or a JSON-lines store of earlier versions) and ``--grid`` (the overrides
of the grid that wrote it), the same comparison for the cross-validation tasks: the grid is planned again (no
work run), each candidate's task id recomputed, and its planned CPU (every fold streams the training split once)
set against the recorded ``cpu_s``.

What a grid plans before running anything (its planned CPU per data set and algorithm, its largest cells by
predicted peak memory) is the grid's dry run: ``python -m olb.grid +experiment=leaderboard dry_run=true``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from olb.grid.planning.cost import planned_memory_mb, planned_stream
from olb.learners.registry import get_algorithm


def resolved_params(row: pd.Series) -> dict:
    """The cell's hyperparameters as its learner resolves them: the csv's non-empty columns it declares."""
    cls = get_algorithm(row["algorithm"])
    return cls.validate({k: row[k] for k in cls.params if k in row.index and pd.notna(row[k])})


def predicted_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """Finished cells with their planned cost per example, rows, planned seconds and measured cost per example
    (cells whose hyperparameters today's learners reject, e.g. of an older version, are left out and counted)."""
    done = cells[(cells["status"] == "FINISHED") & (cells["cpu_s"] > 0)].copy()
    valid = []
    for _, row in done.iterrows():
        try:
            resolved_params(row)
            valid.append(True)
        except ValueError:
            valid.append(False)
    if not all(valid):
        print(f"left out: {valid.count(False)} finished cell(s) whose hyperparameters no longer validate")
    done = done[valid]
    planned = [
        planned_stream(r["algorithm"], resolved_params(r), r["dataset"], int(r["loops"]), r.get("protocol"))
        for _, r in done.iterrows()
    ]
    done["predicted_s_per_example"] = [cost for cost, _, _ in planned]
    done["rows"] = [rows for _, _, rows in planned]
    done["predicted_s"] = done["predicted_s_per_example"] * done["rows"]
    done["measured_s_per_example"] = done["cpu_s"] / done["rows"]
    done["ratio"] = done["predicted_s_per_example"] / done["measured_s_per_example"]
    done["predicted_mb"] = [
        planned_memory_mb(r["algorithm"], resolved_params(r), r["dataset"]) for _, r in done.iterrows()
    ]
    done["memory_ratio"] = done["predicted_mb"] / done["peak_rss_mb"]
    return done


def per_learner(done: pd.DataFrame) -> pd.DataFrame:
    table = done.groupby("algorithm").agg(
        cells=("ratio", "size"),
        datasets=("dataset", "nunique"),
        predicted_us=("predicted_s_per_example", "median"),
        measured_us=("measured_s_per_example", "median"),
        ratio_median=("ratio", "median"),
        ratio_min=("ratio", "min"),
        ratio_max=("ratio", "max"),
        predicted_s=("predicted_s", "sum"),
        measured_s=("cpu_s", "sum"),
        predicted_mb=("predicted_mb", "median"),
        measured_mb=("peak_rss_mb", "median"),
        mb_ratio_median=("memory_ratio", "median"),
        mb_ratio_min=("memory_ratio", "min"),
        mb_ratio_max=("memory_ratio", "max"),
    )
    table[["predicted_us", "measured_us"]] *= 1e6
    return table


def measured_cv(store: str) -> dict[str, float]:
    """Task id -> CPU seconds of each finished cross-validation task of ``store``: a tracking store's URI (its
    runs tagged ``olb.kind=cv``, every experiment) or a JSON-lines file of earlier versions."""
    if "://" not in store:
        with open(store) as lines:
            results = [json.loads(line) for line in lines]
        return {r["cell_id"]: r["cpu_s"] for r in results if r.get("status") == "FINISHED"}
    from mlflow.tracking import MlflowClient

    client = MlflowClient(store)
    experiments = [e.experiment_id for e in client.search_experiments(max_results=50000)]
    finished = "tags.`olb.kind` = 'cv' and tags.`olb.status` = 'FINISHED' and attributes.status = 'FINISHED'"
    runs = client.search_runs(experiments, finished, max_results=50000)
    return {r.data.tags["olb.cv_task_id"]: r.data.metrics["cpu_s"] for r in runs}


def cv_comparison(store: str, overrides: list[str]) -> pd.DataFrame:
    """Planned against measured CPU of each finished cross-validation task of ``store`` that the grid plans."""
    from olb.grid import compose
    from olb.grid.driver.stages import prepare
    from olb.grid.driver.crossval import _candidates, cv_task, selected_entries

    cfg = compose(overrides)
    plan, data = prepare(cfg)
    selected = selected_entries(plan)
    planned = {}
    for (entry, dataset), cells in _candidates(plan, selected).items():
        if dataset in data.unavailable:
            continue
        select = selected[entry]
        for cell in cells:
            task = cv_task(cell, dataset, data.sources[dataset].fingerprint, select)
            cost, n_train, _ = planned_stream(cell.algorithm, cell.params, dataset)
            planned[task.task_id] = (cell.algorithm, dataset, cost * n_train * select.folds)
    rows = []
    for tid, measured in measured_cv(store).items():
        if tid in planned:
            algorithm, dataset, predicted = planned[tid]
            rows.append(
                {
                    "algorithm": algorithm,
                    "dataset": dataset,
                    "predicted_s": predicted,
                    "measured_s": measured,
                    "ratio": predicted / measured,
                }
            )
    print(f"cross-validation: {len(rows)} finished task(s) of {store} matched to {len(planned)} planned")
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells_csv", nargs="*", help="cells.csv of finished grids")
    parser.add_argument(
        "--cv",
        help="the tracking store (URI) with the grid's cross-validation tasks, or an olb_cv.jsonl of earlier versions",
    )
    parser.add_argument("--grid", nargs="*", default=[], help="the overrides of the grid that wrote --cv")
    args = parser.parse_args(argv)
    if not args.cells_csv:
        parser.error("give cells.csv files (a grid's plan before it runs: python -m olb.grid ... dry_run=true)")
    pd.set_option("display.width", 160)
    done = predicted_cells(pd.concat([pd.read_csv(path) for path in args.cells_csv], ignore_index=True))
    table = per_learner(done)
    print(table.to_string(float_format=lambda v: f"{v:.3g}"))
    print(
        f"\nwhole grid: {len(done)} cells, predicted {done['predicted_s'].sum():.0f} CPU s, measured "
        f"{done['cpu_s'].sum():.0f} CPU s, ratio {done['predicted_s'].sum() / done['cpu_s'].sum():.2f}; "
        f"per-learner median ratios {table['ratio_median'].min():.2f} to {table['ratio_median'].max():.2f}"
    )
    print(
        f"peak memory: predicted/measured {done['memory_ratio'].min():.2f} to {done['memory_ratio'].max():.2f} over "
        f"the cells (median {done['memory_ratio'].median():.2f}); {(done['memory_ratio'] < 1).sum()} cell(s) peaked "
        f"above their prediction; largest cell measured {done['peak_rss_mb'].max():.0f} MB, predicted "
        f"{done.loc[done['peak_rss_mb'].idxmax(), 'predicted_mb']:.0f} MB"
    )
    if args.cv:
        cv = cv_comparison(args.cv, args.grid)
        if len(cv):
            summary = cv.groupby("algorithm").agg(
                tasks=("ratio", "size"),
                ratio_median=("ratio", "median"),
                ratio_min=("ratio", "min"),
                ratio_max=("ratio", "max"),
                predicted_s=("predicted_s", "sum"),
                measured_s=("measured_s", "sum"),
            )
            print(summary.to_string(float_format=lambda v: f"{v:.3g}"))
            print(
                f"\ncross-validation stage: predicted {cv['predicted_s'].sum():.0f} CPU s, measured "
                f"{cv['measured_s'].sum():.0f} CPU s, ratio {cv['predicted_s'].sum() / cv['measured_s'].sum():.2f}"
            )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
