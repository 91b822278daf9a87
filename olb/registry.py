"""Algorithm name -> learner class. The grid and the command line know learners only through this table.

Each learner family (a package under ``olb/learners/``) lists its learners in ``LEARNERS``; ``FAMILIES``
names the packages collected here. To add an algorithm: subclass :class:`olb.learners.base.OnlineLearner`,
give it a ``name`` and its ``params``, and add it to its family's ``LEARNERS`` (or call :func:`register` on
it, e.g. from a module listed in a grid's ``imports``). ``docs/architecture.md`` walks through it.
"""

from __future__ import annotations

import difflib
import importlib

from olb.learners.base import OnlineLearner

FAMILIES = (
    "olb.learners.boosting",
    "olb.learners.linear",
    "olb.learners.elm",
    "olb.learners.thresholds",
    "olb.learners.neighbors",
    "olb.learners.river_family",
)

ALGORITHMS: dict[str, type[OnlineLearner]] = {
    cls.name: cls for family in FAMILIES for cls in importlib.import_module(family).LEARNERS
}


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
        raise UnknownAlgorithmError(
            f"unknown algorithm {name!r}{did_you_mean(name, ALGORITHMS)}; allowed: {', '.join(sorted(ALGORITHMS))}"
        ) from None


def did_you_mean(name: str, known) -> str:
    """``" (did you mean 'x'?)"`` for the closest known name, or ``""``."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def algorithm_names() -> list[str]:
    return sorted(ALGORITHMS)
