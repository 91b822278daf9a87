"""What a registered metric is (:class:`Metric`) and how a stream accumulates it, over the whole stream
(:class:`Accumulator`) or over its last examples (:class:`WindowAccumulator`), from additive statistics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


def _mean_stats(values):
    """Additive statistics of a per-example metric: [sum, count] of the non-NaN values."""
    if isinstance(values, float):  # one example, as a stream scores it: numpy's masking costs ten times more
        return np.array([0.0, 0.0] if np.isnan(values) else [values, 1.0])
    v = np.atleast_1d(values)
    defined = ~np.isnan(v)
    return np.array([v[defined].sum(), np.count_nonzero(defined)], dtype=float)


def _mean_from_stats(stats):
    """The mean of [sum, count] statistics, NaN without any value: the division ``olb.metrics.ratios._ratio``
    makes, without its arrays (a learning curve asks for one value per point)."""
    total, count = stats[0], stats[1]
    return float(total / count) if count != 0 else float("nan")


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    ``needs``: the prediction it scores, ``'scores'`` (a score vector), ``'labels'`` (a 0/1 bipartition)
    or ``'class'`` (a class index). ``per_example``: True if the reported value is the mean of the
    per-example values ``func`` returns; False for corpus metrics, where ``func`` takes all stacked
    examples and the value is ``reduce(stats)`` of the summed additive ``stats`` of the batches.
    """

    name: str
    func: Callable
    needs: str
    lower_is_better: bool
    per_example: bool
    source: str
    stats: Callable | None = None
    reduce: Callable | None = None

    def __post_init__(self):
        if not self.per_example and (self.stats is None or self.reduce is None):
            raise ValueError(f"metric {self.name!r}: a corpus metric needs its stats and reduce functions")

    def __call__(self, pred, y):
        return self.func(pred, y)

    def batch_stats(self, pred, y) -> np.ndarray:
        """Additive sufficient statistics of one example or a batch."""
        if self.per_example:
            return _mean_stats(self.func(pred, y))
        assert self.stats is not None  # a corpus metric has it (__post_init__)
        return self.stats(pred, y)

    def from_stats(self, stats) -> float:
        if self.per_example:
            return _mean_from_stats(stats)
        assert self.reduce is not None  # a corpus metric has it (__post_init__)
        return self.reduce(stats)

    def accumulator(self) -> Accumulator:
        return Accumulator(self)

    @property
    def shares(self) -> tuple:
        """Metrics with equal ``shares`` have the same :meth:`batch_stats` of a prediction (the per-label counts of
        the micro and macro metrics, a formula registered under two names), which an evaluation loop computes
        once per example."""
        return (self.needs, self.per_example, self.func if self.per_example else self.stats)


class Accumulator:
    """Streams one metric: ``update(pred, y)`` with one example or a batch, ``value()`` at any time.

    Keeps only additive statistics (a sum and a count, or per-label confusion counts), so it is exact
    and O(k) in memory for every metric, corpus ones included. ``value()`` is NaN before any update.

    >>> from olb.metrics import METRICS
    >>> acc = METRICS["micro_f1"].accumulator()
    >>> acc.update([1, 0], [1, 0])
    >>> acc.update([1, 0], [0, 1])
    >>> acc.value()
    0.5
    """

    def __init__(self, metric: Metric):
        self.metric = metric
        self.stats: np.ndarray | None = None

    def update(self, pred, y) -> None:
        self.add(self.metric.batch_stats(pred, y))

    def add(self, stats: np.ndarray) -> None:
        """Count statistics ``metric.batch_stats`` computed (an evaluation loop computes them once for several
        accumulators of the same metric)."""
        self.stats = stats if self.stats is None else self.stats + stats

    def value(self) -> float:
        return np.nan if self.stats is None else self.metric.from_stats(self.stats)


class WindowAccumulator:
    """Streams one metric over the last ``size`` examples: ``update(pred, y)`` with one example, ``value()``.

    Keeps each example's additive statistics in a ring of ``size`` rows and sums the ring when asked, so that the
    value is the metric of exactly those examples, without the rounding drift of a running subtraction. NaN
    before any update.

    >>> from olb.metrics import METRICS
    >>> window = WindowAccumulator(METRICS["hamming_loss"], 2)
    >>> for labels, y in [([1, 0], [0, 0]), ([1, 0], [1, 0]), ([0, 1], [0, 1])]:
    ...     window.update(labels, y)
    >>> window.value()   # the last two examples, both exact
    0.0
    """

    def __init__(self, metric: Metric, size: int):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"a metric window needs a positive integer size, got {size!r}")
        self.metric, self.size = metric, size
        self._ring: np.ndarray | None = None
        self._count = 0

    def update(self, pred, y) -> None:
        self.add(self.metric.batch_stats(pred, y))

    def add(self, stats: np.ndarray) -> None:
        """One example's statistics (``metric.batch_stats``), replacing the oldest once the window is full."""
        if self._ring is None:
            self._ring = np.zeros((self.size, *np.shape(stats)))
        self._ring[self._count % self.size] = stats
        self._count += 1

    def value(self) -> float:
        if self._ring is None:
            return np.nan
        return self.metric.from_stats(self._ring[: min(self._count, self.size)].sum(axis=0))
