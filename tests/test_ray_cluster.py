"""A two-node Ray cluster on one machine, started with slurm/ray_node.sh exactly as the batch script starts
its nodes (without Slurm): a head on 127.0.0.2 and a worker on 127.0.0.3, one CPU each, different ports and
temp dirs, with a fresh token (0600) as the batch script makes one. A grid runs across both nodes (every worker
process records its Ray node through the grid's ``imports`` hook), their compiled kernels built once in the one
folder they share and loaded by the other node before the first cell, a process without the token is refused by the
cluster (it cannot join it nor run anything there), a node that never joins is reported after the time-out, and stopping the nodes leaves no
process behind (checked by session id and by the nodes' unique temp dirs, stopped by PID).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from ray_probe import outsiders
from support import local_cluster

from olb import kernels
from olb.grid.auth import private_dir, token_env, write_token

ROOT = Path(__file__).resolve().parents[1]
RAY_NODE = ROOT / "slurm" / "ray_node.sh"
TOOLS = ROOT / "slurm" / "cluster_tools.py"
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PROBE = '''\
"""Imported by every Ray worker that runs a cell (the grid's ``imports``): records which node it is on."""
import os

import ray

if ray.is_initialized():  # a worker process; the driver imports this before it connects to Ray
    ctx = ray.get_runtime_context()
    path = os.path.join(os.environ["OLB_NODE_PROBE_DIR"], f"{os.getpid()}.txt")
    with open(path, "w") as f:
        f.write(f"{ctx.get_node_id()} {ray.util.get_node_ip_address()}\\n")
'''


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


class TwoNodes:
    """A head and a worker started with slurm/ray_node.sh, one CPU each unless told; the worker's command runs
    after ``worker_prefix`` (e.g. ``ip netns exec NAME``, a node in a network namespace of its own)."""

    def __init__(self, head_ip: str = HEAD_IP, worker_ip: str = WORKER_IP, worker_prefix: tuple[str, ...] = ()):
        self.head_ip, self.worker_ip, self.worker_prefix = head_ip, worker_ip, worker_prefix
        self.root = Path(tempfile.mkdtemp(prefix="olbrt-", dir="/tmp"))  # short: Ray's sockets live below it
        (self.root / "pylib").mkdir()
        (self.root / "probe").mkdir()
        (self.root / "pylib" / "olb_node_probe.py").write_text(PROBE)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "SLURM_"))}
        env["PYTHONPATH"] = os.pathsep.join([str(self.root / "pylib"), *filter(None, [env.get("PYTHONPATH")])])
        env["OLB_NODE_PROBE_DIR"] = str(self.root / "probe")
        env["OLB_PYTHON"] = sys.executable
        env["OLB_KERNELS_DIR"] = str(self.root / "kernels")  # one folder both nodes share, empty: as a cold NFS home
        self.token = write_token(private_dir(self.root / "auth") / "token")
        env.update(token_env(self.token))  # what the nodes, the waiting helper and the driver need to join
        self.env = env
        self.head_base = local_cluster.free_port_base()
        self.worker_base = local_cluster.free_port_base()
        while abs(self.worker_base - self.head_base) < 400:
            self.worker_base = local_cluster.free_port_base()
        self.address = f"{head_ip}:{self.head_base}"
        self.procs: dict[str, subprocess.Popen] = {}
        self.stopped = False

    def _node(self, name: str, *args: str, prefix: tuple[str, ...] = (), cpus: int = 1) -> None:
        log = open(self.root / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen(
            [
                *prefix,
                "bash",
                str(RAY_NODE),
                *args,
                "--num-cpus",
                str(cpus),
                "--temp-dir",
                str(self.root / name),
                "--pid-file",
                str(self.root / f"{name}.pid"),
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()

    def start(self, worker_cpus: int = 1) -> None:
        self._node("head", "head", "--port-base", str(self.head_base), "--node-ip", self.head_ip)
        deadline = time.monotonic() + 90
        while not _reachable(self.head_ip, self.head_base):
            assert self.procs["head"].poll() is None, self.logs()
            assert time.monotonic() < deadline, "the head did not open its port\n" + self.logs()
            time.sleep(0.5)
        self._node(
            "worker",
            "worker",
            "--port-base",
            str(self.worker_base),
            "--node-ip",
            self.worker_ip,
            "--head",
            self.address,
            prefix=self.worker_prefix,
            cpus=worker_cpus,
        )

    def wait(self, nodes: int, timeout: float) -> subprocess.CompletedProcess:
        watch = [f"--watch={p.pid}={name}" for name, p in self.procs.items()]
        return subprocess.run(
            [
                sys.executable,
                str(TOOLS),
                "wait",
                "--address",
                self.address,
                "--nodes",
                str(nodes),
                "--timeout",
                str(timeout),
                *watch,
            ],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout + 60,
        )

    def sessions(self) -> list[int]:
        return [int(p.read_text()) for p in self.root.glob("*.pid")]

    def stop(self) -> list[int]:
        """SIGTERM to each ray_node.sh (by PID), wait, and return the processes left (none expected)."""
        if self.stopped:
            return []
        self.stopped = True
        sessions = self.sessions()
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        return local_cluster.wait_no_leftovers(sessions, str(self.root) + "/", timeout=40)

    def logs(self) -> str:
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.root.glob("*.log"))

    def probes(self) -> list[tuple[str, str]]:
        return [tuple(p.read_text().split()) for p in (self.root / "probe").glob("*.txt")]


@pytest.fixture(scope="module")
def cluster():
    nodes = TwoNodes()
    try:
        nodes.start()
        r = nodes.wait(2, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr + nodes.logs()
        assert "all 2 Ray node(s) joined, 2 CPUs" in r.stdout, r.stdout
        yield nodes
    finally:
        nodes.stop()
        shutil.rmtree(nodes.root, ignore_errors=True)


def test_a_node_that_never_joins_times_out_with_a_message(cluster):
    t0 = time.monotonic()
    r = cluster.wait(3, timeout=3)
    assert r.returncode == 4
    assert "timed out after 3 s: 2 of 3 Ray node(s) joined" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 45


def test_an_outsider_without_the_token_is_refused(cluster):
    assert cluster.token.stat().st_mode & 0o077 == 0
    results = outsiders(
        cluster.address, {}, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64}, {"RAY_AUTH_MODE": "disabled"}
    )
    for code, out in results:
        assert code == 3 and "REFUSED" in out and "uid=" not in out, out
        assert "Authentication token is missing or incorrect" in out, out


def test_grid_runs_across_both_nodes(cluster, tmp_path):
    # no backend.address: the grid takes the cluster from RAY_ADDRESS, as under `ray job submit`
    cmd = [
        sys.executable,
        "-m",
        "olb.grid",
        "num_learners=2",
        "seeds=2",
        "plots=false",
        "tracking.cell_artifacts=false",
        f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
        "imports=[olb_node_probe]",
        f"hydra.run.dir={tmp_path}/out",
    ]
    env = {**cluster.env, "RAY_ADDRESS": cluster.address}
    r = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out + cluster.logs()
    assert "Ray ready" in out and "with 2 CPU(s)" in out, out
    assert "6 cells: 6 run, 0 resumed, 0 failed" in out, out
    cells = pd.read_csv(tmp_path / "out" / "cells.csv")
    assert len(cells) == 6 and (cells["status"] == "FINISHED").all()
    assert (tmp_path / "out" / "table.md").exists()
    probes = cluster.probes()
    assert {ip for _, ip in probes} == {HEAD_IP, WORKER_IP}, probes
    assert set(cells["node_ip"]) == {HEAD_IP, WORKER_IP}  # cells.csv says where each cell ran
    assert len({node for node, _ in probes}) == 2, probes
    # the kernels: built once, by one node's warm-up, loaded by the other's, before any cell; no cell waited for it
    ready = next(line for line in out.splitlines() if "olb.grid: kernels ready in" in line)
    assert ready.count("built on") == 1 and ready.count("loaded on") == 1, ready
    assert (cells["compile_s"] < 5.0).all(), cells["compile_s"]
    builds = [path.name for path in (cluster.root / "kernels").iterdir() if path.name != kernels.BUILD_TIMES]
    assert builds == [kernels.build_key()]  # one build (beside it the build times the next build's estimate reads)


def test_stopping_the_nodes_leaves_no_process(cluster):
    sessions = cluster.sessions()
    assert len(sessions) == 2 and all(local_cluster.session_pids(s) for s in sessions)
    left = cluster.stop()
    assert not left, f"left after stopping the nodes: {left}\n{cluster.logs()}"
    assert not (cluster.root / "head").exists() and not (cluster.root / "worker").exists()
    assert {p.returncode for p in cluster.procs.values()} == {128 + signal.SIGTERM}
    logs = cluster.logs()
    assert "Ray head on" in logs and "stopped" in logs
