"""kNN and the neighbour memory against a brute-force search."""

import doctest
import pickle

import numpy as np
import pytest

from olb.learners.neighbors import knn, memory
from olb.learners.neighbors.knn import KNN
from olb.learners.neighbors.memory import RowMemory, k_nearest
from olb.learners.registry import get_algorithm


def brute_force_votes(X, Y, x, k):
    order = np.argsort(((X - x) ** 2).sum(axis=1), kind="stable")[:k]
    return Y[order].mean(axis=0)


def test_memory_grows_past_its_capacity_and_keeps_every_row():
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(100, 3))
    mem = RowMemory(3, capacity=2)
    mem.extend(rows[:7])
    for row in rows[7:]:
        mem.append(row)
    np.testing.assert_array_equal(mem.rows, rows)
    np.testing.assert_allclose(mem.sq_norms, (rows**2).sum(axis=1))


@pytest.mark.parametrize("n, p, k", [(50, 4, 1), (400, 72, 10), (30, 10, 30), (5, 3, 10)])
def test_k_nearest_matches_brute_force(n, p, k):
    rng = np.random.default_rng(n + p)
    rows = rng.normal(size=(n, p))
    for x in rng.normal(size=(5, p)):
        expected = np.argsort(((rows - x) ** 2).sum(axis=1), kind="stable")[:k]
        np.testing.assert_array_equal(k_nearest(rows, (rows**2).sum(axis=1), x, k), expected)


def test_knn_votes_match_brute_force_search_over_the_stream():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(200, 6)), (rng.random((200, 4)) < 0.3).astype(float)
    learner = get_algorithm("knn")(6, 4, seed=0, n_neighbors=7, vote_threshold=0.4)
    learner.learn_many(X[:40], Y[:40])
    for t in range(40, 200):
        learner.learn_one(X[t], Y[t])
    for x in rng.normal(size=(20, 6)):
        expected = brute_force_votes(X, Y, x, 7)
        out = learner.predict_one(x)
        np.testing.assert_allclose(out["scores"], expected)
        np.testing.assert_array_equal(out["labels"], (expected >= 0.4).astype(int))


def test_knn_predicts_nothing_before_learning_and_survives_pickling():
    learner = KNN(3, 2)
    np.testing.assert_array_equal(learner.predict_one(np.zeros(3))["labels"], [0, 0])
    learner.learn_one(np.ones(3), np.array([1.0, 0.0]))
    clone = pickle.loads(pickle.dumps(learner))
    clone.learn_one(np.zeros(3), np.array([0.0, 1.0]))
    learner.learn_one(np.zeros(3), np.array([0.0, 1.0]))
    np.testing.assert_array_equal(
        clone.predict_one(np.full(3, 0.6))["scores"], learner.predict_one(np.full(3, 0.6))["scores"]
    )


def test_knn_rejects_a_bad_vote_threshold_by_name():
    with pytest.raises(ValueError, match="vote_threshold"):
        KNN(3, 2, vote_threshold=0.0)


@pytest.mark.parametrize("module", [memory, knn])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def test_k_nearest_breaks_ties_on_binary_rows_like_a_stable_brute_force_sort():
    rng = np.random.default_rng(5)
    rows = (rng.random((300, 20)) < 0.2).astype(float)
    for x in (rng.random((10, 20)) < 0.2).astype(float):
        for k in (1, 10):
            expected = np.argsort(((rows - x) ** 2).sum(axis=1), kind="stable")[:k]
            assert set(k_nearest(rows, (rows**2).sum(axis=1), x, k)) == set(expected)


def test_tie_rule_random_draws_a_seeded_subset_only_when_ties_decide():
    rows = np.zeros((30, 2))  # a collapsed metric: every distance ties
    sq = np.zeros(30)
    x = np.zeros(2)
    np.testing.assert_array_equal(k_nearest(rows, sq, x, 10), np.arange(10))  # default: the first stored
    picks = [k_nearest(rows, sq, x, 10, np.random.default_rng(s)) for s in range(3)]
    np.testing.assert_array_equal(picks[0], k_nearest(rows, sq, x, 10, np.random.default_rng(0)))
    assert all(len(set(p)) == 10 and list(p) == sorted(p) for p in picks)
    assert len({tuple(p) for p in picks}) == 3
    # no tie straddling the k-th place: the same rows, and the generator is not drawn from
    spread = np.arange(30.0)[:, None]
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    got = k_nearest(spread, (spread**2).ravel(), np.array([3.2]), 4, rng)
    np.testing.assert_array_equal(got, k_nearest(spread, (spread**2).ravel(), np.array([3.2]), 4))
    assert rng.bit_generator.state == state


def test_knn_tie_break_option_is_seeded():
    X = np.zeros((40, 3))  # every stored row ties with every query
    Y = (np.arange(40)[:, None] % np.array([2, 3]) == 0).astype(np.int8)  # the first rows differ from the rest

    def votes(**kw):
        learner = KNN(3, 2, n_neighbors=5, **kw)
        learner.learn_many(X, Y)
        return learner.predict_one(np.zeros(3))["scores"]

    np.testing.assert_array_equal(votes(), Y[:5].mean(axis=0))
    np.testing.assert_array_equal(votes(tie_break="random", seed=1), votes(tie_break="random", seed=1))
    assert any(not np.array_equal(votes(tie_break="random", seed=s), Y[:5].mean(axis=0)) for s in range(5))
