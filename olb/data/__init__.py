"""Benchmark data sets: the registry (``conf/dataset/*.yaml``), the loaders and synthetic streams.

``load_dataset(name)`` finds the files (``olb.data.files``), parses them with the loader of the entry's
``format`` and checks the result against the entry's ``shape``. See ``docs/data.md``.
"""

from __future__ import annotations

import dataclasses
import os

from olb.data.arff import load_meka, load_mulan
from olb.data.dataset import Dataset
from olb.data.errors import DataError, DataFormatError, DatasetUnavailable, DownloadError, UnknownDatasetError
from olb.data.files import locate
from olb.data.libsvm import load_libsvm
from olb.data.registry import DatasetSpec, dataset_names, dataset_spec
from olb.data.synthetic import make_multilabel_stream
from olb.data.uci import load_table

__all__ = [
    "DataError",
    "DataFormatError",
    "Dataset",
    "DatasetSpec",
    "DatasetUnavailable",
    "DownloadError",
    "UnknownDatasetError",
    "dataset_names",
    "dataset_spec",
    "load_dataset",
    "make_multilabel_stream",
]

LOADERS = {
    "mulan_arff": load_mulan,
    "meka_arff": load_meka,
    "uci_csv": load_table,
    "csv_gz": load_table,
    "xls": load_table,
    "libsvm_multilabel": load_libsvm,
}


def load_dataset(name: str, data_dir: str | os.PathLike | None = None) -> Dataset:
    """Load the registered data set ``name`` (official train rows first, then test rows).

    Files are read from ``data_dir`` (else ``$OLB_DATA_DIR``) when it holds them all, else from the copy
    embedded in the package (emotions), else from the download cache, downloading what is missing.
    """
    spec = dataset_spec(name)
    if spec.format == "synthetic":
        return spec.check(dataclasses.replace(make_multilabel_stream(**spec.options["params"]), name=spec.name))
    if spec.format not in LOADERS:
        raise DataFormatError(f"{spec.conf_file}: unknown format {spec.format!r}; known: {', '.join(LOADERS)}")
    paths = locate(spec, data_dir)
    return spec.check(LOADERS[spec.format](spec, paths), paths)
