"""Learners compared across data sets: mean ranks, the Friedman test, the Nemenyi post-hoc test, the
critical-difference diagram and a runtime-vs-quality plot, from a board of per-(data set, learner) figures.
The report is also written as data (:data:`RANKS_CSV`, :data:`RUNTIME_CSV`) for the docs' tables
(:mod:`olb.ops.doc_tables`).

The board of one metric is a table with one row per data set and one column per learner (the mean over the
training permutations). Ranks are taken per data set (1 = best, ties share their mean rank) over the data sets
on which every ranked learner has a figure (the Friedman test needs complete blocks: :func:`complete` keeps the
data sets and learners that give the most figures; a learner left out is listed, not ranked); the mean-rank table and
the diagram are drawn from the same ranks. Statistics come from scipy (Friedman) and scikit-posthocs
(Nemenyi's all-pairs test after Friedman, and the diagram).

>>> import pandas as pd
>>> board = pd.DataFrame({"a": [0.7, 0.6, 0.8], "b": [0.5, 0.6, 0.7], "c": [0.4, 0.3, 0.5]}, index=["d1", "d2", "d3"])
>>> ranks(board, lower_is_better=False).mean().to_dict()
{'a': 1.1666666666666667, 'b': 1.8333333333333333, 'c': 3.0}
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from olb.grid.messages import Status

RANKS_CSV = "ranks.csv"  # per metric and learner: mean rank, data sets, Friedman test, Nemenyi groups, runtime
RUNTIME_CSV = "train_us.csv"  # per data set and learner: training CPU µs per training example (median over seeds)


def complete(board: pd.DataFrame) -> pd.DataFrame:
    """The complete block the rank tests need: the data sets and the learners with a figure on each of them that
    give the most figures (ties: more data sets), e.g. every learner on the streams they all ran on rather than the
    few learners that ran on every stream. Up to ``EXHAUSTIVE_DATASETS`` data sets every subset is tried; beyond,
    learners missing on half of the data sets or more go, then data sets still incomplete."""
    board = board.dropna(axis=0, how="all")
    if len(board) > EXHAUSTIVE_DATASETS:
        board = board.loc[:, board.notna().sum() > len(board) / 2]
        return board.dropna(axis=0, how="any")
    has = board.notna().to_numpy()
    best, best_size = np.zeros(len(board), dtype=bool), (0, 0)
    for subset in range(1, 2 ** len(board)):
        rows = np.array([(subset >> i) & 1 for i in range(len(board))], dtype=bool)
        size = (int(rows.sum()) * int(has[rows].all(axis=0).sum()), int(rows.sum()))
        if size > best_size:
            best, best_size = rows, size
    return board.loc[best, has[best].all(axis=0)]


EXHAUSTIVE_DATASETS = 14
"""Data sets up to which :func:`complete` tries every subset (2**14 boards of booleans: well under a second)."""


def ranks(board: pd.DataFrame, lower_is_better: bool) -> pd.DataFrame:
    """Per-data-set ranks of the learners (1 = best, ties share their mean rank), complete rows only."""
    return complete(board).rank(axis=1, ascending=lower_is_better, method="average")


@dataclass
class Comparison:
    """Mean ranks, the Friedman test and the Nemenyi p-values of one metric's board."""

    metric: str
    mean_ranks: pd.Series  # learner -> mean rank, best first
    n_datasets: int
    friedman_statistic: float
    friedman_p: float
    nemenyi_p: pd.DataFrame  # learner x learner

    def not_different(self, learner: str, alpha: float = 0.05) -> list[str]:
        """The learners whose mean rank Nemenyi's test does not tell apart from ``learner``'s (p > ``alpha``)."""
        return [
            other for other in self.mean_ranks.index if other != learner and self.nemenyi_p.loc[learner, other] > alpha
        ]

    def records(self, lower_is_better: bool, alpha: float = 0.05) -> list[dict[str, object]]:
        """One row per ranked learner, best first: what :meth:`markdown` shows, as data."""
        return [
            {
                "metric": self.metric,
                "lower_is_better": lower_is_better,
                "learner": learner,
                "mean_rank": r,
                "n_datasets": self.n_datasets,
                "friedman_chi2": self.friedman_statistic,
                "friedman_p": self.friedman_p,
                "not_different": ";".join(self.not_different(learner, alpha)),
            }
            for learner, r in self.mean_ranks.items()
        ]

    def markdown(self, alpha: float = 0.05) -> str:
        lines = [
            f"Mean rank over {self.n_datasets} data sets (1 = best); Friedman chi2 = "
            f"{self.friedman_statistic:.2f}, p = {self.friedman_p:.3g}.",
            "",
            f"| rank | learner | mean rank | not significantly different (Nemenyi, p > {alpha}) |",
            "|---|---|---|---|",
        ]
        for i, (learner, r) in enumerate(self.mean_ranks.items(), start=1):
            lines.append(f"| {i} | {learner} | {r:.2f} | {', '.join(self.not_different(learner, alpha)) or '-'} |")
        return "\n".join(lines)


