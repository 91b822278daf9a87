"""``python -m olb.grid``: plan, check, fan out, record, report.

From Python (tests, notebooks)::

    from olb.grid import compose, run_grid
    cfg = compose(["datasets=[emotions]", "seeds=2", "num_learners=3", "backend=serial"])
    outcome = run_grid(cfg, "outputs/try")
    outcome.table  # pandas DataFrame of table.csv
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

import olb
from olb.data import dataset_names
from olb.grid.backends import choose_backend, make_backend
from olb.grid.config import register_configs
from olb.grid.coverage import cover, with_summary
from olb.grid.datacheck import FILES_TAG, FINGERPRINT_TAG, DataCheck, check_data, matches_data, provenance_tags
from olb.grid.fanout import fan_out
from olb.grid.plan import Cell, GridConfigError, Plan, Problems, collect_plan, describe
from olb.grid.results import (
    build_table,
    cells_frame,
    comparable_entries,
    grid_title,
    outcome_from_payload,
    outcome_from_run,
    table_markdown,
)
from olb.registry import get_algorithm

log = logging.getLogger("olb.grid")

# 1: some cell failed (or could not be recorded); 2: refused before start; 3: no cell failed but none has a
# result either (every data set unavailable); 130: interrupted.
EXIT_OK, EXIT_FAILED_CELLS, EXIT_CONFIG, EXIT_NOTHING_COMPUTED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass
class GridOutcome:
    exit_code: int
    output_dir: Path
    cells: pd.DataFrame
    table: pd.DataFrame
    plan: Plan
    n_run: int = 0
    n_resumed: int = 0
    n_failed: int = 0
    n_unavailable: int = 0
    wall_s: float = 0.0
    startup_s: float = 0.0
    fanout_s: float = 0.0  # wall time from the first submitted cell to the last result
    efficiency: float = math.nan  # sum of cell runtimes / (CPUs x fanout_s)
    cpus: int = 1
    parent_run_id: str | None = None
    tracking_uri: str | None = None
    files: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    untracked: list = field(default_factory=list)  # cells that finished but could not be logged to MLflow


def code_version() -> str:
    """olb's version and, in a git checkout, the commit (+dirty). Read-only git calls."""
    version = olb.__version__
    repo = Path(olb.__file__).resolve().parents[1]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=5, env=env
        )
        if sha.returncode == 0 and sha.stdout.strip():
            dirty = (
                subprocess.run(
                    ["git", "diff-index", "--quiet", "HEAD", "--"], cwd=repo, capture_output=True, timeout=5, env=env
                ).returncode
                != 0
            )
            return f"{version}+g{sha.stdout.strip()}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        pass
    return version


