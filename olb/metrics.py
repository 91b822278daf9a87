"""Every metric the papers report, one formula per function.

Papers and where each metric comes from:

- 000 Jung & Tewari, online multi-label ranking boosting: ``rank_loss`` (§3.1, L_rnk; Table 3).
- 001 Jung, Goetz & Tewari, online multiclass boosting: ``accuracy`` (§5, Table 1: on the final 20%).
- 002 adaptive label thresholding (ALT; the text names no authors), §6.2, Table 2: ``precision`` (Psn),
  ``recall`` (Rcal), ``f1`` (F1), ``macro_f1`` (MacroF1), ``micro_f1`` (MicroF1), ``hamming_loss`` (Hl),
  ``ranking_loss`` (Rl). The paper's displayed formulas were lost in text extraction; the ones used here
  are reconstructions (marked RECON) from its prose, checked against its Table 2: F1 computed from the
  averaged Psn and Rcal matches all of that table's rows to within 0.02 points but two (within 0.22).
- 003 Gong et al., online metric learning (OML), Figs. 1-8: ``macro_f1``, ``micro_f1``, ``example_f1``,
  ``hamming_loss``.
- 004 Raman, Zhang, Jung & Tewari, top-k feedback boosting: weighted rank loss (Tables 1-3) = ``rank_loss``;
  unweighted rank loss = ``rank_loss(..., normalized=False)``.
- The MLHAT benchmark table (Esteban et al., multi-label stream learners, prequential over the whole stream):
  the ``mlhat_*`` metrics, river's multi-output metrics as the table computes them (section "The MLHAT table's
  metrics" below).

Conventions
-----------
- Arguments are ``(prediction, truth)`` everywhere. **scikit-learn uses the opposite order.**
- Multi-label truth ``y`` is 0/1 (int or bool), shape (k,) for one example or (n, k) for a batch.
  A score prediction is a float array of the same shape (higher = more relevant; scores must not be
  NaN); a label prediction (bipartition) is a 0/1 array of the same shape. Multiclass predictions and
  truths are class indices, a scalar or an (n,) array.
- *Per-example* metrics return a float for one example and an (n,) array for a batch. The reported
  value is their mean over the evaluated examples. A value may be NaN, meaning "undefined, leave this
  example out of the mean" (only where asked for, e.g. ``ranking_loss(..., empty=np.nan)``), so average
  with ``np.nanmean``.
- *Corpus* metrics (``f1``, ``macro_f1``, ``micro_f1``) are not means of per-example values. Call them on
  the stacked (n, k) predictions, or stream them through an :class:`Accumulator`.
- All values are fractions in [0, 1]; the ALT tables print them x100.

Empty label sets
----------------
A per-example ratio with an empty denominator (an empty predicted set for Psn, an empty true set for
Rcal, both empty for Example-F1) takes a conventional value, and so does a label that is neither relevant
nor predicted in any evaluated example (MacroF1). The papers do not state theirs. Registered names:

- ``precision``, ``recall``, ``f1``: the empty ratio scores 0 (scikit-learn's default). ``example_f1``:
  both sets empty score 1 (the prediction is exact).
- ``precision_empty1``, ``recall_empty1``, ``f1_empty1``: the empty ratio scores 1, so an empty prediction
  scores Psn 1 and an example without relevant labels scores Rcal 1. ``example_f1_empty0``: both sets empty
  score 0.
- ``precision_unlabelled1``, ``recall_unlabelled1``, ``f1_unlabelled1``: an example without a relevant label
  scores 1 in Psn and Rcal (whatever is predicted); otherwise an empty prediction scores Psn 0. Paper 002's
  experiments use this one: it is the only one we tried that reproduces both its birds figures (151 of the
  323 test rows have no relevant label; FALT(k)'s F1 is near 21 with the default, near 68 with this, the
  paper's 68.16) and its bibtex figures (no unlabelled test row, but many empty predictions: ``_empty1``
  lifts SALT's F1 by 5 points above the paper's, this one and the default match it). See docs/alt.md.
- ``ranking_loss`` leaves an example with no relevant (or no irrelevant) label out of the mean;
  ``ranking_loss_unlabelled0`` keeps it with loss 0, as paper 002's birds figure implies (left out, FALT(k)'s
  Rl is near 18.6; kept, near 9.9; the paper's 9.36).
- ``macro_f1``: a label absent from the evaluated part and never predicted contributes 0 to the mean
  (scikit-learn's default); ``macro_f1_absent1``: it contributes 1. Every label of paper 002's local data sets
  occurs in its test split (the rarest: 2 test rows on birds, 11 on bibtex), so the two agree on their test
  figures; they can differ on the held-out folds of the cross-validation, and do on paper 003's medical (6
  labels absent from the test split), corel5k (111), slashdot (2) and cal500's declared split (3).

The MLHAT table's metrics
-------------------------
The table measures with river (0.15-0.16): ``ExactMatch``, its own mean Hamming loss, ``SampleAverage``,
``MicroAverage`` and ``MacroAverage`` around river's binary ``Precision``, ``Recall`` and ``F1``, whose 0/0 is 0
(P = 0 without a predicted positive, R = 0 without a relevant one, F1 = 2PR / (P + R) and 0 when P + R = 0); an
example-based value is the mean over examples, a micro one pools the counts of every label, a macro one is the
mean over the labels of the per-label value. Registered names (the formula each equals, up to rounding):

- ``mlhat_subset_accuracy``: :func:`subset_accuracy`; ``mlhat_hamming_loss``: :func:`hamming_loss`;
- ``mlhat_example_precision``, ``mlhat_example_recall``: :func:`precision`, :func:`recall` (0 for an empty set);
  ``mlhat_example_f1``: ``example_f1_empty0`` (river's 2PR / (P + R) is 2|Y & Y_hat| / (|Y| + |Y_hat|), and 0
  when both sets are empty, where ``example_f1`` scores 1);
- ``mlhat_micro_precision``, ``mlhat_micro_recall``: :func:`micro_precision`, :func:`micro_recall`;
  ``mlhat_micro_f1``: :func:`micro_f1`;
- ``mlhat_macro_precision``, ``mlhat_macro_recall``: :func:`macro_precision`, :func:`macro_recall` (a label never
  predicted has precision 0, one never relevant recall 0); ``mlhat_macro_f1``: :func:`macro_f1`.

Their values equal river's metric objects fed the same predictions to within 1e-12 (river keeps running means
and sums in another order). The table does not score an example whose prediction is an empty dict (river's
progressive validation): a learner that returns ``None`` from ``predict_one`` (it has nothing to predict yet)
is not scored on that example by any metric (``olb/protocol.py``).

Registry and use from an evaluation loop
----------------------------------------
``METRICS[name]`` is a :class:`Metric`: ``name``, ``needs`` (which prediction it scores: ``'scores'``,
``'labels'`` or ``'class'``), ``lower_is_better``, ``per_example`` and ``source``. Calling it computes the
metric (``METRICS["rank_loss"](s, y)`` is ``rank_loss(s, y)``). ``metric.accumulator()`` streams any
metric, per-example or corpus alike, in O(k) memory:

>>> accs = {name: METRICS[name].accumulator() for name in ("rank_loss", "hamming_loss", "macro_f1")}
>>> stream = [(np.array([0.9, 0.2, 0.4]), np.array([1, 0, 1]), np.array([1, 0, 0])),
...           (np.array([0.1, 0.8, 0.3]), np.array([0, 1, 0]), np.array([1, 1, 0]))]
>>> for scores, labels, y in stream:            # one online round at a time
...     pred = {"scores": scores, "labels": labels}
...     for name, acc in accs.items():
...         acc.update(pred[METRICS[name].needs], y)
>>> {name: round(acc.value(), 4) for name, acc in accs.items()}
{'rank_loss': 0.25, 'hamming_loss': 0.3333, 'macro_f1': 0.5556}

A protocol that also records per-example losses calls the metric itself (``METRICS[name](pred, y)``)
for the per-example metrics; for an exact match with ``Accumulator.value()``, aggregate those with
``np.nanmean``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

__all__ = [
    "rank_loss",
    "rank_loss_many",
    "ranking_loss",
    "accuracy",
    "hamming_loss",
    "precision",
    "recall",
    "f1",
    "example_f1",
    "macro_f1",
    "micro_f1",
    "subset_accuracy",
    "micro_precision",
    "micro_recall",
    "macro_precision",
    "macro_recall",
    "Metric",
    "Accumulator",
    "WindowAccumulator",
    "METRICS",
]


# ----------------------------------------------------------------------------------------------------
# helpers


def _value(x):
    """A 0-d result as a Python float, anything else as a float array."""
    return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=float)


def _ratio(num, den, zero_division):
    """num / den elementwise, ``zero_division`` where den == 0 (no warnings)."""
    num = np.asarray(num, dtype=float)
    out = np.full(num.shape, zero_division, dtype=float)
    np.divide(num, den, out=out, where=np.asarray(den) != 0)
    return out


def _unlabelled(values, truth, unlabelled):
    """``values`` (per example) with ``unlabelled`` on examples without a relevant label (None: unchanged)."""
    if unlabelled is not None:
        values = np.where(np.sum(truth, axis=-1) == 0, unlabelled, values)
    return _value(values)


def _bools(pred, y):
    return np.asarray(pred, dtype=bool), np.asarray(y, dtype=bool)


# ----------------------------------------------------------------------------------------------------
# rank losses (papers 000, 004) and ranking loss (paper 002)


def _pair_counts_sorted(S, Y):
    """Per row i: gt[i] = #{(l, r): Y[i,l], not Y[i,r], S[i,r] > S[i,l]}, eq[i] the same with ==.

    S (m, k) float; Y (m, k) bool. One sort per row, O(k log k), no k x k temporaries: for
    batches with a label set per row. (With one label set and |Y| |Y^c| pairs, the broadcast in
    rank_loss_many is faster up to |Y| ~ k/2 at k = 101, so it is not used there.)
    """
    m, k = S.shape
    order = np.argsort(S, axis=1)
    s = np.take_along_axis(S, order, axis=1)
    rel = np.take_along_axis(Y, order, axis=1)
    irr = ~rel
    cirr = np.cumsum(irr, axis=1)  # irrelevant labels at or before each sorted position
    n_irr = cirr[:, -1:]
    first = np.ones((m, k), dtype=bool)  # first position of a group of tied scores
    np.not_equal(s[:, 1:], s[:, :-1], out=first[:, 1:])
    last = np.ones((m, k), dtype=bool)
    last[:, :-1] = first[:, 1:]
    # irrelevant labels scored strictly below / at most the score at each position
    below = np.maximum.accumulate(np.where(first, cirr - irr, 0), axis=1)
    upto = np.minimum.accumulate(np.where(last, cirr, k)[:, ::-1], axis=1)[:, ::-1]
    gt = np.where(rel, n_irr - upto, 0).sum(axis=1)
    eq = np.where(rel, upto - below, 0).sum(axis=1)
    return gt, eq


def _finish(gt, eq, n_pairs, normalized, ties):
    loss = gt + ties * eq
    if normalized:
        return _ratio(loss, n_pairs, 0.0)
    return np.asarray(loss, dtype=float)


def rank_loss(scores, y, normalized=True, ties=0.5):
    """Rank loss: mis-ordered (relevant, irrelevant) label pairs [paper 000, §3.1, L_rnk].

    ``L = w_Y * sum_{l in Y} sum_{r not in Y} [1(s[r] > s[l]) + ties * 1(s[r] == s[l])]``, with
    ``w_Y = 1 / (|Y| |Y^c|)`` when ``normalized`` (paper 004's *weighted* rank loss, Tables 1-3) and
    ``w_Y = 1`` otherwise (paper 004's *unweighted* rank loss, §2). The loss is 0 when |Y| is 0 or k.

    ``ties=0.5`` is paper 000's definition and what both papers' code reports. Paper 004's text writes
    ``1(s[a] <= s[b])`` (ties count fully, as in its Hedge update): pass ``ties=1.0``.

    Parameters
    ----------
    scores : (k,) one example, or (n, k) a batch.
    y : 0/1 relevance of the same shape. A (k,) ``y`` with (n, k) scores scores n score vectors against
        one label set (same as :func:`rank_loss_many`).

    Returns a float for one example, an (n,) array for a batch. One example costs one
    O(|Y| |Y^c|) numpy broadcast (about 5 us at k = 6); a batch with a label set per row is sorted
    row-wise, O(n k log k).

    >>> rank_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0])   # pairs (0,1) (0,3) (2,1) ok, (2,3) tied
    0.125
    >>> rank_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0], normalized=False)
    0.5
    >>> rank_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0], ties=1.0)
    0.25
    >>> rank_loss([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], [[1, 0, 0], [1, 1, 1]])
    array([1., 0.])
    """
    s = np.asarray(scores, dtype=float)
    yb = np.asarray(y, dtype=bool)
    if s.ndim == 1:  # the hot single-example path: an O(|Y| |Y^c|) broadcast, no Python loop
        pos = s[yb][:, None]
        neg = s[~yb]
        n_pairs = pos.size * neg.size
        if n_pairs == 0:
            return 0.0
        loss = np.count_nonzero(neg > pos)
        if ties:
            loss = loss + ties * np.count_nonzero(neg == pos)
        return float(loss / n_pairs if normalized else loss)
    if yb.ndim == 1:
        return rank_loss_many(s, yb, normalized=normalized, ties=ties)
    n_pos = yb.sum(axis=1)
    gt, eq = _pair_counts_sorted(s, yb)
    return _finish(gt, eq, n_pos * (s.shape[1] - n_pos), normalized, ties)


def rank_loss_many(S, y, normalized=True, ties=0.5):
    """:func:`rank_loss` of m score vectors against one label set: S (m, k), y (k,) -> (m,).

    All N experts' losses on one example in one call, as an O(m |Y| |Y^c|) numpy broadcast (m |Y| |Y^c|
    booleans of temporary memory). Ada.OLMR's Hedge update computes the same values compiled
    (:func:`olb.learners.boosting.rounds.rank_losses`; this module stays free of numba).

    >>> S = np.array([[0.0, 0.0, 0.0], [3.0, 1.0, 2.0], [1.0, 3.0, 2.0]])
    >>> rank_loss_many(S, [1, 0, 0])
    array([0.5, 0. , 1. ])
    """
    S = np.asarray(S, dtype=float)
    yb = np.asarray(y, dtype=bool)
    m, k = S.shape
    n_pos = int(np.count_nonzero(yb))
    n_pairs = n_pos * (k - n_pos)
    if n_pairs == 0:
        return np.zeros(m)
    pos = S[:, yb][:, :, None]
    neg = S[:, ~yb][:, None, :]
    gt = np.count_nonzero(neg > pos, axis=(1, 2))
    eq = np.count_nonzero(neg == pos, axis=(1, 2)) if ties else 0
    return _finish(gt, eq, n_pairs, normalized, ties)


def ranking_loss(scores, y, empty=0.0):
    """Ranking loss Rl [paper 002, §6.2]: like :func:`rank_loss` but ties count as errors.

    Per example ``|{(l, r) in Y x Y^c : s[l] <= s[r]}| / (|Y| |Y^c|)``, i.e. ``rank_loss(ties=1.0)``.
    This is scikit-learn's ``label_ranking_loss`` per example. Examples with |Y| = 0 or k get ``empty``:
    0 (the default, scikit-learn, which keeps them in the mean) or ``np.nan`` (our reading for
    ALT: leave them out, average with ``np.nanmean``; the ``METRICS`` entry does this).

    >>> ranking_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0])
    0.25
    >>> ranking_loss([[0.2, 0.3], [0.5, 0.5]], [[1, 1], [1, 0]], empty=np.nan)
    array([nan,  1.])
    """
    yb = np.asarray(y, dtype=bool)
    loss = rank_loss(scores, yb, normalized=True, ties=1.0)
    n_pos = yb.sum(axis=-1)
    return _value(np.where((n_pos == 0) | (n_pos == yb.shape[-1]), empty, loss))


# ----------------------------------------------------------------------------------------------------
# multiclass (paper 001)


def accuracy(pred, y):
    """Multiclass accuracy [paper 001, §5, Table 1]: 1(pred == y) per example; report the mean.

    Paper 001 averages it over the final 20% of each stream (the protocol picks those examples).

    >>> accuracy(2, 2)
    1.0
    >>> accuracy([0, 1, 2], [0, 2, 2])
    array([1., 0., 1.])
    """
    return _value(np.equal(pred, y))


# ----------------------------------------------------------------------------------------------------
# bipartition metrics (papers 002, 003)


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


# ----------------------------------------------------------------------------------------------------
# registry


def _mean_stats(values):
    """Additive statistics of a per-example metric: [sum, count] of the non-NaN values."""
    if isinstance(values, float):  # one example, as a stream scores it: numpy's masking costs ten times more
        return np.array([0.0, 0.0] if np.isnan(values) else [values, 1.0])
    v = np.atleast_1d(values)
    defined = ~np.isnan(v)
    return np.array([v[defined].sum(), np.count_nonzero(defined)], dtype=float)


def _mean_from_stats(stats):
    return float(_ratio(stats[0], stats[1], np.nan))


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


def _per_example(name, func, needs, lower_is_better, source):
    return Metric(name, func, needs, lower_is_better, per_example=True, source=source)


def _corpus(name, func, stats, reduce, source):
    return Metric(name, func, "labels", False, per_example=False, source=source, stats=stats, reduce=reduce)


_MLHAT = "MLHAT table (Esteban et al.), river's progressive validation: "

METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        _per_example("rank_loss", rank_loss, "scores", True, "paper 000 §3.1 L_rnk (ties 1/2), Table 3"),
        _per_example(
            "weighted_rank_loss", rank_loss, "scores", True, "paper 004 §2, Tables 1-3 (ties 1/2 as in its code)"
        ),
        _per_example(
            "unweighted_rank_loss",
            partial(rank_loss, normalized=False),
            "scores",
            True,
            "paper 004 §2 (ties 1/2; its text counts ties fully, ties=1.0)",
        ),
        _per_example(
            "ranking_loss",
            partial(ranking_loss, empty=np.nan),
            "scores",
            True,
            "paper 002 §6.2 Rl, Table 2 (ties are errors; |Y| in {0, k} left out)",
        ),
        _per_example("accuracy", accuracy, "class", False, "paper 001 §5, Table 1"),
        _per_example("hamming_loss", hamming_loss, "labels", True, "paper 002 §6.2 Hl, Table 2; paper 003"),
        _per_example("precision", precision, "labels", False, "paper 002 §6.2 Psn, Table 2 (RECON)"),
        _per_example("recall", recall, "labels", False, "paper 002 §6.2 Rcal, Table 2 (RECON)"),
        _per_example("example_f1", example_f1, "labels", False, "paper 003 Example-F1"),
        _corpus("f1", f1, _pr_stats, _f1_from_stats, "paper 002 §6.2 F1, Table 2 (RECON)"),
        _corpus("macro_f1", macro_f1, _label_counts, _macro_f1_from_counts, "paper 002 §6.2 MacroF1; paper 003"),
        _corpus("micro_f1", micro_f1, _label_counts, _micro_f1_from_counts, "paper 002 §6.2 MicroF1; paper 003"),
        # the other empty-set conventions (module docstring, "Empty label sets")
        _per_example(
            "precision_empty1",
            partial(precision, zero_division=1.0),
            "labels",
            False,
            "paper 002 §6.2 Psn (RECON); an empty predicted set scores 1",
        ),
        _per_example(
            "recall_empty1",
            partial(recall, zero_division=1.0),
            "labels",
            False,
            "paper 002 §6.2 Rcal (RECON); an empty true set scores 1",
        ),
        _corpus(
            "f1_empty1",
            partial(f1, zero_division=1.0),
            partial(_pr_stats, zero_division=1.0),
            _f1_from_stats,
            "paper 002 §6.2 F1 (RECON) from precision_empty1 and recall_empty1",
        ),
        _per_example(
            "ranking_loss_unlabelled0",
            ranking_loss,
            "scores",
            True,
            "paper 002 §6.2 Rl, Table 2; an example with |Y| in {0, k} scores 0 and stays in the mean",
        ),
        _per_example(
            "precision_unlabelled1",
            partial(precision, unlabelled=1.0),
            "labels",
            False,
            "paper 002 §6.2 Psn (RECON); an example without relevant labels scores 1",
        ),
        _per_example(
            "recall_unlabelled1",
            partial(recall, unlabelled=1.0),
            "labels",
            False,
            "paper 002 §6.2 Rcal (RECON); an example without relevant labels scores 1",
        ),
        _corpus(
            "f1_unlabelled1",
            partial(f1, unlabelled=1.0),
            partial(_pr_stats, unlabelled=1.0),
            _f1_from_stats,
            "paper 002 §6.2 F1 (RECON) from precision_unlabelled1 and recall_unlabelled1",
        ),
        _per_example(
            "example_f1_empty0",
            partial(example_f1, zero_division=0.0),
            "labels",
            False,
            "paper 003 Example-F1; both sets empty score 0",
        ),
        _corpus(
            "macro_f1_absent1",
            partial(macro_f1, zero_division=1.0),
            _label_counts,
            partial(_macro_f1_from_counts, zero_division=1.0),
            "paper 002 §6.2 MacroF1; a label never relevant nor predicted scores 1",
        ),
        # the MLHAT table's metrics: river's multi-output metrics, 0/0 = 0 (module docstring)
        _per_example(
            "mlhat_subset_accuracy", subset_accuracy, "labels", False, _MLHAT + "subset accuracy (ExactMatch)"
        ),
        _per_example("mlhat_hamming_loss", hamming_loss, "labels", True, _MLHAT + "Hamming loss"),
        _per_example(
            "mlhat_example_precision", precision, "labels", False, _MLHAT + "example-based precision (0 if Ŷ empty)"
        ),
        _per_example("mlhat_example_recall", recall, "labels", False, _MLHAT + "example-based recall (0 if Y empty)"),
        _per_example(
            "mlhat_example_f1",
            partial(example_f1, zero_division=0.0),
            "labels",
            False,
            _MLHAT + "example-based F1, 2PR/(P+R) per example (0 if both sets empty)",
        ),
        _corpus(
            "mlhat_micro_precision",
            micro_precision,
            _label_counts,
            _micro_precision_from_counts,
            _MLHAT + "micro-averaged precision",
        ),
        _corpus("mlhat_micro_recall", micro_recall, _label_counts, _micro_recall_from_counts, _MLHAT + "micro recall"),
        _corpus("mlhat_micro_f1", micro_f1, _label_counts, _micro_f1_from_counts, _MLHAT + "micro-averaged F1"),
        _corpus(
            "mlhat_macro_precision",
            macro_precision,
            _label_counts,
            _macro_precision_from_counts,
            _MLHAT + "macro-averaged precision (a label never predicted: 0)",
        ),
        _corpus(
            "mlhat_macro_recall",
            macro_recall,
            _label_counts,
            _macro_recall_from_counts,
            _MLHAT + "macro-averaged recall (a label never relevant: 0)",
        ),
        _corpus(
            "mlhat_macro_f1",
            macro_f1,
            _label_counts,
            _macro_f1_from_counts,
            _MLHAT + "macro-averaged F1 (a label neither relevant nor predicted: 0)",
        ),
    ]
}
