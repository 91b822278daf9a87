"""Every metric the papers report, one formula per function: the names every user imports from ``olb.metrics``.

The formulas by kind: ranking metrics of a score vector (:mod:`olb.metrics.ranking`), per-example metrics of a class
or a bipartition (:mod:`olb.metrics.per_example`), corpus metrics from additive statistics (:mod:`olb.metrics.corpus`);
what a registered metric is and how a stream accumulates it (:mod:`olb.metrics.streaming`), and the registered names
(:mod:`olb.metrics.registry`). The helpers they share are :mod:`olb.metrics.ratios`.

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
is not scored on that example by any metric (``olb/protocol/stream.py``).

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

import numpy as np  # noqa: F401 (the doctest above uses it)

from olb.metrics.corpus import f1, macro_f1, macro_precision, macro_recall, micro_f1, micro_precision, micro_recall
from olb.metrics.per_example import accuracy, example_f1, hamming_loss, precision, recall, subset_accuracy
from olb.metrics.ranking import rank_loss, rank_loss_many, ranking_loss
from olb.metrics.registry import METRICS
from olb.metrics.streaming import Accumulator, Metric, WindowAccumulator

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
