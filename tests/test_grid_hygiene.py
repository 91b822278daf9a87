"""A grid leaves nothing behind in the shared temp dir: the SQLite store's lock file is removed when the grid
ends (the lock itself still excludes a second driver while it is held)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path

from olb.grid import compose, run_grid
from olb.grid.recording.tracking_sqlite import _sqlite_lock


def _lock_files(db: Path) -> list[Path]:
    """The lock files of the store ``db`` in the temp dir (whatever their naming: by its path's hash)."""
    key = hashlib.sha1(os.path.abspath(db).encode()).hexdigest()[:16]
    return list(Path(tempfile.gettempdir()).glob(f"olb-sqlite-*{key}.lock"))


def test_the_sqlite_lock_excludes_and_is_removed(tmp_path):
    uri = f"sqlite:///{tmp_path / 'x.db'}"
    order = []
    with _sqlite_lock(uri, 30):
        assert _lock_files(tmp_path / "x.db")

        def second():
            with _sqlite_lock(uri, 30):
                order.append("second")

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        order.append("first")
    t.join(10)
    assert order == ["first", "second"]  # the second waited although the first removed the file it locked
    assert not _lock_files(tmp_path / "x.db")


def test_a_grid_leaves_no_lock_file(tmp_path):
    db = tmp_path / "mlflow.db"
    grid = ["backend=serial", "seeds=1", "imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "plots=false"]
    o = run_grid(compose([*grid, f"tracking.uri=sqlite:///{db}"]), tmp_path / "out")
    assert o.exit_code == 0 and db.exists()
    assert not _lock_files(db)
