"""What a potential's draws X are: the baseline u_gamma^R they come from, the checks of its edge gamma and of a
horizon n (the number of draws to go), and the law of D_n = X_l - X_r that the pairwise potentials tabulate
(:class:`DifferenceLaw`)."""

from __future__ import annotations

import numpy as np


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


def check_gamma(gamma: float) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")


def check_horizon(n: int, n_max: float = np.inf) -> None:
    if not 0 <= n <= n_max:
        raise ValueError(f"number of remaining draws n={n} outside 0..{n_max} (num_learners)")


def checked_horizons(horizons, n_max: int) -> np.ndarray:
    """``horizons`` as an index array, each checked by :func:`check_horizon` (its extremes suffice)."""
    horizons = np.asarray(horizons, np.intp)
    for n in (horizons.min(), horizons.max()) if horizons.size else ():
        check_horizon(int(n), n_max)
    return horizons


class DifferenceLaw:
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
        vectors read them (:mod:`olb.learners.boosting.rounds.potentials`)."""
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
