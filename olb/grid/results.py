"""Cell results -> cells.csv, the paper-style table (table.csv, table.md) beside the paper's numbers."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

import olb

from olb.grid.messages import CellFailure, CellResult, Status
from olb.grid.plan import RUNTIME_COLUMNS, Cell, Plan


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


def outcome_from_message(message: CellResult | CellFailure, run_id: str | None) -> dict:
    """A cell run in this invocation, from what its worker (or backend) answered."""
    finished = isinstance(message, CellResult)
    out = {
        "status": message.status,
        "run_id": run_id,
        "source": "run",
        "error": "" if finished else message.error,
        "metrics": dict(message.metrics) if finished else {},
        "curve": message.curve if finished else None,
        "primary_metric": message.primary_metric if finished else None,
        "host": message.host,
        "node_ip": message.node_ip,
    }
    for key in (*RUNTIME_COLUMNS, "wall_s"):
        value = getattr(message, key, None)  # a failure has no runtime, and memory figures only when killed for it
        out[key] = math.nan if value is None else value
    return out


def outcome_from_run(run, cell: Cell) -> dict:
    """A cell finished by an earlier invocation, from its MLflow run."""
    out = {
        "status": Status.FINISHED,
        "run_id": run.run_id,
        "source": "resumed",
        "error": "",
        "metrics": {m: run.metrics.get(m, math.nan) for m in cell.measured},
        "curve": None,
        "primary_metric": cell.metrics[0],
        "host": run.tags.get("olb.host", ""),
        "node_ip": run.tags.get("olb.node_ip", ""),
    }
    for key in (*RUNTIME_COLUMNS, "wall_s"):
        out[key] = run.metrics.get(key, math.nan)
    return out


def cells_frame(plan: Plan, outcomes: dict[str, dict], data=None) -> pd.DataFrame:
    """One row per cell: id, algorithm, data set, every hyperparameter, seed, status, runtime, metrics, the data
    fingerprint (``data``: the grid's DataCheck), where it ran."""
    sources = data.sources if data is not None else {}
    metric_names = list(dict.fromkeys(m for c in plan.cells for m in c.measured))
    rows = []
    for cell in plan.cells:
        row = cell.record()
        out = outcomes.get(cell.cell_id, {"status": Status.NOT_RUN, "error": "", "metrics": {}})
        row["status"] = out["status"]
        for key in RUNTIME_COLUMNS:
            row[key] = out.get(key, math.nan)
        for m in metric_names:
            row[m] = out.get("metrics", {}).get(m, math.nan)
        row["host"], row["node_ip"] = out.get("host", ""), out.get("node_ip", "")
        row["data_fingerprint"] = sources[cell.dataset].fingerprint if cell.dataset in sources else ""
        row["run_id"] = out.get("run_id") or ""
        row["source"] = out.get("source", "")
        row["error"] = (out.get("error") or "").splitlines()[0][:300] if out.get("error") else ""
        rows.append(row)
    df = pd.DataFrame(rows)
    fixed = ["cell_id", "label", "algorithm", "dataset"]
    tail = [
        "loops",
        "protocol",
        "seed",
        "status",
        *RUNTIME_COLUMNS,
        *metric_names,
        "data_fingerprint",
        "host",
        "node_ip",
        "run_id",
        "source",
        "error",
    ]
    hp = [c for c in df.columns if c not in fixed and c not in tail]
    return df[fixed + hp + tail]


# -- reference values ------------------------------------------------------------------------------------
def paper_citation(key: str) -> str:
    """The short citation (authors, year, method) of the paper ``key`` (conf/reference/papers.yaml), else the key."""
    return _papers(olb.conf_file("reference/papers.yaml")).get(key, {}).get("cite", key)


@functools.cache
def _papers(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) if path.is_file() else {}


def reference_source(ref_cfg) -> str:
    """Where a table's paper values come from, e.g. "Jung & Tewari (2018), Ada.OLMR and OnlineBMR, Table 3"."""
    return ", ".join(x for x in (paper_citation(ref_cfg.paper) if ref_cfg.paper else "", ref_cfg.table or "") if x)


def load_reference(ref_cfg) -> pd.DataFrame | None:
    if not ref_cfg.file or not ref_cfg.paper:
        return None
    path = Path(ref_cfg.file)
    if not path.is_file():
        return None
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df = df[(df["paper"] == ref_cfg.paper) & ((df["table"] == ref_cfg.table) if ref_cfg.table else True)]
    return df


def paper_value(
    ref: pd.DataFrame | None, ref_cfg, paper_name: str | None, dataset: str, metric: str
) -> tuple[float, str]:
    if ref is None or not paper_name:
        return math.nan, ""
    ds = ref_cfg.datasets.get(dataset, dataset) if ref_cfg.datasets else dataset
    mname = ref_cfg.metrics.get(metric, metric) if ref_cfg.metrics else metric
    hit = ref[(ref["dataset"] == ds) & (ref["algorithm"] == paper_name) & (ref["metric"] == mname)]
    if hit.empty:
        return math.nan, ""
    value = hit.iloc[0]["value"].strip()
    note = hit.iloc[0].get("note", "") or ""
    try:
        return float(value) / float(getattr(ref_cfg, "scale", 1.0) or 1.0), note
    except ValueError:
        return math.nan, note or value


# -- the table -------------------------------------------------------------------------------------------
def _stats(values: list[float]) -> tuple[float, float, int]:
    vals = np.asarray([v for v in values if v is not None and not math.isnan(v)], float)
    if len(vals) == 0:
        return math.nan, math.nan, 0
    return float(vals.mean()), float(vals.std(ddof=1)) if len(vals) > 1 else math.nan, int(len(vals))


def build_table(
    plan: Plan,
    outcomes: dict[str, dict],
    ref_cfg,
    unavailable: dict[str, str],
    differences: dict[tuple[str, str], list[str]] | None = None,
) -> pd.DataFrame:
    """Long table: one row per (data set, algorithm configuration, metric).

    Configurations of an entry that differ only in ``best_of`` hyperparameters are reduced to the one with
    the best mean (over seeds) of ``select_by`` for each data set, as paper 000 reports "best of 4 gamma".
    ``n_seeds``/``n_planned`` and ``n_values``/``n_values_planned`` say what each figure rests on (``partial``
    when less than planned); ``n_failed`` counts the row's failed cells. The paper's value is shown only where
    ``differences`` (:func:`olb.grid.comparable.differences`) names no setting of the (entry, data set) that
    differs from the paper's (``None``: shown everywhere); elsewhere the note gives it with what differs.
    """
    from olb.grid.comparable import paper_summary

    ref = load_reference(ref_cfg)
    summary = paper_summary(ref_cfg)
    rows = []

    def value(cell: Cell, metric: str) -> float:
        out = outcomes.get(cell.cell_id)
        if not out or out["status"] != Status.FINISHED:
            return math.nan
        return out.get(metric, math.nan) if metric in RUNTIME_COLUMNS else out["metrics"].get(metric, math.nan)

    def status(cell: Cell) -> str:
        return outcomes.get(cell.cell_id, {}).get("status", Status.NOT_RUN)

    for key, info in plan.entries.items():
        for ds in plan.datasets:
            cells = [c for c in plan.cells if c.entry == key and c.dataset == ds]
            by_rest: dict[tuple, dict[tuple, list[Cell]]] = {}
            for c in cells:
                rest = tuple((k, v) for k, v in c.varying if k not in c.best_of)
                sel = tuple((k, v) for k, v in c.varying if k in c.best_of)
                by_rest.setdefault(rest, {}).setdefault(sel, []).append(c)
            for groups in by_rest.values():
                label = next(iter(groups.values()))[0].config_label
                scored = {sel: _stats([value(c, plan.select_by) for c in cs])[0] for sel, cs in groups.items()}
                finite = {sel: s for sel, s in scored.items() if not math.isnan(s)}
                if finite:
                    pick = (min if plan.lower_is_better.get(plan.select_by, True) else max)(finite, key=finite.get)
                else:
                    pick = next(iter(groups))
                chosen = groups[pick]
                every = [c for cs in groups.values() for c in cs]
                n_failed = sum(1 for c in every if status(c) == Status.FAILED)
                note = "unavailable" if ds in unavailable else ""
                if not note and n_failed:
                    note = f"{n_failed} failed"
                if not note and all(status(c) == Status.NOT_RUN for c in every):
                    note = "not run"
                selected = ", ".join(f"{k}={v}" for k, v in pick) if (pick and finite) else ""
                differ = [] if differences is None else differences.get((key, ds), [])
                for metric in plan.table_metrics:
                    per_seed = {c.seed: value(c, metric) for c in chosen}
                    mean, std, n = _stats(list(per_seed.values()))
                    paper, pnote = paper_value(ref, ref_cfg, info["paper_name"], ds, metric)
                    if differ and not math.isnan(paper):
                        where = f"paper ({summary})" if summary else "paper"
                        paper, pnote = (
                            math.nan,
                            f"not comparable: {where} {_num(paper, 2 if metric in RUNTIME_COLUMNS else 4)}; "
                            f"here {', '.join(differ)}",
                        )
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
                            "diff": mean - paper,
                            "selected": selected,
                            "n_failed": n_failed,
                            "note": "; ".join(x for x in (note, pnote) if x),
                            "per_seed": per_seed,
                        }
                    )
    _mark_best(rows, plan.lower_is_better)
    for row in rows:
        del row["per_seed"]
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


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


