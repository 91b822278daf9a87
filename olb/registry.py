"""Algorithm name -> learner class, and its cost model. The grid and the command line know learners only through
these tables.

Each learner family (a package under ``olb/learners/``) lists its learners in ``LEARNERS``; ``FAMILIES``
names the packages collected here. Each family's costs module maps its learners to their cost models
(:mod:`olb.learners.costs`) in ``COST_MODELS``; ``COST_FAMILIES`` collects them. To add an algorithm: subclass
:class:`olb.learners.base.OnlineLearner`, give it a ``name`` and its ``params``, add it to its family's
``LEARNERS`` and its cost model to the family's ``COST_MODELS`` (or call :func:`register` on it with its model,
e.g. from a module listed in a grid's ``imports``). ``docs/architecture.md`` walks through it.
"""

from __future__ import annotations

import importlib
import textwrap

import olb

from olb.learners import elm_costs, moa_costs, river_costs, threshold_costs
from olb.learners.base import OnlineLearner
from olb.learners.boosting import costs as boosting_costs
from olb.learners.costs import DEFAULT_COST_MODEL, CostModel
from olb.learners.linear import costs as linear_costs
from olb.learners.neighbors import costs as neighbor_costs
from olb.learners.stream_br import costs as stream_br_costs
from olb.text import did_you_mean

FAMILIES = (
    "olb.learners.boosting",
    "olb.learners.linear",
    "olb.learners.elm",
    "olb.learners.thresholds",
    "olb.learners.neighbors",
    "olb.learners.river_family",
    "olb.learners.river_mlhat",
    "olb.learners.stream_br",
    "olb.learners.moa",
)

ALGORITHMS: dict[str, type[OnlineLearner]] = {
    cls.name: cls for family in FAMILIES for cls in importlib.import_module(family).LEARNERS
}

COST_FAMILIES = (
    boosting_costs,
    linear_costs,
    elm_costs,
    threshold_costs,
    neighbor_costs,
    river_costs,
    stream_br_costs,
    moa_costs,
)

COST_MODELS: dict[str, CostModel] = {
    cls.name: model for family in COST_FAMILIES for cls, model in family.COST_MODELS.items()
}


class UnknownAlgorithmError(ValueError):
    pass


def register(cls: type[OnlineLearner], cost_model: CostModel | None = None) -> type[OnlineLearner]:
    """Make ``cls`` available by its ``name`` (usable as a class decorator), planned with ``cost_model``
    (without one: :data:`olb.learners.costs.DEFAULT_COST_MODEL`, a rough model of a small linear learner)."""
    ALGORITHMS[cls.name] = cls
    COST_MODELS[cls.name] = cost_model or DEFAULT_COST_MODEL
    return cls


def get_algorithm(name: str) -> type[OnlineLearner]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownAlgorithmError(
            f"unknown algorithm {name!r}{did_you_mean(name, ALGORITHMS)}; allowed: {', '.join(sorted(ALGORITHMS))}"
        ) from None


def get_cost_model(name: str) -> CostModel:
    """The cost model the grid plans algorithm ``name`` with."""
    get_algorithm(name)  # an unknown name: the registry's error
    return COST_MODELS.get(name, DEFAULT_COST_MODEL)


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
