"""Algorithm name -> learner class. The grid and the command line know learners only through this table.

To add an algorithm: subclass :class:`olb.learners.base.OnlineLearner`, give it a ``name`` and its
``params``, and either list it in ``_BUILTIN`` or call :func:`register` on it before running a grid.
"""

from __future__ import annotations

from olb.learners.base import OnlineLearner
from olb.learners.baselines import BestVFDT, OzaBoost
from olb.learners.mlr_boosting import AdaOLMR, OnlineBMR
from olb.learners.multiclass_boosting import AdaBoostOLM, OnlineMBBM
from olb.learners.topk_boosting import TopAda, TopOpt

_BUILTIN = (AdaOLMR, OnlineBMR, TopOpt, TopAda, AdaBoostOLM, OnlineMBBM, BestVFDT, OzaBoost)

ALGORITHMS: dict[str, type[OnlineLearner]] = {cls.name: cls for cls in _BUILTIN}


class UnknownAlgorithmError(ValueError):
    pass


def register(cls: type[OnlineLearner]) -> type[OnlineLearner]:
    """Make ``cls`` available by its ``name`` (usable as a class decorator)."""
    ALGORITHMS[cls.name] = cls
    return cls


def get_algorithm(name: str) -> type[OnlineLearner]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownAlgorithmError(f"unknown algorithm {name!r}; allowed: {', '.join(sorted(ALGORITHMS))}") from None


def algorithm_names() -> list[str]:
    return sorted(ALGORITHMS)