def compose(overrides: list[str] | None = None) -> DictConfig:
    """The grid config for ``overrides`` (as on the command line), through Hydra's compose API."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_configs()
    overrides = with_default_experiment(list(overrides or []))
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(olb.conf_dir()), version_base="1.3", job_name="olb.grid"):
        return hydra_compose(config_name="config", overrides=overrides)


def with_default_experiment(overrides: list[str]) -> list[str]:
    """Append ``+experiment=default`` unless an experiment is chosen."""
    chosen = any(o.lstrip("+~").startswith("experiment=") or o.lstrip("~") == "experiment" for o in overrides)
    return overrides if chosen else [*overrides, "+experiment=default"]


def _cell_task(cell, cfg: DictConfig, data_dir, plot: bool) -> dict:
    return {
        "cell_id": cell.cell_id,
        "spec": cell.spec_dict(data_dir, cfg.verify_checksums),
        "imports": list(cfg.imports),
        "plot": plot,
        "title": f"{cell.run_name} ({cell.cell_id})",
    }


def grid_data_dir(cfg: DictConfig):
    """``data_dir`` of the grid (a string, several joined by os.pathsep, or a list), else ``$OLB_DATA_DIR``."""
    return _plain_value(cfg.data_dir) or os.environ.get("OLB_DATA_DIR") or None


def _plain_value(value):
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value


def prepare(cfg: DictConfig) -> tuple[Plan, DataCheck]:
    """Plan the grid and check its data; every problem of both, or GridConfigError (nothing started yet)."""
    problems = Problems()
    plan = collect_plan(cfg, problems)
    datasets = (
        plan.datasets if plan is not None else [d for d in (_plain_value(cfg.datasets) or []) if d in dataset_names()]
    )
    data = check_data(list(dict.fromkeys(datasets)), grid_data_dir(cfg), cfg.verify_checksums, problems)
    if data.unavailable and not cfg.allow_unavailable:
        lines = "; ".join(f"{name}: {msg}" for name, msg in data.unavailable.items())
        problems.add(
            f"{len(data.unavailable)} data set(s) unavailable: {lines} Put the files there, or rerun "
            "with allow_unavailable=true to run the rest of the grid (their cells are marked unavailable), "
            "or drop them with datasets=[...]."
        )
    problems.raise_if_any()
    return plan, data


def open_tracker(cfg: DictConfig, version: str):
    """The MLflow tracker (None with tracking off); GridConfigError if the store cannot be opened."""
    if not cfg.tracking.enabled:
        return None
    from olb.grid.tracking import Tracker

    try:
        tracker = Tracker(cfg.tracking, cfg.tracking.experiment or f"olb/{cfg.name}", version)
        tracker.mark_stale_parents()
    except Exception as err:  # noqa: BLE001 - unreachable server, unwritable file, bad URI
        raise GridConfigError(
            f"tracking.uri={cfg.tracking.uri or 'default'}: cannot open the MLflow tracking "
            f"store: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''} "
            "(tracking=off runs without MLflow)"
        ) from None
    return tracker


def planned_stream(algorithm: str, params: dict, dataset: str, loops: int = 1) -> tuple[float, int, int]:
    """``(cost per example, training rows, rows of the stream)`` of one cell as the grid plans it: the learner's
    ``cost_per_example_s`` (resolved ``params``) on the data set's registered shape, and a stream of ``loops``
    passes over the training rows (every row when the data set has no split) then the test rows."""
    from olb.data import dataset_spec
    from olb.learners.base import StreamShape

    spec = dataset_spec(dataset)
    n_train = spec.n_train or spec.shape.n_examples
    cost = get_algorithm(algorithm).cost_per_example_s(
        params, StreamShape(spec.shape.n_features, spec.shape.n_labels, n_train)
    )
    return cost, n_train, loops * n_train + spec.shape.n_examples - n_train


def planned_work(plan: Plan, unavailable=()) -> tuple[float, int]:
    """Rough CPU seconds and number of tasks of ``plan`` (for ``backend=auto``): every cell, finished ones too
    (resume is known only once the store is open), none on the ``unavailable`` data sets; for a cross-validated
    entry, every candidate's folds (each fold streams the training split once: 9/10 learned, 1/10 tested)
    and one candidate's cells (the average candidate's)."""
    settings: dict[tuple[str, str], dict[str, list[Cell]]] = {}  # (entry, data set) -> setting -> its cells
    for cell in plan.unique_cells:
        if cell.dataset not in unavailable:
            key = json.dumps([cell.params, cell.loops], sort_keys=True, default=str)
            settings.setdefault((cell.entry, cell.dataset), {}).setdefault(key, []).append(cell)
    seconds, tasks = 0.0, 0
    for (entry, dataset), candidates in settings.items():
        streams = [
            (planned_stream(cells[0].algorithm, cells[0].params, dataset, cells[0].loops), len(cells))
            for cells in candidates.values()
        ]
        cells_s = sum(cost * rows * n for (cost, _, rows), n in streams)
        n_cells = sum(n for _, n in streams)
        select = plan.entries[entry].get("select")
        if select:
            seconds += sum(cost * n_train * select["folds"] for (cost, n_train, _), _ in streams)
            tasks += len(streams)
            cells_s, n_cells = cells_s / len(streams), math.ceil(n_cells / len(streams))
        seconds += cells_s
        tasks += n_cells
    return seconds, tasks


def choose(cfg: DictConfig, plan: Plan, unavailable=()):
    """The backend for ``plan`` (``backend=auto`` chooses, see olb.grid.backends.choose_backend) and why; the
    cells of ``unavailable`` data sets are no work."""
    work_s, n_tasks = planned_work(plan, unavailable)
    name, reason = choose_backend(cfg.backend, work_s, n_tasks)
    log.info("olb.grid: backend %s: %s", name, reason)
    return make_backend(cfg.backend, name), reason


def start_tracker_and_backend(cfg: DictConfig, backend):
    """Open the MLflow store (in a thread) while a local Ray starts (in this, the main thread: the processes Ray
    starts die with the thread that started them); the tracker, or GridConfigError with nothing left running."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        opening = pool.submit(open_tracker, cfg, code_version())
        try:
            if backend.name == "ray":
                backend.start()
                log.info("olb.grid: Ray ready in %.1f s with %d CPU(s)", backend.startup_s, backend.cpus)
        finally:
            try:
                tracker = opening.result()
            except GridConfigError:
                backend.stop()
                raise
    return tracker


