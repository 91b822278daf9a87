"""Every Ray node ready before the first cell: its compiled kernels built or loaded by one warm-up task per node
(pinned to it by node id), then a worker process per CPU started and warmed (:func:`prestart_workers`), both run
and awaited when the Ray backend starts.

On a node whose processor has no build yet the task builds olb's kernels (:mod:`olb.kernels`), once for all the
nodes of that processor type that share the cache folder (a home folder over NFS, say: the build's lock and its
atomic rename are safe there); on the others it loads them. A cell then never waits for a build, and its
``compile_s`` holds loading only. The wait is bounded; a node whose warm-up fails or does not finish in time is
named in a warning, and its cells make the kernels ready themselves (their ``compile_s`` then holds it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any

from olb.kernels import LOCK_TIMEOUT_S

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray.actor import ActorHandle

log = logging.getLogger("olb.grid")
WARM_UP_TIMEOUT_S = LOCK_TIMEOUT_S + 60.0  # olb.kernels' wait for another process's build, and its own (bounded)


def ready_nodes(ray: ModuleType, timeout_s: float = WARM_UP_TIMEOUT_S) -> list[dict[str, Any]]:
    """Run :func:`warm_up` once on every alive node with CPUs and wait for them all (at most ``timeout_s``);
    each node's report (``node_ip``, ``mode``, ``built_s``, ...), one log line for all."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [node for node in ray.nodes() if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) > 0]
    if not nodes:
        return []
    started = time.perf_counter()
    log.info("olb.grid: making olb's compiled kernels ready on %d node(s) (a build, where needed, once)...", len(nodes))
    task = ray.remote(num_cpus=1, max_retries=0)(warm_up)
    refs = {
        task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote(): node
        for node in nodes
    }
    done, pending = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
    reports = []
    for ref in done:
        try:
            reports.append(ray.get(ref))
        except Exception as error:  # noqa: BLE001 - a node's failure is reported, not the grid's end
            log.warning(
                "olb.grid: node %s could not make the kernels ready: %s", refs[ref]["NodeManagerAddress"], error
            )
    for ref in pending:
        log.warning(
            "olb.grid: node %s did not make the kernels ready within %.0f s; its cells make them ready themselves",
            refs[ref]["NodeManagerAddress"],
            timeout_s,
        )
    log.info("olb.grid: kernels ready in %.1f s: %s", time.perf_counter() - started, describe(reports))
    return reports


def warm_up() -> dict[str, Any]:
    """On a node: make olb's kernels ready in this worker (built where missing, loaded); what was done."""
    import ray

    from olb import kernels

    report = kernels.ready()
    return {**report, "node_ip": ray.util.get_node_ip_address()}


def describe(reports: list[dict[str, Any]]) -> str:
    """One phrase per node: built (in how long), loaded, or numba's JIT (why)."""
    parts = []
    for report in sorted(reports, key=lambda report: report["node_ip"]):
        if report["mode"] == "jit":
            parts.append(f"{report['node_ip']} runs numba's JIT ({report['jit_because']})")
        elif report["built_s"]:
            parts.append(f"built on {report['node_ip']} in {report['built_s']:.1f} s")
        else:
            parts.append(f"loaded on {report['node_ip']}")
    return ", ".join(parts) or "no node reported"


def prestart_workers(ray: ModuleType, slots: int, timeout_s: float = WARM_UP_TIMEOUT_S) -> list[int]:
    """Start one worker process per CPU slot and load in each what a cell runs (olb's learners and kernels), all
    at once, before the first cell; the process ids of those ready within ``timeout_s``.

    Ray starts a worker when a task needs one, so without this the first wave of cells waits for its workers, a
    node starting them a few at a time, and a one-second cell waits several seconds. Each warm-up task holds its
    CPU until all have arrived at a gate (a CPU-less actor), so that every slot gets a process of its own; the
    processes then wait idle in Ray's pool for the cells. The gate's wait is bounded: a warm-up that is late is
    cancelled and its slot starts its process with its first cell."""
    if slots <= 1:
        return []
    started = time.perf_counter()
    gate = ray.remote(num_cpus=0, max_concurrency=slots + 1)(WarmGate).remote(slots)
    task = ray.remote(num_cpus=1, max_retries=0)(warm_worker)
    refs = [task.remote(gate, timeout_s) for _ in range(slots)]
    done, pending = ray.wait(refs, num_returns=len(refs), timeout=timeout_s + 5.0)
    for ref in pending:
        ray.cancel(ref, force=True)
    pids = [pid for pid in (_pid(ray, ref) for ref in done) if pid is not None]
    ray.kill(gate)
    log.info(
        "olb.grid: %d of %d worker process(es) started and warmed in %.1f s",
        len(set(pids)),
        slots,
        time.perf_counter() - started,
    )
    return pids


class WarmGate:
    """Where the warm-up tasks wait for each other: :meth:`arrive` returns once ``parties`` tasks have arrived (or
    after ``timeout_s``)."""

    def __init__(self, parties: int):
        self.parties = parties
        self.arrived = 0
        self.all_arrived = asyncio.Event()

    async def arrive(self, timeout_s: float) -> int:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.all_arrived.set()
        try:
            await asyncio.wait_for(self.all_arrived.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass
        return self.arrived


def warm_worker(gate: ActorHandle, timeout_s: float) -> int:
    """In a worker: import what a cell runs, make the kernels ready, then wait at ``gate``; this process's id."""
    import os

    import ray

    import olb.grid.running.worker  # noqa: F401 - loaded once here rather than in the first cell
    import olb.run  # noqa: F401
    from olb import kernels

    kernels.ready()
    ray.get(gate.arrive.remote(timeout_s), timeout=timeout_s + 1.0)
    return os.getpid()


def _pid(ray: ModuleType, ref: ObjectRef) -> int | None:
    try:
        return ray.get(ref)
    except Exception:  # noqa: BLE001 - a slot whose warm-up failed starts its process with its first cell
        return None
