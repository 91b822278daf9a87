"""Cross-validated selection (olb/grid/selection.py): folds, one setting's CV, and the two selection rules."""

import itertools

import numpy as np
import pytest

import olb.ops.testing  # noqa: F401 - registers _grid_stub
from olb.data.dataset import Dataset
from olb.grid.selection import cv_scores, fold_datasets, select


def _dataset(n_train=23, n_test=5):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n_train + n_test, 3))
    return Dataset("toy", X, (X > 0).astype(np.int8), "multilabel", ("a", "b", "c"), ("p", "q", "r"), n_train)


def test_folds_partition_the_training_rows_only():
    data = _dataset()
    folds = fold_datasets(data, 5, seed=3)
    held_out = np.vstack([f.X[f.n_train :] for f in folds])
    assert sorted(map(tuple, held_out)) == sorted(map(tuple, data.X[:23]))  # every training row held out once
    assert {f.n_examples - f.n_train for f in folds} == {4, 5} and all(f.n_examples == 23 for f in folds)
    assert not any((f.X[:, None] == data.X[23:][None]).all(-1).any() for f in folds)  # test rows never used
    assert np.array_equal(fold_datasets(data, 5, seed=3)[2].X, folds[2].X)
    with pytest.raises(ValueError, match="n_folds=1 is out of range"):
        fold_datasets(data, 1)


def test_one_settings_cross_validation_is_deterministic():
    data = _dataset()
    first = cv_scores("_grid_stub", {}, data, ("rank_loss",), 4, seed=0)
    assert len(first.folds) == 4 and all(0 <= f["rank_loss"] <= 1 for f in first.folds)
    assert cv_scores("_grid_stub", {}, data, ("rank_loss",), 4, seed=0).folds == first.folds


def _brute_force_majority(means, lower):
    def better(a, b, m):
        return means[a][m] < means[b][m] if lower[m] else means[a][m] > means[b][m]

    score = {s: 0 for s in means}
    for a, b in itertools.permutations(means, 2):
        wins = sum(better(a, b, m) for m in lower)
        losses = sum(better(b, a, m) for m in lower)
        score[a] += (wins > losses) - (wins < losses)
    best = max(score.values())
    return {s for s, v in score.items() if v == best}, score


@pytest.mark.parametrize("seed", range(20))
def test_majority_rule_picks_what_a_brute_force_count_picks(seed):
    rng = np.random.default_rng(seed)
    metrics = {"f1": False, "macro_f1": False, "hamming_loss": True, "ranking_loss": True, "precision": False}
    means = {f"s{i}": {m: float(rng.integers(0, 4)) / 4 for m in metrics} for i in range(6)}  # many ties
    top, counts = _brute_force_majority(means, metrics)
    chosen = select(means, metrics, "majority")
    assert chosen.chosen in top and chosen.scores == counts
    best_f1 = select(means, metrics, "best:f1")
    assert means[best_f1.chosen]["f1"] == max(v["f1"] for v in means.values())


def test_rules_are_checked():
    with pytest.raises(ValueError, match="unknown selection rule 'vote'"):
        select({"a": {"f1": 1.0}}, {"f1": False}, "vote")
    with pytest.raises(ValueError, match="'auc' is not a cross-validated metric"):
        select({"a": {"f1": 1.0}}, {"f1": False}, "best:auc")
