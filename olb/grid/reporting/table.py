"""The paper-style long table (table.csv): one row per (data set, algorithm configuration, metric), with the
paper's value where the settings are the paper's, and the best rows marked."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from olb.grid.planning.config import ReferenceConfig

from olb.grid.reporting.markdown import number_text
from olb.grid.messages import CellOutcome, Status
from olb.grid.planning.plan import RUNTIME_COLUMNS, Cell, Plan
from olb.grid.reporting.references import load_reference, paper_value

# table.csv's columns, in order
TABLE_COLUMNS = (
    "dataset",
    "algorithm",
    "metric",
    "mean",
    "std",
    "n_seeds",
    "paper",
    "diff",
    "n_planned",
    "n_values",
    "n_values_planned",
    "partial",
    "selected",
    "n_failed",
    "note",
    "best",
)


def _stats(values: list[float]) -> tuple[float, float, int]:
    vals = np.asarray([v for v in values if v is not None and not math.isnan(v)], float)
    if len(vals) == 0:
        return math.nan, math.nan, 0
    return float(vals.mean()), float(vals.std(ddof=1)) if len(vals) > 1 else math.nan, int(len(vals))


@dataclass
class _TableInputs:
    """What every row of the table is computed from."""

    plan: Plan
    outcomes: dict[str, CellOutcome]
    ref_cfg: ReferenceConfig
    ref: pd.DataFrame | None
    summary: str  # the paper's settings (olb.grid.reporting.comparable.paper_summary)
    unavailable: dict[str, str]
    differences: dict[tuple[str, str], list[str]] | None
    papers: dict[tuple, tuple[float, str]] = field(default_factory=dict)  # looked up once per (name, data, metric)

    def value(self, cell: Cell, metric: str) -> float:
        out = self.outcomes.get(cell.cell_id)
        if out is None or out.status != Status.FINISHED:
            return math.nan
        return (out.runtimes if metric in RUNTIME_COLUMNS else out.metrics).get(metric, math.nan)

    def status(self, cell: Cell) -> str:
        out = self.outcomes.get(cell.cell_id)
        return Status.NOT_RUN if out is None else out.status

    def paper(self, paper_name: str | None, ds: str, metric: str, differ: list[str]) -> tuple[float, str]:
        """The paper's value and note; where ``differ`` names settings that differ from the paper's, no value and
        a note giving it with what differs."""
        key = (paper_name, ds, metric)
        if key not in self.papers:
            self.papers[key] = paper_value(self.ref, self.ref_cfg, paper_name, ds, metric)
        paper, note = self.papers[key]
        if differ and not math.isnan(paper):
            where = f"paper ({self.summary})" if self.summary else "paper"
            shown = number_text(paper, 2 if metric in RUNTIME_COLUMNS else 4)
            return math.nan, f"not comparable: {where} {shown}; here {', '.join(differ)}"
        if metric in RUNTIME_COLUMNS and not math.isnan(paper):
            note = "; ".join(x for x in (note, "the paper's runtime, on other hardware: not comparable") if x)
        return paper, note


def build_table(
    plan: Plan,
    outcomes: dict[str, CellOutcome],
    ref_cfg: ReferenceConfig,
    unavailable: dict[str, str],
    differences: dict[tuple[str, str], list[str]] | None = None,
) -> pd.DataFrame:
    """Long table: one row per (data set, algorithm configuration, metric).

    Configurations of an entry that differ only in ``best_of`` hyperparameters are reduced to the one with
    the best mean (over seeds) of ``select_by`` for each data set, as paper 000 reports "best of 4 gamma".
    ``n_seeds``/``n_planned`` and ``n_values``/``n_values_planned`` say what each figure rests on (``partial``
    when less than planned); ``n_failed`` counts the row's failed cells. The paper's value is shown only where
    ``differences`` (:func:`olb.grid.reporting.comparable.differences`) names no setting of the (entry, data set) that
    differs from the paper's (``None``: shown everywhere); elsewhere the note gives it with what differs. A
    runtime's paper value was measured on other hardware: it has no ``diff``, and its note says so.
    """
    from olb.grid.reporting.comparable import paper_summary

    t = _TableInputs(plan, outcomes, ref_cfg, load_reference(ref_cfg), paper_summary(ref_cfg), unavailable, differences)
    rows = []
    for key in plan.entries:
        for ds in plan.datasets:
            for groups in _configurations(plan, key, ds):
                rows += _config_rows(t, key, ds, groups)
    _mark_best(rows, plan.lower_is_better)
    for row in rows:
        del row["per_seed"]
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def _configurations(plan: Plan, key: str, ds: str) -> list[dict[tuple, list[Cell]]]:
    """The configurations of entry ``key`` on ``ds`` apart from ``best_of`` hyperparameters, each as
    (``best_of`` values -> cells)."""
    by_rest: dict[tuple, dict[tuple, list[Cell]]] = {}
    for c in plan.cells_by_pair.get((key, ds), ()):
        rest = tuple((k, v) for k, v in c.varying if k not in c.best_of)
        sel = tuple((k, v) for k, v in c.varying if k in c.best_of)
        by_rest.setdefault(rest, {}).setdefault(sel, []).append(c)
    return list(by_rest.values())


def _pick(t: _TableInputs, groups: dict[tuple, list[Cell]]) -> tuple[tuple, dict]:
    """The ``best_of`` values with the best mean of ``select_by``, and the finite means by values."""
    plan = t.plan
    scored = {sel: _stats([t.value(c, plan.select_by) for c in cs])[0] for sel, cs in groups.items()}
    finite = {sel: s for sel, s in scored.items() if not math.isnan(s)}
    if finite:
        best = min if plan.lower_is_better.get(plan.select_by, True) else max
        return best(finite, key=lambda sel: finite[sel]), finite
    return next(iter(groups)), finite


def _config_rows(t: _TableInputs, key: str, ds: str, groups: dict[tuple, list[Cell]]) -> list[dict]:
    """One row per table metric for one configuration of entry ``key`` on ``ds``."""
    label = next(iter(groups.values()))[0].config_label
    pick, finite = _pick(t, groups)
    chosen = groups[pick]
    every = [c for cs in groups.values() for c in cs]
    n_failed = sum(1 for c in every if t.status(c) == Status.FAILED)
    note = "unavailable" if ds in t.unavailable else ""
    if not note and n_failed:
        note = f"{n_failed} failed"
    if not note and all(t.status(c) == Status.NOT_RUN for c in every):
        note = "not run"
    selected = ", ".join(f"{k}={v}" for k, v in pick) if (pick and finite) else ""
    differ = [] if t.differences is None else t.differences.get((key, ds), [])
    rows = []
    for metric in t.plan.table_metrics:
        per_seed = {c.seed: t.value(c, metric) for c in chosen}
        mean, std, n = _stats(list(per_seed.values()))
        paper, pnote = t.paper(t.plan.entries[key]["paper_name"], ds, metric, differ)
        rows.append(
            {
                "dataset": ds,
                "algorithm": label,
                "metric": metric,
                "mean": mean,
                "std": std,
                "n_seeds": n,
                "n_planned": len(chosen),
                "n_values": len(finite),
                "n_values_planned": len(groups),
                "partial": bool(n and (n < len(chosen) or len(finite) < len(groups))),
                "paper": paper,
                "diff": math.nan if metric in RUNTIME_COLUMNS else mean - paper,  # seconds of other hardware
                "selected": selected,
                "n_failed": n_failed,
                "note": "; ".join(x for x in (note, pnote) if x),
                "per_seed": per_seed,
            }
        )
    return rows


def _mark_best(rows: list[dict], lower_is_better: dict[str, bool], alpha: float = 0.05) -> None:
    """``best``: per (data set, metric), the row with the best mean and every row not significantly different
    from it by a paired t-test over the seeds they share (two-sided, level ``alpha``; paper 002's bold rule)."""
    from scipy.stats import ttest_rel

    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        row["best"] = False
        if row["n_seeds"] and not math.isnan(row["mean"]):
            groups.setdefault((row["dataset"], row["metric"]), []).append(row)
    for (_, metric), group in groups.items():
        sign = 1.0 if lower_is_better.get(metric, True) else -1.0
        top = min(group, key=lambda r: sign * r["mean"])
        for row in group:
            seeds = [
                s
                for s in top["per_seed"]
                if s in row["per_seed"] and not math.isnan(top["per_seed"][s]) and not math.isnan(row["per_seed"][s])
            ]
            a = np.array([row["per_seed"][s] for s in seeds])
            b = np.array([top["per_seed"][s] for s in seeds])
            if row is top or (len(seeds) > 1 and np.array_equal(a, b)):
                row["best"] = True
            elif len(seeds) > 1 and np.ptp(a - b) > 0:
                row["best"] = bool(ttest_rel(a, b).pvalue >= alpha)
