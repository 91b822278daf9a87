"""Exact potentials of the "optimal" boosters: OnlineBMR, TopOpt (top-k BBM) and OnlineMBBM.

A potential is phi^n(s) = E[L(s + X)], where X is the sum of n i.i.d. basis vectors drawn from a
baseline distribution u (paper 000 eq. 1, paper 001 eq. 3, paper 004 Sec. 3.2.2). The authors
estimate it by Monte Carlo with M = 100 samples; here it is computed exactly.

- Pairwise losses (OnlineBMR, TopOpt): each pair (l, r) only sees D_n = X_l - X_r, whose law is
  a trinomial marginal shared by all pairs. ``_DifferenceLaw`` tabulates it once per baseline, so a
  pair costs O(1) and a cost vector O(|Y| |Y^c|) work (OnlineBMR's: one compiled call per round,
  ``olb.learners.boosting.rounds.pairwise_cost_vectors``; TopOpt's ``pair_cost_vectors``).
- 0-1 loss (OnlineMBBM): ``ZeroOnePotential`` conditions on X_r and counts bounded occupancies with
  truncated exponential generating functions (see its docstring).

Paper numbers: 000 = Jung & Tewari 2018 (OnlineBMR), 001 = Jung, Goetz & Tewari 2017 (OnlineMBBM),
004 = Raman et al. (top-k feedback, TopOpt).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln, xlogy

from olb.kernels import KernelModule

rounds = KernelModule("olb.learners.boosting.rounds")


__all__ = [
    "baseline_probs",
    "baseline",
    "pairwise_hinge_loss",
    "pair_hinge_loss",
    "zero_one_loss",
    "PairwisePotential",
    "TopkPairPotential",
    "ZeroOnePotential",
    "zero_one_potential",
    "mbbm_cost_matrix",
    "monte_carlo_potential",
]

# --------------------------------------------------------------------------------------------------
# Baselines and losses (the n = 0 potentials)
# --------------------------------------------------------------------------------------------------


def baseline_probs(n_labels: int, n_relevant: int, gamma: float) -> tuple[float, float]:
    """Probabilities (a + gamma, a), a = (1 - gamma |R|) / k, of the biased uniform u_gamma^R.

    u_gamma^R puts gamma more mass on each label of R (paper 000 Sec. 3.1 for R = Y; paper 001
    Sec. 2.1 and paper 004 u_a^gamma for R = {r}). It is a distribution iff 0 <= gamma |R| <= 1.
    """
    a = (1.0 - gamma * n_relevant) / n_labels
    return a + gamma, a


def baseline(n_labels: int, relevant, gamma: float) -> np.ndarray:
    """The baseline vector u_gamma^R, shape (k,), for the label indices ``relevant`` (= R)."""
    rel = np.unique(np.asarray(relevant, np.intp))
    p_in, p_out = baseline_probs(n_labels, rel.size, gamma)
    u = np.full(n_labels, p_out)
    u[rel] = p_in
    return u


def _split(y) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the relevant (nonzero) and irrelevant labels of a 0/1 relevance vector."""
    y = np.asarray(y)
    return np.flatnonzero(y), np.flatnonzero(y == 0)


def pairwise_hinge_loss(s, y, margin: float = 1.0) -> np.ndarray:
    """w_Y sum_{l in Y} sum_{r notin Y} (margin + s[r] - s[l])_+, w_Y = 1/(|Y||Y^c|); 0 if |Y| in {0, k}.

    Paper 000 Sec. 3.2 (hinge loss, margin 1); ``margin=0`` is the authors' code. s: (..., k).
    """
    s = np.asarray(s, float)
    rel, irr = _split(y)
    if rel.size == 0 or irr.size == 0:
        return np.zeros(s.shape[:-1])
    a, b = np.repeat(rel, irr.size), np.tile(irr, rel.size)
    return pair_hinge_loss(s, a, b, margin=margin) / (rel.size * irr.size)


