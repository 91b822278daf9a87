"""Where olb keeps what it computes once, per user: downloads, file hashes and parsed arrays (``olb.data``), the
compiled kernels (``olb.kernels``), and numba's compiled code where the package's own folder is read-only.

Caches are private: the folders olb creates are user-only (0700), and a cache folder other users may write to
is named in a warning. numba's cache holds pickles (loading one runs code), olb's parsed arrays are verified
when read (``olb.data.parsed``), but nothing can check who wrote them: see ``docs/data.md``.
"""

from __future__ import annotations

import os
import stat
import sys
import warnings
from pathlib import Path


def cache_dir() -> Path:
    """The cache: ``$OLB_CACHE_DIR``, else ``~/.cache/olb`` (downloads, ``sha256.json``, ``parsed/``, ``kernels/``,
    ``numba/``)."""
    return Path(os.environ.get("OLB_CACHE_DIR") or Path.home() / ".cache" / "olb").expanduser()


def private_dir(path: Path) -> Path:
    """``path``, its missing folders created user-only (0700); a `CacheWarning` if other users may write to it."""
    path = Path(path)
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    problem = shared_write_problem(path)
    if problem:
        warnings.warn(f"cache folder {path}: {problem}", CacheWarning, stacklevel=2)
    return path


def private_cache(*parts: str) -> Path:
    """The folder ``<cache dir>/<parts...>`` made by `private_dir`, the cache dir itself checked too."""
    folder = private_dir(cache_dir())
    for part in parts:
        folder = private_dir(folder / part)
    return folder


def shared_write_problem(path: Path) -> str | None:
    """Why other users could change what is in ``path`` (owned by someone else, group- or world-writable), or
    ``None``."""
    info = path.stat()
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"owned by uid {info.st_uid}, not by you (uid {os.getuid()}): its owner can change what olb reads"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"writable by other users (mode {stat.filemode(info.st_mode)}): they can change what olb reads; "
            f"chmod go-w {path}, or point the cache to a folder of your own"
        )
    return None


class CacheWarning(UserWarning):
    """A cache folder others may write to, or a cache file found corrupt, stale or altered (and rebuilt)."""


def use_private_numba_cache(package_dir: Path = Path(__file__).parent) -> str | None:
    """Point numba's on-disk cache to a folder only this user writes; return the folder chosen (``None``: beside
    the source, numba's default).

    numba caches compiled code as pickles: whoever can write to the cache can run code as the user who loads
    it. Beside the source (``__pycache__``, where the package folder is writable) the cache is as trusted as
    the source itself. Where it is not writable numba would fall back to a folder of its own; olb sets
    ``NUMBA_CACHE_DIR`` to ``<cache dir>/numba`` (0700) instead. A ``NUMBA_CACHE_DIR`` the user set is kept,
    with a warning if other users may write to it.
    """
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if chosen:
        path = Path(chosen).expanduser()
        problem = shared_write_problem(path) if path.is_dir() else None
        if problem:
            warnings.warn(
                f"NUMBA_CACHE_DIR={chosen}: {problem}. numba's cache is pickle: anyone who can write to it can "
                "run code as you",
                CacheWarning,
                stacklevel=2,
            )
        return chosen
    if os.access(package_dir, os.W_OK):
        return None
    try:
        chosen = os.environ["NUMBA_CACHE_DIR"] = str(private_cache("numba"))
    except (OSError, RuntimeError):  # no home folder, or none writable: numba's own fallback (it names the folder)
        return None
    if "numba" in sys.modules:  # imported before olb: its configuration was read already
        sys.modules["numba"].config.CACHE_DIR = chosen
    return chosen
