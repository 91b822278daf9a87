"""What every online learner shares: declared hyperparameters, their validation, and the learn/predict protocol."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Self, TypeVar, overload

import numpy as np


T = TypeVar("T")
V = TypeVar("V", covariant=True)  # a Param[int] is a Param[int | None]


@dataclass(frozen=True)
class Param(Generic[V]):
    """A hyperparameter's type, default and allowed values (scikit-learn's parameter constraints, in small),
    declared once as a class attribute of its learner (``eta = Param(float, 0.5, low=0.0)``): the class's
    signature, ``params``, validation and the instances' attribute (``self.eta``, typed ``float``) follow from it.

    ``low``/``high`` bound numbers (``open_low``/``open_high`` exclude the bound), which are always finite (NaN
    and infinities are refused); ``choices`` lists the allowed values of a categorical parameter. ``kind`` may
    name alternatives, ``(int, None)``: an int in the bounds, or None (annotated, ``size: Param[int | None] = ...``,
    for type checkers).

    >>> Param((int, None), None, low=1).describe()
    'int with 1 <= value, or None'
    """

    kind: type[V] | tuple[type | None, ...]
    default: V
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple | None = None
    doc: str = ""

    @property
    def kinds(self) -> tuple[type, ...]:
        """The allowed types (None's is ``NoneType``)."""
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        return tuple(type(None) if k is None else k for k in kinds)

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        lo = "" if self.low is None else f"{self.low} {'<' if self.open_low else '<='} "
        hi = "" if self.high is None else f" {'<' if self.open_high else '<='} {self.high}"
        kinds = [k.__name__ + (f" with {lo}value{hi}" if lo or hi else "") for k in self.kinds if k is not type(None)]
        return " or ".join(kinds) + (", or None" if type(None) in self.kinds else "")

    def check(self, owner: str, name: str, value: Any) -> Any:
        """Return ``value`` converted to its kind, or raise ValueError naming the parameter and what is allowed."""
        if value is None and type(None) in self.kinds:
            return None
        kind = next(k for k in self.kinds if k is not type(None))
        problem = None
        if self.choices is not None:
            if value not in self.choices:
                problem = "is not allowed"
        elif kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                problem = "is not a boolean"
        elif isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            problem = "is not a number"
        elif not math.isfinite(value):
            problem = "is not a finite number"
        elif kind is int and float(value) != int(value):
            problem = "is not an integer"
        else:
            v = float(value)
            if self.low is not None and (v < self.low or (self.open_low and v == self.low)):
                problem = "is out of range"
            if self.high is not None and (v > self.high or (self.open_high and v == self.high)):
                problem = "is out of range"
        if problem:
            raise ValueError(f"{owner}: {name}={value!r} {problem}; allowed: {self.describe()}")
        return kind(value) if self.choices is None else value

    @overload
    def __get__(self, learner: None, owner: type) -> Param[V]: ...
    @overload
    def __get__(self, learner: object, owner: type) -> V: ...
    def __get__(self, learner: object, owner: type) -> Param[V] | V:
        """On the class, the declaration; on a learner (whose value shadows it once built), the value."""
        if learner is None:
            return self
        raise AttributeError(f"{type(learner).__name__} has no value of its hyperparameter yet")


@dataclass(frozen=True)
class StreamShape:
    """What a learner may know of its stream before it starts: the sizes the data registry declares.

    ``n_train`` is the size of the training split (``None`` when the data set has none) and bounds the
    rows an initial block can take. ``cardinality`` is the mean number of relevant labels per row where the
    registry records it (``None``: unknown), which only the cost models (:mod:`olb.learners.costs`) read.
    """

    n_features: int
    n_labels: int
    n_train: int | None = None
    cardinality: float | None = None


class OnlineLearner:
    """Base class of olb's online learners: a plain state machine over numpy arrays.

    The contract every registered learner keeps (:func:`olb.checks.check_learner` checks it; the test suite
    applies it to every registered learner):

    - **Construction.** ``cls(n_features, n_labels, seed=..., **hyperparameters)``: each hyperparameter is a
      :class:`Param` class attribute (``eta = Param(float, 0.5, low=0.0)``, declared once), which ``params``
      collects (name -> Param, the bases' first) and the class's signature lists (``inspect.signature(cls)``).
      The values are validated by :meth:`validate`, and the rules across them and against the stream's shape
      by :meth:`check_params` (the grid's planner calls the same rules before any work starts). ``seed`` (an int
      or a ``numpy.random.Generator``) fixes every random draw. Each value becomes an attribute (``self.eta``),
      then :meth:`__post_init__` builds the model's state. :meth:`get_params` and :meth:`clone` are
      scikit-learn's and river's.
    - **Prediction.** ``predict_one(x)`` returns what ``outputs`` declares: ``"scores"`` (a float vector of
      the labels' relevance, higher = more relevant), ``"labels"`` (a 0/1 vector: the predicted label set),
      ``"class"`` (a class index). One output is returned as is; several as a dict keyed by these names.
      A metric is only computed from an output the learner declares. Predicting never changes the model,
      and it is valid before any learning; before its first example a learner may instead return ``None``
      (it abstains, as river's multi-output models do: the protocol scores nothing for that example).
    - **Learning.** ``learn_one(x, feedback)`` with the feedback ``feedback`` names (``"full"``: the label
      vector y, or the class index; ``"topk"``: an :class:`olb.feedback.TopKFeedback`). When
      ``predict_before_learn`` is True (the boosters: their update uses the round's own prediction), the
      protocol calls ``learn_one(x, ...)`` right after ``predict_one(x)`` on the same object and the same
      x; otherwise it may call ``learn_one`` alone (training rounds that are not scored are not predicted).
    - **Initial block.** A learner with an ``init_fraction`` hyperparameter is given the first
      ``round(init_fraction * n_train)`` training rows at once through ``learn_many(X, Y)`` before the
      stream (e.g. an ELM's initial batch, OML's initial memory); by default ``learn_many`` learns them one
      by one.
    - **Passes.** A learner with ``learns_passes = True`` (and full feedback) receives each training phase that
      does not predict through ``learn_pass(X, Y)``, blocks of rows in order (:mod:`olb.protocol`), which must
      learn them exactly as ``learn_one`` would one by one; by default ``learn_pass`` calls it row by row.
      A learner with ``predicts_passes = True`` whose output is a class receives each phase that predicts and
      learns (scored by per-example metrics, without a window) through ``predict_learn_pass(X, Y)``, which returns
      the predictions ``predict_one`` then ``learn_one`` would give row by row.
    - **Rows.** ``x`` is a float64 vector of length ``n_features`` that the learner may not keep a reference
      to (copy what it stores). A learner with ``accepts_sparse = True`` is handed rows of data sets that are
      sparse on disk as a ``scipy.sparse.csr_array`` of shape (1, n_features) (``learn_many``: (n, n_features)),
      and never densifies them.
    - **State.** A learner pickles at any point of the stream and continues identically after unpickling.
    - **Tests.** ``test_params`` are small, fast settings that :mod:`olb.checks` and quick checks use.
    - **Cost.** What the grid plans for the learner (CPU per row, model memory) is its cost model
      (:mod:`olb.learners.costs`), given when it registers (``@register(cost=...)``, :mod:`olb.learners.registry`), never
      on the class; :mod:`olb.checks.costs` checks it.
    - **Warm-up.** ``optional_imports`` names the modules of optional libraries (river's) the learner imports;
      a cell imports them before its clock starts and counts the time in ``compile_s``, not ``runtime_s``, and
      then calls ``prepare_process()`` (e.g. MOA's learners start the process's JVM there).
    - **Requirements.** ``missing_requirements()`` names what the machine lacks to run the learner (a library, a
      runtime), one sentence each saying what to install; the grid refuses such a learner before any work.

    A learner with figures that only exist at the end of the stream (e.g. the best tree in hindsight)
    implements ``stream_report(n_scored) -> dict`` and names them in ``report_metrics`` (name -> lower is
    better); the protocol records them next to the metrics.
    """

    name: ClassVar[str]
    task: ClassVar[str] = "multilabel"  # or "multiclass"
    feedback: ClassVar[str] = "full"  # or "topk"
    default_protocol: ClassVar[str] = "train_test"
    outputs: ClassVar[tuple[str, ...]] = ("scores",)  # what predict_one returns ("scores", "labels", "class")
    predict_before_learn: ClassVar[bool] = True
    accepts_sparse: ClassVar[bool] = False
    learns_passes: ClassVar[bool] = False
    predicts_passes: ClassVar[bool] = False
    params: ClassVar[dict[str, Param]] = {}
    test_params: ClassVar[dict] = {}
    report_metrics: ClassVar[dict[str, bool]] = {}
    optional_imports: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "params" in cls.__dict__:
            raise TypeError(
                f"{cls.__qualname__}: declare each hyperparameter as a class attribute (eta = Param(...)), not in params"
            )
        params: dict[str, Param] = {}
        for klass in reversed(cls.__mro__):
            params.update((key, p) for key, p in vars(klass).items() if isinstance(p, Param))
        cls.params = params
        fixed = [
            inspect.Parameter("n_features", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=int),
            inspect.Parameter("n_labels", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=int),
            inspect.Parameter("seed", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
        ]
        hyper = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=p.default) for k, p in params.items()]
        cls.__signature__ = inspect.Signature(fixed + hyper)  # type: ignore[attr-defined]  # read by inspect.signature(cls), help()

    def __init__(
        self, n_features: int, n_labels: int, seed: int | np.random.Generator | None = None, *, _checked=False, **hyper
    ):
        self.n_features, self.n_labels = int(n_features), int(n_labels)
        self.hyper = hyper if _checked else self.validate(hyper)
        problems = [] if _checked else self.check_params(self.hyper, StreamShape(self.n_features, self.n_labels))
        if problems:
            raise ValueError(f"{self.name}: " + "; ".join(problems))
        for key, value in self.hyper.items():
            setattr(self, key, value)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.__post_init__()

    def __post_init__(self) -> None:
        """Build the model's state from the hyperparameters (set as attributes) and ``rng``; nothing by default."""

    @property
    def random_state(self) -> Any:
        """What the learner's next random draws depend on, to save and put back: its generator's state (a learner
        that draws ahead adds the draws it holds)."""
        return self.rng.bit_generator.state

    @random_state.setter
    def random_state(self, state: Any) -> None:
        self.rng.bit_generator.state = state

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The arguments this learner was built with, by name (scikit-learn's ``get_params``; ``deep`` is
        accepted for scikit-learn's ``clone``: a learner holds no estimator of its own to recurse into)."""
        return {"n_features": self.n_features, "n_labels": self.n_labels, "seed": self.seed, **self.hyper}

    def clone(self, new_params: dict[str, Any] | None = None) -> Self:
        """A new, untrained learner of the same arguments, ``new_params`` replacing some (river's ``clone``); with an
        int seed it draws what this learner drew."""
        return type(self)(**{**self.get_params(), **(new_params or {})})

    @classmethod
    def from_checked(cls, n_features: int, n_labels: int, seed: np.random.Generator, params: dict) -> Self:
        """A learner from ``params`` that :meth:`validate` returned and :meth:`check_params` passed (a cell's,
        checked once when the grid planned it, :meth:`olb.run.CellSpec.validated`), not checked again."""
        return cls(n_features, n_labels, seed, _checked=True, **params)

    @classmethod
    def validate(cls, hyper: dict) -> dict:
        """Defaults filled in and every value checked; unknown names are rejected."""
        unknown = sorted(set(hyper) - set(cls.params))
        if unknown:
            raise ValueError(f"{cls.name}: unknown hyperparameter(s) {unknown}; allowed: {sorted(cls.params)}")
        return {key: p.check(cls.name, key, hyper.get(key, p.default)) for key, p in cls.params.items()}

    @classmethod
    def check_params(cls, params: dict, shape: StreamShape) -> list[str]:
        """Problems of the (validated) ``params`` across parameters and against ``shape``, one sentence each
        naming the parameters and what is allowed; empty when there is none. Subclasses extend it."""
        return []

    @classmethod
    def missing_requirements(cls) -> list[str]:
        """What this machine lacks to run the learner, one sentence each naming what to install; empty when
        nothing (the default: olb's own learners need nothing beyond olb)."""
        return []

    @classmethod
    def collected_heap_mb(cls) -> float | None:
        """MB of live objects, after a full collection, in a garbage-collected heap of the learner's own runtime
        outside Python's (MOA's JVM), where its model lives; None (the default) where the model lives in Python's
        memory. The cost check (:mod:`olb.checks.costs`) measures such a model there: the process's resident memory
        moves with the collector, not with the model."""
        return None

    @classmethod
    def prepare_process(cls) -> bool:
        """Make this process ready to run the learner, once, before a cell's clock starts; whether there was anything
        to do (the default: nothing)."""
        return False

    def predict_one(self, x: np.ndarray):
        raise NotImplementedError

    def learn_one(self, x: np.ndarray, feedback) -> None:
        raise NotImplementedError

    def learn_many(self, X, Y) -> None:
        """Learn an initial block of rows (n, n_features) with their feedback; by default one by one."""
        OnlineLearner.learn_pass(self, X, Y)

    def learn_pass(self, X, Y) -> None:
        """``learn_one`` on every row of the block X (n, n_features) with its full feedback Y, in order. A learner
        that declares ``learns_passes`` receives its training passes this way (:mod:`olb.protocol`), which spares
        the protocol's work per row; the linear learners run the whole block as one compiled call."""
        for i in range(X.shape[0]):
            self.learn_one(X[i : i + 1] if self.accepts_sparse and not isinstance(X, np.ndarray) else X[i], Y[i])

    def predict_learn_pass(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``predict_one`` then ``learn_one`` on every row of the dense block X (n, n_features) with its full
        feedback Y, in order: the predictions. A learner that declares ``predicts_passes`` receives its
        prequential phases this way (:mod:`olb.protocol`)."""
        predictions = []
        for i in range(X.shape[0]):
            x = X[i]  # one object for both calls: a round's cache knows its x by identity
            predictions.append(self.predict_one(x))
            self.learn_one(x, Y[i])
        return np.asarray(predictions)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.hyper.items())
        return f"{type(self).__name__}({args})"


class RoundCache(Generic[T]):
    """The value a learner computed for one round's input in ``predict_one``, kept until ``learn_one`` clears it
    (the contract's predict-then-learn rule, for learners with ``predict_before_learn``).

    The protocol calls ``learn_one(x)`` right after ``predict_one(x)`` with the same array, so the cache is
    keyed by identity: a different x (or none cached) means computing again.
    """

    def __init__(self):
        self._entry: tuple[np.ndarray, T] | None = None  # (x, its value)

    def get(self, x: np.ndarray, compute: Callable[[np.ndarray], T]) -> T:
        """The value for ``x``: the cached one if ``x`` is the cached input, else ``compute(x)`` (then cached)."""
        entry = self._entry
        if entry is None or entry[0] is not x:
            entry = self._entry = (x, compute(x))
        return entry[1]

    def clear(self) -> None:
        self._entry = None
