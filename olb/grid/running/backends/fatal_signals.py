"""The fatal signals' handlers kept across Ray's start and shutdown in the grid's own process.

A JVM in the process (MOA's learners, :mod:`olb.learners.moa_jvm`) raises SIGSEGV on purpose (safepoint polls,
implicit null checks) and must keep handling it. Ray's driver installs a C++ failure handler over the fatal signals
when it starts (unless ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER`` was set before ``ray`` was first imported), and
``ray.shutdown()`` then resets them to the default action, whoever had installed a handler since: the JVM's next
intentional SIGSEGV would end the process. ``ray.init`` also enables Python's fault handler over them.

The handlers are read and written whole (``sigaction``, through the C library), C handlers included, which
Python's :mod:`signal` cannot restore.
"""

from __future__ import annotations

import ctypes
import signal
from collections.abc import Iterator
from contextlib import contextmanager

# the synchronous fatal signals (SIGTERM is the grid's, restored in Python); a JVM handles SIGSEGV, SIGBUS, SIGILL
# and SIGFPE
FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)
SIGACTION_BYTES = 256  # more than any C library's struct sigaction (glibc's is 152 bytes on x86-64)

_libc = ctypes.CDLL(None, use_errno=True)
_sigaction = getattr(_libc, "sigaction", None)  # absent on Windows: nothing to keep there


def fatal_signal_actions() -> dict[int, bytes]:
    """The fatal signals' current actions, each as its C ``struct sigaction``."""
    if _sigaction is None:
        return {}
    actions = {}
    for signum in FATAL_SIGNALS:
        action = ctypes.create_string_buffer(SIGACTION_BYTES)
        if _sigaction(int(signum), None, action) == 0:
            actions[int(signum)] = action.raw
    return actions


def restore_fatal_signal_actions(actions: dict[int, bytes]) -> None:
    """Put back actions read by :func:`fatal_signal_actions`."""
    for signum, raw in actions.items():  # none where there is no sigaction
        assert _sigaction is not None
        if _sigaction(signum, ctypes.create_string_buffer(raw, SIGACTION_BYTES), None) != 0:
            raise OSError(ctypes.get_errno(), f"sigaction({signal.Signals(signum).name}) failed")


@contextmanager
def fatal_signal_handlers_kept() -> Iterator[None]:
    """The fatal signals' handlers at the end as at the start (for ``ray.init`` and ``ray.shutdown``)."""
    actions = fatal_signal_actions()
    try:
        yield
    finally:
        restore_fatal_signal_actions(actions)
