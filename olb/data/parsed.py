"""Parsed data sets on disk, keyed by their data fingerprint: the grid's planner parses each data set once
and every cell (Ray worker or serial) reads the arrays instead of parsing text files again.

One ``<cache dir>/parsed/<name>-<fingerprint>-<parser version>.npz`` per data set (the parser version
hashes the loaders' code): ``Y``, ``X`` (dense) or its CSR parts
(``X_data``, ``X_indices``, ``X_indptr``, ``X_shape``), and the metadata as JSON. Written atomically.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from olb.data.dataset import Dataset
from olb.data.cache import cache_dir


# The modules whose code decides the parsed arrays: a change to any of them makes earlier caches unused.
_PARSER_MODULES = ("arff.py", "uci.py", "libsvm.py", "splits.py", "dataset.py", "registry.py", "__init__.py")


@functools.cache
def parser_version() -> str:
    """8 hex digits of the sha256 of the parsing code (so that a fixed loader never reads stale arrays)."""
    digest = hashlib.sha256()
    for module in _PARSER_MODULES:
        digest.update((Path(__file__).parent / module).read_bytes())
    return digest.hexdigest()[:8]


def parsed_path(name: str, fingerprint: str) -> Path:
    return cache_dir() / "parsed" / f"{name}-{fingerprint}-{parser_version()}.npz"


def read_parsed(name: str, fingerprint: str) -> Dataset | None:
    """The cached data set, or ``None`` when there is none (or it is unreadable)."""
    path = parsed_path(name, fingerprint)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as arrays:
            meta = json.loads(str(arrays["meta"]))
            if "X" in arrays:
                X = arrays["X"]
            else:
                from scipy import sparse

                X = sparse.csr_array(
                    (arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]), shape=tuple(arrays["X_shape"])
                )
            Y = arrays["Y"]
    except (OSError, ValueError, KeyError):
        return None
    return Dataset(
        name=meta["name"],
        X=X,
        Y=Y,
        task=meta["task"],
        feature_names=tuple(meta["feature_names"]),
        label_names=tuple(meta["label_names"]),
        n_train=meta["n_train"],
        nominal=tuple(tuple(c) if c is not None else None for c in meta["nominal"]),
    )


def write_parsed(dataset: Dataset, fingerprint: str) -> None:
    """Store ``dataset`` under its fingerprint; a cache that cannot be written is skipped silently."""
    target = parsed_path(dataset.name, fingerprint)
    meta = {
        "name": dataset.name,
        "task": dataset.task,
        "feature_names": list(dataset.feature_names),
        "label_names": list(dataset.label_names),
        "n_train": dataset.n_train,
        "nominal": [list(c) if c is not None else None for c in dataset.nominal],
    }
    arrays = {"Y": dataset.Y, "meta": np.array(json.dumps(meta))}
    if dataset.is_sparse:
        arrays.update(
            X_data=dataset.X.data,
            X_indices=dataset.X.indices,
            X_indptr=dataset.X.indptr,
            X_shape=np.array(dataset.X.shape),
        )
    else:
        arrays["X"] = dataset.X
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False, suffix=".npz") as fh:
            np.savez(fh, **arrays)
        os.replace(fh.name, target)
    except OSError:
        pass
