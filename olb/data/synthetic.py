"""Seeded synthetic multi-label streams shaped like a real benchmark (e.g. ``synthetic-mediamill``)."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from olb.data.dataset import Dataset

MAX_FREQUENCY = 0.9  # no label is relevant to more than this share of the examples
NOISE = 0.5  # standard deviation of the label noise, relative to the unit-variance linear score
N_SHARED = 10  # dimension of the score directions shared by all labels (makes labels correlated)


def make_multilabel_stream(
    n_train: int, n_test: int, n_features: int, n_labels: int, cardinality: float, seed: int = 0
) -> Dataset:
    """A multi-label data set whose labels are noisy linear threshold functions of Gaussian features.

    Label ``j`` is relevant when ``x @ w_j + noise > t_j``. The directions ``w_j`` mix a part shared by all
    labels (so labels are correlated) with a label-specific part; the thresholds ``t_j`` give Zipf-like
    label frequencies (a few frequent labels, many rare ones) that sum to ``cardinality``, so the label
    cardinality of the sample is close to it. Rows ``[:n_train]`` form the train split.
    """
    if min(n_train, n_test) < 0 or n_train + n_test == 0 or min(n_features, n_labels) < 1:
        raise ValueError("need n_train, n_test >= 0 (not both 0) and n_features, n_labels >= 1")
    if not 0 < cardinality < MAX_FREQUENCY * n_labels:
        raise ValueError(f"cardinality must lie in (0, {MAX_FREQUENCY * n_labels:g}) for {n_labels} labels")
    rng = np.random.default_rng(seed)
    n_shared = min(N_SHARED, n_features, n_labels)
    shared = rng.standard_normal((n_features, n_shared)) @ rng.standard_normal((n_shared, n_labels))
    W = shared / np.sqrt(n_shared) + rng.standard_normal((n_features, n_labels))
    W /= np.linalg.norm(W, axis=0)  # unit-variance scores x @ w_j
    thresholds = np.hypot(1.0, NOISE) * ndtri(1.0 - _label_frequencies(n_labels, cardinality))
    X = rng.standard_normal((n_train + n_test, n_features))
    scores = X @ W + NOISE * rng.standard_normal((n_train + n_test, n_labels))
    return Dataset(
        name="synthetic",
        X=X,
        Y=(scores > thresholds).astype(np.int8),
        task="multilabel",
        feature_names=tuple(f"x{j + 1}" for j in range(n_features)),
        label_names=tuple(f"y{k + 1}" for k in range(n_labels)),
        n_train=n_train,
    )


def _label_frequencies(n_labels: int, cardinality: float) -> np.ndarray:
    """Zipf-like frequencies (proportional to 1/rank) summing to ``cardinality``, each at most MAX_FREQUENCY."""
    weights = 1.0 / np.arange(1, n_labels + 1)
    frequencies = cardinality * weights / weights.sum()
    while frequencies.max() > MAX_FREQUENCY:
        capped = frequencies >= MAX_FREQUENCY
        frequencies[capped] = MAX_FREQUENCY
        free = ~capped
        frequencies[free] *= (cardinality - MAX_FREQUENCY * capped.sum()) / frequencies[free].sum()
    return frequencies
