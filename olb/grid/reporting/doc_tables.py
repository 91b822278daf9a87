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
  and produced by a stand-in (:func:`olb.grid.reporting.coverage.summary_line`).

``python -m olb.grid.reporting.doc_tables FILE...`` rewrites the tables (``make docs``); with ``--check`` it changes
nothing and fails, naming the file, the table and the first differing line, when a table differs from what its
result file gives (``make docs-check``, run by CI).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from olb.grid.plan import RUNTIME_COLUMNS
from olb.grid.reporting.coverage import summary_line
from olb.grid.reporting.markdown import figure_text, number_text, partial_text, pivot_markdown

_BLOCK = re.compile(r"(<!-- olb:table (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- /olb:table -->)", re.DOTALL)
_AXES = ("dataset", "algorithm", "metric")
_OPTIONS: tuple[str, ...] = ("metric", "datasets", "algorithms", "rows", "columns", "decimals", "bold")
# a paper's layout (paper_layout): scale, and the options with a fixed set of values
_CHOICES = {"cell": ("full", "mean/paper"), "setting": ("cell", "column"), "summary": ("coverage",)}
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
        missing_files = [s for s in sources if not (root / s).is_file()]
        if missing_files:
            raise DocTableError(
                f"{where}: result file {', '.join(missing_files)} does not exist (export it: docs/results.md)"
            )
        table = pd.concat(
            [pd.read_csv(root / s, dtype={"note": str, "selected": str}) for s in sources], ignore_index=True
        )
        table[["note", "selected"]] = table[["note", "selected"]].fillna("")
        for key, axis in (("metric", "metric"), ("datasets", "dataset"), ("algorithms", "algorithm")):
            wanted = self._list(key)
            if not wanted:
                continue
            missing = sorted(set(wanted) - set(table[axis]))
            if missing:
                raise DocTableError(f"{where}: {self.source} has no {axis} {', '.join(missing)}")
            table = table[table[axis].isin(wanted)].copy()
            table[axis] = pd.Categorical(table[axis], categories=wanted, ordered=True)
        # among the rows the table shows: two runs may list the same paper rows they did not produce
        twice = table[table.duplicated(list(_AXES), keep=False)]
        if not twice.empty:
            first = twice.iloc[0]
            raise DocTableError(
                f"{where}: {self.source} give {first['dataset']} {first['algorithm']} {first['metric']} more than "
                "once (label one run's algorithms apart)"
            )
        rows, columns = self._list("rows") or ["dataset"], self._list("columns") or ["algorithm"]
        unknown = sorted(set(rows + columns) - set(_AXES))
        if unknown:
            raise DocTableError(f"{where}: rows/columns {', '.join(unknown)} are not among {', '.join(_AXES)}")
        # sections, then rows, then columns, each axis in its option's order (else the file's)
        order = [*(a for a in _AXES if a not in rows + columns), *rows, *columns]
        table = table.sort_values(order, key=_in_order, kind="stable")
        table[list(_AXES)] = table[list(_AXES)].astype(str)
        if self.options.get("summary") == "coverage":
            if "coverage" not in table.columns:
                raise DocTableError(f"{where}: {self.source} has no coverage column (its experiment sets no tolerance)")
            return summary_line(table) + "\n"
        return paper_layout(table, rows, columns, self.options, where)


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
    table.loc[scaled, ["mean", "std", "paper", "diff"]] *= scale
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
    """Ours / the paper's: ours bold when best (``bold``), in italics when outside the paper's tolerance."""
    text = figure_text(row, decimals, bold)
    text = f"*{text}*" if row.get("coverage") == "missed" else text
    if not pd.isna(row["paper"]):
        text += f" / {number_text(row['paper'], 2 if row['metric'] in RUNTIME_COLUMNS else decimals)}"
    if row["partial"]:
        text += f" ({partial_text(row)})"
    return text


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
    failures, n_tables = [], 0
    for path in args.files:
        text = path.read_text()
        try:
            new, differences = generate(text, args.root, str(path))
        except DocTableError as err:
            print(f"olb.grid.reporting.doc_tables: {err}", file=sys.stderr)
            return 2
        n_tables += len(_BLOCK.findall(text))
        failures += differences
        if differences and not args.check:
            path.write_text(new)
    if args.check and failures:
        print("\n".join(failures), file=sys.stderr)
        print(f"olb.grid.reporting.doc_tables: {len(failures)} table(s) out of date: run `make docs`", file=sys.stderr)
        return 1
    verb = "checked" if args.check else f"{len(failures)} rewritten of"
    print(f"olb.grid.reporting.doc_tables: {verb} {n_tables} table(s) in {len(args.files)} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
