"""Plots of a grid (PNG, matplotlib Agg): learning curves per data set, and each metric against every
numeric hyperparameter that the grid varies (loss against gamma)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from olb.grid.messages import CellOutcome, Status
from olb.grid.planning.plan import Cell, Plan

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CurveOf = Callable[[Cell, CellOutcome], "dict[str, list[float]] | None"]  # a cell's learning curve, if known


def _figure(w: float = 6.4, h: float = 4.0) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=100)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def _save(fig: Figure, ax: Axes, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """Label, legend and grid, then write ``fig`` to ``path``."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path


def learning_curves(
    plan: Plan, outcomes: dict[str, CellOutcome], table: pd.DataFrame, curve_of: CurveOf, out_dir: Path
) -> list[Path]:
    """One figure per data set: the mean (over seeds) running loss of each table row's configuration.

    ``curve_of(cell, outcome)`` returns {"step": [...], "value": [...]} (from the cell's result or the tracking store).
    """
    paths = []
    for ds in plan.datasets:
        fig = _figure()
        ax = fig.add_subplot()
        drawn = 0
        for label in dict.fromkeys(table[table["dataset"] == ds]["algorithm"]):
            rows = table[(table["dataset"] == ds) & (table["algorithm"] == label)]
            selected = rows.iloc[0]["selected"] if len(rows) else ""
            cells = [
                c
                for c in plan.cells
                if c.dataset == ds
                and c.config_label == label
                and ", ".join(f"{k}={v}" for k, v in c.varying if k in c.best_of) == selected
            ]
            frames = []
            for c in cells:
                out = outcomes.get(c.cell_id)
                if out is None or out.status != Status.FINISHED:
                    continue
                curve = curve_of(c, out)
                if curve and curve.get("step"):
                    frames.append(pd.DataFrame({"step": curve["step"], "value": curve["value"]}))
            if not frames:
                continue
            stats = pd.concat(frames).groupby("step")["value"].agg(["mean", "std", "count"]).reset_index()
            name = label + (f" ({selected})" if selected else "")
            (line,) = ax.plot(stats["step"], stats["mean"], label=f"{name}, {len(frames)} seeds")
            if len(frames) > 1:
                ax.fill_between(
                    stats["step"],
                    stats["mean"] - stats["std"].fillna(0),
                    stats["mean"] + stats["std"].fillna(0),
                    color=line.get_color(),
                    alpha=0.15,
                    linewidth=0,
                )
            drawn += 1
        if not drawn:
            continue
        metric = next((c.metrics[0] for c in plan.cells if c.dataset == ds), "loss")
        paths.append(
            _save(
                fig,
                ax,
                "example (train passes, then test)",
                f"running mean {metric} (per phase)",
                f"Learning curves on {ds}",
                out_dir / f"curves_{_slug(ds)}.png",
            )
        )
    return paths


def sweeps(plan: Plan, cells: pd.DataFrame, out_dir: Path) -> list[Path]:
    """For every entry and numeric hyperparameter it varies: the select_by metric against it, per data set."""
    paths: list[Path] = []
    metric = plan.select_by
    done = cells[cells["status"] == Status.FINISHED]
    if done.empty or metric not in done.columns:
        return paths
    for key, info in plan.entries.items():
        ecells = [c for c in plan.cells if c.entry == key]
        hps = list(
            dict.fromkeys(
                k for c in ecells for k, v in c.varying if isinstance(v, (int, float)) and not isinstance(v, bool)
            )
        )
        for hp in hps:
            col = hp if hp in done.columns else None
            if col is None:
                continue
            ids = {c.cell_id for c in ecells}
            part = done[done["cell_id"].isin(ids) & (done["label"] == info["label"])]
            if part.empty:
                continue
            fig = _figure()
            ax = fig.add_subplot()
            xs_all = []
            for ds, sub in part.groupby("dataset", sort=False):
                stats = sub.groupby(col)[metric].agg(["mean", "std"]).reset_index().sort_values(col)
                xs_all.extend(stats[col].tolist())
                ax.errorbar(stats[col], stats["mean"], yerr=stats["std"].fillna(0), marker="o", capsize=3, label=ds)
            positive = [x for x in xs_all if x > 0]
            if positive and len(positive) == len(xs_all) and max(positive) / min(positive) >= 10:
                ax.set_xscale("log")
            paths.append(
                _save(
                    fig,
                    ax,
                    hp,
                    f"{metric} (mean ± std over seeds)",
                    f"{info['label']}: {metric} against {hp}",
                    out_dir / f"{_slug(key)}_{_slug(metric)}_vs_{_slug(hp)}.png",
                )
            )
    return paths
