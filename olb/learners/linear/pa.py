"""Passive-aggressive binary relevance, PA-I-BR and PA-II-BR, linear and kernel (the baselines of paper 002).

One PA learner per label (Crammer et al. 2006) with target t_k = +1 (relevant) or -1, hinge loss
l_k = max(0, 1 - t_k f_k(x)) and update f_k += tau_k t_k k(x, .); a label is predicted relevant when
f_k(x) > 0, and f_k(x) is its ranking score. The linear learners take sparse rows; the kernel ones (RBF)
store support vectors and get min-max scaled features by default, like FALT(k).
"""

from __future__ import annotations

import numpy as np

from olb.learners.base import OnlineLearner
from olb.kernels import KernelModule
from olb.learners.linear import rows
from olb.learners.linear.rows import nonzero_entries
from olb.learners.linear.support_vectors import SupportVectors
from olb.learners.params import BIAS, FEATURE_SCALING, KERNEL, SIGMA, with_default
from olb.learners.params import C as C_PARAM  # not C: the class bodies declare the hyperparameter C
from olb.learners.linear.costs import LinearRowCost, SupportVectorCost
from olb.learners.registry import register

passes = KernelModule("olb.learners.linear.passes")


def pa_steps(losses: np.ndarray, sq_norm: float, C: float, variant: str) -> np.ndarray:
    """PA step sizes: PA-I ``min(C, l / ||x||^2)``, PA-II ``l / (||x||^2 + 1 / (2C))`` (||x||^2 = k(x, x)).

    >>> pa_steps(np.array([0.0, 1.0, 4.0]), 2.0, 1.0, "I")
    array([0. , 0.5, 1. ])
    >>> pa_steps(np.array([1.0]), 2.0, 1.0, "II")
    array([0.4])
    """
    losses = np.asarray(losses, dtype=float)
    return passes.pa_steps_into(losses, float(sq_norm), float(C), variant == "I", np.empty_like(losses))


class _PABR(OnlineLearner):
    """Linear PA binary relevance over (sparse) rows: W is (d [+1]) x q."""

    variant = "I"
    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    accepts_sparse = True
    learns_passes = True  # the protocol gives a phase that does not predict to learn_pass, whole
    C = C_PARAM
    bias = BIAS
    feature_scaling = FEATURE_SCALING
    test_params = {"C": 1.0}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.W = np.zeros((self.n_features + int(self.bias), self.n_labels))

    def predict_one(self, x):
        s = passes.row_scores(self.W, *nonzero_entries(x, self.bias), np.empty(self.n_labels))
        return {"scores": s, "labels": (s > 0).astype(np.int8)}

    def learn_one(self, x, feedback) -> None:
        idx, val = nonzero_entries(x, self.bias)
        y = np.ascontiguousarray(feedback, dtype=np.int8)
        q = self.n_labels
        passes.pa_round(self.W, idx, val, y, self.C, self.variant == "I", np.empty(q), np.empty(q))

    def learn_pass(self, X, Y) -> None:
        """``learn_one`` on every row of the block X (n, d), dense or CSR, in order, as one compiled call."""
        indptr, indices, data = rows.csr_entries(X)
        Y = np.ascontiguousarray(Y, dtype=np.int8)
        rule = rows.PA_I if self.variant == "I" else rows.PA_II
        passes.learn_pass(rule, self.W, self.W, rows.NO_STATE, indptr, indices, data, self.bias, Y, np.array([self.C]))


@register(cost=LinearRowCost())
class PA1BR(_PABR):
    """PA-I-BR(l): linear passive-aggressive (PA-I) per label.

    >>> learner = PA1BR(n_features=2, n_labels=3, C=1.0)
    >>> learner.learn_one(np.array([1.0, 1.0]), np.array([1, 0, 1]))
    >>> learner.predict_one(np.array([1.0, 1.0]))["scores"]
    array([ 1., -1.,  1.])
    """

    name = "pa1_br"


@register(cost=LinearRowCost())
class PA2BR(_PABR):
    """PA-II-BR(l): linear passive-aggressive (PA-II) per label.

    >>> learner = PA2BR(n_features=2, n_labels=3, C=1.0)
    >>> learner.learn_one(np.array([1.0, 1.0]), np.array([1, 0, 1]))
    >>> learner.predict_one(np.array([1.0, 1.0]))["scores"]
    array([ 0.8, -0.8,  0.8])
    """

    name = "pa2_br"
    variant = "II"


class _PABRKernel(OnlineLearner):
    """Kernel PA binary relevance: f_k(x) = sum_j alpha_jk k(x_j, x), alpha_tk = tau_k t_k."""

    variant = "I"
    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    learns_passes = True  # a training pass without the protocol's work per row (same numpy calls per row)
    C = C_PARAM
    sigma = SIGMA
    kernel = KERNEL
    feature_scaling = with_default(FEATURE_SCALING, "minmax")
    test_params = {"C": 1.0, "sigma": 1.0}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.support = SupportVectors(self.n_features, self.n_labels, self.kernel, self.sigma)

    def predict_one(self, x):
        s = self.support.scores(self.support.kernel_row(x))
        return {"scores": s, "labels": (s > 0).astype(np.int8)}

    def learn_one(self, x, feedback) -> None:
        t = 2.0 * np.asarray(feedback, dtype=float) - 1.0
        losses = np.maximum(0.0, 1.0 - t * self.support.scores(self.support.kernel_row(x)))
        steps = pa_steps(losses, self.support.self_kernel(x), self.C, self.variant)
        if np.any(steps):
            self.support.add(x, steps * t)


@register(cost=SupportVectorCost())
class PA1BRKernel(_PABRKernel):
    """PA-I-BR(k): kernel passive-aggressive (PA-I) per label, RBF by default.

    >>> learner = PA1BRKernel(n_features=2, n_labels=3, C=1.0, sigma=1.0)
    >>> learner.learn_one(np.array([1.0, 1.0]), np.array([1, 0, 1]))
    >>> learner.predict_one(np.array([1.0, 1.0]))["scores"]
    array([ 1., -1.,  1.])
    """

    name = "pa1_br_kernel"


@register(cost=SupportVectorCost())
class PA2BRKernel(_PABRKernel):
    """PA-II-BR(k): kernel passive-aggressive (PA-II) per label, RBF by default.

    >>> learner = PA2BRKernel(n_features=2, n_labels=3, C=1.0, sigma=1.0)
    >>> learner.learn_one(np.array([1.0, 1.0]), np.array([1, 0, 1]))
    >>> learner.predict_one(np.array([1.0, 1.0]))["scores"].round(4)   # tau = 1 / (1 + 1/2)
    array([ 0.6667, -0.6667,  0.6667])
    """

    name = "pa2_br_kernel"
    variant = "II"
