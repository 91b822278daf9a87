"""The boosters' per-round arithmetic, compiled with numba (see docs/speed.md).

Each formula lives here once, as a compiled function over numpy arrays; the boosters
(:mod:`~olb.learners.boosting.mlr`, :mod:`~olb.learners.boosting.multiclass`, :mod:`~olb.learners.boosting.topk`)
stay plain classes that call them. Ada.OLMR's, Adaboost.OLM's and OnlineBMR's updates are one call per round
(:func:`adaolmr_round`, :func:`adaolm_chain`, :func:`adaolm_update`, :func:`onlinebmr_round`,
:func:`topada_round`), OnlineMBBM's chain of weak predictions one call per round and per state not yet in its memo
(:func:`mbbm_chain`).

The results are bit-identical to the numpy expressions these functions replaced (``tests/regression``, and
``tests/test_rounds.py`` on random inputs): the same operations in the same order. Sums over a contiguous run of
values follow numpy's pairwise order (:func:`olb.weak.vfdt_core.pairwise_sum`), sums across rows numpy's
sequential one; ``exp`` is the C library's, as numpy's; the logistic sigma is scipy's ``expit`` itself (its C
function, bound by symbol name so that numba's disk cache stays usable); a dot product over labels adds as
numpy's ``einsum`` does here (two interleaved partial sums, see :func:`row_dots`), a vector-matrix product as
the BLAS behind numpy's ``@`` does (one fused multiply-add per term, in order, see :func:`adaolm_chain`), and
OnlineMBBM's (k,) @ (k, k) products and TopAda's (N, P) @ (P,) rank losses by a BLAS ``dgemv`` as numpy does
(:func:`vector_matrix`, :func:`pair_rank_losses`).

Keep every compiled function of the boosters in this one file: numba's disk cache notices a change of the file
that holds a cached function, not of the files holding the functions it calls.
"""

from __future__ import annotations

import math

import llvmlite.binding
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address, intrinsic

from olb.kernel_declarations import (
    Boolean,
    BooleanArray1D,
    Float64,
    Float64Array1D,
    Float64Array2D,
    Float64Array3D,
    Int64,
    Int64Array1D,
    Int64Array2D,
    kernel,
)
from olb.weak.vfdt_sums import pairwise_sum

llvmlite.binding.add_symbol(
    "olb_scipy_expit", get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_0expit")
)
expit = types.ExternalFunction("olb_scipy_expit", types.float64(types.float64))


ALPHA_BOUND = 2.0  # the adaptive boosters project alpha to [-2, 2] (papers 000, 001, 004)


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's ``llvm.fma``, the processor's fused multiply-add)."""

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float64(types.float64, types.float64, types.float64), codegen


# ---------------------------------------------------------------------------------------------------
# shared by the adaptive boosters: the experts' states, the step on alpha, Hedge
# ---------------------------------------------------------------------------------------------------


@kernel
def expert_states(alpha: Float64Array1D, H: Float64Array2D):  # pragma: no cover - compiled
    """The experts' states s^0..s^N (N + 1, k): s^0 = 0, s^j = sum_{i<=j} alpha^i h^i (paper 000, Algorithm 1)."""
    N, k = H.shape
    states = np.zeros((N + 1, k))
    for i in range(N):
        for label in range(k):
            vote = alpha[i] * H[i, label]
            states[i + 1, label] = vote if i == 0 else states[i, label] + vote
    return states


@kernel
def vote_states(labels: Int64Array1D, alpha: Float64Array1D, k: Int64):  # pragma: no cover - compiled
    """The votes s^0..s^N (N + 1, k) of single-label learners: s^j = sum_{i<=j} alpha^i e_{l^i} (paper 001)."""
    N = labels.shape[0]
    states = np.zeros((N + 1, k))
    for i in range(N):
        for label in range(k):
            vote = alpha[i] if label == labels[i] else 0.0
            states[i + 1, label] = vote if i == 0 else states[i, label] + vote
    return states


