"""The exact pairwise potentials: OnlineBMR's (:class:`PairwisePotential`, paper 000) and TopOpt's
(:class:`TopkPairPotential`, paper 004), each pair's term read off the tabulated law of D_n
(:class:`~olb.learners.boosting.potentials.draws.DifferenceLaw`), their cost vectors one compiled call."""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.boosting.potentials.draws import (
    DifferenceLaw,
    baseline_probs,
    check_gamma,
    check_horizon,
    checked_horizons,
)
from olb.learners.boosting.potentials.losses import split_relevance

rounds = KernelModule("olb.learners.boosting.rounds.potentials")


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
        check_gamma(gamma)
        self.num_learners = int(num_learners)
        self.n_labels = int(n_labels)
        self.gamma = float(gamma)
        self.margin = float(margin)
        self.invalid_baseline = invalid_baseline
        self._laws: dict[int, DifferenceLaw] = {}

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

    def law(self, n_relevant: int) -> DifferenceLaw:
        """The tabulated law of D_n = X_l - X_r for examples with |Y| = n_relevant (cached)."""
        law = self._laws.get(n_relevant)
        if law is None:
            p, q = baseline_probs(self.n_labels, n_relevant, self.effective_gamma(n_relevant))
            law = self._laws[n_relevant] = DifferenceLaw(self.num_learners, p, q)
        return law

    def value(self, s, y, n: int) -> float:
        """phi^n(s) for the relevance vector y (0/1, shape (k,)); 0 if |Y| in {0, k}."""
        check_horizon(n, self.num_learners)
        s = np.asarray(s, float)
        rel, irr = split_relevance(y)
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
        Computed by the compiled :func:`~olb.learners.boosting.rounds.potentials.pairwise_cost_vectors`
        (bit-identical to the numpy expression it replaced, ``tests/test_rounds.py``).
        """
        horizons = checked_horizons(horizons, self.num_learners)
        S = np.asarray(S, float)
        relevant = np.asarray(y) != 0
        n_relevant = int(relevant.sum())
        if n_relevant == 0 or n_relevant == relevant.size:
            return np.zeros(S.shape)
        # pair (l, r): t = margin + s[r] - s[l]; adding e_l moves t by -1, adding e_r by +1 (compiled, one call)
        return rounds.pairwise_cost_vectors(S, relevant, horizons, *self.law_tables(n_relevant), self.margin)

    def law_tables(self, n_relevant: int) -> tuple[np.ndarray, float, float]:
        """(table, offset, top) of ``law(n_relevant)``, the arguments of the compiled cost vectors
        (:func:`~olb.learners.boosting.rounds.potentials.pairwise_cost_vectors`)."""
        return self.law(n_relevant).tables


class TopkPairPotential:
    """Exact TopOpt pair potential Lambda^{a,b,n}(s) = E[(margin + (s + X)[b] - (s + X)[a])_+].

    Paper 004 Algorithm 2 (Top-k BBM), Sec. 3.2.2: X is the sum of n draws from u_a^gamma (a gets
    (1-gamma)/m + gamma, every other label (1-gamma)/m), the loss the unweighted hinge of the pair.
    Lambda depends on (n, s[b] - s[a]) only, through D_n = X_a - X_b (tabulated once).
    ``margin=0`` reproduces the authors' code (which also maximizes over |R|; not done here).
    """

    def __init__(self, num_learners: int, n_labels: int, gamma: float, margin: float = 1.0):
        check_gamma(gamma)
        self.num_learners = int(num_learners)
        self.n_labels = int(n_labels)
        self.gamma = float(gamma)
        self.margin = float(margin)
        self.law = DifferenceLaw(self.num_learners, *baseline_probs(self.n_labels, 1, self.gamma))

    def pair_values(self, diff, n: int) -> np.ndarray:
        """Lambda^{a,b,n} at score difference diff = s[b] - s[a] (any shape)."""
        check_horizon(n, self.num_learners)
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
        (:func:`~olb.learners.boosting.rounds.potentials.pair_cost_vectors`, bit-identical to the numpy expression it
        replaced, ``tests/test_rounds.py``). TopOpt needs one per weak learner (state s^{i-1}, horizon N - i)."""
        horizons = checked_horizons(horizons, self.num_learners)
        S = np.asarray(S, float)
        a_idx = np.asarray(a_idx, np.intp)
        b_idx = np.asarray(b_idx, np.intp)
        w = np.ones(a_idx.size) if weights is None else np.asarray(weights, float)
        return rounds.pair_cost_vectors(S, a_idx, b_idx, w, horizons, *self.law.tables, self.margin)
