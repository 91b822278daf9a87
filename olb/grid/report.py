"""Reporting: the leaderboard, the plots and the console summary of a finished grid, and of a dry run."""

from __future__ import annotations

import functools
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from omegaconf import DictConfig

from olb.grid.markdown import md_table
from olb.grid.plan import Cell, Plan
from olb.grid.messages import EXIT_INTERRUPTED, EXIT_LOST, EXIT_UNAVAILABLE, CellOutcome, GridOutcome, Status

if TYPE_CHECKING:
    import pandas as pd

    from olb.grid.dryrun import DryRun, PairPlan
    from olb.grid.tracker import Tracker

log = logging.getLogger("olb.grid")


def write_leaderboard(plan: Plan, table: pd.DataFrame, cells: pd.DataFrame, out_dir: Path) -> tuple[str, list[Path]]:
    """Mean ranks, critical-difference diagrams and runtime plots of ``table`` (olb/grid/leaderboard.py)."""
    from olb.grid.leaderboard import write_report
    from olb.grid.plan import RUNTIME_COLUMNS

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
    tracker: Tracker,
    plot_dir: Path,
) -> list[Path]:
    from olb.grid import plots

    plot_dir.mkdir(parents=True, exist_ok=True)

    def curve_of(cell: Cell, out: CellOutcome) -> dict[str, list[float]] | None:
        if out.curve:
            return out.curve
        if out.run_id:
            try:
                return tracker.curve(out.run_id, out.primary_metric or cell.metrics[0])
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


def print_report(o: GridOutcome, markdown: str, cfg: DictConfig, efficiency: float, stream: TextIO) -> None:
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
    for name, path in o.files.items():
        print(f"olb.grid: {name:<9} {path}", file=stream)
    if o.tracking_uri:
        print(
            f"olb.grid: MLflow    {o.tracking_uri} (experiment {cfg.tracking.experiment or 'olb/' + cfg.name!r}, "
            f"parent run {o.parent_run_id})",
            file=stream,
        )
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


def print_dry_run(d: DryRun, cfg: DictConfig, stream: TextIO) -> None:
    """The dry run (olb/grid/dryrun.py): the grid, its data, backend, memory and resume, one row per data set and
    algorithm entry, the largest cells by predicted memory, the totals."""
    plan, data = d.plan, d.data
    say = functools.partial(print, file=stream)
    say(f"olb.grid: dry run of experiment {cfg.name!r}: nothing is run, downloaded or recorded")
    say(
        f"olb.grid: {len(plan.cells):,} cells ({len(plan.unique_cells):,} unique) of {len(plan.entries)} algorithm "
        f"entries on {len(plan.datasets)} data set(s)"
    )
    cells = sum(p.cells for p in d.pairs)
    if cells != len(plan.unique_cells):
        say(f"olb.grid: {cells:,} cells once cross-validation has chosen one setting per data set and entry")
    for warning in plan.warnings:
        say(f"olb.grid: warning: {warning}")
    if data.sources:
        say(f"olb.grid: data read and checked: {', '.join(data.sources)}")
    for name, urls in data.to_download.items():
        say(f"olb.grid: data set {name!r} would be downloaded ({len(urls)} file(s): {', '.join(urls)})")
    for name, why in data.unavailable.items():
        say(f"olb.grid: data set {name!r} is unavailable (allow_unavailable=true: its cells are marked so): {why}")
    say(f"olb.grid: backend {d.backend}: {d.backend_reason}")
    if d.memory_note:
        say(f"olb.grid: memory: {d.memory_note}")
    say(f"olb.grid: resume: {d.store}")
    if d.cv_tasks:
        say(
            f"olb.grid: cross-validation: {d.cv_tasks:,} task(s) (one per candidate setting and data set), "
            f"{d.cv_resume:,} finished earlier"
        )
    rows = [
        [
            p.dataset,
            p.label,
            f"{p.settings:,}",
            f"{p.seeds:,}",
            f"{p.cells:,}",
            f"{p.resume:,}",
            f"{p.run:,}",
            _seconds_text(p.cpu_s),
            f"{p.peak_mb:,.0f}",
            _pair_note(p, plan),
        ]
        for p in d.pairs
    ]
    resume, run = sum(p.resume for p in d.pairs), sum(p.run for p in d.pairs)
    cpu_s, tasks = sum(p.cpu_s for p in d.pairs), sum(p.tasks for p in d.pairs)
    peak = max((p.peak_mb for p in d.pairs), default=0.0)
    rows.append(["all", "", "", "", f"{cells:,}", f"{resume:,}", f"{run:,}", _seconds_text(cpu_s), f"{peak:,.0f}", ""])
    header = ["data set", "algorithm", "settings", "seeds", "cells", "resume", "run", "CPU s", "peak MB", "note"]
    say("\n" + md_table(header, rows))
    say(
        "\nCPU s: the planned work (olb/grid/cost.py) of every cell, finished ones too, and of the cross-validation "
        "folds; peak MB: the largest predicted peak memory of a cell."
    )
    if d.largest:
        say("\nLargest cells by predicted peak memory:")
        for mb, cell in d.largest:
            params = ", ".join(f"{k}={v}" for k, v in cell.params.items())
            say(f"  {mb:8,.0f} MB  {cell.config_label} on {cell.dataset} ({cell.algorithm}: {params})")
    unavailable = sum(p.cells for p in d.pairs if p.status == "unavailable")
    say(
        f"\nolb.grid: dry run: {run:,} cell(s) would run, {resume:,} would resume, {unavailable:,} unavailable; "
        f"planned {_seconds_text(cpu_s)} CPU s ({cpu_s / 3600:.2f} CPU h) in {tasks:,} task(s); {d.wall_s:.1f} s",
    )
    stream.flush()


def _pair_note(p: PairPlan, plan: Plan) -> str:
    notes = [p.status] if p.status else []
    if p.candidates:
        select = plan.entries[p.entry]["select"]
        notes.append(
            f"1 of {p.candidates} settings, chosen by cross-validation ({select['folds']} folds): resume decided then"
        )
    return "; ".join(notes)


def _seconds_text(seconds: float) -> str:
    return f"{seconds:,.0f}" if seconds >= 100 else f"{seconds:.2g}"
