"""``serial``: every cell in the driver process, one after the other, through the same function as on Ray: the
same numbers, for debugging."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from olb.grid.running.backend import Backend
from olb.grid.planning.config import BackendConfig
from olb.grid.messages import Answer, Task
from olb.grid.running.worker import execute


class SerialBackend(Backend):
    """Every task in the driver process, one after the other."""

    name = "serial"

    def __init__(self, cfg: BackendConfig | None = None):
        self._running = 0

    @property
    def running(self) -> int:
        return self._running

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def cancel(self) -> None:
        pass

    def run(self, tasks: Sequence[Task]) -> Iterator[Answer | None]:
        for task in tasks:
            self._running = 1
            message = execute(task)
            self._running = 0
            yield message
