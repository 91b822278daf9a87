"""Multiclass tables: UCI CSV files (``uci_csv``: no header), headed CSV (``csv_gz``) and Excel sheets (``xls``).

Registry options (see ``docs/data.md``): ``target`` (``column``: name or index; optional ``classes`` in code
order, else the sorted class values), ``columns`` (names of a headerless file), ``drop``, ``nominal``
(column -> categories in code order), ``sep``, ``decimal``, ``sheet`` and ``unparsable_cells`` (how many
numeric cells may fail to parse; they become NaN). ``?`` and empty cells are missing values: NaN features,
an error in the class column. Infinite and NaN cells (``inf``, ``1e999``, ``nan``) are refused.
"""

from __future__ import annotations

import csv
import functools
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from olb.data.dataset import Dataset
from olb.data.errors import DataFormatError
from olb.data.files import DataFile
from olb.data.registry import DatasetSpec

MISSING = ("?", "")


def load_table(spec: DatasetSpec, paths: dict[str, DataFile]) -> Dataset:
    """A multiclass data set from one table file, or from a train and a test file with the same columns."""
    options = spec.options
    parts = [_read(spec, paths[role]) for role in spec.parts]
    names = list(parts[0][0].columns)
    for (part, _), role in zip(parts, spec.parts):
        if list(part.columns) != names:
            raise DataFormatError(f"{paths[role]}: its columns differ from those of {paths[spec.parts[0]]}")
    frame = pd.concat([part for part, _ in parts], ignore_index=True) if len(parts) > 1 else parts[0][0]
    offsets = np.cumsum([0] + [len(part) for part, _ in parts])

    def where(row: int) -> str:
        k = np.searchsorted(offsets, row, side="right") - 1
        return parts[k][1](row - offsets[k])

    target = options["target"]["column"]
    target = names[target] if isinstance(target, int) else target
    drop = {target, *options.get("drop", ())}
    if not drop <= set(names):
        absent = ", ".join(map(repr, sorted(drop - set(names))))
        raise DataFormatError(f"{paths[spec.parts[0]]}: no column(s) {absent}")
    features = [name for name in names if name not in drop]
    nominal = options.get("nominal") or {}

    y = frame[target].to_numpy()
    classes = options["target"].get("classes") or sorted(
        {str(value).strip() for value in pd.unique(y)} - set(MISSING), key=_natural_order
    )
    Y = _codes(y, classes, target, where)
    missing = np.flatnonzero(np.isnan(Y))
    if len(missing):
        raise DataFormatError(f"{where(missing[0])}: the class (column {target!r}) is missing")
    return Dataset(
        name=spec.name,
        X=_features(spec, frame[features], where),
        Y=Y.astype(np.int64),
        task="multiclass",
        feature_names=tuple(str(name) for name in features),
        label_names=tuple(str(c) for c in classes),
        n_train=len(parts[0][0]) if "train" in spec.parts else None,
        nominal=tuple(tuple(map(str, nominal[name])) if name in nominal else None for name in features),
    )


def _features(spec: DatasetSpec, frame: pd.DataFrame, where: Callable[[int], str]) -> np.ndarray:
    """The feature matrix: numbers, or category codes for the ``nominal`` columns; missing cells NaN."""
    nominal, decimal = spec.options.get("nominal") or {}, spec.options.get("decimal", ".")
    X = np.empty(frame.shape)
    unparsable, nonfinite = [], []
    for j, name in enumerate(frame.columns):
        if name in nominal:
            X[:, j] = _codes(frame[name].to_numpy(), nominal[name], name, where)
        else:
            X[:, j], bad, infinite = _numeric(frame[name].to_numpy(), decimal)
            unparsable += [(int(row), name) for row in np.flatnonzero(bad)]
            nonfinite += [(int(row), name) for row in np.flatnonzero(infinite)]
    if nonfinite:
        row, name = min(nonfinite)
        raise DataFormatError(
            f"{where(row)}: column {name!r} holds {frame[name].iloc[row]!r}, not a finite number "
            f"(non-finite cells: {len(nonfinite)}); a missing value is written ? or left empty"
        )
    allowed = spec.options.get("unparsable_cells", 0)
    if len(unparsable) > allowed:
        row, name = unparsable[0]
        raise DataFormatError(
            f"{where(row)}: column {name!r} holds {frame[name].iloc[row]!r}, not a number "
            f"({len(unparsable)} such cells, {spec.conf_file} allows {allowed})"
        )
    return X