def compare(board: pd.DataFrame, metric: str, lower_is_better: bool) -> Comparison:
    """Mean ranks, Friedman and Nemenyi on ``board`` (needs >= 3 learners and >= 2 complete data sets)."""
    import scikit_posthocs
    from scipy.stats import friedmanchisquare

    full = complete(board)
    if full.shape[1] < 3 or full.shape[0] < 2:
        raise ValueError(
            f"{metric}: a rank comparison needs at least 3 learners on at least 2 common data sets; "
            f"the board has {full.shape[1]} learner(s) on {full.shape[0]} common data set(s)"
        )
    r = ranks(full, lower_is_better)
    statistic, p = friedmanchisquare(*[full[c].to_numpy() for c in full.columns])
    nemenyi = scikit_posthocs.posthoc_nemenyi_friedman(full.to_numpy())  # |mean rank differences|: direction-free
    nemenyi.index = nemenyi.columns = full.columns
    return Comparison(metric, r.mean().sort_values(), len(full), float(statistic), float(p), nemenyi)


class _StableLabel(str):
    """A learner's name whose hash is the same in every process: scikit-posthocs draws a diagram's crossbars by
    iterating sets of the labels, so with str's per-process hash the same ranks gave a different PNG each run."""

    def __hash__(self) -> int:
        return zlib.crc32(self.encode())


def cd_diagram(comparison: Comparison, path: Path, alpha: float = 0.05) -> Path:
    """The critical-difference diagram of ``comparison`` (same mean ranks as its table) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scikit_posthocs

    fig, ax = plt.subplots(figsize=(8, 0.45 * len(comparison.mean_ranks) + 1.2))
    labels = pd.Index([_StableLabel(name) for name in comparison.mean_ranks.index], dtype=object)  # not str dtype
    mean_ranks = comparison.mean_ranks.set_axis(labels)
    nemenyi_p = comparison.nemenyi_p.reindex(index=comparison.mean_ranks.index, columns=comparison.mean_ranks.index)
    scikit_posthocs.critical_difference_diagram(
        mean_ranks, nemenyi_p.set_axis(labels, axis=0).set_axis(labels, axis=1), alpha=alpha, ax=ax
    )
    ax.set_title(
        f"{comparison.metric}: mean rank over {comparison.n_datasets} data sets (lines join learners "
        f"not significantly different, Nemenyi p > {alpha})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def runtime_quality_plot(
    quality: pd.DataFrame, runtime: pd.DataFrame, metric: str, lower_is_better: bool, path: Path
) -> Path:
    """Mean rank of ``metric`` (y) against median training CPU per training example (x, log), one point per
    learner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mean_rank = ranks(quality, lower_is_better).mean()
    speed = median_runtime(runtime).reindex(mean_rank.index)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.scatter(speed, mean_rank)
    for learner in mean_rank.index:
        ax.annotate(
            learner, (speed[learner], mean_rank[learner]), fontsize=8, xytext=(3, 3), textcoords="offset points"
        )
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("training CPU µs per training example (median over data sets)")
    ax.set_ylabel(f"mean rank of {metric} (1 = best)")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def median_runtime(runtime: pd.DataFrame) -> pd.Series:
    """Each learner's training CPU per training example, the median over the data sets it ran on."""
    return runtime.median(axis=0)


