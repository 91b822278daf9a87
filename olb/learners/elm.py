"""Online sequential extreme learning machines for multi-label data: OSML-ELM and the stand-in ELM-OMLL*.

A single hidden layer of ``num_hidden`` sigmoid units with random input weights ~ U[-1, 1] and biases ~ U[0, 1]
(never trained) maps x to h(x); the output weights beta (num_hidden x q) are fitted to bipolar targets
(+1 relevant, -1 not) by least squares on the initial block, then by recursive least squares one row at a time.
A label is relevant when its output h(x) beta is > 0; the outputs are the ranking scores.
"""

from __future__ import annotations

import numpy as np

from olb.learners.base import OnlineLearner
from olb.learners.params import FEATURE_SCALING, INIT_FRACTION, NUM_HIDDEN, with_default
from olb.learners.params import C as C_PARAM  # not C: ELMOMLLStar declares the hyperparameter C
from olb.learners.elm_costs import ELMCost
from olb.learners.registry import register


class _OnlineELM(OnlineLearner):
    """Random sigmoid layer + (ridge) recursive least squares. ``_initial_fit`` says how M_0 and beta_0 are formed."""

    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    learns_passes = True  # a training pass without the protocol's work per row (same numpy calls per row)
    num_hidden = NUM_HIDDEN
    init_fraction = INIT_FRACTION
    feature_scaling = with_default(FEATURE_SCALING, "minmax")
    test_params = {"num_hidden": 10}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.input_weights = self.rng.uniform(-1.0, 1.0, (self.n_features, self.num_hidden))
        self.biases = self.rng.uniform(0.0, 1.0, self.num_hidden)
        self.beta = np.zeros((self.num_hidden, self.n_labels))
        self.M: np.ndarray | None = None  # (H^T H [+ I / C])^-1 of the rows seen, once the initial block is learned

    def hidden(self, X: np.ndarray) -> np.ndarray:
        """h(x) = sigmoid(x A + b), for one row (d,) or a block (n, d)."""
        return 1.0 / (1.0 + np.exp(-(X @ self.input_weights + self.biases)))

    def predict_one(self, x):
        o = self.hidden(x) @ self.beta
        return {"scores": o, "labels": (o > 0).astype(np.int8)}

    def _initial_fit(self, H: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(M_0, beta_0) from the initial block's hidden outputs H and bipolar targets T."""
        raise NotImplementedError

    def learn_many(self, X, Y) -> None:
        """The initial block by (ridge) least squares; after it, rows one by one."""
        if self.M is not None:
            return super().learn_many(X, Y)
        self.M, self.beta = self._initial_fit(
            self.hidden(np.asarray(X, dtype=float)), 2.0 * np.asarray(Y, dtype=float) - 1.0
        )

    def learn_one(self, x, feedback) -> None:
        """One RLS step (chunk of one row): M -= M h h^T M / (1 + h^T M h); beta += M h (t - h^T beta)."""
        if self.M is None:  # no initial block: the first row is one
            return self.learn_many(np.asarray(x, dtype=float)[None, :], np.asarray(feedback)[None, :])
        h, t = self.hidden(x), 2.0 * np.asarray(feedback, dtype=float) - 1.0
        Mh = self.M @ h
        self.M -= np.outer(Mh, Mh) / (1.0 + h @ Mh)
        self.beta += np.outer(self.M @ h, t - h @ self.beta)


@register(cost=ELMCost())
class OSMLELM(_OnlineELM):
    """OSML-ELM (Venkatesan et al. 2017), threshold 0, as paper 002 runs it (initial block: the first 20% of
    each training permutation).

    As in its authors' code, M_0 = pinv(H_0^T H_0) and beta_0 = pinv(H_0) T_0. With fewer initial rows than
    ``num_hidden``, H_0^T H_0 is singular and the recursion is no longer exact least squares (as in that code).

    >>> learner = OSMLELM(n_features=2, n_labels=3, seed=0, num_hidden=5)
    >>> rng = np.random.default_rng(1)
    >>> X = rng.random((20, 2)); Y = np.column_stack([X[:, 0] > 0.5, X[:, 1] > 0.5, X[:, 0] > 2])
    >>> learner.learn_many(X[:10], Y[:10])
    >>> for x, y in zip(X[10:], Y[10:]): learner.learn_one(x, y)
    >>> learner.predict_one(np.array([0.9, 0.1]))["labels"]
    array([1, 0, 0], dtype=int8)
    """

    name = "osml_elm"

    def _initial_fit(self, H, T):
        return np.linalg.pinv(H.T @ H), np.linalg.pinv(H) @ T


@register(cost=ELMCost())
class ELMOMLLStar(_OnlineELM):
    """ELM-OMLL*: a clearly labelled stand-in for ELM-OMLL (Du & Vong 2020), whose formula was not recovered.

    Ridge-regularised online sequential ELM with bipolar targets and threshold 0: M_0 = (H_0^T H_0 + I/C)^-1,
    then the same recursion, i.e. exact ridge regression min ||H beta - T||^2 + ||beta||^2 / C on the rows
    seen. Never to be reported under ELM-OMLL's name.

    >>> learner = ELMOMLLStar(n_features=2, n_labels=2, seed=0, num_hidden=4, C=10.0)
    >>> learner.learn_many(np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.1, 0.9]]),
    ...                    np.array([[0, 1], [1, 0], [1, 1], [0, 1]]))
    >>> learner.predict_one(np.array([0.0, 1.0]))["labels"]
    array([0, 1], dtype=int8)
    """

    name = "elm_omll_star"
    C = C_PARAM
    test_params = {"num_hidden": 10, "C": 1.0}

    def _initial_fit(self, H, T):
        M = np.linalg.inv(H.T @ H + np.eye(H.shape[1]) / self.C)
        return M, M @ (H.T @ T)
