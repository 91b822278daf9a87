"""How a data file is opened: read-only, never through a link in the cache, and only if its owner may be trusted."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from olb.cache import cache_dir, owner_problem
from olb.data.errors import DataError

EMBEDDED_DIR = Path(__file__).parent / "embedded"


def open_data(path: Path) -> int:
    """A read-only descriptor of the data file ``path``; a file in the cache is opened without following a link
    (``O_NOFOLLOW``: a link planted there is refused with a `DataError` naming it, never read). The file opened
    (wherever a link led) must be the user's own or root's and writable by no one else, as its folder must
    (:func:`data_dir_problems`), or it is refused (`DataError`); the package's embedded copies are its own."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    in_cache = _in_cache(path)
    if in_cache:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if in_cache and exc.errno == errno.ELOOP:
            raise DataError(
                f"{path} is a link (to {os.readlink(path)}); olb reads no link in its cache: remove it"
            ) from None
        raise
    problem = None if Path(path).parent == EMBEDDED_DIR else owner_problem(Path(path), os.fstat(fd), root_ok=True)
    if problem:
        os.close(fd)
        raise DataError(f"data file {path} {problem}")
    return fd


def _in_cache(path: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(cache_dir()))