def pair_hinge_loss(s, a_idx, b_idx, weights=None, margin: float = 1.0) -> np.ndarray:
    """sum_p w_p (margin + s[b_p] - s[a_p])_+ over pairs (a_p relevant, b_p irrelevant). s: (..., m).

    The unweighted hinge rank loss of paper 004 (Sec. 2.1) restricted to the given pairs, with
    importance weights w_p (1 / P(pair observed) in the estimator Phi-hat of Sec. 3.2.2).
    """
    s = np.asarray(s, float)
    d = np.maximum(margin + s[..., b_idx] - s[..., a_idx], 0.0)
    return d.sum(-1) if weights is None else d @ np.asarray(weights, float)


def zero_one_loss(s, r: int) -> np.ndarray:
    """Multiclass 0-1 loss 1(max_{l != r} s[l] >= s[r]) (paper 001 eq. 2): ties are errors. s: (..., k)."""
    s = np.asarray(s, float)
    return (np.delete(s, r, axis=-1).max(axis=-1) >= s[..., r]).astype(float)


# --------------------------------------------------------------------------------------------------
# Pairwise potentials (OnlineBMR, TopOpt)
# --------------------------------------------------------------------------------------------------


class _DifferenceLaw:
    """Law of D_n = X_1 - X_2, (X_1, X_2, rest) ~ Multinomial(n; p, q, 1 - p - q), for n = 0..n_max.

    Built by the one-step recursion P_{n+1}(d) = p P_n(d-1) + q P_n(d+1) + (1-p-q) P_n(d) (O(n_max^2)).
    With the prefix sums F_n(d) = P(D_n <= d) and G_n(d) = E[D_n 1(D_n <= d)], for any real t
        E[(t - D_n)_+] = t F_n(floor t) - G_n(floor t)      (O(1); continuous in t),
    and the steps to t -/+ 1 follow from the same floor. Both are stored as slope/intercept tables
    over j = floor(t) in -n_max-2 .. n_max+1 (outside, F is 0 or 1 and the formulas stay exact).
    """

    def __init__(self, n_max: int, p: float, q: float):
        off = n_max + 3
        width = 2 * off  # column i <-> d = i - off
        pmf = np.zeros((n_max + 1, width))
        pmf[0, off] = 1.0
        for n in range(1, n_max + 1):
            prev = pmf[n - 1]
            pmf[n] = (1.0 - p - q) * prev
            pmf[n, 1:] += p * prev[:-1]
            pmf[n, :-1] += q * prev[1:]
        d = np.arange(width) - off
        F = np.cumsum(pmf, axis=1)
        G = np.cumsum(pmf * d, axis=1)
        # row j: h(t) = t F(j) - G(j); h(t-1) - h(t) = -t P(j) + j P(j) - F(j-1);
        #        h(t+1) - h(t) = t P(j+1) + F(j+1) - (j+1) P(j+1)      (P = pmf)
        tab = np.zeros((n_max + 1, width, 6))
        j = slice(1, width - 1)
        P0, P1, Fm = pmf[:, 1:-1], pmf[:, 2:], F[:, :-2]
        tab[:, j, 0], tab[:, j, 3] = F[:, 1:-1], -G[:, 1:-1]
        tab[:, j, 1], tab[:, j, 4] = -P0, d[1:-1] * P0 - Fm
        tab[:, j, 2], tab[:, j, 5] = P1, F[:, 2:] - d[2:] * P1
        self.n_max = n_max
        self.support = d
        self.pmf = pmf
        self._tab = tab
        self._off = float(off)
        self._top = float(width - 2)

    @property
    def tables(self) -> tuple[np.ndarray, float, float]:
        """(table, offset, top): the rows, the offset added to t and the last row index, as the compiled cost
        vectors read them (:mod:`olb.learners.boosting.rounds`)."""
        return self._tab, self._off, self._top

    def _rows(self, t, n):
        """Table rows at horizon n (an int, or an int array broadcasting against t) and floor(t)."""
        return self._tab[n, np.clip(t + self._off, 1.0, self._top).astype(np.intp)]

    def expected_hinge(self, t, n: int) -> np.ndarray:
        """E[(t - D_n)_+] elementwise."""
        t = np.asarray(t, float)
        r = self._rows(t, n)
        return t * r[..., 0] + r[..., 3]

    def hinge_and_steps(self, t, n: int) -> np.ndarray:
        """(..., 3): h(t), h(t - 1) - h(t), h(t + 1) - h(t), with h(t) = E[(t - D_n)_+]."""
        t = np.asarray(t, float)
        r = self._rows(t, n)
        return t[..., None] * r[..., :3] + r[..., 3:]


