"""What the Ray backends share: one Ray task with one CPU per cell, results yielded as cells finish.

If Ray is already initialized in the process (tests, notebooks) it is used as it is and left running;
otherwise a subclass connects (:meth:`RayBackend.connect`: a local Ray, or a cluster). A cell whose worker
process dies is re-run up to ``backend.max_retries`` times, also when Ray's memory monitor killed it (Ray's own
default retries those without end); a cell that raises is not retried (it fails the same way). A cell killed for
memory each time is recorded as failed with "out of memory", its memory use when killed and the node's limit
(:mod:`olb.grid.running.backends.ray_lost`). While cells run the Ray head is asked, once a second, whether it is alive
(:mod:`olb.grid.running.backends.ray_head`): one silent for ``backend.head_timeout_s`` ends the grid
(:class:`olb.grid.lost.RayLost`), and ``ray.shutdown()`` is given as long; the cells of a node Ray declares
dead are cancelled and submitted again at once (:mod:`olb.grid.running.backends.ray_node_loss`). A worker that
still holds more than ``backend.worker_memory_mb`` after a cell ends once its result is stored
(:mod:`olb.grid.running.backends.ray_worker`), so
a node's memory is what Ray reserved for the cells it runs, not what earlier cells left behind.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import threading
import time
from abc import abstractmethod
from collections import deque
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from olb.grid.running.backend import HEARTBEAT, Backend, NodeLost
from olb.grid.running.backends.ray_nodes import prestart_workers, ready_nodes
from olb.grid.running.backends.ray_lost import keep_logs, lost_failure
from olb.grid.running.backends.ray_node_loss import NodeWatch
from olb.grid.planning.config import BackendConfig
from olb.grid.running.backends.ray_worker import UNREACHED_CALLS, execute_in_worker
from olb.grid.planning.cost import memory_request_mb, worker_memory_bound_mb
from olb.grid.lost import RayLost
from olb.grid.running.backends.fatal_signals import fatal_signal_handlers_kept
from olb.grid.running.backends.ray_head import head_answers, shutdown_within
from olb.grid.messages import Answer, Task

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray._private.worker import RemoteFunction1

# Token authentication (also to join a cluster), no usage statistics (nor their prompt), and no C++ failure
# signal handler: with it a SIGTERM to the driver aborts the process with a stack dump instead of ending the
# grid through Python. Ray reads that switch when first imported; the fatal signals' handlers are also put back
# after ray.init and ray.shutdown (olb.grid.running.backends.fatal_signals).
QUIET_RAY_ENV = {
    "RAY_AUTH_MODE": "token",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_USAGE_STATS_PROMPT_ENABLED": "0",
    "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1",
}


class RayBackend(Backend):
    """One Ray task per cell; subclasses say how to get a Ray (:meth:`connect`) and how to let it go."""

    name = "ray"

    def __init__(self, cfg: BackendConfig):
        self.cfg = cfg
        self.owned = False  # whether this backend started (or connected) Ray, so ends it
        self.cpus = 1
        self.startup_s = 0.0
        self._in_flight: dict = {}  # Ray object ref -> its task
        self._nodes: NodeWatch | None = None  # polls Ray's nodes while started
        self._remote: RemoteFunction1[Answer, Task, float] | None = None
        self.lost = 0  # cells whose worker died
        self._head = ""  # the GCS address, polled while cells run
        self._head_lost = False
        self._head_asked = 0.0  # when the head was last asked (time.monotonic)
        self._nodes_lost = 0  # nodes lost so far: the bytes each later task asks more (see _submit)
        self.node_memory_mb = 0.0  # the largest node's memory Ray hands out (MB), known once started
        self.worker_memory_mb = 0.0  # a worker holding more after a cell ends (0: never), known once started
        self.log_dir = None  # where the Ray logs of lost cells go (the grid's output folder); None: nowhere

    @abstractmethod
    def init_kwargs(self) -> dict:
        """``ray.init``'s arguments (:meth:`_common_kwargs` and where Ray is)."""

    def _common_kwargs(self) -> dict:
        """What both Ray backends pass to ``ray.init``: no dashboard, Ray's own logging at WARNING."""
        return {
            "include_dashboard": False,
            "log_to_driver": self.cfg.log_to_driver,
            "logging_level": logging.WARNING,
            "configure_logging": True,
        }

    def connect(self, ray: ModuleType, kwargs: dict[str, object]) -> None:
        """``ray.init(**kwargs)`` (a subclass prepares and undoes around it)."""
        ray.init(**kwargs)

    @property
    def running(self) -> int:
        return min(len(self._in_flight), self.cpus)

    def start(self) -> None:
        if self._remote is not None:
            return
        for key, value in QUIET_RAY_ENV.items():
            os.environ.setdefault(key, value)
        t0 = time.perf_counter()
        import ray

        if not ray.is_initialized():
            main_thread = threading.current_thread() is threading.main_thread()
            previous = signal.getsignal(signal.SIGTERM) if main_thread else None
            fault_handler_was_on = faulthandler.is_enabled()
            with fatal_signal_handlers_kept():  # a JVM's among them (olb.grid.running.backends.fatal_signals)
                self.connect(ray, self.init_kwargs())
                if not fault_handler_was_on:
                    faulthandler.disable()  # ray.init enabled it; off, it cannot later put back what it replaced
            self.owned = True
            if main_thread and previous is not None:
                # ray.init makes SIGTERM a bare sys.exit; keep the grid's handler (it records the interruption)
                signal.signal(signal.SIGTERM, previous)
        try:
            self._head = ray.get_runtime_context().gcs_address
        except Exception:  # noqa: BLE001 - a Ray Client connection (ray://) does not say: not polled
            self._head = ""
        self._head_lost = False
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.node_memory_mb = self.memory_limit_mb()
        # a worker ends after one cell, or once it holds more than the bound after a cell (olb.grid.running.backends.ray_worker)
        self.worker_memory_mb = 0.0 if self.cfg.fresh_worker_per_cell else worker_memory_bound_mb(self.cfg)
        calls = 1 if self.cfg.fresh_worker_per_cell else UNREACHED_CALLS if self.worker_memory_mb else 0
        self._remote = ray.remote(
            num_cpus=1, max_retries=self.cfg.max_retries, retry_exceptions=False, max_calls=calls
        )(execute_in_worker)
        self._nodes = NodeWatch(ray)
        ready_nodes(ray)  # every node's compiled kernels built or loaded before the first cell (start-up time)
        if self.cfg.prestart_workers and not self.cfg.fresh_worker_per_cell:
            prestart_workers(ray, self.cpus)
        self.startup_s = time.perf_counter() - t0

    def stop(self) -> None:
        """Cancel what still runs; a subclass then lets its Ray go."""
        self.cancel()
        if self._nodes is not None and not self._head_lost:
            self._nodes.stop()
        self._nodes = None
        self._remote = None

    def _shutdown(self, ray: ModuleType) -> None:
        """``ray.shutdown()``, keeping this session's Ray logs in ``log_dir`` if a cell was lost."""
        session = ray._private.worker._global_node.get_session_dir_path() if self.lost else None
        shutdown_within(ray, self.cfg.head_timeout_s)
        if session:
            keep_logs(session, self.log_dir)

    def _check_head(self, silent_since: float | None) -> float | None:
        """None while the Ray head answers, else since when it has not; RayLost after ``head_timeout_s``. Asked at
        most once a second."""
        now = time.monotonic()
        if not self._head or now - self._head_asked < 1.0:
            return silent_since
        self._head_asked = now
        if head_answers(self._head, min(2.0, self.cfg.head_timeout_s)):
            return None
        silent_since = silent_since or now
        if now - silent_since >= self.cfg.head_timeout_s:
            self._head_lost = True
            raise RayLost(f"the Ray head at {self._head} has not answered for {now - silent_since:.0f} s")
        return silent_since

    def cancel(self) -> None:
        import ray

        if self._head_lost:  # nobody to ask
            self._in_flight.clear()
            return
        for ref in list(self._in_flight):
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished or the cluster is gone
                pass
        self._in_flight.clear()

    def memory_limit_mb(self) -> float:
        """The largest alive node's memory that Ray hands out to tasks (its ``memory`` resource), in MB."""
        import ray

        return max((n["Resources"].get("memory", 0) for n in ray.nodes() if n["Alive"]), default=0) / 2**20

    def _asked_mb(self, task: Task) -> float:
        return memory_request_mb(task.predicted_memory_mb, self.cfg, self.node_memory_mb)

    def _submit(self, task: Task) -> ObjectRef:
        """Start one task on Ray (its per-task options are set here); its object ref. The task reserves its
        predicted peak memory, so Ray runs on a node only the cells whose requests fit."""
        # a byte more per node lost: Ray files the tasks under a new scheduling class, so that they do not queue
        # behind the lease requests its submitter still holds for the lost node's raylet
        memory = int(self._asked_mb(task) * 2**20) + self._nodes_lost
        assert self._remote is not None, "submitted before start()"
        return (self._remote.options(memory=memory) if memory else self._remote).remote(task, self.worker_memory_mb)

    def _resubmit_lost(self, ray: ModuleType) -> list[NodeLost]:
        """Cancel the cells of each node declared dead since the last call and submit them again, and with them
        the cells not started anywhere yet: Ray may have queued them on that node (granted a worker there before
        the partition), where they would wait a minute or more for Ray to give up on it. One notice a node."""
        assert self._nodes is not None, "run before start()"
        dead = self._nodes.dead()
        on_node = self._nodes.nodes_of(list(self._in_flight)) if dead else None
        if on_node is None:  # no node lost, or no telling which cells ran where: Ray's own retries decide
            return [NodeLost(node.ip, 0) for node in dead]
        waiting = [ref for ref in self._in_flight if ref not in on_node]  # resubmitted once, with the first node
        self._nodes_lost += len(dead)
        notices = []
        for node in dead:
            lost = [ref for ref, node_id in on_node.items() if node_id == node.node_id]
            for ref in lost + waiting:
                task = self._in_flight.pop(ref)
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - its node is gone: nothing to stop there
                    pass
                self._in_flight[self._submit(task)] = task
            notices.append(NodeLost(node.ip, len(lost), len(waiting)))
            waiting = []
        return notices

    def run(self, tasks: Sequence[Task]) -> Iterator[Answer | NodeLost | None]:
        import ray

        pending = deque(tasks)
        slots = self.cpus * (1 + max(0, self.cfg.queue_per_cpu))

        def refill() -> None:
            while pending and len(self._in_flight) < slots:
                task = pending.popleft()
                self._in_flight[self._submit(task)] = task

        refill()
        silent_since = None
        while self._in_flight:
            silent_since = self._check_head(silent_since)  # also while cells finish: they may, with the head stopped
            yield from self._resubmit_lost(ray)
            refs = list(self._in_flight)
            # every result already in, without waiting; else the first to come within a second
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            if not done:
                done, _ = ray.wait(refs, num_returns=1, timeout=1.0)
            if not done:
                yield HEARTBEAT
                continue
            tasks_done = [self._in_flight.pop(ref) for ref in done]
            refill()  # keep the workers busy while the driver records what finished
            yield from self._results(ray, done, tasks_done)

    def _results(self, ray: ModuleType, refs: list[ObjectRef], tasks: list[Task]) -> list[Answer]:
        """The results of finished ``refs`` in one transfer; a task whose worker died more than ``max_retries``
        times (or that was lost) answers with its failure."""
        from ray.exceptions import RayError

        try:
            return ray.get(refs)
        except RayError:
            pass
        finished = []
        for ref, task in zip(refs, tasks):
            try:
                finished.append(ray.get(ref))
            except RayError as err:
                self.lost += 1
                finished.append(lost_failure(task, err, self.cfg.max_retries, self._asked_mb(task)))
        return finished
