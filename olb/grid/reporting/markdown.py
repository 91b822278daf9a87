"""table.md: the long table (:mod:`olb.grid.reporting.table`) in the papers' layout and in full, and its title."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from olb.grid.planning.config import GridBase
from olb.grid.messages import Choice
from olb.grid.planning.plan import RUNTIME_COLUMNS, Plan


def partial_text(row: pd.Series) -> str:
    """``"partial: 2/3 seeds, 2/4 gamma"`` for a figure resting on less than planned, else ``""``."""
    if not row["partial"]:
        return ""
    parts = []
    if row["n_seeds"] < row["n_planned"]:
        parts.append(f"{row['n_seeds']}/{row['n_planned']} seeds")
    if row["n_values"] < row["n_values_planned"]:
        chosen = row["selected"].split("=")[0] if row["selected"] else "values"
        parts.append(f"{row['n_values']}/{row['n_values_planned']} {chosen}")
    return "partial: " + ", ".join(parts)


def number_text(x: float, decimals: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if abs(x) >= 10**4:
        return f"{x:.0f}"
    return f"{x:.{decimals}f}"


def seconds_text(seconds: float) -> str:
    """Seconds as the grid prints a planned or measured time: ``4,105``, ``58``, ``0.31``."""
    return f"{seconds:,.0f}" if seconds >= 100 else f"{seconds:.2g}"


def figure_text(row: dict, decimals: int, bold: bool = False) -> str:
    """A cell's own figure: its mean (bold when ``bold`` and the best), or why it has none."""
    if row["note"].startswith("unavailable"):
        return "unavailable"
    if row["n_seeds"] == 0:
        return row["note"] or "-"
    text = number_text(row["mean"], 2 if row["metric"] in RUNTIME_COLUMNS else decimals)
    return f"**{text}**" if bold and row.get("best", False) else text


def _cell_text(row: dict, decimals: int, bold: bool = False) -> str:
    d = 2 if row["metric"] in RUNTIME_COLUMNS else decimals
    text = figure_text(row, decimals, bold)
    if row["n_seeds"] > 1 and not row["note"].startswith("unavailable"):
        text += f" ± {number_text(row['std'], d)}"
    text += paper_text(row, d)
    if row["selected"]:
        text += f" ({row['selected']})"
    if row["partial"]:
        text += f" ({partial_text(row)})"
    return text


def paper_text(row: dict, decimals: int) -> str:
    """The paper's figure as an entry shows it: `` [0.1600]`` beside ours; a runtime apart and labelled, since
    the paper measured it on other hardware (`` (paper's hardware: 253.00 s)``); ``""`` when none."""
    if pd.isna(row["paper"]):
        return ""
    if row["metric"] in RUNTIME_COLUMNS:
        return f" (paper's hardware: {number_text(row['paper'], 2)} s)"
    return f" [{number_text(row['paper'], decimals)}]"


def md_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |" for r in body]
    return "\n".join(lines)