@njit(cache=True, nogil=True)
def row_dots(A, B):  # pragma: no cover - compiled
    """The dot products of matching rows of A and B (m, k), added as numpy's ``einsum("ik,ik->i")`` does here:
    two interleaved partial sums (even and odd positions), eight terms per pass, then the tail, then their sum."""
    m, k = A.shape
    out = np.empty(m)
    for i in range(m):
        acc0, acc1, p = 0.0, 0.0, 0
        while k - p >= 8:
            for j in range(2):
                ab = A[i, p + 6 + j] * B[i, p + 6 + j] + (acc0 if j == 0 else acc1)
                ab = A[i, p + 4 + j] * B[i, p + 4 + j] + ab
                ab = A[i, p + 2 + j] * B[i, p + 2 + j] + ab
                ab = A[i, p + j] * B[i, p + j] + ab
                if j == 0:
                    acc0 = ab
                else:
                    acc1 = ab
            p += 8
        while p < k:
            acc0 = A[i, p] * B[i, p] + acc0
            acc1 = (A[i, p + 1] * B[i, p + 1] if p + 1 < k else 0.0) + acc1
            p += 2
        out[i] = 0.0 + (acc0 + acc1)
    return out


@njit(cache=True, nogil=True)
def projected_alpha_step(alpha, change):  # pragma: no cover - compiled
    """``alpha - change`` projected to [-2, 2] (online gradient descent on the weights alpha^i; papers 000, 001, 004)."""
    out = np.empty_like(alpha)
    for i in range(alpha.shape[0]):
        v = alpha[i] - change[i]
        out[i] = min(max(v, -ALPHA_BOUND), ALPHA_BOUND)
    return out


@kernel
def hedge_index(weights: Float64Array1D, u: Float64):  # pragma: no cover - compiled
    """The first expert whose cumulative weight reaches ``u`` times the total (the last if none does)."""
    n = weights.shape[0]
    target = u * pairwise_sum(weights, 0, n)
    cumulative = 0.0
    for i in range(n):
        cumulative = weights[i] if i == 0 else cumulative + weights[i]
        if cumulative >= target:
            return i
    return n - 1


@njit(cache=True, nogil=True)
def hedge_update(weights, losses):  # pragma: no cover - compiled
    """Hedge with step 1: ``weights * exp(-losses)``, renormalized to sum 1.

    Renormalizing every round keeps the largest weight >= 1/N, so the vector never underflows to 0.
    """
    n = weights.shape[0]
    new = np.empty(n)
    for i in range(n):
        new[i] = weights[i] * math.exp(-losses[i])
    total = pairwise_sum(new, 0, n)
    for i in range(n):
        new[i] = new[i] / total
    return new


@kernel
def fed_weights(costs: Float64Array2D, fed: BooleanArray1D, scale: Float64):  # pragma: no cover - compiled
    """Importance weights ``scale * (max(c^i) - c^i[l])`` for the labels l that are fed, 0 for the others
    (papers 000 and 004: each relevant label l is fed to learner i with weight max(c^i) - c^i[l])."""
    N, k = costs.shape
    weights = np.zeros((N, k))
    for i in range(N):
        top = costs[i].max()
        for label in range(k):
            if fed[label]:
                weights[i, label] = scale * (top - costs[i, label])
    return weights


# ---------------------------------------------------------------------------------------------------
# paper 000: Ada.OLMR
# ---------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def logistic_rank_gradient(S, relevant):  # pragma: no cover - compiled
    """Gradient of the weighted logistic loss of paper 000, eq. (8), at each row of ``S``.

    L_log(s) = w_Y sum_{l in Y} sum_{r notin Y} log(1 + exp(s[r] - s[l])), w_Y = 1 / (|Y| |Y^c|), so
    c[l] = -w_Y sum_r sigma(s[r] - s[l]) for l in Y and c[r] = w_Y sum_l sigma(s[r] - s[l]) for r notin Y.
    ``S`` is (m, k), ``relevant`` a boolean (k,) mask with 0 < |Y| < k; returns (m, k). Both sums add their
    terms in index order: numpy's order on the boosters' states (m = N + 1 >= 2 rows; its fancy-indexed
    differences were laid out row-fastest, so it summed row vectors one after the other).

    >>> logistic_rank_gradient(np.zeros((1, 3)), np.array([True, False, False]))
    array([[-0.5 ,  0.25,  0.25]])
    """
    m, k = S.shape
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    w = 1.0 / (rel.shape[0] * irr.shape[0])
    grad = np.empty((m, k))
    for row in range(m):
        for l in rel:
            grad[row, l] = -0.0
        for r in irr:
            grad[row, r] = -0.0
        for l in rel:
            for r in irr:
                sig = expit(S[row, r] - S[row, l])
                grad[row, l] += sig
                grad[row, r] += sig
        for l in rel:
            grad[row, l] = -w * grad[row, l]
        for r in irr:
            grad[row, r] = w * grad[row, r]
    return grad


