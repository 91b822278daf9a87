"""The vectorized VFDT forest: predictions, splits, missing values, randomness, and the river adapter."""

import numpy as np
import pytest
from compiled_support import assert_same_as_ufunc
from scipy.special import ndtr

from olb.weak import (
    RiverWeakLearners,
    VFDTForest,
    make_weak_learners,
    vfdt_candidates,
    vfdt_core,
    vfdt_merit,
    vfdt_screen,
    vfdt_sums,
)
from olb.weak.vfdt import pairwise_plan


def _stream(n, rng):
    X = rng.uniform(size=(n, 3))
    return X, (X[:, 1] > 0.6).astype(int)  # class depends on feature 1 only


def _train(forest, X, y, weight=1.0):
    for x, label in zip(X, y):
        W = np.zeros((forest.n_learners, forest.n_labels))
        W[:, label] = weight
        forest.learn(x, W)


def test_empty_trees_predict_uniformly_and_pseudo_counts_smooth():
    forest = VFDTForest(2, 3, 4, seed=0)
    assert np.allclose(forest.predict_proba(np.zeros(3)), 0.25)
    forest.learn(np.zeros(3), np.array([[3.0, 0, 0, 0], [0, 0, 0, 0]]))
    # class 0: pseudo-count 1 + weight 3; unseen classes count 1 each
    assert np.allclose(forest.predict_proba(np.zeros(3))[0], [4 / 7, 1 / 7, 1 / 7, 1 / 7])
    assert np.allclose(forest.predict_proba(np.zeros(3))[1], 0.25)


def test_trees_split_on_the_informative_feature_and_predict_it():
    rng = np.random.default_rng(1)
    forest = VFDTForest(5, 3, 2, seed=1, tau_range=(0.05, 0.05))
    X, y = _stream(400, rng)
    _train(forest, X, y)
    assert forest.n_leaves > 5
    roots = forest.arrays.root
    assert (forest.arrays.split_feature[roots] == 1).all()
    assert np.allclose(forest.arrays.threshold[roots], 0.6, atol=0.1)
    Xt, yt = _stream(200, rng)
    predicted = np.array([forest.predict_proba(x).mean(axis=0).argmax() for x in Xt])
    assert (predicted == yt).mean() > 0.95


def _decide(class_0, class_1):
    """The compiled merit and Hoeffding test of one leaf with one covariate where class 0 lies in [0, 0.05] and
    class 1 in [0.95, 1]: every candidate threshold (1/11 .. 10/11) separates them."""
    mass = np.array([[class_0, class_1]])
    # one tree, its root leaf 0 at slot 0, one pool row per label (pair_of), one covariate; delta 1/2, tau 0.05
    arrays = VFDTForest(1, 1, 2, seed=0).arrays._replace(
        slot=np.array([0]),
        pair_of=np.array([[0, 1]], np.int32),
        class_mass=mass,
        seen=mass > 0,
        g_weight=mass.T.copy(),
        g_mean=np.full((2, 1), 0.5),
        g_m2=np.full((2, 1), 0.01),
        g_min=np.array([[0.0], [0.95]]),
        g_max=np.array([[0.05], [1.0]]),
        ln_inv_delta=np.array([np.log(2.0)]),
        tau=np.array([0.05]),
    )
    assert arrays.min_variance == 1e-12 and arrays.min_branch_fraction == 0.01
    assert np.array_equal(arrays.fractions, np.arange(1, 11) / 11) and np.array_equal(arrays.eps_factor, [0, 0, 1])
    no_screen = False  # every candidate's merit
    splits, _, usable, per_feature, *_ = vfdt_core.evaluate_splits(arrays, np.array([0]), np.array([0]), no_screen)
    assert usable[0, 0]
    return per_feature[0, 0], bool(splits[0])


def test_info_gain_of_a_perfect_split_is_the_prior_entropy():
    assert _decide(5.0, 5.0) == (pytest.approx(1.0), True)
    # a branch holding less than 1% of the weight makes the candidate invalid
    assert _decide(10.0, 0.01) == (-np.inf, False)


