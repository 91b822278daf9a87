"""The result tables of README.md and docs/*.md, generated from the exported results (:mod:`olb.grid.reporting.export`).

A table is written between two markers; the opening one names the table.csv (or several, comma-separated, whose
rows are set side by side: another run's columns beside a table's) and how to lay it out::

    <!-- olb:table results/table3/table.csv metric=rank_loss algorithms=Ada.OLMR,OnlineBMR decimals=4 -->
    (generated: do not edit)
    <!-- /olb:table -->

Options (all optional; a value with spaces in double quotes): ``metric``, ``datasets``, ``algorithms``
(comma-separated; they filter and order),
``rows`` and ``columns`` (axes among dataset, algorithm, metric; default dataset x algorithm), ``decimals``
(default 4) and ``bold`` (the grid's significance marks). The layout is table.md's (:func:`pivot_markdown`).
For a paper's table in its own units and shape (:func:`paper_layout`):

- ``scale=100``: every figure but a runtime multiplied (fractions as the paper's percentages);
- ``cell=mean/paper``: an entry is "ours / the paper's", ours in italics where it misses the paper's by more
  than the experiment's tolerance (the ``coverage`` column); the default ``cell=full`` is table.md's entry;
- ``setting=column``: the selected setting in a column of its own (each row axis then has one too), refused
  where a row's entries were selected differently;
- ``summary=coverage``: instead of a table, the line counting the paper's cells within tolerance, missed, absent
  and produced by a stand-in (:func:`olb.grid.reporting.coverage.summary_line`); ``summary=counts``: those
  counts per data set, with a total row; ``summary=misses``: every missed cell with ours, the paper's figure and
  the difference; ``summary=not-run``: every (data set, method) the run did not compute, with its reason and
  planned CPU (:func:`coverage_markdown`).

A marker may name a run's cells.csv instead (several: their cells together) to show what its table.csv does not,
every setting of a swept parameter: the mean ± std over seeds of each ``metric`` (required; any column the cells
measured, e.g. ``accuracy`` or ``cpu_s``) per data set, entry (the algorithm axis is the entry's label, as in
table.csv) and the parameters that ``rows`` and ``columns`` name beside the three axes::

    <!-- olb:table results/multiclass_table1/cells.csv metric=accuracy algorithms="Best MBBM" columns=gamma -->

Only FINISHED cells count; a figure from fewer cells than were planned says so, as in table.md. A parameter whose
value differs between the cells of one table entry must be named in ``rows`` or ``columns`` (:func:`cell_means`).

``wins`` (pairs ``A:B``, comma-separated) turns a table.csv into counts instead: per pair and metric, on how many
of the data sets where both have a figure A's mean is strictly better than B's (:func:`wins_markdown`), for
sentences such as "A beats B on F1 on 9 of 10 data sets".

A marker naming a leaderboard's ranks.csv (:mod:`olb.grid.reporting.leaderboard`) renders its mean ranks
(:func:`ranks_markdown`): options ``metric``, ``algorithms`` (rows), ``decimals`` (default 2) and ``runtime``
(``median``, or data sets whose training CPU per example, from the train_us.csv beside it, is shown).

A sentence that quotes figures of a result file is checked too: written between two markers, the opening one
names the table.csv (or ranks.csv) and the cells it quotes, in the order the sentence quotes them::

    <!-- olb:quote results/leaderboard/table.csv birds/OnlineBMR+size/f1_unlabelled1 birds/OnlineBMR+size/example_f1 -->
    OnlineBMR+size gets .580 F1 on birds against .098 example-F1<!-- /olb:quote -->

A cell of a table.csv is ``dataset/algorithm/metric``, of a ranks.csv ``metric/learner`` (a name with spaces in
double quotes); its mean (table.csv) or mean rank (ranks.csv) is quoted, or the column after a colon
(``emotions/kNN/micro_f1:std``). Each cell must be one of the sentence's numbers, after the previous cell's, at
that number's own decimals (``.580`` quotes 0.5801; ``3,254`` 3253.7). The sentence is the writer's: quotes are
checked, never rewritten (:func:`check_quotes`).

``python -m olb.grid.reporting.doc_tables FILE...`` rewrites the tables (``make docs``); with ``--check`` it changes
nothing and fails, naming the file, the table and the first differing line, when a table differs from what its
result file gives (``make docs-check``, run by CI). Either fails, naming the sentence and the cell, when a quote
is not what its result file gives.
"""