@njit(cache=True, nogil=True)
def rank_losses(S, relevant):  # pragma: no cover - compiled
    """Paper 000's rank loss L_rnk of every row of S (m, k) against one label set, 0 < |Y| < k: the share of
    (relevant, irrelevant) pairs in the wrong order, a tie counting 1/2 (the value of
    :func:`olb.metrics.rank_loss_many`)."""
    m = S.shape[0]
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    n_pairs = rel.shape[0] * irr.shape[0]
    out = np.empty(m)
    for row in range(m):
        gt, eq = 0, 0
        for a in rel:
            for b in irr:
                if S[row, b] > S[row, a]:
                    gt += 1
                elif S[row, b] == S[row, a]:
                    eq += 1
        out[row] = (gt + 0.5 * eq) / n_pairs
    return out


@kernel
def adaolmr_round(
    H: Float64Array2D,
    states: Float64Array2D,
    relevant: BooleanArray1D,
    alpha: Float64Array1D,
    hedge: Float64Array1D,
    t: Int64,
):  # pragma: no cover - compiled
    """Ada.OLMR's update on one example (paper 000, Algorithm 3): returns (importance weights, alpha, Hedge).

    Costs c^1..c^{N+1} are the logistic gradients at s^0..s^N (eq. 8); learner i is fed the relevant labels with
    weight max(c^i) - c^i[l]; alpha^i takes the step f'(alpha^i) / sqrt(t) with f'(alpha) = c^{i+1} . h^i,
    projected to [-2, 2]; Hedge's weights become v^i exp(-L_rnk(s^i)).
    """
    gradients = logistic_rank_gradient(states, relevant)
    N = H.shape[0]
    slopes = row_dots(gradients[1:], H)
    root = math.sqrt(t)
    for i in range(N):
        slopes[i] = slopes[i] / root
    new_alpha = projected_alpha_step(alpha, slopes)
    new_hedge = hedge_update(hedge, rank_losses(states[1:], relevant))
    return fed_weights(gradients[:N], relevant, 1.0), new_alpha, new_hedge


# ---------------------------------------------------------------------------------------------------
# paper 001: Adaboost.OLM
# ---------------------------------------------------------------------------------------------------


@kernel
def logistic_cost_parts(S: Float64Array2D):  # pragma: no cover - compiled
    """For votes S (m, k): G[m, r, l] = 1 / (1 + exp(s[r] - s[l])) and rows[m, r] = sum_{l != r} G[m, r, l].

    The logistic cost matrix of paper 001 eq. (9) is C[r, l] = G[r, l] for l != r and C[r, r] = -rows[r].
    """
    m, k = S.shape
    G = np.empty((m, k, k))
    rows = np.empty((m, k))
    for i in range(m):
        for r in range(k):
            for label in range(k):
                G[i, r, label] = expit(S[i, label] - S[i, r])
            rows[i, r] = pairwise_sum(G[i, r], 0, k) - 0.5
    return G, rows


