"""Helpers shared by the tests that drive real processes (Slurm, Ray nodes, a killed grid driver)."""

from __future__ import annotations

import importlib.util
import socket
import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_local_cluster():
    """slurm/local_cluster.py (slurm/ holds scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("olb_local_cluster", ROOT / "slurm" / "local_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


local_cluster = _load_local_cluster()


def finished_cells(db: Path) -> set[str]:
    """Cell ids whose MLflow run is FINISHED (read-only, straight from the SQLite store, while a grid writes it)."""
    if not db.exists():
        return set()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        rows = con.execute(
            "select t.value from tags t join runs r on r.run_uuid = t.run_uuid "
            "where t.key = 'olb.cell_id' and r.status = 'FINISHED'"
        ).fetchall()
    except sqlite3.OperationalError:  # the schema is being created, or the store is locked
        return set()
    finally:
        con.close()
    return {r[0] for r in rows}


def session_processes(sid: int) -> dict[int, str]:
    """pid -> command line of every live process in session ``sid``."""
    found = {}
    for pid in local_cluster.session_pids(sid):
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
        except OSError:  # exited meanwhile
            continue
    return found


def answers(address: str, timeout: float = 2.0) -> bool:
    """Whether something accepts a TCP connection at ``host:port`` (a port probe; olb asks the Ray head a real
    request instead: :func:`olb.grid.running.backends.ray_head.head_answers`)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False
