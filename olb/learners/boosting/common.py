"""What the online boosters of papers 000 (multi-label) and 001 (multiclass) share.

- ``NUM_LEARNERS``, ``NUM_COVARIATES``, ``WEAK_LEARNER``, ``AUTHORS_WEIGHTS``: the shared hyperparameters;
  each booster adjusts defaults where its paper differs.
- ``build_weak_learners``: the pool of N weak learners of a booster (:func:`olb.weak.make_weak_learners`).
- ``ALL_FEATURES_PARAM``: ``num_covariates`` defaulting to all features (paper 001's learners).
- ``GAMMA_PARAM`` / ``MARGIN_PARAM``: the edge of the potential-based boosters' baseline and their hinge margin.
- ``hedge_init`` / ``hedge_draw``: the adaptive boosters' Hedge over their N experts.
- ``UniformDraws`` / ``DrawsAhead`` / ``forest_pass``: a generator's uniforms drawn ahead, the learners drawing
  through them, and the loop that runs a booster's compiled prequential pass over the VFDT forest block after
  block (Oza's, Adaboost.OLM's).
- ``rounds``: the compiled per-round arithmetic they share (Hedge, the experts' states, importance weights), the
  kernels of :mod:`~olb.learners.boosting.rounds.shared` as :mod:`olb.kernels` loads them.
"""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import Param
from olb.weak import WEAK_LEARNERS, VFDTForest, WeakLearners, make_weak_learners

NUM_LEARNERS = Param(int, 100, low=1, doc="number of weak learners N")
NUM_COVARIATES = Param(int, 20, low=1, doc="random features per weak learner")
WEAK_LEARNER = Param(str, "vfdt", choices=WEAK_LEARNERS, doc="weak learner family")
AUTHORS_WEIGHTS = Param(
    bool,
    False,
    doc="scale each tree's importance weights by a constant from U[3, 10], as the authors' code does (not in the paper)",
)
ALL_FEATURES_PARAM = Param(
    int,
    0,
    low=0,
    doc="random features per tree; 0 (default): every tree sees all features, as in the authors' multiclass code",
)
GAMMA_PARAM = Param(float, 0.1, low=0.0, high=1.0, open_low=True, open_high=True, doc="edge of the baseline")
MARGIN_PARAM = Param(float, 1.0, low=0.0, doc="hinge margin inside the potential (authors' code: 0)")

rounds = KernelModule("olb.learners.boosting.rounds.shared")


def hedge_init(n_experts: int) -> np.ndarray:
    """The uniform Hedge weights 1/N of the first round."""
    return np.full(n_experts, 1.0 / n_experts)


def hedge_draw(weights: np.ndarray, rng: np.random.Generator) -> int:
    """An expert index drawn with probability proportional to ``weights`` (one uniform draw)."""
    return rounds.hedge_index(weights, rng.random())


def build_weak_learners(
    kind: str,
    n_learners: int,
    n_features: int,
    n_labels: int,
    num_covariates: int,
    rng: np.random.Generator,
    importance_scale_range: tuple[float, float] | None = None,
) -> WeakLearners:
    """The booster's N weak learners; ``num_covariates`` <= 0 means every tree sees all features."""
    covariates = n_features if num_covariates <= 0 else num_covariates
    return make_weak_learners(kind, n_learners, n_features, n_labels, covariates, importance_scale_range, rng)


class UniformDraws:
    """The uniform doubles of a generator (``rng.random()``, in order), drawn ``BLOCK`` at a time ahead of their use
    and consumed from ``position``: what :func:`~olb.learners.boosting.rounds.oza.poisson_draw` turns into numpy's
    Poisson draws (Oza's) and Adaboost.OLM's tie breaks and Hedge draws, so that a compiled pass draws exactly what
    ``rng.poisson`` and ``rng.random`` would, in one call. Only these draws
    may use the generator once they start (it runs ahead of them). Not model state: no arrays of its own
    (``__slots__``)."""

    __slots__ = ("rng", "uniforms", "position")
    BLOCK = 4096
    PASS_BLOCK = 1 << 16  # at most, for a compiled pass: each stop for uniforms costs a call into the extension

    def __init__(self, rng: np.random.Generator):
        self.rng, self.uniforms, self.position = rng, np.empty(0), 0

    def refill(self, size: int = BLOCK) -> None:
        """The unused uniforms followed by new ones: ``size`` in all, or ``BLOCK`` new ones where more are unused
        (the array reused when its length stays, as in a compiled pass's refills)."""
        unused = self.uniforms[self.position :]
        fresh = max(self.BLOCK, size - len(unused))
        if len(self.uniforms) != len(unused) + fresh:
            self.uniforms = np.empty(len(unused) + fresh)
        self.uniforms[: len(unused)] = unused  # numpy copies through a buffer where the two overlap
        self.rng.random(out=self.uniforms[len(unused) :])
        self.position = 0

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` uniforms (a view, valid until the next refill)."""
        if self.position + n > len(self.uniforms):
            self.refill(n)
        taken = self.uniforms[self.position : self.position + n]
        self.position += n
        return taken

    @property
    def state(self) -> tuple:
        """The generator's state with the draws held ahead (a copy: a refill reuses the array)."""
        return self.rng.bit_generator.state, self.uniforms.copy(), self.position

    @state.setter
    def state(self, state: tuple) -> None:
        self.rng.bit_generator.state, uniforms, self.position = state
        self.uniforms = uniforms.copy()

    def __getstate__(self):
        return self.rng, self.uniforms, self.position

    def __setstate__(self, state) -> None:
        self.rng, self.uniforms, self.position = state


class DrawsAhead:
    """A learner whose random draws all go through ``self._draws`` (:class:`UniformDraws`): its random state is the
    draws' state."""

    _draws: UniformDraws

    @property
    def random_state(self) -> tuple:
        return self._draws.state

    @random_state.setter
    def random_state(self, state: tuple) -> None:
        self._draws.state = state


def forest_pass(forest: VFDTForest, draws: UniformDraws, n_rows: int, row_uniforms: int, rows_from) -> None:
    """A booster's compiled prequential pass over ``n_rows`` rows, block after block: ``rows_from(row)`` runs a
    compiled loop from ``row`` and returns the row it stopped before (all done: ``n_rows``); in between, the
    forest's arrays grow and about ``row_uniforms`` uniforms per row left are drawn ahead (early draws draw the
    same sequence)."""
    forest.begin_pass()
    row = 0
    while row < n_rows:
        forest.make_room()
        row = rows_from(row)
        if row < n_rows:  # stopped for room or for uniforms
            draws.refill(max(row_uniforms, min(draws.PASS_BLOCK, row_uniforms * (n_rows - row))))
