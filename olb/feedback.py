"""What a learner is told after it predicts, and the ranking helpers the protocol and the learners share.

* :func:`ranking` -- sigma(s): labels by decreasing score, ties toward the smaller label index
  (paper 004, Sec. 2), and :func:`ranking_scores`, a tie-free score vector whose sigma is a given ranking;
* :class:`TopKFeedback` -- what the protocol hands a top-k learner (paper 004): the k top labels of the
  ranking it output and their relevance, nothing else (no label set, no |R|, no reference to the data);
* :func:`observed_pairs` -- the (relevant, irrelevant) pairs such a feedback reveals.

Full-information learners receive the label vector itself (``olb.protocol.FEEDBACK``).

>>> import numpy as np
>>> ranking(np.array([0.3, 0.7, 0.5, 0.5]))  # paper 004's example: sigma = (2, 3, 4, 1), 0-based here
array([1, 2, 3, 0])
"""

from __future__ import annotations

import numpy as np

__all__ = ["ranking", "ranking_scores", "TopKFeedback", "observed_pairs"]


def ranking(scores: np.ndarray) -> np.ndarray:
    """sigma(s): label indices by decreasing score, ties toward the smaller index (paper 004, Sec. 2).

    ``scores`` (m,) or (n, m); returns int indices of the same shape (row-wise for 2-d input).
    """
    s = np.asarray(scores, float)
    return np.argsort(-s, axis=-1, kind="stable")


def ranking_scores(order: np.ndarray) -> np.ndarray:
    """The score vector m, m-1, ..., 1 placed on ``order``: tie-free, and ``ranking`` of it is ``order``.

    A top-k learner outputs a ranking; this is how it hands the ranking to the protocol, which reads the
    top k with :func:`ranking` and scores the rank loss of the ranking itself (a ranking has no ties).

    >>> ranking_scores(np.array([2, 0, 1]))
    array([2., 1., 3.])
    """
    order = np.asarray(order)
    m = order.shape[-1]
    scores = np.empty(order.shape, float)
    np.put_along_axis(scores, order, np.broadcast_to(np.arange(m, 0, -1, dtype=float), order.shape), axis=-1)
    return scores


class TopKFeedback:
    """What a top-k learner learns after a round: the k top labels of the ranking it output, and their relevance.

    ``labels`` (k,) int: the top k labels in ranking order; ``relevant`` (k,) bool: ``relevant[j]`` says
    whether ``labels[j]`` is relevant. Both are private read-only copies; the object holds nothing else
    (``__slots__``, no ``__dict__``), so neither the label set, nor its size, nor the data set can be
    reached from it. Built by the protocol with :meth:`from_prediction`, which refuses k >= m.

    >>> fb = TopKFeedback.from_prediction(np.array([3.0, 1.0, 2.0, 4.0]), np.array([1, 1, 0, 0]), k=2)
    >>> fb
    TopKFeedback(labels=[3, 0], relevant=[False, True])
    """

    __slots__ = ("_labels", "_relevant")
    _labels: np.ndarray
    _relevant: np.ndarray

    def __init__(self, labels, relevant):
        labels = np.array(np.ravel(labels), dtype=np.intp, copy=True)  # own data: no .base to follow
        relevant = np.array(np.ravel(relevant), dtype=bool, copy=True)
        if labels.size == 0 or labels.shape != relevant.shape:
            raise ValueError(
                f"TopKFeedback: need k >= 1 labels and as many relevance flags, got "
                f"{labels.size} labels and {relevant.size} flags"
            )
        if np.unique(labels).size != labels.size or labels.min() < 0:
            raise ValueError(f"TopKFeedback: labels must be distinct non-negative indices, got {labels.tolist()}")
        labels.flags.writeable = False
        relevant.flags.writeable = False
        object.__setattr__(self, "_labels", labels)
        object.__setattr__(self, "_relevant", relevant)

    @classmethod
    def from_prediction(cls, prediction, y, k: int) -> "TopKFeedback":
        """The feedback on ``prediction`` (scores (m,)) for the relevance vector ``y`` (m,): top k of sigma."""
        prediction = np.asarray(prediction, float)
        m = prediction.shape[-1]
        if prediction.ndim != 1 or np.shape(y) != (m,):
            raise ValueError(
                f"top-k feedback needs a score vector and a relevance vector of the same length "
                f"(m,), got shapes {prediction.shape} and {np.shape(y)}"
            )
        if isinstance(k, (bool, np.bool_)) or int(k) != k or not 1 <= k < m:
            raise ValueError(
                f"top-k feedback needs 1 <= k < number of labels; got k={k} with {m} labels "
                "(k >= m would reveal the whole label set)"
            )
        top = ranking(prediction)[: int(k)]
        return cls(top, np.asarray(y)[top] != 0)

    @property
    def labels(self) -> np.ndarray:
        return self._labels

    @property
    def relevant(self) -> np.ndarray:
        return self._relevant

    @property
    def k(self) -> int:
        return self._labels.size

    def __setattr__(self, name, value):
        raise AttributeError("TopKFeedback is read-only")

    def __delattr__(self, name):
        raise AttributeError("TopKFeedback is read-only")

    def __reduce__(self):
        return (TopKFeedback, (self._labels, self._relevant))

    def __repr__(self) -> str:
        return f"TopKFeedback(labels={self._labels.tolist()}, relevant={self._relevant.tolist()})"


def observed_pairs(feedback: TopKFeedback) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (a relevant, b irrelevant) with both labels in the observed top k: (a_idx, b_idx), (P,) each."""
    rel = feedback.labels[feedback.relevant]
    irr = feedback.labels[~feedback.relevant]
    return np.repeat(rel, irr.size), np.tile(irr, rel.size)
