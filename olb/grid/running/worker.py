"""What runs inside a Ray task (or in the driver with ``backend=serial``): one cell, or one candidate setting's
cross-validation, start to end.

:func:`execute` never raises: an exception inside the cell becomes a :class:`~olb.grid.messages.CellFailure`
(a :class:`~olb.grid.messages.CVFailure`) carrying the traceback, so that Ray only retries cells whose worker process died (``max_retries``). A
:class:`~olb.grid.messages.CellResult` holds plain Python (lists, dicts, bytes) and is small; the driver logs it
to MLflow as soon as it arrives.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import io
import json
import os
import socket
import sys
import time
import traceback
from typing import TYPE_CHECKING, TypedDict

from olb.grid.messages import Answer, CellFailure, CellResult, CellTask, CVFailure, CVResult, CVTask, Task

if TYPE_CHECKING:
    from olb.data.dataset import Dataset


def execute(task: Task) -> Answer:
    """Run one task, a cell or a cross-validation, and return what the driver records."""
    return execute_cv(task) if isinstance(task, CVTask) else execute_cell(task)


def execute_cell(task: CellTask) -> CellResult | CellFailure:
    """Run one cell; its result, or its failure with the traceback."""
    started = time.time()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    where = _Where(cell_id=task.cell_id, start_time=started, host=_host(), node_ip=_node_ip(), pid=os.getpid())
    try:
        for module in task.imports:
            importlib.import_module(module)
        from olb.run import run_cell

        result = run_cell(task.spec)
    except Exception as err:  # noqa: BLE001 - everything a cell raises is recorded, nothing escapes
        return CellFailure(
            **where,
            error=f"{type(err).__name__}: {err}",
            traceback=traceback.format_exc(),
            wall_s=time.perf_counter() - wall0,
            cpu_s=time.process_time() - cpu0,
            end_time=time.time(),
        )
    stream = result.stream
    curve = {key: [v.item() if hasattr(v, "item") else v for v in values] for key, values in stream.curve.items()}
    finished = CellResult(
        **where,
        metrics={k: float(v) for k, v in stream.metrics.items()},
        primary_metric=stream.primary_metric,
        data_fingerprint=result.data.fingerprint,
        data_files=result.data.files_text(),
        curve=curve,
        phases={name: dict(p) for name, p in stream.phases.items()},
        setup_s=float(result.setup_s),
        runtime_s=float(result.runtime_s),
        cpu_s=float(stream.cpu_s),
        train_us_per_example=float(stream.train_us_per_example),
        compile_s=float(result.compile_s),
        peak_rss_mb=float(stream.peak_rss_mb),
        wall_s=time.perf_counter() - wall0,
        end_time=time.time(),
    )
    if task.plot:
        try:
            png = curve_png(task.title or task.cell_id, finished)
        except Exception:  # noqa: BLE001 - a plot is never worth a failed cell
            png = None
        finished = dataclasses.replace(finished, curve_png=png)
    return finished


class _Where(TypedDict):
    """Which cell, since when, where: what its result and its failure both say (:class:`~olb.grid.messages.CellReport`)."""

    cell_id: str
    start_time: float
    host: str
    node_ip: str
    pid: int


def execute_cv(task: CVTask) -> CVResult | CVFailure:
    """Every fold of one candidate setting (:func:`olb.grid.selection.cv_scores`); its folds' metrics, or its
    failure with the traceback."""
    from olb.grid.selection import cv_scores

    t0 = time.perf_counter()
    try:
        for module in task.imports:
            importlib.import_module(module)
        dataset = _dataset(task.dataset, json.dumps(task.data_dir), task.verify_checksums)
        scores = cv_scores(task.algorithm, task.params, dataset, task.metrics, task.folds, task.seed, checked=True)
    except Exception as err:  # noqa: BLE001 - recorded, never raised in a worker
        return CVFailure(task_id=task.task_id, error=f"{type(err).__name__}: {err}", traceback=traceback.format_exc())
    return CVResult(task_id=task.task_id, folds=scores.folds, cpu_s=scores.cpu_s, wall_s=time.perf_counter() - t0)


@functools.lru_cache(maxsize=4)
def _dataset(name: str, data_dir: str, verify_checksums: bool) -> Dataset:
    """A data set a worker's recent tasks read (``data_dir`` as JSON, to be hashable): every setting of an entry
    cross-validates on the same data."""
    from olb.data import load_dataset

    return load_dataset(name, json.loads(data_dir), verify_checksums)


def in_ray_worker() -> bool:
    """Whether this process is a Ray worker (not a driver, and not the serial backend's process)."""
    ray = sys.modules.get("ray")  # a Ray worker has imported it; never imported here for the serial backend
    if ray is None:
        return False
    try:
        return ray.is_initialized() and ray._private.worker.global_worker.mode == ray.WORKER_MODE
    except Exception:  # noqa: BLE001 - Ray internals moved: treat as not a worker
        return False


@functools.cache
def _host() -> str:
    """This machine's name (asked once per process)."""
    return socket.gethostname()


@functools.cache
def _node_ip() -> str:
    """The Ray node's IP when running as a Ray task, else "" (serial backend); asked once per process (a worker
    process stays on its node, and the serial backend never becomes a Ray worker)."""
    return sys.modules["ray"].util.get_node_ip_address() if in_ray_worker() else ""


def curve_png(title: str, result: CellResult) -> bytes:
    """A small PNG of one cell's learning curve (running mean per phase; the windowed one beside it, if any)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    curve, phases = result.curve, list(result.phases)
    fig = Figure(figsize=(5, 3.2), dpi=80)
    fig.subplots_adjust(left=0.15, right=0.97, bottom=0.15, top=0.9)  # tight_layout costs 0.2 s a figure
    ax = fig.add_subplot()
    for p, name in enumerate(phases):
        xs = [s for s, q in zip(curve["step"], curve["phase"]) if q == p]
        ys = [v for v, q in zip(curve["value"], curve["phase"]) if q == p]
        if xs:
            (line,) = ax.plot(xs, ys, label=name)
        if xs and "window" in curve:  # the windowed curve in the phase's colour, thinner
            recent = [v for v, q in zip(curve["window"], curve["phase"]) if q == p]
            ax.plot(xs, recent, color=line.get_color(), linewidth=0.7, alpha=0.7, label=f"{name}, last examples")
    ax.set_xlabel("example")
    ax.set_ylabel(f"running mean {result.primary_metric}")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
