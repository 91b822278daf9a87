"""river's online multi-label learners as olb learners, so that the grid runs and ranks them beside olb's own.

A river multi-label model is a multi-output strategy around a binary classifier, both river's (Montiel et al.
2021, "River: machine learning for streaming data in Python"):

- strategies: binary relevance (``br``: ``multioutput.PerOutputClassifier``, one classifier per label),
  classifier chains (``cc``: ``multioutput.ClassifierChain``, Read et al. 2011; each label's classifier also
  sees the previous labels' probabilities) and Monte Carlo classifier chains (``mcc``:
  ``multioutput.MonteCarloClassifierChain``, Read, Martino and Luengo 2014; the chain's most probable label
  set among ``m`` sampled ones);
- classifiers: ``linear_model.PAClassifier`` (``pa``), ``linear_model.LogisticRegression`` (``lr``, plain SGD)
  and ``tree.HoeffdingTreeClassifier`` (``ht``).

Registered as ``river_<strategy>_<classifier>`` (``river_br_pa``, ``river_cc_ht``, ``river_mcc_lr``, ...). The
hyperparameters keep river's defaults and, where olb's vocabulary has the name (``C``), its meaning; the others
carry river's names, except the tree's ``delta`` and ``tau`` (olb's ``delta`` is AdaGrad's), here
``split_confidence`` and ``tie_threshold`` (their names in scikit-multiflow and early river).

A row reaches river as a dict {feature index: value} of its nonzero entries (river's convention for sparse
data: a zero is an absent key), so sparse rows give the dense rows' results; labels are the keys ``"y0"``,
``"y1"``, ... (strings, so that a chain's label features never collide with the feature indices). A zero changes
neither a linear classifier's prediction nor its update; a Hoeffding tree sends a row without its split feature
down the most common branch. ``scores`` are river's ``predict_proba_one`` probabilities of relevance (those of PA
and logistic regression saturate to exactly 0 or 1 beyond a margin of 30: ties in the ranking); ``labels`` river's
``predict_one`` (the more probable value of each label; for ``mcc``, the sampled label sets' best). Before its first
example a learner abstains (``predict_one`` returns ``None``): river's multi-output models learn their labels from
the examples and predict an empty dict until then, which river's progressive validation, and so the MLHAT table,
does not score (olb/protocol/stream.py). river is imported when a learner is built, never when the registry is.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param
from olb.learners.linear.rows import nonzero_entries
from olb.learners.params import C, FEATURE_SCALING
from olb.learners.river_costs import RiverCost
from olb.learners.registry import register


def _pa(C, mode, learn_intercept):
    from river import linear_model

    return linear_model.PAClassifier(C=C, mode=mode, learn_intercept=learn_intercept)


def _lr(lr, l2):
    from river import linear_model, optim

    return linear_model.LogisticRegression(optimizer=optim.SGD(lr), l2=l2)


def _ht(grace_period, split_confidence, tie_threshold, leaf_prediction):
    from river import tree

    return tree.HoeffdingTreeClassifier(
        grace_period=grace_period, delta=split_confidence, tau=tie_threshold, leaf_prediction=leaf_prediction
    )


CLASSIFIERS: dict[str, tuple[Callable[..., Any], dict[str, Param]]] = {
    "pa": (
        _pa,
        {
            "C": C,
            "mode": Param(int, 1, choices=(1, 2), doc="PA variant: 1 (PA-I, step min(C, loss/||x||^2)) or 2 (PA-II)"),
            "learn_intercept": Param(bool, True, doc="learn river's intercept next to the weights"),
        },
    ),
    "lr": (
        _lr,
        {
            "lr": Param(float, 0.01, low=0.0, open_low=True, doc="SGD step size of river's logistic regression"),
            "l2": Param(float, 0.0, low=0.0, doc="L2 penalty of river's logistic regression"),
        },
    ),
    "ht": (
        _ht,
        {
            "grace_period": Param(int, 200, low=1, doc="examples a leaf sees between split attempts"),
            "split_confidence": Param(
                float, 1e-7, low=0.0, high=1.0, open_low=True, open_high=True, doc="Hoeffding bound's 1 - confidence"
            ),
            "tie_threshold": Param(float, 0.05, low=0.0, doc="Hoeffding bound below which a tie is split"),
            "leaf_prediction": Param(
                str, "nba", choices=("nba", "mc", "nb"), doc="leaf rule: adaptive naive Bayes, majority, naive Bayes"
            ),
        },
    ),
}
"""Classifier code -> (its river factory, its hyperparameters)."""

RIVER_MODULES = {"pa": ("river.linear_model",), "lr": ("river.linear_model", "river.optim"), "ht": ("river.tree",)}
"""Classifier code -> the river modules its factory imports (with ``river.multioutput``: a learner's warm-up)."""

STRATEGIES: dict[str, dict[str, Param]] = {
    "br": {},
    "cc": {},
    "mcc": {"m": Param(int, 10, low=1, doc="label sets sampled from the chain per prediction")},
}


class RiverMultiLabel(OnlineLearner):
    """One river multi-label model (``strategy`` around ``classifier``, see the module docstring)."""

    strategy: ClassVar[str]
    classifier: ClassVar[str]
    default_protocol = "train_frozen"
    outputs = ("scores", "labels")
    predict_before_learn = False
    accepts_sparse = True

    def __post_init__(self) -> None:
        super().__post_init__()
        factory, own = CLASSIFIERS[self.classifier]
        base = factory(**{name: self.hyper[name] for name in own})
        self.label_keys = [f"y{k}" for k in range(self.n_labels)]
        from river import multioutput

        self.model: Any  # river's strategy (its classes share no typed base)
        if self.strategy == "br":
            self.model = multioutput.PerOutputClassifier(base)
        elif self.strategy == "cc":
            self.model = multioutput.ClassifierChain(base, order=list(self.label_keys))
        else:
            self.model = multioutput.MonteCarloClassifierChain(base, m=self.hyper["m"])
            self.model.order = list(self.label_keys)
        for key in self.label_keys:  # one classifier per label, in label order, before any example
            self.model[key]
        self.learned = False  # until the first example: abstain, as river's model would (module docstring)

    def _row(self, x) -> dict:
        idx, val = nonzero_entries(x, False)
        return dict(zip(idx.tolist(), val.tolist()))

    def predict_one(self, x):
        if not self.learned:
            return None
        row = self._row(x)
        proba = self.model.predict_proba_one(row)
        scores = np.array([proba[key].get(True, 0.0) for key in self.label_keys], dtype=float)
        if self.strategy == "mcc":  # its samples come from the learner's seed, one draw per prediction
            self.model._rng = random.Random(int(self.rng.integers(2**63)))
            chosen = self.model.predict_one(row)
        else:  # river's MultiLabelClassifier.predict_one, without predicting twice
            chosen = {key: max(p, key=p.get) for key, p in proba.items() if p}
        labels = np.array([bool(chosen.get(key, False)) for key in self.label_keys], dtype=np.int8)
        return {"scores": scores, "labels": labels}

    def learn_one(self, x, feedback) -> None:
        self.model.learn_one(self._row(x), {key: bool(v) for key, v in zip(self.label_keys, feedback)})
        self.learned = True


def _learner(strategy: str, classifier: str) -> type[RiverMultiLabel]:
    name = f"river_{strategy}_{classifier}"
    class_name = f"River{strategy.upper()}{classifier.upper()}"  # e.g. RiverBRPA for river_br_pa
    test_params = {"grace_period": 10} if classifier == "ht" else {}
    if strategy == "mcc":
        test_params["m"] = 3
    cls = type(
        class_name,
        (RiverMultiLabel,),
        {
            "__doc__": f"river's ``{strategy}`` strategy around its ``{classifier}`` classifier (module docstring).",
            "__module__": __name__,
            "__qualname__": class_name,
            "name": name,
            "strategy": strategy,
            "classifier": classifier,
            **STRATEGIES[strategy],
            **CLASSIFIERS[classifier][1],
            "feature_scaling": FEATURE_SCALING,
            "test_params": test_params,
            "optional_imports": ("river.multioutput", *RIVER_MODULES[classifier]),
        },
    )
    return register(cls, RiverCost(strategy, classifier))


LEARNERS = tuple(_learner(s, c) for s in ("br", "cc") for c in CLASSIFIERS) + (_learner("mcc", "lr"),)
globals().update({cls.__name__: cls for cls in LEARNERS})  # module attributes: the classes pickle by reference
