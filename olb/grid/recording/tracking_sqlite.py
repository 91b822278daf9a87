"""MLflow on a SQLite file: the default store (``sqlite:///mlflow.db`` in the working directory).

A write waits for SQLite's lock (MLflow's busy time-out of 20 s, then retries) within the deadline of every call
(``tracking.timeout_s`` plus a few seconds, :mod:`olb.grid.recording.tracking_connection`): a lock another process holds
longer ends the grid (:class:`~olb.grid.lost.TrackingLost`, exit 4) naming that process, found in
``/proc/locks`` (SQLite's locks are POSIX locks on the database file).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from olb.grid.recording.tracking import MlflowTracker
from olb.paths import unwritable


class MlflowSqliteTracker(MlflowTracker):
    """MLflow on a SQLite file: the store is created under a file lock (grids started at the same time on a fresh
    file do not race in MLflow's schema migration), artifacts go beside the file, and writes are retried while
    another grid holds SQLite's lock, up to the deadline; beyond, the grid ends naming the process that holds it."""

    bounded = True
    concurrent_writes = False  # SQLite takes one writer at a time: more threads would only wait for its lock

    def _connect(self, timeout_s: float) -> None:
        """The database file's folder must exist and be writable: MLflow would create the folder (a mistyped
        path would become a new store nobody looks at) or fail with a traceback."""
        path = database_path(self.uri)
        problem = unwritable(Path(path).parent, create=False) if path is not None else None
        if problem:
            raise FileNotFoundError(problem)

    def _opening(self) -> AbstractContextManager[None]:
        return _sqlite_lock(self.uri, self.timeout_s)

    def _artifact_location(self, experiment_name: str) -> str | None:
        return sqlite_artifact_location(self.uri, experiment_name)

    def _silent(self, seconds: float) -> str:
        holders = lock_holders(database_path(self.uri))
        if not holders:
            return super()._silent(seconds)
        return f"{self.store_name()} is locked by another process for over {seconds:g} s: held by {named(holders)}"


def database_path(uri: str) -> str | None:
    """The database file of a ``sqlite:///`` URI (None: in memory).

    >>> database_path("sqlite:////tmp/grid/mlflow.db?timeout=30")
    '/tmp/grid/mlflow.db'
    """
    path = uri[len("sqlite:///") :].split("?")[0] if uri.startswith("sqlite:///") else None
    return None if not path or path.startswith(":memory:") else path


def lock_holders(path: str | None) -> list[int]:
    """The other processes holding a lock (POSIX or flock) on the file at ``path`` (``/proc/locks``), writers
    first."""
    try:
        st = os.stat(path) if path else None
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    if st is None:
        return []
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    writes: dict[int, bool] = {}  # pid -> holds a write lock
    for line in lines:
        fields = line.split()  # "1: POSIX ADVISORY WRITE 4242 fe:00:2146787 1073741825 1073741825"
        if len(fields) >= 6 and fields[1] in ("POSIX", "FLOCK") and fields[5] == inode and fields[4].isdigit():
            pid = int(fields[4])
            if pid != os.getpid():
                writes[pid] = writes.get(pid, False) or fields[3] == "WRITE"
    return sorted(writes, key=lambda pid: (not writes[pid], pid))


def named(pids: list[int]) -> str:
    """``pids`` for a message: "pid N (its command line), ..."."""
    return ", ".join(f"pid {pid} ({command_line(pid)})" for pid in pids) if pids else "a process not found"


def command_line(pid: int) -> str:
    """A process's command line on one line (up to 200 characters), or "?" if it cannot be read."""
    try:
        text = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return "?"
    return " ".join(text.replace("\0", " ").split())[:200] or "?"


def sqlite_artifact_location(uri: str, experiment_name: str) -> str | None:
    """For a SQLite store, ``mlruns/<experiment name>`` beside the database file (MLflow's default is relative to
    the working directory, so artifacts would land wherever the grid was started); None for any other store.

    >>> sqlite_artifact_location("sqlite:////tmp/grid/mlflow.db", "olb/table3")
    'file:///tmp/grid/mlruns/olb/table3'
    """
    path = database_path(uri)
    return None if path is None else (Path(path).resolve().parent / "mlruns" / experiment_name).as_uri()


@contextmanager
def _sqlite_lock(uri: str, timeout_s: float) -> Iterator[None]:
    """An exclusive lock for a sqlite URI's database file (nothing for other stores), kept in the temp dir and
    removed when released (a driver that finds the file replaced meanwhile locks the new one); TimeoutError naming
    its holder when another process has held it for ``timeout_s``."""
    import fcntl
    import hashlib
    import time

    path = database_path(uri)
    if path is None:
        yield
        return
    key = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"olb-sqlite-{os.getuid()}-{key}.lock"
    deadline = time.monotonic() + timeout_s
    while True:
        fh = open(lock, "a")
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holders = named(lock_holders(str(lock)))
                    fh.close()
                    raise TimeoutError(
                        f"another grid has been opening {path} for over {timeout_s:g} s (its lock {lock} is held "
                        f"by {holders})"
                    ) from None
                time.sleep(0.05)
        try:
            if os.stat(lock).st_ino == os.fstat(fh.fileno()).st_ino:
                break  # the file we hold is still the lock (not removed by its previous holder)
        except FileNotFoundError:
            pass
        fh.close()
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()
