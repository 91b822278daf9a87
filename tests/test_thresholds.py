"""Labels for scorers (olb/learners/thresholds.py): the scorer is untouched, each rule decides as documented."""

import numpy as np
import pytest

from olb.learners.base import OnlineLearner
from olb.learners.thresholds import thresholded
from olb.learners.registry import get_algorithm
from olb.run import CellSpec, run_cell


class FixedScores(OnlineLearner):
    """Scores the labels by the first features of x; learns nothing."""

    name = "fixed_scores"

    def predict_one(self, x):
        return np.asarray(x[: self.n_labels], float).copy()

    def learn_one(self, x, feedback):
        pass


Wrapped = thresholded(FixedScores)


def test_the_wrapped_scorer_ranks_exactly_as_without_the_threshold(data_dir):
    spec = dict(dataset="emotions", seed=2, protocol="train_frozen", data_dir=str(data_dir))
    plain = run_cell(CellSpec("adaolmr", params={"num_learners": 4}, metrics=("rank_loss",), **spec))
    wrapped = run_cell(
        CellSpec(
            "adaolmr+threshold",
            params={"num_learners": 4, "feature_scaling": "none"},
            metrics=("rank_loss", "f1"),
            **spec,
        )
    )
    assert wrapped.metrics["rank_loss"] == plain.metrics["rank_loss"]
    assert get_algorithm("onlinebmr+threshold").params["gamma"] is get_algorithm("onlinebmr").params["gamma"]


def test_alt_features_rule_moves_the_threshold_by_the_alt_coefficient():
    learner = Wrapped(2, 2, threshold_rule="alt_features", eta=0.5, repeats=1, feature_scaling="none")
    x = np.array([0.4, 0.1])  # scores (0.4, 0.1), threshold t(x) = 0 at first
    assert learner.predict_one(x)["labels"].tolist() == [1, 1]
    learner.learn_one(x, np.array([1, 0]))
    # relevant label 0: 0.4 - 0 < 1 -> c_1 = 1; irrelevant label 1: 0 - 0.1 < 1 -> c_2 = -1; c_0 = 0
    assert np.allclose(learner.w, 0)
    learner.learn_one(x, np.array([0, 0]))  # only irrelevant labels: c_0 = -(c_1 + c_2) = 1
    assert np.allclose(learner.w, 0.5 * 1.0 * np.array([0.4, 0.1, 1.0]))
    assert learner.predict_one(x)["labels"].tolist() == [0, 0]  # t(x) = 0.585 > both scores


def test_alt_scores_rule_learns_on_standardized_sorted_scores():
    learner = Wrapped(2, 2, threshold_rule="alt_scores", eta=0.5, repeats=1, feature_scaling="none")
    x = np.array([0.4, 0.1])  # z = (1, -1), sorted (1, -1); threshold 0 at first
    assert learner.predict_one(x)["labels"].tolist() == [1, 0]
    learner.learn_one(x, np.array([0, 0]))  # only irrelevant labels: c_2 = c_3 = -1/2, c_0 = 1
    assert np.allclose(learner.w, 0.5 * 1.0 * np.array([1.0, -1.0, 1.0]))  # t = 0.5 (1 + 1 + 1) = 1.5
    assert learner.predict_one(x)["labels"].tolist() == [0, 0]
    # the same stream with the scores scaled and shifted: the same labels at every round
    rng = np.random.default_rng(0)
    plain, moved = (Wrapped(5, 5, threshold_rule="alt_scores", seed=0) for _ in range(2))
    for _ in range(200):
        x, y = rng.normal(size=5), (rng.random(5) < 0.4).astype(np.int8)
        assert plain.predict_one(x)["labels"].tolist() == moved.predict_one(7.0 * x + 3.0)["labels"].tolist()
        plain.learn_one(x, y)
        moved.learn_one(7.0 * x + 3.0, y)
    assert plain.w.any()


def test_size_and_fixed_rules():
    size = Wrapped(3, 3, threshold_rule="size")
    for y in ([1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0]):  # mean size 2.0
        size.learn_one(np.array([0.3, 0.9, 0.5]), np.array(y))
    assert size.predict_one(np.array([0.3, 0.9, 0.5]))["labels"].tolist() == [0, 1, 1]
    fixed = Wrapped(3, 3, threshold_rule="fixed", threshold=0.4)
    assert fixed.predict_one(np.array([0.3, 0.9, 0.5]))["labels"].tolist() == [0, 1, 1]


def test_a_name_clash_is_refused():
    class Clash(FixedScores):
        name = "clash"
        eta = FixedScores.params.get("eta") or Wrapped.params["eta"]

    with pytest.raises(ValueError, match=r"clash: hyperparameter\(s\) \['eta'\] clash"):
        thresholded(Clash)