def _evaluate_every_leaf(forest, screen=False):
    """evaluate_splits on every leaf of ``forest``, with or without the screen: (splits, best feature, usable,
    merits, best thresholds, thresholds)."""
    leaves = np.flatnonzero((forest.arrays.split_feature[: forest.n_nodes] == -1))
    trees = np.zeros(len(leaves), np.int64)
    return vfdt_core.evaluate_splits(forest.arrays, leaves, trees, screen)


def _many_label_forest(n_trees, tau_range, seed=5):
    """A forest grown on 600 rows of 12 correlated labels over 6 continuous features, its leaves not split."""
    rng = np.random.default_rng(seed)
    n, d, k = 600, 6, 12
    X = rng.normal(size=(n, d))
    Y = (X[:, :1] * rng.normal(size=(1, k)) + rng.normal(scale=0.5, size=(n, k)) > 0.3).astype(float)
    forest = VFDTForest(n_trees, d, k, num_covariates=4, seed=seed, tau_range=tau_range, grace_range=(1e9, 1e9))
    for x, y in zip(X, Y):
        forest.learn(x, np.tile(y, (n_trees, 1)) * rng.uniform(0.5, 3.0, size=(n_trees, 1)))
    return forest


def test_the_screen_settles_leaves_that_cannot_split_and_changes_no_split():
    """With the screen, evaluate_splits splits the very same leaves on the same covariates and thresholds, and the
    screen does settle leaves (those it cannot settle are scored exactly). The leaves differ in their Hoeffding
    bound: one grown leaf per tree, each tree with its own delta."""
    forest = _many_label_forest(40, tau_range=(1e-6, 1e-3))
    plain = _evaluate_every_leaf(forest)
    screened = _evaluate_every_leaf(forest, screen=True)
    splits = plain[0]
    assert np.array_equal(splits, screened[0])
    assert 0 < splits.sum() < len(splits) - 5  # some leaves split, most do not
    assert np.array_equal(plain[1][splits], screened[1][splits])
    for out_plain, out_screened in zip(plain[2:], screened[2:]):
        assert np.array_equal(out_plain[splits], out_screened[splits])
    settled = ~screened[2].any(axis=1)  # no candidate returned: the screen decided
    assert settled.sum() >= (~splits).sum() // 2


def test_screened_merits_are_within_their_bound_of_the_exact_ones():
    """Every candidate's screened merit lies within its bound of the exact merit (the best per covariate is
    compared); the polynomial log2 is within 2e-14 of glibc's (and its result's rounding), and 0 log2 0 is 0."""
    forest = _many_label_forest(8, tau_range=(1e-6, 1e-3))
    _, _, usable, merit_exact, *_ = _evaluate_every_leaf(forest)
    arrays = forest.arrays
    k, n_thr = forest.n_labels, len(arrays.fractions)
    gathered = (np.empty(k, np.int64), *(np.empty(k) for _ in range(5)))
    t, masses = np.empty(n_thr), np.empty((n_thr, k))
    leaves = np.flatnonzero(arrays.split_feature[: forest.n_nodes] == -1)
    plan = (arrays.plan_starts, arrays.plan_lengths, arrays.plan_ops, np.empty(len(arrays.plan_starts)))
    for b, leaf in enumerate(leaves):
        mass = arrays.class_mass[leaf]
        pre = vfdt_merit.entropy_bits(mass, mass.sum(), np.zeros(k), np.arange(k), k, np.empty(k, np.int64), plan)
        pool = (arrays.g_weight, arrays.g_mean, arrays.g_m2, arrays.g_min, arrays.g_max)
        stats = (arrays.pair_of[arrays.slot[leaf]], *pool, arrays.min_variance)
        for f in np.flatnonzero(usable[b]):
            n_active, lo, hi = vfdt_candidates.gather_covariate(f, stats, gathered)
            vfdt_candidates.place_thresholds(lo, hi, arrays.fractions, t)
            vfdt_candidates.left_masses(t, n_active, *gathered[1:], masses)
            scored = [vfdt_screen._screened_merit(masses[j], gathered[1], n_active, pre, 0.01) for j in range(n_thr)]
            bounds = [bound for _, bound in scored]
            assert min(bounds) >= 0
            screened_best = max(merit for merit, _ in scored)
            if np.isfinite(merit_exact[b, f]):
                assert abs(screened_best - merit_exact[b, f]) <= max(bounds)
                assert abs(screened_best - merit_exact[b, f]) < 1e-11  # the bound is loose, the merit close
            else:
                assert screened_best == -np.inf
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(10**5) * 10.0 ** rng.integers(-300, 300, 10**5), [1.0, 2.0, 0.5, 2**0.5]])
    x = np.concatenate([x, np.nextafter(x, 0), np.nextafter(x, np.inf)])
    approx = np.array([vfdt_screen._approx_log2(v) for v in x])
    assert (np.abs(approx - np.log2(x)) <= 2e-14 + 2.0**-52 * np.abs(np.log2(x))).all()  # + its last bit's rounding
    assert 0.0 * vfdt_screen._approx_log2(0.0) == 0.0 and np.isfinite(vfdt_screen._approx_log2(5e-324))


