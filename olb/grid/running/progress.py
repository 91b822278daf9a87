"""Progress of a grid: a tqdm bar on a terminal (cells done, failed, running, ETA), otherwise (CI, batch jobs)
a line at the start, after the first result and every :attr:`Progress.every_s` seconds, and a summary line at the end.
A lost node is said at once, in a line of its own, and counted in the lines after it (``nodes_lost=``).

The ETA extrapolates the time per finished cell without the time the workers spent compiling (each result's
``compile_s``: numba compiles its kernels once per process, in the first cells), so that one slow first cell
does not inflate the estimate for all the others."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO
import time

from tqdm import tqdm

from olb.grid.messages import Status


def _hms(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    every_s = 30.0  # seconds between two lines when the stream is not a terminal

    def __init__(
        self,
        total: int,
        skipped: int = 0,
        desc: str = "cells",
        stream: TextIO | None = None,
        slots: int = 1,
        unit: str = "cell",
    ):
        self.stream = stream or sys.stderr
        self.total, self.skipped = total, skipped
        self.done = self.failed = self.running = 0
        self.nodes_lost = 0
        self.compile_s = 0.0  # summed over the finished cells
        self.slots = max(1, slots)
        self.t0 = self._last = time.perf_counter()
        self.unit = unit
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        # a pseudo-terminal without a size (`script`, some CI runners) says 0 columns and 0 lines, and tqdm draws
        # no bar on a screen of 0 lines: give it a width and a height of its own there
        size = shutil.get_terminal_size((0, 0))
        sized = size.columns > 0 and size.lines > 0
        self.bar = tqdm(
            total=total,
            initial=skipped,
            desc=desc,
            unit=unit,
            file=self.stream,
            disable=not self.tty,
            dynamic_ncols=sized,
            ncols=None if sized else 110,
            nrows=None if sized else 24,
            smoothing=0.2,
        )
        self._postfix()
        if not self.tty:
            print(self.line(), file=self.stream, flush=True)

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.done - self.failed

    def eta(self) -> float:
        finished = self.done + self.failed
        if not finished:
            return float("nan")
        compiling = self.compile_s / min(self.slots, finished)  # the workers compile side by side
        return max(0.0, time.perf_counter() - self.t0 - compiling) / finished * self.remaining

    def _postfix(self) -> None:
        self.bar.set_postfix_str(
            f"done={self.skipped + self.done} failed={self.failed} running={self.running} eta={_hms(self.eta())}"
            + (f" nodes_lost={self.nodes_lost}" if self.nodes_lost else ""),
            refresh=False,
        )

    def update(self, status: str, running: int, compile_s: float = 0.0) -> None:
        self.compile_s += compile_s
        if status == Status.FINISHED:
            self.done += 1
        else:
            self.failed += 1
        self.running = running
        self._postfix()
        self.bar.update(1)
        self._maybe_line(first=self.done + self.failed == 1)

    def heartbeat(self, running: int) -> None:
        self.running = running
        self._postfix()
        self.bar.refresh()
        self._maybe_line()

    def node_lost(self, ip: str, resubmitted: int, running: int, waiting: int = 0) -> None:
        """A node was declared dead; ``resubmitted`` of its cells run again elsewhere, and ``waiting`` cells that
        had not started were submitted again with them."""
        self.nodes_lost += 1
        self.running = running
        self._postfix()
        said = f"[olb.grid] node {ip} lost: {resubmitted} {self.unit}{'' if resubmitted == 1 else 's'} resubmitted"
        if waiting:
            said += f" with {waiting} waiting {self.unit}{'' if waiting == 1 else 's'}"
        if self.tty:
            self.bar.write(said, file=self.stream)
        else:
            print(said, file=self.stream, flush=True)

    def _maybe_line(self, first: bool = False) -> None:
        now = time.perf_counter()
        if not self.tty and (first or now - self._last >= self.every_s):
            self._last = now
            print(self.line(), file=self.stream, flush=True)

    def line(self) -> str:
        return (
            f"[olb.grid] {self.skipped + self.done + self.failed}/{self.total} {self.unit}s: done={self.skipped + self.done} "
            f"(resumed {self.skipped}) failed={self.failed} running={self.running} "
            f"elapsed={_hms(time.perf_counter() - self.t0)} eta={_hms(self.eta())}"
            + (f" nodes_lost={self.nodes_lost}" if self.nodes_lost else "")
        )

    def close(self) -> None:
        self.bar.close()
