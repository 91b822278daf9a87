"""Paper 004's top-k feedback: the feedback object cannot leak, exact pair probabilities, unbiased estimator."""

import gc
import itertools
import math

import numpy as np
import pytest

from olb.data.dataset import Dataset
from olb.feedback import TopKFeedback, observed_pairs, ranking, ranking_scores
from olb.learners.boosting.exploration import (
    SingleSwapExploration,
    UniformExploration,
    importance_weights,
    make_exploration,
)
from olb.protocol import make_phases, run_stream

SCHEMES = [UniformExploration, SingleSwapExploration]


# ------------------------------------------------------------------------------------------ rankings


def test_ranking_is_sigma_with_ties_toward_the_smaller_label():
    # paper 004, Sec. 2: sigma((.3, .7, .5, .5)) = (2, 3, 4, 1) (1-based)
    assert ranking(np.array([0.3, 0.7, 0.5, 0.5])).tolist() == [1, 2, 3, 0]
    assert ranking(np.zeros(4)).tolist() == [0, 1, 2, 3]
    assert ranking(np.array([[1.0, 2.0], [2.0, 2.0]])).tolist() == [[1, 0], [0, 1]]


def test_ranking_scores_encode_a_ranking_without_ties():
    order = np.random.default_rng(0).permutation(7)
    scores = ranking_scores(order)
    assert np.unique(scores).size == 7 and ranking(scores).tolist() == order.tolist()


# ------------------------------------------------------------------------------------------ feedback object


def test_feedback_holds_only_the_top_k_labels_and_their_relevance():
    y = np.array([1, 0, 1, 1, 0, 0], np.int8)
    fb = TopKFeedback.from_prediction(np.array([0.1, 0.9, 0.5, 0.2, 0.7, 0.0]), y, k=3)
    assert fb.labels.tolist() == [1, 4, 2] and fb.relevant.tolist() == [False, False, True]
    assert not hasattr(fb, "__dict__") and type(fb).__slots__ == ("_labels", "_relevant")
    # everything the object references: its two private arrays and its class, nothing else
    referents = gc.get_referents(fb)
    arrays = [r for r in referents if isinstance(r, np.ndarray)]
    assert len(arrays) == 2 and all(r is TopKFeedback for r in referents if not isinstance(r, np.ndarray))
    for a in arrays:
        assert a.base is None and a.size == 3 and not a.flags.writeable and not np.shares_memory(a, y)
    with pytest.raises(AttributeError):
        fb.y = y
    with pytest.raises(AttributeError):
        fb._relevant = np.ones(3, bool)
    with pytest.raises(ValueError):
        fb.relevant[0] = True
    with pytest.raises(TypeError):
        vars(fb)


def test_feedback_does_not_depend_on_labels_outside_the_top_k():
    """Two label sets that agree on the top k (different sizes |R|) give identical feedback."""
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    a = TopKFeedback.from_prediction(scores, np.array([1, 0, 1, 0, 0]), k=3)
    b = TopKFeedback.from_prediction(scores, np.array([1, 0, 1, 1, 1]), k=3)
    assert repr(a) == repr(b)
    assert [x.tobytes() for x in gc.get_referents(a) if isinstance(x, np.ndarray)] == [
        x.tobytes() for x in gc.get_referents(b) if isinstance(x, np.ndarray)
    ]


@pytest.mark.parametrize("k", [0, 6, 7, 2.5])
def test_feedback_refuses_k_that_would_reveal_everything(k):
    with pytest.raises(ValueError, match=rf"k={k} with 6 labels"):
        TopKFeedback.from_prediction(np.arange(6.0), np.ones(6), k=k)