@njit(cache=True, nogil=True)
def alpha_gradient(S, labels, alpha, y, authors=False):  # pragma: no cover - compiled
    """f'(alpha^i) for f(a) = L^y(s^{i-1} + a e_{l^i}), for every learner i at once.

    ``S`` (N, k) holds s^{i-1}. If l^i != y: sigma(s[l] + a - s[y]); if l^i = y: -sum_{j != y} sigma(s[j] - s[y] - a)
    (the true derivative). ``authors=True`` returns the authors' code's value in the second case,
    -sum_{j != y} sigma(s[y] + a - s[j]) (= -(k-1) - the true one; ``docs/authors_code.md``).
    """
    N, k = S.shape
    out = np.empty(N)
    terms = np.empty(k - 1)
    for i in range(N):
        sy = S[i, y]
        if labels[i] != y:
            out[i] = expit(S[i, labels[i]] + alpha[i] - sy)
            continue
        j = 0
        for label in range(k):
            if label != y:
                if authors:
                    terms[j] = expit(sy + alpha[i] - S[i, label])
                else:
                    terms[j] = expit(S[i, label] - sy - alpha[i])
                j += 1
        out[i] = -pairwise_sum(terms, 0, k - 1)
    return out


@njit(cache=True, nogil=True)
def expected_costs(h, tie, M, out):  # pragma: no cover - compiled
    """A learner's expected logistic costs e[l] = sum_r h[r] C(s)[r, l] (paper 001, eq. 9), into ``out`` (k,).

    With M[r, l] = sigma(s[l] - s[r]), e = h M + h * (1 M) - k h (eq. 9 expanded); ``tie`` (k,) is subtracted to
    break ties. The products h M and 1 M add their terms in order, each with one rounding (a fused multiply-add),
    as the BLAS kernel behind numpy's ``@`` did on this (2, k) @ (k, k) product.
    """
    k = h.shape[0]
    for label in range(k):
        hm, om = 0.0, 0.0
        for r in range(k):
            hm = fma(h[r], M[r, label], hm)  # type: ignore[call-arg]  # a numba intrinsic (numba passes its context)
            om = fma(1.0, M[r, label], om)
        out[label] = hm + h[label] * om - (k * h[label] - tie[label])


@kernel
def adaolm_chain(H: Float64Array2D, tie: Float64Array2D, alpha: Float64Array1D):  # pragma: no cover - compiled
    """Adaboost.OLM's weak predictions l^i = argmin_l h^i . C(s^{i-1})[:, l], one learner after the other
    (paper 001, eq. 9; Algorithm 2; :func:`expected_costs`), and the votes s^0..s^N they cast: returns
    (labels, states). ``tie`` (N, k) breaks ties.
    """
    N, k = H.shape
    s = np.zeros(k)
    M = np.empty((k, k))
    costs = np.empty(k)
    labels = np.empty(N, np.intp)
    changed = True
    for i in range(N):
        if changed:
            for r in range(k):
                for label in range(k):
                    M[r, label] = expit(s[label] - s[r])
        expected_costs(H[i], tie[i], M, costs)
        labels[i] = np.argmin(costs)
        changed = alpha[i] != 0.0
        if changed:
            s[labels[i]] += alpha[i]
    return labels, vote_states(labels, alpha, k)


@kernel
def adaolm_update(
    states: Float64Array2D,
    labels: Int64Array1D,
    experts: Int64Array1D,
    alpha: Float64Array1D,
    hedge: Float64Array1D,
    y: Int64,
    eta: Float64,
    authors: Boolean,
):  # pragma: no cover - compiled
    """Adaboost.OLM's update once the label y is known (paper 001, Algorithm 2): alpha^i takes the step
    eta f'(alpha^i), projected to [-2, 2]; Hedge's weights become v^i exp(-1(yhat^i != y)). Returns (alpha, Hedge)."""
    N = labels.shape[0]
    change = alpha_gradient(states[:N], labels, alpha, y, authors)
    mistakes = np.empty(N)
    for i in range(N):
        change[i] = eta * change[i]
        mistakes[i] = 1.0 if experts[i] != y else 0.0
    return projected_alpha_step(alpha, change), hedge_update(hedge, mistakes)


