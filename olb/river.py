"""olb's multi-label learners as river estimators (``river.base.MultiLabelClassifier``), for river pipelines,
``river.evaluate.progressive_val_score`` and river's multi-output metrics.

Every multi-label learner of the registry is here under its class name (``olb.river.FALT``, ``olb.river.PA1BR``,
``olb.river.OSMLELM``, ``olb.river.AdaOLMRThresholded``, ...; river's own learners, registered in olb as
``river_*`` and ``mlhat_*``, are not wrapped back). A wrapped learner takes the learner's hyperparameters as keyword arguments
and checks them when it is built (olb's ``Param`` declarations: a bad value is refused before any example);
the model itself is built from the first example: its feature names (in the order of that dict) and its label
names, unless ``features=`` and ``labels=`` give them up front.

- ``x`` is a dict of numbers; a missing feature is 0 (sparse dicts work). A feature the model does not know is
  refused (pass ``features=`` when the first example does not name every feature, e.g. sparse text).
- ``y`` is a dict {label: bool}; a missing label is False.
- ``predict_one(x)`` is the learner's ``labels`` output as {label: bool}, ``score_one(x)`` its ``scores``
  output as {label: float} (higher = more relevant; not probabilities, so there is no ``predict_proba_one``).
  A learner that only ranks (Ada.OLMR, OnlineBMR, TopOpt, TopAda) has ``score_one`` only: its ``predict_one``
  refuses, naming the thresholded version (``AdaOLMRThresholded``, ...) where there is one.
- Before the first example the model does not exist yet: ``predict_one`` returns ``{}`` (river's convention;
  ``progressive_val_score`` then skips the metric update) unless ``features`` and ``labels`` were given.

**Same results as olb's protocol.** ``learn_one(x, y)`` right after ``predict_one(x)`` (or ``score_one``) on
an equal x learns from that round's prediction, as olb's protocol does (``olb/protocol/stream.py``: predict, then
learn from the feedback built from the prediction), without predicting again; otherwise it predicts first
where the learner needs its prediction to learn (``predict_before_learn``, top-k feedback), as the protocol's
training rounds do. So, for the same seed and the same rows in the same order, ``progressive_val_score`` gives
the predictions of ``olb.protocol.run_stream`` under ``prequential_last20`` on that order: every row predicted,
then learned (on the rows in file order, ``prequential``; with ``features`` and ``labels`` given, so that the
first example is predicted and scored as the protocol scores it). Two settings are the protocol's, not the
learner's, and are set here:

- **initial block.** The protocol gives a learner with ``init_fraction`` its first ``round(init_fraction * n)``
  training rows at once (``learn_many``). A stream has no n: pass ``init_rows`` (default 0, no block) and the
  first ``init_rows`` examples are held, then learned at once; ``init_rows = round(init_fraction * n)`` with
  n = the rows of the prequential protocol's first (unscored) phase matches the protocol. Predictions during
  the block come from the model before the block (the protocol does not predict those rows).
- **feature scaling.** The protocol scales rows with the training split's statistics (``feature_scaling``);
  a stream scales them in the pipeline (``preprocessing.MinMaxScaler() | ...``, running statistics, so not
  the same numbers): ``feature_scaling`` is not accepted here.

>>> from river import evaluate, metrics, preprocessing
>>> import olb.river
>>> stream = [({"a": 1.0, "b": 0.0}, {"x": True, "y": False}), ({"a": 0.0, "b": 1.0}, {"x": False, "y": True})] * 20
>>> model = preprocessing.MinMaxScaler() | olb.river.FALT(eta=0.1)
>>> evaluate.progressive_val_score(stream, model, metrics.multioutput.MicroAverage(metrics.F1()))
MicroAverage(F1): 97.37%
>>> model.predict_one({"a": 1.0})
{'x': True, 'y': False}
>>> olb.river.FALT(eta=-1.0)
Traceback (most recent call last):
...
ValueError: falt: eta=-1.0 is out of range; allowed: float with 0.0 < value
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from river import base

from olb.learners.base import OnlineLearner, StreamShape
from olb.protocol.feedback_builders import _feedback_builder
from olb.learners.registry import ALGORITHMS

PROTOCOL_PARAMS = ("feature_scaling", "init_fraction")  # set by the stream here (module docstring)


class OLBMultiLabel(base.MultiLabelClassifier):
    """An olb multi-label learner (``learner_class``) as a river multi-label classifier (module docstring).

    >>> import olb.river
    >>> model = olb.river.PA1BR(C=1.0, features=["a", "b"], labels=["x", "y"])
    >>> model.predict_one({"a": 1.0})
    {'x': False, 'y': False}
    >>> model.learn_one({"a": 1.0}, {"x": True})
    >>> model.predict_one({"a": 1.0}), model.score_one({"a": 1.0})
    ({'x': True, 'y': False}, {'x': 1.0, 'y': -1.0})
    """

    learner_class: ClassVar[type[OnlineLearner]]

    def __init__(
        self,
        seed: int | None = None,
        features: list | None = None,
        labels: list | None = None,
        init_rows: int = 0,
        **hyper,
    ):
        self.seed, self.features, self.labels, self.init_rows, self.hyper = seed, features, labels, init_rows, hyper
        cls = self.learner_class
        problems = [
            f"{name}= is set by the stream here, not the learner (see olb.river)"
            for name in hyper
            if name in PROTOCOL_PARAMS
        ]
        if "init_fraction" not in cls.params and init_rows:
            problems.append(f"init_rows={init_rows!r}: {cls.name} takes no initial block")
        elif not isinstance(init_rows, int) or isinstance(init_rows, bool) or init_rows < 0:
            problems.append(f"init_rows={init_rows!r} is not a non-negative integer")
        if problems:
            raise ValueError(f"{cls.name}: " + "; ".join(problems))
        settings: dict[str, object] = {"init_fraction": 0.0} if "init_fraction" in cls.params else {}
        if "feature_scaling" in cls.params:
            settings["feature_scaling"] = "none"
        self._params = cls.validate({**hyper, **settings})  # refuses bad values now, naming them
        self._learner: OnlineLearner | None = None
        self._block: list = []
        # (x, row, prediction) of the last prediction, for the learn_one that follows it
        self._round: tuple[dict, np.ndarray, Any] | None = None
        if features is not None and labels is not None:
            self._build(list(features), list(labels))

    def _build(self, features: list, labels: list) -> OnlineLearner:
        cls = self.learner_class
        problems = cls.check_params(self._params, StreamShape(len(features), len(labels)))
        if problems:
            raise ValueError(f"{cls.name}: " + "; ".join(problems))
        self._feature_index = {name: i for i, name in enumerate(features)}
        self._label_names = labels
        self._learner = cls(len(features), len(labels), seed=self.seed, **self._params)
        return self._learner

    @property
    def _multiclass(self):
        return False

    def _row(self, x: dict) -> np.ndarray:
        row = np.zeros(len(self._feature_index))
        try:
            for name, value in x.items():
                row[self._feature_index[name]] = value
        except KeyError:
            unknown = sorted(map(str, set(x) - set(self._feature_index)))
            raise ValueError(
                f"{self.learner_class.name}: unknown feature(s) {unknown}: the model knows the features of the first "
                f"example ({len(self._feature_index)}); give every feature name up front with features=[...]"
            ) from None
        return row

    def _labels_vector(self, y: dict) -> np.ndarray:
        unknown = set(y) - set(self._label_names)
        if unknown:
            raise ValueError(
                f"{self.learner_class.name}: unknown label(s) {sorted(map(str, unknown))}; known: {self._label_names}"
            )
        return np.array([int(bool(y.get(label, False))) for label in self._label_names], dtype=np.int8)

    def _predict(self, learner: OnlineLearner, x: dict):
        row = self._row(x)
        prediction = learner.predict_one(row)
        self._round = (dict(x), row, prediction)
        return prediction if isinstance(prediction, dict) else {self.learner_class.outputs[0]: prediction}

    def learn_one(self, x: dict, y: dict) -> None:
        learner = self._learner if self._learner is not None else self._build(list(x), list(y))
        target = self._labels_vector(y)
        if len(self._block) < self.init_rows:
            self._block.append((self._row(x), target))
            if len(self._block) == self.init_rows:
                rows, targets = zip(*self._block)
                learner.learn_many(np.array(rows), np.array(targets))
            self._round = None
            return
        if self._round is not None and self._round[0] == x:  # the round predicted just before
            _, row, prediction = self._round
        else:
            row = self._row(x)
            needs = learner.predict_before_learn or learner.feedback != "full"
            prediction = learner.predict_one(row) if needs else None
        self._round = None
        learner.learn_one(row, _feedback_builder(learner)(prediction, target))

    def predict_one(self, x: dict, **kwargs) -> dict:  # river's signature; olb's learners take no options
        if self._learner is None:
            return {}
        if "labels" not in self.learner_class.outputs:
            raise NotImplementedError(_ranks_only(self.learner_class))
        labels = self._predict(self._learner, x)["labels"]
        return {label: bool(v) for label, v in zip(self._label_names, labels)}

    def score_one(self, x: dict) -> dict:
        """Each label's relevance score (higher = more relevant): the learner's ``scores`` output."""
        if self._learner is None:
            return {}
        scores = self._predict(self._learner, x)["scores"]
        return {label: float(v) for label, v in zip(self._label_names, scores)}


def _ranks_only(cls) -> str:
    versions = [other.__name__ for other in WRAPPED if getattr(other, "scorer_class", None) is cls]
    instead = f"; {versions[0]} adds labels to its scores" if versions else ""
    return f"{cls.name} only ranks the labels: use score_one{instead}"


def _wrap(cls: type[OnlineLearner]) -> type[OLBMultiLabel]:
    doc = (cls.__doc__ or cls.name).strip().splitlines()[0]
    return type(
        cls.__name__,
        (OLBMultiLabel,),
        {"learner_class": cls, "__module__": __name__, "__doc__": f"olb's ``{cls.name}`` for river: {doc}"},
    )


WRAPPED = tuple(
    cls
    for cls in ALGORITHMS.values()
    if cls.task == "multilabel" and not cls.__module__.endswith(("river_family", "river_mlhat"))
)
LEARNERS = {cls.__name__: _wrap(cls) for cls in WRAPPED}
"""Class name -> the river version of that learner."""
globals().update(LEARNERS)
__all__ = ["OLBMultiLabel", *LEARNERS]
