"""Fan-out: run a list of cell tasks on a backend and hand each result to the driver as it arrives.

The loop knows nothing of plans or tables: any stage that produces cell tasks (the grid, a later
cross-validation stage) runs them through :func:`fan_out` with its own ``on_result``, on the same backend:
starting it is idempotent, and stopping it is the caller's (once, after its last stage). Ctrl-C and SIGTERM
end it cleanly: what finished so far has been handed over, the cells still in flight are cancelled. So does a
lost Ray head or tracking server (:mod:`olb.grid.lost`): ``FanoutStats.lost`` then says what was lost. A lost
Ray node does not end it: the backend runs that node's cells again and the progress says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from olb.grid.running.backend import HEARTBEAT, Backend, NodeLost
from olb.grid.lost import InfrastructureLost
from olb.grid.messages import Answer, CellResult, Status, Task
from olb.grid.running.progress import Progress

log = logging.getLogger("olb.grid")


@dataclass
class FanoutStats:
    n_done: int = 0  # results handed to on_result
    interrupted: bool = False
    lost: InfrastructureLost | None = None  # the Ray head or tracking server that stopped answering
    seconds: float = 0.0  # from the first submitted task to the last result
    startup_s: float = 0.0
    cpus: int = 1


def fan_out(
    backend: Backend,
    tasks: Sequence[Task],
    on_result: Callable[[Any], None],
    desc: str,
    skipped: int = 0,
    unit: str = "cell",
) -> FanoutStats:
    """Run ``tasks`` (:class:`~olb.grid.messages.CellTask` or :class:`~olb.grid.messages.CVTask`, one kind) on
    ``backend``; ``on_result(answer)`` runs in the driver for each answer (``CellResult`` or ``CellFailure``;
    ``CVResult`` or ``CVFailure``); its ``flush()``, if it has one, after the last. ``skipped`` (tasks done earlier) only shapes the progress bar, which counts in
    ``unit``s."""
    stats = FanoutStats()
    if not tasks:
        return stats
    progress = None
    start = time.perf_counter()
    try:
        backend.start()
        start = time.perf_counter()
        progress = Progress(len(tasks) + skipped, skipped=skipped, desc=desc, slots=backend.cpus, unit=unit)
        for message in backend.run(tasks):
            if message is HEARTBEAT:
                progress.heartbeat(backend.running)
                continue
            if isinstance(message, NodeLost):
                progress.node_lost(message.ip, message.resubmitted, backend.running, message.waiting)
                continue
            on_result(message)
            stats.n_done += 1
            status, compile_s = _status_and_compile_s(message)
            progress.update(status, backend.running, compile_s)
    except InfrastructureLost as err:
        stats.lost = err
        log.error("olb.grid: %s; ending the grid (%d cell(s) finished in this run are kept)", err, stats.n_done)
        backend.cancel()
    except KeyboardInterrupt:
        stats.interrupted = True
        backend.cancel()
        log.warning(
            "olb.grid: interrupted; %d cell(s) finished in this run are recorded, rerun to complete the grid",
            stats.n_done,
        )
    finally:
        if progress is not None:
            progress.close()
    _flush(on_result, stats)
    stats.seconds = time.perf_counter() - start
    stats.startup_s, stats.cpus = backend.startup_s, backend.cpus
    return stats


def _flush(on_result: Callable[[Any], None], stats: FanoutStats) -> None:
    """Let ``on_result`` finish what it was handed (its ``flush()``, if it has one: the grid's recorder writes the
    results it still holds), also after an interruption or a lost Ray head."""
    flush = getattr(on_result, "flush", None)
    if flush is None:
        return
    try:
        flush()
    except InfrastructureLost as err:
        if stats.lost is None:
            stats.lost = err
            log.error("olb.grid: %s; ending the grid (%d cell(s) finished in this run are kept)", err, stats.n_done)
    except KeyboardInterrupt:
        stats.interrupted = True


def _status_and_compile_s(answer: Answer) -> tuple[Status, float]:
    """An answer's status and compile time for the progress bar."""
    return answer.status, answer.compile_s if isinstance(answer, CellResult) else 0.0
