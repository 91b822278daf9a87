"""Online boosting for multi-label ranking with top-k feedback (paper 004): TopOpt and TopAda.

Paper 004 (Raman et al. 2020) runs paper 000's boosting schema (:class:`~olb.learners.boosting.mlr.MLRBooster`:
N weak learners, experts s^j = sum_{i<=j} alpha^i h^i, cost vectors, relevant labels fed with importance
weight max(c) - c[l]) when the learner only learns, for the k labels it ranked on top, whether each is
relevant (Algorithm 1):

1. the chosen expert's ranking sigma(s^{i_t}) is randomized (:mod:`olb.learners.boosting.exploration`: ``uniform``
   or ``single_swap``); the explored ranking r~ is the prediction (``predict_one`` returns a tie-free score
   vector whose ranking is r~, so the protocol scores the rank loss of r~ and reads its top k);
2. the protocol answers with a :class:`~olb.feedback.TopKFeedback` (top-k labels of r~ and
   their relevance; never the label set or its size);
3. every pairwise quantity (potentials, logistic loss, rank loss) is estimated by eq. 1: a sum over the
   observed (relevant, irrelevant) pairs, each weighted by 1 / P(both in the top k), with the exact P of
   the scheme (optionally clipped to [0.005, 0.995], App. C.2).

Only observed relevant labels are fed to the weak learners (the others are unknown), with weight
``weight_scale * (max c - c[l])`` (``weight_scale`` = 1 is the paper; see docs/topk.md for why the 101-label
experiments use 0.01 for TopAda).

:class:`TopOpt` (Top-k BBM, Algorithm 2): alpha = 1, the last expert predicts, c^i[l] = Phi-hat^{N-i}(s^{i-1} + e_l)
with the exact surrogate potential of :class:`~olb.learners.boosting.potentials.TopkPairPotential` (unweighted hinge,
baseline u_a^gamma). :class:`TopAda` (Top-k Adaptive, Algorithm 3): costs are the gradient of the estimated
unweighted logistic loss, alpha follows projected SGD with step 8 rho sqrt(2) / (m^2 sqrt(t)) (the alpha
gradient optionally clipped to [-1, 1], App. C.2) and Hedge weighs the experts by the estimated rank loss.
"""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import Param, StreamShape
from olb.learners.boosting.common import GAMMA_PARAM, MARGIN_PARAM, hedge_draw, hedge_init, rounds
from olb.feedback import TopKFeedback, observed_pairs, ranking, ranking_scores
from olb.learners.boosting.exploration import EXPLORATIONS, importance_weights, make_exploration
from olb.learners.boosting.mlr import MLRBooster
from olb.learners.boosting.potentials import TopkPairPotential
from olb.learners.boosting.costs import TopKForestCost
from olb.learners.registry import register

topk_rounds = KernelModule("olb.learners.boosting.rounds.topk")