def cross_validate(cfg: DictConfig, plan: Plan, data: DataCheck, tracker, backend):
    """The selection stage (olb/grid/crossval.py) for the entries with ``select``: the plan restricted to the
    chosen settings, the choices, the stage's statistics and the rows it could not choose for (nothing to do:
    the plan unchanged)."""
    selected = {key: info["select"] for key, info in plan.entries.items() if info.get("select")}
    if not selected:
        return plan, [], {}, {}
    from olb.grid.crossval import run_selection

    plan, choices, stats, unselected = run_selection(
        plan,
        selected,
        data,
        backend,
        tracker,
        Path(cfg.selection_store),
        grid_data_dir(cfg),
        list(cfg.imports),
        cfg.verify_checksums,
        fan_out,
    )
    log.info(
        "olb.grid: cross-validation: %d task(s), %d run, %d resumed, %d failed, %.1f s wall",
        stats["cv_tasks"],
        stats["cv_run"],
        stats["cv_resumed"],
        stats["cv_failed"],
        stats["cv_wall_s"],
    )
    for choice in choices:
        log.info(
            "olb.grid: %s on %s: %s (%s)",
            choice.entry,
            choice.dataset,
            ", ".join(f"{k}={v}" for k, v in choice.params.items()),
            choice.reason,
        )
    return plan, choices, stats, unselected


def resumed_outcomes(tracker, cfg: DictConfig, plan: Plan, data: DataCheck) -> dict[str, dict]:
    """Finished runs of earlier invocations computed from today's data (see ``matches_data``)."""
    if tracker is None or not cfg.resume:
        return {}
    by_id = {c.cell_id: c for c in plan.unique_cells}

    def same_cell_same_data(run) -> bool:
        cell = by_id.get(run.cell_id)
        return cell is not None and matches_data(run.tags, data.sources.get(cell.dataset))

    return {cid: outcome_from_run(run, by_id[cid]) for cid, run in tracker.finished_cells(same_cell_same_data).items()}


