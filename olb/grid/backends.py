"""Where cells run. Both backends yield payloads as cells finish (not at the end).

``ray``: one Ray task with one CPU per cell. Without an address (``backend.address``, else the environment's
``RAY_ADDRESS``, which ``ray job submit`` sets) a local Ray is started quietly (no dashboard, no usage statistics,
session files under ``backend.temp_dir``) and shut down at the end; with an address the grid
connects to that cluster and leaves it running. A local Ray is private: a fresh token (``RAY_AUTH_MODE=token``)
in its 0700 temp dir, every server on 127.0.0.1 (:mod:`olb.grid.auth`); the temp dir is removed when it stops.
A cluster's token comes from ``RAY_AUTH_TOKEN_PATH``, as ``slurm/olb_grid.sbatch`` sets it. If Ray is already
initialized in the process (tests, notebooks) it is used as it is and left running. A cell whose worker process dies is
re-run up to ``backend.max_retries`` times, also when Ray's memory monitor killed it (Ray's own default retries
those without end); a cell that raises is not retried (it fails the same way). A cell killed for memory each
time is recorded as failed with "out of memory", its memory use when killed and the node's limit; a lost cell's
Ray logs are copied into the grid's output folder (``log_dir``) before a local Ray's temp dir is removed.

``serial``: every cell in the driver process, one after the other, through the same function: the same
numbers, for debugging.

``auto`` (the default): serial when the planned work is smaller than what Ray's start-up costs, Ray otherwise
(:func:`choose_backend`; the choice and its reason are printed and recorded in MLflow). A local Ray starts
while the MLflow store opens (in another thread: Ray itself must start in the main thread, since the processes
it starts die with the thread that started them).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator

from olb.grid.auth import LOOPBACK, LocalRayAuth
from olb.grid.backend import HEARTBEAT, Backend
from olb.grid.config import BACKENDS, BackendConfig
from olb.grid.lost import RayLost, answers
from olb.grid.messages import Status
from olb.grid.worker import execute_cell

# Token authentication (also to join a cluster), no usage statistics (nor their prompt), and no C++ failure
# signal handler: with it a SIGTERM to the driver aborts the process with a stack dump instead of ending the
# grid through Python.
QUIET_RAY_ENV = {
    "RAY_AUTH_MODE": "token",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_USAGE_STATS_PROMPT_ENABLED": "0",
    "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1",
}


class SerialBackend(Backend):
    """Every task in the driver process, one after the other."""

    name = "serial"

    def __init__(self, cfg: BackendConfig | None = None):
        self._running = 0

    @property
    def running(self) -> int:
        return self._running

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def cancel(self) -> None:
        pass

    def run(self, tasks: list[dict]) -> Iterator[dict | None]:
        for task in tasks:
            self._running = 1
            payload = execute_cell(task)
            self._running = 0
            yield payload


class RayBackend(Backend):
    """One Ray task per cell on a local Ray (started and stopped here) or on a Ray cluster (``address``)."""

    name = "ray"

    def __init__(self, cfg: BackendConfig):
        self.cfg = cfg
        self.owned = False
        self.cpus = 1
        self.startup_s = 0.0
        self._in_flight: dict = {}
        self._auth: LocalRayAuth | None = None
        self.log_dir = None  # where the Ray logs of lost cells go (the grid's output folder); None: nowhere
        self.lost = 0  # cells whose worker died
        self._head = ""  # the GCS address, polled while cells run
        self._head_lost = False
        self.node_memory_mb = 0.0  # the largest node's memory Ray hands out (MB), known once started

    @property
    def running(self) -> int:
        return min(len(self._in_flight), self.cpus)

    def start(self) -> None:
        if getattr(self, "_remote", None) is not None:
            return
        for key, value in QUIET_RAY_ENV.items():
            os.environ.setdefault(key, value)
        t0 = time.perf_counter()
        import ray

        if not ray.is_initialized():
            main_thread = threading.current_thread() is threading.main_thread()
            previous = signal.getsignal(signal.SIGTERM) if main_thread else None
            kwargs = ray_init_kwargs(self.cfg)
            if kwargs["address"] == "local":
                # Ray opens its own temp dir to everyone (0777): it goes below the private one with the token
                self._auth = LocalRayAuth(kwargs["_temp_dir"]).apply()
                kwargs["_temp_dir"] = str(self._auth.directory / "ray")
            try:
                ray.init(**kwargs)
            except BaseException:
                self._release_local()
                raise
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
        options = {"num_cpus": 1, "max_retries": self.cfg.max_retries, "retry_exceptions": False}
        if self.cfg.fresh_worker_per_cell:
            options["max_calls"] = 1
        self._remote = ray.remote(**options)(execute_cell)
        self.startup_s = time.perf_counter() - t0

    def stop(self) -> None:
        import ray

        self.cancel()
        if self.owned and ray.is_initialized():
            session = ray._private.worker._global_node.get_session_dir_path() if self.lost else None
            ray.shutdown()
            if session:
                _keep_logs(session, self.log_dir)
        elif self._head_lost and ray.is_initialized():  # a cluster without its head: disconnect from it
            ray.shutdown()
        self.owned = False
        self._remote = None
        self._release_local()

    def memory_limit_mb(self) -> float:
        """The largest alive node's memory that Ray hands out to tasks (its ``memory`` resource), in MB."""
        import ray

        return max((n["Resources"].get("memory", 0) for n in ray.nodes() if n["Alive"]), default=0) / 2**20

    def _check_head(self, silent_since: float | None) -> float | None:
        """None while the Ray head answers, else since when it has not; RayLost after ``head_timeout_s``."""
        if not self._head or answers(self._head, timeout=1.0):
            return None
        now = time.monotonic()
        silent_since = silent_since or now
        if now - silent_since >= self.cfg.head_timeout_s:
            self._head_lost = True
            raise RayLost(f"the Ray head at {self._head} has not answered for {now - silent_since:.0f} s")
        return silent_since

    def _release_local(self) -> None:
        """The environment as before the local Ray, and its temp dir (token, sockets, logs) removed."""
        if self._auth is not None:
            self._auth.restore()
            shutil.rmtree(self._auth.directory, ignore_errors=True)
            self._auth = None

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

    def run(self, tasks: list[dict]) -> Iterator[dict | None]:
        import ray
        from ray.exceptions import RayError

        pending = deque(tasks)
        slots = self.cpus * (1 + max(0, self.cfg.queue_per_cpu))

        def refill():
            while pending and len(self._in_flight) < slots:
                task = pending.popleft()
                task["memory_mb"] = memory_request_mb(
                    task.get("predicted_memory_mb", 0.0), self.cfg, self.node_memory_mb
                )
                memory = int(task["memory_mb"] * 2**20)  # Ray runs on a node only the cells whose requests fit
                remote = self._remote.options(memory=memory) if memory else self._remote
                self._in_flight[remote.remote(task)] = task

        refill()
        silent_since = None
        while self._in_flight:
            done, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=1.0)
            if not done:
                silent_since = self._check_head(silent_since)
                yield HEARTBEAT
                continue
            finished = []
            for ref in done:
                task = self._in_flight.pop(ref)
                try:
                    finished.append(ray.get(ref))
                except RayError as err:  # the worker died more than max_retries times, or the task was lost
                    self.lost += 1
                    finished.append(_lost(task, err, self.cfg.max_retries))
            refill()  # keep the workers busy while the driver records what finished
            yield from finished


