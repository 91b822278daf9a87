"""MLflow on a SQLite file: the default store (``sqlite:///mlflow.db`` in the working directory)."""

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
    another grid holds SQLite's lock (:meth:`MlflowTracker._retry`)."""

    def _connect(self, timeout_s: float) -> None:
        """The database file's folder must exist and be writable: MLflow would create the folder (a mistyped
        path would become a new store nobody looks at) or fail with a traceback."""
        path = sqlite_file(self.uri)
        problem = unwritable(path.parent, create=False) if path is not None else None
        if problem:
            raise FileNotFoundError(problem)

    def _opening(self) -> AbstractContextManager[None]:
        return _sqlite_lock(self.uri)

    def _artifact_location(self, experiment_name: str) -> str | None:
        return sqlite_artifact_location(self.uri, experiment_name)


def sqlite_artifact_location(uri: str, experiment_name: str) -> str | None:
    """For a SQLite store, ``mlruns/<experiment name>`` beside the database file (MLflow's default is relative to
    the working directory, so artifacts would land wherever the grid was started); None for any other store.

    >>> sqlite_artifact_location("sqlite:////tmp/grid/mlflow.db", "olb/table3")
    'file:///tmp/grid/mlruns/olb/table3'
    """
    path = sqlite_file(uri)
    return None if path is None else (path.resolve().parent / "mlruns" / experiment_name).as_uri()


def sqlite_file(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (relative to the working directory, or absolute with four
    slashes), None for an in-memory database or another store."""
    path = uri[len("sqlite:///") :].split("?")[0] if uri.startswith("sqlite:///") else ""
    return Path(path) if path and not path.startswith(":memory:") else None


@contextmanager
def _sqlite_lock(uri: str) -> Iterator[None]:
    """An exclusive lock for a sqlite URI's database file (nothing for other stores), kept in the temp dir and
    removed when released (a driver that finds the file replaced meanwhile locks the new one)."""
    import fcntl
    import hashlib

    path = sqlite_file(uri)
    if path is None:
        yield
        return
    key = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"olb-sqlite-{os.getuid()}-{key}.lock"
    while True:
        fh = open(lock, "a")
        fcntl.flock(fh, fcntl.LOCK_EX)
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
