"""k-nearest-neighbour multi-label classifier: paper 003's kNN baseline (Euclidean, per-label vote)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param
from olb.learners.neighbors.memory import RowMemory, k_nearest, vote
from olb.learners.params import FEATURE_SCALING, INIT_FRACTION, N_NEIGHBORS
from olb.learners.neighbors.costs import NeighborSearchCost
from olb.learners.registry import register

VOTE_THRESHOLD = Param(
    float,
    0.5,
    low=0.0,
    open_low=True,
    high=1.0,
    doc="a label is predicted relevant iff its neighbours' vote fraction is >= this value",
)


TIE_BREAK = Param(
    str,
    "index",
    choices=("index", "random"),
    doc="which of the rows tied at the k-th distance a search takes when they outnumber the places left: "
    "'index' (the first stored, a stable sort's rule) or 'random' (a random subset drawn from the learner's seed)",
)


class NeighborLearner(OnlineLearner):
    """What the neighbour learners share: a memory of (row, label vector) pairs and the per-label vote."""

    outputs: ClassVar[tuple[str, ...]] = ("scores", "labels")
    default_protocol: ClassVar[str] = "train_frozen"
    predict_before_learn: ClassVar[bool] = False
    learns_passes: ClassVar[bool] = True  # a training pass without the protocol's work per row
    n_neighbors = N_NEIGHBORS
    vote_threshold = VOTE_THRESHOLD
    init_fraction = INIT_FRACTION
    feature_scaling = FEATURE_SCALING
    tie_break = TIE_BREAK

    @property
    def tie_rng(self) -> np.random.Generator | None:
        """The generator that breaks ties at the k-th distance (``tie_break='random'``), else None (by index)."""
        return self.rng if self.tie_break == "random" else None

    def _labels_from_votes(self, votes: np.ndarray) -> dict:
        return {"scores": votes, "labels": (votes >= self.vote_threshold).astype(np.int8)}


@register(cost=NeighborSearchCost())
class KNN(NeighborLearner):
    """Euclidean k-nearest neighbours in input space; each label's score is its vote fraction among the k.

    Every example learned (the initial block and every streamed row) is stored; prediction searches the
    whole memory exactly. Paper 003 leaves the combining rule unstated: the vote at ``vote_threshold``
    (0.5, a per-label majority) is our reading.

    >>> knn = KNN(2, 2, n_neighbors=2)
    >>> knn.learn_many(np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0]]), np.array([[1, 0], [1, 1], [0, 1]]))
    >>> out = knn.predict_one(np.array([0.0, 0.1]))
    >>> out["scores"].tolist(), out["labels"].tolist()
    ([1.0, 0.5], [1, 1])
    """

    name = "knn"
    test_params: ClassVar[dict] = {"n_neighbors": 3}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.memory = RowMemory(self.n_features)
        self.memory_labels = RowMemory(self.n_labels)

    def predict_one(self, x: np.ndarray) -> dict:
        x = np.asarray(x, dtype=float)
        nearest = k_nearest(self.memory.rows, self.memory.sq_norms, x, self.n_neighbors, self.tie_rng)
        return self._labels_from_votes(vote(self.memory_labels.rows, nearest))

    def learn_one(self, x: np.ndarray, y) -> None:
        self.memory.append(x)
        self.memory_labels.append(y)

    def learn_many(self, X, Y) -> None:
        self.memory.extend(X)
        self.memory_labels.extend(Y)

    learn_pass = learn_many  # storing a block stores its rows in order