from __future__ import annotations

import argparse
import math
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from olb.grid.plan import RUNTIME_COLUMNS
from olb.grid.reporting.coverage import CLASSES, summary_line
from olb.grid.reporting.leaderboard import RANKS_CSV, RUNTIME_CSV
from olb.grid.reporting.markdown import figure_text, md_table, number_text, paper_text, partial_text, pivot_markdown

_BLOCK = re.compile(r"(<!-- olb:table (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- /olb:table -->)", re.DOTALL)
_AXES = ("dataset", "algorithm", "metric")
_OPTIONS: tuple[str, ...] = (
    "metric",
    "datasets",
    "algorithms",
    "rows",
    "columns",
    "decimals",
    "bold",
    "wins",
    "runtime",
)
_RANKS_OPTIONS = ("metric", "algorithms", "decimals", "runtime")
# a paper's layout (paper_layout): scale, and the options with a fixed set of values
_CHOICES = {
    "cell": ("full", "mean/paper"),
    "setting": ("cell", "column"),
    "summary": ("coverage", "counts", "misses", "not-run"),
}
_OPTIONS += ("scale", *_CHOICES)


class DocTableError(ValueError):
    """A marker that names a missing file, an unknown option or a value its table does not have."""


@dataclass(frozen=True)
class TableSpec:
    """What one opening marker asks for."""

    source: str
    options: dict[str, str]

    @classmethod
    def parse(cls, spec: str, where: str) -> TableSpec:
        source, *pairs = shlex.split(spec)
        options = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or key not in _OPTIONS:
                raise DocTableError(f"{where}: marker option {pair!r} is not one of {', '.join(_OPTIONS)} (KEY=VALUE)")
            if key in _CHOICES and value not in _CHOICES[key]:
                raise DocTableError(f"{where}: marker option {key}={value} is not one of {', '.join(_CHOICES[key])}")
            options[key] = value
        return cls(source, options)

    def _list(self, key: str) -> list[str]:
        return [v for v in self.options.get(key, "").split(",") if v]

    def render(self, root: Path, where: str) -> str:
        """The table's markdown from its result files (paths relative to ``root``, the repository)."""
        sources = self.source.split(",")
        if Path(sources[0]).name == RANKS_CSV:
            return self._render_ranks(root, where)
        missing_files = [s for s in sources if not (root / s).is_file()]
        if missing_files:
            raise DocTableError(
                f"{where}: result file {', '.join(missing_files)} does not exist (export it: docs/results.md)"
            )
        if any(Path(s).name == "cells.csv" for s in sources):
            table, settings = cell_means(self, root, sources, where)
            table = self._filtered(table, where)
        else:
            table, settings = self._filtered(self._summaries(root, sources), where), []
            # among the rows the table shows: two runs may list the same paper rows they did not produce
            twice = table[table.duplicated(list(_AXES), keep=False)]
            if not twice.empty:
                first = twice.iloc[0]
                raise DocTableError(
                    f"{where}: {self.source} give {first['dataset']} {first['algorithm']} {first['metric']} more "
                    "than once (label one run's algorithms apart)"
                )
        rows, columns = self._list("rows") or ["dataset"], self._list("columns") or ["algorithm"]
        unknown = sorted(set(rows + columns) - set(_AXES) - set(settings))
        if unknown:
            raise DocTableError(
                f"{where}: rows/columns {', '.join(unknown)} are not among {', '.join([*_AXES, *settings])}"
            )
        # sections, then rows, then columns, each axis in its option's order (else the file's)
        order = [*(a for a in _AXES if a not in rows + columns), *rows, *columns]
        table = table.sort_values(order, key=_in_order, kind="stable")
        table[list(_AXES)] = table[list(_AXES)].astype(str)
        if "wins" in self.options:
            return wins_markdown(table, self._pairs(where), where)
        if settings:
            table = one_row_per_entry(table, rows + columns, settings, self.source, where)
        if "summary" in self.options:
            if "coverage" not in table.columns:
                raise DocTableError(f"{where}: {self.source} has no coverage column (its experiment sets no tolerance)")
            if self.options["summary"] == "coverage":
                return summary_line(table) + "\n"
            return coverage_markdown(table, self.options["summary"], int(self.options.get("decimals", 4)))
        return paper_layout(table, rows, columns, self.options, where)

    def _summaries(self, root: Path, sources: list[str]) -> pd.DataFrame:
        """The rows of table.csv files."""
        table = pd.concat(
            [pd.read_csv(root / s, dtype={"note": str, "selected": str}) for s in sources], ignore_index=True
        )
        table[["note", "selected"]] = table[["note", "selected"]].fillna("")
        return table

    def _filtered(self, table: pd.DataFrame, where: str) -> pd.DataFrame:
        """The rows of the metrics, data sets and algorithms the marker names (as ordered categories: its order)."""
        for key, axis in (("metric", "metric"), ("datasets", "dataset"), ("algorithms", "algorithm")):
            wanted = self._list(key)
            if not wanted:
                continue
            missing = sorted(set(wanted) - set(table[axis]))
            if missing:
                raise DocTableError(
                    f"{where}: {self.source} has no {axis} {', '.join(missing)} "
                    f"(it has {', '.join(map(str, table[axis].unique()))})"
                )
            table = table[table[axis].isin(wanted)].copy()
            table[axis] = pd.Categorical(table[axis], categories=wanted, ordered=True)
        return table

    def _pairs(self, where: str) -> list[tuple[str, str]]:
        pairs = [tuple(pair.split(":")) for pair in self._list("wins")]
        malformed = [":".join(p) for p in pairs if len(p) != 2 or not all(p)]
        if malformed or not pairs:
            raise DocTableError(f"{where}: wins={self.options['wins']!r}: each pair is LEARNER:LEARNER")
        return [(a, b) for a, b in pairs]

    def _render_ranks(self, root: Path, where: str) -> str:
        unknown = sorted(set(self.options) - set(_RANKS_OPTIONS))
        if unknown:
            raise DocTableError(
                f"{where}: option(s) {', '.join(unknown)} do not apply to {self.source} (it takes "
                f"{', '.join(_RANKS_OPTIONS)})"
            )
        path = root / self.source
        runtime_path = path.with_name(RUNTIME_CSV)
        per_dataset = self._list("runtime") not in ([], ["median"])  # the median is in ranks.csv itself
        for needed in (path, *([runtime_path] if per_dataset else [])):
            if not needed.is_file():
                raise DocTableError(
                    f"{where}: result file {needed.relative_to(root)} does not exist (a leaderboard=true run's "
                    "export: docs/results.md)"
                )
        ranks = pd.read_csv(path, dtype={"not_different": str})
        runtime = pd.read_csv(runtime_path) if per_dataset else None
        return ranks_markdown(
            ranks,
            self._list("metric"),
            self._list("algorithms"),
            int(self.options.get("decimals", 2)),
            self._list("runtime"),
            runtime,
            f"{where}: {self.source}",
        )


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


