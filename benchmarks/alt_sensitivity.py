"""Paper 002's sensitivity figures (its Figs. 2-3) from the cross-validation of a grid run: a metric against the
step size ``eta``, one line per repeat count, one panel per data set and learner (and per SALT ``delta``).

The data are the fold-by-setting tables the grid's selection stage logs to MLflow (one ``cv_folds.csv`` per
selection run), so the figure costs nothing beyond the grid run itself::

    python -m olb.grid +experiment=alt_table2            # or alt_table2_wide for the wide grids
    python benchmarks/alt_sensitivity.py --tracking-uri sqlite:///mlflow.db --dataset bibtex --out sensitivity.png
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402


def selection_tables(uri: str, experiment: str, dataset: str) -> dict[str, pd.DataFrame]:
    """entry -> its fold-by-setting table on ``dataset``, with one column per hyperparameter of the setting."""
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise SystemExit(f"alt_sensitivity: no MLflow experiment {experiment!r} at {uri}")
    runs = client.search_runs(
        [exp.experiment_id], filter_string=f"tags.`olb.kind` = 'selection' and tags.`olb.dataset` = '{dataset}'"
    )
    tables = {}
    for run in runs:
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(run.info.run_id, "cv_folds.csv", tmp)
            table = pd.read_csv(path)
        settings = table["setting"].map(lambda s: dict(re.findall(r"(\w+)=([^,]+)", s)))
        table = pd.concat([table, pd.DataFrame(list(settings)).astype(float)], axis=1)
        tables.setdefault(run.data.tags["olb.entry"], table)
    return tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="olb/alt_table2")
    parser.add_argument("--dataset", default="bibtex")
    parser.add_argument("--metric", default="f1_unlabelled1")
    parser.add_argument("--out", type=Path, default=Path("alt_sensitivity.png"))
    args = parser.parse_args()
    tables = {
        e: t
        for e, t in selection_tables(args.tracking_uri, args.experiment, args.dataset).items()
        if {"eta", "repeats"} <= set(t.columns)
    }
    if not tables:
        raise SystemExit(f"alt_sensitivity: no cross-validated eta x repeats grid on {args.dataset!r}")
    panels = [
        (entry, delta, t if delta is None else t[t["delta"] == delta])
        for entry, t in sorted(tables.items())
        for delta in (sorted(t["delta"].unique()) if "delta" in t.columns else [None])
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4), squeeze=False, sharey=True)
    for ax, (entry, delta, t) in zip(axes[0], panels):
        means = t.groupby(["repeats", "eta"])[args.metric].mean().unstack(0)
        for repeats in means.columns:
            ax.plot(means.index, means[repeats], marker="o", label=f"repeats {int(repeats)}")
        ax.set_xscale("log")
        ax.set_xticks(means.index, [f"{v:g}" for v in means.index], minor=False)
        ax.minorticks_off()
        ax.legend(fontsize=8)
        ax.set_xlabel("step size eta")
        ax.set_title(entry + ("" if delta is None else f", delta {delta}"), fontsize=9)
    axes[0][0].set_ylabel(f"{args.metric}, mean of 10 folds")
    fig.suptitle(f"{args.dataset}: cross-validated {args.metric} against the step size", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=130)
    print(f"alt_sensitivity: {args.out}")
    for entry, t in sorted(tables.items()):
        keys = [k for k in ("delta", "repeats", "eta") if k in t.columns]
        print(
            f"\n{entry} ({args.metric}, mean over folds)\n" + t.groupby(keys)[args.metric].mean().round(4).to_string()
        )


if __name__ == "__main__":
    main()
