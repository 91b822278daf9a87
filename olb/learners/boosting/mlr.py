"""Online boosting for multi-label ranking (paper 000): the Algorithm 1 schema, Ada.OLMR and OnlineBMR.

Every round, the N weak learners predict distributions h^i over the k labels, the experts are the
cumulative votes s^j = sum_{i<=j} alpha^i h^i, and the booster outputs the score vector of one expert.
When the relevant set Y arrives, each learner i gets a cost vector c^i computed from s^{i-1} and is fed
every relevant label l with importance weight max(c^i) - c^i[l] (paper 000, section 4).
"""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import OnlineLearner, Param, RoundCache
from olb.learners.boosting.common import (
    AUTHORS_WEIGHTS,
    NUM_COVARIATES,
    NUM_LEARNERS,
    WEAK_LEARNER,
    GAMMA_PARAM,
    MARGIN_PARAM,
    build_weak_learners,
    hedge_draw,
    hedge_init,
    rounds,
)
from olb.learners.boosting.potentials import PairwisePotential
from olb.learners.boosting.costs import ForestCost
from olb.learners.registry import register

mlr_rounds = KernelModule("olb.learners.boosting.rounds.mlr")

AUTHORS_IMPORTANCE_SCALE = (3.0, 10.0)


class MLRBooster(OnlineLearner):
    """Algorithm 1 of paper 000; subclasses choose the feedback, the cost vectors, the weights alpha and the expert."""

    task = "multilabel"
    initial_alpha = 0.0
    num_learners = NUM_LEARNERS
    num_covariates = NUM_COVARIATES
    weak_learner = WEAK_LEARNER
    authors_weights = AUTHORS_WEIGHTS
    test_params = {"num_learners": 3}

    def __post_init__(self) -> None:
        super().__post_init__()
        scale = AUTHORS_IMPORTANCE_SCALE if self.authors_weights else None
        self.weak = build_weak_learners(
            self.weak_learner, self.num_learners, self.n_features, self.n_labels, self.num_covariates, self.rng, scale
        )
        self.alpha = np.full(self.num_learners, self.initial_alpha)
        self.t = 0
        self._cache: RoundCache[tuple[np.ndarray, np.ndarray]] = RoundCache()

    def _experts(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weak predictions H (N, k) and the states s^0..s^N (N + 1, k) of the experts."""
        return self._cache.get(x, self._compute_experts)

    def _compute_experts(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        H = self.weak.predict_proba(x)
        return H, rounds.expert_states(self.alpha, H)

    def predict_one(self, x: np.ndarray) -> np.ndarray:
        """The chosen expert's score vector (k,)."""
        _, states = self._experts(x)
        return states[1 + self._choose_expert()].copy()

    def _choose_expert(self) -> int:
        raise NotImplementedError


class FullFeedbackBooster(MLRBooster):
    """Paper 000's boosters: they learn from the whole relevance vector (paper 004's learn from top-k feedback)."""

    def learn_one(self, x: np.ndarray, y: np.ndarray) -> None:
        """Update with the relevance vector ``y`` (k,) of 0/1."""
        H, states = self._experts(x)
        self._cache.clear()
        self.t += 1
        relevant = np.asarray(y, bool)
        if relevant.all() or not relevant.any():
            return  # every pairwise loss and cost is 0: nothing to learn
        self.weak.learn(x, self._learn_round(H, states, relevant))

    def _learn_round(self, H: np.ndarray, states: np.ndarray, relevant: np.ndarray) -> np.ndarray:
        """Update the booster's state and return the importance weights (N, k): learner i is fed each relevant
        label l with weight max(c^i) - c^i[l], its cost vector c^i computed from s^{i-1}."""
        raise NotImplementedError


@register(cost=ForestCost())
class AdaOLMR(FullFeedbackBooster):
    """Ada.OLMR (paper 000, Algorithm 3): logistic-loss costs, adaptive weights, Hedge over experts.

    Costs are the gradient of the logistic surrogate at s^{i-1} (eq. 8); each weight alpha^i follows
    online gradient descent on f(alpha) = L_log(s^{i-1} + alpha h^i) with step 1/sqrt(t), projected to
    [-2, 2] (f'(alpha) = c^{i+1} . h^i); the expert is drawn with probability proportional to
    v^i, and v^i <- v^i exp(-L_rnk(s^i)).

    >>> import numpy as np
    >>> model = AdaOLMR(n_features=4, n_labels=3, seed=0, num_learners=5)
    >>> x, y = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1, 0, 0])
    >>> model.predict_one(x).shape
    (3,)
    >>> model.learn_one(x, y)  # uniform first predictions: c . h = 0, so alpha stays 0
    >>> model.alpha
    array([0., 0., 0., 0., 0.])
    >>> model.learn_one(x, y)
    >>> model.alpha.round(3)
    array([0.071, 0.071, 0.071, 0.071, 0.071])
    """

    name = "adaolmr"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.hedge = hedge_init(self.num_learners)

    def _choose_expert(self) -> int:
        return hedge_draw(self.hedge, self.rng)

    def _learn_round(self, H, states, relevant):
        weights, self.alpha, self.hedge = mlr_rounds.adaolmr_round(H, states, relevant, self.alpha, self.hedge, self.t)
        return weights


@register(cost=ForestCost(forest_learning=1.13, trees_power=0.999, gamma_scale=0.0738, gamma_power=1.15))
class OnlineBMR(FullFeedbackBooster):
    """OnlineBMR (paper 000, Algorithm 2): potential-based costs, alpha = 1, the last expert predicts.

    c^i[l] = phi^{N-i}(s^{i-1} + e_l) (eq. 2), with the potential of the hinge loss under the baseline
    u_gamma^Y computed exactly (:class:`~olb.learners.boosting.potentials.PairwisePotential`), not by Monte Carlo.
    ``margin`` is the hinge margin: 1 as the paper defines it, 0 as the authors' code computes it.
    Where gamma |Y| > 1 the baseline is not a distribution; ``invalid_baseline`` says what happens then:
    ``"cap"`` uses gamma' = 1/|Y| for that example, ``"raise"`` stops with an error.

    >>> import numpy as np
    >>> model = OnlineBMR(n_features=4, n_labels=3, seed=0, num_learners=5, gamma=0.1)
    >>> x, y = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1, 0, 0])
    >>> model.predict_one(x)
    array([1.66666667, 1.66666667, 1.66666667])
    >>> model.learn_one(x, y)
    >>> model.predict_one(x).round(3)
    array([2.547, 1.226, 1.226])
    """

    name = "onlinebmr"
    initial_alpha = 1.0
    gamma = GAMMA_PARAM
    margin = MARGIN_PARAM
    invalid_baseline = Param(str, "cap", choices=("cap", "raise"), doc="rule where gamma |Y| > 1")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.potential = PairwisePotential(
            self.num_learners, self.n_labels, self.gamma, margin=self.margin, invalid_baseline=self.invalid_baseline
        )

    def _choose_expert(self) -> int:
        return self.num_learners - 1

    def _learn_round(self, H, states, relevant):  # one compiled call; alpha stays 1, no other state
        tables = self.potential.law_tables(int(relevant.sum()))
        return mlr_rounds.onlinebmr_round(states, relevant, *tables, self.potential.margin)