def _in_order(values: pd.Series) -> pd.Series:
    """``values`` as sort keys: a filtered axis in its option's order, any other in the order it first appears."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes
    return values.map({v: i for i, v in enumerate(pd.unique(values))})


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


# A cell's identity in cells.csv, before its settings (olb.grid.plan.Cell.record: identity, parameters, loops,
# protocol, seed), then its status, what it measured (numbers) and where it ran and on which data.
_CELL_IDENTITY = ("cell_id", "label", "algorithm", "dataset")
_CELL_NOT_MEASURED = ("data_fingerprint", "error")


def cell_means(spec: TableSpec, root: Path, sources: list[str], where: str) -> tuple[pd.DataFrame, list[str]]:
    """The cells of ``sources`` (cells.csv files) as a table like table.csv: the mean and std over their FINISHED
    cells of each metric ``spec`` names, per data set, entry label and setting (every column of a cell's settings),
    and the names of those settings."""
    if not all(Path(s).name == "cells.csv" for s in sources):
        raise DocTableError(f"{where}: {spec.source}: a table comes from cells.csv files or from table.csv files")
    if spec.options.get("bold") == "true":
        raise DocTableError(f"{where}: bold marks a table.csv's significance tests; {spec.source} has none")
    frames, settings, measured = [], {}, {}
    for source in sources:
        cells, its_settings, its_measured = _read_cells(root, source, where)
        frames.append(cells)
        settings.update(dict.fromkeys(its_settings))
        measured.update(dict.fromkeys(its_measured))
    cells = pd.concat(frames, ignore_index=True)
    twice = cells["cell_id"][cells["cell_id"].duplicated()].unique()
    if len(twice):
        raise DocTableError(f"{where}: {spec.source} give cell {', '.join(twice)} more than once")
    metrics = spec._list("metric")
    unknown = [m for m in metrics if m not in measured]
    if not metrics or unknown:
        raise DocTableError(
            f"{where}: {spec.source} needs metric= among the columns its cells measured ({', '.join(measured)})"
            + (f"; {', '.join(unknown)} is not one" if unknown else "")
        )
    cells[list(settings)] = cells[list(settings)].map(_setting_text)
    long = cells.drop(columns="algorithm").rename(columns={"label": "algorithm"})
    long = long.melt(id_vars=["dataset", "algorithm", *settings, "status"], value_vars=metrics, var_name="metric")
    groups = long.groupby(["dataset", "algorithm", *settings, "metric"], sort=False, dropna=False)
    table = groups.apply(_seed_summary, include_groups=False).reset_index()
    return table[table["n_planned"] > 0].reset_index(drop=True), list(settings)


def _read_cells(root: Path, source: str, where: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """A cells.csv, the names of its settings and of the numbers its cells measured."""
    cells = pd.read_csv(root / source, keep_default_na=False, na_values=[""])
    lacking = [c for c in (*_CELL_IDENTITY, "seed", "status") if c not in cells.columns]
    if lacking:
        raise DocTableError(f"{where}: {source} is not a grid's cells.csv (no column {', '.join(lacking)})")
    columns = list(cells.columns)
    after = columns[columns.index("status") + 1 :]
    measured = [c for c in after if c not in _CELL_NOT_MEASURED and pd.api.types.is_numeric_dtype(cells[c])]
    return cells, columns[len(_CELL_IDENTITY) : columns.index("seed")], measured


def _setting_text(value: object) -> str:
    """A parameter's value as a table shows it (2, not 2.0; ``-`` where a cell's learner has no such parameter)."""
    if isinstance(value, float):
        return "-" if math.isnan(value) else str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _seed_summary(group: pd.DataFrame) -> pd.Series:
    """Mean and std (ddof 1) of one entry's FINISHED values, as table.csv gives them; ``n_planned`` 0 for a metric
    its learner does not report (every cell finished, no value)."""
    finished = group["status"] == "FINISHED"
    values = group.loc[finished, "value"].dropna()
    n, planned = len(values), len(group)
    if n == 0 and finished.all():
        planned = 0
    statuses = sorted(group.loc[~finished, "status"].str.lower().str.replace("_", " ").unique())
    return pd.Series(
        {
            "mean": values.mean() if n else math.nan,
            "std": values.std(ddof=1) if n > 1 else math.nan,
            "n_seeds": n,
            "n_planned": planned,
            "n_values": 1,
            "n_values_planned": 1,
            "partial": 0 < n < planned,
            "paper": math.nan,
            "selected": "",
            "note": "" if n else ", ".join(statuses),
        }
    )


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
        return _in_order(column)

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


_QUOTE = re.compile(r"<!-- olb:quote (?P<spec>[^>]*?) -->(?P<body>.*?)<!-- /olb:quote -->", re.DOTALL)
# a number as the docs write it: 0.580, .580, 12, 3,254 (not the digits of a name such as F1 or cal500)
_NUMBER = re.compile(r"(?<![\w.,])((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?!\w)")
# per result file: the columns that name a cell, and the column quoted unless a cell names another
_QUOTED = {"table.csv": (("dataset", "algorithm", "metric"), "mean"), RANKS_CSV: (("metric", "learner"), "mean_rank")}


def check_quotes(text: str, root: Path, name: str) -> list[str]:
    """One message per quoted cell of ``text``'s ``olb:quote`` sentences that is not the sentence's next number
    (module docstring)."""
    problems = []
    for match in _QUOTE.finditer(text):
        where = f"{name}:{_line_number(text, match.start())}"
        source, *cells = shlex.split(match["spec"])
        if Path(source).name not in _QUOTED or not (root / source).is_file() or not cells:
            problems.append(
                f"{where}: a quote names a table.csv or {RANKS_CSV} that exists, then the cells it quotes "
                f"(got {match['spec']!r})"
            )
            continue
        keys, default = _QUOTED[Path(source).name]
        frame = pd.read_csv(root / source)
        numbers = list(_NUMBER.finditer(match["body"]))
        start = 0
        for cell in cells:
            address, _, column = cell.partition(":")
            values = address.split("/")
            rows = (
                frame[(frame[list(keys)].astype(str) == values).all(axis=1)] if len(values) == len(keys) else frame[:0]
            )
            if len(rows) != 1 or (column or default) not in frame.columns:
                problems.append(
                    f"{where}: {source} has no single cell {cell!r} ({'/'.join(keys)}[:column]; {len(rows)} found)"
                )
                continue
            value = float(rows.iloc[0][column or default])
            found = next((i for i in range(start, len(numbers)) if _quotes(numbers[i][0], value)), None)
            if found is None:
                problems.append(
                    f"{where}: {source} {cell} is {value:.6g}, which the sentence does not quote after the cells "
                    f"before it: {' '.join(match['body'].split())!r}"
                )
                continue
            start = found + 1
    return problems


def _quotes(written: str, value: float) -> bool:
    """Whether the number ``written`` is ``value`` rounded to ``written``'s decimals."""
    decimals = len(written.partition(".")[2])
    return not math.isnan(value) and abs(round(value, decimals) - float(written.replace(",", ""))) < 10 ** -(
        decimals + 3
    )