def _check_gamma(gamma: float) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")


def _check_horizon(n: int, n_max: float = np.inf) -> None:
    if not 0 <= n <= n_max:
        raise ValueError(f"number of remaining draws n={n} outside 0..{n_max} (num_learners)")


def _checked_horizons(horizons, n_max: int) -> np.ndarray:
    """``horizons`` as an index array, each checked by :func:`_check_horizon` (its extremes suffice)."""
    horizons = np.asarray(horizons, np.intp)
    for n in (horizons.min(), horizons.max()) if horizons.size else ():
        _check_horizon(int(n), n_max)
    return horizons


class PairwisePotential:
    """Exact OnlineBMR potential phi^n(s) = E[L_hinge(s + X)], X ~ Multinomial(n, u_gamma^Y).

    Paper 000: potential eq. (1), costs eq. (2) c[l] = phi^{N-i}(s^{i-1} + e_l), baseline u_gamma^Y
    (relevant labels a + gamma, irrelevant a, a = (1 - gamma|Y|)/k), hinge loss of Sec. 3.2.
    Every pair (l in Y, r notin Y) has the same D_n = X_l - X_r, so
        phi^n(s) = w_Y sum_{l in Y, r notin Y} E[(margin + s[r] - s[l] - D_n)_+].
    The law of D_n is tabulated lazily per |Y| for n = 0..num_learners.

    Parameters
    ----------
    num_learners : N, the largest horizon n served.
    n_labels : k.
    gamma : the edge of the baseline.
    margin : 1.0 is the paper's hinge (1 + s[r] - s[l])_+; 0.0 the authors' code (s[r] - s[l])_+.
    invalid_baseline : what to do when gamma|Y| > 1 (u_gamma^Y would have negative mass, e.g. yeast
        with |Y| up to 11 and the paper's gamma in {.1, .2}).
        ``"cap"`` (default): use gamma_eff = min(gamma, 1/|Y|) for that example, i.e. the most biased
        valid baseline (all mass on Y). Examples where gamma is valid are unchanged, and the
        configurations the paper reports stay runnable (the reference code crashes on them).
        ``"raise"``: raise ValueError.
    """

    def __init__(
        self, num_learners: int, n_labels: int, gamma: float, margin: float = 1.0, invalid_baseline: str = "cap"
    ):
        if invalid_baseline not in ("cap", "raise"):
            raise ValueError(f"invalid_baseline must be 'cap' or 'raise', got {invalid_baseline!r}")
        _check_gamma(gamma)
        self.num_learners = int(num_learners)
        self.n_labels = int(n_labels)
        self.gamma = float(gamma)
        self.margin = float(margin)
        self.invalid_baseline = invalid_baseline
        self._laws: dict[int, _DifferenceLaw] = {}

    def effective_gamma(self, n_relevant: int) -> float:
        """The edge used for examples with |Y| = n_relevant (see ``invalid_baseline``)."""
        if n_relevant == 0 or self.gamma * n_relevant <= 1.0:
            return self.gamma
        if self.invalid_baseline == "raise":
            raise ValueError(
                f"baseline u_gamma^Y is not a distribution: gamma={self.gamma} with |Y|={n_relevant} "
                f"gives gamma*|Y| = {self.gamma * n_relevant:g} > 1 (limit gamma <= 1/|Y| = "
                f"{1.0 / n_relevant:g}); use invalid_baseline='cap' or a smaller gamma"
            )
        return 1.0 / n_relevant

    def law(self, n_relevant: int) -> _DifferenceLaw:
        """The tabulated law of D_n = X_l - X_r for examples with |Y| = n_relevant (cached)."""
        law = self._laws.get(n_relevant)
        if law is None:
            p, q = baseline_probs(self.n_labels, n_relevant, self.effective_gamma(n_relevant))
            law = self._laws[n_relevant] = _DifferenceLaw(self.num_learners, p, q)
        return law

    def value(self, s, y, n: int) -> float:
        """phi^n(s) for the relevance vector y (0/1, shape (k,)); 0 if |Y| in {0, k}."""
        _check_horizon(n, self.num_learners)
        s = np.asarray(s, float)
        rel, irr = _split(y)
        if rel.size == 0 or irr.size == 0:
            return 0.0
        h = self.law(rel.size).expected_hinge(self.margin + s[irr] - s[rel, None], n)
        return float(h.sum()) / (rel.size * irr.size)

    def cost_vector(self, s, y, n: int) -> np.ndarray:
        """c[l] = phi^n(s + e_l) for every label l (paper 000 eq. 2), shape (k,)."""
        return self.cost_vectors(np.asarray(s, float)[None], y, np.array([n]))[0]

    def cost_vectors(self, S, y, horizons) -> np.ndarray:
        """Cost vectors of many states at once: row i is c[l] = phi^{horizons[i]}(S[i] + e_l), shape (m, k).

        OnlineBMR needs one per weak learner (state s^{i-1}, horizon N - i) on every example.
        Adding e_l only moves the pairs containing l (their hinge argument by -1 if l in Y, +1 if
        not), so c = phi^n(s) + row / column corrections: O(|Y||Y^c|) work per state, one table row per pair.
        Computed by the compiled :func:`~olb.learners.boosting.rounds.pairwise_cost_vectors` (bit-identical to
        the numpy expression it replaced, ``tests/test_rounds.py``).
        """
        horizons = _checked_horizons(horizons, self.num_learners)
        S = np.asarray(S, float)
        relevant = np.asarray(y) != 0
        n_relevant = int(relevant.sum())
        if n_relevant == 0 or n_relevant == relevant.size:
            return np.zeros(S.shape)
        # pair (l, r): t = margin + s[r] - s[l]; adding e_l moves t by -1, adding e_r by +1 (compiled, one call)
        return rounds.pairwise_cost_vectors(S, relevant, horizons, *self.law_tables(n_relevant), self.margin)

    def law_tables(self, n_relevant: int) -> tuple[np.ndarray, float, float]:
        """(table, offset, top) of ``law(n_relevant)``, the arguments of the compiled cost vectors
        (:func:`~olb.learners.boosting.rounds.pairwise_cost_vectors`)."""
        return self.law(n_relevant).tables


