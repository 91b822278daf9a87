"""``METRICS``: every registered metric name, the formula it computes, what it scores and where it comes from."""

from functools import partial

import numpy as np

from olb.metrics.corpus import (
    _f1_from_stats,
    _label_counts,
    _macro_f1_from_counts,
    _macro_precision_from_counts,
    _macro_recall_from_counts,
    _micro_f1_from_counts,
    _micro_precision_from_counts,
    _micro_recall_from_counts,
    _pr_stats,
    f1,
    macro_f1,
    macro_precision,
    macro_recall,
    micro_f1,
    micro_precision,
    micro_recall,
)
from olb.metrics.per_example import accuracy, example_f1, hamming_loss, precision, recall, subset_accuracy
from olb.metrics.ranking import rank_loss, ranking_loss
from olb.metrics.streaming import Metric


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
