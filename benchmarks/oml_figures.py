"""Figures of paper 003's style from a grid's cells.csv: one panel per metric, learners side by side per data
set with error bars (standard deviation over the training permutations), and OML's metrics against d.

    python benchmarks/oml_figures.py outputs/oml_figures/<run>/cells.csv --out docs/figures/oml
    python benchmarks/oml_figures.py outputs/oml_latent_dim/<run>/cells.csv --out docs/figures/oml

Writes ``metrics.png`` (when the cells hold several learners) and ``latent_dim.png`` (when OML's cells hold
several ``latent_dim`` values) into ``--out``, and prints the table of means and deviations it plotted and,
when the cells hold OML and kNN, whether each of paper 003's three claims holds per data set and metric (claim 1
under each reading of the features the cells hold: min-max scaled, `oml`/`knn`; raw, `oml_raw`/`knn_raw`) and
where OML beats kNN on every metric under each reading.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

METRICS = ["macro_f1", "example_f1", "micro_f1", "hamming_loss"]
LOWER_IS_BETTER = {"hamming_loss"}
COMPARABLE = 0.05  # claim 3's "comparable": within this absolute difference of the metric
READINGS = {"scaled": ("oml", "knn"), "raw": ("oml_raw", "knn_raw")}  # the entries of oml_figures.yaml


def beats(at: pd.DataFrame, a: str, b: str, metric: str) -> bool:
    """Whether learner ``a``'s mean is better than ``b``'s on ``metric`` (rows of ``at``: learners)."""
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    return a in at.index and b in at.index and sign * (at.loc[a, metric] - at.loc[b, metric]) > 0


def claims(cells: pd.DataFrame) -> pd.DataFrame:
    """Paper 003's three claims per data set and metric, on the means over permutations: (1) OML beats kNN, under
    each reading of the features both learners ran with (READINGS: min-max scaled, raw), (2) OML beats OSML-ELM
    and OLANSGD* (our stand-in), (3) kNN is comparable to both (within COMPARABLE); 2 and 3 on scaled features."""
    means = summary(cells, ["dataset", "label"]).xs("mean", axis=1, level=1)
    rows = []
    for dataset in dict.fromkeys(cells["dataset"]):
        if dataset not in means.index.get_level_values(0):
            continue
        at = means.loc[dataset]
        for metric in METRICS:
            others = [o for o in ("osml_elm", "olansgd_star") if o in at.index]
            learners = [n for n in ("oml", "knn", "oml_raw", "knn_raw", *others) if n in at.index]
            row = {"dataset": dataset, "metric": metric, **{n: round(at.loc[n, metric], 4) for n in learners}}
            for reading, (oml, knn) in READINGS.items():
                if oml in at.index and knn in at.index:
                    row[f"1_oml_beats_knn_{reading}"] = "holds" if beats(at, oml, knn, metric) else "fails"
            if "oml" in at.index and others:
                row["2_oml_beats_both"] = (
                    "holds"
                    if all(beats(at, "oml", o, metric) for o in others)
                    else ("partly" if any(beats(at, "oml", o, metric) for o in others) else "fails")
                )
            if "knn" in at.index and others:
                row["3_knn_comparable"] = (
                    "holds"
                    if all(abs(at.loc["knn", metric] - at.loc[o, metric]) <= COMPARABLE for o in others)
                    else "fails"
                )
            rows.append(row)
    return pd.DataFrame(rows)


def where_oml_beats_knn(table: pd.DataFrame) -> dict[str, list[str]]:
    """Per reading, the data sets where OML beats kNN on every metric of ``table`` (from :func:`claims`)."""
    out = {}
    for reading in READINGS:
        column = f"1_oml_beats_knn_{reading}"
        if column in table:
            won = table.groupby("dataset", sort=False)[column].agg(lambda v: bool((v == "holds").all()))
            out[reading] = [d for d, all_metrics in won.items() if all_metrics]
    return out


def summary(cells: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    done = cells[cells["status"] == "FINISHED"]
    return done.groupby(by)[METRICS].agg(["mean", "std"])


def plot_learners(cells: pd.DataFrame, out: Path) -> Path:
    import matplotlib.pyplot as plt

    table = summary(cells, ["dataset", "label"])
    datasets = list(dict.fromkeys(cells["dataset"]))
    learners = list(dict.fromkeys(cells["label"]))
    width = 0.8 / len(learners)
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4.5 * len(METRICS), 3.8))
    for ax, metric in zip(axes, METRICS):
        for j, learner in enumerate(learners):
            rows = [table.loc[(d, learner)] if (d, learner) in table.index else None for d in datasets]
            means = [r[(metric, "mean")] if r is not None else float("nan") for r in rows]
            stds = [r[(metric, "std")] if r is not None else 0.0 for r in rows]
            ax.bar([i + j * width for i in range(len(datasets))], means, width, yerr=stds, capsize=2, label=learner)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(datasets))], datasets, rotation=45, ha="right")
        ax.set_title(metric)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path = out / "metrics.png"
    fig.savefig(path, dpi=120)
    return path


def plot_latent_dim(cells: pd.DataFrame, out: Path) -> Path:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    table = summary(cells, ["dataset", "latent_dim"]).reset_index()
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4.5 * len(METRICS), 3.8))
    for ax, metric in zip(axes, METRICS):
        for dataset, rows in table.groupby("dataset"):
            ax.errorbar(
                rows["latent_dim"],
                rows[(metric, "mean")],
                yerr=rows[(metric, "std")],
                marker="o",
                capsize=2,
                label=dataset,
            )
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("d (latent_dim)")
        ax.set_title(f"OML {metric}")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path = out / "latent_dim.png"
    fig.savefig(path, dpi=120)
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells", type=Path)
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    cells = pd.read_csv(args.cells)
    missing = [c for c in ["label", "dataset", "status", *METRICS] if c not in cells.columns]
    if missing:
        raise SystemExit(f"{args.cells}: no column(s) {missing}; expected a grid's cells.csv with {METRICS}")
    args.out.mkdir(parents=True, exist_ok=True)
    if cells["label"].nunique() > 1:
        print(summary(cells, ["dataset", "label"]).round(4).to_string())
        if any({oml, knn} <= set(cells["label"]) for oml, knn in READINGS.values()):
            table = claims(cells)
            print(table.to_string(index=False))
            for reading, datasets in where_oml_beats_knn(table).items():
                print(f"OML beats kNN on every metric, {reading} features: {', '.join(datasets) or 'nowhere'}")
        print("wrote", plot_learners(cells, args.out))
    oml = cells[cells["algorithm"] == "oml"]
    if "latent_dim" in oml and oml["latent_dim"].nunique() > 1:
        print(summary(oml, ["dataset", "latent_dim"]).round(4).to_string())
        print("wrote", plot_latent_dim(oml, args.out))


if __name__ == "__main__":
    main()
