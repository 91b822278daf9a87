"""Where a data set's files come from, and how to open them.

Search order: the data dir (the ``data_dir`` argument, else ``$OLB_DATA_DIR``) when it holds every file of
the data set; the copy embedded in the package (emotions only); the download cache (``$OLB_CACHE_DIR``, else
``~/.cache/olb``), filled from each file's URL and checked against its sha256.
"""

from __future__ import annotations

import bz2
import gzip
import os
from pathlib import Path, PurePosixPath
from typing import TextIO

import pooch

from olb.data.errors import DatasetUnavailable, DownloadError
from olb.data.registry import DatasetSpec, FileSpec

EMBEDDED_DIR = Path(__file__).parent / "embedded"


def local_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local data dir: ``data_dir`` if given, else ``$OLB_DATA_DIR``, else ``None``."""
    data_dir = data_dir or os.environ.get("OLB_DATA_DIR")
    return Path(data_dir).expanduser() if data_dir else None


def cache_dir() -> Path:
    """The download cache: ``$OLB_CACHE_DIR``, else ``~/.cache/olb``."""
    return Path(os.environ.get("OLB_CACHE_DIR") or Path.home() / ".cache" / "olb").expanduser()


def locate(spec: DatasetSpec, data_dir: str | os.PathLike | None = None) -> dict[str, Path]:
    """The local path of each of the data set's files, by role (downloading into the cache if need be).

    Raises `DatasetUnavailable` (before any download) if some file is neither local nor downloadable,
    and `DownloadError` if a download fails or its checksum differs.
    """
    root = local_dir(data_dir)
    if root is not None:
        local = {role: root / file.path for role, file in spec.files.items()}
        if all(p.is_file() for p in local.values()):
            return local
    if spec.embedded:
        return {role: EMBEDDED_DIR / PurePosixPath(file.path).name for role, file in spec.files.items()}
    no_url = [file.path for file in spec.files.values() if not file.url]
    if no_url:
        raise DatasetUnavailable(
            f"data set {spec.name!r} is not available: no download URL is known for {', '.join(no_url)}. "
            + _where_to_put(spec, root)
            + (f" Source: {spec.source}" if spec.source else "")
        )
    return {role: _download(spec, file, root) for role, file in spec.files.items()}


def open_text(path: Path) -> TextIO:
    """Open a text file for reading, decompressing ``.gz`` and ``.bz2`` files on the fly."""
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    return opener(path, "rt", encoding="utf-8", newline="")


def _download(spec: DatasetSpec, file: FileSpec, root: Path | None) -> Path:
    target = cache_dir() / file.path
    known_hash = f"sha256:{file.sha256}" if file.sha256 else None
    try:
        pooch.retrieve(file.url, known_hash, fname=target.name, path=target.parent, progressbar=False)
    except (OSError, ValueError) as exc:  # requests' errors are OSErrors; pooch's checksum mismatch a ValueError
        raise DownloadError(f"could not download {file.url} to {target}: {exc}. {_where_to_put(spec, root)}") from exc
    return target


def _where_to_put(spec: DatasetSpec, root: Path | None) -> str:
    files = ", ".join(file.path for file in spec.files.values())
    if root is None:
        return f"Put the files {files} under a data dir and pass data_dir=... or set OLB_DATA_DIR."
    return f"Expected the files {files} under {root}."
