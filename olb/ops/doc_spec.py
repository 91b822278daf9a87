"""A result-table marker of the docs (:mod:`olb.ops.doc_tables`) read into a :class:`TableSpec`, and the
table it names rendered from its result files."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from olb.grid.reporting.coverage import summary_line
from olb.grid.reporting.leaderboard import RANKS_CSV, RUNTIME_CSV
from olb.ops.doc_layouts import (
    DocTableError,
    coverage_markdown,
    in_order,
    one_row_per_entry,
    paper_layout,
    ranks_markdown,
    wins_markdown,
)

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


def _one_row_per_cell(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of several runs side by side, one per cell where they overlap: a run's row for a paper's cell
    outside its grid (note "absent: ...") gives way to another run's row of that cell, and the same published
    figure listed by both is one. Two other rows of a cell are left for the caller to refuse."""
    if "coverage" not in table.columns:
        return table
    outside = table["note"].str.startswith("absent:")
    cells = pd.MultiIndex.from_frame(table[list(_AXES)].astype(str))
    kept = table[~(outside & cells.isin(cells[~outside.to_numpy()]))]
    same = kept.duplicated(keep="first") & kept["coverage"].isin(("absent", "published"))
    return kept[~same]


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
            table, settings = _one_row_per_cell(self._filtered(self._summaries(root, sources), where)), []
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
        table = table.sort_values(order, key=in_order, kind="stable")
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


# A cell's identity in cells.csv, before its settings (olb.grid.planning.plan.Cell.record: identity, parameters, loops,
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
