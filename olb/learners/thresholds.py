"""Labels for learners that only rank: a threshold on top of any scorer (fixed, predicted size, or learned).

The boosters of papers 000 and 004 output a score per label and never decide which labels are relevant, so
threshold metrics (F1, Hamming loss, ...) cannot be computed for them. :class:`Thresholded` wraps such a
scorer and adds the ``"labels"`` output by one of four rules (``threshold_rule``). The two learned ones are
paper 002's idea on top of a fixed scorer: a threshold predictor t = <w, phi> trained online with the ALT loss
(:mod:`olb.learners.linear.alt_loss`), the scores standing in for the label columns. Only w learns from the
loss (up to ``repeats`` steps of size ``eta`` per round, stopping at zero loss); the scorer learns as it always
does. They differ in what the threshold sees:

``alt_scores`` (default)
    The scores standardized across the labels, z = (s - mean s) / std s, and t = <w, [sort(z), 1]> (sorted
    from the largest). Labels: {k : z_k > t}. The rule is blind to the scale and offset of the scores, which
    for a booster (a sum of votes) grow along the stream; sorting makes it blind to which label holds which
    score, so one w serves every label set (t can, for instance, fall between the m-th and (m+1)-th score).
``alt_features``
    Paper 002's form: t(x) = <w, [x, 1]>, linear in the features, against the raw scores: {k : s_k > t(x)}.
    It has to follow the scores' scale with the features alone.
``size``
    The predicted label-set size m = the mean number of relevant labels of the training examples seen so far
    (rounded, at least 1): the m best-scored labels are relevant.
``fixed``
    {k : s_k > threshold}; the scale of the scores is the scorer's own (a booster's scores are sums of votes).

Registered as ``<scorer>+threshold`` for every full-information multi-label learner that gives scores only
(``adaolmr+threshold``, ``onlinebmr+threshold``); its hyperparameters are the scorer's plus the rule's.

>>> from olb.learners.boosting import AdaOLMR
>>> Wrapped = thresholded(AdaOLMR)
>>> learner = Wrapped(n_features=3, n_labels=4, seed=0, num_learners=2)
>>> sorted(learner.predict_one(np.array([0.1, 0.2, 0.3])))
['labels', 'scores']
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from olb.kernels import KernelModule
from olb.learners.base import OnlineLearner, Param, RoundCache, StreamShape
from olb.learners.boosting import AdaOLMR, OnlineBMR
from olb.learners.params import ETA, FEATURE_SCALING, REPEATS, with_default
from olb.learners.threshold_costs import ThresholdedCost
from olb.learners.registry import register

alt_loss = KernelModule("olb.learners.linear.alt_loss")

LEARNED_RULES = ("alt_scores", "alt_features")  # the rules whose threshold learns from the stream


class Thresholded(OnlineLearner):
    """A scorer (``scorer_class``) with a label threshold; see the module docstring."""

    scorer_class: ClassVar[type[OnlineLearner]]
    outputs = ("scores", "labels")
    threshold_rule = Param(
        str,
        "alt_scores",
        choices=(*LEARNED_RULES, "size", "fixed"),
        doc="how labels are decided from the scores: a threshold learned with the ALT loss on "
        "the standardized sorted scores or on the features, the running mean label-set "
        "size, or a fixed threshold",
    )
    threshold = Param(float, 0.0, doc="the fixed threshold of threshold_rule='fixed'")
    eta = with_default(ETA, 0.01)
    repeats = with_default(REPEATS, 5)
    feature_scaling = with_default(FEATURE_SCALING, "minmax")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.scorer = self.scorer_class(
            self.n_features, self.n_labels, seed=self.rng, **self._scorer_params(self.hyper)
        )
        n_inputs = self.n_labels if self.threshold_rule == "alt_scores" else self.n_features
        self.w = np.zeros(n_inputs + 1)  # threshold predictor t = <w, phi>
        self.n_seen = 0
        self.n_relevant = 0
        self._scores: RoundCache[np.ndarray] = RoundCache()

    @classmethod
    def check_params(cls, params: dict, shape: StreamShape) -> list[str]:
        return cls.scorer_class.check_params(cls._scorer_params(params), shape)

    @classmethod
    def _scorer_params(cls, params: dict) -> dict:
        """The scorer's own hyperparameters out of the wrapper's."""
        return {key: params[key] for key in cls.scorer_class.params}

    def predict_one(self, x):
        scores = np.asarray(self._scores.get(x, self.scorer.predict_one), dtype=float)
        return {"scores": scores.copy(), "labels": self._labels(x, scores)}

    def learn_one(self, x, feedback) -> None:
        scores = np.asarray(self._scores.get(x, self.scorer.predict_one), dtype=float)
        self._scores.clear()
        y = np.ascontiguousarray(feedback, dtype=np.int8)
        if self.threshold_rule in LEARNED_RULES:
            self._learn_threshold(x, scores, y)
        self.n_seen += 1
        self.n_relevant += int(y.sum())
        self.scorer.learn_one(x, feedback)

    def _labels(self, x, scores: np.ndarray) -> np.ndarray:
        if self.threshold_rule == "fixed":
            return (scores > self.threshold).astype(np.int8)
        if self.threshold_rule == "size":
            size = max(1, int(round(self.n_relevant / self.n_seen))) if self.n_seen else 1
            labels = np.zeros(self.n_labels, np.int8)
            labels[np.argsort(-scores, kind="stable")[:size]] = 1
            return labels
        z, phi = self._threshold_inputs(x, scores)
        return (z > self.w @ phi).astype(np.int8)

    def _threshold_inputs(self, x, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The scores in the threshold's units and the threshold's inputs phi (see the module docstring)."""
        if self.threshold_rule == "alt_features":
            return scores, np.append(np.nan_to_num(x), 1.0)
        spread = scores.std()
        z = (scores - scores.mean()) / (spread if spread > 0 else 1.0)
        return z, np.append(np.sort(z)[::-1], 1.0)

    def _learn_threshold(self, x, scores: np.ndarray, y: np.ndarray) -> None:
        """Up to ``repeats`` ALT steps on the threshold column alone (the scores stay the scorer's)."""
        z, features = self._threshold_inputs(x, scores)
        s = np.concatenate([[self.w @ features], z])
        c = np.empty(self.n_labels + 1)
        step = self.eta * float(features @ features)
        total = 0.0
        for _ in range(self.repeats):
            if not alt_loss.alt_coefficients(s, y, c):
                break
            s[0] += step * c[0]
            total += c[0]
        self.w += self.eta * total * features


def thresholded(scorer_class: type[OnlineLearner]) -> type[Thresholded]:
    """The ``<scorer>+threshold`` learner of ``scorer_class``."""
    clash = set(Thresholded.params) & set(scorer_class.params)
    if clash:
        raise ValueError(f"{scorer_class.name}: hyperparameter(s) {sorted(clash)} clash with the threshold's")
    return type(
        f"{scorer_class.__name__}Thresholded",
        (Thresholded,),
        {
            "__doc__": f"{scorer_class.__name__} with a label threshold (olb.learners.thresholds).",
            "name": f"{scorer_class.name}+threshold",
            "scorer_class": scorer_class,
            "task": scorer_class.task,
            "feedback": "full",
            "default_protocol": scorer_class.default_protocol,
            "predict_before_learn": scorer_class.predict_before_learn,
            **scorer_class.params,
            "test_params": dict(scorer_class.test_params),
            "__module__": __name__,
        },
    )


for _scorer in (AdaOLMR, OnlineBMR):  # the full-feedback rankers, which predict no label set
    _cls = thresholded(_scorer)
    register(_cls, ThresholdedCost(_scorer.name, LEARNED_RULES))
    globals()[_cls.__name__] = _cls  # picklable by name, as a module attribute
