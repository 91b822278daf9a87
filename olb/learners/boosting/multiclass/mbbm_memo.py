"""OnlineMBBM's memos: the cost matrices of its 0-1 potentials per canonical vote state (:class:`MBBMCosts`,
shared by the process) and one learner's graph of the vote states met so far, which the compiled chain walks
(:class:`StateMemo`)."""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.boosting.potentials import baseline, mbbm_cost_matrix

mbbm_rounds = KernelModule("olb.learners.boosting.rounds.mbbm")


class MBBMCosts:
    """OnlineMBBM cost matrices C[r, l] = phi^r_n(s + e_l) for integer votes s, memoized.

    Potentials are shift invariant and permutation equivariant, so each (n, s) is reduced to a canonical
    state: the votes sorted in decreasing order, as gaps d = max(s) - s. A label with d > n + 1 cannot win
    (its row is all 1); with g the largest gap of a label that can, gaps are clipped at g + n + 2, beyond
    which a label can catch no label that can still win, even with one more vote. A decided state (leader ahead by n + 2
    or more) has C = 1 except the leader's row, 0, without computation. The remaining canonical states are
    computed exactly (``samples == 0``, :func:`~olb.learners.boosting.potentials.mbbm_cost_matrix`) or, for the
    benchmark against the authors' method, by Monte Carlo with ``samples`` draws per entry.

    Exact tables depend only on (k, gamma), so they are shared by every learner of the process
    (:meth:`shared`, the two most recent (k, gamma)); Monte Carlo tables belong to one learner (their values
    depend on its random draws). Both caches are bounded (cleared when full), which changes no value.
    """

    _shared: dict[tuple[int, float], MBBMCosts] = {}
    MAX_SHARED = 2  # exact tables kept per process (the most recently used (k, gamma))
    MAX_RAW_KEYS = 400_000  # the (n, raw votes) front cache is cleared when it grows past this
    MAX_CANONICAL_KEYS = 1_000_000  # ~0.8 KB each for k = 5; cleared when it grows past this
    ZERO = 1e-12

    def __init__(self, n_labels: int, gamma: float, samples: int = 0, rng: np.random.Generator | None = None):
        self.k, self.gamma, self.samples = int(n_labels), float(gamma), int(samples)
        if self.samples and rng is None:
            raise ValueError("MBBMCosts: Monte Carlo costs (samples > 0) need a random generator (rng)")
        self.rng = rng
        self._canonical: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._raw: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.computed = 0  # canonical states computed (misses)

    @classmethod
    def shared(cls, n_labels: int, gamma: float) -> MBBMCosts:
        key = (int(n_labels), float(gamma))
        costs = cls._shared.pop(key, None) or cls(n_labels, gamma)
        cls._shared[key] = costs  # most recent last
        while len(cls._shared) > cls.MAX_SHARED:
            del cls._shared[next(iter(cls._shared))]
        return costs

    def get(self, s: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(C, W, D) at integer votes ``s`` (int64, (k,)) with ``n`` draws to go.

        W[r] = sum_l (C[r, l] - C[r, r]) is the weight of Algorithm 1 (line 10) if the label is r, and
        D[r, l] = (C[r, l] - C[r, r]) / W[r] the normalized cost matrix of eq. (5) (a zero row where W[r] = 0).
        Differences below ``ZERO`` (the exact potentials' accuracy is ~1e-14) count as 0.
        """
        key = (n, s.tobytes())
        hit = self._raw.get(key)
        if hit is not None:
            return hit
        k = self.k
        order, gaps = np.empty(k, np.int64), np.empty(k, np.int64)
        mbbm_rounds.canonical_votes(s, n, order, gaps)
        can = self._canonical.get((n, gaps.tobytes()))
        if can is None:
            if len(self._canonical) >= self.MAX_CANONICAL_KEYS:
                self._canonical.clear()
            can = self._canonical[(n, gaps.tobytes())] = self._compute(gaps, n)
        out = (np.empty((k, k)), np.empty(k), np.empty((k, k)))
        mbbm_rounds.relabelled_costs(*can, order, *out)
        if len(self._raw) >= self.MAX_RAW_KEYS:
            self._raw.clear()
        self._raw[key] = out
        return out

    def _compute(self, gaps: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = self.k
        if gaps[1] >= n + 2:  # decided: the leader wins whatever the remaining n votes do
            C = np.ones((k, k))
            C[0] = 0.0
            return C, np.zeros(k), np.zeros((k, k))
        self.computed += 1
        if self.samples:
            C = self._monte_carlo(-gaps.astype(float), n)
        else:
            C = mbbm_cost_matrix(-gaps.astype(float), n, self.gamma)
        W, D = np.empty(k), np.empty((k, k))
        mbbm_rounds.cost_weights(C, self.ZERO, W, D)
        return C, W, D

    def _monte_carlo(self, s: np.ndarray, n: int) -> np.ndarray:
        """The authors' estimator: each phi^r_n(s + e_l) from ``samples`` multinomial draws (ties are errors)."""
        k, rng = self.k, self.rng
        assert rng is not None  # __init__ refuses samples without one
        C = np.empty((k, k))
        for r in range(k):
            X = rng.multinomial(n, baseline(k, [r], self.gamma), size=(k, self.samples))  # (l, M, k)
            totals = s + np.eye(k)[:, None, :] + X
            others = np.delete(totals, r, axis=2).max(axis=2)
            C[r] = (others >= totals[:, :, r]).mean(axis=1)
        return C


class StateMemo:
    """The vote states one OnlineMBBM learner has met, as arrays for
    :func:`~olb.learners.boosting.rounds.mbbm.mbbm_chain`: node v holds a state s (sum(s) votes cast, so learner
    sum(s) + 1 is next), its weights W and the matrix the learner predicts with (C or D, copies of
    :meth:`MBBMCosts.get`'s), and its successors s + e_l (-1: not met yet).
    Cleared when it would hold more than ~``MAX_BYTES`` (its arrays plus ~300 bytes of Python objects per node),
    which changes no value: ~100,000 states for k = 5, ~10,000 for k = 26.
    """

    MAX_BYTES = 64 * 2**20

    def __init__(self, costs: MBBMCosts, horizons: list[int], which: int, k: int):
        self.costs, self.horizons, self.which, self.k = costs, horizons, which, k
        self.max_nodes = max(1024, self.MAX_BYTES // (8 * (k * k + 3 * k) + 300))
        self.clear()

    def clear(self, capacity: int = 1024) -> None:
        k = self.k
        self.child = np.full((capacity, k), -1, np.int64)
        self.matrices = np.empty((capacity, k, k))
        self.weights = np.empty((capacity, k))
        self.states: list[np.ndarray] = []
        self.index: dict[bytes, int] = {}
        self.add(np.zeros(k, np.int64), self.horizons[0])  # node 0: no vote cast

    def add(self, s: np.ndarray, n: int) -> int:
        """The node of state ``s`` (int64, (k,); ``n`` = the horizon of learner sum(s) + 1), added if new."""
        key = s.tobytes()
        v = self.index.get(key)
        if v is not None:
            return v
        v = len(self.states)
        if v == self.child.shape[0]:
            self._grow()
        entry = self.costs.get(s, n)
        self.matrices[v] = entry[self.which]
        self.weights[v] = entry[1]
        self.states.append(s)
        self.index[key] = v
        return v

    def _grow(self) -> None:
        n = self.child.shape[0]
        self.child = np.concatenate([self.child, np.full((n, self.k), -1, np.int64)])
        self.matrices = np.concatenate([self.matrices, np.empty((n, self.k, self.k))])
        self.weights = np.concatenate([self.weights, np.empty((n, self.k))])

    def chain(self, H: np.ndarray, tie: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(labels, weights) of the N learners' chain of least-cost predictions, resumed at each state not met yet."""
        if len(self.states) >= self.max_nodes:
            self.clear()
        N, k = H.shape
        labels = np.empty(N, np.intp)
        weights = np.empty((N, k))
        i, v = 0, 0
        while True:
            i, v = mbbm_rounds.mbbm_chain(H, tie, i, v, self.child, self.matrices, self.weights, labels, weights)
            if i == N:
                return labels, weights
            s = self.states[v].copy()
            s[labels[i]] += 1
            nxt = self.add(s, self.horizons[i + 1])
            self.child[v, labels[i]] = nxt
            i, v = i + 1, nxt
