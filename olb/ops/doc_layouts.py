"""The layouts of the docs' result tables (:mod:`olb.ops.doc_tables`): a paper's own, the wins of one learner over
another, the mean ranks of a leaderboard."""

from __future__ import annotations

import pandas as pd

from olb.grid.planning.plan import RUNTIME_COLUMNS
from olb.grid.reporting.coverage import CLASSES
from olb.grid.reporting.markdown import figure_text, md_table, number_text, paper_text, partial_text, pivot_markdown


class DocTableError(ValueError):
    """A marker that names a missing file, an unknown option or a value its table does not have."""


def in_order(values: pd.Series) -> pd.Series:
    """``values`` as sort keys: a filtered axis in its option's order, any other in the order it first appears."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes
    return values.map({v: i for i, v in enumerate(pd.unique(values))})


def coverage_markdown(table: pd.DataFrame, kind: str, decimals: int) -> str:
    """A table.csv's coverage as a table: ``counts`` per data set (and in total), ``misses`` (each missed cell:
    ours, the paper's, the difference) or ``not-run`` (each data set and method not computed, with its note)."""
    counted = table[table["coverage"].fillna("") != ""]
    if kind == "counts":
        classes = [c for c in CLASSES if (counted["coverage"] == c).any()]
        counts = pd.crosstab(counted["dataset"], counted["coverage"]).reindex(columns=classes, fill_value=0)
        counts = counts.reindex(pd.unique(counted["dataset"]))
        body = [[str(ds), *map(str, row), f"{_share(row)}"] for ds, row in counts.iterrows()]
        body.append(["**all**", *map(str, counts.sum()), _share(counts.sum())])
        return md_table(["dataset", *classes, "within / (within + missed)"], body) + "\n"
    if kind == "misses":
        missed = counted[counted["coverage"] == "missed"]
        body = [
            [
                str(r.dataset),
                str(r.algorithm),
                str(r.metric),
                number_text(r.mean, decimals),
                number_text(r.paper, decimals),
                f"{r.mean - r.paper:+.{decimals}f}",
            ]
            for r in missed.itertuples()
        ]
        return md_table(["dataset", "learner", "metric", "ours", "published", "difference"], body) + "\n"
    not_run = counted[counted["coverage"] == "not run"].drop_duplicates(["dataset", "algorithm"])
    body = [[str(r.dataset), str(r.algorithm), str(r.note)] for r in not_run.itertuples()]
    return md_table(["dataset", "learner", "why"], body) + "\n"


def _share(counts: pd.Series) -> str:
    """within / (within + missed) as a percentage, or "-" where no cell was compared."""
    compared = counts.get("within", 0) + counts.get("missed", 0)
    return f"{100 * counts.get('within', 0) / compared:.0f}%" if compared else "-"


def paper_layout(table: pd.DataFrame, rows: list[str], columns: list[str], options: dict[str, str], where: str) -> str:
    """The table laid out as ``options`` ask: ``scale``, ``cell``, ``setting`` (the module's docstring)."""
    decimals, bold = int(options.get("decimals", 4)), options.get("bold") == "true"
    try:
        scale = float(options.get("scale", 1))
    except ValueError:
        raise DocTableError(f"{where}: marker option scale={options['scale']} is not a number") from None
    scaled = ~table["metric"].isin(RUNTIME_COLUMNS)
    table.loc[scaled, [c for c in ("mean", "std", "paper", "diff") if c in table]] *= scale
    if options.get("setting") == "column":
        n_selected = table.groupby(rows, sort=False)["selected"].nunique()
        mixed = [key if isinstance(key, tuple) else (key,) for key in n_selected[n_selected > 1].index]
        if mixed:
            raise DocTableError(
                f"{where}: setting=column, but {' / '.join(map(str, mixed[0]))} has entries "
                "selected differently (put the metric in the columns)"
            )
        table = table.assign(setting=table["selected"], selected="")
        rows = [*rows, "setting"]
    cell = (lambda r: _mean_paper_text(r, decimals, bold)) if options.get("cell") == "mean/paper" else None
    return pivot_markdown(table, rows, columns, decimals, bold, cell, split_rows="setting" in rows)


