"""Reporting: the leaderboard, the plots and the console summary of a finished grid, and of a dry run."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO


from olb.grid.planning.config import GridBase
from olb.grid.planning.plan import Cell, Plan
from olb.grid.messages import EXIT_INTERRUPTED, EXIT_LOST, EXIT_UNAVAILABLE, CellOutcome, GridOutcome, Status
from olb.grid.reporting.markdown import seconds_text
from olb.grid.ui import how_to_open

if TYPE_CHECKING:
    import pandas as pd

CurveSource = Callable[[str, str], "dict[str, list[float]] | None"]  # a recorded run's curve: (run id, metric)

log = logging.getLogger("olb.grid")


def write_leaderboard(plan: Plan, table: pd.DataFrame, cells: pd.DataFrame, out_dir: Path) -> tuple[str, list[Path]]:
    """Mean ranks, critical-difference diagrams and runtime plots of ``table`` (olb/grid/reporting/leaderboard.py)."""
    from olb.grid.reporting.leaderboard import write_report
    from olb.grid.planning.plan import RUNTIME_COLUMNS

    ranked = {m: lower for m, lower in plan.lower_is_better.items() if m not in RUNTIME_COLUMNS}
    try:
        return write_report(table, cells, ranked, out_dir)
    except Exception as err:  # noqa: BLE001 - a report never fails a grid; say why it is missing
        log.warning("olb.grid: leaderboard failed: %s: %s", type(err).__name__, err)
        return f"## Leaderboard\n\nnot written: {type(err).__name__}: {err}\n", []


def write_plots(
    plan: Plan,
    outcomes: dict[str, CellOutcome],
    table: pd.DataFrame,
    cells: pd.DataFrame,
    recorded_curve: CurveSource,
    plot_dir: Path,
) -> list[Path]:
    from olb.grid.reporting import plots

    plot_dir.mkdir(parents=True, exist_ok=True)

    def curve_of(cell: Cell, out: CellOutcome) -> dict[str, list[float]] | None:
        if out.curve:
            return out.curve
        if out.run_id:
            try:
                return recorded_curve(out.run_id, out.primary_metric or cell.metrics[0])
            except Exception:  # noqa: BLE001 - a missing curve only thins a plot
                return None
        return None

    try:
        paths = plots.learning_curves(plan, outcomes, table, curve_of, plot_dir)
        paths += plots.sweeps(plan, cells, plot_dir)
    except Exception as err:  # noqa: BLE001 - plots never fail a grid
        log.warning("olb.grid: plots failed: %s", err)
        paths = []
    if not paths:
        try:
            plot_dir.rmdir()
        except OSError:
            pass
    return paths


def comparability_notes(table: pd.DataFrame | None) -> list[str]:
    """table.md's "not comparable: paper ..." notes, one line per (data set, algorithm, metric) that has one."""
    if table is None or "note" not in table.columns:
        return []
    notes = table[table["note"].fillna("").astype(str).str.startswith("not comparable")]
    return [f"{r.dataset} {r.algorithm} {r.metric}: {r.note}" for r in notes.itertuples()]


def plan_against_measured(o: GridOutcome) -> str:
    """The cost model's CPU seconds for the cells run against what they took, and the load they ran at (the plan
    assumes an idle CPU per cell, so a loaded machine's wall time is longer than planned)."""
    ratio = f" ({o.cpu_s / o.planned_cpu_s:.2f}x the plan)" if o.planned_cpu_s > 0 else ""
    return (
        f"olb.grid: the {o.n_run} cell(s) run: planned ~{seconds_text(o.planned_cpu_s)} CPU s (an idle CPU per "
        f"cell), measured {seconds_text(o.cpu_s)} CPU s{ratio} and {seconds_text(o.compile_s)} s building or loading "
        f"kernels; fan-out {seconds_text(o.fanout_s)} s wall on {o.cpus} CPU(s) at load {os.getloadavg()[0]:.1f}"
    )


def print_report(o: GridOutcome, markdown: str, cfg: GridBase, efficiency: float, stream: TextIO) -> None:
    pivot = markdown.split("## All values")[0].strip()
    print("\n" + pivot + "\n", file=stream)
    notes = comparability_notes(o.table)
    if notes:
        print(f"olb.grid: {len(notes)} value(s) without the paper's beside them (settings differ):", file=stream)
        for line in notes:
            print(f"  {line}", file=stream)
    eff = "" if math.isnan(efficiency) else f", fan-out efficiency {efficiency:.0%}"
    print(
        f"olb.grid: {len(o.plan.unique_cells)} cells: {o.n_run} run, {o.n_resumed} resumed, {o.n_failed} failed, "
        f"{o.n_unavailable} unavailable; wall {o.wall_s:.1f} s (start-up {o.startup_s:.1f} s{eff})",
        file=stream,
    )
    if o.n_run:
        print(plan_against_measured(o), file=stream)
    for name, path in o.files.items():
        print(f"olb.grid: {name:<9} {path}", file=stream)
    if o.tracking_uri:
        print(
            f"olb.grid: MLflow    {o.tracking_uri} (experiment {cfg.tracking.experiment or 'olb/' + cfg.name!r}, "
            f"parent run {o.parent_run_id})",
            file=stream,
        )
    if o.tracking_uri and o.ui_page:
        print(f"olb.grid: UI        {how_to_open(o.tracking_uri, o.ui_page)}", file=stream)
    failed = o.cells[o.cells["status"] == Status.FAILED].drop_duplicates("cell_id")
    if len(failed):
        print(f"olb.grid: {len(failed)} FAILED cell(s) (tracebacks in their MLflow runs, traceback.txt):", file=stream)
        for _, r in failed.iterrows():
            print(f"  {r['cell_id']} {r['algorithm']} {r['dataset']} seed={r['seed']}: {r['error']}", file=stream)
    if o.untracked:
        print(
            f"olb.grid: {len(o.untracked)} finished cell(s) could not be recorded in MLflow (in cells.csv only; "
            "a rerun runs them again)",
            file=stream,
        )
    if o.exit_code == EXIT_INTERRUPTED:
        print("olb.grid: interrupted; rerun the same command to complete the grid", file=stream)
    if o.exit_code == EXIT_UNAVAILABLE:
        print(
            f"olb.grid: exit {EXIT_UNAVAILABLE}: {o.n_unavailable} cell(s) unavailable (no data); put their files in "
            "the data dir and rerun, or say allow_unavailable=true on the command line to accept the grid without them",
            file=stream,
        )
    if o.exit_code == EXIT_LOST:
        print("olb.grid: ended early (see the error above); rerun the same command to complete the grid", file=stream)
    stream.flush()
