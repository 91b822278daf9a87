"""Parsed data sets on disk, keyed by their data fingerprint: the grid's planner parses each data set once
and every cell (Ray worker or serial) reads the arrays instead of parsing text files again.

One ``<cache dir>/parsed/<name>-<fingerprint>-<parser version>.npz`` per data set (the parser version
hashes the loaders' code): ``Y``, ``X`` (dense) or its CSR parts (``X_data``, ``X_indices``, ``X_indptr``,
``X_shape``), the metadata as JSON (with the sha256 of every file the arrays were parsed from) and ``digest``,
the sha256 of all of them. Written atomically, in a user-only folder.

Verified when read: a file that does not load (truncated, bit-flipped), whose arrays do not hash to its
digest (altered, planted) or that was parsed from other files than the ones just hashed (stale, renamed) is
named in a `CacheWarning`, removed and parsed again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from olb.cache import CacheWarning, checked_cache, private_cache
from olb.data.dataset import Dataset
from olb.data.opening import open_data
from olb.data.provenance import Provenance

# The modules whose code decides the parsed arrays: a change to any of them makes earlier caches unused.
_PARSER_MODULES = (
    "arff.py",
    "files.py",  # DataFile: how the bytes are decompressed and decoded
    "uci.py",
    "libsvm.py",
    "splits.py",
    "dataset.py",
    "registry.py",
    "parsed.py",
    "__init__.py",
)


@functools.cache
def parser_version() -> str:
    """8 hex digits of the sha256 of the parsing code (so that a fixed loader never reads stale arrays)."""
    digest = hashlib.sha256()
    for module in _PARSER_MODULES:
        digest.update((Path(__file__).parent / module).read_bytes())
    return digest.hexdigest()[:8]


def parsed_path(name: str, fingerprint: str) -> Path:
    return checked_cache("parsed") / f"{name}-{fingerprint}-{parser_version()}.npz"


def read_parsed(source: Provenance) -> Dataset | None:
    """The cached data set parsed from the files ``source`` hashed, or ``None`` when there is none (or the
    cached file was unreadable, altered or stale: then it is removed, with a `CacheWarning`)."""
    path = parsed_path(source.dataset, source.fingerprint)
    if not path.is_file():
        return None
    try:
        with os.fdopen(open_data(path), "rb") as fh, np.load(fh, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
        problem = _problem(arrays, source)
    except Exception as exc:  # a damaged zip fails in many ways (BadZipFile, NotImplementedError, ...): rebuild
        problem = f"unreadable ({type(exc).__name__}: {exc})"
    if problem:
        warnings.warn(f"parsed-data cache {path}: {problem}; removed, the data is parsed again", CacheWarning)
        path.unlink(missing_ok=True)
        return None
    meta = json.loads(str(arrays["meta"]))
    if "X" in arrays:
        X = arrays["X"]
    else:
        from scipy import sparse

        X = sparse.csr_array(
            (arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]), shape=tuple(arrays["X_shape"])
        )
    return Dataset(
        name=meta["name"],
        X=X,
        Y=arrays["Y"],
        task=meta["task"],
        feature_names=tuple(meta["feature_names"]),
        label_names=tuple(meta["label_names"]),
        n_train=meta["n_train"],
        nominal=tuple(tuple(c) if c is not None else None for c in meta["nominal"]),
    )


def write_parsed(dataset: Dataset, source: Provenance) -> None:
    """Store ``dataset``, parsed from the files ``source`` hashed; a cache that cannot be written is skipped."""
    target = parsed_path(source.dataset, source.fingerprint)
    meta = {
        "name": dataset.name,
        "task": dataset.task,
        "feature_names": list(dataset.feature_names),
        "label_names": list(dataset.label_names),
        "n_train": dataset.n_train,
        "nominal": [list(c) if c is not None else None for c in dataset.nominal],
        "fingerprint": source.fingerprint,
        "files": source.hashes,
    }
    arrays: dict[str, np.ndarray] = {"Y": dataset.Y, "meta": np.array(json.dumps(meta))}
    X = dataset.X
    if isinstance(X, np.ndarray):
        arrays["X"] = X
    else:
        arrays.update(X_data=X.data, X_indices=X.indices, X_indptr=X.indptr, X_shape=np.array(X.shape))
    arrays["digest"] = np.array(_digest(arrays))
    try:
        private_cache("parsed")
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False, suffix=".npz") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds like allow_pickle
        os.replace(fh.name, target)
    except OSError:
        pass


def _digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 of the arrays (``digest`` itself left out): names, dtypes, shapes and bytes."""
    digest = hashlib.sha256()
    for key in sorted(set(arrays) - {"digest"}):
        array = np.ascontiguousarray(arrays[key])
        digest.update(json.dumps([key, array.dtype.str, array.shape]).encode())
        digest.update(array.reshape(-1).view(np.uint8).data)
    return digest.hexdigest()


def _problem(arrays: dict[str, np.ndarray], source: Provenance) -> str | None:
    """Why the cached arrays cannot be used for the files ``source`` hashed (``None``: they can)."""
    if "digest" not in arrays or "meta" not in arrays:
        return "no digest: not written by this version of olb"
    if str(arrays["digest"]) != _digest(arrays):
        return "its arrays differ from its digest (altered or damaged)"
    meta = json.loads(str(arrays["meta"]))
    if (meta.get("fingerprint"), meta.get("files")) != (source.fingerprint, source.hashes):
        return f"parsed from other files (sha256 {meta.get('files')}), not from {source.hashes}"
    return None