class _Recorder:
    """The driver's handler of each cell result: MLflow child run, outcome, a periodic cells.csv."""

    def __init__(self, plan: Plan, data: DataCheck, tracker, outcomes: dict, out: Path):
        self.plan, self.data, self.tracker, self.outcomes, self.out = plan, data, tracker, outcomes, out
        self.by_id = {c.cell_id: c for c in plan.unique_cells}
        self.failures: list[tuple[str, str]] = []
        self.untracked: list[str] = []
        self.last_write = time.perf_counter()

    def __call__(self, payload: dict) -> None:
        cell = self.by_id[payload["cell_id"]]
        tags = provenance_tags(self.data.sources[cell.dataset])
        if payload.get("data_fingerprint", tags[FINGERPRINT_TAG]) != tags[FINGERPRINT_TAG]:
            log.warning(
                "olb.grid: cell %s read other data than planned (files changed during the grid): "
                "fingerprint %s, planned %s; its run records what it read",
                cell.cell_id,
                payload["data_fingerprint"],
                tags[FINGERPRINT_TAG],
            )
            tags = {FINGERPRINT_TAG: payload["data_fingerprint"], FILES_TAG: payload["data_files"]}
        run_id = None
        if self.tracker is not None:
            try:
                run_id = self.tracker.log_cell(cell, payload, tags)
            except Exception as err:  # noqa: BLE001 - keep the grid going; the result stays in cells.csv
                self.untracked.append(cell.cell_id)
                log.error(
                    "olb.grid: could not record cell %s in MLflow (%s: %s); a rerun will run it again",
                    cell.cell_id,
                    type(err).__name__,
                    err,
                )
        self.outcomes[cell.cell_id] = outcome_from_payload(payload, run_id)
        if payload["status"] != "FINISHED":
            self.failures.append((cell.run_name, payload.get("traceback") or payload.get("error", "")))
            log.error("olb.grid: cell %s (%s) FAILED: %s", cell.cell_id, cell.run_name, payload.get("error"))
        if time.perf_counter() - self.last_write > 10:  # a local copy of the progress, besides MLflow
            cells_frame(self.plan, self.outcomes, self.data).to_csv(self.out / "cells.csv", index=False)
            self.last_write = time.perf_counter()


def run_grid(
    cfg: DictConfig, output_dir: str | os.PathLike, overrides: list[str] | None = None, stream=None
) -> GridOutcome:
    """Run every cell of ``cfg`` not finished yet, record them, and write cells.csv, table.csv/.md, plots.

    Raises GridConfigError before any work (no output folder, no MLflow run) when the config or the data is
    invalid, listing every problem. ``overrides`` (the command line's) decide the table's title and which
    entries still have the experiment file's settings (only those are shown beside the paper's values).
    """
    t_start = time.perf_counter()
    plan, data = prepare(cfg)
    for warning in plan.warnings:
        log.warning("warning: %s", warning)
    for name, msg in data.unavailable.items():
        log.warning(
            "olb.grid: data set %r is unavailable; its cells are marked unavailable (allow_unavailable=true): %s",
            name,
            msg,
        )
    backend, backend_reason = choose(cfg, plan, data.unavailable)
    tracker = start_tracker_and_backend(cfg, backend)
    try:  # every stage runs on the one backend, stopped once at the end
        return _run_stages(
            cfg,
            plan,
            data,
            backend,
            backend_reason,
            tracker,
            Path(output_dir),
            overrides,
            stream or sys.stdout,
            t_start,
        )
    finally:
        backend.stop()


