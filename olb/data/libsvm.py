"""LIBSVM multi-label files (rcv1v2): one example per line, ``l1,l2,... idx:val idx:val ...``.

Feature indices are 1-based; the number of features comes from the registry (``shape.n_features``) since
the format does not declare it. Infinite and NaN values are refused (the format has no missing values). The
labels are the integer label values seen in the files, sorted. X is a ``scipy.sparse.csr_array`` (float64):
rcv1v2 dense would need about 300 GB.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from olb.data.dataset import Dataset
from olb.data.errors import DataFormatError
from olb.data.files import DataFile
from olb.data.registry import DatasetSpec


def read_libsvm(path: DataFile, n_features: int) -> tuple[sparse.csr_array, list[list[int]]]:
    """The features (n, n_features) as a CSR array and the label list of each line."""
    rows: list[int] = []
    columns: list[int] = []
    cells_read: list[float] = []
    label_lists: list[list[int]] = []
    line_numbers: list[int] = []
    with path.text() as fh:
        for line_number, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            head, _, tail = line.partition(" ")
            if ":" in head:  # no label
                head, tail = "", line
            try:
                labels = [int(label) for label in head.split(",") if label]
                pairs = [token.split(":") for token in tail.split()]
                index = [int(i) for i, _ in pairs]
                cells = [float(v) for _, v in pairs]
            except ValueError:
                raise DataFormatError(f"{path}, line {line_number}: expected 'l1,l2,... index:value ...'") from None
            if index and not 1 <= min(index) <= max(index) <= n_features:
                raise DataFormatError(f"{path}, line {line_number}: feature index outside 1..{n_features}")
            rows += [len(label_lists)] * len(index)
            columns += index
            cells_read += cells
            label_lists.append(labels)
            line_numbers.append(line_number)
    values = np.array(cells_read, dtype=np.float64)
    nonfinite = np.flatnonzero(~np.isfinite(values))
    if len(nonfinite):
        raise DataFormatError(
            f"{path}, line {line_numbers[rows[nonfinite[0]]]}: feature value {values[nonfinite[0]]:g}, not a "
            f"finite number (non-finite values in the file: {len(nonfinite)})"
        )
    X = sparse.csr_array(
        (values, (np.array(rows, dtype=np.int64), np.array(columns, dtype=np.int64) - 1)),
        shape=(len(label_lists), n_features),
    )
    X.sum_duplicates()
    return X, label_lists


def load_libsvm(spec: DatasetSpec, paths: dict[str, DataFile]) -> Dataset:
    """A multi-label data set from one LIBSVM file, or from a train and a test file."""
    parts = [read_libsvm(paths[role], spec.shape.n_features) for role in spec.parts]
    label_lists = [labels for _, lists in parts for labels in lists]
    label_values = sorted({label for labels in label_lists for label in labels})
    column = {label: k for k, label in enumerate(label_values)}
    Y = np.zeros((len(label_lists), len(label_values)), dtype=np.int8)
    for i, labels in enumerate(label_lists):
        Y[i, [column[label] for label in labels]] = 1
    return Dataset(
        name=spec.name,
        X=sparse.csr_array(sparse.vstack([X for X, _ in parts], format="csr")),
        Y=Y,
        task="multilabel",
        feature_names=tuple(f"x{j + 1}" for j in range(spec.shape.n_features)),
        label_names=tuple(str(label) for label in label_values),
        n_train=len(parts[0][1]) if "train" in spec.parts else None,
    )
