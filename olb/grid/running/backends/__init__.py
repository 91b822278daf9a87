"""Where cells run: the backends, and the registration point that picks one (:func:`make_backend`).

Every backend is one :class:`olb.grid.running.backend.Backend` subclass in one file of this package and one line in
:data:`BACKENDS` (its name is listed in ``olb.grid.planning.config.BACKENDS``): ``serial`` (:mod:`.serial`) and ``ray``,
which is a Ray cluster when an address is given (:mod:`.ray_cluster`) and a local Ray otherwise
(:mod:`.ray_local`); both share :mod:`.ray_base`. All of them yield results as cells finish (not at the end).

``auto`` (the default): serial when the planned work is smaller than what Ray's start-up costs, Ray otherwise
(:func:`choose_backend`; the choice and its reason are printed and recorded in MLflow). A local Ray starts
while the MLflow store opens (in another thread: Ray itself must start in the main thread, since the processes
it starts die with the thread that started them).

The backend classes are imported when first used: a Ray worker imports this package only for
:mod:`.ray_worker`, and loads none of the driver's modules (nor Hydra) through it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olb.grid.running.backend import Backend
    from olb.grid.planning.config import BackendConfig

_CLASSES = {
    "RayBackend": "ray_base",
    "RayClusterBackend": "ray_cluster",
    "LocalRayBackend": "ray_local",
    "SerialBackend": "serial",
}

__all__ = ["LocalRayBackend", "RayBackend", "RayClusterBackend", "SerialBackend", "choose_backend", "make_backend"]


def __getattr__(name: str) -> object:
    if name not in _CLASSES:
        raise AttributeError(f"module 'olb.grid.running.backends' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_CLASSES[name]}"), name)
    globals()[name] = value
    return value


def _ray(cfg: BackendConfig) -> Backend:
    from olb.grid.planning.config import cluster_address
    from olb.grid.running.backends.ray_cluster import RayClusterBackend
    from olb.grid.running.backends.ray_local import LocalRayBackend

    return RayClusterBackend(cfg) if cluster_address(cfg) else LocalRayBackend(cfg)


def _serial(cfg: BackendConfig) -> Backend:
    from olb.grid.running.backends.serial import SerialBackend

    return SerialBackend(cfg)


# name -> how to make it from the config: one line per backend
BACKENDS: dict[str, Callable[[BackendConfig], Backend]] = {"serial": _serial, "ray": _ray}


def choose_backend(cfg: BackendConfig, work_s: float, n_tasks: int) -> tuple[str, str]:
    """``(backend name, why)`` for ``cfg``: as configured, or for ``auto`` the faster of serial (``work_s``
    CPU seconds, the planned work) and Ray (its start-up, ``backend.ray_startup_s``, plus the work spread over
    the CPUs); a cluster address always means Ray."""
    from olb.grid.planning.config import cluster_address

    if cfg.name != "auto":
        return cfg.name, "as configured"
    if cluster_address(cfg):
        return "ray", "a Ray cluster address is given"
    cpus = cfg.num_cpus or os.cpu_count() or 1
    on_ray = cfg.ray_startup_s + work_s / cpus
    # the cost model's seconds are an idle CPU's: on a loaded machine every figure here grows with the load
    planned = f"planned work ~{work_s:.0f} CPU s (assuming an idle CPU per cell; load now {os.getloadavg()[0]:.1f})"
    if cpus < 2 or n_tasks < 2 or work_s <= on_ray:
        return "serial", (
            f"{planned} in {n_tasks} task(s): serially ~{work_s:.0f} s, on a "
            f"local Ray with {cpus} CPU(s) ~{on_ray:.0f} s (start-up ~{cfg.ray_startup_s:.0f} s)"
        )
    return "ray", (
        f"{planned} in {n_tasks} tasks: on a local Ray with {cpus} CPUs "
        f"~{on_ray:.0f} s (start-up ~{cfg.ray_startup_s:.0f} s) against ~{work_s:.0f} s serially"
    )


def make_backend(cfg: BackendConfig, name: str | None = None) -> Backend:
    """The backend ``name`` (default ``cfg.name``; ``auto`` must be resolved by :func:`choose_backend` first)."""
    from olb.grid.planning.config import BACKENDS as BACKEND_NAMES

    name = name or cfg.name
    if name in BACKENDS:
        return BACKENDS[name](cfg)
    raise ValueError(f"backend.name={name!r} is not allowed; allowed: {', '.join(BACKEND_NAMES)}")
