"""The result tables of README.md and docs/*.md, generated from the exported results (:mod:`olb.grid.reporting.export`).

A table is written between two markers; the opening one names the table.csv (or several, comma-separated, whose
rows are set side by side: another run's columns beside a table's; where two runs give a paper's cell, a row
outside one run's grid, noted "absent: ...", gives way to the other's, and any other pair is refused) and how to lay
it out::

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
  planned CPU (:func:`olb.ops.doc_layouts.coverage_markdown`).

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

``python -m olb.ops.doc_tables FILE...`` rewrites the tables (``make docs``); with ``--check`` it changes
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
from pathlib import Path

import pandas as pd

from olb.grid.reporting.leaderboard import RANKS_CSV
from olb.ops.doc_layouts import DocTableError
from olb.ops.doc_spec import TableSpec

_BLOCK = re.compile(r"(<!-- olb:table (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- /olb:table -->)", re.DOTALL)

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
    parser = argparse.ArgumentParser(prog="python -m olb.ops.doc_tables", description=__doc__.split("\n\n")[0])
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
            print(f"olb.ops.doc_tables: {err}", file=sys.stderr)
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
            f"olb.ops.doc_tables: {len(misquoted)} quoted figure(s) not what their result file gives: "
            "edit the sentence",
            file=sys.stderr,
        )
        return 1
    if args.check and failures:
        print("\n".join(failures), file=sys.stderr)
        print(f"olb.ops.doc_tables: {len(failures)} table(s) out of date: run `make docs`", file=sys.stderr)
        return 1
    verb = "checked" if args.check else f"{len(failures)} rewritten of"
    print(
        f"olb.ops.doc_tables: {verb} {n_tables} table(s) and checked {n_quotes} quote(s) in {len(args.files)} file(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
