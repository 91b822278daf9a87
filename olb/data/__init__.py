"""Benchmark data sets: the registry (``conf/dataset/*.yaml``), the loaders and synthetic streams.

``load_dataset(name)`` finds the files (``olb.data.files``), verifies them against the registered sha256
(``olb.data.provenance``), and reads the parsed arrays from the cache (``olb.data.parsed``) or reads the files
into memory, hashes (and verifies) those bytes and parses them with the loader of the entry's ``format``, checks
the result against the entry's ``shape`` and applies a declared split (``olb.data.splits``). Loaders (pandas,
liac-arff, scipy) are imported only when used. See ``docs/data.md``.
"""

from __future__ import annotations

import dataclasses
import importlib

from olb.data.dataset import Dataset
from olb.data.errors import (
    DataDirWarning,
    DataError,
    DataFormatError,
    DatasetUnavailable,
    DownloadError,
    IncompleteDataDir,
    UnknownDatasetError,
)
from olb.data.files import DataDirs, locate, read_files
from olb.data.provenance import ChecksumMismatch, Provenance, provenance
from olb.data.registry import DatasetSpec, dataset_names, dataset_spec
from olb.data.splits import SplitSpec, apply_split

__all__ = [
    "ChecksumMismatch",
    "DataDirWarning",
    "DataError",
    "DataFormatError",
    "Dataset",
    "DatasetSpec",
    "DatasetUnavailable",
    "DownloadError",
    "IncompleteDataDir",
    "Provenance",
    "SplitSpec",
    "UnknownDatasetError",
    "dataset_names",
    "dataset_spec",
    "load_dataset",
    "load_with_provenance",
    "make_multilabel_stream",
]

# format -> "module:function" (imported when a data set of that format is loaded)
LOADERS = {
    "mulan_arff": "olb.data.arff:load_mulan",
    "meka_arff": "olb.data.arff:load_meka",
    "uci_csv": "olb.data.uci:load_table",
    "csv_gz": "olb.data.uci:load_table",
    "xls": "olb.data.uci:load_table",
    "libsvm_multilabel": "olb.data.libsvm:load_libsvm",
}
EXTRAS = {"olb.data.uci": "tables"}  # loader module -> the pip extra that installs what it imports (pandas, xlrd)


def load_dataset(name: str, data_dir: DataDirs = None, verify_checksums: bool = True) -> Dataset:
    """Load the registered data set ``name`` (train rows first, then test rows).

    Files are read from the first of the data dirs (``data_dir``, else ``$OLB_DATA_DIR``; several allowed)
    that holds them all (a data dir holding only some raises `IncompleteDataDir`), else from the copy embedded
    in the package (emotions), else from the download cache, downloading what is missing. Files must match
    their registered sha256 (`ChecksumMismatch`) unless ``verify_checksums`` is false; without it, files that
    have none are not downloaded. Feature values must be finite (NaN only as a declared missing value).
    """
    return load_with_provenance(name, data_dir, verify_checksums)[0]


def load_with_provenance(
    name: str, data_dir: DataDirs = None, verify_checksums: bool = True
) -> tuple[Dataset, Provenance]:
    """`load_dataset` and the `Provenance` (files, hashes, fingerprint) of what it read."""
    spec = dataset_spec(name)
    if spec.format == "synthetic":
        from olb.data.synthetic import make_multilabel_stream

        dataset = make_multilabel_stream(**spec.options["params"])
        return spec.check(dataclasses.replace(dataset, name=spec.name)), provenance(spec, {})
    if spec.format not in LOADERS:
        raise DataFormatError(f"{spec.conf_file}: unknown format {spec.format!r}; known: {', '.join(LOADERS)}")
    module, function = LOADERS[spec.format].split(":")
    try:
        loader = getattr(importlib.import_module(module), function)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"data set {name!r} (format {spec.format!r}) needs {exc.name}, not installed: "
            f'pip install "olb[{EXTRAS.get(module, "grid")}]"',
            name=exc.name,
        ) from exc
    paths = locate(spec, data_dir, verify_checksums)
    source = provenance(spec, paths, verify_checksums)
    from olb.data.parsed import read_parsed, write_parsed

    cached = read_parsed(source)
    if cached is not None:  # the registry entry may have changed since: checked again
        return spec.check(cached, paths), source
    # Parsed from bytes read once and fingerprinted from those same bytes: the file may have changed since it
    # was hashed above, the arrays are stored under the hash of what they were parsed from.
    files = read_files(paths)
    source = provenance(spec, paths, verify_checksums, {role: file.sha256 for role, file in files.items()})
    dataset = spec.check(loader(spec, files), paths)
    if spec.split is not None:
        dataset = apply_split(dataset, spec.split)
    write_parsed(dataset, source)
    return dataset, source


def __getattr__(name: str):
    if name == "make_multilabel_stream":  # numpy/scipy.special only when asked for
        from olb.data.synthetic import make_multilabel_stream

        return make_multilabel_stream
    raise AttributeError(f"module 'olb.data' has no attribute {name!r}")