def test_entropy_in_bits_skips_zero_masses():
    terms, every, nonzero = np.empty(3), np.arange(3), np.empty(3, np.int64)
    plan = (*pairwise_plan(3), np.empty(1))
    assert vfdt_merit.entropy_bits(np.array([1.0, 1.0, 2.0]), 4.0, terms, every, 3, nonzero, plan) == pytest.approx(1.5)
    assert vfdt_merit.entropy_bits(np.array([2.0, 0.0, 2.0]), 4.0, terms, every, 3, nonzero, plan) == 1.0  # 0 adds 0
    assert vfdt_merit.entropy_bits(np.zeros(3), 0.0, terms, every, 3, nonzero, plan) == 0.0


def test_compiled_sums_add_in_numpys_order_bit_for_bit():
    rng = np.random.default_rng(0)
    for n in [*range(1, 300), 1000, 4099]:
        a = rng.random(n) * 10.0 ** rng.integers(-8, 8, n)
        assert vfdt_sums.pairwise_sum(a, 0, n) == a.sum(), n


def test_planned_sums_add_in_numpys_order_bit_for_bit():
    """The split attempts sum over the k labels by a plan made once per forest (no allocation per sum): the same
    bits as numpy's sum, for one block, several, and a tail of fewer than 8 values."""
    rng = np.random.default_rng(1)
    for n in [*range(1, 140), 159, 256, 374, 983, 4099]:
        starts, lengths, ops = pairwise_plan(n)
        assert lengths.sum() == n and (lengths <= 128).all() and len(ops) == 2 * len(starts) - 1
        a = rng.random(n) * 10.0 ** rng.integers(-8, 8, n) * np.where(rng.random(n) < 0.2, -1.0, 1.0)
        assert vfdt_sums.planned_sum(a, starts, lengths, ops, np.empty(len(starts))) == a.sum(), n


def test_compiled_normal_cdf_is_scipys_bit_for_bit():
    assert_same_as_ufunc(vfdt_candidates.ndtr, ndtr, (0.3, 1.0, 3.0, 12.0), [0.0, -0.0, np.inf, -np.inf, 40.0, -40.0])


def test_missing_values_are_skipped_in_statistics_and_routed():
    rng = np.random.default_rng(2)
    forest = VFDTForest(3, 3, 2, seed=2, tau_range=(0.05, 0.05))
    X, y = _stream(300, rng)
    X[::7, 0] = np.nan
    _train(forest, X, y)
    assert np.isfinite(forest.arrays.g_mean[: forest.arrays.pairs[0]]).all()
    p = forest.predict_proba(np.array([np.nan, np.nan, np.nan]))
    assert np.allclose(p.sum(axis=1), 1.0)


