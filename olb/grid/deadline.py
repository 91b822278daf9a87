"""A call with a deadline: what bounds the grid's waits on a service whose own client has none (a database server
that stops answering without closing its sockets, ``ray.shutdown()`` against a stopped Ray head).

The call runs in a daemon thread; one that has not returned by its deadline is left behind, blocked, and the
caller is told (:class:`DeadlineExceeded`). A daemon thread does not keep the interpreter from exiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """A call that had not returned by its deadline (it may still return, in the thread left behind)."""


def call_within(timeout_s: float, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)``'s result (or its exception) if it returns within ``timeout_s`` seconds, else
    :class:`DeadlineExceeded`."""
    outcome: list = []  # [True, value] or [False, exception], once the call returned

    def call() -> None:
        try:
            outcome.extend((True, fn(*args, **kwargs)))
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            outcome.extend((False, err))

    thread = threading.Thread(target=call, name=f"olb-deadline-{getattr(fn, '__name__', 'call')}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not outcome:
        raise DeadlineExceeded(f"no answer within {timeout_s:g} s")
    returned, value = outcome
    if not returned:
        raise value
    return value
