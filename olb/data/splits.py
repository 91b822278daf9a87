"""Declared train/test splits for data sets whose source has none (registry key ``split``).

Two kinds, both deterministic:

- ``first_rows``: the first ``n_train`` rows in file order train, the rest test (slashdot's MEKA header
  ``-split-number 1891``).
- ``seeded_permutation``: the rows of ``numpy.random.default_rng(seed).permutation(n)``; the first
  ``n_train`` of that order train, the rest test (kept in that permuted order).

The loader applies the declaration (train rows first, ``n_train`` set); the declaration is part of the data
fingerprint (``olb.data.provenance``), so changing it reruns the grid's cells.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from olb.data.dataset import Dataset

SPLIT_KINDS = ("first_rows", "seeded_permutation")


@dataclass(frozen=True)
class SplitSpec:
    """A declared split: ``kind`` (one of SPLIT_KINDS), ``n_train`` rows train, ``seed`` of the permutation."""

    kind: str
    n_train: int
    seed: int | None = None

    def problems(self, n_examples: int) -> list[str]:
        """What is wrong with this declaration for a data set of ``n_examples`` rows (empty if nothing)."""
        found = []
        if self.kind not in SPLIT_KINDS:
            found.append(f"split.kind={self.kind!r}; allowed: {', '.join(SPLIT_KINDS)}")
        if isinstance(self.n_train, bool) or not isinstance(self.n_train, int) or not 0 < self.n_train < n_examples:
            found.append(f"split.n_train={self.n_train!r}; allowed: an integer in 1..{n_examples - 1}")
        if self.kind == "seeded_permutation" and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            found.append(f"split.seed={self.seed!r}; a seeded_permutation needs an integer seed")
        if self.kind == "first_rows" and self.seed is not None:
            found.append("split.seed: a first_rows split takes no seed")
        return found

    def as_dict(self) -> dict:
        return {key: value for key, value in dataclasses.asdict(self).items() if value is not None}

    def row_order(self, n_examples: int) -> np.ndarray | None:
        """The row order that puts the train rows first (``None``: file order)."""
        if self.kind == "first_rows":
            return None
        return np.random.default_rng(self.seed).permutation(n_examples)


def apply_split(dataset: Dataset, split: SplitSpec) -> Dataset:
    """``dataset`` with its rows reordered so that the declared train rows come first, ``n_train`` set."""
    order = split.row_order(dataset.n_examples)
    if order is None:
        return dataclasses.replace(dataset, n_train=split.n_train)
    return dataclasses.replace(dataset, X=dataset.X[order], Y=dataset.Y[order], n_train=split.n_train)