def _read(spec: DatasetSpec, path: DataFile) -> tuple[pd.DataFrame, Callable[[int], str]]:
    """The table of one file (text cells as str objects) and a function giving the location of a row."""
    options = spec.options
    if spec.format == "xls":
        with warnings.catch_warnings():  # pandas 3 deprecates the xlrd engine, the one that reads .xls
            warnings.filterwarnings("ignore", message=".*xlrd.*")
            frame = pd.read_excel(path.binary(), sheet_name=options.get("sheet", 0), engine="xlrd")
        return frame, lambda row: f"{path}, row {row + 2}"

    sep, headerless = options.get("sep", ","), spec.format == "uci_csv"
    try:
        frame = pd.read_csv(
            path.binary(),  # decompressed already
            compression=None,
            sep=sep,
            header=None if headerless else 0,
            dtype=object,
            na_filter=False,
            skipinitialspace=True,
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, EOFError, OSError) as exc:
        raise DataFormatError(f"{path}: {exc}") from None
    if headerless:
        frame.columns = options.get("columns") or [f"x{j + 1}" for j in range(frame.shape[1])]
    lines = functools.cache(lambda: _row_lines(path, sep, frame.shape[1], header=not headerless))
    if (frame.to_numpy() == "").any():
        lines()  # pandas pads a short row with empty cells: the exact check below tells them apart
    return frame, lambda row: f"{path}, line {lines()[row]}"


def _row_lines(path: DataFile, sep: str, width: int, header: bool) -> list[int]:
    """The line number of each data row; `DataFormatError` at the first row without ``width`` fields."""
    lines = []
    with path.text() as fh:
        reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
        for row in reader:
            if row and len(row) != width:
                raise DataFormatError(f"{path}, line {reader.line_num}: {len(row)} fields, expected {width}")
            if row:
                lines.append(reader.line_num)
    return lines[1:] if header else lines


def _numeric(cells: np.ndarray, decimal: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cells as float64 (missing ones NaN), the mask of the cells that are not numbers and the mask of
    those that are infinite or NaN without being missing (``inf``, ``1e999``, ``nan``)."""
    bad = np.zeros(len(cells), dtype=bool)
    if cells.dtype.kind == "f":  # a spreadsheet's column: its empty cells are NaN
        return cells, bad, np.isinf(cells)
    try:
        values = np.array(cells, dtype=np.float64)
        return values, bad, ~np.isfinite(values)
    except ValueError:  # missing cells, decimal commas or malformed cells: parse cell by cell
        values, missing = np.full(len(cells), np.nan), np.zeros(len(cells), dtype=bool)
        for i, cell in enumerate(cells):
            text = str(cell).strip().replace(decimal, ".")
            if text in MISSING:
                missing[i] = True
                continue
            try:
                values[i] = float(text)
            except ValueError:
                bad[i] = True
        return values, bad, ~np.isfinite(values) & ~bad & ~missing


def _codes(cells: np.ndarray, categories: list, name: str, where: Callable[[int], str]) -> np.ndarray:
    """The category code of each cell (NaN if missing); `DataFormatError` for a value not in ``categories``."""
    code = {str(c): float(i) for i, c in enumerate(categories)}
    index, values = pd.factorize(cells)  # index -1: a NaN cell (empty in a spreadsheet)
    texts = [str(value).strip() for value in values]
    lookup = np.array([code.get(text, np.nan if text in MISSING else -1.0) for text in texts] + [np.nan])
    codes = lookup[index]
    unknown = np.flatnonzero(codes == -1)
    if len(unknown):
        row = unknown[0]
        raise DataFormatError(f"{where(row)}: column {name!r} holds {cells[row]!r}, not one of {', '.join(code)}")
    return codes


def _natural_order(value: str):
    """Sort numbers numerically, before any text."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)
