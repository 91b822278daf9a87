"""A full disk is an error, not a crash: the grid's outputs, and its SQLite store or not, on a small tmpfs the
test mounts (8 MiB, root only: skipped where mounting is not permitted), sleeping stub cells on the serial
backend; once the grid has written its periodic cells.csv the test fills the disk. The grid ends with exit 4 and
one line naming the folder, no traceback; cells.csv is the last complete one, byte for byte; the parent run is
closed FAILED when its store has room; after the disk is freed the same command completes the grid, every cell
recorded once."""

from __future__ import annotations

import errno
from contextlib import closing
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from olb.grid.writing import DiskFull, write_csv

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
CELLS = 30


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir(mode=0o700)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        unmounted = subprocess.run(["umount", str(disk)], capture_output=True, text=True, timeout=60)
        if unmounted.returncode:  # a file still open on it: detach it anyway, and say so
            subprocess.run(["umount", "--lazy", str(disk)], capture_output=True, timeout=60)
            pytest.fail(f"the tmpfs was busy at the end: {unmounted.stderr.strip()}")


def _grid(disk: Path, store: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "olb.grid",
        "imports=[olb.ops.testing]",
        "algorithms=[_grid_stub]",
        "backend=serial",
        f"seeds={CELLS}",
        "+algorithm._grid_stub.params.delay_s=0.4",
        "name=full",
        "plots=false",
        "tracking.cell_artifacts=false",
        f"tracking.uri=sqlite:///{store}",
        f"hydra.run.dir={disk}/out",
    ]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "MLFLOW_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _fill(path: Path) -> None:
    """Write ``path`` until the disk has no byte left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for chunk in (b"\0" * 2**16, b"\0" * 512, b"\0"):
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as err:
                assert err.errno == errno.ENOSPC, err
    finally:
        os.close(fd)


def test_a_file_is_written_whole_or_left_as_it_was(small_disk):
    path = small_disk / "cells.csv"
    write_csv(path, pd.DataFrame({"cell_id": ["a", "b"]}))
    before = path.read_bytes()
    _fill(small_disk / "ballast")
    with pytest.raises(DiskFull, match=f"the disk holding {small_disk} is full or read-only .No space left"):
        write_csv(path, pd.DataFrame({"cell_id": [f"cell {i}" for i in range(10000)]}))
    assert path.read_bytes() == before and sorted(p.name for p in small_disk.iterdir()) == ["ballast", "cells.csv"]


@pytest.mark.parametrize("store_on_disk", [True, False], ids=["store-on-the-disk", "store-elsewhere"])
def test_a_full_disk_ends_the_grid_in_one_line_and_the_rerun_completes(small_disk, tmp_path, store_on_disk):
    cells_csv = small_disk / "out" / "cells.csv"
    store = (small_disk if store_on_disk else tmp_path) / "mlflow.db"
    grid = _grid(small_disk, store)
    with open(tmp_path / "grid.log", "w+") as log:
        proc = subprocess.Popen(grid, env=_env(), cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while not cells_csv.exists():  # the periodic rewrite, while cells still run
                assert proc.poll() is None, log.read()
                assert time.monotonic() < deadline, "no periodic cells.csv within 180 s"
                time.sleep(0.1)
            before = cells_csv.read_bytes()
            _fill(small_disk / "ballast")
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        log.seek(0)
        out = log.read()
    assert code == 4, out[-4000:]
    said = [line for line in out.splitlines() if "is full or read-only" in line]
    assert len(said) == 1 and str(small_disk) in said[0], out[-4000:]
    assert "Traceback" not in out and "Logging error" not in out, out[-4000:]
    assert cells_csv.read_bytes() == before  # the last complete cells.csv, not a half-written one
    assert 0 < (pd.read_csv(cells_csv)["status"] == "FINISHED").sum() < CELLS
    assert not [p.name for p in cells_csv.parent.iterdir() if p.name.endswith(".tmp")]
    if not store_on_disk:  # the store has room: the parent run is closed, and says why
        with closing(sqlite3.connect(store)) as db:
            ((status, ended_by),) = db.execute(
                "select r.status, t.value from runs r join tags t on t.run_uuid = r.run_uuid "
                "where t.key = 'olb.ended_by'"
            ).fetchall()
        assert status == "FAILED" and "is full" in ended_by

    (small_disk / "ballast").unlink()
    rerun = subprocess.run(grid, env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-4000:]
    assert f"{CELLS} cells:" in rerun.stdout and "0 failed" in rerun.stdout, rerun.stdout[-2000:]
    with closing(sqlite3.connect(store)) as db:
        per_cell = db.execute(
            "select t.value, count(*) from tags t join runs r on r.run_uuid = t.run_uuid "
            "where t.key = 'olb.cell_id' and r.status = 'FINISHED' group by t.value"
        ).fetchall()
        running = db.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0]
    assert len(per_cell) == CELLS and {n for _, n in per_cell} == {1}
    assert running == 0  # the full disk's parent run closed, by its grid or by the rerun
    assert (pd.read_csv(cells_csv)["status"] == "FINISHED").sum() == CELLS
