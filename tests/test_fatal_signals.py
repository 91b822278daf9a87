"""The fatal signals' handlers read and put back whole (olb/grid/running/backends/fatal_signals.py), C handlers
included: what keeps a JVM's handlers across Ray's start and shutdown (tests/test_moa.py runs that with a JVM)."""

from __future__ import annotations

import faulthandler
import signal
import struct

from olb.grid.running.backends.fatal_signals import (
    FATAL_SIGNALS,
    fatal_signal_actions,
    fatal_signal_handlers_kept,
    restore_fatal_signal_actions,
)


SA_RESTORER = 0x04000000  # the C library's own flag, added whenever it sets an action


def handlers() -> dict[int, tuple[int, bytes, int]]:
    """Each fatal signal's handler, blocked signals and flags, as the kernel holds them (glibc's struct sigaction on
    x86-64: the handler, then a mask of which the kernel keeps the first 64 signals, then the flags)."""
    fields = {}
    for signum, raw in fatal_signal_actions().items():
        (handler,), (flags,) = struct.unpack_from("P", raw, 0), struct.unpack_from("i", raw, 136)
        fields[signum] = (handler, raw[8:16], flags & ~SA_RESTORER)
    return fields


def test_handlers_set_inside_are_undone_python_and_c_alike():
    actions, before = fatal_signal_actions(), handlers()
    assert set(before) == {int(s) for s in FATAL_SIGNALS}
    try:
        with fatal_signal_handlers_kept():
            signal.signal(signal.SIGBUS, signal.SIG_IGN)
            faulthandler.enable()  # C handlers on SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL
            inside = handlers()
            assert all(inside[s][0] != before[s][0] for s in before)
        assert handlers() == before
    finally:  # Python's own record of both as before too, then the actions themselves
        faulthandler.disable()
        signal.signal(signal.SIGBUS, signal.SIG_DFL)
        restore_fatal_signal_actions(actions)
