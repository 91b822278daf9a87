"""Where a data set's files come from, and how they are read (opened by :func:`olb.data.opening.open_data`).

Search order: the data dirs (the ``data_dir`` argument, else ``$OLB_DATA_DIR``: one directory, several
separated by ``os.pathsep``, or a list), in order, the first that holds every file of the data set (one that
holds only some is an error); the copy embedded in the package (emotions only); the download cache
(``$OLB_CACHE_DIR``, else ``~/.cache/olb``), filled from each file's URL and checked against its registered
sha256 (a file without one is downloaded only with ``verify_checksums=False``; pooch is imported only to
download).

A file is read once into memory (`read_files`): its sha256 is taken from those bytes and the loaders parse those
same bytes, so a file changed while it is read can never leave arrays of one version under the hash of another.
Files in the cache are opened without following a link (``O_NOFOLLOW``); a registered path is relative and stays
inside its data dir or the cache (``olb.data.registry`` refuses any other).
"""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import io
import os
import warnings
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, TextIO, cast

from olb.cache import cache_dir, check_folder, folder_problem, private_cache
from olb.data.errors import DataDirWarning, DataError, DatasetUnavailable, DownloadError, IncompleteDataDir
from olb.data.opening import EMBEDDED_DIR, open_data
from olb.data.provenance import file_sha256
from olb.data.registry import DatasetSpec, FileSpec


DataDirs = str | os.PathLike | list | tuple | None


def data_dirs(data_dir: DataDirs = None) -> list[Path]:
    """The local data dirs, searched in order: ``data_dir`` if given, else ``$OLB_DATA_DIR``; a string may
    name several, separated by ``os.pathsep`` (``:`` on Linux); a list names one per item."""
    data_dir = data_dir or os.environ.get("OLB_DATA_DIR")
    if not data_dir:
        return []
    items = [data_dir] if isinstance(data_dir, (str, os.PathLike)) else list(data_dir)
    parts = [
        part for item in items for part in (os.fspath(item).split(os.pathsep) if isinstance(item, str) else [item])
    ]
    return [Path(part).expanduser() for part in parts if os.fspath(part)]


def data_dir_problems(data_dir: DataDirs = None) -> list[str]:
    """One line per data dir (:func:`data_dirs`) another user owns (root may) or others may write to: whoever
    can change the files there changes results; ``[]``: none."""
    origin = "data_dir" if data_dir else "OLB_DATA_DIR"
    found = ((root, folder_problem(root, root_ok=True)) for root in data_dirs(data_dir))
    return [f"{origin} {root} {problem}" for root, problem in found if problem]


def locate(spec: DatasetSpec, data_dir: DataDirs = None, verify_checksums: bool = True) -> dict[str, Path]:
    """The local path of each of the data set's files, by role (downloading into the cache if need be).

    A data dir that holds some but not all of the files raises `IncompleteDataDir` (no other copy is used in
    its place); a data dir that does not exist is named in a `DataDirWarning`. Raises `DatasetUnavailable`
    (before any download) if some file is neither local nor downloadable, or, with ``verify_checksums``, has
    no registered sha256 to check a download against; `DownloadError` if a download fails or its checksum
    differs.
    """
    roots = data_dirs(data_dir)
    for root in roots:  # olb.grid and olb-run refuse them before any work; a library call here
        check_folder(root, label="data dir", root_ok=True)
    absent = [root for root in roots if not root.is_dir()]
    for root in roots:
        local = {role: root / file.path for role, file in spec.files.items()}
        found = [role for role, path in local.items() if path.is_file()]
        if len(found) == len(local):
            return local
        if found and not _shared({spec.files[role].path for role in found}, spec.name):
            missing = ", ".join(str(local[role]) for role in local if role not in found)
            raise IncompleteDataDir(
                f"data dir {root} holds only part of data set {spec.name!r}: {missing} missing "
                f"(it has {', '.join(str(local[role]) for role in found)}; files registered in {spec.conf_file}). "
                "Add the missing files, or remove the others so that the data set is read from elsewhere"
            )
    if absent:
        origin = "data_dir" if data_dir else "OLB_DATA_DIR"
        warnings.warn(
            f"{origin}: the data dir(s) {', '.join(map(str, absent))} do not exist; data set {spec.name!r} is "
            + ("read from the copy embedded in the package" if spec.embedded else "looked for in the download cache"),
            DataDirWarning,
            stacklevel=3,
        )
    if spec.embedded:
        return {role: EMBEDDED_DIR / PurePosixPath(file.path).name for role, file in spec.files.items()}
    no_url = [file.path for file in spec.files.values() if not file.url]
    if no_url:
        raise DatasetUnavailable(
            f"data set {spec.name!r} is not available: no download URL is known for {', '.join(no_url)}. "
            + _where_to_put(spec, roots)
            + (f" Source: {spec.source}" if spec.source else "")
        )
    no_sha256 = [file.path for file in spec.files.values() if not file.sha256]
    if no_sha256 and verify_checksums:
        raise DatasetUnavailable(
            f"data set {spec.name!r}: no sha256 is registered for {', '.join(no_sha256)} ({spec.conf_file}), so "
            "a download could not be verified and is refused. Pass verify_checksums=false to download and use "
            f"the files unverified (their runs are then recorded as unverified). {_where_to_put(spec, roots)}"
        )
    return {role: _download(spec, file, roots) for role, file in spec.files.items()}


