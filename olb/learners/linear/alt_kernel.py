"""FALT(k): kernelised first-order ALT (paper 002, §4.4), on a growing store of support vectors."""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import OnlineLearner
from olb.learners.linear.support_vectors import SupportVectors
from olb.learners.params import ETA, FEATURE_SCALING, KERNEL, REPEATS, SIGMA, with_default
from olb.learners.linear.costs import SupportVectorCost
from olb.learners.registry import register

alt_loss = KernelModule("olb.learners.linear.alt_loss")


@register(cost=SupportVectorCost())
class FALTKernel(OnlineLearner):
    """FALT(k): FALT with every column a kernel expansion, f_i(x) = sum_j alpha_ji k(x_j, x) (i = 0..q).

    A round computes the kernel row of x_t against the support vectors once; each of the up to ``repeats``
    steps adds ``eta c`` to x_t's coefficients and moves its own scores by ``eta c k(x_t, x_t)`` [RECON], and
    the repeats stop once the loss is 0. x_t becomes a support vector when its coefficients are nonzero.
    ``kernel='linear'`` gives exactly FALT(l) (a check, not one of the paper's models). Features are min-max
    scaled by default: the paper's emotions figure is not reached on raw features.

    >>> learner = FALTKernel(n_features=2, n_labels=3, eta=0.5, repeats=5, sigma=1.0)
    >>> x, y = np.array([1.0, 0.5]), np.array([1, 0, 1])
    >>> learner.learn_one(x, y)
    >>> learner.predict_one(x)["labels"]
    array([1, 0, 1], dtype=int8)
    """

    name = "falt_kernel"
    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    learns_passes = True  # a training pass without the protocol's work per row (same numpy calls per row)
    eta = ETA
    repeats = with_default(REPEATS, 10)
    sigma = SIGMA
    kernel = KERNEL
    feature_scaling = with_default(FEATURE_SCALING, "minmax")
    test_params = {"eta": 0.5, "repeats": 5, "sigma": 1.0}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.support = SupportVectors(self.n_features, self.n_labels + 1, self.kernel, self.sigma)

    def predict_one(self, x):
        s = self.support.scores(self.support.kernel_row(x))
        return {"scores": s[1:].copy(), "labels": (s[1:] > s[0]).astype(np.int8)}

    def learn_one(self, x, feedback) -> None:
        s = self.support.scores(self.support.kernel_row(x))
        alpha = np.empty(self.n_labels + 1)
        step = self.eta * self.support.self_kernel(x)
        if alt_loss.repeat_on_scores(s, np.ascontiguousarray(feedback, dtype=np.int8), step, self.repeats, alpha):
            self.support.add(x, self.eta * alpha)
