"""The compiled binary-relevance learners (olb/learners/stream_br) against river's, side by side.

Each test runs river's model and olb's on the same prequential stream (the data set's rows in file order, the
training split then the test split: every row predicted, then learned) and asks for the same predicted label
set on every row (:func:`olb.learners.stream_br.reference.side_by_side`: the rows reach river as olb's river
learners hand them over, a dict of the row's nonzero entries; river's choice is its ``predict_one``).
"""

from __future__ import annotations

import numpy as np
import pytest

from olb.data.dataset import Dataset
from olb.learners.stream_br.hoeffding import BRHT
from olb.learners.stream_br.knn import BRKNN
from olb.learners.stream_br.reference import river_br_ht, river_br_knn, side_by_side


def _differences(data: Dataset, river_model, learner) -> list[int]:
    return side_by_side(river_model, learner, data.X, data.Y).differ


@pytest.mark.parametrize("name", ["emotions", "yeast"])
def test_br_knn_predicts_river_label_sets_on_every_row(load, require_data, name):
    require_data(name)
    data = load(name)
    assert _differences(data, river_br_knn(), BRKNN(data.n_features, data.Y.shape[1])) == []


def test_br_knn_reproduces_river_rules_on_a_small_window():
    """Window eviction, a duplicate row (distance 0: its labels), a label never seen relevant, ties to the older
    row: river's choices on a hand-made stream through a window of 3."""
    X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [1.0, 1.0], [2.0, 0.0], [1.0, 0.0], [0.5, 0.5]])
    Y = np.array([[1, 0], [0, 0], [1, 0], [0, 0], [0, 0], [1, 0], [1, 0], [0, 0]], dtype=np.int8)
    data = Dataset("tiny", X, Y, "multilabel", ("a", "b"), ("p", "q"))
    learner = BRKNN(2, 2, n_neighbors=2, window_size=3)
    assert _differences(data, river_br_knn(n_neighbors=2, window_size=3), learner) == []


@pytest.mark.parametrize("name", ["emotions", "yeast"])
def test_br_ht_predicts_river_label_sets_on_every_row(load, require_data, name):
    """At the benchmark's settings; on yeast every label's tree splits (14 splits in 2,417 rows)."""
    require_data(name)
    data = load(name)
    learner = BRHT(data.n_features, data.Y.shape[1])
    assert _differences(data, river_br_ht(), learner) == []
    assert name == "emotions" or learner.n_nodes > 2 * data.Y.shape[1]  # the trees grew


def test_br_ht_follows_river_through_deep_trees_and_missing_features(load):
    """Eager splitting on emotions (a grace period of 10, ties split under 0.3): deep trees (over 400 nodes), rows
    whose zero (to river: missing) split feature sends them down the heavier branch, fractional class weights."""
    data = load("emotions")
    settings = {"grace_period": 10, "split_confidence": 0.1, "tie_threshold": 0.3}
    learner = BRHT(data.n_features, data.Y.shape[1], **settings)
    assert _differences(data, river_br_ht(**settings), learner) == []
    trees, used = learner.trees, learner.n_nodes
    split_features = trees.feature[:used][trees.feature[:used] >= 0]
    assert used > 400
    assert (data.X[:, split_features] == 0).any()
    assert (trees.weight[:used] % 1 != 0).any()
