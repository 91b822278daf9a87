"""The compiled binary-relevance learners (olb/learners/stream_br) against river's, side by side.

Each test runs river's model and olb's on the same prequential stream (the data set's rows in file order, the
training split then the test split: every row predicted, then learned) and asks for the same predicted label
set on every row. The rows reach river as olb's river learners hand them over (``river_family``: a dict of the
row's nonzero entries), the label choice is river's ``predict_one`` on each label's probabilities.
"""

from __future__ import annotations

import numpy as np
import pytest
from river import multioutput, neighbors

from olb.learners.linear.rows import nonzero_entries
from olb.learners.stream_br.knn import BRKNN


def _river_br_knn():
    """river's BR + kNN at the MLHAT benchmark's settings (n_neighbors=5, window_size=200, weighted, Euclidean)."""
    return multioutput.PerOutputClassifier(
        neighbors.KNNClassifier(n_neighbors=5, engine=neighbors.LazySearch(window_size=200), weighted=True)
    )


def _differences(data, river_model, learner) -> list[int]:
    """Rows (stream positions) where river's predicted label set and ``learner``'s differ, test-then-train."""
    keys = [f"y{k}" for k in range(data.Y.shape[1])]
    for key in keys:  # one classifier per label before any example, as olb's river learners make them
        river_model[key]
    differ = []
    for i in range(data.n_examples):
        x = data.X[i] if isinstance(data.X, np.ndarray) else data.X[[i]]
        idx, val = nonzero_entries(x, False)
        row = dict(zip(idx.tolist(), val.tolist()))
        proba = river_model.predict_proba_one(row)
        chosen = {key: max(p, key=p.get) for key, p in proba.items() if p}  # river's predict_one
        expected = [int(bool(chosen.get(key, False))) for key in keys]
        if learner.predict_one(x)["labels"].tolist() != expected:
            differ.append(i)
        river_model.learn_one(row, {key: bool(v) for key, v in zip(keys, data.Y[i])})
        learner.learn_one(x, data.Y[i])
    return differ


@pytest.mark.parametrize("name", ["emotions", "yeast"])
def test_br_knn_predicts_river_label_sets_on_every_row(load, require_data, name):
    require_data(name)
    data = load(name)
    learner = BRKNN(data.n_features, data.Y.shape[1])
    assert _differences(data, _river_br_knn(), learner) == []


def test_br_knn_reproduces_river_rules_on_a_small_window():
    """Window eviction, a duplicate row (distance 0: its labels), a label never seen relevant, ties to the older
    row: river's choices on a hand-made stream through a window of 3."""
    from olb.data.dataset import Dataset

    X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [1.0, 1.0], [2.0, 0.0], [1.0, 0.0], [0.5, 0.5]])
    Y = np.array([[1, 0], [0, 0], [1, 0], [0, 0], [0, 0], [1, 0], [1, 0], [0, 0]], dtype=np.int8)
    data = Dataset("tiny", X, Y, "multilabel", ("a", "b"), ("p", "q"))
    river_model = multioutput.PerOutputClassifier(
        neighbors.KNNClassifier(n_neighbors=2, engine=neighbors.LazySearch(window_size=3), weighted=True)
    )
    assert _differences(data, river_model, BRKNN(2, 2, n_neighbors=2, window_size=3)) == []
