"""Algorithm name -> learner class. The grid and the command line know learners only through this table.

Each learner family (a package under ``olb/learners/``) lists its learners in ``LEARNERS``; ``FAMILIES``
names the packages collected here. To add an algorithm: subclass :class:`olb.learners.base.OnlineLearner`,
give it a ``name`` and its ``params``, and add it to its family's ``LEARNERS`` (or call :func:`register` on
it, e.g. from a module listed in a grid's ``imports``). ``docs/architecture.md`` walks through it.
"""

from __future__ import annotations

import importlib
import textwrap

import olb

from olb.learners.base import OnlineLearner
from olb.text import did_you_mean

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


def algorithm_names() -> list[str]:
    return sorted(ALGORITHMS)


def choices(kind: str) -> list[str]:
    """The names ``--help`` lists: ``algorithms`` (the registry), ``datasets`` (the data set registry),
    ``experiments`` (``experiment/*.yaml`` on the config search path)."""
    from olb.data import dataset_names

    if kind == "algorithms":
        return algorithm_names()
    if kind == "datasets":
        return dataset_names()
    if kind == "experiments":
        return sorted({p.stem for d in olb.conf_dirs() for p in (d / "experiment").glob("*.yaml")})
    raise ValueError(f"unknown kind of choice {kind!r}; allowed: algorithms, datasets, experiments")


def choices_text(kind: str, indent: int = 2, width: int = 110) -> str:
    """:func:`choices` as comma-separated lines (the ``${olb_choices:KIND}`` resolver of the help texts)."""
    return textwrap.fill(", ".join(choices(kind)), width, initial_indent=" " * indent, subsequent_indent=" " * indent)
