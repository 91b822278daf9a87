"""The Ray head asked, not knocked on, and Ray let go of within a bound.

A TCP connection proves nothing: the sockets of a head whose processes are stopped (SIGSTOP, a frozen VM) still
accept, so the head is asked a question, its GCS server's ``CheckAlive``, with a deadline. Before
``ray.init`` joins a cluster the head is asked once (a head that does not answer is
:class:`~olb.grid.lost.RayLost` within ``backend.head_timeout_s``, where ``ray.init`` would retry for minutes),
and ``ray.shutdown()``, which waits on that head, gets a deadline too: the grid's results are stored by then, so
on time-out it is left behind, and the command ends its process at once (:func:`exit_if_left_behind`: the
interpreter's own exit would tear down Ray's objects under the thread still in them, and crash).
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from types import ModuleType

from olb.grid.deadline import DeadlineExceeded, call_within
from olb.grid.lost import RayLost
from olb.grid.running.backends.fatal_signals import fatal_signal_handlers_kept

log = logging.getLogger("olb.grid")
_left_behind: list[bool] = []  # [True] once a ray.shutdown() was left behind in this process


def head_answers(address: str, timeout_s: float) -> bool:
    """Whether the GCS server at ``host:port`` answers a request within ``timeout_s`` (a refusal, such as a
    missing token, is an answer)."""
    import grpc  # type: ignore[import-untyped]  # no stubs
    from ray._private.gcs_utils import create_gcs_channel
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    channel = create_gcs_channel(address)  # with Ray's token, when it has one
    try:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        stub.CheckAlive(gcs_service_pb2.CheckAliveRequest(), timeout=timeout_s)  # type: ignore[attr-defined]
    except grpc.RpcError as err:
        return err.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)
    finally:
        channel.close()
    return True


def check_head(address: str | None, timeout_s: float) -> None:
    """RayLost when the head at ``address`` (``host:port``; not ``auto`` nor a Ray Client's ``ray://``, which Ray
    resolves itself) does not answer within ``timeout_s``."""
    from ray.exceptions import AuthenticationError

    if not address or address == "auto" or "://" in address:
        return
    try:
        answered = head_answers(address, timeout_s)
    except AuthenticationError:  # no token to ask with: ray.init says so
        return
    if not answered:
        raise RayLost(f"the Ray head at {address} does not answer (no reply within {timeout_s:g} s)")


def shutdown_within(ray: ModuleType, timeout_s: float) -> bool:
    """``ray.shutdown()`` if it returns within ``timeout_s``; else it is left behind (and not run again at exit),
    with a warning, and False."""
    try:
        with fatal_signal_handlers_kept():  # Ray resets them to the default action, a JVM's too
            call_within(timeout_s, ray.shutdown)
    except DeadlineExceeded:
        atexit.unregister(ray.shutdown)  # Ray's own exit hook would wait on it again
        _left_behind[:] = [True]
        log.warning("olb.grid: Ray did not shut down within %g s (its head does not answer); left behind", timeout_s)
        return False
    return True


def exit_if_left_behind(code: int | str | None) -> None:
    """End the process now with ``code`` (``sys.exit``'s) if a ``ray.shutdown()`` was left behind, its output and
    logs flushed; else nothing."""
    if not _left_behind:
        return
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