def pivot_markdown(
    table: pd.DataFrame,
    rows: list[str],
    columns: list[str],
    decimals: int,
    bold: bool = False,
    cell: Callable[[dict], str] | None = None,
    split_rows: bool = False,
) -> str:
    """The paper-style layout: ``rows`` x ``columns`` out of (dataset, algorithm, metric); any axis in
    neither becomes one section per value. ``cell`` writes an entry (default: mean ± std [paper] (selected));
    ``split_rows`` gives each row axis a column of its own (default: one column, the axes joined by " / ")."""
    cell = cell or (lambda r: _cell_text(r, decimals, bold))
    if table.empty:
        return "(no results)"
    sections_axes = [a for a in ("metric", "dataset", "algorithm") if a not in rows and a not in columns]
    out = []
    groups = table.groupby(sections_axes, sort=False) if sections_axes else [((), table)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        if sections_axes:
            out.append("**" + ", ".join(f"{a}: {v}" for a, v in zip(sections_axes, key)) + "**\n")
        records = part.to_dict("records")
        row_keys = list(dict.fromkeys(tuple(r[a] for a in rows) for r in records))
        col_keys = list(dict.fromkeys(tuple(r[a] for a in columns) for r in records))
        lookup = {(tuple(r[a] for a in rows), tuple(r[a] for a in columns)): cell(r) for r in records}
        labels = (lambda key: list(map(str, key))) if split_rows else (lambda key: [" / ".join(map(str, key))])
        header = labels(rows) + [" / ".join(map(str, ck)) for ck in col_keys]
        body = [labels(rk) + [lookup.get((rk, ck), "") for ck in col_keys] for rk in row_keys]
        out.append(md_table(header, body))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


@dataclass(frozen=True)
class TableLayout:
    """How table.md lays out the table (the config's ``table`` settings)."""

    rows: list[str]
    columns: list[str]
    decimals: int
    bold: bool = False


def table_markdown(table: pd.DataFrame, title: str, layout: TableLayout, reference: str = "") -> str:
    """table.md: the title, a legend, the paper-style layout (:func:`pivot_markdown`), then every value."""
    rows, columns, decimals, bold = layout.rows, layout.columns, layout.decimals, layout.bold
    source = f" ({reference})" if reference else ""
    legend = (
        f"Each entry: mean ± std over seeds [the paper's value{source}, only where the settings are the "
        "paper's; a runtime's apart, labelled, since the paper measured it on other hardware] (the selected "
        "hyperparameter) (partial: what a figure rests on when less than planned)."
    )
    long_body = []
    for r in table.to_dict("records"):
        d = 2 if r["metric"] in RUNTIME_COLUMNS else decimals
        note = "; ".join(x for x in (partial_text(r), r["note"]) if x)
        long_body.append(
            [
                r["dataset"],
                r["algorithm"],
                r["metric"],
                number_text(r["mean"], d),
                number_text(r["std"], d),
                f"{r['n_seeds']}/{r['n_planned']}",
                number_text(r["paper"], d),
                number_text(r["diff"], d),
                r["selected"],
                note,
            ]
        )
    long = md_table(
        ["dataset", "algorithm", "metric", "mean", "std", "seeds", "paper", "diff", "selected", "note"], long_body
    )
    if bold:
        legend += (
            " Bold: the best mean of its data set and metric, and every mean not significantly different from "
            "it (paired t-test over the seeds, 95%)."
        )
    return f"# {title}\n\n{legend}\n\n{pivot_markdown(table, rows, columns, decimals, bold)}\n## All values\n\n{long}\n"


# -- the title ---------------------------------------------------------------------------------------------
# Settings that never change a cell or the table: with overrides of nothing else, the grid ran as its file says.
_RUN_ONLY = (
    "experiment",
    "hydra",
    "backend",
    "tracking",
    "resume",
    "allow_unavailable",
    "plots",
    "data_dir",
    "selection_store",
    "imports",
    "export",
)


def grid_title(cfg: GridBase, plan: Plan, overrides: list[str]) -> str:
    """The experiment's name and description when it ran as its file says (no override of a setting that shapes
    the cells or the table), else its name; then the overrides and what the cells ran."""
    as_written = all(o.lstrip("+~").split("=", 1)[0].split(".")[0] in _RUN_ONLY for o in overrides)
    title = f"{cfg.name}: {cfg.description}" if (cfg.description and as_written) else cfg.name
    if overrides:
        title += f"\n\nCommand-line overrides: `{' '.join(overrides)}`"
    return f"{title}\n\nRun: {settings_run(plan)}"


def settings_run(plan: Plan) -> str:
    """What the cells ran, from the cells themselves: data sets, seeds, each entry's non-default settings."""
    from olb.learners.registry import get_algorithm

    seeds = sorted({c.seed for c in plan.cells})
    parts = [f"data sets {', '.join(plan.datasets)}", f"{len(seeds)} seed(s) ({', '.join(map(str, seeds))})"]
    by_entry: dict[str, list] = {}
    for c in plan.cells:
        by_entry.setdefault(c.entry, []).append(c)
    for key, info in plan.entries.items():
        cells = by_entry.get(key)
        if not cells:
            continue
        defaults = get_algorithm(info["algorithm"]).params
        ran: dict[str, dict] = {}  # name -> the values set, each once (in order)
        for c in cells:
            for name, v in [*c.params.items(), ("loops", c.loops)]:
                ran.setdefault(name, {}).setdefault(_once(v), v)
        best_of = {name for c in cells for name in c.best_of}
        # a setting that varied is shown with every value it took, the default among them
        values = {
            name: list(taken.values())
            for name, taken in ran.items()
            if len(taken) > 1
            or name in best_of
            or next(iter(taken.values())) != (defaults[name].default if name in defaults else 1)
        }
        settings = ", ".join(f"{k}={_values_text(v)}" for k, v in values.items())
        protocols = sorted({c.protocol for c in cells})
        parts.append(
            f"{info['label']} ({info['algorithm']}, {'/'.join(protocols)}{', ' + settings if settings else ''})"
        )
    return "; ".join(parts)


def _once(value: object) -> object:
    """A key under which equal values meet once (a list, unhashable, by its text)."""
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


def _values_text(values: list) -> str:
    return str(values[0]) if len(values) == 1 else "{" + ", ".join(map(str, values)) + "}"


def selection_markdown(choices: list[Choice]) -> str:
    """The settings chosen by cross-validation, for table.md."""
    if not choices:
        return ""
    lines = ["## Settings chosen by cross-validation", "", "| entry | data set | setting | why |", "|---|---|---|---|"]
    for c in choices:
        setting = ", ".join(f"{k}={v}" for k, v in c.params.items())
        lines.append(f"| {c.entry} | {c.dataset} | {setting} | {c.reason} |")
    return "\n".join(lines) + "\n"