# ---------------------------------------------------------------------------------------------------
# paper 001: OnlineMBBM
# ---------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def vector_matrix(h, M, out):  # pragma: no cover - compiled
    """``out = h @ M`` for h (k,) and M (k, k) by numba's ``np.dot``, a BLAS ``dgemv`` (scipy's OpenBLAS) like
    numpy's ``@`` (numpy's OpenBLAS): the same kernel on a given processor, so the same order of additions (tested
    bit for bit against numpy's product)."""
    out[:] = np.dot(h, M)


@kernel
def mbbm_chain(
    H: Float64Array2D,
    tie: Float64Array2D,
    start: Int64,
    node: Int64,
    child: Int64Array2D,
    matrices: Float64Array3D,
    weights: Float64Array2D,
    labels: Int64Array1D,
    out_weights: Float64Array2D,
):  # pragma: no cover - compiled
    """OnlineMBBM's chain of weak predictions (paper 001, Algorithm 1) from learner ``start`` at the vote state
    ``node``, over a memo of the states met so far: node v holds the learner's cost matrix ``matrices[v]`` (C or D,
    whichever the learner predicts with), the weights ``weights[v]`` and its successors ``child[v, l]`` (the state
    after a vote for l; -1 if not in the memo yet).

    Learner i's label is argmin_l (h^i M + tie^i)[l] (h^i M as numpy's ``@``, :func:`vector_matrix`); its weights
    go to ``out_weights[i]``, its label to ``labels[i]``. Returns (i, v): i = N when the chain is done, else learner
    i's successor state is missing from the memo (the caller adds it and resumes from i + 1 at that state).
    """
    N, k = H.shape
    h = np.empty(k)
    costs = np.empty(k)
    for i in range(start, N):
        for label in range(k):
            out_weights[i, label] = weights[node, label]
            h[label] = H[i, label]
        vector_matrix(h, matrices[node], costs)
        for label in range(k):
            costs[label] = costs[label] + tie[i, label]
        chosen = np.argmin(costs)
        labels[i] = chosen
        if i == N - 1:
            break
        nxt = child[node, chosen]
        if nxt < 0:
            return i, node
        node = nxt
    return N, node


# ---------------------------------------------------------------------------------------------------
# paper 000: OnlineBMR
# ---------------------------------------------------------------------------------------------------


@kernel
def pairwise_cost_vectors(
    S: Float64Array2D,
    relevant: BooleanArray1D,
    horizons: Int64Array1D,
    table: Float64Array3D,
    offset: Float64,
    top: Float64,
    margin: Float64,
):  # pragma: no cover - compiled
    """OnlineBMR's exact cost vectors c[l] = phi^n(s + e_l) (paper 000, eq. 2) of every row s of ``S`` (m, k), n the
    row's entry of ``horizons``; ``relevant`` a boolean (k,) mask. Returns (m, k); zeros if |Y| is 0 or k.

    ``table``, ``offset``, ``top`` are the tabulated law of D_n of
    :class:`~olb.learners.boosting.potentials._DifferenceLaw` (its slope/intercept rows over floor(t)). For each pair
    (l in Y, r notin Y), t = margin + s[r] - s[l] gives h(t), h(t - 1) - h(t) and h(t + 1) - h(t) (one table row,
    each value t * slope + intercept, two roundings); c = (sum of h + the steps of the pairs containing l) / (|Y||Y^c|).
    The sums add in numpy's order on its (m, |Y|, |Y^c|, 3) array of these values: the steps of relevant l and
    the hinges over all pairs pairwise (contiguous runs of the last axis; the hinges' two axes coalesce into one
    run), the steps of irrelevant r across the relevant labels in index order (pairwise too if r is the only
    irrelevant label: numpy's iterator then drops that axis and the relevant labels become the contiguous run).
    """
    m, k = S.shape
    rel, irr = np.flatnonzero(relevant), np.flatnonzero(~relevant)
    n_rel, n_irr = rel.shape[0], irr.shape[0]
    C = np.zeros((m, k))
    if n_rel == 0 or n_irr == 0:
        return C
    pairs = n_rel * n_irr
    hinges = np.empty(pairs)
    down = np.empty(n_irr)
    ups = np.empty(n_rel)  # one irrelevant label: its steps are one contiguous run, which numpy sums pairwise
    for i in range(m):
        n = horizons[i]
        for a in range(n_rel):
            l = rel[a]
            for b in range(n_irr):
                r = irr[b]
                t = margin + S[i, r] - S[i, l]
                j = int(min(max(t + offset, 1.0), top))
                hinges[a * n_irr + b] = t * table[n, j, 0] + table[n, j, 3]
                down[b] = t * table[n, j, 1] + table[n, j, 4]
                up = t * table[n, j, 2] + table[n, j, 5]
                if n_irr == 1:
                    ups[a] = up
                else:
                    C[i, r] = up if a == 0 else C[i, r] + up
            C[i, l] = pairwise_sum(down, 0, n_irr)
        if n_irr == 1:
            C[i, irr[0]] = pairwise_sum(ups, 0, n_rel)
        total = pairwise_sum(hinges, 0, pairs)
        for label in range(k):
            C[i, label] = (C[i, label] + total) / pairs
    return C


