"""Where the data layer keeps what it computes once: downloads, file hashes, parsed arrays."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The cache: ``$OLB_CACHE_DIR``, else ``~/.cache/olb`` (downloads, ``sha256.json``, ``parsed/``)."""
    return Path(os.environ.get("OLB_CACHE_DIR") or Path.home() / ".cache" / "olb").expanduser()
