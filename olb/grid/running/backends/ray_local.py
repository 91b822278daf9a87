"""``ray`` without an address: a local Ray, started quietly (no dashboard, no usage statistics, no metrics
export) and shut down at the end. It is private: its temp dir is a fresh folder only the user can enter (made by
``mkdtemp`` and named after ``backend.temp_dir``, so that no folder another user made first is used or blocks
it), holding a fresh token (``RAY_AUTH_MODE=token``) and, below it, Ray's own folders (which Ray opens to
everyone); every server on 127.0.0.1 (:mod:`olb.grid.auth`). The temp dir is removed when it stops, after the Ray
logs of lost cells were copied into the grid's output folder (``log_dir``); one that a killed driver left is removed
by the next local grid of its user (:func:`remove_stale_temp_dirs`)."""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from types import ModuleType

from olb.grid.auth import LOOPBACK, LocalRayAuth
from olb.grid.running.backends.ray_base import RayBackend
from olb.grid.planning.config import BackendConfig


class LocalRayBackend(RayBackend):
    """A Ray of this machine's ``backend.num_cpus`` CPUs, started and stopped by the grid."""

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        self._auth: LocalRayAuth | None = None

    def init_kwargs(self) -> dict:
        cfg = self.cfg
        memory = {"_memory": int(cfg.memory_mb) * 2**20} if cfg.memory_mb else {}  # a local Ray's budget
        return {
            **self._common_kwargs(),
            "address": "local",
            "_node_ip_address": LOOPBACK,
            "num_cpus": cfg.num_cpus or os.cpu_count() or 1,
            "_temp_dir": fresh_temp_dir(cfg.temp_dir),
            "object_store_memory": int(cfg.object_store_memory_mb) * 1024 * 1024,
            "_system_config": {"task_oom_retries": int(cfg.max_retries)},  # Ray's default: retry memory kills forever
            **memory,
        }

    def connect(self, ray: ModuleType, kwargs: dict[str, object]) -> None:
        # Ray opens its own folders to everyone (0777): they go below the private one with the token
        self._auth = LocalRayAuth(str(kwargs["_temp_dir"])).apply()
        kwargs["_temp_dir"] = str(self._auth.directory / "ray")
        try:
            ray.init(**kwargs)
        except BaseException:
            self._release()
            raise

    def stop(self) -> None:
        import ray

        super().stop()
        if self.owned and ray.is_initialized():
            self._shutdown(ray)
        self.owned = False
        self._release()

    def _release(self) -> None:
        """The environment as before the local Ray, and its temp dir (token, sockets, logs) removed."""
        if self._auth is not None:
            self._auth.restore()
            shutil.rmtree(self._auth.directory, ignore_errors=True)
            self._auth = None


def fresh_temp_dir(pattern: str) -> str:
    """A new folder only this user can enter (0700, ``tempfile.mkdtemp``): ``pattern`` with ``{pid}`` replaced by
    this process's id, followed by ``-`` and random characters (``/tmp/olb-ray-{pid}`` gives
    ``/tmp/olb-ray-4242-k3v9x1_q``). A name another user took first is skipped, never used."""
    named = Path(pattern.replace("{pid}", str(os.getpid())))
    remove_stale_temp_dirs(pattern)
    return tempfile.mkdtemp(prefix=f"{named.name}-", dir=named.parent)


def remove_stale_temp_dirs(pattern: str) -> list[Path]:
    """Remove the temp dirs that local grids killed outright (``kill -9``) left behind: folders named after
    ``pattern`` (``{pid}`` in its last part) whose process no longer runs, this user's, private (0700), no link, and
    named on no running process's command line (Ray's processes name their folder); the folders removed."""
    folder, name = os.path.split(pattern)
    if "{pid}" not in name:
        return []
    before, _, after = name.partition("{pid}")
    named = re.compile(rf"{re.escape(before)}(\d+){re.escape(after)}-[^/]+")
    try:
        entries = list(os.scandir(folder or "."))
    except OSError:
        return []
    stale = []
    for entry in entries:
        match = named.fullmatch(entry.name)
        if match and _abandoned(entry, int(match.group(1))):
            stale.append(entry.path)
    in_use = _named_on_command_lines(stale)
    removed = []
    for path in stale:
        if path not in in_use:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(Path(path))
    if removed:
        logging.getLogger("olb.grid").info(
            "olb.grid: removed %d Ray temp dir(s) left by killed grids: %s", len(removed), ", ".join(map(str, removed))
        )
    return removed


def _abandoned(entry: os.DirEntry[str], pid: int) -> bool:
    """Whether ``entry`` is a private folder of this user's whose process ``pid`` has ended."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) != 0o700:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process
        return False
    return False


def _named_on_command_lines(paths: list[str]) -> set[str]:
    """Those of ``paths`` that a running process's command line names."""
    if not paths:
        return set()
    named: set[str] = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes()
        except OSError:  # ended meanwhile
            continue
        named.update(path for path in paths if path.encode() in text)
    return named
