"""Binary relevance over river's Hoeffding tree, compiled: river's predicted label sets, faster.

river 0.26's ``multioutput.PerOutputClassifier(tree.HoeffdingTreeClassifier(grace_period, delta, tau,
split_criterion="info_gain", leaf_prediction="nba", nb_threshold=0))`` with its Gaussian splitter, one tree per
label. The per-example work runs in :mod:`olb.learners.stream_br.hoeffding_core`; what it reproduces of river:

- **leaves** keep river's class weights (in its dict order: ties go to the class the leaf saw first), and per
  feature it has seen (nonzero: river receives a row's nonzero entries) one Gaussian estimator per class
  (Welford's running mean and variance, min and max);
- **prediction** (naive-Bayes-adaptive): naive Bayes (log prior plus each present feature's Gaussian log
  density, river's ``do_naive_bayes_prediction``) when it has been right at least as often as the majority class
  on the examples the leaf learned, else the normalised class weights; relevant iff True is the more probable
  (False first on a tie), a label never seen relevant is never predicted, and nothing before the first example;
- **splits**: every ``grace_period`` of weight (not on an example that took a detour past a branch whose feature
  it lacks), unless the leaf is pure: ten split points between each feature's min and max, information gain from
  the Gaussian CDFs, the best against the second best (or the null split) by the Hoeffding bound with range
  log2(2) = 1, or a tie under ``tie_threshold``. A leaf whose majority holds more than 99% of its weight, or
  whose best split is no split, forgets its estimators instead (river deactivates it, and its memory manager
  reactivates it at once, empty). New leaves start from the split's class weights.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import OnlineLearner, Param, RoundCache
from olb.learners.linear.rows import nonzero_entries
from olb.learners.params import FEATURE_SCALING
from olb.learners.stream_br.tree_arrays import TreeArrays
from olb.learners.stream_br.costs import TreePerLabelCost
from olb.learners.registry import register

core = KernelModule("olb.learners.stream_br.hoeffding_core")

# pow's exponents, given to the kernels at run time so that they call the C library's pow, as river does
SQUARE, SQUARE_ROOT = 2.0, 0.5
MAX_SHARE_TO_SPLIT = 0.99  # river's max_share_to_split: a leaf with a larger majority does not split

# each node array's value for a node not yet used (a leaf without anything learned)
FRESH = {"feature": -1, "first_class": -1, "g_first": -1}


@register(cost=TreePerLabelCost())
class BRHT(OnlineLearner):
    """river's BR + Hoeffding tree with naive-Bayes-adaptive leaves (module docstring), every label's tree in one
    set of arrays.

    >>> ht = BRHT(2, 2, grace_period=10)
    >>> for i in range(40):
    ...     ht.learn_one(np.array([i % 4 + 1.0, 1.0]), np.array([i % 4 > 1, 1]))
    >>> ht.predict_one(np.array([4.0, 1.0]))["labels"].tolist(), ht.predict_one(np.array([1.0, 1.0]))["labels"].tolist()
    ([1, 1], [0, 1])
    """

    name = "br_ht"
    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    accepts_sparse = True
    grace_period = Param(int, 200, low=1, doc="weight a leaf learns between split attempts")
    split_confidence = Param(
        float, 1e-5, low=0.0, high=1.0, open_low=True, open_high=True, doc="Hoeffding bound's 1 - confidence"
    )
    tie_threshold = Param(float, 0.05, low=0.0, doc="Hoeffding bound below which a tie is split")
    feature_scaling = FEATURE_SCALING
    test_params: ClassVar[dict] = {"grace_period": 10}

    def __post_init__(self) -> None:
        super().__post_init__()
        q = self.n_labels
        self.n_nodes = q  # node k < q: label k's root, a leaf
        capacity = 2 * q
        self.trees = TreeArrays(
            root=np.arange(q, dtype=np.int64),
            classes=np.zeros((q, 2), dtype=bool),
            **self._fresh_nodes(capacity),
        )
        # the round's buffers: each label's leaf, detour, naive Bayes probabilities, predicted label and score
        self._buffers = (
            np.empty(q, dtype=np.int64),
            np.empty(q, dtype=bool),
            np.empty((q, 2)),
            np.empty(q, dtype=np.int8),
            np.empty(q),
        )
        self._round: RoundCache[tuple[np.ndarray, np.ndarray]] = RoundCache()

    def _fresh_nodes(self, n: int) -> dict[str, np.ndarray]:
        d = self.n_features
        shapes = {
            "feature": ((n,), np.int64),
            "threshold": ((n,), float),
            "left": ((n,), np.int64),
            "right": ((n,), np.int64),
            "weight": ((n, 2), float),
            "has_class": ((n, 2), bool),
            "first_class": ((n,), np.int64),
            "mc_correct": ((n,), float),
            "nb_correct": ((n,), float),
            "last_attempt": ((n,), float),
            "order": ((n, d), np.int64),
            "n_order": ((n,), np.int64),
            "g_first": ((n, d), np.int64),
            "g_has": ((n, 2, d), bool),
            **{
                name: ((n, 2, d), float)
                for name in ("g_n", "g_mean", "g_S", "g_min", "g_max", "g_var", "g_half_log_var")
            },
        }
        return {name: np.full(shape, FRESH.get(name, 0), dtype=dtype) for name, (shape, dtype) in shapes.items()}

    def _new_leaves(self, count: int) -> int:
        """The first of ``count`` fresh nodes, the arrays doubled when full."""
        first = self.n_nodes
        capacity = self.trees.feature.shape[0]
        if first + count > capacity:
            fresh = self._fresh_nodes(capacity)
            grown = {name: np.concatenate([getattr(self.trees, name), fresh[name]]) for name in fresh}
            self.trees = self.trees._replace(**grown)
        self.n_nodes += count
        return first

    def _row(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The row as a dense vector of its own, and its nonzero features."""
        if isinstance(x, np.ndarray):
            row = np.array(x, dtype=float).ravel()
            return row, np.flatnonzero(row)
        idx, val = nonzero_entries(x, False)
        row = np.zeros(self.n_features)
        row[idx] = val
        return row, idx

    def _round_state(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The row, its nonzero features; each label's leaf, whether it took a detour, river's naive Bayes there and
        the prediction, in the round's buffers."""
        row, nonzero = self._row(x)
        leaves, detoured, proba, labels, scores = self._buffers
        core.predict(self.trees, row, SQUARE, leaves, detoured, proba, labels, scores)
        return row, nonzero

    def predict_one(self, x):
        self._round.get(x, self._round_state)
        return {"scores": self._buffers[4].copy(), "labels": self._buffers[3].copy()}

    def learn_one(self, x, feedback) -> None:
        row, nonzero = self._round.get(x, self._round_state)
        self._round.clear()
        leaves, detoured, proba, _, _ = self._buffers
        attempts = np.empty(self.n_labels, dtype=bool)
        y = np.ascontiguousarray(feedback, dtype=np.int8)
        core.learn(self.trees, leaves, detoured, proba, row, nonzero, y, float(self.grace_period), attempts)
        if attempts.any():
            for leaf in leaves[attempts].tolist():
                self._attempt_split(leaf)

    def _attempt_split(self, leaf: int) -> None:
        """river's ``_attempt_to_split`` (module docstring), then the leaf's ``last_split_attempt_at``."""
        t = self.trees
        weights = [t.weight[leaf, c] for c in (t.first_class[leaf], 1 - t.first_class[leaf]) if t.has_class[leaf, c]]
        total = sum(weights)
        if sum(w != 0 for w in weights) >= 2:  # not pure
            if max(weights) / total > MAX_SHARE_TO_SPLIT:
                self._forget(leaf)
            else:
                self._split_or_forget(leaf, total)
        if self.trees.feature[leaf] < 0:  # not split (a split may have grown the arrays)
            self.trees.last_attempt[leaf] = total

    def _split_or_forget(self, leaf: int, total: float) -> None:
        t = self.trees
        n_order = int(t.n_order[leaf])
        merits, values = np.empty(n_order), np.empty(n_order)
        core.split_merits(t, leaf, SQUARE_ROOT, merits, values)
        suggestions = [-math.inf, *merits.tolist()]  # the null split first, then each splitter's best
        if len(suggestions) < 2:
            self._forget(leaf)
            return
        best_merit = max(suggestions)
        best = max(i for i, merit in enumerate(suggestions) if merit == best_merit)  # a stable sort's last
        second = max(merit for i, merit in enumerate(suggestions) if i != best)
        bound = math.sqrt((1.0 * 1.0 * math.log(1.0 / self.split_confidence)) / (2.0 * total))
        if not (best_merit - second > bound or bound < self.tie_threshold):
            return
        if best_merit == -math.inf:  # the null split wins
            self._forget(leaf)
            return
        feature, value = int(t.order[leaf, best - 1]), float(values[best - 1])
        stats, has = np.empty((2, 2)), np.empty((2, 2), dtype=bool)
        core.children_stats(t, leaf, feature, SQUARE_ROOT, value, stats, has)
        first = self._new_leaves(2)
        t = self.trees
        att_first = int(t.g_first[leaf, feature])
        for child, side in ((first, 0), (first + 1, 1)):
            t.weight[child] = np.where(has[side], stats[side], 0.0)
            t.has_class[child] = has[side]
            order = [c for c in (att_first, 1 - att_first) if has[side, c]]
            t.first_class[child] = order[0] if order else -1
            t.last_attempt[child] = sum(stats[side, c] for c in order)
        t.feature[leaf], t.threshold[leaf], t.left[leaf], t.right[leaf] = feature, value, first, first + 1

    def _forget(self, leaf: int) -> None:
        """The leaf without its splitters (river's deactivation, then its reactivation, empty)."""
        self.trees.n_order[leaf] = 0
        self.trees.g_first[leaf] = -1
        self.trees.g_has[leaf] = False
