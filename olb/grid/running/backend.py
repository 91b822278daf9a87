"""The backend interface: where cell tasks run. :mod:`olb.grid.running.fanout` drives any backend through it.

The backends are in :mod:`olb.grid.running.backends`: ``serial`` (in the driver process) and ``ray`` (a local Ray, or a
Ray cluster when an address is given). A new backend is one subclass in one file there and its line in
``olb.grid.running.backends.BACKENDS`` (and its name in ``olb.grid.planning.config.BACKENDS``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from olb.grid.messages import Answer, Task

HEARTBEAT = None  # yielded when nothing finished within a second, so that the progress bar can refresh


@dataclass(frozen=True)
class NodeLost:
    """Yielded when a node was declared dead: its IP, how many of its running tasks were submitted again, and how
    many tasks that had not started anywhere were submitted again with them (Ray may have queued them there)."""

    ip: str
    resubmitted: int
    waiting: int = 0


class Backend(ABC):
    """Runs tasks (:class:`~olb.grid.messages.CellTask`, :class:`~olb.grid.messages.CVTask`) through
    :func:`olb.grid.running.worker.execute` and yields their answers (:data:`~olb.grid.messages.Answer`) as they finish."""

    name: str  # as in backend.name
    cpus: int = 1  # tasks it runs at once (the progress bar's slots, the fan-out's efficiency)
    startup_s: float = 0.0  # what starting it cost
    node_memory_mb: float = 0.0  # the largest node's memory Ray hands out to cells, once started (0: no limit known)
    log_dir: Path | None = None  # where a local Ray keeps the logs of lost cells (the grid's output folder)

    @property
    @abstractmethod
    def running(self) -> int:
        """Tasks running now."""

    @abstractmethod
    def start(self) -> None:
        """Get ready to run tasks; idempotent (every stage of a grid calls it)."""

    @abstractmethod
    def stop(self) -> None:
        """Release what :meth:`start` took (once, after the grid's last stage)."""

    @abstractmethod
    def cancel(self) -> None:
        """Drop the tasks still queued or running (Ctrl-C, a lost head or tracker)."""

    @abstractmethod
    def run(self, tasks: Sequence[Task]) -> Iterator[Answer | NodeLost | None]:
        """Each task's answer as it finishes, in any order; :data:`HEARTBEAT` when nothing finished for a while,
        a :class:`NodeLost` when a node was lost (its tasks are run again elsewhere).
        A task whose worker died answers with a ``CellFailure`` (``CVFailure``) saying why (the backend builds it)."""
