"""The corpus metrics of a bipartition (papers 002, 003, the MLHAT table): not means of per-example values, but
computed from additive statistics of all evaluated examples (averaged precision and recall, per-label confusion
counts), which :class:`~olb.metrics.streaming.Accumulator` sums as a stream goes."""

import numpy as np

from olb.metrics.per_example import precision, recall
from olb.metrics.ratios import _bools, _ratio


def _pr_stats(labels, y, zero_division=0.0, unlabelled=None):
    """Additive statistics of :func:`f1`: [sum precision, #defined, sum recall, #defined]."""
    p = np.atleast_1d(precision(labels, y, zero_division, unlabelled))
    r = np.atleast_1d(recall(labels, y, zero_division, unlabelled))
    return np.array([np.nansum(p), np.count_nonzero(~np.isnan(p)), np.nansum(r), np.count_nonzero(~np.isnan(r))])


def _f1_from_stats(stats):
    psn = _ratio(stats[0], stats[1], np.nan)
    rcal = _ratio(stats[2], stats[3], np.nan)
    return float(_ratio(2 * psn * rcal, psn + rcal, 0.0))


def f1(labels, y, zero_division=0.0, unlabelled=None):
    """F1 of paper 002 (ALT) [§6.2, RECON]: ``2 Psn Rcal / (Psn + Rcal)``.

    The harmonic mean of the *averaged* :func:`precision` and :func:`recall` (checked on all of
    ALT Table 2), not the mean of per-example F1 (that is :func:`example_f1`, paper 003). A corpus
    metric: ``labels``, ``y`` are all evaluated examples stacked, (n, k). ``zero_division`` and ``unlabelled``
    are passed to :func:`precision` and :func:`recall`.

    >>> f1([[1, 1, 0], [0, 0, 1]], [[1, 0, 0], [1, 1, 1]])   # Psn 3/4, Rcal 2/3
    0.7058823529411765
    """
    return _f1_from_stats(_pr_stats(labels, y, zero_division, unlabelled))


def _label_counts(labels, y):
    """Per-label confusion counts of a batch (or one example): int array (3, k) of [TP, FP, FN]."""
    p, t = _bools(labels, y)
    p, t = np.atleast_2d(p), np.atleast_2d(t)
    return np.stack([np.sum(p & t, axis=0), np.sum(p & ~t, axis=0), np.sum(~p & t, axis=0)])


def _macro_f1_from_counts(counts, zero_division=0.0):
    tp, fp, fn = counts
    return float(np.mean(_ratio(2 * tp, 2 * tp + fp + fn, zero_division)))


def _micro_f1_from_counts(counts, zero_division=0.0):
    tp, fp, fn = counts.sum(axis=1)
    return float(_ratio(2 * tp, 2 * tp + fp + fn, zero_division))


def macro_f1(labels, y, zero_division=0.0):
    """MacroF1 [paper 002 §6.2, paper 003]: ``mean_j 2TP_j / (2TP_j + FP_j + FN_j)``.

    Counts per label j over all stacked examples (n, k). A label never predicted nor relevant gets
    ``zero_division`` (default 0; see "Empty label sets"). Matches scikit-learn's ``f1_score(average='macro')``.

    >>> macro_f1([[1, 0], [1, 0]], [[1, 0], [0, 1]])   # label 0: 2/3, label 1: 0
    0.3333333333333333
    """
    return _macro_f1_from_counts(_label_counts(labels, y), zero_division)


def micro_f1(labels, y, zero_division=0.0):
    """MicroF1 [paper 002 §6.2, paper 003]: ``2 sum TP / (2 sum TP + sum FP + sum FN)``.

    Counts pooled over all labels and stacked examples (n, k). Matches scikit-learn's
    ``f1_score(average='micro')``.

    >>> micro_f1([[1, 0], [1, 0]], [[1, 0], [0, 1]])   # TP 1, FP 1, FN 1
    0.5
    """
    return _micro_f1_from_counts(_label_counts(labels, y), zero_division)


def _label_precisions(counts):
    """Per column of (3, m) [TP, FP, FN] counts: TP / (TP + FP), 0 where nothing was predicted (river)."""
    tp, fp, _ = counts
    return _ratio(tp, tp + fp, 0.0)


def _label_recalls(counts):
    """Per column of (3, m) [TP, FP, FN] counts: TP / (TP + FN), 0 where nothing was relevant (river)."""
    tp, _, fn = counts
    return _ratio(tp, tp + fn, 0.0)


def _pooled(counts):
    """(3, k) per-label counts summed over the labels, as one column (3, 1): what micro-averaging scores."""
    return counts.sum(axis=1, keepdims=True)


def _micro_precision_from_counts(counts):
    return float(_label_precisions(_pooled(counts))[0])


def _micro_recall_from_counts(counts):
    return float(_label_recalls(_pooled(counts))[0])


def _macro_precision_from_counts(counts):
    return float(np.mean(_label_precisions(counts)))


def _macro_recall_from_counts(counts):
    return float(np.mean(_label_recalls(counts)))


def micro_precision(labels, y):
    """Micro-averaged precision [MLHAT table; river's ``MicroAverage(Precision())``]: ``ΣTP / (ΣTP + ΣFP)``, 0
    without any predicted label. A corpus metric over stacked (n, k) examples.

    >>> micro_precision([[1, 1], [1, 0]], [[1, 0], [0, 1]])   # TP 1, FP 2
    0.3333333333333333
    """
    return _micro_precision_from_counts(_label_counts(labels, y))


def micro_recall(labels, y):
    """Micro-averaged recall [MLHAT table; river's ``MicroAverage(Recall())``]: ``ΣTP / (ΣTP + ΣFN)``, 0 without
    any relevant label.

    >>> micro_recall([[1, 1], [1, 0]], [[1, 0], [0, 1]])   # TP 1, FN 1
    0.5
    """
    return _micro_recall_from_counts(_label_counts(labels, y))


def macro_precision(labels, y):
    """Macro-averaged precision [MLHAT table; river's ``MacroAverage(Precision())``]: ``mean_j TP_j / (TP_j +
    FP_j)``, a label never predicted counting 0.

    >>> macro_precision([[1, 0], [1, 0]], [[1, 0], [0, 1]])   # label 0: 1/2, label 1: never predicted
    0.25
    """
    return _macro_precision_from_counts(_label_counts(labels, y))


def macro_recall(labels, y):
    """Macro-averaged recall [MLHAT table; river's ``MacroAverage(Recall())``]: ``mean_j TP_j / (TP_j + FN_j)``, a
    label never relevant counting 0.

    >>> macro_recall([[1, 0], [1, 0]], [[1, 0], [0, 1]])   # label 0: 1/1, label 1: 0/1
    0.5
    """
    return _macro_recall_from_counts(_label_counts(labels, y))
