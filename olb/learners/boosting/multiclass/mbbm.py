"""OnlineMBBM (paper 001, Algorithm 1): the booster of the exact 0-1 potentials, its costs memoized
(:mod:`~olb.learners.boosting.multiclass.mbbm_memo`)."""

from __future__ import annotations

import numpy as np

from olb.learners.base import Param
from olb.learners.boosting.common import GAMMA_PARAM
from olb.learners.boosting.costs import ForestCost
from olb.learners.boosting.multiclass.booster import AUTHORS_WEIGHT_FLOOR, MulticlassBooster
from olb.learners.boosting.multiclass.mbbm_memo import MBBMCosts, StateMemo
from olb.learners.registry import register

AUTHORS_MBBM_FACTOR = 0.1


@register(cost=ForestCost(multiclass=True, forest_learning=8.41, trees_power=2.05, gamma_scale=0.131, gamma_power=2.43))
class OnlineMBBM(MulticlassBooster):
    """OnlineMBBM (paper 001, Algorithm 1): 0-1 loss potentials with edge gamma, alpha = 1, majority vote.

    Learner i (1-based) gets C^i[r, l] = phi^r_{N-i}(s^{i-1} + e_l) (eq. 4), predicts the label of least
    expected normalized cost D^i (eq. 5; ``weak_prediction``) and is fed weight
    w^i = sum_l (C^i[y, l] - C^i[y, y]) (Algorithm 1, line 10). ``authors_horizon`` uses N - i + 1 draws as
    the authors' code does; ``potential_samples`` > 0 replaces the exact potentials by the authors'
    Monte Carlo estimate with that many samples (benchmarks only).

    Why D and not C: near a decided vote the entries of C differ by tiny amounts, and the row of the
    trailing label (where a vote is pivotal) outweighs the leader's row by orders of magnitude, so the
    expected C-cost sends trees' votes to the runner-up even when the tree believes the leader; D puts
    every row on the same scale (see docs/multiclass.md).

    >>> import numpy as np
    >>> model = OnlineMBBM(n_features=2, n_labels=3, seed=0, num_learners=4, gamma=0.1)
    >>> x = np.array([0.5, 1.0])
    >>> model.predict_one(x) in (0, 1, 2)
    True
    >>> model.learn_one(x, 1)
    >>> model.alpha
    array([1., 1., 1., 1.])
    """

    name = "onlinembbm"
    initial_alpha = 1.0
    gamma = GAMMA_PARAM
    authors_horizon = Param(
        bool, False, doc="N - i + 1 remaining draws for learner i (authors' code) instead of the paper's N - i"
    )
    weak_prediction = Param(
        str,
        "normalized_cost",
        choices=("normalized_cost", "expected_cost", "argmax"),
        doc="a tree's single label: least expected cost under the normalized D^i of "
        "eq. (5) that Algorithm 1 passes to the learner, under the raw C^i (authors' "
        "code), or its most probable class",
    )
    potential_samples = Param(
        int,
        0,
        low=0,
        doc="0: exact potentials; M > 0: the authors' Monte Carlo with M samples per potential (for benchmarks)",
    )
    normalize_weights = Param(
        bool,
        False,
        doc="divide learner i's weight by the largest weight it has "
        "been sent so far (an online estimate of the paper's w^{i*}), so every "
        "learner sees weights in (0, 1]",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.potential_samples:
            self.costs = MBBMCosts(self.n_labels, self.gamma, self.potential_samples, self.rng)
        else:
            self.costs = MBBMCosts.shared(self.n_labels, self.gamma)
        shift = 0 if self.authors_horizon else 1
        self.horizons = [self.num_learners - i - shift for i in range(self.num_learners)]
        self.max_weight = np.zeros(self.num_learners)
        self._matrix = 2 if self.weak_prediction == "normalized_cost" else 0
        # exact potentials: the chain is compiled over a memo of states; Monte Carlo keeps the Python loop, whose
        # calls to ``costs.get`` (and so its random draws) the memo would not reproduce once a cache is cleared
        self._memo = (
            None if self.potential_samples else StateMemo(self.costs, self.horizons, self._matrix, self.n_labels)
        )

    def _weak_predictions(self, H, tie):
        if self._memo is not None:
            labels, weights = self._memo.chain(np.ascontiguousarray(H, float), tie)
            return labels, self._states(labels), weights
        N, k = H.shape
        s = np.zeros(k, np.int64)
        labels = np.empty(N, np.intp)
        weights = np.empty((N, k))
        get, which = self.costs.get, self._matrix
        for i, n in enumerate(self.horizons):
            entry = get(s, n)
            weights[i] = entry[1]
            label = int((H[i] @ entry[which] + tie[i]).argmin())
            labels[i] = label
            s[label] += 1
        return labels, self._states(labels), weights

    def _weights_at(self, states):
        return np.stack([self.costs.get(s.astype(np.int64), n)[1] for s, n in zip(states, self.horizons)])

    def _importance_weights(self, paper_weights):
        if self.normalize_weights:
            np.maximum(self.max_weight, paper_weights, out=self.max_weight)
            paper_weights = np.divide(
                paper_weights, self.max_weight, out=np.zeros_like(paper_weights), where=self.max_weight > 0
            )
        if not self.authors_weights:
            return paper_weights
        scaled = AUTHORS_MBBM_FACTOR * self.weight_constants * paper_weights / (self.n_labels - 1)  # type: ignore[operator]  # set with authors_weights
        return np.maximum(scaled, AUTHORS_WEIGHT_FLOOR)

    def _choose_expert(self) -> int:
        return self.num_learners - 1

    def _update_booster(self, r, y):
        pass  # alpha stays 1; no other booster state
