"""Recording: the tracker a grid writes to, the cells earlier runs finished (resume), and the driver's handler
of each cell result (outcome, tracker run through a writer thread, a periodic cells.csv)."""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import time
from pathlib import Path


import olb
from olb.grid.planning.config import GridBase, TrackingConfig
from olb.grid.lost import InfrastructureLost
from olb.grid.datacheck import FILES_TAG, FINGERPRINT_TAG, DataCheck, matches_data, provenance_tags
from olb.grid.messages import CellFailure, CellOutcome, CellResult
from olb.grid.planning.plan import GridConfigError, Plan
from olb.grid.recording.results import (
    cells_frame,
    outcome_from_message,
    outcome_from_run,
)
from olb.grid.recording.tracker import FinishedRun, Tracker
from olb.grid.recording.tracking_noop import NoopTracker
from olb.grid.recording.writer import CellWriter
from olb.grid.writing import write_csv

log = logging.getLogger("olb.grid")


# what a result depends on: an uncommitted change elsewhere (docs, an export in results/) leaves the version clean
CODE_PATHS = ("olb", "conf", "pyproject.toml")


def code_version(repo: Path | None = None) -> str:
    """olb's version and, in a git checkout, the commit (+dirty when :data:`CODE_PATHS` differ from it).

    Read-only git calls; ``repo`` defaults to the checkout olb is imported from.
    """
    version = olb.__version__
    repo = repo or Path(olb.__file__).resolve().parents[1]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=5, env=env
        )
        if sha.returncode == 0 and sha.stdout.strip():
            dirty = (
                subprocess.run(
                    ["git", "diff-index", "--quiet", "HEAD", "--", *CODE_PATHS],
                    cwd=repo,
                    capture_output=True,
                    timeout=5,
                    env=env,
                ).returncode
                != 0
            )
            return f"{version}+g{sha.stdout.strip()}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        pass
    return version


def tracker_class(tracking: TrackingConfig) -> type[Tracker]:
    """The tracker the ``tracking`` config selects: the one place where trackers are registered."""
    if not tracking.enabled:
        return NoopTracker
    from olb.grid.recording.tracking import MlflowTracker, resolve_uri
    from olb.grid.recording.tracking_database import MlflowDatabaseTracker
    from olb.grid.recording.tracking_server import MlflowServerTracker
    from olb.grid.recording.tracking_sqlite import MlflowSqliteTracker

    uri = resolve_uri(tracking.uri)
    if uri.startswith(("http://", "https://")):
        return MlflowServerTracker
    if uri.startswith("sqlite:"):
        return MlflowSqliteTracker
    return MlflowDatabaseTracker if uri.startswith("postgresql") else MlflowTracker  # else: another MLflow store


def open_tracker(cfg: GridBase, version: str) -> Tracker:
    """The tracker the config selects, opened; GridConfigError if its store cannot be opened."""
    try:
        return tracker_class(cfg.tracking)(cfg.tracking, cfg.tracking.experiment or f"olb/{cfg.name}", version)
    except Exception as err:  # noqa: BLE001 - unreachable server, unwritable file, bad URI
        raise GridConfigError(
            f"tracking.uri={cfg.tracking.uri or 'default'}: cannot open the MLflow tracking "
            f"store: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''} "
            "(tracking=off runs without MLflow)"
        ) from None


def resumed_outcomes(tracker: Tracker, cfg: GridBase, plan: Plan, data: DataCheck) -> dict[str, CellOutcome]:
    """Finished runs of earlier invocations computed from the current data (see ``matches_data``)."""
    if not cfg.resume:
        return {}
    by_id = {c.cell_id: c for c in plan.unique_cells}

    def same_cell_same_data(run: FinishedRun) -> bool:
        cell = by_id.get(run.cell_id)
        return cell is not None and matches_data(run.tags, data.sources.get(cell.dataset))

    return {cid: outcome_from_run(run, by_id[cid]) for cid, run in tracker.finished_cells(same_cell_same_data).items()}


class Recorder:
    """The driver's handler of each cell result: its outcome at once, its MLflow child run through the writer
    thread (:mod:`olb.grid.recording.writer`), and now and then a cells.csv. :meth:`flush` (called by the
    fan-out after the last result) waits until every result is written."""

    csv_every_s = 10.0  # cells.csv at most this often, and never more than 5% of the driver's time

    def __init__(self, plan: Plan, data: DataCheck, tracker: Tracker, outcomes: dict[str, CellOutcome], out: Path):
        self.plan, self.data, self.tracker, self.outcomes, self.out = plan, data, tracker, outcomes, out
        self.by_id = {c.cell_id: c for c in plan.unique_cells}
        self.failures: list[tuple[str, str]] = []
        self.untracked: list[str] = []
        self.data_tags = {name: provenance_tags(source) for name, source in data.sources.items()}
        self.writer = CellWriter(tracker, self._written, self._untracked, tracker.batch_cells, tracker.queue_cells)
        self.next_csv = time.perf_counter() + self.csv_every_s

    def __call__(self, message: CellResult | CellFailure) -> None:
        cell = self.by_id[message.cell_id]
        tags = self.data_tags[cell.dataset]
        if isinstance(message, CellResult) and message.data_fingerprint != tags[FINGERPRINT_TAG]:
            log.warning(
                "olb.grid: cell %s read other data than planned (files changed during the grid): "
                "fingerprint %s, planned %s; its run records what it read",
                cell.cell_id,
                message.data_fingerprint,
                tags[FINGERPRINT_TAG],
            )
            tags = {FINGERPRINT_TAG: message.data_fingerprint, FILES_TAG: message.data_files}
        self.outcomes[cell.cell_id] = outcome_from_message(message, None)
        if isinstance(message, CellFailure):
            self.failures.append((cell.run_name, message.traceback or message.error))
            log.error("olb.grid: cell %s (%s) FAILED: %s", cell.cell_id, cell.run_name, message.error)
        try:
            self.writer.put((cell, message, tags))
        except InfrastructureLost:  # the grid ends (fan_out); this cell's result stays in cells.csv
            self.untracked.append(cell.cell_id)
            raise
        if time.perf_counter() > self.next_csv:  # a local copy of the progress, besides MLflow
            t0 = time.perf_counter()
            write_csv(self.out / "cells.csv", cells_frame(self.plan, self.outcomes, self.data))
            now = time.perf_counter()
            self.next_csv = now + max(self.csv_every_s, 20 * (now - t0))

    def flush(self) -> None:
        """Wait until every result handed over is written (or reported untracked); TrackingLost if the tracking
        server was lost, DiskFull if the store's disk is full."""
        self.writer.close()

    def _written(self, cell_id: str, run_id: str | None) -> None:
        self.outcomes[cell_id] = dataclasses.replace(self.outcomes[cell_id], run_id=run_id)

    def _untracked(self, cell_id: str, err: Exception) -> None:
        self.untracked.append(cell_id)
        if not isinstance(err, InfrastructureLost):  # a lost server or full disk is reported once, by the grid's end
            log.error(
                "olb.grid: could not record cell %s in MLflow (%s: %s); a rerun will run it again",
                cell_id,
                type(err).__name__,
                err,
            )
