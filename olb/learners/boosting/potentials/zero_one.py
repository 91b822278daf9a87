"""OnlineMBBM's exact 0-1 loss potential (paper 001): :class:`ZeroOnePotential`, which conditions on X_r and
counts bounded occupancies with truncated exponential generating functions (see its docstring), and its cached
entry points :func:`zero_one_potential` and :func:`mbbm_cost_matrix`."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln, xlogy

from olb.kernels import KernelModule
from olb.learners.boosting.potentials.draws import baseline_probs, check_gamma, check_horizon

potential_rounds = KernelModule("olb.learners.boosting.rounds.potentials")


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
    share a factor (power), and the cost matrix uses prefix/suffix products over those groups, compiled
    (:func:`~olb.learners.boosting.rounds.potentials.zero_one_no_error`; :meth:`value` runs the same sums in numpy).

    Scores: OnlineMBBM votes are integer counts (single-label weak predictions, alpha = 1), for which
    c_l is exact. Real scores are accepted through the ceil, but exact ties are then only as
    reliable as the floating-point scores.
    """

    def __init__(self, n_labels: int, gamma: float, tol: float = 1e-15):
        if n_labels < 2:
            raise ValueError(f"OnlineMBBM needs at least 2 labels, got {n_labels}")
        check_gamma(gamma)
        self.n_labels = int(n_labels)
        self.gamma = float(gamma)
        self.tol = float(tol)
        self.p, self.q = baseline_probs(self.n_labels, 1, self.gamma)
        self._tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._planes: dict[int, tuple[np.ndarray, ...]] = {}

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

    def planes(self, n: int) -> tuple[np.ndarray, ...]:
        """:meth:`tables` as the compiled cost matrix takes them (cached): tau's real and imaginary planes, W's
        (Re W, -Im W)."""
        planes = self._planes.get(n)
        if planes is None:
            tau, W = self.tables(n)
            W = W.reshape(n + 1, -1, 2)
            planes = self._planes[n] = tuple(
                np.ascontiguousarray(a) for a in (tau.real, tau.imag, W[..., 0], W[..., 1])
            )
        return planes

    def _no_error(self, n, c, e):
        """P(no error) (R,) for rows of (bound offsets c, multiplicities e), both (R, H) over label groups."""
        tau, W = self.tables(n)
        j = np.arange(n + 1)
        b = np.clip(c[..., None] + j, -1, n).astype(np.intp) + 1  # (R, H, J) rows of tau
        e = e.astype(np.intp)
        tau_pow = np.empty((max(int(e.max(initial=0)), 1) + 1,) + tau.shape, complex)
        tau_pow[0] = 1.0
        for i in range(1, tau_pow.shape[0]):  # (complex ** int is ~50x slower than a product)
            np.multiply(tau_pow[i - 1], tau, out=tau_pow[i])
        F = tau_pow[e[..., None], b]  # (R, H, J, V): T_b^e for each group of other labels
        full = F[:, 0].copy()
        for h in range(1, c.shape[1]):
            full *= F[:, h]
        return _contract(full, W)

    def value(self, s, r: int, n: int) -> float:
        """phi^r_n(s)."""
        check_horizon(n)
        s = np.asarray(s, float)
        vals, counts = np.unique(np.delete(s, r), return_counts=True)
        c = np.ceil(s[r] - vals) - 1.0
        p = self._no_error(int(n), c[None], counts[None])[0]
        return float(np.clip(1.0 - p, 0.0, 1.0))

    def cost_matrix(self, s, n: int) -> np.ndarray:
        """C[r, l] = phi^r_n(s + e_l) for all r, l (paper 001 eq. 4), shape (k, k).

        Labels with equal scores give equal rows/columns, so the work is over distinct score values.
        """
        check_horizon(n)
        n = int(n)
        s = np.asarray(s, float)
        vals, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
        H = vals.size
        c = np.ceil(vals[:, None] - vals[None, :]) - 1.0  # (row group, other group)
        e = counts[None, :] - np.eye(H, dtype=np.int64)  # multiplicities of the other labels, row excluded
        p_up = np.empty(H)
        p_down = np.empty((H, H))
        potential_rounds.zero_one_no_error(c, e, *self.planes(n), p_up, p_down)
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
