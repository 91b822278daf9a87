"""Cells on a lost node resubmitted at once: each cell's worker announces its node when it starts
(:func:`announce_node`, in Ray's key-value store, keyed by the Ray task id), and a thread of the driver polls Ray's
list of nodes (:class:`NodeWatch`). When a node that was alive is declared dead, the cells it ran are cancelled
and submitted again (:meth:`olb.grid.running.backends.ray_base.RayBackend.run`).

Without this, a cell on a node cut off from the network fails only when the driver's connection to its worker
gives up (gRPC's keepalive, minutes after Ray declared the node dead). How soon Ray declares a node dead is the
head's health check (``RAY_health_check_*``: slurm/ray_node.sh sets it; docs/cluster.md). The poll runs in a
thread of its own, so that a Ray head that stops answering never stalls the driver's loop (the head check
handles it). A cancelled cell's result, should its node come back, is dropped: only the resubmitted one is
recorded.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

log = logging.getLogger("olb.grid")

NAMESPACE = "olb-task-nodes"  # Ray's key-value namespace of the announcements (key: job id / task id)


def announce_node() -> None:
    """In a Ray worker: record the node running the current task (a no-op outside a Ray task)."""
    import ray
    from ray.experimental import internal_kv

    context = ray.get_runtime_context()
    task_id = context.get_task_id()
    if task_id is None:
        return
    try:
        internal_kv._internal_kv_put(_key(context.get_job_id(), task_id), context.get_node_id(), namespace=NAMESPACE)
    except Exception as err:  # noqa: BLE001 - the cell runs anyway; only a lost node's resubmission needs it
        log.warning("olb.grid: could not announce this cell's Ray node: %s", err)


def _key(job_id: str, task_id: str) -> str:
    return f"{job_id}/{task_id}"


@dataclass(frozen=True)
class DeadNode:
    node_id: str
    ip: str


class NodeWatch:
    """Polls ``ray.nodes()`` every ``period_s`` in a daemon thread; :meth:`dead` hands over the nodes declared
    dead since the last call (nodes that were alive once: one that joins later is watched from then on)."""

    def __init__(self, ray: ModuleType, period_s: float = 2.0):
        self.ray, self.period_s = ray, period_s
        self._job_id = ray.get_runtime_context().get_job_id()
        self._alive: dict[str, str] = {}  # node id -> its IP
        self._dead: list[DeadNode] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poll()
        self._thread = threading.Thread(target=self._run, name="olb-node-watch", daemon=True)
        self._thread.start()

    def dead(self) -> list[DeadNode]:
        with self._lock:
            dead, self._dead = self._dead, []
        return dead

    def nodes_of(self, refs: list[Any]) -> dict[Any, str] | None:
        """The node id each of ``refs`` (object refs of running cells) announced; refs not yet announced are left
        out. None when Ray's key-value store does not answer (a warning says so): nothing is known of any."""
        from ray.experimental import internal_kv

        keys = {_key(self._job_id, ref.task_id().hex()).encode(): ref for ref in refs}
        try:
            found = internal_kv.internal_kv_get_gcs_client().internal_kv_multi_get(
                list(keys), NAMESPACE.encode(), timeout=10
            )
        except Exception as err:  # noqa: BLE001 - the head check decides whether Ray is still there
            log.warning("olb.grid: could not tell which cells ran on the lost node: %s", err)
            return None
        return {keys[key]: node.decode() for key, node in found.items()}

    def stop(self) -> None:
        """End the thread, and forget this job's announcements."""
        from ray.experimental import internal_kv

        self._stop.set()
        try:
            internal_kv._internal_kv_del(f"{self._job_id}/", del_by_prefix=True, namespace=NAMESPACE)
        except Exception:  # noqa: BLE001 - the head is gone: so are they
            pass

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self._poll()
            except Exception as err:  # noqa: BLE001 - a head that does not answer is the head check's concern
                log.debug("olb.grid: polling Ray's nodes failed: %s", err)

    def _poll(self) -> None:
        for node in self.ray.nodes():
            node_id, ip = node["NodeID"], node.get("NodeManagerAddress", "?")
            if node.get("Alive"):
                self._alive[node_id] = ip
            elif node_id in self._alive:
                del self._alive[node_id]
                with self._lock:
                    self._dead.append(DeadNode(node_id, ip))
