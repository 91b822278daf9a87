"""The dry run (``dry_run=true``): what a grid would do, worked out without doing any of it.

The same checks as a run (:func:`olb.grid.driver.stages.prepare`: configs, registry, data files; a refusal is the same
GridConfigError, exit 2, every culprit at once), then per data set and algorithm entry how many cells would run
and how many would resume from the tracking store (opened read-only: nothing created, closed or written), the
planned CPU (:mod:`olb.grid.planning.cost`), the backend ``backend=auto`` would choose, and the cells of largest predicted
memory. Nothing is downloaded (a data set that would be is named with its URLs), no Ray is started, nothing is
recorded and no output folder is written; :func:`print_dry_run` prints it.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator
from typing import TextIO
from dataclasses import dataclass, field


from olb.grid.running.backends import choose_backend
from olb.grid.planning.config import GridBase, cluster_address
from olb.grid.planning.cost import planned_memory_by_cell, planned_work_by_pair, refuse_oversized
from olb.grid.driver.crossval import _candidates, cv_task, selected_entries
from olb.grid.datacheck import DataCheck
from olb.grid.reporting.markdown import md_table, seconds_text
from olb.grid.messages import CellOutcome
from olb.grid.planning.plan import Cell, Plan
from olb.grid.recording.recorder import code_version, resumed_outcomes, tracker_class
from olb.grid.selection import SelectionSettings
from olb.grid.driver.stages import prepare
from olb.grid.recording.tracker import Tracker
from olb.grid.recording.tracking_noop import NoopTracker

LARGEST = 5  # settings listed by predicted peak memory


@dataclass
class PairPlan:
    """One (data set, algorithm entry) of the dry run. ``cells``: what runs or resumes (for a cross-validated
    entry the chosen setting's, one of ``candidates``); ``resume``: finished earlier on the same data;
    ``cpu_s``/``tasks``: the planned work (every cell, finished ones too, as ``backend=auto`` weighs it);
    ``peak_mb``: the largest predicted peak memory of its cells."""

    dataset: str
    entry: str
    label: str
    settings: int
    seeds: int
    cells: int
    resume: int
    cpu_s: float
    tasks: int
    peak_mb: float
    candidates: int = 0  # cross-validated settings (0: no cross-validation)
    status: str = ""  # "unavailable", "would download" or ""

    @property
    def run(self) -> int:
        return 0 if self.status == "unavailable" else self.cells - self.resume


@dataclass
class DryRun:
    """What :func:`dry_run` found; ``exit_code`` 0 (a refusal raises GridConfigError instead)."""

    plan: Plan
    data: DataCheck
    pairs: list[PairPlan]
    backend: str
    backend_reason: str
    store: str  # the tracking store read, and what it held
    largest: list[tuple[float, Cell]]
    cv_tasks: int = 0
    cv_resume: int = 0
    memory_note: str = ""
    wall_s: float = 0.0
    exit_code: int = 0
    resumed: dict = field(default_factory=dict)  # cell id -> the outcome it would resume with


def dry_run(cfg: GridBase) -> DryRun:
    """The dry run of ``cfg``; GridConfigError for what a run would refuse before any work."""
    t0 = time.perf_counter()
    plan, data = prepare(cfg, download=False)
    seconds_tasks = planned_work_by_pair(plan, data.unavailable)
    work_s = sum(s for s, _ in seconds_tasks.values())
    backend, reason = choose_backend(cfg.backend, work_s, sum(t for _, t in seconds_tasks.values()))
    memory_note = _check_memory(cfg, plan, data, backend)
    tracker, store = read_only_tracker(cfg)
    selected = selected_entries(plan)
    chosen_later = {c.cell_id for c in plan.cells if c.entry in selected}  # resume decided after the choice
    resumed = {cid: out for cid, out in resumed_outcomes(tracker, cfg, plan, data).items() if cid not in chosen_later}
    cv_tasks, cv_resume = _cross_validation(plan, data, selected, tracker, cfg.resume)
    memory = planned_memory_by_cell(plan, data.unavailable)
    largest = _largest(memory)
    peak: dict[tuple[str, str], float] = {}
    for cell, mb in memory:
        peak[(cell.dataset, cell.entry)] = max(mb, peak.get((cell.dataset, cell.entry), 0.0))
    pairs = [
        _pair(plan, data, key, cells, resumed, seconds_tasks.get(key, (0.0, 0)), peak, selected)
        for key, cells in _in_table_order(plan)
    ]
    result = DryRun(plan, data, pairs, backend, reason, store, largest, cv_tasks, cv_resume, memory_note)
    result.resumed = resumed
    result.wall_s = time.perf_counter() - t0
    return result


def read_only_tracker(cfg: GridBase) -> tuple[Tracker, str]:
    """The tracking store opened read-only, and what it holds: nothing when tracking is off, with ``resume=false``
    (not read), or when the store does not exist (nothing resumes, and nothing is created)."""
    name = cfg.tracking.experiment or f"olb/{cfg.name}"
    cls = tracker_class(cfg.tracking)
    if not cfg.resume and cls is not NoopTracker:
        return NoopTracker(cfg.tracking, name), "resume=false: nothing resumes (the tracking store is not read)"
    tracker = cls(cfg.tracking, name, code_version(), read_only=True)
    return tracker, tracker.holds()


def _check_memory(cfg: GridBase, plan: Plan, data: DataCheck, backend: str) -> str:
    """The run's refusal of cells too big for any Ray node, where the dry run knows the nodes: a local Ray given
    ``backend.memory_mb``. Otherwise what decides it."""
    if backend != "ray":
        return ""
    if cfg.backend.memory_mb and not cluster_address(cfg.backend):
        refuse_oversized(cfg, plan, data.unavailable, float(cfg.backend.memory_mb))
        return f"every cell fits the local Ray's backend.memory_mb={cfg.backend.memory_mb}"
    return "cells bigger than the largest Ray node are refused once Ray has started (its nodes' memory)"


def _cross_validation(
    plan: Plan, data: DataCheck, selected: dict[str, SelectionSettings], tracker: Tracker, resume: bool
) -> tuple[int, int]:
    """Cross-validation tasks the run would plan (one per candidate setting and available data set), and how many
    finished earlier on the same data."""
    if not selected:
        return 0, 0
    from olb.grid.recording.cvstore import finished_tasks

    candidates = {key: cells for key, cells in _candidates(plan, selected).items() if key[1] not in data.unavailable}
    tasks = {}  # those on data read here (a data set to download has no fingerprint yet: its tasks all run)
    for (entry, dataset), cells in candidates.items():
        if dataset in data.sources:
            for cell in cells:
                task = cv_task(cell, dataset, data.sources[dataset].fingerprint, selected[entry])
                tasks[task.task_id] = task
    n_resume = len(finished_tasks(tracker, tasks, data)) if resume and tasks else 0
    return sum(len(cells) for cells in candidates.values()), n_resume


def _in_table_order(plan: Plan) -> Iterator[tuple[tuple[str, str], list[Cell]]]:
    for ds in plan.datasets:
        for entry in plan.entries:
            if (entry, ds) in plan.cells_by_pair:
                yield (entry, ds), plan.cells_by_pair[(entry, ds)]


def _pair(
    plan: Plan,
    data: DataCheck,
    key: tuple[str, str],
    cells: list[Cell],
    resumed: dict[str, CellOutcome],
    work: tuple[float, int],
    peak: dict[tuple[str, str], float],
    selected: dict[str, SelectionSettings],
) -> PairPlan:
    entry, dataset = key
    unique = list({c.cell_id: c for c in cells}.values())
    settings = len({(tuple(sorted(c.params.items())), c.loops) for c in unique})
    seeds = len({c.seed for c in unique})
    candidates = settings if entry in selected else 0
    n_cells = math.ceil(len(unique) / settings) if candidates else len(unique)
    status = "unavailable" if dataset in data.unavailable else "would download" if dataset in data.to_download else ""
    resume = sum(1 for c in unique if c.cell_id in resumed)
    label = plan.entries[entry]["label"]
    return PairPlan(
        dataset,
        entry,
        label,
        settings,
        seeds,
        n_cells,
        resume,
        work[0],
        work[1],
        peak.get((dataset, entry), 0.0),
        candidates,
        status,
    )


def _largest(memory: list[tuple[Cell, float]]) -> list[tuple[float, Cell]]:
    """The settings (label on data set) of largest predicted peak memory, largest first."""
    by_setting: dict[tuple[str, str], tuple[float, Cell]] = {}
    for cell, mb in memory:
        key = (cell.config_label, cell.dataset)
        if key not in by_setting or mb > by_setting[key][0]:
            by_setting[key] = (mb, cell)
    return sorted(by_setting.values(), key=lambda pair: -pair[0])[:LARGEST]


def print_dry_run(d: DryRun, cfg: GridBase, stream: TextIO) -> None:
    """The dry run (olb/grid/driver/dryrun.py): the grid, its data, backend, memory and resume, one row per data set and
    algorithm entry, the largest cells by predicted memory, the totals."""
    say = functools.partial(print, file=stream)
    say(f"olb.grid: dry run of experiment {cfg.name!r}: nothing is run, downloaded or recorded")
    _print_inputs(d, say)
    cells, resume, run = sum(p.cells for p in d.pairs), sum(p.resume for p in d.pairs), sum(p.run for p in d.pairs)
    cpu_s, tasks = sum(p.cpu_s for p in d.pairs), sum(p.tasks for p in d.pairs)
    peak = max((p.peak_mb for p in d.pairs), default=0.0)
    total = ["all", "", "", "", f"{cells:,}", f"{resume:,}", f"{run:,}", seconds_text(cpu_s), f"{peak:,.0f}", ""]
    say("\n" + _pairs_table(d, total))
    say(
        "\nCPU s: the planned work (olb/grid/planning/cost.py) of every cell, finished ones too, and of the "
        "cross-validation folds, on an idle CPU per cell (a loaded machine takes longer); peak MB: the largest "
        "predicted peak memory of a cell."
    )
    if d.largest:
        say("\nLargest cells by predicted peak memory:")
        for mb, cell in d.largest:
            params = ", ".join(f"{k}={v}" for k, v in cell.params.items())
            say(f"  {mb:8,.0f} MB  {cell.config_label} on {cell.dataset} ({cell.algorithm}: {params})")
    unavailable = sum(p.cells for p in d.pairs if p.status == "unavailable")
    say(
        f"\nolb.grid: dry run: {run:,} cell(s) would run, {resume:,} would resume, {unavailable:,} unavailable; "
        f"planned {seconds_text(cpu_s)} CPU s ({cpu_s / 3600:.2f} CPU h, assuming an idle CPU per cell) in "
        f"{tasks:,} task(s); {d.wall_s:.1f} s",
    )
    stream.flush()


def _print_inputs(d: DryRun, say: Callable[[str], None]) -> None:
    """The dry run's first lines: the cells, warnings, data, backend, memory and resume."""
    plan, data = d.plan, d.data
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


def _pairs_table(d: DryRun, total: list[str]) -> str:
    """One row per data set and algorithm entry, then ``total``."""
    rows = [
        [
            p.dataset,
            p.label,
            f"{p.settings:,}",
            f"{p.seeds:,}",
            f"{p.cells:,}",
            f"{p.resume:,}",
            f"{p.run:,}",
            seconds_text(p.cpu_s),
            f"{p.peak_mb:,.0f}",
            _pair_note(p, d.plan),
        ]
        for p in d.pairs
    ]
    header = ["data set", "algorithm", "settings", "seeds", "cells", "resume", "run", "CPU s", "peak MB", "note"]
    return md_table(header, [*rows, total])


def _pair_note(p: PairPlan, plan: Plan) -> str:
    notes = [p.status] if p.status else []
    if p.candidates:
        select = plan.entries[p.entry]["select"]
        notes.append(
            f"1 of {p.candidates} settings, chosen by cross-validation ({select['folds']} folds): resume decided then"
        )
    return "; ".join(notes)
