"""olb's learners beside river's, from a finished leaderboard grid: quality and CPU per example side by side.

    cd <the grid's work dir>
    python benchmarks/river_board.py outputs/leaderboard/<run>/cells.csv [--tracking sqlite:///mlflow.db]

For each data set and learner (the cells the grid ran: the cross-validated setting, medians over seeds) prints
a few quality figures and two CPU figures in microseconds:

- ``train us``: CPU of the training pass per training row (the MLflow metric ``phase/train/cpu_s`` of each cell,
  over ``phase/train/n_examples``): what the learner costs, a prediction and an update per row for learners that
  predict before they learn, an update alone for the others (PA-BR, FALT and river's learners);
- ``stream us``: the cell's whole CPU over all its rows, what the board's runtime plot shows; its test rows
  add the same metric bookkeeping (about 0.2 ms a row for six metrics here) to every learner.

Then, per data set, each river learner's ``train us`` over that of olb's learner it is set against (``PAIRS``).
"""

from __future__ import annotations

import argparse

import pandas as pd

PAIRS = {  # river learner label -> olb learner label it is set against
    "river BR(PA)": "PA-I-BR(l)",
    "river CC(PA)": "PA-I-BR(l)",
    "river BR(LR)": "FALT",
    "river CC(LR)": "FALT",
    "river MCC(LR)": "FALT",
    "river BR(HT)": "FALT",
    "river CC(HT)": "FALT",
}
QUALITY = ("f1_unlabelled1", "example_f1", "hamming_loss", "ranking_loss_unlabelled0")


def training_cpu(cells: pd.DataFrame, tracking_uri: str) -> pd.Series:
    """CPU seconds per training row of each cell, from its MLflow run."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)

    def per_row(run_id: str) -> float:
        metrics = client.get_run(run_id).data.metrics
        phases = [k[len("phase/") : -len("/cpu_s")] for k in metrics if k.startswith("phase/") and k.endswith("/cpu_s")]
        train = [p for p in phases if p.startswith("train") or p == "init"]
        rows = sum(metrics[f"phase/{p}/n_examples"] for p in train)
        return sum(metrics[f"phase/{p}/cpu_s"] for p in train) / rows

    return cells["run_id"].map(per_row)


def side_by_side(cells: pd.DataFrame, examples: dict[str, int], tracking_uri: str) -> pd.DataFrame:
    done = cells[cells["status"] == "FINISHED"].copy()
    done["train us"] = 1e6 * training_cpu(done, tracking_uri)
    done["stream us"] = 1e6 * done["cpu_s"] / done["dataset"].map(examples)
    columns = [m for m in QUALITY if m in done.columns] + ["train us", "stream us"]
    return done.groupby(["dataset", "label"])[columns].median()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells_csv")
    parser.add_argument("--tracking", default="sqlite:///mlflow.db", help="the grid's MLflow tracking URI")
    args = parser.parse_args(argv)
    from olb.data import dataset_spec

    cells = pd.read_csv(args.cells_csv)
    examples = {d: dataset_spec(d).shape.n_examples for d in cells["dataset"].unique()}
    table = side_by_side(cells, examples, args.tracking)
    print("| data set | learner | " + " | ".join(table.columns) + " |")
    print("|---|---|" + "---|" * len(table.columns))
    for (dataset, label), row in table.iterrows():
        figures = " | ".join(f"{v:.0f}" if name.endswith(" us") else f"{v:.3f}" for name, v in row.items())
        print(f"| {dataset} | {label} | {figures} |")
    print()
    print("| data set | river learner | olb learner | river / olb training CPU per row |")
    print("|---|---|---|---|")
    for dataset, part in table.groupby(level="dataset"):
        us = part.droplevel("dataset")["train us"]
        for river, ours in PAIRS.items():
            if river in us and ours in us:
                print(f"| {dataset} | {river} | {ours} | {us[river] / us[ours]:.1f}x |")


if __name__ == "__main__":
    main()