def board(cells: pd.DataFrame, metric: str, learner: str = "label", aggfunc: str = "mean") -> pd.DataFrame:
    """Data set x learner table of ``metric`` over seeds (``aggfunc``), from a grid's cells (FINISHED only)."""
    done = cells[cells["status"] == Status.FINISHED]
    return done.pivot_table(index="dataset", columns=learner, values=metric, aggfunc=aggfunc)


def write_report(
    table: pd.DataFrame, cells: pd.DataFrame, lower_is_better: dict[str, bool], out_dir: Path
) -> tuple[str, list[Path]]:
    """The cross-learner report of a grid: per metric, the mean-rank table (markdown) and its critical-difference
    diagram; one runtime-vs-quality plot per metric; the same ranks as data (:func:`write_data`). ``table`` is
    the grid's table.csv (one figure per data set and learner, settings already chosen), ``cells`` its cells.csv
    (``train_us_per_example``: the training pass's CPU per training row; scoring the test rows costs every
    learner the same and is left out). Metrics whose board is too small are listed with the reason."""
    out_dir.mkdir(parents=True, exist_ok=True)
    runtime = board(cells, "train_us_per_example", aggfunc="median")
    parts, files, rows = ["## Leaderboard: mean ranks across data sets", ""], [], []
    for metric, lower in lower_is_better.items():
        figures = table[table["metric"] == metric].pivot_table(index="dataset", columns="algorithm", values="mean")
        try:
            comparison = compare(figures, metric, lower)
        except ValueError as err:
            parts += [f"### {metric}", "", f"not ranked: {err}", ""]
            continue
        files.append(cd_diagram(comparison, out_dir / f"cd_{metric}.png"))
        files.append(
            runtime_quality_plot(
                figures, runtime.reindex(columns=figures.columns), metric, lower, out_dir / f"runtime_vs_{metric}.png"
            )
        )
        left_out = sorted(set(figures.columns) - set(comparison.mean_ranks.index))
        rows += comparison.records(lower)
        rows += [{"metric": metric, "lower_is_better": lower, "learner": learner} for learner in left_out]
        parts += [
            f"### {metric} ({'lower' if lower else 'higher'} is better)",
            "",
            comparison.markdown(),
            "",
            *(
                [f"Not ranked (missing on half of the data sets or more): {', '.join(left_out)}.", ""]
                if left_out
                else []
            ),
            f"![critical difference](leaderboard/cd_{metric}.png)",
            "",
        ]
    if rows:
        files += write_data(pd.DataFrame(rows), runtime, out_dir)
    return "\n".join(parts), files


def write_data(rank_rows: pd.DataFrame, runtime: pd.DataFrame, out_dir: Path) -> list[Path]:
    """:data:`RANKS_CSV`: ``rank_rows`` (one per metric and learner; a learner left out of a metric's ranking has
    no mean rank) with each learner's median training CPU per training example (the runtime plot's x);
    :data:`RUNTIME_CSV`: the ``runtime`` board (data set x learner) in long form."""
    rank_rows = rank_rows.assign(train_us_per_example=rank_rows["learner"].map(median_runtime(runtime)))
    rank_rows.to_csv(out_dir / RANKS_CSV, index=False)
    long = runtime.stack().rename("train_us_per_example").reset_index()
    long.columns = ["dataset", "learner", "train_us_per_example"]
    long.to_csv(out_dir / RUNTIME_CSV, index=False)
    return [out_dir / RANKS_CSV, out_dir / RUNTIME_CSV]