@kernel
def onlinebmr_round(
    states: Float64Array2D,
    relevant: BooleanArray1D,
    table: Float64Array3D,
    offset: Float64,
    top: Float64,
    margin: Float64,
):  # pragma: no cover - compiled
    """OnlineBMR's importance weights (N, k) on one example (paper 000, Algorithm 2): learner i's cost vector at
    s^{i-1} with horizon N - i (:func:`pairwise_cost_vectors`), each relevant label fed with weight max(c^i) - c^i[l]."""
    N = states.shape[0] - 1
    horizons = np.empty(N, np.intp)
    for i in range(N):
        horizons[i] = N - 1 - i
    costs = pairwise_cost_vectors(states[:N], relevant, horizons, table, offset, top, margin)
    return fed_weights(costs, relevant, 1.0)


# ---------------------------------------------------------------------------------------------------
# paper 004: TopOpt
# ---------------------------------------------------------------------------------------------------


@kernel
def pair_cost_vectors(
    S: Float64Array2D,
    a_idx: Int64Array1D,
    b_idx: Int64Array1D,
    weights: Float64Array1D,
    horizons: Int64Array1D,
    table: Float64Array3D,
    offset: Float64,
    top: Float64,
    margin: Float64,
):  # pragma: no cover - compiled
    """TopOpt's estimated cost vectors c-hat[l] = sum_p w_p Lambda^{a_p,b_p,n}(s + e_l) (paper 004, eq. 3) of every row
    s of ``S`` (m, k), n the row's entry of ``horizons``; pairs (a_p relevant, b_p irrelevant) with weights w_p.

    Same table as :func:`pairwise_cost_vectors`. Per pair, t = margin + s[b] - s[a] gives h(t) and its steps to
    t -/+ 1, each times w_p; c = sum_p h + (the steps of the pairs with a_p = l, in pair order from 0.0) + (those with
    b_p = l): numpy's pairwise sum of the hinges (a strided column of its (P, 3) array) and ``np.bincount``'s.
    """
    m, k = S.shape
    P = a_idx.shape[0]
    C = np.empty((m, k))
    hinges = np.empty(P)
    down = np.empty(k)
    up = np.empty(k)
    for i in range(m):
        n = horizons[i]
        for label in range(k):
            down[label] = 0.0
            up[label] = 0.0
        for p in range(P):
            t = margin + S[i, b_idx[p]] - S[i, a_idx[p]]
            j = int(min(max(t + offset, 1.0), top))
            w = weights[p]
            hinges[p] = (t * table[n, j, 0] + table[n, j, 3]) * w
            down[a_idx[p]] += (t * table[n, j, 1] + table[n, j, 4]) * w
            up[b_idx[p]] += (t * table[n, j, 2] + table[n, j, 5]) * w
        total = pairwise_sum(hinges, 0, P)
        for label in range(k):
            C[i, label] = (total + down[label]) + up[label]
    return C


