"""A worker node cut off from the network mid-grid costs seconds: a two-node Ray cluster started with
slurm/ray_node.sh, the head on this machine's side of a veth pair and the worker (two CPUs) in a network
namespace of its own at the other end; while the worker runs two cells (its worker processes' titles say so) its
end of the link goes down. Ray declares the node dead within its health check (slurm/ray_node.sh's settings),
the grid resubmits the two cells and says so, and completes on the head within two minutes of the partition,
every cell once in the store. The test makes its own namespace and addresses (10.200.N.1 and .2, N from its
PID), stops what it started by PID and removes the namespace by name."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from support import local_cluster
from test_ray_cluster import TwoNodes

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[1]
PID = os.getpid()
NAMESPACE = f"olbtest-{PID}"
HOST_LINK, NODE_LINK = f"olbh{PID}", f"olbw{PID}"  # at most 15 characters
SUBNET = f"10.200.{PID % 250 + 1}"
HEAD_IP, WORKER_IP = f"{SUBNET}.1", f"{SUBNET}.2"
CELLS, DELAY_S = 9, 4.0


def _ip(*args: str, netns: bool = False) -> None:
    command = ["ip", *(["netns", "exec", NAMESPACE, "ip"] if netns else []), *args]
    subprocess.run(command, check=True, capture_output=True, timeout=30)


def _network() -> None:
    """The namespace, the veth pair between it and this machine, their addresses, the links up."""
    _ip("netns", "add", NAMESPACE)
    _ip("link", "add", HOST_LINK, "type", "veth", "peer", "name", NODE_LINK)
    _ip("link", "set", NODE_LINK, "netns", NAMESPACE)
    _ip("addr", "add", f"{HEAD_IP}/24", "dev", HOST_LINK)
    _ip("link", "set", HOST_LINK, "up")
    _ip("addr", "add", f"{WORKER_IP}/24", "dev", NODE_LINK, netns=True)
    _ip("link", "set", NODE_LINK, "up", netns=True)
    _ip("link", "set", "lo", "up", netns=True)


def _remove_network() -> None:
    for command in (["ip", "link", "del", HOST_LINK], ["ip", "netns", "del", NAMESPACE]):
        subprocess.run(command, capture_output=True, timeout=30)  # absent already: nothing to remove


@pytest.fixture
def partitioned_cluster():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("a network namespace needs root and iproute2's ip")
    try:
        _network()
    except subprocess.CalledProcessError as err:
        _remove_network()
        pytest.skip(f"cannot make a network namespace here: {err.stderr.decode().strip()}")
    nodes = TwoNodes(HEAD_IP, WORKER_IP, ("ip", "netns", "exec", NAMESPACE))
    nodes.env.pop("OLB_KERNELS_DIR")  # the user's kernels, built once: no build to wait for
    try:
        nodes.start(worker_cpus=2)
        r = nodes.wait(2, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr + nodes.logs()
        yield nodes
    finally:
        nodes.stop()
        _remove_network()
        shutil.rmtree(nodes.root, ignore_errors=True)


def _cells_running_on(session: int) -> int:
    """Cells running in the Ray processes of a node's session (Ray titles a worker by the task it runs)."""
    running = 0
    for pid in local_cluster.session_pids(session):
        try:
            running += Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::execute_in_worker")
        except OSError:  # ended meanwhile
            continue
    return running


def _runs_per_cell(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as con:
        rows = con.execute("select value, count(*) from tags where key = 'olb.cell_id' group by value").fetchall()
    return dict(rows)


def test_a_partitioned_worker_costs_seconds_and_every_cell_is_recorded_once(partitioned_cluster, tmp_path):
    cluster = partitioned_cluster
    db = tmp_path / "mlflow.db"
    cmd = [sys.executable, "-m", "olb.grid", "imports=[olb.ops.testing]", "algorithms=[_grid_stub]"]
    cmd += [f"seeds={CELLS}", f"+algorithm._grid_stub.params.delay_s={DELAY_S}", "name=partition", "plots=false"]
    cmd += ["tracking.cell_artifacts=false", f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path}/out"]
    env = {**cluster.env, "RAY_ADDRESS": cluster.address}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env["PYTHONPATH"]])
    with open(tmp_path / "grid.log", "w+") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        try:
            worker = int((cluster.root / "worker.pid").read_text())
            deadline = time.monotonic() + 300
            while _cells_running_on(worker) < 2:  # both of the worker's CPUs run a cell
                assert proc.poll() is None, log.read()
                assert time.monotonic() < deadline, "the worker ran no two cells at once within 300 s"
                time.sleep(0.1)
            _ip("link", "set", NODE_LINK, "down", netns=True)
            partitioned = time.monotonic()
            code = proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        seconds = time.monotonic() - partitioned
        log.seek(0)
        out = log.read()
    print(f"the grid ended {seconds:.1f} s after the partition")  # shown with pytest -s
    assert code == 0, out[-4000:] + cluster.logs()
    assert seconds < 120, (seconds, out[-3000:])
    lost = [line for line in out.splitlines() if f"node {WORKER_IP} lost:" in line]
    assert len(lost) == 1, out[-3000:]
    # the two running there, run again on the head, and the cells that had not started (Ray may queue them there)
    assert re.search(r"lost: 2 cells resubmitted( with \d waiting cells?)?$", lost[0]), lost
    assert f"{CELLS} cells: {CELLS} run, 0 resumed, 0 failed" in out, out[-3000:]
    cells = pd.read_csv(tmp_path / "out" / "cells.csv")
    assert len(cells) == CELLS and cells["cell_id"].is_unique and (cells["status"] == "FINISHED").all()
    assert _runs_per_cell(db) == {cell_id: 1 for cell_id in cells["cell_id"]}
