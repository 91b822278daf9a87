"""The per-example metrics of a prediction: multiclass accuracy (paper 001) and the bipartition metrics (papers
002, 003, the MLHAT table) whose reported value is the mean over the examples."""

import numpy as np

from olb.metrics.ratios import _bools, _ratio, _unlabelled, _value


def accuracy(pred, y):
    """Multiclass accuracy [paper 001, §5, Table 1]: 1(pred == y) per example; report the mean.

    Paper 001 averages it over the final 20% of each stream (the protocol picks those examples).

    >>> accuracy(2, 2)
    1.0
    >>> accuracy([0, 1, 2], [0, 2, 2])
    array([1., 0., 1.])
    """
    return _value(np.equal(pred, y))


def hamming_loss(labels, y):
    """Hamming loss Hl [paper 002 §6.2, paper 003]: ``|Y xor Y_hat| / k`` per example.

    The mean over examples equals scikit-learn's ``hamming_loss``.

    >>> hamming_loss([1, 0, 1, 0], [1, 1, 0, 0])
    0.5
    """
    p, t = _bools(labels, y)
    return _value(np.mean(p != t, axis=-1))


def subset_accuracy(labels, y):
    """Subset accuracy (exact match) [MLHAT table; river's ``ExactMatch``]: ``1(Y_hat == Y)`` per example.

    >>> subset_accuracy([[1, 0, 1], [1, 0, 0]], [[1, 0, 1], [1, 1, 0]])
    array([1., 0.])
    """
    p, t = _bools(labels, y)
    return _value(np.all(p == t, axis=-1))


def precision(labels, y, zero_division=0.0, unlabelled=None):
    """Example-based precision Psn [paper 002 §6.2, RECON]: ``|Y & Y_hat| / |Y_hat|``.

    Per example; Psn is the mean. An empty prediction gets ``zero_division`` (default 0; see "Empty label sets"),
    and an example without a relevant label gets ``unlabelled`` when it is not None. Matches
    scikit-learn's ``precision_score(average='samples')`` with the same ``zero_division``.

    >>> precision([1, 1, 0, 0], [1, 0, 1, 0])
    0.5
    >>> precision([[0, 0], [1, 1]], [[1, 0], [1, 1]])
    array([0., 1.])
    """
    p, t = _bools(labels, y)
    return _unlabelled(_ratio(np.sum(p & t, axis=-1), np.sum(p, axis=-1), zero_division), t, unlabelled)


def recall(labels, y, zero_division=0.0, unlabelled=None):
    """Example-based recall Rcal [paper 002 §6.2, RECON]: ``|Y & Y_hat| / |Y|``.

    Per example; Rcal is the mean. An empty ``Y`` gets ``unlabelled`` if it is not None, else ``zero_division``
    (default 0; ``np.nan`` leaves the
    example out). Matches scikit-learn's ``recall_score(average='samples')`` with the same
    ``zero_division``.

    >>> recall([1, 1, 0, 0], [1, 0, 1, 1])
    0.3333333333333333
    """
    p, t = _bools(labels, y)
    return _unlabelled(_ratio(np.sum(p & t, axis=-1), np.sum(t, axis=-1), zero_division), t, unlabelled)


def example_f1(labels, y, zero_division=1.0):
    """Example-F1 [paper 003]: ``2 |Y & Y_hat| / (|Y| + |Y_hat|)`` per example; report the mean.

    ``zero_division`` is used when both sets are empty (default 1: the prediction is exact).
    Matches scikit-learn's ``f1_score(average='samples')`` with the same ``zero_division``.

    >>> example_f1([1, 1, 0, 0], [1, 0, 1, 1])
    0.4
    >>> example_f1([0, 0], [0, 0])
    1.0
    """
    p, t = _bools(labels, y)
    return _value(_ratio(2 * np.sum(p & t, axis=-1), np.sum(p, axis=-1) + np.sum(t, axis=-1), zero_division))
