"""The shared hyperparameter vocabulary: one definition and one meaning per name, used by every family.

A learner declares the ones it has as class attributes (``sigma = SIGMA``), adjusting only the default
with :func:`with_default` where its paper's differs. Names: ``k`` is the top-k feedback size (paper 004) and
``n_neighbors`` the neighbours of a nearest-neighbour vote; ``gamma`` is a booster's edge (olb.learners.boosting)
and ``sigma`` an RBF kernel's width; ``C`` weighs the data loss against the regulariser (PA's aggressiveness, a
ridge ELM's inverse ridge), ``eta`` is a gradient step size and ``repeats`` the updates per example (ALT's
"learning times"; not ``tau``, which a VFDT uses).
"""

from __future__ import annotations

import dataclasses

from olb.learners.base import Param

FEATURE_SCALING = Param(
    str,
    "none",
    choices=("none", "minmax"),
    doc="features seen by the learner: 'none' (as in the file) or 'minmax' (each feature mapped to [0, 1] with the "
    "training split's min and max; on sparse data, divided by the training split's max |x| so that zeros stay "
    "zeros). The protocol applies it before the learner sees any row.",
)
INIT_FRACTION = Param(
    float,
    0.2,
    low=0.0,
    high=1.0,
    open_high=True,
    doc="fraction of the (permuted) training rows given at once to learn_many before the stream (initial block)",
)
SIGMA = Param(float, 1.0, low=0.0, open_low=True, doc="RBF kernel width: k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))")
N_NEIGHBORS = Param(int, 10, low=1, doc="neighbours of the nearest-neighbour vote")
NUM_HIDDEN = Param(int, 200, low=1, doc="hidden units of an extreme learning machine (random, never trained)")
ETA = Param(float, 0.5, low=0.0, open_low=True, doc="step size of a (sub)gradient update")
REPEATS = Param(
    int,
    1,
    low=1,
    doc="most updates on the same example per round (ALT's 'learning times'); "
    "the repeats stop once the example's loss is 0",
)
DELTA = Param(
    float, 1.0, low=0.0, open_low=True, doc="AdaGrad's regulariser: per-entry step eta / (delta + sqrt(sum g^2))"
)
C = Param(
    float,
    1.0,
    low=0.0,
    open_low=True,
    doc="weight of the data loss against the regulariser: PA's aggressiveness; a ridge ELM's 1 / ridge",
)
BIAS = Param(bool, False, doc="append a constant-1 feature (a learned intercept) to every row")
KERNEL = Param(
    str,
    "rbf",
    choices=("rbf", "linear"),
    doc="kernel of a support-vector model: 'rbf' (width sigma) or 'linear' (<x, x'>)",
)


def with_default(param: Param, default) -> Param:
    """``param`` with another default (its meaning and range unchanged)."""
    return dataclasses.replace(param, default=default)
