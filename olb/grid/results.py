"""Cell results -> cells.csv, the paper-style table (table.csv, table.md) beside the paper's numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from olb.grid.plan import RUNTIME_COLUMNS, Cell, Plan

STATUS_ORDER = ("FINISHED", "FAILED", "UNAVAILABLE", "NOT_RUN")


def outcome_from_payload(payload: dict, run_id: str | None) -> dict:
    out = {"status": payload["status"], "run_id": run_id, "source": "run", "error": payload.get("error", ""),
           "metrics": dict(payload.get("metrics", {})), "curve": payload.get("curve"),
           "primary_metric": payload.get("primary_metric"), "host": payload.get("host", ""),
           "node_ip": payload.get("node_ip", "")}
    for key in (*RUNTIME_COLUMNS, "wall_s"):
        out[key] = payload.get(key, math.nan)
    return out


def outcome_from_run(run, cell: Cell) -> dict:
    """A cell finished by an earlier invocation, from its MLflow run."""
    out = {"status": "FINISHED", "run_id": run.run_id, "source": "resumed", "error": "",
           "metrics": {m: run.metrics.get(m, math.nan) for m in cell.measured}, "curve": None,
           "primary_metric": cell.metrics[0], "host": run.tags.get("olb.host", ""),
           "node_ip": run.tags.get("olb.node_ip", "")}
    for key in (*RUNTIME_COLUMNS, "wall_s"):
        out[key] = run.metrics.get(key, math.nan)
    return out


def cells_frame(plan: Plan, outcomes: dict[str, dict]) -> pd.DataFrame:
    """One row per cell: id, algorithm, data set, every hyperparameter, seed, status, runtime, metrics, where it ran."""
    metric_names = list(dict.fromkeys(m for c in plan.cells for m in c.measured))
    rows = []
    for cell in plan.cells:
        row = cell.record()
        out = outcomes.get(cell.cell_id, {"status": "NOT_RUN", "error": "", "metrics": {}})
        row["status"] = out["status"]
        for key in RUNTIME_COLUMNS:
            row[key] = out.get(key, math.nan)
        for m in metric_names:
            row[m] = out.get("metrics", {}).get(m, math.nan)
        row["host"], row["node_ip"] = out.get("host", ""), out.get("node_ip", "")
        row["run_id"] = out.get("run_id") or ""
        row["source"] = out.get("source", "")
        row["error"] = (out.get("error") or "").splitlines()[0][:300] if out.get("error") else ""
        rows.append(row)
    df = pd.DataFrame(rows)
    fixed = ["cell_id", "label", "algorithm", "dataset"]
    tail = ["loops", "protocol", "seed", "status", *RUNTIME_COLUMNS, *metric_names, "host", "node_ip", "run_id",
            "source", "error"]
    hp = [c for c in df.columns if c not in fixed and c not in tail]
    return df[fixed + hp + tail]


# -- reference values ------------------------------------------------------------------------------------
def load_reference(ref_cfg) -> pd.DataFrame | None:
    if not ref_cfg.file or not ref_cfg.paper:
        return None
    path = Path(ref_cfg.file)
    if not path.is_file():
        return None
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df = df[(df["paper"] == ref_cfg.paper) & ((df["table"] == ref_cfg.table) if ref_cfg.table else True)]
    return df


def paper_value(ref: pd.DataFrame | None, ref_cfg, paper_name: str | None, dataset: str, metric: str) -> tuple[float, str]:
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
        return float(value), note
    except ValueError:
        return math.nan, note or value


# -- the table -------------------------------------------------------------------------------------------
def _stats(values: list[float]) -> tuple[float, float, int]:
    vals = np.asarray([v for v in values if v is not None and not math.isnan(v)], float)
    if len(vals) == 0:
        return math.nan, math.nan, 0
    return float(vals.mean()), float(vals.std(ddof=1)) if len(vals) > 1 else math.nan, int(len(vals))


def build_table(plan: Plan, outcomes: dict[str, dict], ref_cfg, unavailable: dict[str, str]) -> pd.DataFrame:
    """Long table: one row per (data set, algorithm configuration, metric).

    Configurations of an entry that differ only in ``best_of`` hyperparameters are reduced to the one with
    the best mean (over seeds) of ``select_by`` for each data set, as paper 000 reports "best of 4 gamma".
    """
    ref = load_reference(ref_cfg)
    rows = []

    def value(cell: Cell, metric: str) -> float:
        out = outcomes.get(cell.cell_id)
        if not out or out["status"] != "FINISHED":
            return math.nan
        return out.get(metric, math.nan) if metric in RUNTIME_COLUMNS else out["metrics"].get(metric, math.nan)

    for key, info in plan.entries.items():
        for ds in plan.datasets:
            cells = [c for c in plan.cells if c.entry == key and c.dataset == ds]
            if not cells:
                continue
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
                n_failed = sum(1 for c in chosen if outcomes.get(c.cell_id, {}).get("status") == "FAILED")
                note = "unavailable" if ds in unavailable else ""
                if not note and n_failed:
                    note = f"{n_failed} failed"
                if not note and all(outcomes.get(c.cell_id, {}).get("status", "NOT_RUN") == "NOT_RUN" for c in chosen):
                    note = "not run"
                selected = ", ".join(f"{k}={v}" for k, v in pick) if (len(groups) > 1 and finite) else ""
                for metric in plan.table_metrics:
                    mean, std, n = _stats([value(c, metric) for c in chosen])
                    paper, pnote = paper_value(ref, ref_cfg, info["paper_name"], ds, metric)
                    rows.append({"dataset": ds, "algorithm": label, "metric": metric, "mean": mean, "std": std,
                                 "n_seeds": n, "paper": paper, "diff": mean - paper, "selected": selected,
                                 "n_failed": n_failed, "note": note or pnote})
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "metric", "mean", "std", "n_seeds", "paper", "diff",
                                       "selected", "n_failed", "note"])


def _num(x: float, decimals: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if abs(x) >= 10 ** 4:
        return f"{x:.0f}"
    return f"{x:.{decimals}f}"


def _cell_text(row: pd.Series, decimals: int) -> str:
    d = 2 if row["metric"] in RUNTIME_COLUMNS else decimals
    if row["note"] == "unavailable":
        text = "unavailable"
    elif row["n_seeds"] == 0:
        text = row["note"] or "-"
    else:
        text = _num(row["mean"], d)
        if row["n_seeds"] > 1:
            text += f" ± {_num(row['std'], d)}"
    if not math.isnan(row["paper"]):
        text += f" [{_num(row['paper'], d)}]"
    if row["selected"]:
        text += f" ({row['selected']})"
    return text


def _md_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |" for r in body]
    return "\n".join(lines)


def pivot_markdown(table: pd.DataFrame, rows: list[str], columns: list[str], decimals: int) -> str:
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
        lookup = {(tuple(r[a] for a in rows), tuple(r[a] for a in columns)): _cell_text(r, decimals)
                  for _, r in part.iterrows()}
        header = [" / ".join(rows)] + [" / ".join(map(str, ck)) for ck in col_keys]
        body = [[" / ".join(map(str, rk))] + [lookup.get((rk, ck), "") for ck in col_keys] for rk in row_keys]
        out.append(_md_table(header, body))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def table_markdown(table: pd.DataFrame, title: str, rows: list[str], columns: list[str], decimals: int,
                   reference: str = "") -> str:
    source = f" ({reference})" if reference else ""
    legend = f"Each entry: mean ± std over seeds [the paper's value{source}] (the selected hyperparameter)."
    long_body = []
    for _, r in table.iterrows():
        d = 2 if r["metric"] in RUNTIME_COLUMNS else decimals
        long_body.append([r["dataset"], r["algorithm"], r["metric"], _num(r["mean"], d), _num(r["std"], d), r["n_seeds"],
                          _num(r["paper"], d), _num(r["diff"], d), r["selected"], r["note"]])
    long = _md_table(["dataset", "algorithm", "metric", "mean", "std", "n_seeds", "paper", "diff", "selected", "note"],
                     long_body)
    return (f"# {title}\n\n{legend}\n\n{pivot_markdown(table, rows, columns, decimals)}\n"
            f"## All values\n\n{long}\n")
