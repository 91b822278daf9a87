"""What every online learner shares: declared hyperparameters, their validation, and the learn/predict protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True)
class Param:
    """A hyperparameter's type, default and allowed values (scikit-learn's parameter constraints, in small).

    ``low``/``high`` bound numbers (``open_low``/``open_high`` exclude the bound); ``choices`` lists the allowed
    values of a categorical parameter.
    """

    kind: type
    default: Any
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple | None = None
    doc: str = ""

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        lo = "" if self.low is None else f"{self.low} {'<' if self.open_low else '<='} "
        hi = "" if self.high is None else f" {'<' if self.open_high else '<='} {self.high}"
        return f"{self.kind.__name__} with {lo}value{hi}" if (lo or hi) else self.kind.__name__

    def check(self, owner: str, name: str, value: Any) -> Any:
        """Return ``value`` converted to ``kind``, or raise ValueError naming the parameter and what is allowed."""
        problem = None
        if self.choices is not None:
            if value not in self.choices:
                problem = "is not allowed"
        elif self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                problem = "is not a boolean"
        elif isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            problem = "is not a number"
        elif self.kind is int and float(value) != int(value):
            problem = "is not an integer"
        else:
            v = float(value)
            if self.low is not None and (v < self.low or (self.open_low and v == self.low)):
                problem = "is out of range"
            if self.high is not None and (v > self.high or (self.open_high and v == self.high)):
                problem = "is out of range"
        if problem:
            raise ValueError(f"{owner}: {name}={value!r} {problem}; allowed: {self.describe()}")
        return self.kind(value) if self.choices is None else value


class OnlineLearner:
    """Base class of olb's online learners: a plain state machine over numpy arrays.

    Subclasses declare ``params`` (name -> :class:`Param`), the ``task`` they solve and the ``feedback``
    they need, and implement ``predict_one``/``learn_one``. The constructor receives the stream's shape
    (``n_features``, ``n_labels``), the hyperparameters, and a ``seed`` that fixes every random draw.

    A learner with figures that only exist at the end of the stream (e.g. the best tree in hindsight)
    implements ``stream_report(n_scored) -> dict`` and names them in ``report_metrics`` (name -> lower is
    better); the protocol records them next to the metrics.
    """

    name: ClassVar[str]
    task: ClassVar[str] = "multilabel"  # or "multiclass"
    feedback: ClassVar[str] = "full"  # or "topk"
    default_protocol: ClassVar[str] = "train_test"
    params: ClassVar[dict[str, Param]] = {}
    report_metrics: ClassVar[dict[str, bool]] = {}

    def __init__(self, n_features: int, n_labels: int, seed: int | None = None, **hyper):
        self.n_features, self.n_labels = int(n_features), int(n_labels)
        self.hyper = self.validate(hyper)
        for key, value in self.hyper.items():
            setattr(self, key, value)
        self.rng = np.random.default_rng(seed)

    @classmethod
    def validate(cls, hyper: dict) -> dict:
        """Defaults filled in and every value checked; unknown names are rejected."""
        unknown = sorted(set(hyper) - set(cls.params))
        if unknown:
            raise ValueError(f"{cls.name}: unknown hyperparameter(s) {unknown}; allowed: {sorted(cls.params)}")
        return {key: p.check(cls.name, key, hyper.get(key, p.default)) for key, p in cls.params.items()}

    def predict_one(self, x: np.ndarray):
        raise NotImplementedError

    def learn_one(self, x: np.ndarray, feedback) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.hyper.items())
        return f"{type(self).__name__}({args})"
