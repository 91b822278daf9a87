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
from olb.kernels import KernelModule
from olb.learners.linear import rows
from olb.learners.linear.rows import nonzero_entries
from olb.learners.params import BIAS, ETA, FEATURE_SCALING, with_default
from olb.learners.linear.costs import LinearRowCost
from olb.learners.registry import register

passes = KernelModule("olb.learners.linear.passes")


def smoothed_rank_gradient(scores: np.ndarray, y: np.ndarray, smoothing: float) -> np.ndarray:
    """d/ds of the averaged smoothed pairwise hinge at scores ``s`` (one entry per label); zeros when y has no
    relevant or no irrelevant label.

    >>> smoothed_rank_gradient(np.array([0.0, 0.0]), np.array([1, 0]), 1.0).tolist()
    [-1.0, 1.0]
    """
    scores = np.ascontiguousarray(scores, dtype=float)
    return passes.rank_gradient_into(
        scores, np.ascontiguousarray(y, dtype=np.int8), float(smoothing), np.empty_like(scores)
    )


@register(cost=LinearRowCost())
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
    learns_passes = True  # the protocol gives a phase that does not predict to learn_pass, whole
    regularization = Param(
        float,
        1e-4,
        low=0.0,
        doc="lam, the weight of (lam / 2) ||W||_F^2 (paper 003 searches 1e-6 ... 1 by cross-validation)",
    )
    smoothing = Param(float, 0.1, low=0.0, open_low=True, doc="gamma of the smoothed hinge")
    eta = with_default(ETA, 0.1)
    bias = BIAS
    feature_scaling = FEATURE_SCALING
    test_params: ClassVar[dict] = {"eta": 0.5}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.weights = np.zeros((self.n_features + int(self.bias), self.n_labels))
        self.state = np.array([1.0, 0.0])  # [scale, t]: W = scale * weights (the shrinkage costs O(1)); rows seen

    @property
    def scale(self) -> float:
        return float(self.state[0])

    @property
    def t(self) -> int:
        return int(self.state[1])

    def predict_one(self, x) -> dict:
        scores = self.scale * passes.row_scores(self.weights, *nonzero_entries(x, self.bias), np.empty(self.n_labels))
        return {"scores": scores, "labels": (scores > 0).astype(np.int8)}

    def learn_one(self, x, y) -> None:
        """One step eta / sqrt(t) on W's shrinkage (lam W) and on the smoothed hinge's gradient at this row."""
        idx, vals = nonzero_entries(x, self.bias)
        q = self.n_labels
        y = np.ascontiguousarray(y, dtype=np.int8)
        hyper = (self.eta, self.regularization, self.smoothing)
        passes.olansgd_round(self.weights, idx, vals, y, self.state, *hyper, np.empty(q), np.empty(q))

    def learn_pass(self, X, Y) -> None:
        """``learn_one`` on every row of the block X (n, d), dense or CSR, in order, as one compiled call."""
        indptr, indices, data = rows.csr_entries(X)
        hyper = np.array([self.eta, self.regularization, self.smoothing])
        Y = np.ascontiguousarray(Y)
        W = self.weights
        passes.learn_pass(rows.OLANSGD, W, W, self.state, indptr, indices, data, self.bias, Y, hyper)
