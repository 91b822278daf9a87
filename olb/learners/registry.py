"""Algorithm name -> learner class, and its cost model. The grid and the command line know learners only through
this registry.

A learner registers itself where it is defined, with one declaration: ``@register`` on its class, with the cost
model the grid plans it with (``@register(cost=MyCost())``; without one :data:`olb.learners.costs.DEFAULT_COST_MODEL`,
a rough model of a small linear learner). olb's own learners are found as the kernels are
(:mod:`olb.kernel_declarations`): the modules under ``olb/learners/`` whose source has a line starting with
``@register`` or ``register(`` (a class made by a function registers with ``register(cls, cost)``) are
imported at the first look-up, none listed by hand. A learner of one's own registers the same way from its own
module, which a grid's ``imports`` (or ``python -m olb.checks --import``) imports first. ``docs/architecture.md``
walks through it.
"""

from __future__ import annotations

import importlib
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, overload

import olb
from olb.learners.base import OnlineLearner
from olb.learners.costs import DEFAULT_COST_MODEL, CostModel
from olb.paths import module_name, python_sources
from olb.text import did_you_mean

LEARNERS_PACKAGE = Path(olb.__file__).resolve().parent / "learners"
_REGISTERS = re.compile(rb"^[ \t]*(@register\b|(return )?register\()", re.MULTILINE)

_ALGORITHMS: dict[str, type[OnlineLearner]] = {}
_COST_MODELS: dict[str, CostModel] = {}
_found: list[str] = []  # olb's own modules that register learners, once imported

L = TypeVar("L", bound=type[OnlineLearner])


class UnknownAlgorithmError(ValueError):
    pass


@overload
def register(cls: L, cost: CostModel | None = None) -> L: ...
@overload
def register(cls: None = None, cost: CostModel | None = None) -> Callable[[L], L]: ...
def register(cls: L | None = None, cost: CostModel | None = None) -> L | Callable[[L], L]:
    """Make a learner class available by its ``name``, planned with ``cost``: ``@register``,
    ``@register(cost=model)`` or ``register(cls, model)``. Registering the same class again replaces its cost
    model; another class under a taken name is refused."""

    def add(learner: L) -> L:
        taken = _ALGORITHMS.get(learner.name)
        if taken is not None and _qualified(taken) != _qualified(learner):
            raise ValueError(
                f"algorithm name {learner.name!r} of {_qualified(learner)} is taken by {_qualified(taken)}"
            )
        _ALGORITHMS[learner.name] = learner
        _COST_MODELS[learner.name] = cost or DEFAULT_COST_MODEL
        return learner

    return add if cls is None else add(cls)


def unregister(name: str) -> None:
    """Forget algorithm ``name`` (a learner registered for a while, as a test's)."""
    _ALGORITHMS.pop(name, None)
    _COST_MODELS.pop(name, None)


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def learner_modules(package: Path = LEARNERS_PACKAGE) -> list[str]:
    """olb's modules that register learners, found by reading the sources (nothing is imported)."""
    return [
        module_name(path, package.parent)
        for path in sorted(python_sources(package))
        if b"register" in (source := path.read_bytes()) and _REGISTERS.search(source)
    ]


def _discover() -> None:
    """Import olb's own learner modules, once (they register their learners)."""
    if _found:
        return
    modules = learner_modules()
    _found.extend(modules)  # first: a module that looks a learner up while it is imported finds the ones so far
    try:
        for module in modules:
            importlib.import_module(module)
    except BaseException:
        _found.clear()
        raise


def algorithms() -> dict[str, type[OnlineLearner]]:
    """Every registered learner by algorithm name (the registry's own table: a learner added to it, as a test's,
    is registered)."""
    _discover()
    return _ALGORITHMS


def builtin_learners() -> list[type[OnlineLearner]]:
    """olb's own learners (those of ``olb/learners/``), by algorithm name."""
    _discover()
    return [cls for _, cls in sorted(_ALGORITHMS.items()) if cls.__module__ in _found]


def get_algorithm(name: str) -> type[OnlineLearner]:
    known = algorithms()
    try:
        return known[name]
    except KeyError:
        raise UnknownAlgorithmError(
            f"unknown algorithm {name!r}{did_you_mean(name, known)}; allowed: {', '.join(sorted(known))}"
        ) from None


def get_cost_model(name: str) -> CostModel:
    """The cost model the grid plans algorithm ``name`` with."""
    get_algorithm(name)  # an unknown name: the registry's error
    return _COST_MODELS.get(name, DEFAULT_COST_MODEL)


def algorithm_names() -> list[str]:
    return sorted(algorithms())


def __getattr__(name: str) -> dict[str, type[OnlineLearner]]:
    if name == "ALGORITHMS":  # the table, its learners found on first use
        return algorithms()
    raise AttributeError(f"module 'olb.learners.registry' has no attribute {name!r}")


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
