"""Every Ray node's compiled kernels ready before the first cell: one warm-up task per node that runs cells
(pinned to it by node id), run and awaited when the Ray backend starts.

On a node whose processor has no build yet the task builds olb's kernels (:mod:`olb.kernels`), once for all the
nodes of that processor type that share the cache folder (a home folder over NFS, say: the build's lock and its
atomic rename are safe there); on the others it loads them. A cell then never waits for a build, and its
``compile_s`` holds loading only. The wait is bounded; a node whose warm-up fails or does not finish in time is
named in a warning, and its cells make the kernels ready themselves (their ``compile_s`` then holds it).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from olb.kernels import LOCK_TIMEOUT_S

log = logging.getLogger("olb.grid")
WARM_UP_TIMEOUT_S = LOCK_TIMEOUT_S + 60.0  # olb.kernels' wait for another process's build, and its own (bounded)


def ready_nodes(ray, timeout_s: float = WARM_UP_TIMEOUT_S) -> list[dict[str, Any]]:
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