def _line_number(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def generate(text: str, root: Path, name: str) -> tuple[str, list[str]]:
    """``text`` with every marked table regenerated, and one message per table that was different."""
    out, last, differences = [], 0, []
    for match in _BLOCK.finditer(text):
        line = _line_number(text, match.start())
        spec = TableSpec.parse(match["spec"], f"{name}:{line}")
        body = spec.render(root, f"{name}:{line}")
        if body != match["body"]:
            old, new = match["body"].splitlines(), body.splitlines()
            i = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            found = old[i] if i < len(old) else "(nothing)"
            expected = new[i] if i < len(new) else "(nothing)"
            differences.append(
                f"{name}:{line + 1 + i}: table {spec.source} differs from its result file at its line {i + 1}:\n"
                f"  in the doc:    {found}\n  from the data: {expected}"
            )
        out += [text[last : match.start()], match.group(1), body, match.group(4)]
        last = match.end()
    out.append(text[last:])
    return "".join(out), differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m olb.grid.reporting.doc_tables", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("files", nargs="+", type=Path, help="markdown files with olb:table markers")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is not up to date")
    parser.add_argument("--root", type=Path, default=Path("."), help="the repository (result paths are relative)")
    args = parser.parse_args(argv)
    failures, misquoted, n_tables, n_quotes = [], [], 0, 0
    for path in args.files:
        text = path.read_text()
        try:
            new, differences = generate(text, args.root, str(path))
        except DocTableError as err:
            print(f"olb.grid.reporting.doc_tables: {err}", file=sys.stderr)
            return 2
        n_tables += len(_BLOCK.findall(text))
        n_quotes += len(_QUOTE.findall(text))
        failures += differences
        misquoted += check_quotes(new, args.root, str(path))
        if differences and not args.check:
            path.write_text(new)
    if misquoted:
        print("\n".join(misquoted), file=sys.stderr)
        print(
            f"olb.grid.reporting.doc_tables: {len(misquoted)} quoted figure(s) not what their result file gives: "
            "edit the sentence",
            file=sys.stderr,
        )
        return 1
    if args.check and failures:
        print("\n".join(failures), file=sys.stderr)
        print(f"olb.grid.reporting.doc_tables: {len(failures)} table(s) out of date: run `make docs`", file=sys.stderr)
        return 1
    verb = "checked" if args.check else f"{len(failures)} rewritten of"
    print(
        f"olb.grid.reporting.doc_tables: {verb} {n_tables} table(s) and checked {n_quotes} quote(s) in "
        f"{len(args.files)} file(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
