"""olb's learners by class name: ``from olb.learners import FALT, AdaOLMR, OML``.

Importing this package stays light: it never imports Ray, MLflow, Hydra, pandas or matplotlib, nor a family's
module. A class is found on first use through the registry (:mod:`olb.learners.registry`), which maps the algorithm
names the grid and the command line use (``"falt"``) to these classes and imports the families' modules (numpy, scipy);
:mod:`olb.checks` checks a learner, built-in or your own, against the contract of :class:`OnlineLearner`.
"""

from __future__ import annotations

from olb.learners.base import OnlineLearner as OnlineLearner, Param as Param, StreamShape as StreamShape

_BASE = ["OnlineLearner", "Param", "StreamShape"]


def _by_class_name() -> dict[str, type[OnlineLearner]]:
    from olb.learners.registry import builtin_learners

    return {cls.__name__: cls for cls in builtin_learners()}


def __getattr__(name: str) -> object:
    if name == "__all__":
        return [*_BASE, *sorted(_by_class_name())]
    if not name.startswith("_") and name in (learners := _by_class_name()):
        return learners[name]
    raise AttributeError(f"module 'olb.learners' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_by_class_name()))
