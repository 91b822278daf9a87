"""Which data a result came from: the content hash of every file a data set reads, checked against the
registered sha256, and the data fingerprint that identifies them in the grid: the files' hashes, the
entry's format and format options, and its declared split.

A file is hashed on its first use in every process when it is smaller than 64 MB (a few milliseconds), so
no edit can pass unseen, whatever it kept of the file's size and times. Larger files' hashes are cached in
``<cache dir>/sha256.json`` by path, size, modification time, inode and status-change time (ctime): an edit
in place, a copy (``cp -p``, ``rsync -a``) or a ``touch -r`` changes the inode or the ctime, which no user
can set back.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from olb.cache import cache_dir, private_cache
from olb.data.errors import DataError
from olb.data.opening import open_data
from olb.data.registry import DatasetSpec

_CHUNK = 1 << 20


class ChecksumMismatch(DataError, ValueError):
    """A registered data set's local file differs from its registered sha256."""


@dataclass(frozen=True)
class Provenance:
    """The data a cell reads: ``fingerprint`` (16 hex digits) and, by role, each file's path and sha256.
    ``verified``: every file was checked against a registered sha256 (and matched)."""

    dataset: str
    fingerprint: str
    paths: dict[str, str]
    hashes: dict[str, str]
    verified: bool = False

    def files_text(self) -> str:
        """``role=path`` per file, for the ``olb.data_files`` tag."""
        return " ".join(f"{role}={path}" for role, path in self.paths.items())


SMALL_FILE = 64 << 20  # bytes: hashed on first use in every process, never taken from the on-disk cache

_hashed_here: dict[str, str] = {}  # stat key -> sha256 of the files this process hashed


def file_sha256(path: Path) -> str:
    """The sha256 of the file's bytes, hashed once per process (and, for large files, once per change).

    Only to find the parsed arrays of the file as it is (``olb.data.parsed``): the arrays a miss parses are
    hashed again from the very bytes parsed (`olb.data.files.read_files`)."""
    path = Path(os.path.abspath(path))
    with os.fdopen(open_data(path), "rb") as fh:  # the file's stat and bytes: those of one open file
        info = os.fstat(fh.fileno())
        key = f"{path}|{info.st_size}|{info.st_mtime_ns}|{info.st_ino}|{info.st_ctime_ns}"
        if key in _hashed_here:
            return _hashed_here[key]
        large = info.st_size >= SMALL_FILE
        known = _read_hash_cache() if large else {}
        if key in known:
            _hashed_here[key] = known[key]
            return known[key]
        digest = hashlib.sha256()
        while block := fh.read(_CHUNK):
            digest.update(block)
    known = {k: v for k, v in known.items() if not k.startswith(f"{path}|")}  # the file's older states
    known[key] = digest.hexdigest()
    if large:
        _write_hash_cache(known)
    _hashed_here[key] = known[key]
    return known[key]


def provenance(
    spec: DatasetSpec,
    paths: dict[str, Path],
    verify_checksums: bool = True,
    hashes: dict[str, str] | None = None,
) -> Provenance:
    """Hash ``paths`` (the data set's files by role; ``hashes``: their sha256 already taken from the bytes
    read) and derive the fingerprint.

    With ``verify_checksums`` a file whose sha256 differs from the registered one raises `ChecksumMismatch`
    naming the file, the expected and the found hash; without it the found hash is used as it is.
    """
    hashes = hashes or {role: file_sha256(path) for role, path in paths.items()}
    if verify_checksums:
        for role, path in paths.items():
            expected = spec.files[role].sha256
            if expected and hashes[role] != expected:
                raise ChecksumMismatch(
                    f"{path}: sha256 {hashes[role]}, expected {expected} (registered in {spec.conf_file}); "
                    "restore the file, or pass verify_checksums=false to use it as it is (its cells then run "
                    "on its content)"
                )
    # How the bytes are read is part of the data: the format and its options (label columns, nominal
    # categories, generator parameters) and the declared split.
    identity = {
        "files": hashes,
        "format": spec.format,
        "options": spec.options,
        "split": spec.split.as_dict() if spec.split else None,
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    verified = verify_checksums and all(spec.files[role].sha256 for role in paths)
    return Provenance(
        spec.name,
        hashlib.sha256(text.encode()).hexdigest()[:16],
        {role: str(path) for role, path in paths.items()},
        hashes,
        verified,
    )


def _hash_cache_path() -> Path:
    return cache_dir() / "sha256.json"


def _read_hash_cache() -> dict[str, str]:
    try:
        with os.fdopen(open_data(_hash_cache_path()), "rb") as fh:
            return json.load(fh)
    except (OSError, ValueError, DataError):
        return {}


def _write_hash_cache(known: dict[str, str]) -> None:
    """Atomic replace: concurrent writers may drop each other's new entries, never corrupt the file."""
    target = _hash_cache_path()
    try:
        private_cache()
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as fh:
            json.dump(known, fh)
        os.replace(fh.name, target)
    except OSError:  # a read-only cache only costs a rehash next time
        pass
