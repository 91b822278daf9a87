"""Multi-label ARFF files: MULAN (labels named by an XML file) and MEKA (the first ``-C n`` attributes).

Dense and sparse ARFF are both read with liac-arff; a sparse file gives a ``scipy.sparse.csr_array`` X
(float64, never densified), a dense one a dense array; nominal values become their category codes, ``?``
becomes NaN. Label columns must hold 0/1 (nominal ``{0,1}`` or numeric) and no missing value. Infinite and
NaN values (``inf``, ``1e999``, ``nan``) are refused with their file and line: a missing value is ``?``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import arff as liac_arff
import numpy as np
from scipy import sparse

from olb.data.dataset import Dataset
from olb.data.errors import DataFormatError
from olb.data.files import DataFile
from olb.data.registry import DatasetSpec

# A trailing "%" comment on the relation line (MEKA's slashdot: "@relation '...' %50"); liac-arff rejects it.
_RELATION_COMMENT = re.compile(r"""^(\s*@relation\s+(?:'[^']*'|"[^"]*"|[^\s%]+))\s*%.*$""", re.IGNORECASE)
_MEKA_LABEL_COUNT = re.compile(r"-C\s+(-?\d+)")


@dataclass(frozen=True)
class ArffTable:
    """An ARFF file as numbers. ``values`` (n, a), a CSR matrix for a sparse file: nominal values as category
    codes, missing values as NaN; ``lines``: the file line of each row; ``categories``: per attribute, ``None``
    if numeric."""

    relation: str
    names: tuple[str, ...]
    categories: tuple[tuple[str, ...] | None, ...]
    values: np.ndarray | sparse.csr_array
    lines: np.ndarray


def read_arff(path: DataFile) -> ArffTable:
    """Parse a dense or sparse ARFF file; `DataFormatError` (with file and line) if it is malformed."""
    try:
        lines = path.binary().read().decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 text ({exc})") from None
    start = next((i for i, line in enumerate(lines) if line.strip().upper().startswith("@DATA")), len(lines))
    for i in range(start):
        if lines[i].strip().upper().startswith("@RELATION"):
            lines[i] = _RELATION_COMMENT.sub(r"\1", lines[i])
            break
    row_lines = np.array(
        [i + 1 for i in range(start + 1, len(lines)) if lines[i].strip() and not lines[i].strip().startswith("%")],
        dtype=np.int64,
    )
    is_sparse = len(row_lines) > 0 and lines[row_lines[0] - 1].lstrip().startswith("{")
    try:
        decoded = liac_arff.ArffDecoder().decode(
            lines, encode_nominal=True, return_type=liac_arff.LOD if is_sparse else liac_arff.DENSE
        )
    except liac_arff.ArffException as exc:
        message = str(exc)
        raise DataFormatError(f"{path}: {message[:200]}{'...' if len(message) > 200 else ''}") from None
    names = tuple(_unescape(name) for name, _ in decoded["attributes"])
    categories = tuple(tuple(kind) if isinstance(kind, list) else None for _, kind in decoded["attributes"])
    strings = [name for name, (_, kind) in zip(names, decoded["attributes"]) if kind == "STRING"]
    if strings:
        raise DataFormatError(f"{path}: string attributes are not supported: {', '.join(strings[:5])}")
    values = (_csr if is_sparse else _dense)(decoded["data"], len(names))
    _refuse_nonfinite(path, decoded["data"], values, names, row_lines)
    return ArffTable(decoded["relation"], names, categories, values, row_lines)


def read_label_xml(path: DataFile) -> tuple[str, ...]:
    """The label names of a MULAN label XML file, in file order (nested labels included)."""
    try:
        root = ElementTree.parse(path.binary()).getroot()
    except ElementTree.ParseError as exc:
        raise DataFormatError(f"{path}: malformed label XML: {exc}") from None
    names = tuple(node.get("name") for node in root.iter() if node.tag.rsplit("}", 1)[-1] == "label")
    if not names or None in names or len(set(names)) != len(names):
        raise DataFormatError(f"{path}: a MULAN label XML needs one or more <label name=...>, all distinct")
    return cast(tuple[str, ...], names)  # no None among them (refused above)


def load_mulan(spec: DatasetSpec, paths: dict[str, DataFile]) -> Dataset:
    """A MULAN data set: the labels are the last attributes, named (in the returned order) by the XML."""
    labels = read_label_xml(paths["labels"])

    def label_columns(table: ArffTable, path: DataFile) -> list[int]:
        last = table.names[len(table.names) - len(labels) :]
        if set(last) != set(labels):
            missing, extra = _few(set(labels) - set(last)), _few(set(last) - set(labels))
            raise DataFormatError(
                f"{path}: its last {len(labels)} attributes do not match the labels of {paths['labels']}: "
                f"not in the ARFF tail: {missing}; not in the XML: {extra}"
            )
        position = {name: j for j, name in enumerate(table.names)}
        return [position[name] for name in labels]

    return _assemble(spec, paths, label_columns)


def load_meka(spec: DatasetSpec, paths: dict[str, DataFile]) -> Dataset:
    """A MEKA data set: the labels are the first ``target.first`` attributes (checked against ``-C``)."""
    n_labels = spec.options["target"]["first"]

    def label_columns(table: ArffTable, path: DataFile) -> list[int]:
        declared = _MEKA_LABEL_COUNT.search(table.relation)
        if declared and int(declared.group(1)) != n_labels:
            raise DataFormatError(
                f"{path}: the relation declares -C {declared.group(1)} but {spec.conf_file} says first: {n_labels}"
            )
        return list(range(n_labels))

    return _assemble(spec, paths, label_columns)


def _assemble(
    spec: DatasetSpec, paths: dict[str, DataFile], label_columns: Callable[[ArffTable, DataFile], list[int]]
) -> Dataset:
    """Read the train and test (or data) files, check they agree, split features from labels."""
    tables = {role: read_arff(paths[role]) for role in spec.parts}
    first_role, first = next(iter(tables.items()))
    for role, table in tables.items():
        if (table.names, table.categories) != (first.names, first.categories):
            raise DataFormatError(f"{paths[role]}: its attributes differ from those of {paths[first_role]}")
    labels = np.array(label_columns(first, paths[first_role]), dtype=np.int64)
    features = np.setdiff1d(np.arange(len(first.names)), labels)
    return Dataset(
        name=spec.name,
        X=_feature_matrix([table.values for table in tables.values()], features),
        Y=np.vstack([_label_matrix(table, labels, paths[role]) for role, table in tables.items()]),
        task="multilabel",
        feature_names=tuple(first.names[j] for j in features),
        label_names=tuple(first.names[j] for j in labels),
        n_train=tables["train"].values.shape[0] if "train" in tables else None,
        nominal=tuple(first.categories[j] for j in features),
    )


def _feature_matrix(parts: list, features: np.ndarray):
    """The feature columns of the files, stacked: a CSR array if any file is sparse, else a dense array."""
    if any(sparse.issparse(part) for part in parts):
        blocks = [sparse.csr_array(part)[:, features] for part in parts]
        return sparse.csr_array(sparse.vstack(blocks, format="csr"), dtype=np.float64)
    X = np.empty((sum(part.shape[0] for part in parts), len(features)))
    start = 0
    for part in parts:  # fill X in place: no dense copy of a whole file
        np.take(part, features, axis=1, out=X[start : start + part.shape[0]])
        start += part.shape[0]
    return X


def _label_matrix(table: ArffTable, columns: np.ndarray, path: DataFile) -> np.ndarray:
    Y = table.values[:, columns]
    if not isinstance(Y, np.ndarray):  # a sparse table's
        Y = Y.toarray()
    for k, j in enumerate(columns):
        categories = table.categories[j]
        if categories is None or categories == ("0", "1"):
            continue
        if not set(categories) <= {"0", "1"}:
            raise DataFormatError(
                f"{path}: label column {table.names[j]!r} declares the values {{{', '.join(categories)}}}; "
                "labels must be 0 or 1"
            )
        codes = Y[:, k]
        known = ~np.isnan(codes)
        Y[known, k] = np.array(categories, dtype=np.float64)[codes[known].astype(np.int64)]
    bad = np.argwhere((Y != 0) & (Y != 1))
    if len(bad):
        row, k = bad[0]
        name, value = table.names[columns[k]], Y[row, k]
        problem = "is missing" if np.isnan(value) else f"is {value:g}; labels must be 0 or 1"
        raise DataFormatError(f"{path}, line {table.lines[row]}: label column {name!r} {problem}")
    return Y.astype(np.int8)


def _refuse_nonfinite(path: DataFile, rows: list, values, names: tuple[str, ...], lines: np.ndarray) -> None:
    """`DataFormatError` naming the infinite and NaN values of the file (its missing values, ``?``, excepted)."""
    if sparse.issparse(values):
        positions = np.flatnonzero(~np.isfinite(values.data))
        cells: list = [(np.searchsorted(values.indptr, k, side="right") - 1, values.indices[k]) for k in positions]
    else:
        cells = np.argwhere(~np.isfinite(values)).tolist()
    bad = [(i, j) for i, j in cells if rows[i][j] is not None]
    if bad:
        (i, j), others = bad[0], sorted({int(lines[i]) for i, _ in bad[1:6]})
        also = f", also on lines {', '.join(map(str, others))}" if others else ""
        raise DataFormatError(
            f"{path}, line {lines[i]}: attribute {names[j]!r} is {rows[i][j]:g}, not a finite number "
            f"(non-finite values in the file: {len(bad)}{also}); a missing value is written ?"
        )


def _dense(rows: list[list], n_columns: int) -> np.ndarray:
    return np.array(rows, dtype=np.float64).reshape(len(rows), n_columns)


def _csr(rows: list[dict], n_columns: int) -> sparse.csr_array:
    counts = [len(row) for row in rows]
    columns = np.fromiter((j for row in rows for j in row), dtype=np.int64, count=sum(counts))
    cells = np.array([value for row in rows for value in row.values()], dtype=np.float64)
    rows_of_cells = np.repeat(np.arange(len(rows)), counts)
    return sparse.csr_array((cells, (rows_of_cells, columns)), shape=(len(rows), n_columns))


def _unescape(name: str) -> str:
    """liac-arff strips the quotes of an attribute name but keeps its escapes (birds: ``'Swainson\\'s Thrush'``)."""
    return re.sub(r"\\(.)", r"\1", name)


def _few(names: set[str], limit: int = 5) -> str:
    shown = ", ".join(repr(name) for name in sorted(names)[:limit])
    return (shown + (", ..." if len(names) > limit else "")) or "-"
