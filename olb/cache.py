"""Where olb keeps what it computes once, per user: downloads, file hashes and parsed arrays (``olb.data``), the
compiled kernels (``olb.kernels``), and numba's compiled code where the package's own folder is read-only.

Caches are private. The folders olb creates are user-only (0700); a cache folder that exists must be the user's
own and writable by no one else, or olb refuses it (`CacheFolderError`, naming the folder, what is wrong and the
fix) and reads nothing from it: whoever can write to a folder olb loads machine code (the kernels' extension),
pickles (numba's cache) or arrays from could run code as the user, or change results. ``olb-run`` and the grid
check every such folder before any work (:func:`olb.kernels.check_folders`, exit 2).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

CACHE_PARTS = ("kernels", "parsed", "numba")  # the cache's subfolders olb reads code or data from


class CacheWarning(UserWarning):
    """A cache file found corrupt, stale or altered (and rebuilt)."""


class CacheFolderError(PermissionError):
    """A folder olb would read code or data from is another user's, or others may write to it: refused."""


def cache_dir() -> Path:
    """The cache: ``$OLB_CACHE_DIR``, else ``~/.cache/olb`` (downloads, ``sha256.json``, ``parsed/``, ``kernels/``,
    ``numba/``); refused (`CacheFolderError`) if it exists and is not private (:func:`folder_problem`)."""
    path = cache_location()
    check_folder(path, label=_root_label())
    return path


def _root_label() -> str:
    return "OLB_CACHE_DIR" if os.environ.get("OLB_CACHE_DIR") else "cache folder"


def cache_location() -> Path:
    """Where the cache is (:func:`cache_dir`), unchecked."""
    return Path(os.environ.get("OLB_CACHE_DIR") or Path.home() / ".cache" / "olb").expanduser()


def checked_cache(*parts: str) -> Path:
    """``<cache dir>/<parts...>``, every level of it that exists checked (none created: for reading)."""
    folder = cache_dir()
    for part in parts:
        folder = folder / part
        check_folder(folder, follow=False)
    return folder


def private_cache(*parts: str) -> Path:
    """The folder ``<cache dir>/<parts...>`` made by `private_dir`, the cache dir itself checked too."""
    folder = private_dir(cache_location())
    for part in parts:
        folder = private_dir(folder / part, follow=False)
    return folder


def private_dir(path: Path, follow: bool = True) -> Path:
    """``path``, its missing folders created user-only (0700); every level created and ``path`` itself checked
    (`CacheFolderError`). ``follow``: ``path`` may be a link to a private folder (a given root, not a level
    below one)."""
    path = Path(path)
    missing = [folder for folder in (path, *path.parents) if not os.path.lexists(folder)]
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile, by this user or another: checked below like the rest
            pass
    for folder in missing[1:]:
        check_folder(folder, follow=False)
    check_folder(path, follow=follow and path not in missing)
    return path


def folder_problem(path: Path, follow: bool = True, root_ok: bool = False) -> str | None:
    """Why ``path`` may not hold what olb reads (another user's, writable by others, not a folder), or ``None``
    (including when it does not exist: nothing is read from it). ``follow=False``: a link is refused too.
    ``root_ok``: a folder olb only reads (configs, data) may be root's too, as a system-wide install's is."""
    try:
        info = path.stat() if follow else path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        return f"is {kind}: olb made it a folder of its own; remove it"
    return owner_problem(path, info, root_ok)


def owner_problem(path: Path, info: os.stat_result, root_ok: bool = False) -> str | None:
    """Why the folder or file ``path`` (its ``info``) may not be read: owned by another user (root too, unless
    ``root_ok``), or writable by others; ``None`` if it may."""
    what = "folder" if stat.S_ISDIR(info.st_mode) else "file"
    if hasattr(os, "getuid") and info.st_uid != os.getuid() and not (root_ok and info.st_uid == 0):
        fix = "or one of root's" if root_ok else "(olb creates it, user-only)"
        return (
            f"is owned by uid {info.st_uid}, not by you (uid {os.getuid()}): its owner can change what olb reads; "
            f"use a {what} of your own {fix} or remove this one"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"is writable by other users (mode {stat.filemode(info.st_mode)}): they can change what olb reads; "
            f"run `chmod go-w {path}` or use a {what} of your own"
        )
    return None


def check_folder(path: Path, follow: bool = True, label: str = "cache folder", root_ok: bool = False) -> None:
    """`CacheFolderError` if ``path`` has a :func:`folder_problem` (``label``: what names it)."""
    problem = folder_problem(path, follow, root_ok)
    if problem:
        raise CacheFolderError(f"{label} {path} {problem}")


# a folder to check: (what names it, its path, whether a link to it is followed)
CheckedFolder = tuple[str, Path, bool]


def check_cache_folders(error: type[Exception] = CacheFolderError, also: Sequence[CheckedFolder] = ()) -> None:
    """Check, before any work, every existing folder olb would read code or data from: the cache and its
    ``kernels/``, ``parsed/`` and ``numba/``, the folders ``also`` names (the kernels' own:
    :func:`olb.kernels.check_folders`), and ``$NUMBA_CACHE_DIR``; raise ``error`` naming every problem, on one
    line."""
    problems = [f"{label} {path} {problem}" for label, path, problem in _folder_problems(also)]
    if len(problems) > 1:
        listed = " ".join(f"({number}) {problem};" for number, problem in enumerate(problems, 1))
        raise error(f"{len(problems)} cache folders refused: {listed.rstrip(';')}")
    if problems:
        raise error(problems[0])


def _folder_problems(also: Sequence[CheckedFolder]) -> Iterator[tuple[str, Path, str]]:
    root = cache_location()
    checked: list[CheckedFolder] = [(_root_label(), root, True)]
    checked += [("cache folder", root / part, False) for part in CACHE_PARTS]
    checked += also
    if os.environ.get("NUMBA_CACHE_DIR"):  # numba's cache is pickle: loading it runs code
        checked.append(("NUMBA_CACHE_DIR", Path(os.environ["NUMBA_CACHE_DIR"]).expanduser(), True))
    refused: list[Path] = []
    for label, path, follow in checked:
        problem = None if any(path.is_relative_to(folder) for folder in refused) else folder_problem(path, follow)
        if problem:  # what is below a refused folder is refused with it
            refused.append(path)
            yield label, path, problem


def use_private_numba_cache(package_dir: Path = Path(__file__).parent) -> str | None:
    """Point numba's on-disk cache to a folder only this user writes; return the folder chosen (``None``: beside
    the source, numba's default).

    numba caches compiled code as pickles: whoever can write to the cache can run code as the user who loads
    it. Beside the source (``__pycache__``, where the package folder is writable) the cache is as trusted as
    the source itself. Where it is not writable numba would fall back to a folder of its own; olb sets
    ``NUMBA_CACHE_DIR`` to ``<cache dir>/numba`` (0700) instead. A ``NUMBA_CACHE_DIR`` the user set is kept (and
    checked with the other cache folders: :func:`check_cache_folders`).
    """
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if chosen:
        return chosen
    if os.access(package_dir, os.W_OK):
        return None
    try:
        chosen = os.environ["NUMBA_CACHE_DIR"] = str(private_cache("numba"))
    except (OSError, RuntimeError):  # no home folder, none writable, or a refused cache: numba's own fallback
        return None
    if "numba" in sys.modules:  # imported before olb: its configuration was read already
        sys.modules["numba"].config.CACHE_DIR = chosen
    return chosen
