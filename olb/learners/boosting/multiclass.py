"""Online multiclass boosting (paper 001): OnlineMBBM (Algorithm 1) and Adaboost.OLM (Algorithm 2).

Every round, the N weak learners (VFDTs) see x and give distributions h^i over the k classes. Learner i is
handed a cost matrix computed from the votes s^{i-1} of the learners before it (the true label is not
known yet), and its single-label prediction is the label of least expected cost under its distribution,
l^i = argmin_l sum_r h^i[r] C[r, l] (the paper leaves this to the weak learner; the authors' code does
this with the unnormalized matrix). The votes are s^i = s^{i-1} + alpha^i e_{l^i}, and expert i predicts
argmax s^i (all ties broken at random).

When the label y arrives, learner i is fed (x, y) with an importance weight read off C^i:

* OnlineMBBM: alpha = 1, C^i[r, l] = phi^r_{N-i}(s^{i-1} + e_l), the exact 0-1 potential of the biased
  uniform baseline (:func:`olb.learners.boosting.potentials.mbbm_cost_matrix`, memoized on the canonical state);
  the learner predicts with the normalized matrix D^i of eq. (5), the one Algorithm 1 passes to it;
  weight w^i = sum_l (C^i[y, l] - C^i[y, y]); the prediction is the last expert's (simple majority vote).
* Adaboost.OLM: C^i is the gradient of the multiclass logistic loss at s^{i-1} (eq. 9); weight
  w^i = -C^i[y, y] / (k - 1); alpha^i follows online gradient descent on the logistic loss with step
  2 sqrt(2) / ((k - 1) sqrt(t)), projected to [-2, 2]; the prediction is the expert drawn by Hedge,
  and Hedge's weights are v^i <- v^i exp(-1(yhat^i != y)).

Where the authors' code (``docs/authors_code.md``) differs from the paper, the paper is the
default and the code's choice a named option: ``authors_weights`` (their importance weights),
``authors_gradient`` (their alpha-derivative, wrong when l^i = y; section 5 item 8),
``authors_horizon`` (one more remaining draw in the potentials; item 9), ``weak_prediction="expected_cost"``
for OnlineMBBM (their unnormalized C^i) and ``potential_samples=100`` (their Monte Carlo potentials).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from olb.learners.base import OnlineLearner, Param, RoundCache
from olb.learners.boosting.common import (
    ALL_FEATURES_PARAM,
    NUM_LEARNERS,
    WEAK_LEARNER,
    GAMMA_PARAM,
    build_weak_learners,
    hedge_draw,
    hedge_init,
    rounds,
)
from olb.learners.boosting.potentials import baseline, mbbm_cost_matrix
from olb.learners.boosting.costs import ForestCost
from olb.registry import register

AUTHORS_WEIGHT_CONSTANTS = (5.0, 200.0)  # U[5, 200] per tree in the authors' multiclass driver
AUTHORS_FIRST_WEIGHT = 5.0  # Adaboost.OLM in the authors' code: tree 1 always gets weight 5
AUTHORS_WEIGHT_FLOOR = 1e-10
AUTHORS_MBBM_FACTOR = 0.1
_TIE_TOL = 1e-9


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
        # random tie breaks: a perturbation far below any real cost difference
        tie = self.rng.random((2, N, k)) * _TIE_TOL
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


# ---------------------------------------------------------------------------------------------------
# Adaboost.OLM
# ---------------------------------------------------------------------------------------------------


def logistic_cost_matrix(s: np.ndarray) -> np.ndarray:
    """The (k, k) cost matrix C of eq. (9) at the votes ``s``: row r is the gradient of L^r(s)."""
    G, rows = rounds.logistic_cost_parts(np.asarray(s, float)[None])
    C = G[0].copy()
    np.fill_diagonal(C, -rows[0])
    return C


def logistic_loss(s: np.ndarray, y: int) -> float:
    """Multiclass logistic loss L^y(s) = sum_{l != y} log(1 + exp(s[l] - s[y])) (eq. 8)."""
    s = np.asarray(s, float)
    return float(np.logaddexp(0.0, np.delete(s - s[y], y)).sum())


@register(cost=ForestCost(multiclass=True, forest_learning=1.88, trees_power=0.962))
class AdaBoostOLM(MulticlassBooster):
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

    def _weak_predictions(self, H, tie):
        """The chain l^i = argmin_l h^i . C(s^{i-1})[:, l], one learner after the other (:func:`adaolm_chain`)."""
        labels, states = rounds.adaolm_chain(H, tie, self.alpha)
        return labels, states, self._weights_at(states[:-1])

    def _weights_at(self, states):
        return rounds.logistic_cost_parts(states)[1] / (self.n_labels - 1)

    def _importance_weights(self, paper_weights):
        if not self.authors_weights:
            return paper_weights
        w = np.maximum(self.weight_constants * paper_weights, AUTHORS_WEIGHT_FLOOR)
        w[0] = AUTHORS_FIRST_WEIGHT
        return w

    def _choose_expert(self) -> int:
        return hedge_draw(self.hedge, self.rng)

    def _update_booster(self, r, y):
        eta = 2.0 * np.sqrt(2.0) / ((self.n_labels - 1) * np.sqrt(self.t))
        self.alpha, self.hedge = rounds.adaolm_update(
            r.states, r.labels, r.experts, self.alpha, self.hedge, y, eta, self.authors_gradient
        )


# ---------------------------------------------------------------------------------------------------
# OnlineMBBM
# ---------------------------------------------------------------------------------------------------


class MBBMCosts:
    """OnlineMBBM cost matrices C[r, l] = phi^r_n(s + e_l) for integer votes s, memoized.

    Potentials are shift invariant and permutation equivariant, so each (n, s) is reduced to a canonical
    state: the votes sorted in decreasing order, as gaps d = max(s) - s. A label with d > n + 1 cannot win
    (its row is all 1); with g the largest gap of a label that can, gaps are clipped at g + n + 2, beyond
    which a label can catch no label that can still win, even with one more vote. A decided state (leader ahead by n + 2
    or more) has C = 1 except the leader's row, 0, without computation. The remaining canonical states are
    computed exactly (``samples == 0``, :func:`~olb.learners.boosting.potentials.mbbm_cost_matrix`) or, for the
    benchmark against the authors' method, by Monte Carlo with ``samples`` draws per entry.

    Exact tables depend only on (k, gamma), so they are shared by every learner of the process
    (:meth:`shared`, the two most recent (k, gamma)); Monte Carlo tables belong to one learner (their values
    depend on its random draws). Both caches are bounded (cleared when full), which changes no value.
    """

    _shared: dict[tuple[int, float], MBBMCosts] = {}
    MAX_SHARED = 2  # exact tables kept per process (the most recently used (k, gamma))
    MAX_RAW_KEYS = 400_000  # the (n, raw votes) front cache is cleared when it grows past this
    MAX_CANONICAL_KEYS = 1_000_000  # ~0.8 KB each for k = 5; cleared when it grows past this
    ZERO = 1e-12

    def __init__(self, n_labels: int, gamma: float, samples: int = 0, rng: np.random.Generator | None = None):
        self.k, self.gamma, self.samples = int(n_labels), float(gamma), int(samples)
        if self.samples and rng is None:
            raise ValueError("MBBMCosts: Monte Carlo costs (samples > 0) need a random generator (rng)")
        self.rng = rng
        self._canonical: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._raw: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.computed = 0  # canonical states computed (misses)

    @classmethod
    def shared(cls, n_labels: int, gamma: float) -> MBBMCosts:
        key = (int(n_labels), float(gamma))
        costs = cls._shared.pop(key, None) or cls(n_labels, gamma)
        cls._shared[key] = costs  # most recent last
        while len(cls._shared) > cls.MAX_SHARED:
            del cls._shared[next(iter(cls._shared))]
        return costs

    def get(self, s: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(C, W, D) at integer votes ``s`` (int64, (k,)) with ``n`` draws to go.

        W[r] = sum_l (C[r, l] - C[r, r]) is the weight of Algorithm 1 (line 10) if the label is r, and
        D[r, l] = (C[r, l] - C[r, r]) / W[r] the normalized cost matrix of eq. (5) (a zero row where W[r] = 0).
        Differences below ``ZERO`` (the exact potentials' accuracy is ~1e-14) count as 0.
        """
        key = (n, s.tobytes())
        hit = self._raw.get(key)
        if hit is not None:
            return hit
        order = np.argsort(-s, kind="stable")
        gaps = s[order[0]] - s[order]
        live = gaps[gaps <= n + 1]  # labels that can still win; the others' rows are all 1
        np.minimum(gaps, live[-1] + n + 2, out=gaps)  # labels no live label can be caught by are alike
        can = self._canonical.get((n, gaps.tobytes()))
        if can is None:
            if len(self._canonical) >= self.MAX_CANONICAL_KEYS:
                self._canonical.clear()
            can = self._canonical[(n, gaps.tobytes())] = self._compute(gaps, n)
        inv = np.empty_like(order)
        inv[order] = np.arange(self.k)
        grid = np.ix_(inv, inv)
        out = (can[0][grid], can[1][inv], can[2][grid])
        if len(self._raw) >= self.MAX_RAW_KEYS:
            self._raw.clear()
        self._raw[key] = out
        return out

    def _compute(self, gaps: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = self.k
        if gaps[1] >= n + 2:  # decided: the leader wins whatever the remaining n votes do
            C = np.ones((k, k))
            C[0] = 0.0
            return C, np.zeros(k), np.zeros((k, k))
        self.computed += 1
        if self.samples:
            C = self._monte_carlo(-gaps.astype(float), n)
        else:
            C = mbbm_cost_matrix(-gaps.astype(float), n, self.gamma)
        diff = C - np.diag(C)[:, None]
        diff[diff < self.ZERO] = 0.0
        W = diff.sum(axis=1)
        D = np.divide(diff, W[:, None], out=np.zeros_like(diff), where=W[:, None] > 0)
        return C, W, D

    def _monte_carlo(self, s: np.ndarray, n: int) -> np.ndarray:
        """The authors' estimator: each phi^r_n(s + e_l) from ``samples`` multinomial draws (ties are errors)."""
        k, rng = self.k, self.rng
        assert rng is not None  # __init__ refuses samples without one
        C = np.empty((k, k))
        for r in range(k):
            X = rng.multinomial(n, baseline(k, [r], self.gamma), size=(k, self.samples))  # (l, M, k)
            totals = s + np.eye(k)[:, None, :] + X
            others = np.delete(totals, r, axis=2).max(axis=2)
            C[r] = (others >= totals[:, :, r]).mean(axis=1)
        return C


class _StateMemo:
    """The vote states one OnlineMBBM learner has met, as arrays for :func:`~olb.learners.boosting.rounds.mbbm_chain`:
    node v holds a state s (sum(s) votes cast, so learner sum(s) + 1 is next), its weights W and the matrix the
    learner predicts with (C or D, copies of :meth:`MBBMCosts.get`'s), and its successors s + e_l (-1: not met yet).
    Cleared when it would hold more than ~``MAX_BYTES`` (its arrays plus ~300 bytes of Python objects per node),
    which changes no value: ~100,000 states for k = 5, ~10,000 for k = 26.
    """

    MAX_BYTES = 64 * 2**20

    def __init__(self, costs: MBBMCosts, horizons: list[int], which: int, k: int):
        self.costs, self.horizons, self.which, self.k = costs, horizons, which, k
        self.max_nodes = max(1024, self.MAX_BYTES // (8 * (k * k + 3 * k) + 300))
        self.clear()

    def clear(self, capacity: int = 1024) -> None:
        k = self.k
        self.child = np.full((capacity, k), -1, np.int64)
        self.matrices = np.empty((capacity, k, k))
        self.weights = np.empty((capacity, k))
        self.states: list[np.ndarray] = []
        self.index: dict[bytes, int] = {}
        self.add(np.zeros(k, np.int64), self.horizons[0])  # node 0: no vote cast

    def add(self, s: np.ndarray, n: int) -> int:
        """The node of state ``s`` (int64, (k,); ``n`` = the horizon of learner sum(s) + 1), added if new."""
        key = s.tobytes()
        v = self.index.get(key)
        if v is not None:
            return v
        v = len(self.states)
        if v == self.child.shape[0]:
            self._grow()
        entry = self.costs.get(s, n)
        self.matrices[v] = entry[self.which]
        self.weights[v] = entry[1]
        self.states.append(s)
        self.index[key] = v
        return v

    def _grow(self) -> None:
        n = self.child.shape[0]
        self.child = np.concatenate([self.child, np.full((n, self.k), -1, np.int64)])
        self.matrices = np.concatenate([self.matrices, np.empty((n, self.k, self.k))])
        self.weights = np.concatenate([self.weights, np.empty((n, self.k))])

    def chain(self, H: np.ndarray, tie: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(labels, weights) of the N learners' chain of least-cost predictions, resumed at each state not met yet."""
        if len(self.states) >= self.max_nodes:
            self.clear()
        N, k = H.shape
        labels = np.empty(N, np.intp)
        weights = np.empty((N, k))
        i, v = 0, 0
        while True:
            i, v = rounds.mbbm_chain(H, tie, i, v, self.child, self.matrices, self.weights, labels, weights)
            if i == N:
                return labels, weights
            s = self.states[v].copy()
            s[labels[i]] += 1
            nxt = self.add(s, self.horizons[i + 1])
            self.child[v, labels[i]] = nxt
            i, v = i + 1, nxt


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
            None if self.potential_samples else _StateMemo(self.costs, self.horizons, self._matrix, self.n_labels)
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
