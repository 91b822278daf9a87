"""The losses L that the potentials average (phi^0 = L), and the authors' Monte Carlo estimate of a potential
phi^n(s) = E[L(s + X)] (tests and benchmarks only)."""

from __future__ import annotations

import numpy as np


def split_relevance(y) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the relevant (nonzero) and irrelevant labels of a 0/1 relevance vector."""
    y = np.asarray(y)
    return np.flatnonzero(y), np.flatnonzero(y == 0)


def pairwise_hinge_loss(s, y, margin: float = 1.0) -> np.ndarray:
    """w_Y sum_{l in Y} sum_{r notin Y} (margin + s[r] - s[l])_+, w_Y = 1/(|Y||Y^c|); 0 if |Y| in {0, k}.

    Paper 000 Sec. 3.2 (hinge loss, margin 1); ``margin=0`` is the authors' code. s: (..., k).
    """
    s = np.asarray(s, float)
    rel, irr = split_relevance(y)
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


def monte_carlo_potential(loss, s, u, n: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Plain Monte Carlo E[loss(s + X)], X ~ Multinomial(n, u), as in the authors' code (M samples).

    ``s`` (..., k): one independent estimate per state; ``loss`` maps (..., k) -> (...).
    """
    s = np.asarray(s, float)
    X = rng.multinomial(n, u, size=s.shape[:-1] + (n_samples,))
    return loss(s[..., None, :] + X).mean(axis=-1)