class SpyLearner:
    """A top-k learner that keeps every object the protocol hands it."""

    feedback = "topk"
    k = 2

    def __init__(self):
        self.received = []
        self.rng = np.random.default_rng(0)

    def predict_one(self, x):
        self.received.append(x)
        self.last = ranking_scores(self.rng.permutation(5))
        return self.last.copy()

    def learn_one(self, x, feedback):
        self.received += [x, feedback]
        assert isinstance(feedback, TopKFeedback)
        assert feedback.labels.tolist() == ranking(self.last)[:2].tolist()
        with pytest.raises(AttributeError):
            feedback.y  # noqa: B018 - nothing else is there
        with pytest.raises(AttributeError):
            feedback.__dict__  # noqa: B018


def _reachable(obj, limit=10_000):
    """Every object reachable from ``obj`` through gc referents (classes and modules are not followed)."""
    seen, stack = {}, [obj]
    while stack and len(seen) < limit:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type) or type(o).__name__ == "module":
            continue
        seen[id(o)] = o
        stack.extend(gc.get_referents(o))
    return list(seen.values())


def test_protocol_never_hands_a_topk_learner_labels_or_the_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    Y = rng.integers(0, 2, (12, 5)).astype(np.int8)
    data = Dataset("spy", X, Y, "multilabel", ("a", "b", "c"), tuple("vwxyz"), n_train=8)
    spy = SpyLearner()
    run_stream(spy, data, make_phases(data, "train_test", loops=2))
    assert len(spy.received) == 3 * (2 * 8 + 4)
    for item in spy.received:
        for o in _reachable(item):
            assert o is not data and o is not Y and o is not X
            if isinstance(o, np.ndarray):
                assert not np.shares_memory(o, Y) and not np.shares_memory(o, X)
            if isinstance(o, TopKFeedback):
                assert o.k == 2


# ------------------------------------------------------------------------------------------ pair probabilities


def _exact_pair_matrix(scheme, order):
    """P(a, b in top k of the explored ranking) by enumerating every outcome of the randomization."""
    m, k, rho = scheme.m, scheme.k, scheme.rho
    P = np.zeros((m, m))

    def add(o, weight):
        t = np.zeros(m)
        t[o[:k]] = 1.0
        P[...] += weight * np.outer(t, t)

    add(order, 1.0 - rho)
    if isinstance(scheme, UniformExploration):
        for perm in itertools.permutations(range(m)):
            add(np.array(perm), rho / math.factorial(m))
    else:
        n_swaps = k * (m - k)
        for i1, j1, i2, j2 in itertools.product(range(k), range(k, m), range(k), range(k, m)):
            o = order.copy()
            o[[i1, j1]] = o[[j1, i1]]
            o[[i2, j2]] = o[[j2, i2]]
            add(o, rho / n_swaps**2)
    return P


@pytest.mark.parametrize("m,k", [(4, 3), (5, 3), (6, 3), (6, 4), (7, 5)])
@pytest.mark.parametrize("cls", SCHEMES)
def test_pair_probabilities_are_exact(cls, m, k):
    scheme = cls(m, k, rho=0.2)
    order = np.random.default_rng(m * k).permutation(m)
    assert np.allclose(scheme.pair_matrix(order), _exact_pair_matrix(scheme, order), atol=1e-12, rtol=0)


def _empirical_pairs(scheme, order, rng, size):
    tops = scheme.explore(order, rng, size=size)[:, : scheme.k]
    T = np.zeros((size, scheme.m))
    np.put_along_axis(T, tops, 1.0, axis=1)
    return T


@pytest.mark.parametrize(
    "cls,m,k,rho",
    [
        (UniformExploration, 6, 3, 0.3),
        (UniformExploration, 14, 3, 0.1),
        (SingleSwapExploration, 6, 3, 0.2),
        (SingleSwapExploration, 14, 4, 0.2),
    ],
)
def test_pair_probabilities_match_simulation(cls, m, k, rho):
    """2e5 explored rankings of a tied score vector: the scheme acts on the ranking, ties change nothing."""
    scheme = cls(m, k, rho)
    scores = np.repeat([2.0, 1.0, 0.0], [2, m - 4, 2])  # ties inside and across the top k
    order = ranking(scores)
    n = 200_000
    T = _empirical_pairs(scheme, order, np.random.default_rng(0), n)
    freq = T.T @ T / n
    P = scheme.pair_matrix(order)
    se = np.sqrt(P * (1 - P) / n) + 1e-12
    assert (np.abs(freq - P) <= 5 * se + 1e-9).all()


