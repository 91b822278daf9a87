"""Binary relevance over river's k-nearest-neighbour classifier, in numpy: river's predicted label sets, faster.

river 0.26's ``multioutput.PerOutputClassifier(neighbors.KNNClassifier(n_neighbors, weighted=True,
engine=neighbors.LazySearch(window_size)))`` (Euclidean distance, its default) keeps one window of the last
``window_size`` examples per label. The labels' windows hold the same rows, so one search serves every label here.
What this reproduces of river, step by step:

- **window**: the last ``window_size`` learned rows, oldest first (river's ``deque(maxlen=window_size)``).
- **distance**: river's dict distance between the query's nonzero entries and a stored row's, summed in order:
  the query's nonzero features by index, then the stored row's features where the query is zero; a square
  root of that sum. The same order of the same float additions gives the same distances bit for bit.
- **neighbours**: the ``n_neighbors`` smallest distances, ties to the older row (river's sort by distance, then
  window position).
- **vote** (``predict_proba_one``): a label value never learned is absent; a nearest row at distance 0 gives its
  value probability 1; otherwise each neighbour adds ``1 / distance`` to its value, normalised by the sum of
  the votes (False's, then True's). Before any example river predicts nothing: here, not relevant.
- **choice** (``predict_one``): the most probable value, the first of equals in river's class order (False,
  then True): relevant iff True's probability exceeds False's.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param
from olb.learners.linear.rows import nonzero_entries
from olb.learners.params import FEATURE_SCALING
from olb.learners.stream_br.costs import WindowSearchCost
from olb.learners.registry import register

WINDOW_SIZE = Param(int, 200, low=1, doc="rows of the sliding window searched for neighbours (river's LazySearch)")
NEIGHBORS = Param(int, 5, low=1, doc="neighbours of the inverse-distance vote (river's KNNClassifier)")


@register(cost=WindowSearchCost())
class BRKNN(OnlineLearner):
    """river's BR + weighted kNN over a sliding window (module docstring), one search for all labels.

    >>> knn = BRKNN(2, 2, n_neighbors=2, window_size=3)
    >>> for x, y in [([0.0, 1.0], [1, 0]), ([1.0, 0.0], [0, 1]), ([0.0, 2.0], [1, 1])]:
    ...     knn.learn_one(np.array(x), np.array(y))
    >>> knn.predict_one(np.array([0.0, 1.2]))["labels"].tolist()
    [1, 0]
    """

    name = "br_knn"
    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    accepts_sparse = True
    n_neighbors = NEIGHBORS
    window_size = WINDOW_SIZE
    feature_scaling = FEATURE_SCALING
    test_params: ClassVar[dict] = {"n_neighbors": 3, "window_size": 20}

    def __post_init__(self) -> None:
        super().__post_init__()
        # A circular buffer of columns: column ``(start + i) % window_size`` is the i-th oldest of the ``size`` rows
        # held (features down the columns, so that a distance's additions run over whole rows of numbers).
        self.columns = np.zeros((self.n_features, self.window_size))
        self.targets = np.zeros((self.window_size, self.n_labels), dtype=np.int8)
        self.start = self.size = 0
        self.seen = np.zeros((2, self.n_labels), dtype=bool)  # label values learned (river's ``classes``)

    def _dense(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The row as a dense vector, and its nonzero features."""
        idx, val = nonzero_entries(x, False)
        row = np.zeros(self.n_features)
        row[idx] = val
        return row, idx

    def _nearest(self, x) -> tuple[np.ndarray, np.ndarray]:
        """Window positions of the nearest rows and their distances, river's order."""
        row, nonzero = self._dense(x)
        columns = self.columns[:, : self.size]
        if len(nonzero) < self.n_features:  # river's order: the query's nonzero features, then the others
            zero = np.ones(self.n_features, dtype=bool)
            zero[nonzero] = False
            order = np.concatenate([nonzero, np.flatnonzero(zero)])
            row, columns = row[order], columns[order]
        # a sum down the columns of a C-ordered array adds its rows one after another (numpy sums pairwise only
        # along the contiguous axis): river's order of additions, a distance per held row
        distances = np.sqrt(np.square(columns - row[:, None]).sum(axis=0))
        held = (self.start + np.arange(self.size)) % self.window_size  # oldest first
        nearest = held[np.argsort(distances[held], kind="stable")[: self.n_neighbors]]
        return nearest, distances[nearest]

    def predict_one(self, x):
        if not self.size:
            return {"scores": np.zeros(self.n_labels), "labels": np.zeros(self.n_labels, dtype=np.int8)}
        positions, distances = self._nearest(x)
        targets = self.targets[positions]
        if distances[0] == 0:
            true = targets[0].astype(float)
            false = 1.0 - true
        else:
            weights = (1.0 / distances)[:, None]
            # river's running sums, neighbour by neighbour (adding a 0 changes nothing)
            true = (weights * targets).sum(axis=0)
            false = (weights * (1 - targets)).sum(axis=0)
            total = false + true
            true, false = true / total, false / total
        both = self.seen.all(axis=0)  # a label with one value learned predicts that value, with probability 1
        scores = np.where(both, true, self.seen[1].astype(float))
        labels = np.where(both, true > false, self.seen[1])
        return {"scores": scores, "labels": labels.astype(np.int8)}

    def learn_one(self, x, feedback) -> None:
        position = (self.start + self.size) % self.window_size
        self.columns[:, position] = self._dense(x)[0]
        self.targets[position] = feedback
        if self.size < self.window_size:
            self.size += 1
        else:
            self.start = (self.start + 1) % self.window_size
        y = np.asarray(feedback, dtype=bool)
        self.seen[1] |= y
        self.seen[0] |= ~y