def _mean_paper_text(row: dict, decimals: int, bold: bool) -> str:
    """Ours / the paper's: ours bold when best (``bold``), in italics when outside the paper's tolerance; a
    published-only method's figure alone (its column says "(published)"); "not run / the paper's" for a cell not
    run."""
    if row.get("coverage") == "published":
        return number_text(row["paper"], decimals)
    if row.get("coverage") == "not run":  # why, and at what cost: summary=not-run
        return f"not run / {number_text(row['paper'], decimals)}"
    text = figure_text(row, decimals, bold)
    text = f"*{text}*" if row.get("coverage") == "missed" else text
    if row["metric"] in RUNTIME_COLUMNS:
        text += paper_text(row, decimals)  # not "ours / the paper's": measured on other hardware
    elif not pd.isna(row["paper"]):
        text += f" / {number_text(row['paper'], decimals)}"
    if row["partial"]:
        text += f" ({partial_text(row)})"
    return text


def one_row_per_entry(
    table: pd.DataFrame, axes: list[str], settings: list[str], source: str, where: str
) -> pd.DataFrame:
    """``table`` (:func:`cell_means`) in the order of ``axes`` (parameter values by number), once it is clear that
    each entry of the layout is one setting: every parameter that differs within one is named."""
    keys = ["dataset", "algorithm", "metric", *(a for a in axes if a in settings)]
    culprits: dict[str, set[str]] = {}
    for _, group in table.groupby(keys, sort=False):
        for setting in settings:
            if setting not in keys and group[setting].nunique() > 1:
                culprits.setdefault(setting, set()).add(f"{group['algorithm'].iloc[0]} on {group['dataset'].iloc[0]}")
    if culprits:
        named = "; ".join(f"{s} ({', '.join(sorted(c))})" for s, c in culprits.items())
        raise DocTableError(
            f"{where}: the cells of {source} differ in {named}: name each in rows or columns, or leave those "
            "algorithms out"
        )
    ranks = {a: _rank(table[a], by_number=a in settings) for a in axes}
    order = pd.DataFrame(ranks).sort_values(list(axes), kind="stable").index
    return table.loc[order].reset_index(drop=True)


def _rank(column: pd.Series, by_number: bool) -> pd.Series:
    """Each value's place: a parameter's by number (then text), any other axis's by first appearance."""
    if not by_number:
        return in_order(column)

    def key(text: str) -> tuple[int, float, str]:
        try:
            return (0, float(text), "")
        except ValueError:
            return (1, 0.0, text)

    places = {v: i for i, v in enumerate(sorted(column.unique(), key=key))}
    return column.map(places)


def _better(a: float, b: float, lower_is_better: bool) -> bool:
    return a < b if lower_is_better else a > b


def wins_markdown(table: pd.DataFrame, pairs: list[tuple[str, str]], where: str) -> str:
    """Per pair ``(A, B)`` and metric of ``table`` (a table.csv): "k of n", A's mean strictly better than B's on k
    of the n data sets where both have one; in brackets the fewer side (the data sets A wins, or after "not" those
    it does not) and the data sets where the two are equal. The metric's direction is
    :data:`olb.metrics.METRICS`'."""
    from olb.metrics import METRICS

    no_direction = sorted(set(table["metric"]) - set(METRICS))
    missing = sorted({learner for pair in pairs for learner in pair} - set(table["algorithm"]))
    if no_direction or missing:
        raise DocTableError(
            f"{where}: wins: "
            + "; ".join(
                [f"no algorithm {', '.join(missing)}"] * bool(missing)
                + [f"{', '.join(no_direction)} has no better direction (metric=...)"] * bool(no_direction)
            )
        )
    metrics = list(dict.fromkeys(table["metric"]))
    means = table.pivot_table(index=["metric", "dataset"], columns="algorithm", values="mean", sort=False)
    body = []
    for a, b in pairs:
        row = [a, b]
        for metric in metrics:
            both = means.loc[metric, [a, b]].dropna()
            won = [d for d, (x, y) in both.iterrows() if _better(x, y, METRICS[metric].lower_is_better)]
            not_won = [d for d in both.index if d not in won]
            tied = [d for d, (x, y) in both.iterrows() if x == y]
            named = []
            if won and not_won:
                named.append(", ".join(won) if len(won) <= len(not_won) else f"not {', '.join(not_won)}")
            if tied:
                named.append(f"tied: {', '.join(tied)}")
            row.append(f"{len(won)} of {len(both)}" + (f" ({'; '.join(named)})" if named else ""))
        body.append(row)
    return md_table(["learner", "better than", *metrics], body) + "\n"