class TopKBooster(MLRBooster):
    """Algorithm 1 of paper 004 on top of paper 000's booster; subclasses give costs, alpha and the expert."""

    feedback = "topk"
    k = Param(int, 3, low=2, doc="number of top-ranked labels whose relevance is revealed (k < number of labels)")
    rho = Param(float, 0.02, low=0.0, high=1.0, open_low=True, open_high=True, doc="exploration rate")
    exploration = Param(
        str,
        "uniform",
        choices=tuple(EXPLORATIONS),
        doc="randomization: uniform permutation (Sec. 2.2) or two single swaps (App. B.1, k >= 3, rho < 0.25)",
    )
    clip_probabilities = Param(
        bool,
        True,
        doc="clip pair probabilities to [0.005, 0.995] before 1/P (paper 004, App. C.2; biased but tames the variance)",
    )
    weight_scale = Param(
        float,
        1.0,
        low=0.0,
        open_low=True,
        doc="constant factor on the importance weights sent to the weak learners (not in the "
        "paper; relative weights are unchanged, it sets how fast the VFDTs grow, see "
        "docs/topk.md: 0.01 keeps TopAda's trees within memory on 101-label data)",
    )
    test_params = {"num_learners": 3, "k": 2}

    @classmethod
    def check_params(cls, params: dict, shape: StreamShape) -> list[str]:
        """k below the number of labels; the single-swap scheme's k >= 3 and rho < 0.25 (paper 004, App. B.1)."""
        problems = super().check_params(params, shape)
        k, rho, m = params["k"], params["rho"], shape.n_labels
        if k >= m:
            problems.append(
                f"k={k} must be smaller than the number of labels ({m}); top-k feedback with "
                "k >= the number of labels would reveal the whole label set"
            )
        if params["exploration"] == "single_swap" and (k < 3 or rho >= 0.25):
            problems.append(
                f"exploration='single_swap' needs k >= 3 and rho < 0.25 (paper 004, App. B.1); got k={k}, rho={rho}"
            )
        return problems

    def __post_init__(self) -> None:
        super().__post_init__()
        self.explorer = make_exploration(self.exploration, self.n_labels, self.k, self.rho)
        # what predict_one decided: (H, states, in_top of sigma(s), explored top k)
        self._round: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def predict_one(self, x: np.ndarray) -> np.ndarray:
        """Scores of the explored ranking r~ (tie-free: m for its first label down to 1 for its last)."""
        H, states = self._experts(x)
        order = ranking(states[1 + self._choose_expert()])
        explored = self.explorer.explore(order, self.rng)
        in_top = np.zeros(self.n_labels, bool)
        in_top[order[: self.k]] = True
        self._round = (H, states, in_top, explored[: self.k])
        return ranking_scores(explored)

    def learn_one(self, x: np.ndarray, feedback: TopKFeedback) -> None:
        """Update from the relevance of the top k labels of the ranking the last ``predict_one`` output."""
        if not isinstance(feedback, TopKFeedback):
            raise TypeError(f"{self.name} learns from TopKFeedback, got {type(feedback).__name__}")
        if self._round is None:
            raise RuntimeError(f"{self.name}: learn_one needs the ranking of a preceding predict_one")
        H, states, in_top, top = self._round
        if not np.array_equal(feedback.labels, top):
            raise ValueError(
                f"{self.name}: feedback on labels {feedback.labels.tolist()} but the ranking "
                f"output had top {self.k} labels {top.tolist()}"
            )
        self._round = None
        self._cache.clear()
        self.t += 1
        a, b = observed_pairs(feedback)
        if a.size == 0:
            return  # no observed (relevant, irrelevant) pair: every estimate and cost is 0
        w = importance_weights(self.explorer.pair_probabilities(in_top, a, b), self.clip_probabilities)
        fed = np.zeros(self.n_labels, bool)
        fed[feedback.labels[feedback.relevant]] = True
        self.weak.learn(x, self._learn_round(H, states, a, b, w, fed))

    def _learn_round(self, H, states, a, b, w, fed) -> np.ndarray:
        """The booster's update from the observed pairs; returns the weak learners' importance weights (N, m)."""
        raise NotImplementedError