@pytest.mark.parametrize("cls", SCHEMES)
def test_single_draws_follow_the_same_law(cls):
    """The one-ranking path the learners use (size=None) draws from the same distribution."""
    scheme = cls(6, 3, 0.2)
    order = np.array([3, 1, 4, 0, 5, 2])
    rng = np.random.default_rng(2)
    n = 20_000
    T = np.zeros((n, 6))
    for i in range(n):
        T[i, scheme.explore(order, rng)[:3]] = 1.0
    P = scheme.pair_matrix(order)
    assert (np.abs(T.T @ T / n - P) <= 5 * np.sqrt(P * (1 - P) / n)).all()


def test_single_swap_moves_at_most_two_labels_across_the_cut():
    scheme = SingleSwapExploration(10, 4, 0.2)
    order = np.arange(10)
    out = scheme.explore(order, np.random.default_rng(3), size=5000)
    changed = 4 - np.array([np.isin(o[:4], order[:4]).sum() for o in out])
    assert changed.max() == 2 and set(np.unique(changed)) == {0, 1, 2}
    assert (np.sort(out, axis=1) == order).all()


# ------------------------------------------------------------------------------------------ unbiasedness


@pytest.mark.parametrize(
    "cls,m,k,rho",
    [
        (UniformExploration, 6, 3, 0.3),
        (UniformExploration, 8, 4, 0.2),
        (SingleSwapExploration, 6, 3, 0.2),
        (SingleSwapExploration, 9, 3, 0.24),
    ],
)
def test_importance_weighted_estimate_is_unbiased(cls, m, k, rho):
    """Eq. 1 with the exact P: mean of L-hat over 2e5 explorations = the full unweighted hinge rank loss."""
    rng = np.random.default_rng(m + k)
    scheme = cls(m, k, rho)
    s = rng.normal(size=m)
    relevant = np.zeros(m, bool)
    relevant[rng.choice(m, m // 2, replace=False)] = True
    F = np.where(relevant[:, None] & ~relevant[None, :], np.maximum(0.0, 1.0 + s[None, :] - s[:, None]), 0.0)
    W = F / scheme.pair_matrix(ranking(s))  # f^{a,b} / P(a, b)
    n = 200_000
    T = _empirical_pairs(scheme, ranking(s), rng, n)
    estimates = np.einsum("na,ab,nb->n", T, W, T)
    assert abs(estimates.mean() - F.sum()) < 5 * estimates.std() / np.sqrt(n)


def test_observed_pairs_and_clipped_weights():
    fb = TopKFeedback(labels=[4, 1, 0, 2], relevant=[True, False, True, False])
    a, b = observed_pairs(fb)
    assert sorted(zip(a.tolist(), b.tolist())) == [(0, 1), (0, 2), (4, 1), (4, 2)]
    assert observed_pairs(TopKFeedback([1, 2], [True, True]))[0].size == 0
    assert importance_weights(np.array([1e-4, 0.5, 1.0]), clip=True).tolist() == [200.0, 2.0, 1 / 0.995]
    assert importance_weights(np.array([1e-4]), clip=False)[0] == pytest.approx(1e4)


@pytest.mark.parametrize(
    "name,k,rho,match",
    [
        ("single_swap", 2, 0.1, "needs k >= 3"),
        ("single_swap", 3, 0.25, "needs rho < 0.25"),
        ("uniform", 6, 0.1, "k=6 with 6 labels"),
        ("uniform", 3, 1.0, "rho=1.0 must lie in"),
        ("bandit", 3, 0.1, "unknown exploration 'bandit'"),
    ],
)
def test_scheme_conditions_are_enforced(name, k, rho, match):
    with pytest.raises(ValueError, match=match):
        make_exploration(name, 6, k, rho)
