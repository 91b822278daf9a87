"""The data set registry: one ``conf/dataset/<name>.yaml`` per data set (schema in ``docs/data.md``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from olb.data.dataset import Dataset
from olb.data.errors import DataFormatError, UnknownDatasetError
from olb.data.splits import SplitSpec
from olb.paths import conf_dirs
from olb.text import did_you_mean

_COMMON_KEYS = ("name", "task", "format", "source", "files", "shape", "embedded", "quirks", "split")
_REQUIRED_KEYS = ("name", "task", "format", "shape")
_LAYOUTS: tuple[set[str], ...] = (
    {"train", "test"},
    {"data"},
    set(),
)  # data-file roles, besides the optional "labels" file


@dataclass(frozen=True)
class FileSpec:
    """One file: ``path`` relative to the data dir (and to the download cache), its ``sha256`` and a download
    ``url`` (``None`` if unknown). The path is checked when the entry is read (`path_problem`)."""

    path: str
    sha256: str | None = None
    url: str | None = None


@dataclass(frozen=True)
class Shape:
    """The expected size of the loaded data set (``n_train`` is ``None`` without an official split), and of a
    multi-label one optionally its label cardinality (mean relevant labels per row over every row), which only
    planning reads (the boosters' cost; ``tests/test_data.py`` checks it against the data)."""

    n_examples: int
    n_train: int | None
    n_features: int
    n_labels: int
    cardinality: float | None = None


@dataclass(frozen=True)
class DatasetSpec:
    """A parsed registry entry. Format-specific keys (``target``, ``nominal``, ...) are kept in ``options``."""

    name: str
    task: str
    format: str
    shape: Shape
    conf_file: Path  # the registry file it was read from
    files: dict[str, FileSpec] = field(default_factory=dict)
    source: str | None = None
    embedded: bool = False
    quirks: tuple[str, ...] = ()
    options: dict = field(default_factory=dict)
    split: SplitSpec | None = None  # a declared split (docs/data.md) for a source without one

    @property
    def n_train(self) -> int | None:
        """Train rows of the loaded data set: the official split's, else the declared split's, else ``None``."""
        if self.shape.n_train is not None:
            return self.shape.n_train
        return self.split.n_train if self.split is not None else None

    @property
    def parts(self) -> tuple[str, ...]:
        """The roles of the data files in row order: ``("train", "test")`` or ``("data",)``."""
        return ("train", "test") if "train" in self.files else ("data",)

    def check(self, dataset: Dataset, paths: dict[str, Path] | None = None) -> Dataset:
        """Return ``dataset`` if it has the expected shape, else raise `DataFormatError` naming the file."""
        paths, shape, where = paths or {}, self.shape, f"(expected by {self.conf_file})"
        rows: dict[str, tuple[int | None, int]]
        if shape.n_train is None:
            rows = {"data": (dataset.n_examples, shape.n_examples)}
        else:
            n_train = dataset.n_train or 0
            rows = {
                "train": (dataset.n_train, shape.n_train),
                "test": (dataset.n_examples - n_train, shape.n_examples - shape.n_train),
            }
        for role, (got, want) in rows.items():
            if got != want:
                raise DataFormatError(f"{paths.get(role, self.name)}: {got} rows, expected {want} {where}")
        counts = (
            (dataset.n_features, shape.n_features, "features"),
            (dataset.n_labels, shape.n_labels, "labels" if self.task == "multilabel" else "classes"),
        )
        for got, want, what in counts:
            if got != want:
                files = ", ".join(map(str, paths.values())) or self.name
                raise DataFormatError(f"{files}: {got} {what}, expected {want} {where}")
        return dataset


def path_problem(
    path: object,
    kind: str = "a data file's path",
    folder: str = "the data dir",
    example: str = "emotions/emotions-train.arff",
) -> str | None:
    """Why ``path`` cannot be a data file's registered path (``None``: it can): it must be a relative POSIX path,
    normalised (no ``.``, ``..`` or empty part), so that it names a file inside the data dir or the cache. ``kind``,
    ``folder`` and ``example`` name another path confined the same way (the grid's ``name``)."""
    if not isinstance(path, str) or not path:
        return f"must be a relative path, got {path!r}"
    if path.startswith("/"):
        return f"{path!r} is absolute; {kind} is relative to {folder} (e.g. {example})"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return f"{path!r} is not normalised (no '..', '.' or empty part): it would name a path outside {folder}"
    return None


def registry_dirs() -> list[Path]:
    """The registry's folders, first match first: ``dataset/`` of each config dir (:func:`olb.paths.conf_dirs`)."""
    return [d / "dataset" for d in conf_dirs()]


def dataset_names() -> list[str]:
    """The registered data set names, sorted."""
    return sorted({p.stem for d in registry_dirs() for p in d.glob("*.yaml")})


def dataset_spec(name: str) -> DatasetSpec:
    """The parsed registry entry of ``name``; `UnknownDatasetError` if there is none."""
    path = next((d / f"{name}.yaml" for d in registry_dirs() if (d / f"{name}.yaml").is_file()), None)
    if "/" in name or path is None:
        raise UnknownDatasetError(
            f"unknown data set {name!r}{did_you_mean(name, dataset_names())}; known data sets: "
            f"{', '.join(dataset_names())} "
            f"(registry: {', '.join(map(str, registry_dirs()))})"
        )
    return _parse(path)


def _parse(path: Path) -> DatasetSpec:
    """The entry of ``path``, parsed once per version of the file (a grid's worker reads it for every cell)."""
    status = path.stat()
    return _parse_version(path, status.st_mtime_ns, status.st_size, status.st_ino)


@functools.lru_cache(maxsize=256)
def _parse_version(path: Path, mtime_ns: int, size: int, inode: int) -> DatasetSpec:
    with path.open(encoding="utf-8") as fh:
        raw = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(raw, dict) or any(key not in raw for key in _REQUIRED_KEYS):
        raise DataFormatError(f"{path}: a registry entry needs the keys {', '.join(_REQUIRED_KEYS)}")
    if raw["name"] != path.stem:
        raise DataFormatError(f"{path}: name {raw['name']!r} differs from the file name {path.stem!r}")
    if raw["task"] not in ("multilabel", "multiclass"):
        raise DataFormatError(f"{path}: task must be 'multilabel' or 'multiclass', got {raw['task']!r}")
    try:
        files = {role: FileSpec(**entry) for role, entry in (raw.get("files") or {}).items()}
        shape = Shape(**raw["shape"])
    except TypeError as exc:
        raise DataFormatError(f"{path}: bad files or shape entry: {exc}") from None
    escapes = [f"files.{role}.path: {problem}" for role, file in files.items() if (problem := path_problem(file.path))]
    if escapes:
        raise DataFormatError(f"{path}: {'; '.join(escapes)}")
    split = _parse_split(path, raw.get("split"), shape)
    if set(files) - {"labels"} not in _LAYOUTS:
        raise DataFormatError(f"{path}: files must be train + test or a single data file, got {sorted(files)}")
    return DatasetSpec(
        name=raw["name"],
        task=raw["task"],
        format=raw["format"],
        shape=shape,
        files=files,
        source=raw.get("source"),
        embedded=bool(raw.get("embedded", False)),
        quirks=tuple(raw.get("quirks") or ()),
        options={key: value for key, value in raw.items() if key not in _COMMON_KEYS},
        conf_file=path,
        split=split,
    )


def _parse_split(path: Path, raw, shape: Shape) -> SplitSpec | None:
    if raw is None:
        return None
    if shape.n_train is not None:
        raise DataFormatError(f"{path}: split: the data set has an official split (shape.n_train); declare none")
    if not isinstance(raw, dict) or set(raw) - {"kind", "n_train", "seed"} or not {"kind", "n_train"} <= set(raw):
        raise DataFormatError(f"{path}: split must be {{kind, n_train[, seed]}}, got {raw!r}")
    split = SplitSpec(**raw)
    problems = split.problems(shape.n_examples)
    if problems:
        raise DataFormatError(f"{path}: {'; '.join(problems)}")
    return split
