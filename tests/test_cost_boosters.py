"""The boosters' planned CPU (``olb.learners.boosting.costs.ForestCost``): its shape in the hyperparameters and the stream, and a recorded
piece of the calibration grid (conf/experiment/calibrate_boosters.yaml) it must stay close to."""

import dataclasses

import pytest

from olb.grid.planning.cost import planned_stream
from olb.learners.base import StreamShape
from olb.learners.registry import get_algorithm, get_cost_model

SHAPE = StreamShape(n_features=100, n_labels=50, n_train=1000, cardinality=3.0)


def _cost(algorithm: str, shape: StreamShape = SHAPE, **params) -> float:
    return get_cost_model(algorithm).cost_per_example_s(get_algorithm(algorithm).validate(params), shape)


@pytest.mark.parametrize("algorithm", ["adaolmr", "onlinebmr", "topada", "topopt", "adaolm", "onlinembbm", "oza"])
def test_more_trees_and_more_labels_cost_more(algorithm):
    for trees in (10, 40):
        assert _cost(algorithm, num_learners=2.5 * trees) > _cost(algorithm, num_learners=trees)
    wider = dataclasses.replace(SHAPE, n_labels=200)
    assert _cost(algorithm, wider, num_learners=40) > _cost(algorithm, num_learners=40)


def test_the_multilabel_boosters_follow_the_relevant_labels_and_the_covariates():
    for algorithm in ("adaolmr", "onlinebmr"):
        denser = dataclasses.replace(SHAPE, cardinality=12.0)
        assert _cost(algorithm, denser) > 2 * _cost(algorithm)
        assert _cost(algorithm, num_covariates=40) > 1.5 * _cost(algorithm, num_covariates=20)
    # top-k feedback feeds at most k labels: a denser label set costs no more beyond k
    assert _cost("topada", dataclasses.replace(SHAPE, cardinality=12.0), k=3) == _cost("topada", k=3)
    # an unregistered cardinality is planned as a few relevant labels, not as none
    unknown = dataclasses.replace(SHAPE, cardinality=None)
    assert _cost("adaolmr", unknown) > _cost("adaolmr", dataclasses.replace(SHAPE, cardinality=1.0))


def test_a_larger_edge_or_smaller_weights_grow_the_trees_less():
    for algorithm in ("onlinebmr", "topopt", "onlinembbm"):
        assert _cost(algorithm, gamma=0.001 if algorithm == "onlinebmr" else 0.01) > 1.5 * _cost(algorithm, gamma=0.3)
    assert _cost("topada", weight_scale=1.0) > 5 * _cost("topada", weight_scale=0.01)


@pytest.mark.parametrize("algorithm", ["adaolmr", "onlinebmr+threshold", "adaolm", "best_vfdt"])
def test_a_row_only_predicted_costs_less_than_a_learned_one(algorithm):
    model, params = get_cost_model(algorithm), get_algorithm(algorithm).validate({})
    assert model.predict_cost_s(params, SHAPE) < model.cost_per_example_s(params, SHAPE) / 5


# Measured CPU microseconds per row of the stream of single cells of the calibration grid (seed 0, 100 trees,
# 2026-11-27, a 2-core Intel Xeon with AVX-512): the leaderboard's settings (ALT threshold,
# min-max scaled features, train then frozen test) and the papers'.
BOARD = {"num_covariates": 20, "authors_weights": True, "threshold_rule": "alt_scores", "feature_scaling": "minmax"}
TOPK = {"k": 3, "exploration": "uniform", "clip_probabilities": True}
RECORDED = [
    ("adaolmr+threshold", "yeast", BOARD, 1, "train_frozen", 1112),
    ("adaolmr+threshold", "cal500", BOARD, 1, "train_frozen", 8262),
    ("adaolmr+threshold", "corel5k", BOARD, 1, "train_frozen", 5820),
    ("onlinebmr+threshold", "corel5k", {**BOARD, "gamma": 0.1}, 1, "train_frozen", 1861),
    ("onlinebmr+threshold", "corel5k", {**BOARD, "gamma": 0.001}, 1, "train_frozen", 5516),
    ("topada", "scene", {**TOPK, "clip_gradient": True, "rho": 0.04}, 10, "train_test", 377),
    ("topopt", "emotions", {**TOPK, "gamma": 0.4, "rho": 0.02}, 10, "train_test", 161),
    ("adaolm", "nursery", {"authors_weights": True}, 1, "prequential_last20", 238),
    ("oza", "mice", {}, 1, "prequential_last20", 1309),
]


@pytest.mark.parametrize("algorithm, dataset, params, loops, protocol, measured_us", RECORDED)
def test_the_plan_stays_near_the_recorded_calibration(algorithm, dataset, params, loops, protocol, measured_us):
    """Within the spread the fit leaves over the calibration grid's cells (0.5-2x; docs/grid.md)."""
    resolved = get_algorithm(algorithm).validate({"num_learners": 100, **params})
    cost, _, _ = planned_stream(algorithm, resolved, dataset, loops, protocol)
    assert 0.5 < cost * 1e6 / measured_us < 2.0