@register(
    cost=TopKForestCost(
        forest_learning=0.485, trees_power=0.611, gamma_scale=0.182, gamma_power=1.58, weight_power=0.599
    )
)
class TopOpt(TopKBooster):
    """Top-k BBM (paper 004, Algorithm 2): potential costs from observed pairs, alpha = 1, last expert.

    c-hat^i[l] = sum_{observed (a, b)} Lambda^{a,b,N-i}(s^{i-1} + e_l) / P(a, b), Lambda the exact pair
    potential of the hinge (margin + s[b] - s[a])_+ under N - i draws from u_a^gamma. ``margin`` is 1 in
    the paper, 0 in the authors' code.

    >>> import numpy as np
    >>> from olb.feedback import TopKFeedback
    >>> model = TopOpt(n_features=2, n_labels=4, seed=0, num_learners=3, gamma=0.2, k=2, rho=0.1)
    >>> x = np.array([0.5, -1.0])
    >>> scores = model.predict_one(x)
    >>> model.learn_one(x, TopKFeedback.from_prediction(scores, np.array([0, 1, 0, 0]), k=2))
    >>> model.t
    1
    """

    name = "topopt"
    initial_alpha = 1.0
    gamma = GAMMA_PARAM
    margin = MARGIN_PARAM

    def __post_init__(self) -> None:
        super().__post_init__()
        self.potential = TopkPairPotential(self.num_learners, self.n_labels, self.gamma, margin=self.margin)

    def _choose_expert(self) -> int:
        return self.num_learners - 1

    def _learn_round(self, H, states, a, b, w, fed):  # alpha stays 1 and there is no other booster state
        return rounds.fed_weights(self._cost_vectors(states, a, b, w), fed, self.weight_scale)

    def _cost_vectors(self, states, a, b, w):
        """c-hat^1..c-hat^N (N, m), from s^0..s^{N-1} with horizons N - i."""
        N = self.num_learners
        return self.potential.cost_vectors(states[:-1], a, b, np.arange(N - 1, -1, -1), w)


@register(cost=TopKForestCost(forest_learning=0.818, trees_power=1.06, weight_power=0.726))
class TopAda(TopKBooster):
    """Top-k Adaptive (paper 004, Algorithm 3): estimated logistic gradients, SGD on alpha, Hedge.

    With the observed pairs (a, b) and weights w = 1/P(a, b):
    c-hat^i = grad L-hat_log(s^{i-1}), L-hat_log(s) = sum w log(1 + exp(s[b] - s[a])) (unnormalized: |R| is
    unknown); alpha^i <- clip(alpha^i - eta_t g^i, -2, 2) with g^i = c-hat^{i+1} . h^i the derivative of
    L-hat_log(s^{i-1} + alpha h^i) (clipped to [-1, 1] when ``clip_gradient``) and
    eta_t = 8 rho sqrt(2) / (m^2 sqrt(t)); Hedge v^i <- v^i exp(-L-hat_rnk(s^i)), L-hat_rnk = sum w 1(s[b] >= s[a]).

    >>> import numpy as np
    >>> from olb.feedback import TopKFeedback
    >>> model = TopAda(n_features=2, n_labels=4, seed=0, num_learners=3, k=2, rho=0.1)
    >>> x = np.array([0.5, -1.0])
    >>> scores = model.predict_one(x)
    >>> feedback = TopKFeedback.from_prediction(scores, np.array([1, 0, 0, 0]), k=2)
    >>> feedback  # all scores tie at first: sigma keeps labels 0, 1 on top (no exploration this round)
    TopKFeedback(labels=[0, 1], relevant=[True, False])
    >>> model.learn_one(x, feedback)
    >>> model._gradients[0]  # grad of w log(1 + exp(s[1] - s[0])) at s = 0; w = 1/P, P = 0.9 + 0.1 * 2/12
    array([-0.54545455,  0.54545455,  0.        ,  0.        ])
    """

    name = "topada"
    clip_gradient = Param(bool, True, doc="clip the alpha-gradient estimate to [-1, 1] (paper 004, App. C.2)")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.hedge = hedge_init(self.num_learners)
        self.step = 8.0 * self.rho * np.sqrt(2.0) / self.n_labels**2  # eta_t = step / sqrt(t)
        self._gradients = None

    def _choose_expert(self) -> int:
        return hedge_draw(self.hedge, self.rng)

    def _learn_round(self, H, states, a, b, w, fed):
        """One compiled call (:func:`~olb.learners.boosting.rounds.topk.topada_round`): the costs c-hat^i = grad
        L-hat_log(s^{i-1}), the step on alpha, Hedge on the estimated rank losses, the importance weights."""
        weights, self.alpha, self.hedge, self._gradients = topk_rounds.topada_round(
            H, states, a, b, w, self.alpha, self.hedge, self.step, self.t, self.clip_gradient, fed, self.weight_scale
        )
        return weights
