"""FALT(l) and SALT: linear adaptive label thresholding, first- and second-order (paper 002, §4-§5).

Both learn W = [w_0, w_1, ..., w_q] (d x (q + 1)): w_1..w_q score the labels, w_0 scores the threshold, and
the predicted label set is {k : <w_k, x> > <w_0, x>} (ties: irrelevant). The model starts at W = 0 [RECON] and
is trained by the ALT loss of :mod:`olb.learners.linear.alt_loss`. Rows may be sparse (CSR) and are never
densified: a FALT round costs O(nnz(x) q) whatever the repeats (they run on the example's scores), a SALT
repeat O(nnz(x) m) with m the columns that move.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from olb.learners.base import OnlineLearner
from olb.kernels import KernelModule
from olb.learners.linear import rows
from olb.learners.linear.rows import NO_STATE, nonzero_entries
from olb.learners.params import BIAS, DELTA, ETA, FEATURE_SCALING, REPEATS
from olb.learners.linear.costs import LinearRowCost
from olb.learners.registry import register

passes = KernelModule("olb.learners.linear.passes")


class _LinearALT(OnlineLearner):
    """What FALT(l) and SALT share: the (d [+1]) x (q + 1) model, its scores and the thresholded labels."""

    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    accepts_sparse = True
    learns_passes = True  # the protocol gives a phase that does not predict to learn_pass, whole
    eta = ETA
    repeats = REPEATS
    bias = BIAS
    feature_scaling = FEATURE_SCALING
    _rule: ClassVar[int]  # the compiled pass's update rule (rows.FALT, rows.SALT)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.W = np.zeros((self.n_features + int(self.bias), self.n_labels + 1))

    def _scores(self, idx, val) -> np.ndarray:
        """Threshold score then label scores, (q + 1,)."""
        return passes.row_scores(self.W, idx, val, np.empty(self.W.shape[1]))

    def predict_one(self, x):
        s = self._scores(*nonzero_entries(x, self.bias))
        return {"scores": s[1:].copy(), "labels": (s[1:] > s[0]).astype(np.int8)}

    @staticmethod
    def _labels(y) -> np.ndarray:
        return np.ascontiguousarray(y, dtype=np.int8)

    def _pass_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The rule's per-entry state (SALT's G) and its hyperparameters as floats, for the compiled pass."""
        raise NotImplementedError

    def learn_pass(self, X, Y) -> None:
        """``learn_one`` on every row of the block X (n, d), dense or CSR, in order, as one compiled call."""
        indptr, indices, data = rows.csr_entries(X)
        Y = self._labels(Y)
        G, hyper = self._pass_state()
        passes.learn_pass(self._rule, self.W, G, NO_STATE, indptr, indices, data, self.bias, Y, hyper)


@register(cost=LinearRowCost())
class FALT(_LinearALT):
    """FALT(l): first-order ALT, online subgradient descent on the ALT loss (paper 002, eq. (6), Algorithm 2).

    Each round takes up to ``repeats`` steps ``w_i += eta c_i x`` on the same example (the paper's "learning
    times"; the mechanics are reconstructed [RECON]), stopping once its loss is 0. ``bias`` appends a constant-1
    feature (not in the paper; dense, uncentred data needs it, sparse text does not).

    >>> learner = FALT(n_features=2, n_labels=3, eta=0.5, repeats=5)
    >>> x, y = np.array([1.0, 0.5]), np.array([1, 0, 1])
    >>> learner.learn_one(x, y)
    >>> learner.predict_one(x)["labels"]
    array([1, 0, 1], dtype=int8)
    """

    name = "falt"
    _rule = rows.FALT
    test_params = {"eta": 0.5, "repeats": 5}

    def _pass_state(self):
        return self.W, np.array([self.eta, self.repeats], float)  # (FALT has no G: unused)

    def learn_one(self, x, feedback) -> None:
        idx, val = nonzero_entries(x, self.bias)
        q1 = self.n_labels + 1
        passes.falt_round(self.W, idx, val, self._labels(feedback), self.eta, self.repeats, np.empty(q1), np.empty(q1))


@register(cost=LinearRowCost())
class SALT(_LinearALT):
    """SALT: second-order ALT, diagonal adaptive mirror descent (AdaGrad) on the ALT loss (paper 002, §4.3).

    Each entry (j, i) of W has its own step ``eta / (delta + sqrt(G_ji))``, G_ji summing the squared gradient
    entries (x_j c_i)^2 seen so far (Duchi et al.'s composite mirror descent with H_t = delta I + diag(sqrt(G)),
    whose closed form the paper uses; the per-entry form is the standard one [STD]). Every one of the up to
    ``repeats`` steps per round adds its own squared gradient to G [RECON]; they stop once the loss is 0.

    >>> learner = SALT(n_features=2, n_labels=3, eta=0.5, delta=1.0, repeats=5)
    >>> x, y = np.array([1.0, 0.5]), np.array([1, 0, 1])
    >>> learner.learn_one(x, y)
    >>> learner.predict_one(x)["labels"]
    array([1, 0, 1], dtype=int8)
    """

    name = "salt"
    _rule = rows.SALT
    delta = DELTA
    test_params = {"eta": 0.5, "repeats": 5, "delta": 1.0}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.G = np.zeros_like(self.W)

    def _pass_state(self):
        return self.G, np.array([self.eta, self.delta, self.repeats], float)

    def learn_one(self, x, feedback) -> None:
        idx, val = nonzero_entries(x, self.bias)
        passes.salt_round(self.W, self.G, idx, val, self._labels(feedback), self.eta, self.delta, self.repeats)
