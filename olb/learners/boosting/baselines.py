"""The baselines of paper 001's Table 1: the best of N online VFDTs, and Oza's online boosting.

Both use the same weak learners as the boosters (:func:`olb.learners.boosting.common.build_weak_learners`:
by default the vectorized VFDT forest with per-tree random parameters, every tree on all features).
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import OnlineLearner, RoundCache
from olb.learners.boosting.common import (
    ALL_FEATURES_PARAM,
    NUM_LEARNERS,
    WEAK_LEARNER,
    DrawsAhead,
    UniformDraws,
    build_weak_learners,
    forest_pass,
)
from olb.weak import VFDTForest
from olb.weak.river_adapter import river_hoeffding_tree
from olb.learners.boosting.costs import ForestCost
from olb.learners.registry import register

oza_rounds = KernelModule("olb.learners.boosting.rounds.oza")


class _TreeBaseline(OnlineLearner):
    """What paper 001's two tree baselines declare alike: multiclass, a class output, N trees."""

    task = "multiclass"
    outputs = ("class",)
    default_protocol = "prequential_last20"
    num_learners = NUM_LEARNERS
    num_covariates = ALL_FEATURES_PARAM
    weak_learner = WEAK_LEARNER
    test_params = {"num_learners": 3}


@register(cost=ForestCost(multiclass=True, forest_learning=0.442, trees_power=1.45))
class BestVFDT(_TreeBaseline):
    """ "Best decision tree" (paper 001, Table 1): N VFDTs with random parameters, each trained alone.

    Every tree is fed each example with weight 1 and predicts the argmax of its leaf distribution (the
    authors' ``utils.train_vfdt``/``test_vfdt``). The paper reports the best of the N trees in hindsight,
    which no online learner can predict with; this learner predicts with the tree that has been right
    most often so far (follow the leader, ties to the lower index), and :meth:`stream_report` gives the
    paper's figure, the best single tree's accuracy over the last ``n_scored`` examples.

    >>> import numpy as np
    >>> model = BestVFDT(n_features=2, n_labels=3, seed=0, num_learners=5)
    >>> x = np.array([0.5, 1.0])
    >>> model.predict_one(x), model.learn_one(x, 2), model.predict_one(x)
    (0, None, 2)
    >>> model.stream_report(1)["best_tree_accuracy"]
    0.0
    """

    name = "best_vfdt"
    report_metrics = {"best_tree_accuracy": False}  # higher is better

    def __post_init__(self) -> None:
        super().__post_init__()
        self.trees = build_weak_learners(
            self.weak_learner, self.num_learners, self.n_features, self.n_labels, self.num_covariates, self.rng
        )
        self.correct = np.zeros(self.num_learners, np.int64)
        self._hits: list[np.ndarray] = []  # blocks of examples (rows), which trees were right (bit-packed)
        self._cache: RoundCache[np.ndarray] = RoundCache()

    def _predictions(self, x: np.ndarray) -> np.ndarray:
        return self._cache.get(x, lambda x: self.trees.predict_proba(x).argmax(axis=1))

    def predict_one(self, x: np.ndarray) -> int:
        return int(self._predictions(x)[int(self.correct.argmax())])

    def learn_one(self, x: np.ndarray, y) -> None:
        y = int(y)
        hits = self._predictions(x) == y
        self._cache.clear()
        self.correct += hits
        self._hits.append(np.packbits(hits)[None])
        weights = np.zeros((self.num_learners, self.n_labels))
        weights[:, y] = 1.0
        self.trees.learn(x, weights)

    predicts_passes = True

    def predict_learn_pass(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Predict then learn the rows of ``X`` in order, exactly as ``predict_one`` then ``learn_one`` would one by
        one: their predicted classes (the VFDT forest: one compiled loop, ``VFDTForest.voting_pass``)."""
        if not isinstance(self.trees, VFDTForest) or self.trees.importance_scale is not None:
            return super().predict_learn_pass(X, Y)
        self._cache.clear()
        predictions, hits = self.trees.voting_pass(X, Y, self.correct)
        if len(hits):  # no empty block: tree_accuracies reads the last rows from the blocks
            self._hits.append(np.packbits(hits, axis=1))
        return predictions

    def tree_accuracies(self, last: int) -> np.ndarray:
        """Accuracy of every tree over the last ``last`` examples learned (predict-then-learn)."""
        if last <= 0 or not self._hits:
            return np.zeros(self.num_learners)
        blocks, rows = [], 0
        for block in reversed(self._hits):  # the blocks that hold the last rows, from the end
            if rows >= last:
                break
            blocks.append(block)
            rows += len(block)
        bits = np.unpackbits(np.concatenate(blocks[::-1])[-last:], axis=1, count=self.num_learners)
        return bits.mean(axis=0)

    def stream_report(self, n_scored: int) -> dict[str, float]:
        """The paper's "best decision tree" figure over the final ``n_scored`` examples, and the leader."""
        acc = self.tree_accuracies(n_scored)
        return {
            "best_tree_accuracy": float(acc.max()),
            "best_tree": int(acc.argmax()),
            "leader_tree": int(self.correct.argmax()),
        }


@register(cost=ForestCost(multiclass=True, forest_learning=0.806, trees_power=1.28))
class OzaBoost(DrawsAhead, _TreeBaseline):
    """Oza's online boosting (Oza & Russell 2001; Oza 2005), the "Online Boosting" column of Table 1.

    Per example, lambda = 1; tree m is trained with weight K ~ Poisson(lambda) (one weighted update
    instead of K copies), and if it then classifies x correctly lambda_sc[m] += lambda and
    lambda *= 1 / (2 (1 - eps_m)), else lambda_sw[m] += lambda and lambda *= 1 / (2 eps_m), with
    eps_m = lambda_sw[m] / (lambda_sc[m] + lambda_sw[m]). The prediction is the vote of the trees weighted
    by log((1 - eps_m) / eps_m) (eps_m clipped to [1e-6, 1 - 1e-6]); trees with eps_m >= 1/2 or no
    history do not vote (if none votes, the first tree predicts).

    With the VFDT forest, "correct after training" is read from the tree's leaf masses plus K on the true
    class (what the update adds), so all N trees still learn in one vectorized call; this is exact unless
    that very update splits the leaf. ``weak_learner="river_hoeffding_tree"`` runs river's
    ``ensemble.AdaBoostClassifier`` (Oza's algorithm, river's soft vote) over river Hoeffding trees with
    the same random parameter ranges, as a cross-check.

    >>> import numpy as np
    >>> model = OzaBoost(n_features=2, n_labels=3, seed=0, num_learners=5)
    >>> x = np.array([0.5, 1.0])
    >>> model.learn_one(x, 1)
    >>> model.predict_one(x)
    1
    """

    name = "oza"
    predicts_passes = True  # a prequential phase in blocks (OnlineLearner.predict_learn_pass): no work per row

    def __post_init__(self) -> None:
        super().__post_init__()
        N = self.num_learners
        if self.weak_learner == "river_hoeffding_tree":
            self._river = _river_oza(N, self.n_labels, self.rng)
            self.trees = None
        else:
            self._river = None
            self.trees = build_weak_learners(
                self.weak_learner, N, self.n_features, self.n_labels, self.num_covariates, self.rng
            )
        self.lambda_sc = np.zeros(N)
        self.lambda_sw = np.zeros(N)
        self._draws = UniformDraws(self.rng)

    def vote_weights(self) -> np.ndarray:
        """Every tree's vote weight, log((1 - eps_m) / eps_m) below eps_m = 1/2 (``oza_rounds.tree_vote_weight``)."""
        return oza_rounds.vote_weights(self.lambda_sc, self.lambda_sw)

    def predict_one(self, x: np.ndarray) -> int:
        if self.trees is None:  # river's Hoeffding trees
            proba = self._river.predict_proba_one(_as_dict(x))
            return int(max(proba, key=proba.get)) if proba else 0
        proba = np.ascontiguousarray(self.trees.predict_proba(x), dtype=float)
        return int(oza_rounds.oza_prediction(proba, self.lambda_sc, self.lambda_sw))

    def learn_one(self, x: np.ndarray, y) -> None:
        y = int(y)
        if self.trees is None:  # river's Hoeffding trees
            self._river.learn_one(_as_dict(x), y)
            return
        N = self.num_learners
        mass = _leaf_masses(self.trees, x)  # (N, k) unnormalized, or None
        if mass is None:  # generic weak learners: judge by the prediction before the update
            mass = self.trees.predict_proba(x)
        mass = np.ascontiguousarray(mass, dtype=float)
        counts = np.empty(N)
        draws = self._draws
        while True:  # the chain over the trees, compiled; from more uniforms when those drawn ahead run out
            position = oza_rounds.oza_chain(
                mass, y, self.lambda_sc, self.lambda_sw, draws.uniforms, draws.position, counts
            )
            if position >= 0:
                draws.position = position
                break
            draws.refill()
        weights = np.zeros((N, self.n_labels))
        weights[:, y] = counts
        self.trees.learn(x, weights)

    def predict_learn_pass(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Predict then learn the rows of ``X`` in order, exactly as ``predict_one`` then ``learn_one`` would one by
        one: their predicted classes (the VFDT forest with pseudo-count 1: one compiled loop,
        ``oza_rounds.oza_pass``, the arrays grown and the uniforms drawn in between)."""
        trees = self.trees
        if not _reads_leaf_masses(trees) or trees.importance_scale is not None:
            return super().predict_learn_pass(X, Y)
        X = np.ascontiguousarray(X, dtype=float)
        Y = np.ascontiguousarray(Y, dtype=np.int64)
        predictions = np.empty(len(Y), np.int64)
        draws = self._draws

        def rows_from(row: int) -> int:
            row, draws.position, trees.n_nodes, trees.n_slots = oza_rounds.oza_pass(
                trees.arrays, X, Y, self.lambda_sc, self.lambda_sw, draws.uniforms, draws.position, predictions, row,
                trees.n_nodes, trees.n_slots,
            )  # fmt: skip
            return row

        forest_pass(trees, draws, len(Y), 2 * self.num_learners, rows_from)  # about 2 uniforms per tree and row
        return predictions


def _reads_leaf_masses(trees) -> TypeGuard[VFDTForest]:
    """Whether "correct after training" can be read from ``trees``' leaf masses (:func:`_leaf_masses`)."""
    return isinstance(trees, VFDTForest) and trees.pseudo_count == 1.0


def _leaf_masses(trees, x: np.ndarray) -> np.ndarray | None:
    """The VFDT forest's unnormalized leaf prediction masses for x (N, k); None for other weak learners.

    Adding weight K to class y at a leaf raises this mass of y by exactly K (a first-seen class trades its
    prediction-time 1 for the pseudo-count 1), which is how :class:`OzaBoost` reads "correct after training".
    """
    return trees.leaf_masses(x) if _reads_leaf_masses(trees) else None


def _as_dict(x: np.ndarray) -> dict:
    return {i: float(v) for i, v in enumerate(x) if not np.isnan(v)}


def _river_oza(n_models: int, n_labels: int, rng: np.random.Generator):
    """river's AdaBoostClassifier over Hoeffding trees with the forest's random parameter ranges."""
    from river import ensemble, tree

    model = ensemble.AdaBoostClassifier(
        tree.HoeffdingTreeClassifier(), n_models=n_models, seed=int(rng.integers(2**31))
    )
    for i in range(n_models):
        model[i] = river_hoeffding_tree(i, rng)
    return model