def _microseconds(x: float) -> str:
    if pd.isna(x):
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def ranks_markdown(
    ranks: pd.DataFrame,
    metrics: list[str],
    learners: list[str],
    decimals: int,
    runtime_of: list[str],
    runtime: pd.DataFrame | None,
    where: str,
) -> str:
    """A leaderboard's mean ranks (``ranks``: its ranks.csv) as learner x metric, the best of each metric (the
    lowest mean rank among all it ranked) in bold, a learner left out of a metric's ranking "not ranked"; then
    the number of data sets and the Friedman test's p per metric. Rows in the order of ``learners``, or by the
    first metric's mean rank; ``runtime_of``: ``["median"]`` adds each learner's median training CPU per
    training example, data set names add that data set's (``runtime``: the train_us.csv)."""
    metrics = metrics or list(dict.fromkeys(ranks["metric"]))
    learners = learners or list(ranks[ranks["metric"] == metrics[0]].sort_values("mean_rank", kind="stable")["learner"])
    missing = [f"metric {m}" for m in metrics if m not in set(ranks["metric"])]
    missing += [f"learner {x}" for x in learners if x not in set(ranks["learner"])]
    if runtime_of != ["median"] and runtime is not None:
        missing += [f"data set {d} (train_us.csv)" for d in runtime_of if d not in set(runtime["dataset"])]
    if missing:
        raise DocTableError(f"{where} has no {', '.join(missing)}")
    by = ranks.set_index(["metric", "learner"])
    best = ranks.groupby("metric")["mean_rank"].min()
    header = ["learner", *metrics]
    if runtime_of == ["median"]:
        header.append("training CPU per example (µs, median over data sets)")
    elif runtime_of:
        header.append(f"training CPU per example (µs), {' / '.join(runtime_of)}")
        per_dataset = runtime.set_index(["dataset", "learner"])["train_us_per_example"]  # type: ignore[union-attr]
    body = []
    for learner in learners:
        row = [learner]
        for metric in metrics:
            if (metric, learner) not in by.index:
                row.append("")
            elif pd.isna(r := by.loc[(metric, learner), "mean_rank"]):
                row.append("not ranked")
            else:
                row.append(f"**{r:.{decimals}f}**" if r == best[metric] else f"{r:.{decimals}f}")
        if runtime_of == ["median"]:
            row.append(_microseconds(ranks.loc[ranks["learner"] == learner, "train_us_per_example"].iloc[0]))
        elif runtime_of:
            row.append(" / ".join(_microseconds(per_dataset.get((d, learner), float("nan"))) for d in runtime_of))
        body.append(row)
    first = ranks.dropna(subset=["mean_rank"]).drop_duplicates("metric").set_index("metric")
    extra = [""] * (len(header) - 1 - len(metrics))
    body.append(["data sets ranked on", *[str(int(first.loc[m, "n_datasets"])) for m in metrics], *extra])
    body.append(["Friedman p", *[f"{first.loc[m, 'friedman_p']:.2g}" for m in metrics], *extra])
    return md_table(header, body) + "\n"
