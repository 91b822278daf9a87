"""A service that stops answering without going away (a process holding SQLite's write lock, a Ray head whose
GCS server is stopped with SIGSTOP: its sockets still accept) ends the grid with exit code 4 within its documented
bound, naming what stopped answering; the same command run again completes the grid, every cell recorded once.
Real parts: a second process holding the lock with ``BEGIN IMMEDIATE``, the grid's own local Ray. (PostgreSQL
stopped mid-grid: tests/test_mlflow_postgres.py, beside the database it starts.)"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_grid_lost import _finish, _start_grid, _wait_for

pytestmark = pytest.mark.e2e

HOLD_LOCK = """\
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")  # SQLite's write lock (RESERVED), held until stdin closes
print("held", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
"""


def recorded_cells(db: Path) -> list[str]:
    """The cell id of every cell run in the SQLite store at ``db`` ([] before its tables exist)."""
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        try:
            return [row[0] for row in conn.execute("select value from tags where key = 'olb.cell_id'")]
        except sqlite3.OperationalError:  # the schema is being made
            return []


def test_a_held_sqlite_lock_ends_the_grid_naming_its_holder_and_a_rerun_completes_it(tmp_path):
    db = tmp_path / "mlflow.db"
    grid = ["backend=serial", "seeds=8", "name=hung", "+algorithm._grid_stub.params.delay_s=1.0"]
    grid += [f"tracking.uri=sqlite:///{db}", "tracking.timeout_s=5", "tracking.batch_cells=1"]
    proc = _start_grid(tmp_path, *grid)
    holder = None
    try:
        _wait_for(lambda: len(recorded_cells(db)) >= 2, 240, "two recorded cells", proc)
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout.readline() == "held\n"
        held_at = time.monotonic()
        code, out, _ = _finish(proc, 120)
        seconds = time.monotonic() - held_at
        assert code == 4, out[-3000:]
        # the deadline (timeout_s + 5 s), one cell's second, the driver's end (writing its tables)
        assert seconds < 30, (seconds, out[-2000:])
        named = f"is locked by another process for over 10 s: held by pid {holder.pid} ({sys.executable} -c import"
        assert any(named in line and "BEGIN IMMEDIATE" in line for line in out.splitlines()), out[-2000:]  # one line
        assert "rerun the same command" in out and "Traceback" not in out, out[-3000:]
    finally:
        if holder is not None:
            holder.communicate("", timeout=30)  # releases the lock, and the holder ends
    assert len(set(recorded_cells(db))) == len(recorded_cells(db)) < 8
    proc = _start_grid(tmp_path, *grid)
    code, out, _ = _finish(proc, 240)
    assert code == 0, out[-3000:]
    assert "8 cells:" in out and "0 failed" in out, out[-2000:]
    cells = recorded_cells(db)
    assert len(cells) == len(set(cells)) == 8


def test_a_stopped_ray_head_ends_the_grid_within_head_timeout_and_a_rerun_completes_it(tmp_path):
    """The GCS server of the grid's own Ray stopped (SIGSTOP) mid-grid: its port still accepts connections and the
    cells already running still finish, but it answers no request. The grid ends with exit 4 within
    ``backend.head_timeout_s`` (5 s), a 2 s request, and ``ray.shutdown()``'s bound (5 s) besides the driver's
    end; the rerun completes the grid, every cell recorded once."""
    from ray_probe import descendants

    db = tmp_path / "mlflow.db"
    grid = ["backend=ray", "backend.num_cpus=2", "backend.head_timeout_s=5", "seeds=12", "name=hung"]
    grid += ["+algorithm._grid_stub.params.delay_s=2.0", f"tracking.uri=sqlite:///{db}"]
    proc = _start_grid(tmp_path, *grid)
    gcs = None
    try:
        _wait_for(lambda: len(recorded_cells(db)) >= 2, 240, "two recorded cells", proc)
        gcs = next(p for p in descendants(proc.pid) if Path(f"/proc/{p}/comm").read_text().strip() == "gcs_server")
        os.kill(gcs, signal.SIGSTOP)
        code, out, seconds = _finish(proc, 120)
        assert code == 4, out[-3000:]
        assert seconds < 40, (seconds, out[-2000:])
        assert "the Ray head at" in out and "has not answered for" in out, out[-2000:]
        assert "Traceback" not in out, out[-3000:]
    finally:
        if gcs is not None:
            stop_pid(gcs)
    cells = recorded_cells(db)
    assert len(cells) == len(set(cells)) < 12
    proc = _start_grid(tmp_path, *grid, "backend=serial")  # the same cells (a Ray's start-up spared)
    code, out, _ = _finish(proc, 300)
    assert code == 0, out[-3000:]
    assert "12 cells:" in out and "0 failed" in out, out[-2000:]
    cells = recorded_cells(db)
    assert len(cells) == len(set(cells)) == 12


def test_a_ray_head_that_does_not_answer_before_the_start_ends_the_grid_in_seconds(tmp_path, monkeypatch):
    """``backend.address`` a port that accepts connections and never answers (what a stopped head looks like from
    outside): exit 4 within ``backend.head_timeout_s``, before any work, instead of ``ray.init``'s minutes of
    retries."""
    import secrets
    import socket

    token = tmp_path / "home" / ".ray" / "auth_token"  # the cluster's token, where Ray looks for it
    token.parent.mkdir(parents=True)
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        grid = ["backend=ray", f"backend.address={address}", "backend.head_timeout_s=3", "name=hung", "tracking=off"]
        t0 = time.monotonic()
        proc = _start_grid(tmp_path, *grid)
        code, out, _ = _finish(proc, 120)
        seconds = time.monotonic() - t0
    assert code == 4, out[-3000:]
    assert f"olb.grid: error: the Ray head at {address} does not answer (no reply within 3 s); nothing was run" in out
    assert "Traceback" not in out, out[-3000:]
    assert seconds < 30, (seconds, out[-2000:])  # the 3 s and a driver's start (imports, the plan)
    assert not (tmp_path / "out").exists()


def stop_pid(pid: int) -> None:
    """Let a stopped process go on, and end it (it belonged to a driver that has ended); bounded."""
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
    deadline = time.monotonic() + 30
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":  # ended (its new parent reaps it)
            return
        assert time.monotonic() < deadline, f"pid {pid} still runs"
        time.sleep(0.1)
