"""olb.metrics: hand-computed cases, agreement with scikit-learn, streaming == batch."""

import itertools

import numpy as np
import pytest
from sklearn import metrics as skm

from olb import metrics as M


def brute_rank_loss(s, y, normalized=True, ties=0.5):
    """Paper 000 §3.1 written as the double sum over (relevant, irrelevant) pairs."""
    rel = [l for l in range(len(s)) if y[l]]
    irr = [r for r in range(len(s)) if not y[r]]
    if not rel or not irr:
        return 0.0
    loss = sum((s[r] > s[l]) + ties * (s[r] == s[l]) for l in rel for r in irr)
    return loss / (len(rel) * len(irr)) if normalized else float(loss)


def random_multilabel(seed, n, k, tied=True):
    """Scores (with many ties if ``tied``), predicted labels and truth, including empty and full rows."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 4, (n, k)).astype(float) if tied else rng.normal(size=(n, k))
    y = (rng.random((n, k)) < rng.uniform(0.05, 0.6)).astype(np.int8)
    y[0] = 0
    y[1] = 1
    labels = (rng.random((n, k)) < 0.3).astype(np.int8)
    labels[2] = 0
    return scores, labels, y


# ---------------------------------------------------------------------------------------------------
# rank loss


def test_rank_loss_hand_cases():
    # relevant {0, 2}, irrelevant {1, 3}: (0,1) ok, (0,3) ok, (2,1) ok, (2,3) tie -> 1/2 of 4 pairs
    s, y = [0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0]
    assert M.rank_loss(s, y) == 0.125
    assert M.rank_loss(s, y, normalized=False) == 0.5
    assert M.rank_loss(s, y, ties=1.0) == 0.25
    assert M.rank_loss(s, y, ties=0.0) == 0.0
    # every pair wrong
    assert M.rank_loss([0.0, 1.0, 2.0], [1, 0, 0]) == 1.0
    assert M.rank_loss([0.0, 1.0, 2.0], [1, 0, 0], normalized=False) == 2.0
    # one of two pairs wrong, one of them reversed by a strict inequality only
    assert M.rank_loss([1.0, 3.0, 2.0], [0, 1, 0]) == 0.0
    assert M.rank_loss([2.0, 1.0, 3.0], [1, 0, 0]) == 0.5


@pytest.mark.parametrize("normalized", [True, False])
def test_rank_loss_edge_cases(normalized):
    # |Y| = 0 and |Y| = k: no pairs, loss 0
    assert M.rank_loss([0.3, 0.1, 0.2], [0, 0, 0], normalized) == 0.0
    assert M.rank_loss([0.3, 0.1, 0.2], [1, 1, 1], normalized) == 0.0
    # k = 1: always degenerate
    assert M.rank_loss([5.0], [1], normalized) == 0.0
    assert M.rank_loss([5.0], [0], normalized) == 0.0
    # all scores equal: every pair is a tie
    y = [1, 1, 0, 0, 0]
    assert M.rank_loss(np.zeros(5), y, normalized) == (0.5 if normalized else 3.0)
    assert M.rank_loss(np.zeros(5), y, normalized, ties=1.0) == (1.0 if normalized else 6.0)
    # infinite scores compare as numbers (no inf - inf)
    assert M.rank_loss([np.inf, np.inf, -np.inf], [1, 0, 0], normalized) == (0.25 if normalized else 0.5)


def test_rank_loss_single_returns_float_and_accepts_any_0_1_dtype():
    s = np.array([0.2, 0.7, 0.1])
    for y in ([0, 1, 0], np.array([0, 1, 0], np.int8), np.array([False, True, False])):
        out = M.rank_loss(s, y)
        assert type(out) is float and out == 0.0


@pytest.mark.parametrize("k", [1, 2, 6, 14, 101])
@pytest.mark.parametrize("tied", [True, False])
def test_rank_loss_single_and_batch_match_the_double_sum(k, tied):
    scores, _, y = random_multilabel(k, 60, k, tied)
    for ties, normalized in itertools.product([0.0, 0.5, 1.0], [True, False]):
        expected = np.array([brute_rank_loss(s, t, normalized, ties) for s, t in zip(scores, y)])
        single = np.array([M.rank_loss(s, t, normalized, ties) for s, t in zip(scores, y)])
        batch = M.rank_loss(scores, y, normalized, ties)
        assert batch.shape == (60,)
        np.testing.assert_allclose(single, expected, atol=1e-12)
        np.testing.assert_allclose(batch, expected, atol=1e-12)


@pytest.mark.parametrize("k, n_relevant", [(1, 1), (6, 0), (6, 2), (6, 6), (14, 4), (101, 4), (101, 50), (101, 100)])
@pytest.mark.parametrize("tied", [True, False])
def test_rank_loss_many_matches_a_loop_of_rank_loss(k, n_relevant, tied):
    """From one relevant pair to |Y| = k/2, with and without ties, and an all-tied expert."""
    rng = np.random.default_rng(k * 1000 + n_relevant)
    S = rng.integers(0, 3, (100, k)).astype(float) if tied else rng.normal(size=(100, k))
    S[0] = 0.0  # an all-tied expert, as at the start of boosting
    y = np.zeros(k, np.int8)
    y[rng.choice(k, n_relevant, replace=False)] = 1
    for ties, normalized in itertools.product([0.0, 0.5, 1.0], [True, False]):
        loop = np.array([M.rank_loss(s, y, normalized, ties) for s in S])
        many = M.rank_loss_many(S, y, normalized, ties)
        assert many.shape == (100,)
        np.testing.assert_allclose(many, loop, atol=1e-12)
        np.testing.assert_allclose(M.rank_loss(S, y, normalized, ties), loop, atol=1e-12)  # broadcasting y


def test_rank_loss_many_single_row():
    np.testing.assert_array_equal(M.rank_loss_many(np.array([[1.0, 2.0, 3.0]]), [0, 0, 1]), [0.0])


# ---------------------------------------------------------------------------------------------------
# ranking loss (sklearn semantics: ties are errors)


def test_ranking_loss_hand_cases():
    assert M.ranking_loss([0.9, 0.1, 0.5, 0.5], [1, 0, 1, 0]) == 0.25  # the tie counts fully
    assert M.ranking_loss(np.zeros(4), [1, 0, 1, 0]) == 1.0
    assert M.ranking_loss([1.0, 2.0], [1, 1]) == 0.0
    assert np.isnan(M.ranking_loss([1.0, 2.0], [0, 0], empty=np.nan))
    assert M.ranking_loss([3.0], [1]) == 0.0


@pytest.mark.parametrize("seed, k", [(0, 2), (1, 6), (2, 14), (3, 101)])
@pytest.mark.parametrize("tied", [True, False])
def test_ranking_loss_agrees_with_sklearn(seed, k, tied):
    scores, _, y = random_multilabel(seed, 150, k, tied)
    per_example = M.ranking_loss(scores, y)
    assert np.mean(per_example) == pytest.approx(skm.label_ranking_loss(y, scores), abs=1e-12)
    for i in range(5):  # per example too
        assert per_example[i] == pytest.approx(skm.label_ranking_loss(y[i : i + 1], scores[i : i + 1]), abs=1e-12)
    # leaving out |Y| in {0, k}: the mean over the remaining examples
    kept = (y.sum(1) > 0) & (y.sum(1) < k)
    skipped = M.ranking_loss(scores, y, empty=np.nan)
    assert np.array_equal(np.isnan(skipped), ~kept)
    assert np.nanmean(skipped) == pytest.approx(skm.label_ranking_loss(y[kept], scores[kept]), abs=1e-12)


def test_rank_loss_differs_from_ranking_loss_only_on_ties():
    scores, _, y = random_multilabel(7, 200, 6, tied=True)
    gap = M.ranking_loss(scores, y) - M.rank_loss(scores, y)
    assert (gap >= 0).all() and (gap > 0).any()
    scores, _, y = random_multilabel(7, 200, 6, tied=False)
    np.testing.assert_allclose(M.ranking_loss(scores, y), M.rank_loss(scores, y))


# ---------------------------------------------------------------------------------------------------
# multiclass accuracy


def test_accuracy():
    assert M.accuracy(3, 3) == 1.0 and M.accuracy(3, 2) == 0.0
    rng = np.random.default_rng(0)
    pred, y = rng.integers(0, 4, 300), rng.integers(0, 4, 300)
    assert np.mean(M.accuracy(pred, y)) == pytest.approx(skm.accuracy_score(y, pred))


# ---------------------------------------------------------------------------------------------------
# bipartition metrics


def test_bipartition_hand_cases():
    labels, y = [1, 1, 0, 0], [1, 0, 1, 1]
    assert M.hamming_loss(labels, y) == 0.75
    assert M.precision(labels, y) == 0.5
    assert M.recall(labels, y) == pytest.approx(1 / 3)
    assert M.example_f1(labels, y) == pytest.approx(0.4)
    # empty prediction / empty truth (the default conventions)
    assert M.precision([0, 0], [1, 0]) == 0.0
    assert M.recall([1, 0], [0, 0]) == 0.0
    assert np.isnan(M.recall([1, 0], [0, 0], zero_division=np.nan))
    assert M.example_f1([0, 0], [0, 0]) == 1.0
    assert M.example_f1([1, 0], [0, 0]) == 0.0
    assert M.hamming_loss([0, 0], [0, 0]) == 0.0
    # k = 1
    assert M.hamming_loss([1], [0]) == 1.0 and M.precision([1], [1]) == 1.0


def test_f1_is_the_harmonic_mean_of_averaged_precision_and_recall():
    labels = np.array([[1, 1, 0], [0, 0, 1], [0, 0, 0]])
    y = np.array([[1, 0, 0], [1, 1, 1], [0, 1, 0]])
    psn, rcal = (1 / 2 + 1 + 0) / 3, (1 + 1 / 3 + 0) / 3
    assert M.f1(labels, y) == pytest.approx(2 * psn * rcal / (psn + rcal))
    assert M.f1(labels, y) != pytest.approx(np.mean(M.example_f1(labels, y)))
    assert M.f1(np.zeros((2, 3)), y[:2]) == 0.0  # Psn = Rcal = 0


def test_macro_and_micro_f1_hand_cases():
    labels = np.array([[1, 0, 0], [1, 0, 0], [0, 0, 0]])
    y = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    # label 0: TP 1, FP 1, FN 1 -> 1/2; label 1: FN 1 -> 0; label 2: never seen -> 0
    assert M.macro_f1(labels, y) == pytest.approx(1 / 6)
    assert M.macro_f1(labels, y, zero_division=1.0) == pytest.approx(1.5 / 3)
    assert M.micro_f1(labels, y) == pytest.approx(2 / (2 + 1 + 2))
    assert M.micro_f1(np.zeros((2, 2)), np.zeros((2, 2))) == 0.0
    assert M.macro_f1([1, 0], [1, 0]) == 0.5  # a single example is a batch of one


@pytest.mark.parametrize("seed, k", [(0, 2), (1, 6), (2, 14), (3, 101)])  # sklearn reads k = 1 as binary
def test_bipartition_metrics_agree_with_sklearn(seed, k):
    _, labels, y = random_multilabel(seed, 200, k)
    assert np.mean(M.hamming_loss(labels, y)) == pytest.approx(skm.hamming_loss(y, labels))
    for zd in (0.0, 1.0):
        kw = dict(average="samples", zero_division=zd)
        assert np.mean(M.precision(labels, y, zd)) == pytest.approx(skm.precision_score(y, labels, **kw))
        assert np.mean(M.recall(labels, y, zd)) == pytest.approx(skm.recall_score(y, labels, **kw))
        assert np.mean(M.example_f1(labels, y, zd)) == pytest.approx(skm.f1_score(y, labels, **kw))
        for average, ours in (("macro", M.macro_f1), ("micro", M.micro_f1)):
            assert ours(labels, y, zd) == pytest.approx(skm.f1_score(y, labels, average=average, zero_division=zd))


def test_macro_f1_with_labels_absent_from_the_test_set_agrees_with_sklearn():
    _, labels, y = random_multilabel(5, 100, 10)
    y[:, 3] = 0
    labels[:, 3] = 0
    assert M.macro_f1(labels, y) == pytest.approx(skm.f1_score(y, labels, average="macro", zero_division=0))


# ---------------------------------------------------------------------------------------------------
# registry and streaming


def predictions(seed=11, n=120, k=6):
    scores, labels, y = random_multilabel(seed, n, k)
    rng = np.random.default_rng(seed)
    cls_pred, cls_y = rng.integers(0, 3, n), rng.integers(0, 3, n)
    return {"scores": scores, "labels": labels, "class": cls_pred}, y, cls_y


MLHAT = tuple(
    f"mlhat_{name}"
    for name in (
        "subset_accuracy",
        "hamming_loss",
        *(f"{kind}_{part}" for kind in ("example", "micro", "macro") for part in ("precision", "recall", "f1")),
    )
)


def test_registry_entries():
    expected = {
        "rank_loss",
        "weighted_rank_loss",
        "unweighted_rank_loss",
        "ranking_loss",
        "accuracy",
        "hamming_loss",
        "precision",
        "recall",
        "f1",
        "example_f1",
        "macro_f1",
        "micro_f1",
        "precision_empty1",
        "recall_empty1",
        "f1_empty1",
        "example_f1_empty0",
        "macro_f1_absent1",
        "precision_unlabelled1",
        "recall_unlabelled1",
        "f1_unlabelled1",
        "ranking_loss_unlabelled0",
        *MLHAT,
    }
    assert set(M.METRICS) == expected
    for name, m in M.METRICS.items():
        assert m.name == name and m.needs in ("scores", "labels", "class") and m.source
        assert m.lower_is_better == ("loss" in name)
        corpus = ("f1", "macro_f1", "micro_f1", "f1_empty1", "macro_f1_absent1", "f1_unlabelled1")
        assert m.per_example == (name not in corpus and "_micro_" not in name and "_macro_" not in name)
        assert (m.needs == "scores") == ("rank" in name)


@pytest.mark.parametrize("name", sorted(M.METRICS))
def test_streaming_one_example_at_a_time_equals_the_batch_value(name):
    metric = M.METRICS[name]
    preds, y, cls_y = predictions()
    pred, truth = preds[metric.needs], (cls_y if metric.needs == "class" else y)
    acc = metric.accumulator()
    assert np.isnan(acc.value())
    for p, t in zip(pred, truth):
        acc.update(p, t)
    if metric.per_example:
        batch = np.nanmean(metric(pred, truth))
    else:
        batch = metric(pred, truth)
    assert acc.value() == pytest.approx(batch, abs=1e-12)
    chunked = metric.accumulator()  # batches of any size accumulate to the same value
    for i in range(0, len(pred), 50):
        chunked.update(pred[i : i + 50], truth[i : i + 50])
    assert chunked.value() == pytest.approx(batch, abs=1e-12)


def test_registry_ranking_loss_leaves_degenerate_examples_out():
    preds, y, _ = predictions()
    kept = (y.sum(1) > 0) & (y.sum(1) < y.shape[1])
    acc = M.METRICS["ranking_loss"].accumulator()
    acc.update(preds["scores"], y)
    assert acc.value() == pytest.approx(skm.label_ranking_loss(y[kept], preds["scores"][kept]))


def test_registry_rank_losses():
    s, y = np.array([0.9, 0.1, 0.5, 0.5]), np.array([1, 0, 1, 0])
    assert M.METRICS["rank_loss"](s, y) == M.METRICS["weighted_rank_loss"](s, y) == 0.125
    assert M.METRICS["unweighted_rank_loss"](s, y) == 0.5


def test_empty_set_conventions_by_name():
    # rows: both sets empty; empty prediction only; empty truth only; an ordinary row (Psn 1/2, Rcal 1)
    labels = np.array([[0, 0, 0], [0, 0, 0], [1, 0, 0], [1, 1, 0]])
    y = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0]])
    R = M.METRICS
    assert np.mean(R["precision"](labels, y)) == pytest.approx((0 + 0 + 0 + 0.5) / 4)
    assert np.mean(R["precision_empty1"](labels, y)) == pytest.approx((1 + 1 + 0 + 0.5) / 4)
    assert np.mean(R["recall"](labels, y)) == pytest.approx((0 + 0 + 0 + 1) / 4)
    assert np.mean(R["recall_empty1"](labels, y)) == pytest.approx((1 + 0 + 1 + 1) / 4)
    psn, rcal = 2.5 / 4, 3 / 4
    assert R["f1_empty1"](labels, y) == pytest.approx(2 * psn * rcal / (psn + rcal))
    # without relevant labels: 1 whatever is predicted (rows 0 and 2); an empty prediction otherwise: 0
    assert np.mean(R["precision_unlabelled1"](labels, y)) == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert np.mean(R["recall_unlabelled1"](labels, y)) == pytest.approx((1 + 0 + 1 + 1) / 4)
    psn, rcal = 2.5 / 4, 3 / 4
    assert R["f1_unlabelled1"](labels, y) == pytest.approx(2 * psn * rcal / (psn + rcal))
    assert np.mean(R["example_f1"](labels, y)) == pytest.approx((1 + 0 + 0 + 2 / 3) / 4)
    assert np.mean(R["example_f1_empty0"](labels, y)) == pytest.approx((0 + 0 + 0 + 2 / 3) / 4)
    # ranking loss: rows 0 and 2 have no relevant label: left out by default, kept with loss 0 otherwise
    scores = np.array([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [0.5, 0.5, 0.5], [0.1, 0.3, 0.2]])
    per_row = np.array([np.nan, 0.5, np.nan, 1.0])  # row 1: pair (1, 0) wrong, (1, 2) right; row 3: both wrong
    assert np.nanmean(R["ranking_loss"](scores, y)) == pytest.approx(np.nanmean(per_row))
    assert np.mean(R["ranking_loss_unlabelled0"](scores, y)) == pytest.approx(np.nansum(per_row) / 4)
    # label 2 is never relevant nor predicted: 0 by default, 1 under the other convention
    assert R["macro_f1"](labels, y) == pytest.approx((2 / 3 + 0 + 0) / 3)
    assert R["macro_f1_absent1"](labels, y) == pytest.approx((2 / 3 + 0 + 1) / 3)


def test_a_corpus_metric_needs_its_stats_and_reduce():
    with pytest.raises(ValueError, match="'m': a corpus metric needs its stats and reduce"):
        M.Metric("m", len, "labels", False, per_example=False, source="", stats=len)