class TopkPairPotential:
    """Exact TopOpt pair potential Lambda^{a,b,n}(s) = E[(margin + (s + X)[b] - (s + X)[a])_+].

    Paper 004 Algorithm 2 (Top-k BBM), Sec. 3.2.2: X is the sum of n draws from u_a^gamma (a gets
    (1-gamma)/m + gamma, every other label (1-gamma)/m), the loss the unweighted hinge of the pair.
    Lambda depends on (n, s[b] - s[a]) only, through D_n = X_a - X_b (tabulated once).
    ``margin=0`` reproduces the authors' code (which also maximizes over |R|; not done here).
    """

    def __init__(self, num_learners: int, n_labels: int, gamma: float, margin: float = 1.0):
        _check_gamma(gamma)
        self.num_learners = int(num_learners)
        self.n_labels = int(n_labels)
        self.gamma = float(gamma)
        self.margin = float(margin)
        self.law = _DifferenceLaw(self.num_learners, *baseline_probs(self.n_labels, 1, self.gamma))

    def pair_values(self, diff, n: int) -> np.ndarray:
        """Lambda^{a,b,n} at score difference diff = s[b] - s[a] (any shape)."""
        _check_horizon(n, self.num_learners)
        return self.law.expected_hinge(self.margin + np.asarray(diff, float), n)

    def value(self, s, a_idx, b_idx, n: int, weights=None) -> float:
        """Phi-hat^n(s) = sum_p weights_p Lambda^{a_p,b_p,n}(s) over the observed pairs."""
        s = np.asarray(s, float)
        lam = self.pair_values(s[b_idx] - s[a_idx], n)
        return float(lam.sum() if weights is None else lam @ np.asarray(weights, float))

    def cost_vector(self, s, a_idx, b_idx, n: int, weights=None) -> np.ndarray:
        """c[l] = Phi-hat^n(s + e_l) for every label l (paper 004 eq. 3), shape (m,).

        ``a_idx``/``b_idx``: observed pairs (a relevant, b irrelevant); ``weights``: 1/P(pair observed)
        (default 1). Only pairs containing l change, so the cost is O(#pairs + m).
        """
        return self.cost_vectors(np.asarray(s, float)[None], a_idx, b_idx, np.array([n]), weights)[0]

    def cost_vectors(self, S, a_idx, b_idx, horizons, weights=None) -> np.ndarray:
        """Row i: c[l] = Phi-hat^{horizons[i]}(S[i] + e_l), shape (rows, m); one compiled call
        (:func:`~olb.learners.boosting.rounds.pair_cost_vectors`, bit-identical to the numpy expression it replaced,
        ``tests/test_rounds.py``). TopOpt needs one per weak learner (state s^{i-1}, horizon N - i)."""
        horizons = _checked_horizons(horizons, self.num_learners)
        S = np.asarray(S, float)
        a_idx = np.asarray(a_idx, np.intp)
        b_idx = np.asarray(b_idx, np.intp)
        w = np.ones(a_idx.size) if weights is None else np.asarray(weights, float)
        return rounds.pair_cost_vectors(S, a_idx, b_idx, w, horizons, *self.law.tables, self.margin)