# ---------------------------------------------------------------------------------------------------
# paper 004: TopAda
# ---------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def pair_logistic_gradients(S, a_idx, b_idx, weights):  # pragma: no cover - compiled
    """TopAda's estimated logistic gradients (paper 004, Algorithm 3) at every row s of ``S`` (m, k): the gradient of
    sum_p w_p log(1 + exp(s[b_p] - s[a_p])), +w_p sigma(s[b_p] - s[a_p]) at b_p and -w_p sigma at a_p.

    Each entry adds its pairs' terms in pair order from 0.0, as numpy's per-pair column updates did."""
    m, k = S.shape
    P = a_idx.shape[0]
    grad = np.zeros((m, k))
    for i in range(m):
        for p in range(P):
            sig = weights[p] * expit(S[i, b_idx[p]] - S[i, a_idx[p]])
            grad[i, b_idx[p]] += sig
            grad[i, a_idx[p]] -= sig
    return grad


@njit(cache=True, nogil=True)
def pair_rank_losses(S, a_idx, b_idx, weights):  # pragma: no cover - compiled
    """TopAda's estimated rank losses sum_p w_p 1(s[b_p] >= s[a_p]) of every row s of ``S`` (m, k), ties counting.

    numpy computed them as a (m, P) boolean matrix @ w: the 0/1 matrix times w by numba's ``np.dot``, the BLAS
    ``dgemv`` (``ddot`` for a single row) numpy's ``@`` calls, so the terms add in the same order (tested)."""
    m = S.shape[0]
    P = a_idx.shape[0]
    M = np.empty((m, P))
    for i in range(m):
        for p in range(P):
            M[i, p] = 1.0 if S[i, b_idx[p]] >= S[i, a_idx[p]] else 0.0
    w = np.ascontiguousarray(weights)
    if m == 1:
        out = np.empty(1)
        out[0] = np.dot(M[0], w)
        return out
    return np.dot(M, w)


@kernel
def topada_round(
    H: Float64Array2D,
    states: Float64Array2D,
    a_idx: Int64Array1D,
    b_idx: Int64Array1D,
    weights: Float64Array1D,
    alpha: Float64Array1D,
    hedge: Float64Array1D,
    step: Float64,
    t: Int64,
    clip_gradient: Boolean,
    fed: BooleanArray1D,
    weight_scale: Float64,
):  # pragma: no cover - compiled
    """TopAda's update on one example with observed pairs (paper 004, Algorithm 3): returns (importance weights,
    alpha, Hedge, gradients at s^0..s^N).

    Costs c-hat^1..c-hat^{N+1} are the estimated logistic gradients at s^0..s^N (:func:`pair_logistic_gradients`);
    learner i is fed the labels in ``fed`` with weight ``weight_scale`` (max(c^i) - c^i[l]); alpha^i takes the step
    (step / sqrt(t)) g^i with g^i = c-hat^{i+1} . h^i (clipped to [-1, 1] when ``clip_gradient``), projected to
    [-2, 2]; Hedge's weights become v^i exp(-(L-hat_rnk(s^i) - min_j L-hat_rnk(s^j))).
    """
    N = H.shape[0]
    gradients = pair_logistic_gradients(states, a_idx, b_idx, weights)
    slopes = row_dots(gradients[1:], H)
    rate = step / math.sqrt(t)
    for i in range(N):
        if clip_gradient:
            slopes[i] = min(max(slopes[i], -1.0), 1.0)
        slopes[i] = rate * slopes[i]
    new_alpha = projected_alpha_step(alpha, slopes)
    losses = pair_rank_losses(states[1:], a_idx, b_idx, weights)
    least = losses.min()
    for i in range(N):
        losses[i] = losses[i] - least
    new_hedge = hedge_update(hedge, losses)
    return fed_weights(gradients[:N], fed, weight_scale), new_alpha, new_hedge, gradients


# ---------------------------------------------------------------------------------------------------
# Oza's online boosting: the chain of Poisson weights over the trees
# ---------------------------------------------------------------------------------------------------

