"""What a Ray worker does around each cell: it runs the cell (:func:`olb.grid.running.worker.execute`), hands the
heap its cell freed back to the operating system (glibc's ``malloc_trim``), and if it still holds more than
``backend.worker_memory_mb`` it ends once the cell's result is stored, so that Ray starts a fresh process for its
next cell. Ray reserves each cell's *predicted* peak memory (:func:`olb.grid.planning.cost.planned_memory_mb`), which
assumes a worker holds the process floor before its cell; a worker that kept an earlier cell's pages would run
the next cell above what Ray reserved for it, and report them as that cell's peak.

A worker ends through Ray's own ``max_calls`` exit: the remote function is registered with a ``max_calls`` no
worker reaches (:data:`UNREACHED_CALLS`), and a worker over the bound sets its count of calls one short of it, so
that Ray, once the result is stored, ends the process as for ``max_calls`` (an intended exit: the result is
delivered, nothing is retried, the lease is returned). Ray has no public way to end a task's worker after the
task (``.options`` refuses ``max_calls``); the count lives in Ray's ``ray._private`` (Ray 2.60), and
tests/test_grid_recycle.py fails if it moves.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
from collections.abc import Callable
from typing import Any, cast

from olb.grid.messages import Answer, Task
from olb.grid.running.backends.ray_node_loss import announce_node
from olb.grid.running.worker import execute

log = logging.getLogger("olb.grid")

UNREACHED_CALLS = 2**31 - 1
"""The ``max_calls`` the cells' remote function is registered with: no worker runs that many cells."""

_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 0.0


def execute_in_worker(task: Task, worker_memory_mb: float) -> Answer:
    """:func:`~olb.grid.running.worker.execute`, then this worker ends after returning the result if, with its
    freed heap returned, it holds more than ``worker_memory_mb`` (0: never ends; the heap is not trimmed). It first
    announces its node (:func:`~olb.grid.running.backends.ray_node_loss.announce_node`)."""
    announce_node()
    message = execute(task)
    if worker_memory_mb > 0:
        release_freed_heap()
        held = resident_mb()
        if held is not None and held > worker_memory_mb and not end_after_this_task():
            log.warning("olb.grid: this Ray worker holds %.0f MB but cannot end after its cell (Ray changed)", held)
    return message


def resident_mb() -> float | None:
    """This process's resident memory (MB) now, or None where ``/proc`` does not say (not Linux)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE_MB
    except (OSError, IndexError, ValueError):
        return None


def release_freed_heap() -> None:
    """Give the whole free pages of every malloc arena back to the system (glibc's ``malloc_trim(0)``; a no-op
    elsewhere). Freed numpy buffers below glibc's mmap threshold (up to 32 MB once large ones were freed) stay in
    the arenas, resident, until trimmed."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, looked up once per process (None elsewhere)."""
    return getattr(ctypes.CDLL(None), "malloc_trim", None)


def end_after_this_task() -> bool:
    """Make Ray end this worker once the running task's result is stored (its ``max_calls`` exit); False if
    Ray's count of calls is not where Ray 2.60 keeps it."""
    import ray

    try:
        manager = ray._private.worker.global_worker.function_actor_manager
        # calls per function (Ray's own annotation of the attribute, when its body is checked, says otherwise)
        counts = cast(dict[Any, int], manager._num_task_executions)
        ours = [d.function_id for d, info in manager.execution_infos.items() if info.max_calls == UNREACHED_CALLS]
        for function_id in ours:
            counts[function_id] = UNREACHED_CALLS - 1
    except (AttributeError, TypeError):
        return False
    return bool(ours)