# --------------------------------------------------------------------------------------------------
# 0-1 loss potential (OnlineMBBM)
# --------------------------------------------------------------------------------------------------


def _poisson_pmf(k, mu) -> np.ndarray:
    """Poisson pmf exp(k log mu - log k! - mu), the formula scipy.stats.poisson uses (without its import cost)."""
    return np.exp(xlogy(k, mu) - gammaln(np.asarray(k) + 1) - mu)


def _n_nodes(n: int, tol: float) -> int:
    """Smallest L > n with aliasing bound sum_{t>=1} Pois(n + tL; n) / Pois(n; n) <= tol."""
    if n == 0:
        return 1
    L = n + 1
    while True:
        t = np.arange(1, 6)
        m = n + t * L
        log_ratio = (m - n) * np.log(n) + gammaln(n + 1) - gammaln(m + 1)
        if np.exp(log_ratio).sum() <= tol:
            return L
        L += 1


class ZeroOnePotential:
    """Exact OnlineMBBM potential phi^r_n(s) = P(max_{l != r} (s_l + X_l) >= s_r + X_r).

    Paper 001: 0-1 loss eq. (2) (ties are errors, as in the authors' code), potential eq. (3),
    costs eq. (4) C[r, l] = phi^r_{N-i}(s^{i-1} + e_l); X ~ Multinomial(n, u^r),
    u^r[r] = (1-gamma)/k + gamma, u^r[l] = q = (1-gamma)/k otherwise.

    Method. With c_l = ceil(s_r - s_l) - 1, "no error" is X_l <= c_l + X_r for all l != r.
    Conditioning on X_r = j, label l may take at most b_l(j) = c_l + j draws (bounded occupancy), so
        1 - phi = n! [lambda^n] sum_j (p lambda)^j / j! prod_{l != r} T_{b_l(j)}(q lambda),
    T_b(x) = sum_{i<=b} x^i / i! the truncated exponential (T_{-1} = 0; b is capped at n, which leaves
    the coefficient unchanged). The truncated-polynomial products are evaluated pointwise at
    L > n points lambda = n omega on the circle |lambda| = n, in Poisson-scaled form (every factor has
    modulus <= 1, no overflow for any n), and the coefficient is read off by the discrete Cauchy
    formula. All coefficients lie in [0, Pois(m; n)], so the only error besides rounding is aliasing
    from degrees n + tL, bounded by ``tol`` (n < L <= n + 27 nodes for tol = 1e-15, of which
    L//2 + 1 are evaluated by conjugate symmetry): absolute error ~1e-14 (checked against rational
    arithmetic at n = 99), O(L n k) = O(k n^2) per potential. Labels with equal scores
    share a factor (power), and the cost matrix uses prefix/suffix products over those groups.

    Scores: OnlineMBBM votes are integer counts (single-label weak predictions, alpha = 1), for which
    c_l is exact. Real scores are accepted through the ceil, but exact ties are then only as
    reliable as the floating-point scores.
    """

    _BUDGET = 400_000  # complex entries per block in cost_matrix (bounds memory to a few 10 MB)

    def __init__(self, n_labels: int, gamma: float, tol: float = 1e-15):
        if n_labels < 2:
            raise ValueError(f"OnlineMBBM needs at least 2 labels, got {n_labels}")
        _check_gamma(gamma)
        self.n_labels = int(n_labels)
        self.gamma = float(gamma)
        self.tol = float(tol)
        self.p, self.q = baseline_probs(self.n_labels, 1, self.gamma)
        self._tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def tables(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(tau, W) for horizon n (cached), on the nodes omega_v = exp(2 pi i v / L), v = 0..L//2
        (the others are their conjugates, folded into W as a factor 2 before taking real parts):
        tau[b + 1, v] = e^{-qn} T_b(q n omega_v) for b = -1..n (T_{-1} = 0) and
        W[j, v] = (1 or 2) Pois(j; pn) omega_v^(j - n) / (L Pois(n; n)) for j = 0..n, stored as
        real pairs (Re, -Im) along v for ``_contract``."""
        tab = self._tables.get(n)
        if tab is None:
            L = _n_nodes(n, self.tol)
            v = np.arange(L // 2 + 1)
            i = np.arange(n + 1)[:, None]
            omega = np.exp(2j * np.pi * ((i * v) % L) / L)  # (n+1, V): omega_v^i
            tau = np.zeros((n + 2, v.size), complex)
            tau[1:] = np.cumsum(_poisson_pmf(i, self.q * n) * omega, axis=0)
            fold = np.where((v == 0) | (2 * v == L), 1.0, 2.0)
            back = np.exp(-2j * np.pi * ((n * v) % L) / L)  # omega_v^(-n)
            W = _poisson_pmf(i, self.p * n) * omega * (fold * back / (L * _poisson_pmf(n, n)))
            W = np.stack([W.real, -W.imag], axis=-1).reshape(n + 1, 2 * v.size)  # for _contract
            tab = self._tables[n] = (tau, W)
        return tab

    def _no_error(self, n, c, e, perturb):
        """P(no error) for rows of (bound offsets c, multiplicities e), both (R, H) over label groups.

        Returns p (R,) at the state; with ``perturb`` also p_up (R,) at s + e_r (all bounds + 1) and
        p_down (R, H) at s + e_l for one label l of group h (its bound - 1, multiplicity - 1)."""
        tau, W = self.tables(n)
        R, H = c.shape
        J = n + 1
        j = np.arange(J + 1 if perturb else J)
        b = np.clip(c[..., None] + j, -1, n).astype(np.intp) + 1  # (R, H, J') rows of tau
        e = e.astype(np.intp)
        tau_pow = np.empty((max(int(e.max(initial=0)), 1) + 1,) + tau.shape, complex)
        tau_pow[0] = 1.0
        for i in range(1, tau_pow.shape[0]):  # (complex ** int is ~50x slower than a product)
            np.multiply(tau_pow[i - 1], tau, out=tau_pow[i])
        F = tau_pow[e[..., None], b]  # (R, H, J', V): T_b^e for each group of other labels
        full = F[:, 0].copy()
        for h in range(1, H):
            full *= F[:, h]
        p = _contract(full[:, :J], W)
        if not perturb:
            return p
        p_up = _contract(full[:, 1:], W)
        F = F[:, :, :J]
        Q = np.empty((R, H, J, tau.shape[1]), complex)  # prod over the other groups: prefix * suffix
        Q[:, 0] = 1.0
        for h in range(1, H):
            np.multiply(Q[:, h - 1], F[:, h - 1], out=Q[:, h])
        if H > 1:
            suffix = F[:, H - 1].copy()
            for h in range(H - 2, -1, -1):
                Q[:, h] *= suffix
                suffix *= F[:, h]
        Q *= tau[np.clip(c[..., None] - 1 + j[:J], -1, n).astype(np.intp) + 1]
        Q *= tau_pow[np.maximum(e - 1, 0)[..., None], b[..., :J]]
        p_down = _contract(Q, W)
        return p, p_up, p_down

    def value(self, s, r: int, n: int) -> float:
        """phi^r_n(s)."""
        _check_horizon(n)
        s = np.asarray(s, float)
        vals, counts = np.unique(np.delete(s, r), return_counts=True)
        c = np.ceil(s[r] - vals) - 1.0
        p = self._no_error(int(n), c[None], counts[None], False)[0]
        return float(np.clip(1.0 - p, 0.0, 1.0))

    def cost_matrix(self, s, n: int) -> np.ndarray:
        """C[r, l] = phi^r_n(s + e_l) for all r, l (paper 001 eq. 4), shape (k, k).

        Labels with equal scores give equal rows/columns, so the work is over distinct score values.
        """
        _check_horizon(n)
        n = int(n)
        s = np.asarray(s, float)
        vals, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
        H = vals.size
        c = np.ceil(vals[:, None] - vals[None, :]) - 1.0  # (row group, other group)
        e = counts[None, :] - np.eye(H)  # multiplicities of the other labels, row excluded
        p_up = np.empty(H)
        p_down = np.empty((H, H))
        V = self.tables(n)[0].shape[1]
        step = max(1, self._BUDGET // (H * V * (n + 2)))
        for lo in range(0, H, step):
            rows = slice(lo, lo + step)
            _, p_up[rows], p_down[rows] = self._no_error(n, c[rows], e[rows], True)
        C = 1.0 - p_down[inv[:, None], inv[None, :]]
        C[np.diag_indices_from(C)] = 1.0 - p_up[inv]
        return np.clip(C, 0.0, 1.0)


def _contract(x, W):
    """Re sum_{j, v} x[..., j, v] W[j, v] for complex x, with W stored as real pairs (Re W, -Im W).

    einsum's own loop, not BLAS: a threaded OpenBLAS gemv was up to 50x slower on a busy 2-core host.
    """
    x = np.ascontiguousarray(x)
    return np.einsum("ij,j->i", x.view(float).reshape(-1, W.size), W.ravel()).reshape(x.shape[:-2])


@lru_cache(maxsize=8)
def _zero_one(n_labels: int, gamma: float) -> ZeroOnePotential:
    return ZeroOnePotential(n_labels, gamma)


def zero_one_potential(s, r: int, n: int, gamma: float) -> float:
    """phi^r_n(s) of OnlineMBBM (paper 001 eq. 3), exact; see ``ZeroOnePotential``."""
    return _zero_one(len(s), float(gamma)).value(s, r, n)


def mbbm_cost_matrix(s, n: int, gamma: float) -> np.ndarray:
    """C[r, l] = phi^r_n(s + e_l) of OnlineMBBM (paper 001 eq. 4), exact, shape (k, k)."""
    return _zero_one(len(s), float(gamma)).cost_matrix(s, n)


# --------------------------------------------------------------------------------------------------
# Monte Carlo reference (tests and benchmarks only)
# --------------------------------------------------------------------------------------------------


def monte_carlo_potential(loss, s, u, n: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Plain Monte Carlo E[loss(s + X)], X ~ Multinomial(n, u), as in the authors' code (M samples).

    ``s`` (..., k): one independent estimate per state; ``loss`` maps (..., k) -> (...).
    """
    s = np.asarray(s, float)
    X = rng.multinomial(n, u, size=s.shape[:-1] + (n_samples,))
    return loss(s[..., None, :] + X).mean(axis=-1)