# numpy's log-gamma series (SPECFUN, numpy/random/src/distributions/distributions.c, ``random_loggam``)
_LOGGAM_SERIES = np.array(
    [
        8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04, -5.952380952380952e-04,
        8.417508417508418e-04, -1.917526917526918e-03, 6.410256410256410e-03, -2.955065359477124e-02,
        1.796443723688307e-01, -1.39243221690590e00,
    ]
)  # fmt: skip


@njit(cache=True, nogil=True)
def _loggam(x):  # pragma: no cover - compiled
    """log Gamma(x) as numpy's ``random_loggam`` computes it (the same operations in the same order)."""
    if x == 1.0 or x == 2.0:
        return 0.0
    n = int(7 - x) if x < 7.0 else 0
    x0 = x + n
    x2 = (1.0 / x0) * (1.0 / x0)
    gl0 = _LOGGAM_SERIES[9]
    for k in range(8, -1, -1):
        gl0 *= x2
        gl0 += _LOGGAM_SERIES[k]
    gl = gl0 / x0 + 0.5 * 1.8378770664093453 + (x0 - 0.5) * math.log(x0) - x0
    if x < 7.0:
        for _ in range(n):
            gl -= math.log(x0 - 1.0)
            x0 -= 1.0
    return gl


@njit(cache=True, nogil=True)
def poisson_draw(lam, uniforms, position):  # pragma: no cover - compiled
    """numpy's ``Generator.poisson(lam)`` from its uniform doubles ``uniforms[position:]`` (what ``Generator.random``
    gives, in order): numpy's multiplication method below 10, Hoermann's transformed rejection (PTRS) from 10 on,
    the same operations in the same order; returns the draw and the next unused position, or (-1, -1) when the
    uniforms run out."""
    end = uniforms.shape[0]
    if lam == 0.0:
        return 0, position
    if lam < 10.0:
        enlam = math.exp(-lam)
        count, prod = 0, 1.0
        while position < end:
            prod *= uniforms[position]
            position += 1
            if prod > enlam:
                count += 1
            else:
                return count, position
        return -1, -1
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while position + 1 < end:
        U = uniforms[position] - 0.5
        V = uniforms[position + 1]
        position += 2
        us = 0.5 - abs(U)
        k = int(math.floor((2 * a / us + b) * U + lam + 0.43))
        if us >= 0.07 and V <= vr:
            return k, position
        if k < 0 or (us < 0.013 and V > us):
            continue
        if (math.log(V) + math.log(invalpha) - math.log(a / (us * us) + b)) <= (
            -lam + k * loglam - _loggam(float(k + 1))
        ):
            return k, position
    return -1, -1


@kernel
def oza_chain(
    own: Float64Array1D,
    below: Float64Array1D,
    above: Float64Array1D,
    right: Float64Array1D,
    wrong: Float64Array1D,
    uniforms: Float64Array1D,
    position: Int64,
    counts: Float64Array1D,
):  # pragma: no cover - compiled
    """Oza's chain over the N trees for one example (Oza & Russell 2001): lambda = 1; tree m draws its weight
    K ~ Poisson(lambda) (:func:`poisson_draw`, from ``uniforms[position:]``) into ``counts[m]``; it is right after
    the update when its leaf mass of the label plus K (``own[m] + K``) beats the lower labels' (``below[m]``)
    strictly and the higher ones' (``above[m]``) weakly: then ``right[m] += lambda`` and lambda *=
    (right + wrong) / (2 right), else the same with ``wrong``. Returns the next unused position of ``uniforms``;
    -1 (nothing written) when they run out."""
    n = own.shape[0]
    sc, sw = right.copy(), wrong.copy()
    lam = 1.0
    for m in range(n):
        draw, position = poisson_draw(lam, uniforms, position)
        if position < 0:
            return -1
        kk = float(draw)
        counts[m] = kk
        if own[m] + kk > below[m] and own[m] + kk >= above[m]:
            sc[m] += lam
            lam *= (sc[m] + sw[m]) / (2.0 * sc[m])
        else:
            sw[m] += lam
            lam *= (sc[m] + sw[m]) / (2.0 * sw[m])
    right[:] = sc
    wrong[:] = sw
    return position
