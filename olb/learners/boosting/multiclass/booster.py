"""The skeleton of paper 001's two boosters (:class:`MulticlassBooster`): one round of the N weak learners'
votes, the prediction of the chosen expert and the update, the parts that differ left to OnlineMBBM
(:mod:`~olb.learners.boosting.multiclass.mbbm`) and Adaboost.OLM (:mod:`~olb.learners.boosting.multiclass.adaolm`),
and the authors' constants both use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from olb.learners.base import OnlineLearner, Param, RoundCache
from olb.learners.boosting.common import (
    ALL_FEATURES_PARAM,
    NUM_LEARNERS,
    WEAK_LEARNER,
    build_weak_learners,
    rounds,
)

AUTHORS_WEIGHT_CONSTANTS = (5.0, 200.0)  # U[5, 200] per tree in the authors' multiclass driver
AUTHORS_WEIGHT_FLOOR = 1e-10
TIE_TOLERANCE = 1e-9  # random tie breaks: a perturbation far below any real cost difference


@dataclass
class _Round:
    """One example's pass through the N learners (recomputed only if x changes)."""

    H: np.ndarray  # (N, k) tree distributions
    labels: np.ndarray  # (N,) weak single-label predictions l^i
    states: np.ndarray  # (N + 1, k) votes s^0..s^N
    experts: np.ndarray  # (N,) argmax s^i, i = 1..N
    weights: np.ndarray  # (N, k): learner i's importance weight if the label is r (paper's rule)


class MulticlassBooster(OnlineLearner):
    """The shared skeleton of paper 001's two boosters; subclasses choose costs, alpha and the expert."""

    task = "multiclass"
    outputs = ("class",)
    default_protocol = "prequential_last20"
    predicts_passes = True  # a prequential phase in blocks (OnlineLearner.predict_learn_pass): no work per row
    initial_alpha = 0.0
    num_learners = NUM_LEARNERS
    num_covariates = ALL_FEATURES_PARAM
    weak_learner = WEAK_LEARNER
    authors_weights = Param(
        bool,
        False,
        doc="the authors' importance weights instead of the paper's: a "
        "per-tree constant from U[5, 200] times the paper's weight / (k - 1) (times 0.1 "
        "for OnlineMBBM), weight 5 for Adaboost.OLM's first tree, floor 1e-10",
    )
    weak_prediction = Param(
        str,
        "expected_cost",
        choices=("expected_cost", "argmax"),
        doc="a tree's single label: least expected cost under C^i (authors' code) or its most probable class",
    )
    test_params = {"num_learners": 3}

    def __post_init__(self) -> None:
        super().__post_init__()
        N = self.num_learners
        self.weak = build_weak_learners(
            self.weak_learner, N, self.n_features, self.n_labels, self.num_covariates, self.rng
        )
        self.weight_constants = self.rng.uniform(*AUTHORS_WEIGHT_CONSTANTS, size=N) if self.authors_weights else None
        self.alpha = np.full(N, self.initial_alpha)
        self.t = 0
        self._cache: RoundCache[_Round] = RoundCache()

    # ------------------------------------------------------------------ one round
    def _round(self, x: np.ndarray) -> _Round:
        return self._cache.get(x, self._compute_round)

    def _compute_round(self, x: np.ndarray) -> _Round:
        N, k = self.num_learners, self.n_labels
        H = self.weak.predict_proba(x)
        tie = self._uniforms(2 * N * k).reshape(2, N, k) * TIE_TOLERANCE
        if self.weak_prediction == "argmax":
            labels = (H + tie[0]).argmax(axis=1)
            states = self._states(labels)
            weights = self._weights_at(states[:-1])
        else:
            labels, states, weights = self._weak_predictions(H, tie[0])
        experts = (states[1:] + tie[1]).argmax(axis=1)
        return _Round(H, labels, states, experts, weights)

    def _states(self, labels: np.ndarray) -> np.ndarray:
        """Votes s^0..s^N for the weak predictions ``labels`` under the current alpha."""
        return rounds.vote_states(labels, self.alpha, self.n_labels)

    def _uniforms(self, n: int) -> np.ndarray:
        """The round's next ``n`` uniform draws (``rng.random``)."""
        return self.rng.random(n)

    def predict_one(self, x: np.ndarray) -> int:
        """The predicted class index."""
        r = self._round(x)
        return int(r.experts[self._choose_expert()])

    def learn_one(self, x: np.ndarray, y) -> None:
        """Update with the class index ``y``: every tree is fed (x, y) with its importance weight."""
        r = self._round(x)
        self._cache.clear()
        y = int(y)
        self.t += 1
        w = self._importance_weights(r.weights[:, y])
        weights = np.zeros((self.num_learners, self.n_labels))
        weights[:, y] = w
        self.weak.learn(x, weights)
        self._update_booster(r, y)

    # ------------------------------------------------------------------ the parts that differ
    def _weak_predictions(self, H: np.ndarray, tie: np.ndarray):
        """(labels, states, weights) of the round: the chain of least-expected-cost predictions."""
        raise NotImplementedError

    def _weights_at(self, states: np.ndarray) -> np.ndarray:
        """(N, k) importance weights of the learners whose preceding votes are ``states`` (N, k)."""
        raise NotImplementedError

    def _importance_weights(self, paper_weights: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _choose_expert(self) -> int:
        raise NotImplementedError

    def _update_booster(self, r: _Round, y: int) -> None:
        raise NotImplementedError