def _run_stages(
    cfg, plan, data, backend, backend_reason, tracker, out: Path, overrides, stream, t_start
) -> GridOutcome:
    """Cross-validation, resume, fan-out and the report, on a started backend."""
    out.mkdir(parents=True, exist_ok=True)
    log.info(
        "olb.grid: experiment %r, %d cells (%d unique) on %d data set(s)\n%s",
        cfg.name,
        len(plan.cells),
        len(plan.unique_cells),
        len(plan.datasets),
        describe(plan),
    )

    plan, choices, cv_stats, unselected = cross_validate(cfg, plan, data, tracker, backend)
    unique = plan.unique_cells
    outcomes = resumed_outcomes(tracker, cfg, plan, data)
    n_resumed = len(outcomes)
    for c in unique:
        if c.dataset in data.unavailable and c.cell_id not in outcomes:
            outcomes[c.cell_id] = {
                "status": "UNAVAILABLE",
                "error": data.unavailable[c.dataset],
                "metrics": {},
                "source": "",
            }
        elif (c.entry, c.dataset) in unselected:
            outcomes[c.cell_id] = {
                "status": "FAILED",
                "error": unselected[(c.entry, c.dataset)],
                "metrics": {},
                "source": "",
            }
    n_unavailable = sum(1 for o in outcomes.values() if o["status"] == "UNAVAILABLE")
    todo = [c for c in unique if c.cell_id not in outcomes]
    data_dir = grid_data_dir(cfg)
    tasks = [_cell_task(c, cfg, data_dir, bool(tracker is not None and cfg.tracking.cell_artifacts)) for c in todo]
    log.info(
        "olb.grid: %d to run, %d already finished (resume=%s), %d unavailable; output: %s",
        len(todo),
        n_resumed,
        cfg.resume,
        n_unavailable,
        out,
    )

    parent_id = None
    if tracker is not None:
        params = {
            "experiment": cfg.name,
            "n_cells": len(plan.cells),
            "n_unique_cells": len(unique),
            "n_to_run": len(todo),
            "n_resumed": n_resumed,
            "algorithms": ",".join(cfg.algorithms),
            "datasets": ",".join(plan.datasets),
            "seeds": str(_plain_value(cfg.seeds)),
            "backend": backend.name,
            "resume": cfg.resume,
            "verify_checksums": cfg.verify_checksums,
        }
        tags = {
            "olb.backend_reason": backend_reason,
            "olb.output_dir": str(out.resolve()),
            "olb.overrides": " ".join(overrides or []),
            "olb.data_fingerprints": " ".join(f"{n}={s.fingerprint}" for n, s in data.sources.items()),
        }
        parent_id = tracker.start_parent(
            f"{cfg.name} {datetime.now():%Y-%m-%d %H:%M:%S}", params, tags, OmegaConf.to_yaml(cfg)
        )

    recorder = _Recorder(plan, data, tracker, outcomes, out)
    fan = fan_out(backend, tasks, recorder, cfg.name, skipped=n_resumed)
    return _finish(
        cfg,
        plan,
        data,
        outcomes,
        tracker,
        out,
        overrides,
        stream,
        fan,
        recorder,
        n_resumed,
        n_unavailable,
        parent_id,
        t_start,
        (choices, cv_stats),
    )