def test_random_parameters_covariates_and_seed_determinism():
    a = VFDTForest(50, 72, 6, num_covariates=20, seed=7, importance_scale_range=(3, 10))
    b = VFDTForest(50, 72, 6, num_covariates=20, seed=7, importance_scale_range=(3, 10))
    assert a.covariates.shape == (50, 20)
    assert all(len(set(row)) == 20 for row in a.covariates)
    assert ((a.delta >= 0.01) & (a.delta <= 0.9)).all() and ((a.grace >= 5) & (a.grace <= 20)).all()
    assert ((a.importance_scale >= 3) & (a.importance_scale <= 10)).all()
    assert np.array_equal(a.covariates, b.covariates) and np.array_equal(a.tau, b.tau)
    assert VFDTForest(4, 10, 3, num_covariates=20, seed=0).covariates.shape == (4, 10)
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(200, 72)), rng.integers(0, 6, 200)
    _train(a, X, y, weight=2.0)
    _train(b, X, y, weight=2.0)
    assert np.array_equal(a.predict_proba(X[0]), b.predict_proba(X[0]))


def test_storage_grows_beyond_initial_capacity():
    rng = np.random.default_rng(4)
    forest = VFDTForest(1, 3, 2, seed=4, tau_range=(0.5, 0.9), grace_range=(1, 2))
    X, y = _stream(2000, rng)
    y = (X[:, 0] * 10).astype(int) % 2  # many alternating bands need many leaves
    _train(forest, X, y)
    assert forest.n_nodes > 4
    assert len(forest.arrays.split_feature) >= forest.n_nodes
    # split statistics are kept for leaves only: one slot per leaf, each leaf its own
    leaves = forest.arrays.split_feature[: forest.n_nodes] < 0
    assert forest.n_slots == forest.n_leaves == leaves.sum()
    assert (forest.arrays.slot[: forest.n_nodes][~leaves] == -1).all()
    assert sorted(forest.arrays.slot[: forest.n_nodes][leaves]) == list(range(forest.n_slots))
    # Gaussian statistics only for the labels a leaf has seen, in distinct pool rows; a split frees its rows
    owned = forest.arrays.pair_of[: forest.n_slots]
    rows = owned[owned >= 0]
    assert len(set(rows)) == len(rows) == forest.arrays.pairs[0] - forest.arrays.pairs[1]
    leaf_nodes = np.flatnonzero(leaves)
    assert ((forest.arrays.pair_of[forest.arrays.slot[leaf_nodes]] >= 0) <= forest.arrays.seen[leaf_nodes]).all()
    assert forest.arrays.pairs[0] <= 2 * forest.n_leaves  # freed rows are reused: at most one per (leaf, label)
    assert (forest.arrays.g_weight[forest.arrays.free_pairs[: forest.arrays.pairs[1]]] == 0).all()


def test_a_pool_that_outgrows_its_reservation_gives_the_same_trees(monkeypatch):
    rng = np.random.default_rng(5)
    X, y = _stream(1500, rng)
    y = (X[:, 0] * 10).astype(int) % 2
    reserved = VFDTForest(2, 3, 2, seed=4, tau_range=(0.5, 0.9), grace_range=(1, 2))
    monkeypatch.setattr(VFDTForest, "_POOL_LEAVES_PER_TREE", 1)
    small = VFDTForest(2, 3, 2, seed=4, tau_range=(0.5, 0.9), grace_range=(1, 2))
    assert len(small.arrays.g_weight) == 4
    _train(reserved, X, y)
    _train(small, X, y)
    assert len(small.arrays.g_weight) > 4 and small.n_leaves > 4
    np.testing.assert_array_equal(
        reserved.arrays.threshold[: reserved.n_nodes], small.arrays.threshold[: small.n_nodes]
    )
    np.testing.assert_array_equal(reserved.predict_proba(X[0]), small.predict_proba(X[0]))


def test_river_adapter_boosts_river_classifiers():
    pool = make_weak_learners("river_hoeffding_tree", 3, 5, 3, num_covariates=2, importance_scale_range=None, seed=0)
    assert isinstance(pool, RiverWeakLearners)
    x = np.arange(5.0)
    assert np.allclose(pool.predict_proba(x), 1 / 3)
    pool.learn(x, np.array([[1.0, 0, 0], [0, 2.0, 0], [0, 0, 0]]))
    H = pool.predict_proba(x)
    assert np.allclose(H.sum(axis=1), 1) and H[0].argmax() == 0 and H[1].argmax() == 1
    with pytest.raises(ValueError, match="unknown weak learner 'bogus'"):
        make_weak_learners("bogus", 3, 5, 3, 2, None, 0)