def _shared(paths: set[str], name: str) -> bool:
    """Whether every one of ``paths`` is also a file of another registered data set (mediamill's label XML
    is m-reduced's too): finding only such files is no sign of a partial copy of ``name``."""
    from olb.data.registry import dataset_names, dataset_spec

    others = set()
    for other in set(dataset_names()) - {name}:
        try:
            others |= {file.path for file in dataset_spec(other).files.values()}
        except DataError:  # a malformed entry is reported when that data set is loaded
            pass
    return paths <= others


@dataclass(frozen=True)
class DataFile:
    """A data file's bytes as read once (``path``: where from, named in every message): what is hashed is what
    the loaders parse."""

    path: Path
    content: bytes

    def __str__(self) -> str:
        return str(self.path)

    @functools.cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    def binary(self) -> BinaryIO:
        """The bytes as a file, decompressed on the fly for ``.gz`` and ``.bz2`` files."""
        raw = io.BytesIO(self.content)
        if self.path.suffix == ".gz":
            return cast(BinaryIO, gzip.GzipFile(fileobj=raw))
        if self.path.suffix == ".bz2":
            return cast(BinaryIO, bz2.BZ2File(raw))
        return raw

    def text(self) -> TextIO:
        """The (decompressed) bytes as UTF-8 text, line ends as they are."""
        return io.TextIOWrapper(self.binary(), encoding="utf-8", newline="")


def read_file(path: Path) -> DataFile:
    """The whole file ``path`` read into memory (`open_data`)."""
    with os.fdopen(open_data(path), "rb") as fh:
        return DataFile(Path(path), fh.read())


def read_files(paths: dict[str, Path]) -> dict[str, DataFile]:
    """Every file of a data set (by role) read into memory, each once."""
    return {role: read_file(path) for role, path in paths.items()}


def _download(spec: DatasetSpec, file: FileSpec, roots: list[Path]) -> Path:
    import pooch

    relative = PurePosixPath(file.path)  # relative, without "..": checked when the registry entry was read
    target = cache_dir().joinpath(*relative.parts)
    known_hash = f"sha256:{file.sha256}" if file.sha256 else None
    stale = ""
    try:
        _refuse_links(relative.parent)
        folder = private_cache(*relative.parent.parts)  # the missing levels made user-only
        if target.is_file() and file.sha256 and (found := file_sha256(target)) != file.sha256:
            stale = f"the cached file {target} has sha256 {found}, expected {file.sha256}; "
        pooch.retrieve(file.url, known_hash, fname=target.name, path=folder, progressbar=False)
    except (OSError, ValueError) as exc:  # requests' errors are OSErrors; pooch's checksum mismatch a ValueError
        raise DownloadError(
            f"{stale}could not download {file.url} to {target}: {exc}. {_where_to_put(spec, roots)}"
        ) from exc
    return target


def _refuse_links(relative: PurePosixPath) -> None:
    """`DownloadError` if a level of ``<cache dir>/<relative>`` is a link (a download would land outside)."""
    level = cache_dir()
    for part in relative.parts:
        level = level / part
        if level.is_symlink():
            raise DownloadError(
                f"{level} is a link (to {os.readlink(level)}): a download stays inside the cache {cache_dir()}; "
                "remove the link"
            )


def _where_to_put(spec: DatasetSpec, roots: list[Path]) -> str:
    files = ", ".join(file.path for file in spec.files.values())
    if not roots:
        return f"Put the files {files} under a data dir and pass data_dir=... or set OLB_DATA_DIR."
    named = " or ".join(f"{root}{'' if root.is_dir() else ' (which does not exist)'}" for root in roots)
    return f"Expected the files {files} under {named}."