def _finish(
    cfg,
    plan,
    data,
    outcomes,
    tracker,
    out,
    overrides,
    stream,
    fan,
    recorder,
    n_resumed,
    n_unavailable,
    parent_id,
    t_start,
    selection=((), {}),
) -> GridOutcome:
    """Write cells.csv, table.csv, table.md and the plots, close the parent run, print the report."""
    cells = cells_frame(plan, outcomes, data)
    comparable = comparable_entries(plan, overrides or [], cfg.verify_checksums)
    table = build_table(plan, outcomes, cfg.reference, data.unavailable, comparable)
    table = cover(table, cfg.reference, plan.entries, plan.datasets, data.unavailable, plan.lower_is_better)
    files = {"cells": out / "cells.csv", "table_csv": out / "table.csv", "table_md": out / "table.md"}
    cells.to_csv(files["cells"], index=False)
    table.to_csv(files["table_csv"], index=False)
    reference = " ".join(str(x) for x in (cfg.reference.paper, cfg.reference.table) if x)
    markdown = table_markdown(
        table,
        grid_title(cfg, plan, overrides or [], comparable),
        list(cfg.table.rows),
        list(cfg.table.columns),
        cfg.table.decimals,
        f"paper {reference}" if reference else "",
        cfg.table.bold_best,
    )
    markdown = with_summary(markdown, table, cfg.reference)
    choices, cv_stats = selection
    if choices:
        from olb.grid.crossval import selection_markdown

        markdown += "\n" + selection_markdown(choices)
    if cfg.leaderboard:
        board_md, board_files = _leaderboard(plan, table, cells, out / "leaderboard")
        markdown += "\n" + board_md
        if board_files:
            files["leaderboard"] = out / "leaderboard"
    files["table_md"].write_text(markdown)
    plot_paths = _plots(plan, outcomes, table, cells, tracker, out / "plots") if cfg.plots else []
    if plot_paths:
        files["plots"] = out / "plots"

    unique_cells = cells.drop_duplicates("cell_id")
    n_failed = int((unique_cells["status"] == "FAILED").sum())
    n_finished = int((unique_cells["status"] == "FINISHED").sum())
    wall_s = time.perf_counter() - t_start
    ran = cells[(cells["source"] == "run") & (cells["status"] == "FINISHED")].drop_duplicates("cell_id")
    busy = float(ran["runtime_s"].sum()) if len(ran) else 0.0
    efficiency = busy / (fan.cpus * fan.seconds) if (fan.n_done and fan.seconds > 0) else math.nan
    if fan.interrupted:
        code = EXIT_INTERRUPTED
    elif n_failed or recorder.untracked:
        code = EXIT_FAILED_CELLS
    else:
        code = EXIT_NOTHING_COMPUTED if n_finished == 0 else EXIT_OK
    if tracker is not None:
        status = "KILLED" if fan.interrupted else ("FAILED" if n_failed or n_finished == 0 else "FINISHED")
        metrics = {
            "n_run": fan.n_done,
            "n_resumed": n_resumed,
            "n_failed": n_failed,
            "n_unavailable": n_unavailable,
            "wall_s": wall_s,
            "startup_s": fan.startup_s,
            **{k: float(v) for k, v in cv_stats.items() if k != "interrupted"},
        }
        if not math.isnan(efficiency):
            metrics["fanout_efficiency"] = efficiency
        try:
            tracker.finish_parent(
                status,
                metrics,
                [
                    files["cells"],
                    files["table_csv"],
                    files["table_md"],
                    *([out / "plots"] if plot_paths else []),
                    *([files["leaderboard"]] if "leaderboard" in files else []),
                ],
            )
        except Exception as err:  # noqa: BLE001 - the files are written; say so and go on
            log.error("olb.grid: could not record the grid's parent run in MLflow (%s: %s)", type(err).__name__, err)
            code = code or EXIT_FAILED_CELLS

    outcome = GridOutcome(
        exit_code=code,
        output_dir=out,
        cells=cells,
        table=table,
        plan=plan,
        n_run=fan.n_done,
        n_resumed=n_resumed,
        n_failed=n_failed,
        n_unavailable=n_unavailable,
        wall_s=wall_s,
        startup_s=fan.startup_s,
        fanout_s=fan.seconds if fan.n_done else 0.0,
        efficiency=efficiency,
        cpus=fan.cpus,
        parent_run_id=parent_id,
        tracking_uri=tracker.uri if tracker else None,
        files=files,
        failures=recorder.failures,
        untracked=recorder.untracked,
    )
    _report(outcome, markdown, cfg, efficiency, stream)
    return outcome


def _leaderboard(plan: Plan, table, cells, out_dir: Path):
    """Mean ranks, critical-difference diagrams and runtime plots of ``table`` (olb/grid/leaderboard.py)."""
    from olb.data import dataset_spec
    from olb.grid.leaderboard import write_report
    from olb.grid.plan import RUNTIME_COLUMNS

    ranked = {m: lower for m, lower in plan.lower_is_better.items() if m not in RUNTIME_COLUMNS}
    examples = {d: dataset_spec(d).shape.n_examples for d in plan.datasets}
    try:
        return write_report(table, cells, ranked, examples, out_dir)
    except Exception as err:  # noqa: BLE001 - a report never fails a grid; say why it is missing
        log.warning("olb.grid: leaderboard failed: %s: %s", type(err).__name__, err)
        return f"## Leaderboard\n\nnot written: {type(err).__name__}: {err}\n", []


def _plots(plan, outcomes, table, cells, tracker, plot_dir: Path) -> list[Path]:
    from olb.grid import plots

    plot_dir.mkdir(parents=True, exist_ok=True)

    def curve_of(cell, out):
        if out.get("curve"):
            return out["curve"]
        if tracker is not None and out.get("run_id"):
            try:
                return tracker.curve(out["run_id"], out.get("primary_metric") or cell.metrics[0])
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