def _lost(task: dict, err: Exception, max_retries: int) -> dict:
    now = time.time()
    payload = {
        "cell_id": task["cell_id"],
        "status": Status.FAILED,
        "error": f"{type(err).__name__}: {err}".strip(),
        "traceback": f"{type(err).__name__}: {err}",
        "start_time": now,
        "end_time": now,
        "wall_s": 0.0,
        "cpu_s": 0.0,
    }
    from ray.exceptions import OutOfMemoryError, WorkerCrashedError

    attempts = f"{max_retries + 1} attempt(s)"
    if isinstance(err, OutOfMemoryError):
        used, limit = _oom_figures(str(err))
        payload.update(peak_rss_mb=used, memory_limit_mb=limit)
        payload["error"] = (
            f"out of memory: killed by Ray's memory monitor in each of {attempts}; the cell used "
            f"{_mb(used)} when killed, the node's limit is {_mb(limit)} (Ray kills above it: RAY_memory_usage_threshold)"
            f"; {_memory_asked(task)}"
        )
    elif isinstance(err, WorkerCrashedError):
        payload["error"] = (
            f"the worker process died in each of {attempts} (killed by a signal, e.g. the kernel's out-of-memory "
            f"killer, or crashed); see ray-logs/ in the output folder; {_memory_asked(task)}"
        )
    return payload


def _oom_figures(message: str) -> tuple[float | None, float | None]:
    """The killed cell's memory use and the node's limit (the threshold Ray kills at), in MB, from the
    message of Ray's ``OutOfMemoryError``; None where the message does not say."""
    used = re.search(r"task name=execute_cell,[^)]*?memory used=([\d.]+)GB", message)
    limit = re.search(r"exceeded threshold of (\d+)B", message)
    return (float(used.group(1)) * 1024 if used else None, int(limit.group(1)) / 2**20 if limit else None)


