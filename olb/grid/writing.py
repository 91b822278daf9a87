"""Output files written whole, and a full disk told from other errors.

cells.csv (also its periodic rewrite while the grid runs), table.csv, table.md and the exports are written to a
temporary file in their folder and renamed over the old one (:func:`write_text`, :func:`write_csv`): a reader,
a killed driver or a full disk never leaves half a file, only the last complete one. A write that fails because
the disk is full, over its quota or read-only (:func:`full_disk_error`, also SQLite's "database or disk is full"
from the tracking store) raises :class:`DiskFull`, which ends the grid like a lost service (exit 4) with one line
naming the folder.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import pandas as pd

from olb.grid.lost import InfrastructureLost

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
SQLITE_FULL = "database or disk is full"  # SQLite's SQLITE_FULL, as sqlite3 (and SQLAlchemy, MLflow) word it


class DiskFull(InfrastructureLost):
    """A disk the grid writes to is full, over its quota or read-only."""

    what = "disk"

    def __init__(self, folder: str | os.PathLike[str], why: str):
        self.folder = Path(folder)
        super().__init__(
            f"the disk holding {self.folder} is full or read-only ({why}); free space there and rerun the same "
            "command to complete the grid"
        )


def full_disk_error(err: BaseException) -> str | None:
    """Why ``err`` (or an error that caused it) says a disk is full, over its quota or read-only; None if it does
    not."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in FULL_ERRNOS:
            return os.strerror(cause.errno)
        if SQLITE_FULL in str(cause):
            return SQLITE_FULL
        cause = cause.__cause__ or cause.__context__
    return None


def disk_full(err: BaseException, folder: str | os.PathLike[str]) -> DiskFull | None:
    """``err`` as a :class:`DiskFull` naming ``folder`` (or the folder of the file the error names), or None when
    it is no full disk."""
    if isinstance(err, DiskFull):
        return err
    why = full_disk_error(err)
    if why is None:
        return None
    named = getattr(err, "filename", None)
    return DiskFull(Path(named).parent if isinstance(named, str) else folder, why)


def write_whole(path: Path, write: Callable[[TextIO], object]) -> None:
    """Write ``path`` through ``write(file)``: into a new file beside it (created exclusively, no link followed),
    flushed to the disk, then renamed over ``path``. On failure the new file is removed and ``path`` is as it
    was; a full disk raises :class:`DiskFull`."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "w", newline="") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException as err:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        why = full_disk_error(err) if isinstance(err, Exception) else None
        if why is not None:
            raise DiskFull(path.parent, why) from err
        raise


def write_text(path: Path, text: str) -> None:
    write_whole(path, lambda f: f.write(text))


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    write_whole(path, lambda f: frame.to_csv(f, index=False))
