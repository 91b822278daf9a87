"""OLANSGD*: our stand-in for OLANSGD (Park & Choi 2013), a baseline of paper 003. NOT the authors' algorithm.

OLANSGD minimises the primal Rank-SVM with an accelerated non-smooth SGD; its update formulas could not be
recovered. OLANSGD* is plain SGD on the same kind of objective, reconstructed:

    (lam / 2) ||W||_F^2 + 1 / (|Y| |Ybar|) sum_{k in Y, l in Ybar} h_gamma(1 - (w_k - w_l)^T x),

with the smoothed hinge h_gamma(z) = max_{u in [0, 1]} (u z - gamma u^2 / 2), whose gradient weight is
u* = clip(z / gamma, 0, 1), and the step eta / sqrt(t). Scores are w_k^T x; a label is predicted relevant when
its score is > 0 (the threshold is not stated). Results of this learner are never reported as OLANSGD.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param
from olb.learners.linear.alt import _LinearALT
from olb.learners.linear.rows import nonzero_entries
from olb.learners.params import BIAS, ETA, FEATURE_SCALING, with_default


def smoothed_rank_gradient(scores: np.ndarray, y: np.ndarray, smoothing: float) -> np.ndarray:
    """d/ds of the averaged smoothed pairwise hinge at scores ``s`` (one entry per label); zeros when y has no
    relevant or no irrelevant label.

    >>> smoothed_rank_gradient(np.array([0.0, 0.0]), np.array([1, 0]), 1.0).tolist()
    [-1.0, 1.0]
    """
    relevant = np.asarray(y) > 0
    if relevant.all() or not relevant.any():
        return np.zeros_like(scores)
    u = np.clip((1.0 - (scores[relevant][:, None] - scores[~relevant][None, :])) / smoothing, 0.0, 1.0)
    u /= u.size
    grad = np.zeros_like(scores)
    grad[relevant] = -u.sum(axis=1)
    grad[~relevant] = u.sum(axis=0)
    return grad


class OLANSGDStar(OnlineLearner):
    """OLANSGD* (a labelled stand-in, see the module docstring): SGD on a smoothed Rank-SVM primal.

    >>> learner = OLANSGDStar(2, 2, eta=1.0)
    >>> for _ in range(20):
    ...     learner.learn_one(np.array([1.0, 0.0]), np.array([1, 0]))
    ...     learner.learn_one(np.array([0.0, 1.0]), np.array([0, 1]))
    >>> learner.predict_one(np.array([1.0, 0.0]))["labels"].tolist()
    [1, 0]
    """

    name = "olansgd_star"
    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    accepts_sparse = True
    params: ClassVar[dict[str, Param]] = {
        "regularization": Param(
            float,
            1e-4,
            low=0.0,
            doc="lam, the weight of (lam / 2) ||W||_F^2 (paper 003 searches 1e-6 ... 1 by cross-validation)",
        ),
        "smoothing": Param(float, 0.1, low=0.0, open_low=True, doc="gamma of the smoothed hinge"),
        "eta": with_default(ETA, 0.1),
        "bias": BIAS,
        "feature_scaling": FEATURE_SCALING,
    }
    test_params: ClassVar[dict] = {"eta": 0.5}
    cost_per_example_s = _LinearALT.cost_per_example_s  # a linear scorer's round (fitted on both)

    def __init__(self, n_features: int, n_labels: int, seed=None, **hyper):
        super().__init__(n_features, n_labels, seed=seed, **hyper)
        self.weights = np.zeros((self.n_features + int(self.bias), self.n_labels))
        self.scale = 1.0  # W = scale * weights, so that the shrinkage costs O(1)
        self.t = 0

    def _scores(self, idx: np.ndarray, vals: np.ndarray) -> np.ndarray:
        return self.scale * (vals @ self.weights[idx])

    def predict_one(self, x) -> dict:
        scores = self._scores(*nonzero_entries(x, self.bias))
        return {"scores": scores, "labels": (scores > 0).astype(np.int8)}

    def learn_one(self, x, y) -> None:
        idx, vals = nonzero_entries(x, self.bias)
        self.t += 1
        step = self.eta / np.sqrt(self.t)
        grad = smoothed_rank_gradient(self._scores(idx, vals), y, self.smoothing)
        self.scale *= 1.0 - step * self.regularization if step * self.regularization < 1 else 0.0
        if self.scale < 1e-9:  # fold the scale back in before it underflows (or after a full shrink)
            self.weights *= self.scale
            self.scale = 1.0
        self.weights[idx] -= (step / self.scale) * np.outer(vals, grad)
