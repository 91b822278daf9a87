"""Top-k feedback (paper 004): randomized rankings and the exact probabilities of the pairs they reveal.

Paper 004 (Raman et al. 2020, online boosting for multi-label ranking with top-k feedback) lets the learner
see, after it outputs a ranking, only whether each of the k labels it ranked on top is relevant. To
still estimate losses that involve every (relevant, irrelevant) pair it randomizes its ranking and
weights every observed pair by the inverse probability of observing it (eq. 1):

    L-hat(s, R) = sum_{a in R, b notin R} 1(a, b in T^k(r~)) / P(a, b in T^k(r~)) * f^{a,b}(s).

The feedback object and the ranking helpers live in :mod:`olb.feedback`. This module holds

* the randomization schemes with the EXACT probability that a pair of labels ends in the top k:
  :class:`UniformExploration` (Sec. 2.2) and :class:`SingleSwapExploration` (App. B.1);
* :func:`importance_weights` -- the weights 1 / P of the pairs eq. 1 sums over, optionally with the App. C.2 heuristic that clips every probability to [0.005, 0.995].

Exploration acts on the ranking (label positions), never on the scores: a swap of two labels with equal
scores still changes the ranking, so the probabilities below hold whatever the ties (the authors' 2019
code swapped scores and assumed swaps that ties made void; ``docs/authors_code.md``).

>>> import numpy as np
>>> scheme = UniformExploration(n_labels=6, k=3, rho=0.1)
>>> [round(p, 4) for p in scheme.case_probabilities()]  # both / one / none of (a, b) in the top k of sigma(s)
[0.92, 0.02, 0.02]
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

__all__ = [
    "Exploration",
    "UniformExploration",
    "SingleSwapExploration",
    "EXPLORATIONS",
    "make_exploration",
    "importance_weights",
    "PROBABILITY_CLIP",
]

PROBABILITY_CLIP = (0.005, 0.995)  # paper 004, App. C.2: "clipped all computed probabilities"


class Exploration:
    """A randomization of the ranking sigma(s) and the exact law of which pairs end in its top k.

    With probability 1 - rho the ranking is kept; otherwise it is randomized by the scheme. For both
    schemes P(a, b in T^k(r~)) depends only on how many of a, b lie in V = T^k(sigma(s)) (2, 1 or 0):
    :meth:`case_probabilities` returns these three numbers, :meth:`pair_probabilities` looks them up.
    """

    name: ClassVar[str]

    def __init__(self, n_labels: int, k: int, rho: float):
        m = int(n_labels)
        if not 2 <= k < m:
            raise ValueError(f"{self.name} exploration: need 2 <= k < number of labels; got k={k} with {m} labels")
        if not 0.0 < rho < 1.0:
            raise ValueError(f"{self.name} exploration: rho={rho} must lie in (0, 1)")
        self.m, self.k, self.rho = m, int(k), float(rho)
        self._by_count = np.array(self.case_probabilities()[::-1])  # index = how many of the pair are in V

    def case_probabilities(self) -> tuple[float, float, float]:
        """(P both in V, P exactly one in V, P none in V) of ending with both labels in the top k."""
        raise NotImplementedError

    def pair_probabilities(self, in_top: np.ndarray, a_idx: np.ndarray, b_idx: np.ndarray) -> np.ndarray:
        """Exact P(a_p, b_p both in T^k(r~)) for each pair p; ``in_top`` is the (m,) mask of V."""
        return self._by_count[in_top[a_idx].astype(np.intp) + in_top[b_idx]]

    def pair_matrix(self, order: np.ndarray) -> np.ndarray:
        """(m, m) matrix of P(a, b in T^k(r~)) for the unexplored ranking ``order`` (diagonal: P(a in top k))."""
        in_top = np.zeros(self.m, bool)
        in_top[np.asarray(order)[: self.k]] = True
        a, b = np.meshgrid(np.arange(self.m), np.arange(self.m), indexing="ij")
        P = self.pair_probabilities(in_top, a.ravel(), b.ravel()).reshape(self.m, self.m)
        np.fill_diagonal(P, self.single_probabilities(in_top))
        return P

    def single_probabilities(self, in_top: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def explore(self, order: np.ndarray, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """The randomized ranking r~ of ``order`` (m,); with ``size``, that many independent draws (size, m)."""
        order = np.asarray(order)
        n = 1 if size is None else int(size)
        out = np.tile(order, (n, 1))
        explore = rng.random(n) < self.rho
        if explore.any():
            out[explore] = self._randomize(out[explore], rng)
        return out[0] if size is None else out

    def _randomize(self, orders: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


class UniformExploration(Exploration):
    """Paper 004, Sec. 2.2: with probability rho a uniformly random permutation of the labels.

    (Shuffling the scores and breaking ties at random gives exactly a uniform permutation, so that is
    what is drawn.) Exact pair probability, with V = T^k(sigma(s)) and q = k(k-1)/(m(m-1)):
        P(a, b in T^k(r~)) = (1 - rho) 1(a, b in V) + rho q
    (the paper states the lower bound rho q; the rest follows from its construction).
    """

    name = "uniform"

    def case_probabilities(self):
        m, k, rho = self.m, self.k, self.rho
        q = k * (k - 1) / (m * (m - 1))
        return (1.0 - rho + rho * q, rho * q, rho * q)

    def single_probabilities(self, in_top):
        return (1.0 - self.rho) * in_top + self.rho * self.k / self.m

    def _randomize(self, orders, rng):
        return rng.permuted(orders, axis=1)


class SingleSwapExploration(Exploration):
    """Paper 004, App. B.1: with probability rho, two sequential swaps of a top-k label with a non-top-k one.

    Each swap picks a position uniformly among the current top k and one uniformly among the other m - k
    positions and exchanges their labels; the second swap acts on the ranking after the first. Requires
    k >= 3 and rho < 0.25 (the paper's conditions). Exact probabilities that a, b end in the top k after
    exploring (multiplied by rho, plus 1 - rho when both are in V), with n = m - k:

    - both in V: ((k-2)/k)^2  [neither removed]  + 2 (1/k)(1/n)((k-1)/k)  [one removed, then put back];
    - one in V (a):  (1/n)((k-1)/k)((k-2)/k)  [b in first, a and b kept]
      + ((k-1)/k)((n-1)/n)(1/n)((k-1)/k)  [a kept, b in second]  + (1/k)(1/n)(1/n)((k-1)/k)  [a out for b, back];
    - none in V: (2/n)(1/n)((k-1)/k)  (the paper's value).

    The paper gives only lower bounds for the first two cases; the authors' 2019 code (simultaneous
    swaps) had a wrong one-in-V probability (``docs/authors_code.md``).
    """

    name = "single_swap"

    def __init__(self, n_labels: int, k: int, rho: float):
        if k < 3:
            raise ValueError(f"single_swap exploration needs k >= 3 (paper 004, App. B.1); got k={k}")
        if not rho < 0.25:
            raise ValueError(f"single_swap exploration needs rho < 0.25 (paper 004, App. B.1); got rho={rho}")
        super().__init__(n_labels, k, rho)

    def case_probabilities(self):
        k, n, rho = self.k, self.m - self.k, self.rho
        both = ((k - 2) / k) ** 2 + 2 * (1 / k) * (1 / n) * ((k - 1) / k)
        one = (
            (1 / n) * ((k - 1) / k) * ((k - 2) / k)
            + ((k - 1) / k) * ((n - 1) / n) * (1 / n) * ((k - 1) / k)
            + (1 / k) * (1 / n) * (1 / n) * ((k - 1) / k)
        )
        none = (2 / n) * (1 / n) * ((k - 1) / k)
        return (1.0 - rho + rho * both, rho * one, rho * none)

    def single_probabilities(self, in_top):
        k, n, rho = self.k, self.m - self.k, self.rho
        stay = ((k - 1) / k) ** 2 + (1 / k) * (1 / n)  # in V: not removed twice, or removed and put back
        enter = (1 / n) * ((k - 1) / k) + ((n - 1) / n) * (1 / n)  # not in V: in first and kept, or in second
        return np.where(in_top, 1.0 - rho + rho * stay, rho * enter)

    def _randomize(self, orders, rng):
        rows = np.arange(len(orders))
        for _ in range(2):
            top = rng.integers(0, self.k, len(orders))
            rest = rng.integers(self.k, self.m, len(orders))
            orders[rows, top], orders[rows, rest] = orders[rows, rest], orders[rows, top].copy()
        return orders


EXPLORATIONS: dict[str, type[Exploration]] = {"uniform": UniformExploration, "single_swap": SingleSwapExploration}


def make_exploration(name: str, n_labels: int, k: int, rho: float) -> Exploration:
    try:
        cls = EXPLORATIONS[name]
    except KeyError:
        raise ValueError(f"unknown exploration {name!r}; allowed: {', '.join(EXPLORATIONS)}") from None
    return cls(n_labels, k, rho)


def importance_weights(probabilities: np.ndarray, clip: bool) -> np.ndarray:
    """1 / P for eq. 1; with ``clip``, P is first clipped to [0.005, 0.995] (paper 004, App. C.2)."""
    p = np.clip(probabilities, *PROBABILITY_CLIP) if clip else np.asarray(probabilities, float)
    return 1.0 / p
