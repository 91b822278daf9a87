"""Waits with a deadline: a call that does not return in time is reported, not waited on; and a port that accepts
connections but never answers (what a stopped Ray head looks like) is told from a head that answers."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from olb.grid.deadline import DeadlineExceeded, call_within
from olb.grid.lost import RayLost
from olb.grid.running.backends.ray_head import check_head, head_answers
from support import answers


def test_a_call_within_its_deadline_returns_or_raises_as_itself():
    assert call_within(5, lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(KeyError, match="x"):
        call_within(5, {}.__getitem__, "x")


def test_a_call_past_its_deadline_is_left_behind():
    release = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded, match="no answer within 0.3 s"):
        call_within(0.3, release.wait, 60)
    assert time.monotonic() - t0 < 5
    release.set()


def test_a_port_that_accepts_but_never_answers_is_no_ray_head():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        assert answers(address)  # a TCP connect says yes
        t0 = time.monotonic()
        assert not head_answers(address, 0.5)  # a request says no, within its deadline
        assert time.monotonic() - t0 < 5
        with pytest.raises(RayLost, match=f"the Ray head at {address} does not answer"):
            check_head(address, 0.5)
    check_head("ray://127.0.0.1:10001", 0.5)  # a Ray Client address: Ray's own to resolve


def test_a_sqlite_store_opened_by_another_grid_for_too_long_is_refused(tmp_path):
    """The lock under which a grid creates a SQLite store: a second grid waits for it at most its time-out."""
    from olb.grid.recording.tracking_sqlite import _sqlite_lock

    uri = f"sqlite:///{tmp_path / 'x.db'}"
    with _sqlite_lock(uri, 30):
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match=f"another grid has been opening {tmp_path / 'x.db'} for over 0.3 s"):
            with _sqlite_lock(uri, 0.3):
                pass
        assert time.monotonic() - t0 < 5
    with _sqlite_lock(uri, 0.3):  # free again
        pass
