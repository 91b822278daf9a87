"""The driver's tracking writer: a thread that records the cells' results in batches, so that the driver's loop
only queues them (microseconds a cell) while the tracker writes.

The queue is bounded (``tracking.queue_cells``): a store slower than the cells makes the driver wait rather than
hold every result in memory. Whatever waits in the queue is written in batches of up to ``tracking.batch_cells``
(:meth:`~olb.grid.recording.tracker.Tracker.log_cells`: one transaction on a SQL store). A batch that fails is written again
cell by cell, so one bad cell does not leave the others unrecorded; a cell that cannot be recorded is reported
through ``on_untracked``. A lost tracking server (:class:`~olb.grid.lost.TrackingLost`), or a store whose disk is full
(:class:`~olb.grid.writing.DiskFull`), stops the writer: every
cell not yet written is reported, and the loss is raised in the driver by the next :meth:`CellWriter.put` or by
:meth:`CellWriter.close`. A driver killed with results still queued loses only their records; resume runs those
cells again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pathlib import Path

from olb.grid.lost import InfrastructureLost, TrackingLost
from olb.grid.recording.tracker import Tracker
from olb.grid.writing import disk_full

log = logging.getLogger("olb.grid")

_STOP = object()


@dataclass
class WriterStats:
    """What the writer did: cells written, batches (transactions on a SQL store), seconds spent writing (wall, and
    the writer thread's CPU), and the seconds the driver waited for room in the queue."""

    cells: int = 0
    batches: int = 0
    write_s: float = 0.0
    write_cpu_s: float = 0.0
    waited_s: float = 0.0
    largest_batch: int = 0


class CellWriter:
    """Writes ``(cell, message, data_tags)`` items to ``tracker`` from a thread. ``on_written(cell_id, run_id)``
    and ``on_untracked(cell_id, error)`` run in the writer thread for each cell."""

    def __init__(
        self,
        tracker: Tracker,
        on_written: Callable[[str, str | None], None],
        on_untracked: Callable[[str, Exception], None],
        batch_cells: int = 500,
        queue_cells: int = 10000,
    ):
        self.tracker, self.on_written, self.on_untracked = tracker, on_written, on_untracked
        self.batch_cells = max(1, int(batch_cells))
        self.queue: queue.Queue = queue.Queue(maxsize=max(1, int(queue_cells)))
        self.lost: InfrastructureLost | None = None
        self.stats = WriterStats()
        self.thread = threading.Thread(target=self._run, name="olb-tracking-writer", daemon=True)
        self.thread.start()

    def put(self, item: tuple) -> None:
        """Queue one cell (waits while the queue is full); raises the writer's TrackingLost once it has one."""
        t0 = time.perf_counter()
        while self.lost is None:
            try:
                self.queue.put(item, timeout=0.5)
                break
            except queue.Full:
                if not self.thread.is_alive():
                    raise RuntimeError("olb.grid: the tracking writer thread ended") from None
        self.stats.waited_s += time.perf_counter() - t0
        if self.lost is not None:
            raise self.lost

    def close(self) -> None:
        """Write what is queued, then end the thread; raises the writer's TrackingLost if it had one."""
        if self.thread.is_alive():
            self.queue.put(_STOP)
            self.thread.join()
        if self.lost is not None:
            raise self.lost

    def _run(self) -> None:
        stop = False
        while not stop:
            batch = [self.queue.get()]
            while len(batch) < self.batch_cells:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            if _STOP in batch:
                batch.remove(_STOP)
                stop = True
            if batch:
                self._write(batch)

    def _write(self, batch: list[tuple]) -> None:
        if self.lost is not None:
            self._untracked(batch, self.lost)
            return
        t0, cpu0 = time.perf_counter(), time.thread_time()
        try:
            run_ids = self.tracker.log_cells(batch)
        except TrackingLost as err:
            self.lost = err
            self._untracked(batch, err)
            return
        except Exception as err:  # noqa: BLE001 - find the cells that cannot be recorded, record the others
            full = disk_full(err, _store_folder(self.tracker.uri))
            if full is not None:  # no other cell fits either
                self.lost = full
                self._untracked(batch, full)
                return
            failed: Exception | None = err
        else:
            failed = None
            for (cell, _, _), run_id in zip(batch, run_ids):
                self.on_written(cell.cell_id, run_id)
            self.stats.cells += len(batch)
            self.stats.batches += 1
            self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        finally:
            self.stats.write_s += time.perf_counter() - t0
            self.stats.write_cpu_s += time.thread_time() - cpu0
        if failed is not None:
            if len(batch) == 1:
                self._untracked(batch, failed)
            else:
                for item in batch:
                    self._write([item])

    def _untracked(self, batch: list[tuple], err: Exception) -> None:
        for cell, _, _ in batch:
            self.on_untracked(cell.cell_id, err)


def _store_folder(uri: str | None) -> str:
    """The folder of a SQLite store's file, else the store's URI (what a full disk is named by)."""
    path = uri[len("sqlite:///") :].split("?")[0] if uri and uri.startswith("sqlite:///") else ""
    return str(Path(path).resolve().parent) if path else uri or "the tracking store"
