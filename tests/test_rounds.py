"""The boosters' compiled per-round arithmetic equals the numpy expressions it replaced, bit for bit.

Each reference below is the numpy code the boosters ran before ``olb/learners/boosting/rounds/``, with the two
operations whose bits depend on the processor replaced by processor-independent ones (``tests/compiled_support.py``):
``np.exp`` by the C library's ``exp`` that the kernels call, and BLAS's ``@`` on (2, k) @ (k, k) by its definition
in the kernel, one fused multiply-add per term in order. The comparisons are exact (``np.array_equal``), on random
inputs of the shapes the boosters use, with label counts on both sides of numpy's switch from a sequential to a
pairwise sum (8 or more values in a contiguous sum). OnlineMBBM's and TopAda's BLAS ``dgemv`` products are compared
with numpy's ``@``: both are OpenBLAS calls that pick their kernel from the same processor.
"""

import numpy as np
import pytest
from compiled_support import assert_same_as_ufunc, fma_vector_matrix, libm_exp
from scipy.special import expit

from olb.learners.boosting import rounds
from olb.metrics import rank_loss_many

LABEL_COUNTS = list(range(2, 20)) + [27, 40, 101]


def _relevant_sets(k, rng):
    """Label sets with 1, 2, k // 2, k - 2 and k - 1 relevant labels (0 < |Y| < k)."""
    for n_rel in sorted({1, min(2, k - 1), max(1, k // 2), max(1, k - 2), k - 1}):
        relevant = np.zeros(k, bool)
        relevant[rng.choice(k, n_rel, replace=False)] = True
        yield relevant


def _scores(m, k, rng):
    S = rng.normal(size=(m, k)) * rng.uniform(0.1, 30.0)
    S[:, : k // 3] = np.round(S[:, : k // 3])  # some exact ties
    return S


def test_compiled_expit_is_scipys_bit_for_bit():
    assert_same_as_ufunc(
        rounds.expit,
        expit,
        (0.3, 1.0, 3.0, 12.0, 100.0, 800.0),
        [0.0, -0.0, np.inf, -np.inf, 36.7, -36.7, 709.0, -745.0],
    )


def _numpy_logistic_rank_gradient(S, relevant):
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    w = 1.0 / (rel.size * irr.size)
    sig = expit(S[:, None, irr] - S[:, rel, None])
    grad = np.empty_like(S, dtype=float)
    grad[:, rel] = -w * sig.sum(axis=2)
    grad[:, irr] = w * sig.sum(axis=1)
    return grad


@pytest.mark.parametrize("k", LABEL_COUNTS)
def test_logistic_rank_gradient_is_numpys(k):
    rng = np.random.default_rng(k)
    for relevant in _relevant_sets(k, rng):
        for m in (2, 3, 101):  # the boosters' N + 1 states, N >= 1
            S = _scores(m, k, rng)
            assert np.array_equal(
                rounds.logistic_rank_gradient(S, relevant), _numpy_logistic_rank_gradient(S, relevant)
            )


@pytest.mark.parametrize("k", list(range(1, 40)) + [101, 174])
def test_row_dots_are_numpys_einsum(k):
    rng = np.random.default_rng(k)
    for m in (1, 3, 100):
        A, B = _scores(m, k, rng), rng.dirichlet(np.ones(k), size=m)
        assert np.array_equal(rounds.row_dots(A, B), np.einsum("ik,ik->i", A, B))
        assert np.array_equal(rounds.row_dots(A[1:], B[:-1]), np.einsum("ik,ik->i", A[1:], B[:-1]))


def test_expert_and_vote_states_are_numpys_cumulative_sums():
    rng = np.random.default_rng(1)
    for N, k in [(1, 3), (5, 2), (100, 6), (100, 27)]:
        alpha, H = rng.uniform(-2, 2, N), rng.dirichlet(np.ones(k), size=N)
        alpha[rng.random(N) < 0.2] = 0.0
        expected = np.zeros((N + 1, k))
        np.cumsum(alpha[:, None] * H, axis=0, out=expected[1:])
        assert np.array_equal(rounds.expert_states(alpha, H), expected)
        labels = rng.integers(0, k, N)
        votes = np.zeros((N, k))
        votes[np.arange(N), labels] = alpha
        expected = np.zeros((N + 1, k))
        np.cumsum(votes, axis=0, out=expected[1:])
        assert np.array_equal(rounds.vote_states(labels, alpha, k), expected)


def test_alpha_step_and_hedge_are_numpys():
    rng = np.random.default_rng(2)
    for N in (1, 7, 100, 129, 300):
        alpha, change = rng.uniform(-2, 2, N), rng.normal(size=N) * 3
        assert np.array_equal(rounds.projected_alpha_step(alpha, change), np.clip(alpha - change, -2.0, 2.0))
        weights, losses = rng.dirichlet(np.ones(N)), rng.uniform(0, 40, N)
        new = weights * libm_exp(-losses)
        assert np.array_equal(rounds.hedge_update(weights, losses), new / new.sum())
        for u in rng.random(200):
            expected = min(int(np.searchsorted(np.cumsum(weights), u * weights.sum())), N - 1)
            assert rounds.hedge_index(weights, u) == expected
        assert rounds.hedge_index(weights, 1.0) == N - 1


def test_fed_weights_are_numpys():
    rng = np.random.default_rng(3)
    for N, k in [(1, 2), (100, 6), (50, 101)]:
        costs, fed = _scores(N, k, rng), rng.random(k) < 0.5
        for scale in (1.0, 0.01):
            expected = np.where(fed, scale * (costs.max(axis=1, keepdims=True) - costs), 0.0)
            assert np.array_equal(rounds.fed_weights(costs, fed, scale), expected)


@pytest.mark.parametrize("k", [2, 3, 6, 14, 101])
def test_rank_losses_are_the_metric(k):
    rng = np.random.default_rng(k)
    for relevant in _relevant_sets(k, rng):
        S = _scores(100, k, rng)
        assert np.array_equal(rounds.rank_losses(S, relevant), rank_loss_many(S, relevant))


def _numpy_alpha_gradient(S, labels, alpha, y, authors):
    N = len(S)
    sy = S[:, y]
    sl = S[np.arange(N), labels]
    wrong = expit(sl + alpha - sy)
    others = np.delete(S, y, axis=1)
    if authors:
        right = -expit(sy[:, None] + alpha[:, None] - others).sum(axis=1)
    else:
        right = -expit(others - sy[:, None] - alpha[:, None]).sum(axis=1)
    return np.where(labels == y, right, wrong)


@pytest.mark.parametrize("k", [2, 3, 5, 9, 10, 26])
def test_logistic_cost_rows_and_alpha_gradient_are_numpys(k):
    rng = np.random.default_rng(k)
    S = _scores(100, k, rng)
    G = expit(S[:, None, :] - S[:, :, None])
    got_G, got_rows = rounds.logistic_cost_parts(S)
    assert np.array_equal(got_G, G) and np.array_equal(got_rows, G.sum(axis=2) - 0.5)
    alpha, labels = rng.uniform(-2, 2, 100), rng.integers(0, k, 100)
    for y in range(k):
        for authors in (False, True):
            assert np.array_equal(
                rounds.alpha_gradient(S, labels, alpha, y, authors), _numpy_alpha_gradient(S, labels, alpha, y, authors)
            )


def _reference_adaolm_chain(H, tie, alpha):
    """Adaboost.OLM's chain as a plain loop over learners, its expected costs by :func:`rounds.expected_costs`
    (checked on its own against the processor-independent reference)."""
    N, k = H.shape
    s = np.zeros(k)
    labels = np.empty(N, np.intp)
    costs = np.empty(k)
    M = expit(s - s[:, None])
    for i in range(N):
        rounds.expected_costs(H, tie, i, M, costs)
        labels[i] = int(costs.argmin())
        if alpha[i] != 0.0:
            s[labels[i]] += alpha[i]
            M = expit(s - s[:, None])
    return labels


@pytest.mark.parametrize("k", [2, 3, 4, 5, 8, 10, 26])
def test_adaolm_expected_costs_and_chain_are_numpys(k):
    """The expected costs h M + h (1 M) - (k h - tie), each product's terms added in order by fused multiply-adds
    (what numpy's ``@`` did through OpenBLAS on the processor the boosters were written on; OpenBLAS on another
    processor adds them otherwise, so the reference is the definition, not ``@``)."""
    rng = np.random.default_rng(k)
    out = np.empty(k)
    for _ in range(200):
        h, tie, s = rng.dirichlet(np.ones(k) * 0.3), rng.random(k) * 1e-9, rng.normal(size=k) * rng.uniform(0, 5)
        M = expit(s - s[:, None])
        rounds.expected_costs(h[None], tie[None], 0, M, out)
        expected = fma_vector_matrix(h, M) + h * fma_vector_matrix(np.ones(k), M) - (k * h - tie)
        assert np.array_equal(out, expected)
    for _ in range(20):
        N = 100
        H, tie = rng.dirichlet(np.ones(k) * 0.3, size=N), rng.random((N, k)) * 1e-9
        alpha = rng.uniform(-2, 2, N)
        alpha[rng.random(N) < 0.3] = 0.0
        labels, states = rounds.adaolm_chain(H, tie, alpha)
        assert np.array_equal(labels, _reference_adaolm_chain(H, tie, alpha))
        assert np.array_equal(states, rounds.vote_states(labels, alpha, k))


def test_adaolmr_round_is_numpys():
    rng = np.random.default_rng(4)
    for k in (3, 6, 14, 101):
        for relevant in _relevant_sets(k, rng):
            N, t = 100, int(rng.integers(1, 500))
            H, alpha, hedge = rng.dirichlet(np.ones(k), size=N), rng.uniform(-2, 2, N), rng.dirichlet(np.ones(N))
            states = rounds.expert_states(alpha, H)
            gradients = _numpy_logistic_rank_gradient(states, relevant)
            slopes = np.einsum("ik,ik->i", gradients[1:], H)
            new = hedge * libm_exp(-rank_loss_many(states[1:], relevant))
            weights = np.where(relevant, gradients[:-1].max(axis=1, keepdims=True) - gradients[:-1], 0.0)
            got = rounds.adaolmr_round(H, states, relevant, alpha, hedge, t)
            assert np.array_equal(got[0], weights)
            assert np.array_equal(got[1], np.clip(alpha - slopes / np.sqrt(t), -2.0, 2.0))
            assert np.array_equal(got[2], new / new.sum())


def _numpy_pairwise_cost_vectors(S, relevant, horizons, law, margin):
    """PairwisePotential.cost_vectors as it was in numpy (law: a ``DifferenceLaw``)."""
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    C = np.zeros(S.shape)
    t = margin + S[:, None, irr] - S[:, rel, None]  # (m, |Y|, |Y^c|)
    h = law.hinge_and_steps(t, horizons[:, None, None])
    C[:, rel] = h[..., 1].sum(axis=2)
    C[:, irr] = h[..., 2].sum(axis=1)
    C += h[..., 0].sum(axis=(1, 2))[:, None]
    C /= rel.size * irr.size
    return C


@pytest.mark.parametrize("k", LABEL_COUNTS + [174])
def test_pairwise_cost_vectors_and_onlinebmr_round_are_numpys(k):
    """OnlineBMR's cost vectors (paper 000, eq. 2) on the experts' states of random weak predictions (alpha = 1,
    as OnlineBMR's) and on random scores; the pairs' hinge sums run pairwise over |Y| |Y^c| values (>= 8 and
    > 128 among these sets), the steps of relevant labels over |Y^c|."""
    from olb.learners.boosting.potentials import PairwisePotential

    rng = np.random.default_rng(k)
    N = 100
    for relevant in _relevant_sets(k, rng):
        n_rel = int(relevant.sum())
        for margin, gamma in ((1.0, 0.1), (0.0, 0.1), (0.0, 0.4), (1.0, 0.02)):
            potential = PairwisePotential(N, k, gamma, margin=margin)
            law = potential.law(n_rel)
            tables = potential.law_tables(n_rel)
            H = rng.dirichlet(np.ones(k) * rng.uniform(0.05, 2.0), size=N)
            states = rounds.expert_states(np.ones(N), H)
            horizons = np.arange(N - 1, -1, -1)
            expected = _numpy_pairwise_cost_vectors(states[:-1], relevant, horizons, law, margin)
            got = rounds.pairwise_cost_vectors(states[:-1], relevant, horizons, *tables, margin)
            assert np.array_equal(got, expected)
            assert np.array_equal(potential.cost_vectors(states[:-1], relevant.astype(int), horizons), expected)
            weights = np.where(relevant, expected.max(axis=1, keepdims=True) - expected, 0.0)
            assert np.array_equal(rounds.onlinebmr_round(states, relevant, *tables, margin), weights)
            for m in (1, 7):  # scores far outside the table's range too (clipped rows)
                S, horizons = _scores(m, k, rng), rng.integers(0, N + 1, m)
                assert np.array_equal(
                    rounds.pairwise_cost_vectors(S, relevant, horizons, *tables, margin),
                    _numpy_pairwise_cost_vectors(S, relevant, horizons, law, margin),
                )


def _numpy_pair_cost_vector(s, a_idx, b_idx, w, n, law, margin):
    """TopkPairPotential.cost_vector as it was in numpy (law: a ``DifferenceLaw``)."""
    k = s.size
    h = law.hinge_and_steps(margin + s[b_idx] - s[a_idx], n) * w[:, None]  # (P, 3)
    c = np.full(k, h[:, 0].sum())
    c += np.bincount(a_idx, h[:, 1], minlength=k)
    c += np.bincount(b_idx, h[:, 2], minlength=k)
    return c


@pytest.mark.parametrize("k", LABEL_COUNTS + [174])
def test_pair_cost_vectors_are_numpys(k):
    """TopOpt's estimated cost vectors (paper 004, eq. 3) over observed pairs (a relevant, b irrelevant) with
    importance weights; up to |Y| |Y^c| pairs, so the hinges' sum runs pairwise (>= 8 and > 128 pairs)."""
    from olb.learners.boosting.potentials import TopkPairPotential

    rng = np.random.default_rng(k)
    N = 100
    for relevant in _relevant_sets(k, rng):
        rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
        a_all, b_all = np.repeat(rel, irr.size), np.tile(irr, rel.size)
        for margin, gamma in ((1.0, 0.1), (0.0, 0.1), (0.0, 0.4)):
            potential = TopkPairPotential(N, k, gamma, margin=margin)
            law = potential.law
            tables = law.tables
            for n_pairs in sorted({1, min(3, a_all.size), a_all.size}):
                pick = np.sort(rng.choice(a_all.size, n_pairs, replace=False))
                a, b = a_all[pick], b_all[pick]
                w = 1.0 / rng.uniform(0.05, 1.0, n_pairs)
                states = rounds.expert_states(np.ones(N), rng.dirichlet(np.ones(k) * rng.uniform(0.05, 2.0), size=N))
                horizons = np.arange(N - 1, -1, -1)
                expected = np.stack(
                    [_numpy_pair_cost_vector(states[i], a, b, w, N - 1 - i, law, margin) for i in range(N)]
                )
                assert np.array_equal(
                    rounds.pair_cost_vectors(states[:-1], a, b, w, horizons, *tables, margin), expected
                )
                assert np.array_equal(potential.cost_vectors(states[:-1], a, b, horizons, w), expected)
                S, n = _scores(1, k, rng), int(rng.integers(0, N + 1))  # far outside the table's range too
                assert np.array_equal(
                    potential.cost_vector(S[0], a, b, n),
                    _numpy_pair_cost_vector(S[0], a, b, np.ones(n_pairs), n, law, margin),
                )


@pytest.mark.parametrize("k", LABEL_COUNTS)
def test_vector_matrix_is_numpys_matmul(k):
    """OnlineMBBM's h @ M (k,) @ (k, k), the BLAS call numpy makes, on cost-like matrices (exact zeros, rows of 1)."""
    rng = np.random.default_rng(k)
    out = np.empty(k)
    for _ in range(200):
        h, M = rng.dirichlet(np.ones(k) * rng.uniform(0.05, 2.0)), rng.random((k, k)) * rng.uniform(0.01, 10.0)
        M[rng.random((k, k)) < 0.3] = 0.0
        M[rng.integers(k)] = 1.0
        rounds.vector_matrix(h, M, out)
        assert np.array_equal(out, h @ M)


def _numpy_mbbm_chain(H, tie, costs, horizons, which):
    """OnlineMBBM._weak_predictions as it was in numpy (exact potentials)."""
    N, k = H.shape
    s, labels, weights = np.zeros(k, np.int64), np.empty(N, np.intp), np.empty((N, k))
    for i, n in enumerate(horizons):
        entry = costs.get(s, n)
        weights[i] = entry[1]
        labels[i] = int((H[i] @ entry[which] + tie[i]).argmin())
        s[labels[i]] += 1
    return labels, weights


@pytest.mark.parametrize("k", [2, 3, 4, 5, 7, 10])
def test_mbbm_chain_is_numpys(k):
    """OnlineMBBM's compiled chain over its state memo (C and D, both horizons) against the per-learner numpy loop,
    over many rounds, so that the chain resumes at new states and runs through states met before."""
    from olb.learners.boosting.multiclass.mbbm_memo import MBBMCosts, StateMemo

    rng = np.random.default_rng(k)
    N = 30 if k > 5 else 60
    costs = MBBMCosts(k, 0.1)
    for which, shift in ((2, 1), (0, 0)):
        horizons = [N - i - shift for i in range(N)]
        memo = StateMemo(costs, horizons, which, k)
        for _ in range(40):
            H = rng.dirichlet(np.ones(k) * rng.uniform(0.05, 2.0), size=N)
            H[:, 0] += rng.uniform(0.0, 1.0)  # a favourite: chains that meet the same states again
            tie = rng.random((N, k)) * 1e-9
            labels, weights = memo.chain(H, tie)
            expected = _numpy_mbbm_chain(H, tie, costs, horizons, which)
            assert np.array_equal(labels, expected[0])
            assert np.array_equal(weights, expected[1])


@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_mbbm_cost_memo_steps_are_numpys(k):
    """The steps of OnlineMBBM's cost memo against the numpy code they replaced: the canonical state (stable sort,
    gaps, clip), the weights and normalized costs of a cost matrix, and an entry relabelled to the state."""
    rng = np.random.default_rng(k)
    order, gaps = np.empty(k, np.int64), np.empty(k, np.int64)
    for _ in range(300):
        s, n = rng.integers(0, 8, k), int(rng.integers(0, 12))
        rounds.canonical_votes(s, n, order, gaps)
        expected_order = np.argsort(-s, kind="stable")
        expected = s[expected_order[0]] - s[expected_order]
        live = expected[expected <= n + 1]
        assert np.array_equal(order, expected_order)
        assert np.array_equal(gaps, np.minimum(expected, live[-1] + n + 2))

        C = rng.random((k, k))
        C[rng.random((k, k)) < 0.3] = 1.0
        C[np.diag_indices(k)] = np.where(rng.random(k) < 0.2, 1.0, rng.random(k) * 0.5)
        W, D = np.empty(k), np.empty((k, k))
        rounds.cost_weights(C, 1e-12, W, D)
        diff = C - np.diag(C)[:, None]
        diff[diff < 1e-12] = 0.0
        expected_W = diff.sum(axis=1)
        assert np.array_equal(W, expected_W)
        assert np.array_equal(
            D, np.divide(diff, expected_W[:, None], out=np.zeros_like(diff), where=expected_W[:, None] > 0)
        )

        out = (np.empty((k, k)), np.empty(k), np.empty((k, k)))
        rounds.relabelled_costs(C, W, D, order, *out)
        inv = np.empty_like(order)
        inv[order] = np.arange(k)
        grid = np.ix_(inv, inv)
        for got, want in zip(out, (C[grid], W[inv], D[grid]), strict=True):
            assert np.array_equal(got, want)


def _numpy_topada_round(H, states, a, b, w, alpha, hedge, step, t, clip_gradient, fed, scale):
    """TopAda's _cost_vectors, _update_booster and _rank_loss_estimates as they were in numpy, then the weights."""
    sig = w * expit(states[:, b] - states[:, a])  # (N + 1, P)
    grad = np.zeros_like(states)
    for p in range(len(a)):
        grad[:, b[p]] += sig[:, p]
        grad[:, a[p]] -= sig[:, p]
    slopes = rounds.row_dots(grad[1:], H)
    if clip_gradient:
        slopes = np.clip(slopes, -1.0, 1.0)
    new_alpha = rounds.projected_alpha_step(alpha, step / np.sqrt(t) * slopes)
    losses = (states[1:, b] >= states[1:, a]) @ w
    new_hedge = rounds.hedge_update(hedge, losses - losses.min())
    return rounds.fed_weights(grad[:-1], fed, scale), new_alpha, new_hedge, grad, losses


@pytest.mark.parametrize("k", LABEL_COUNTS + [174])
def test_topada_round_is_numpys(k):
    """TopAda's round (paper 004, Algorithm 3) over observed pairs with importance weights: up to |Y| |Y^c| pairs, so
    the rank losses' (N, P) @ (P,) product runs over short and long rows (BLAS's kernel, unrolled), N = 1 (a dot)."""
    rng = np.random.default_rng(k)
    for relevant in _relevant_sets(k, rng):
        rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
        a_all, b_all = np.repeat(rel, irr.size), np.tile(irr, rel.size)
        for n_pairs in sorted({min(n, a_all.size) for n in (1, 2, 3, 5, 9, 17)} | {a_all.size}):
            pick = np.sort(rng.choice(a_all.size, n_pairs, replace=False))
            a, b = a_all[pick], b_all[pick]
            w = 1.0 / rng.uniform(0.005, 1.0, n_pairs)
            w[rng.random(n_pairs) < 0.3] = 1.0 / 0.005  # clipped probabilities: repeated weights
            for N in (1, 3, 50, 100):
                H = rng.dirichlet(np.ones(k) * rng.uniform(0.05, 2.0), size=N)
                alpha = rng.uniform(-2, 2, N)
                states = rounds.expert_states(alpha, H)
                states[rng.random(N + 1) < 0.2] = 0.0  # ties: every pair counts in the rank loss
                hedge, fed = rng.dirichlet(np.ones(N)), np.zeros(k, bool)
                fed[rel[: rng.integers(1, rel.size + 1)]] = True
                step, t = rng.uniform(1e-4, 5.0), int(rng.integers(1, 10_000))
                for clip_gradient in (True, False):
                    args = (H, states, a, b, w, alpha, hedge, step, t, clip_gradient, fed, rng.choice([1.0, 0.01]))
                    expected = _numpy_topada_round(*args)
                    got = rounds.topada_round(*args)
                    for g, e in zip(got, expected):
                        assert np.array_equal(g, e)
                    assert np.array_equal(rounds.pair_logistic_gradients(states, a, b, w), expected[3])
                    assert np.array_equal(rounds.pair_rank_losses(states[1:], a, b, w), expected[4])


def test_poisson_draws_are_numpys_from_its_uniforms():
    """poisson_draw turns Generator.random's doubles into Generator.poisson's very draws, consuming as many: with
    rates on both sides of numpy's switch of method at 10, and 0."""
    rng = np.random.default_rng(4)
    rates = np.concatenate([[0.0, 1.0, 9.999, 10.0], rng.uniform(0, 12, 3000), rng.uniform(10, 5000, 1000)])
    expected = np.random.default_rng(7)
    uniforms = np.random.default_rng(7).random(200_000)
    position = 0
    for lam in rates:
        draw, position = rounds.poisson_draw(lam, uniforms, position)
        assert draw == expected.poisson(lam), lam
    assert position < len(uniforms)
    assert expected.random() == uniforms[position]  # the generator has drawn exactly as many


def test_poisson_draw_says_when_its_uniforms_run_out():
    assert rounds.poisson_draw(3.0, np.full(4, 0.99), 0) == (-1, -1)
    assert rounds.poisson_draw(50.0, np.full(1, 0.5), 0) == (-1, -1)