def memory_request_mb(predicted_mb: float, cfg: BackendConfig, limit_mb: float) -> float:
    """What a cell asks Ray for: its predicted peak memory times ``backend.memory_factor``, at most ``limit_mb``
    (the largest node's; a bigger cell runs only with ``backend.refuse_oversized=false``)."""
    return min(predicted_mb * cfg.memory_factor, limit_mb)


def _memory_asked(task: dict) -> str:
    """The killed cell's predicted memory and what it was allowed (its Ray request), and how to retry with more."""
    return (
        f"predicted {_mb(task.get('predicted_memory_mb'))}, allowed {_mb(task.get('memory_mb'))} (its Ray request); "
        "a rerun with a larger backend.memory_factor asks for more"
    )


def _mb(value: float | None) -> str:
    return "? MB" if value is None else f"{value:.0f} MB"


def _keep_logs(session_dir: str, log_dir) -> None:
    """Copy a local Ray's worker and node logs into ``log_dir``/ray-logs (they explain lost cells)."""
    if log_dir is None:
        return
    src = os.path.join(session_dir, "logs")
    try:
        shutil.copytree(
            src, os.path.join(log_dir, "ray-logs"), dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.sock")
        )
    except OSError as err:
        logging.getLogger("olb.grid").warning("olb.grid: could not keep Ray's logs from %s: %s", src, err)


def ray_init_kwargs(cfg: BackendConfig) -> dict:
    kwargs = {
        "include_dashboard": False,
        "log_to_driver": cfg.log_to_driver,
        "logging_level": logging.WARNING,
        "configure_logging": True,
    }
    address = cfg.address or os.environ.get("RAY_ADDRESS")  # Ray's own variable, set by `ray job submit`
    if address:
        kwargs["address"] = address
        return kwargs
    kwargs.update(
        address="local",
        _node_ip_address=LOOPBACK,
        num_cpus=cfg.num_cpus or os.cpu_count() or 1,
        _temp_dir=str(cfg.temp_dir).replace("{pid}", str(os.getpid())),
        object_store_memory=int(cfg.object_store_memory_mb) * 1024 * 1024,
        _system_config={"task_oom_retries": int(cfg.max_retries)},  # Ray's default: retry memory kills forever
    )
    if cfg.memory_mb:
        kwargs["_memory"] = int(cfg.memory_mb) * 2**20
    return kwargs


def choose_backend(cfg: BackendConfig, work_s: float, n_tasks: int) -> tuple[str, str]:
    """``(backend name, why)`` for ``cfg``: as configured, or for ``auto`` the faster of serial (``work_s``
    CPU seconds, the planned work) and Ray (its start-up, ``backend.ray_startup_s``, plus the work spread over
    the CPUs); a cluster address always means Ray."""
    if cfg.name != "auto":
        return cfg.name, "as configured"
    if cfg.address or os.environ.get("RAY_ADDRESS"):
        return "ray", "a Ray cluster address is given"
    cpus = cfg.num_cpus or os.cpu_count() or 1
    on_ray = cfg.ray_startup_s + work_s / cpus
    if cpus < 2 or n_tasks < 2 or work_s <= on_ray:
        return "serial", (
            f"planned work ~{work_s:.0f} CPU s in {n_tasks} task(s): serially ~{work_s:.0f} s, on a "
            f"local Ray with {cpus} CPU(s) ~{on_ray:.0f} s (start-up ~{cfg.ray_startup_s:.0f} s)"
        )
    return "ray", (
        f"planned work ~{work_s:.0f} CPU s in {n_tasks} tasks: on a local Ray with {cpus} CPUs "
        f"~{on_ray:.0f} s (start-up ~{cfg.ray_startup_s:.0f} s) against ~{work_s:.0f} s serially"
    )


BACKEND_CLASSES: dict[str, type[Backend]] = {"serial": SerialBackend, "ray": RayBackend}


def make_backend(cfg: BackendConfig, name: str | None = None) -> Backend:
    """The backend ``name`` (default ``cfg.name``; ``auto`` must be resolved by :func:`choose_backend` first)."""
    name = name or cfg.name
    if name in BACKEND_CLASSES:
        return BACKEND_CLASSES[name](cfg)
    raise ValueError(f"backend.name={name!r} is not allowed; allowed: {', '.join(BACKENDS)}")