def _report(o: GridOutcome, markdown: str, cfg: DictConfig, efficiency: float, stream) -> None:
    pivot = markdown.split("## All values")[0].strip()
    print("\n" + pivot + "\n", file=stream)
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
    failed = o.cells[o.cells["status"] == "FAILED"].drop_duplicates("cell_id")
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
    stream.flush()


# -- command line ----------------------------------------------------------------------------------------
def _sigterm(signum, frame):
    raise KeyboardInterrupt


_TASK_STARTED = False


def _hydra_task(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    global _TASK_STARTED
    _TASK_STARTED = True
    hc = HydraConfig.get()
    try:
        signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread
        pass
    try:
        outcome = run_grid(cfg, hc.runtime.output_dir, list(hc.overrides.task))
    except GridConfigError as err:
        _remove_hydra_run_dir(Path(hc.runtime.output_dir))
        print(f"olb.grid: error: {err}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    if outcome.exit_code:
        sys.exit(outcome.exit_code)


def _remove_hydra_run_dir(run_dir: Path) -> None:
    """A refused grid leaves nothing behind: Hydra creates the run dir (and its log file) before the task
    starts, so remove it, and its parents up to the working directory, if nothing else is in them."""
    for handler in logging.getLogger().handlers[:]:
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == run_dir:
            handler.close()
            logging.getLogger().removeHandler(handler)
    if not run_dir.is_dir() or any(p.name != "olb.grid.log" for p in run_dir.iterdir()):
        return
    for p in run_dir.iterdir():
        p.unlink()
    cwd = Path.cwd().resolve()
    for directory in [run_dir.resolve(), *run_dir.resolve().parents]:
        if directory == cwd or cwd not in directory.parents:
            break
        try:
            directory.rmdir()
        except OSError:  # not empty: another run's outputs
            break


def unknown_override_keys(args: list[str]) -> list[str]:
    """One message per command-line override naming a key the grid's schema does not know, with "did you
    mean" (Hydra would only answer "Could not override" and suggest ``+key``, which the planner refuses)."""
    import dataclasses
    import typing

    from olb.grid.config import make_schema
    from olb.registry import did_you_mean

    schema = make_schema()
    groups = {p.name for p in olb.conf_dir().iterdir() if p.is_dir()}
    problems = []
    for arg in args:
        if arg.startswith("-") or "=" not in arg:
            continue
        key = arg.lstrip("+~").split("=", 1)[0].split("@", 1)[0]
        level, where = schema, ""
        for part in key.split("."):
            if not dataclasses.is_dataclass(level):
                break  # a mapping or a free value (algorithm entries, hyperparameter shorthands)
            fields = {f.name for f in dataclasses.fields(level)}
            if not where and (part == "hydra" or (part in groups and "." not in key)):  # Hydra's own, backend=serial
                break
            if part not in fields:
                problems.append(
                    f"{where}{part}: unknown key{did_you_mean(part, fields)} (in {arg!r}); "
                    f"allowed: {', '.join(sorted(fields))}"
                )
                break
            level, where = typing.get_type_hints(level).get(part), f"{where}{part}."
    return problems


def main() -> None:
    register_configs()
    import hydra

    problems = unknown_override_keys(sys.argv[1:])
    if problems:
        for problem in problems:
            print(f"olb.grid: error: {problem}", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG)
    sys.argv[1:] = with_default_experiment(sys.argv[1:])
    app = hydra.main(config_path=str(olb.conf_dir()), config_name="config", version_base="1.3")(_hydra_task)
    try:
        app()
    except SystemExit as exit_:
        if exit_.code == 1 and not _TASK_STARTED:  # Hydra could not compose the config (message printed above)
            raise SystemExit(EXIT_CONFIG) from None
        raise
