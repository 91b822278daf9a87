"""Non-finite hyperparameters are refused, naming the key, by the one validation (``Param.check``) behind the
Python constructors, olb.run and the grid's planner, before any work starts."""

from __future__ import annotations

import math

import pytest

from olb.learners import FALT, PA1BR, OnlineBMR
from olb.learners.params import C, ETA, NUM_HIDDEN
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
