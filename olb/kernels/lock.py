"""One build of olb's kernels at a time on a kernels' folder (:class:`BuildLock`), also over NFS."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

STALE_AFTER_S = 120.0  # a lock left unrefreshed this long, as watched by a waiting process, is a dead build's

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def read_nofollow(path: Path) -> bytes:
    """``path``'s bytes, refusing a symbolic link (``OSError``)."""
    fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    with os.fdopen(fd, "rb") as file:
        return file.read()


class BuildLock:
    """One build at a time on a kernels' folder, also when the folder is shared over NFS by several machines: a
    file created with ``O_CREAT | O_EXCL`` (atomic on NFS version 3 and later, where ``flock`` is not reliable)
    and never through a link, holding its holder's host, pid and uid, refreshed every ``HEARTBEAT_S`` while the
    build runs. A lock whose process has ended (same host) or that stayed unrefreshed for ``STALE_AFTER_S``, as
    timed by the waiting process's own clock (no clocks compared across machines), is broken. The lock only
    saves duplicate work: a build is renamed into place whole (:func:`build`), so two builds never mix."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._seen: tuple[tuple[int, int], float] | None = None  # (the lock's mtime and inode, since when)

    def take(self) -> bool:
        """Take the lock if it is free."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        except FileExistsError:
            return False
        holder = {"host": socket.gethostname(), "pid": os.getpid(), "uid": getattr(os, "getuid", lambda: -1)()}
        os.write(fd, json.dumps(holder).encode())
        self._fd = fd
        return True

    def refresh(self) -> None:
        if self._fd is not None:
            os.utime(self._fd if os.utime in os.supports_fd else self.path)

    def release(self) -> None:
        """Remove the lock, if it is still this process's (not broken as stale and taken by another)."""
        if self._fd is None:
            return
        try:
            if os.lstat(self.path).st_ino == os.fstat(self._fd).st_ino:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._fd)
            self._fd = None

    def holder(self) -> dict:
        try:
            holder = json.loads(read_nofollow(self.path))
        except (OSError, ValueError):
            return {}
        return holder if isinstance(holder, dict) else {}

    def holder_text(self) -> str:
        holder = self.holder()
        return f"pid {holder['pid']} on {holder['host']}" if {"pid", "host"} <= holder.keys() else str(self.path)

    def stale(self) -> str | None:
        """Why the lock is a dead build's (``None``: it may be alive, or is gone)."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return "not a lock file olb wrote"
        holder = self.holder()
        if holder.get("host") == socket.gethostname() and not _alive(holder.get("pid")):
            return f"its process {holder.get('pid')} has ended"
        state = (info.st_mtime_ns, info.st_ino)
        if self._seen is None or self._seen[0] != state:
            self._seen = (state, time.monotonic())
            return None
        if time.monotonic() - self._seen[1] > STALE_AFTER_S:
            return f"not refreshed for {STALE_AFTER_S:.0f} s"
        return None

    def break_stale(self) -> None:
        """Remove a stale lock (renamed aside first, so that only one of several waiters removes it)."""
        aside = self.path.with_name(f"{self.path.name}.stale-{socket.gethostname()}-{os.getpid()}")
        try:
            os.rename(self.path, aside)
            os.unlink(aside)
        except FileNotFoundError:
            pass
        self._seen = None


def _alive(pid) -> bool:
    """Whether process ``pid`` of this host runs (assumed so off POSIX, where a signal 0 would end it)."""
    if os.name != "posix" or not isinstance(pid, int) or pid <= 0:
        return os.name != "posix"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