def partial_text(row) -> str:
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


def _num(x: float, decimals: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if abs(x) >= 10**4:
        return f"{x:.0f}"
    return f"{x:.{decimals}f}"


def _cell_text(row: pd.Series, decimals: int, bold: bool = False) -> str:
    d = 2 if row["metric"] in RUNTIME_COLUMNS else decimals
    if row["note"].startswith("unavailable"):
        text = "unavailable"
    elif row["n_seeds"] == 0:
        text = row["note"] or "-"
    else:
        text = _num(row["mean"], d)
        if bold and row.get("best", False):
            text = f"**{text}**"
        if row["n_seeds"] > 1:
            text += f" ± {_num(row['std'], d)}"
    if not math.isnan(row["paper"]):
        text += f" [{_num(row['paper'], d)}]"
    if row["selected"]:
        text += f" ({row['selected']})"
    if row["partial"]:
        text += f" ({partial_text(row)})"
    return text


def _md_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |" for r in body]
    return "\n".join(lines)


def pivot_markdown(table: pd.DataFrame, rows: list[str], columns: list[str], decimals: int, bold: bool = False) -> str:
    """The paper-style layout: ``rows`` x ``columns`` out of (dataset, algorithm, metric); any axis in
    neither becomes one section per value."""
    if table.empty:
        return "(no results)"
    sections_axes = [a for a in ("metric", "dataset", "algorithm") if a not in rows and a not in columns]
    out = []
    groups = table.groupby(sections_axes, sort=False) if sections_axes else [((), table)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        if sections_axes:
            out.append("**" + ", ".join(f"{a}: {v}" for a, v in zip(sections_axes, key)) + "**\n")
        row_keys = list(dict.fromkeys(tuple(r[a] for a in rows) for _, r in part.iterrows()))
        col_keys = list(dict.fromkeys(tuple(r[a] for a in columns) for _, r in part.iterrows()))
        lookup = {
            (tuple(r[a] for a in rows), tuple(r[a] for a in columns)): _cell_text(r, decimals, bold)
            for _, r in part.iterrows()
        }
        header = [" / ".join(rows)] + [" / ".join(map(str, ck)) for ck in col_keys]
        body = [[" / ".join(map(str, rk))] + [lookup.get((rk, ck), "") for ck in col_keys] for rk in row_keys]
        out.append(_md_table(header, body))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def table_markdown(
    table: pd.DataFrame,
    title: str,
    rows: list[str],
    columns: list[str],
    decimals: int,
    reference: str = "",
    bold: bool = False,
) -> str:
    source = f" ({reference})" if reference else ""
    legend = (
        f"Each entry: mean ± std over seeds [the paper's value{source}, only where the settings are the "
        "paper's] (the selected hyperparameter) (partial: what a figure rests on when less than planned)."
    )
    long_body = []
    for _, r in table.iterrows():
        d = 2 if r["metric"] in RUNTIME_COLUMNS else decimals
        note = "; ".join(x for x in (partial_text(r), r["note"]) if x)
        long_body.append(
            [
                r["dataset"],
                r["algorithm"],
                r["metric"],
                _num(r["mean"], d),
                _num(r["std"], d),
                f"{r['n_seeds']}/{r['n_planned']}",
                _num(r["paper"], d),
                _num(r["diff"], d),
                r["selected"],
                note,
            ]
        )
    long = _md_table(
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
)


def grid_title(cfg, plan: Plan, overrides: list[str]) -> str:
    """The experiment's name and description when it ran as its file says (no override of a setting that shapes
    the cells or the table), else its name; then the overrides and what the cells ran."""
    as_written = all(o.lstrip("+~").split("=", 1)[0].split(".")[0] in _RUN_ONLY for o in overrides)
    title = f"{cfg.name}: {cfg.description}" if (cfg.description and as_written) else cfg.name
    if overrides:
        title += f"\n\nCommand-line overrides: `{' '.join(overrides)}`"
    return f"{title}\n\nRun: {settings_run(plan)}"


def settings_run(plan: Plan) -> str:
    """What the cells ran, from the cells themselves: data sets, seeds, each entry's non-default settings."""
    from olb.registry import get_algorithm

    seeds = sorted({c.seed for c in plan.cells})
    parts = [f"data sets {', '.join(plan.datasets)}", f"{len(seeds)} seed(s) ({', '.join(map(str, seeds))})"]
    for key, info in plan.entries.items():
        cells = [c for c in plan.cells if c.entry == key]
        if not cells:
            continue
        defaults = get_algorithm(info["algorithm"]).params
        values: dict[str, list] = {}
        for c in cells:
            for name, v in [*c.params.items(), ("loops", c.loops)]:
                default = defaults[name].default if name in defaults else 1
                if v != default or name in c.best_of:
                    values.setdefault(name, [])
                    if v not in values[name]:
                        values[name].append(v)
        settings = ", ".join(
            f"{k}={v[0] if len(v) == 1 else '{' + ', '.join(map(str, v)) + '}'}" for k, v in values.items()
        )
        protocols = sorted({c.protocol for c in cells})
        parts.append(
            f"{info['label']} ({info['algorithm']}, {'/'.join(protocols)}{', ' + settings if settings else ''})"
        )
    return "; ".join(parts)
