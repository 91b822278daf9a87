"""What a stream costs: wall and CPU time without the time spent making kernels ready (:class:`Stopwatch`), and the
peak resident memory of the process during the stream."""

from __future__ import annotations

import resource
import sys
import time

from olb.kernels import LOADING as KERNEL_LOADING
from olb.kernels import count_numba_compiling
from olb.kernels import mode as kernel_mode


class Stopwatch:
    """Wall and CPU seconds of a block of code without the time spent making kernels ready, measured apart as
    ``compile_s``: building or loading olb's compiled kernels (:mod:`olb.kernels`), and, where numba's JIT runs
    them, the time numba holds its compiler lock (compiling a kernel, or loading it from numba's disk cache).

    ``with Stopwatch() as clock: ...`` then ``clock.wall_s``, ``clock.cpu_s``, ``clock.compile_s``. Kernels are
    made ready once per process (numba: once per kernel and type signature), so only a process's first cells
    compile.
    """

    def __init__(self) -> None:
        self._loading = self._started = (0.0, 0.0)
        self.wall_s = self.cpu_s = self.compile_s = 0.0

    def __enter__(self) -> Stopwatch:
        # numba's compiling is counted once numba is loaded (OLB_KERNELS=jit, or the JIT already running)
        if kernel_mode() == "jit" or "numba" in sys.modules:
            count_numba_compiling()
        self._loading = (KERNEL_LOADING[0], KERNEL_LOADING[1])
        self._started = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc) -> None:
        wall, cpu = time.perf_counter() - self._started[0], time.process_time() - self._started[1]
        self.compile_s = KERNEL_LOADING[0] - self._loading[0]
        self.wall_s = max(0.0, wall - self.compile_s)
        self.cpu_s = max(0.0, cpu - (KERNEL_LOADING[1] - self._loading[1]))


def _reset_peak_rss() -> None:
    """Start this stream's peak-memory window (Linux: reset VmHWM), so that a worker process that runs
    several cells reports each cell's own peak, not the largest of all cells so far."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # not Linux (or not permitted): the process-lifetime peak below
        pass


def _peak_rss_mb() -> float:
    """Peak resident memory (MB) since :func:`_reset_peak_rss`: the data, the learner and what it allocated."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024.0
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
