"""Non-finite hyperparameters are refused, naming the key, by the one validation (``Param.check``) behind the
Python constructors, olb.run and the grid's planner, before any work starts. Every learner's class-level
annotations name its declared hyperparameters with their kinds, so that readers and type checkers see them."""

from __future__ import annotations

import math
import typing

import pytest

from olb.learners import FALT, PA1BR, OnlineBMR
from olb.learners.params import C, ETA, NUM_HIDDEN
from olb.learners.river_mlhat import RiverTableLearner
from olb.learners.river_family import CLASSIFIERS, STRATEGIES, RiverMultiLabel
from olb.learners.thresholds import Thresholded
from olb.registry import algorithm_names, get_algorithm
from olb.run import main


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("param", [ETA, C, NUM_HIDDEN], ids=["eta", "C", "num_hidden"])
def test_a_number_is_finite(param, value):
    with pytest.raises(ValueError, match=r"^falt: key=.* is not a finite number; allowed: "):
        param.check("falt", "key", value)


@pytest.mark.parametrize(
    "cls, key, value", [(FALT, "eta", math.nan), (PA1BR, "C", math.inf), (OnlineBMR, "num_learners", math.inf)]
)
def test_constructors_refuse_non_finite_values_naming_the_key(cls, key, value):
    with pytest.raises(ValueError, match=rf"{cls.name}: {key}={value!r} is not a finite number"):
        cls(72, 6, **{key: value})


@pytest.mark.parametrize("override", ["eta=nan", "eta=inf", "eta=-inf"])
def test_olb_run_refuses_non_finite_values_naming_the_key(override, capsys):
    assert main(["algorithm=falt", "dataset=emotions", override]) == 2
    assert "falt: eta=" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm, override", [("falt", "eta=nan"), ("pa1_br", "C=inf"), ("falt", "eta=-inf")])
def test_the_grid_refuses_non_finite_values_before_any_work(algorithm, override):
    from olb.grid import GridConfigError, compose, plan_grid

    key = override.split("=")[0]
    with pytest.raises(GridConfigError, match=rf"{algorithm}: {key}=\S+ is not a finite number"):
        plan_grid(compose([f"algorithms=[{algorithm}]", "datasets=[emotions]", "seeds=1", override]))


def _forwarded(cls) -> set[str]:
    """Hyperparameters a learner hands whole to a part it builds (read from ``self.hyper``, never as attributes)."""
    if issubclass(cls, Thresholded):
        return set(cls.scorer_class.params)
    if issubclass(cls, RiverMultiLabel):
        return set(STRATEGIES[cls.strategy]) | set(CLASSIFIERS[cls.classifier][1])
    if issubclass(cls, RiverTableLearner):  # the table's settings, handed to river's model it builds
        return set(cls.params) - {"dense_rows"}
    return set()


def _annotated(cls) -> dict[str, object]:
    """The class's and its bases' class-level annotations that are not ClassVars: its declared attributes."""
    return {k: t for k, t in typing.get_type_hints(cls).items() if typing.get_origin(t) is not typing.ClassVar}


@pytest.mark.parametrize(
    "name", [n for n in algorithm_names() if get_algorithm(n).__module__.startswith("olb.learners.")]
)
def test_every_hyperparameter_is_annotated_with_its_kind_and_nothing_else_is(name):
    """olb's own learners (plugins may declare none)."""
    cls = get_algorithm(name)
    assert _forwarded(cls) <= set(cls.params)
    expected = {key: p.kind for key, p in cls.params.items() if key not in _forwarded(cls)}
    annotated = _annotated(cls)
    missing = [f"{key}: {kind.__name__}" for key, kind in expected.items() if annotated.get(key) is not kind]
    extra = sorted(set(annotated) - set(expected))
    assert not missing and not extra, f"{cls.__name__}: annotate {missing}; not a hyperparameter: {extra}"
