"""Adaboost.OLM (paper 001, Algorithm 2): the multiclass logistic loss, its cost matrix (eq. 9) and the booster."""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import Param
from olb.learners.boosting.common import DrawsAhead, UniformDraws, forest_pass, hedge_init, rounds
from olb.learners.boosting.costs import ForestCost
from olb.learners.boosting.multiclass.booster import AUTHORS_WEIGHT_FLOOR, TIE_TOLERANCE, MulticlassBooster
from olb.learners.registry import register
from olb.weak import VFDTForest

adaolm_rounds = KernelModule("olb.learners.boosting.rounds.adaolm")

AUTHORS_FIRST_WEIGHT = 5.0  # Adaboost.OLM in the authors' code: tree 1 always gets weight 5


def logistic_cost_matrix(s: np.ndarray) -> np.ndarray:
    """The (k, k) cost matrix C of eq. (9) at the votes ``s``: row r is the gradient of L^r(s)."""
    G, rows = adaolm_rounds.logistic_cost_parts(np.asarray(s, float)[None])
    C = G[0].copy()
    np.fill_diagonal(C, -rows[0])
    return C


def logistic_loss(s: np.ndarray, y: int) -> float:
    """Multiclass logistic loss L^y(s) = sum_{l != y} log(1 + exp(s[l] - s[y])) (eq. 8)."""
    s = np.asarray(s, float)
    return float(np.logaddexp(0.0, np.delete(s - s[y], y)).sum())


@register(cost=ForestCost(multiclass=True, forest_learning=1.88, trees_power=0.962))
class AdaBoostOLM(DrawsAhead, MulticlassBooster):
    """Adaboost.OLM (paper 001, Algorithm 2): logistic costs, adaptive alpha, Hedge over the N experts.

    ``authors_gradient`` uses the authors' (wrong) alpha-derivative when a tree predicts the true label.

    >>> import numpy as np
    >>> model = AdaBoostOLM(n_features=2, n_labels=3, seed=0, num_learners=4)
    >>> x = np.array([0.5, 1.0])
    >>> model.predict_one(x) in (0, 1, 2)
    True
    >>> model.learn_one(x, 1)
    >>> set(model.alpha.round(3)) <= {1.414, -0.707}  # step 1.414 at t = 1; slope -1 if l^i = y, else 1/2
    True
    """

    name = "adaolm"
    authors_gradient = Param(bool, False, doc="the authors' alpha-derivative (wrong when l^i = y)")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.hedge = hedge_init(self.num_learners)
        self._draws = UniformDraws(self.rng)  # every draw from here on, so that a compiled pass draws the same
        self._authors_constants = self.weight_constants if self.authors_weights else np.empty(0)

    def _uniforms(self, n):
        return self._draws.take(n)

    def _weak_predictions(self, H, tie):
        """The chain l^i = argmin_l h^i . C(s^{i-1})[:, l], one learner after the other
        (:func:`~olb.learners.boosting.rounds.adaolm.adaolm_chain`)."""
        labels, states = adaolm_rounds.adaolm_chain(H, tie, self.alpha)
        return labels, states, self._weights_at(states[:-1])

    def _weights_at(self, states):
        return adaolm_rounds.logistic_cost_parts(states)[1] / (self.n_labels - 1)

    def _importance_weights(self, paper_weights):
        return adaolm_rounds.importance_weights(
            np.ascontiguousarray(paper_weights), self._authors_constants, AUTHORS_FIRST_WEIGHT, AUTHORS_WEIGHT_FLOOR
        )

    def _choose_expert(self) -> int:
        return int(rounds.hedge_index(self.hedge, self._draws.take(1)[0]))

    def _update_booster(self, r, y):
        eta = 2.0 * np.sqrt(2.0) / ((self.n_labels - 1) * np.sqrt(self.t))
        self.alpha, self.hedge = adaolm_rounds.adaolm_update(
            r.states, r.labels, r.experts, self.alpha, self.hedge, y, eta, self.authors_gradient
        )

    def predict_learn_pass(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Predict then learn the rows of ``X`` in order, exactly as ``predict_one`` then ``learn_one`` would one by
        one: their predicted classes (the VFDT forest: one compiled loop, ``adaolm_rounds.adaolm_pass``, the
        arrays grown and the uniforms drawn in between)."""
        weak = self.weak
        if not isinstance(weak, VFDTForest) or weak.importance_scale is not None:
            return super().predict_learn_pass(X, Y)
        X = np.ascontiguousarray(X, dtype=float)
        Y = np.ascontiguousarray(Y, dtype=np.int64)
        predictions = np.empty(len(Y), np.int64)
        draws = self._draws
        self._cache.clear()

        def rows_from(row: int) -> int:
            row, draws.position, weak.n_nodes, weak.n_slots, self.t = adaolm_rounds.adaolm_pass(
                weak.arrays, X, Y, self.alpha, self.hedge, draws.uniforms, draws.position, predictions, row,
                weak.n_nodes, weak.n_slots, self.t, TIE_TOLERANCE, self.weak_prediction == "argmax",
                self._authors_constants, AUTHORS_FIRST_WEIGHT, AUTHORS_WEIGHT_FLOOR, self.authors_gradient,
            )  # fmt: skip
            return row

        forest_pass(weak, draws, len(Y), 2 * self.num_learners * self.n_labels + 1, rows_from)
        return predictions
