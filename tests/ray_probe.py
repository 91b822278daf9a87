"""What a Ray cluster exposes, seen from outside: the sockets its processes listen on, and whether a process
without the cluster's token can join it and run code."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

OUTSIDER = """\
import sys

import ray

try:
    ray.init(address=sys.argv[1], log_to_driver=False, include_dashboard=False)
    out = ray.get(ray.remote(lambda: __import__("subprocess").check_output(["id"], text=True)).remote(), timeout=30)
except Exception as err:  # noqa: BLE001
    print("REFUSED", type(err).__name__, err)
    raise SystemExit(3)
print("RAN", out)
"""


def descendants(pid: int) -> set[int]:
    """``pid`` and every live process below it (by parent PID)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        out.add(p)
        todo += children.get(p, [])
    return out


def listeners(pids: set[int]) -> list[tuple[str, str]]:
    """``(local address, process)`` of every listening TCP socket of ``pids`` (``ss -ltnp``)."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        owners = {int(p): name for name, p in re.findall(r'\("([^"]*)",pid=(\d+),', line)}
        for pid in owners.keys() & pids:
            found.append((line.split()[3], owners[pid]))
    return found


def on_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    return host.removeprefix("::ffff:").startswith("127.") or host == "::1"


def outsiders(address: str, *envs: dict, timeout: float = 90) -> list[tuple[int, str]]:
    """One process per ``env`` (same user, no Ray settings but ``env``, a HOME without ~/.ray/auth_token), all
    at once, each connecting to ``address`` and trying to run ``id`` there: ``(exit code, output)`` of each."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    home = Path(f"/tmp/olb-outsider-{os.getpid()}")
    home.mkdir(exist_ok=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OUTSIDER, address],
            env={**clean, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0", **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for env in envs
    ]
    results = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0] + f"\n(still trying after {timeout:g} s: killed)"
        results.append((proc.returncode, out))
    shutil.rmtree(home, ignore_errors=True)
    return results
