"""What the driver records for a cell whose Ray worker died more often than ``backend.max_retries``: a failure
saying why (out of memory, with the cell's use and the node's limit; a crash), and the Ray logs that explain it."""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import time

from olb.grid.running.backends.ray_worker import execute_in_worker
from olb.grid.messages import CellFailure, CVFailure, CVTask, Task


def lost_failure(
    task: Task, err: Exception, max_retries: int, asked_mb: float | None = None
) -> CellFailure | CVFailure:
    """The failure of ``task``, whose worker died in each of its ``max_retries + 1`` attempts (``err``: Ray's
    last word; ``asked_mb``: the memory its Ray request reserved)."""
    from ray.exceptions import OutOfMemoryError, WorkerCrashedError

    attempts = max_retries + 1
    error, used, limit = f"{type(err).__name__}: {err}".strip(), None, None
    if isinstance(err, OutOfMemoryError):
        used, limit = _oom_figures(str(err))
        error = (
            f"out of memory: killed by Ray's memory monitor in each of {attempts} attempt(s); the cell used "
            f"{_mb(used)} when killed, the node's limit is {_mb(limit)} (Ray kills above it: RAY_memory_usage_threshold)"
            f"; {_memory_asked(task, asked_mb)}"
        )
    elif isinstance(err, WorkerCrashedError):
        error = (
            f"the worker process died in each of {attempts} attempt(s) (killed by a signal, e.g. the kernel's "
            f"out-of-memory killer, or crashed); see ray-logs/ in the output folder; {_memory_asked(task, asked_mb)}"
        )
    said = f"{type(err).__name__}: {err}"
    if isinstance(task, CVTask):
        return CVFailure(task_id=task.task_id, error=error, traceback=said, attempts=attempts)
    now = time.time()
    return CellFailure(
        cell_id=task.cell_id,
        start_time=now,
        end_time=now,
        error=error,
        traceback=said,
        attempts=attempts,
        peak_rss_mb=used,
        memory_limit_mb=limit,
    )


def _oom_figures(message: str) -> tuple[float | None, float | None]:
    """The killed cell's memory use and the node's limit (the threshold Ray kills at), in MB, from the
    message of Ray's ``OutOfMemoryError``; None where the message does not say."""
    used = re.search(rf"task name={execute_in_worker.__name__},[^)]*?memory used=([\d.]+)GB", message)
    limit = re.search(r"exceeded threshold of (\d+)B", message)
    return (float(used.group(1)) * 1024 if used else None, int(limit.group(1)) / 2**20 if limit else None)


def _memory_asked(task: Task, asked_mb: float | None) -> str:
    """The killed cell's predicted memory and what it was allowed (its Ray request), and how to retry with more."""
    return (
        f"predicted {_mb(task.predicted_memory_mb)}, allowed {_mb(asked_mb)} (its Ray request); "
        "a rerun with a larger backend.memory_factor asks for more"
    )


def _mb(value: float | None) -> str:
    return "? MB" if value is None else f"{value:.0f} MB"


def keep_logs(session_dir: str, log_dir: str | os.PathLike[str] | None) -> None:
    """Copy a local Ray's worker and node logs into ``log_dir``/ray-logs (they explain lost cells): regular files
    and folders only, no link followed nor copied (Ray makes its session folders writable by everyone)."""
    if log_dir is None:
        return
    src = os.path.join(session_dir, "logs")
    try:
        if os.path.islink(src):
            raise OSError(f"{src} is a link, not followed")
        shutil.copytree(src, os.path.join(log_dir, "ray-logs"), symlinks=True, dirs_exist_ok=True, ignore=_not_logs)
    except OSError as err:
        logging.getLogger("olb.grid").warning("olb.grid: could not keep Ray's logs from %s: %s", src, err)


def _not_logs(folder: str, names: list[str]) -> set[str]:
    """What `keep_logs` leaves out of ``folder``: links, sockets and anything else neither file nor folder."""
    kept = set()
    for name in names:
        mode = os.lstat(os.path.join(folder, name)).st_mode
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            kept.add(name)
    return set(names) - kept
