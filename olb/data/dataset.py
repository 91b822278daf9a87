"""The in-memory form every loader returns and every protocol consumes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Dataset:
    """A benchmark data set held as dense numpy arrays.

    Rows are in file order: the official training rows first, then the official test rows.
    ``n_train`` is the size of the official training split (``None`` when the source has no split).

    Attributes
    ----------
    name : registry name, e.g. ``"emotions"``.
    X : float64 array (n, d). Nominal features hold their category code (0..c-1) as a float;
        missing values are NaN (see ``docs/data.md`` for the missing-value policy).
    Y : multi-label: int8 array (n, k) of 0/1 relevance, columns in ``label_names`` order;
        multiclass: int64 array (n,) of class indices into ``label_names``.
    task : ``"multilabel"`` or ``"multiclass"``.
    feature_names, label_names : column names as in the source file (labels in the order of the
        MULAN XML when there is one).
    nominal : for each feature, ``None`` if numeric, else the tuple of its category names.
    """

    name: str
    X: np.ndarray
    Y: np.ndarray
    task: str
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    n_train: int | None = None
    nominal: tuple[tuple[str, ...] | None, ...] = field(default=())

    def __post_init__(self):
        if self.task not in ("multilabel", "multiclass"):
            raise ValueError(f"dataset {self.name!r}: task must be 'multilabel' or 'multiclass', got {self.task!r}")
        if len(self.X) != len(self.Y):
            raise ValueError(f"dataset {self.name!r}: X has {len(self.X)} rows but Y has {len(self.Y)}")
        if not self.nominal:
            object.__setattr__(self, "nominal", (None,) * self.n_features)

    @property
    def n_examples(self) -> int:
        return len(self.X)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_labels(self) -> int:
        return len(self.label_names)

    @property
    def cardinality(self) -> float:
        """Mean number of relevant labels per example (1 for multiclass)."""
        return float(self.Y.sum(axis=1).mean()) if self.task == "multilabel" else 1.0

    def split(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The official (train, test) split as ((X, Y), (X, Y))."""
        if self.n_train is None:
            raise ValueError(f"dataset {self.name!r} has no official train/test split")
        n = self.n_train
        return (self.X[:n], self.Y[:n]), (self.X[n:], self.Y[n:])
