"""Non-finite hyperparameters are refused, naming the key, by the one validation (``Param.check``) behind the
Python constructors, olb.run and the grid's planner, before any work starts. Every learner declares each
hyperparameter once, as a ``Param`` class attribute that its signature lists; ``get_params``/``clone`` are
scikit-learn's and river's."""

from __future__ import annotations

import inspect
import math

import numpy as np
import sklearn.base

import pytest

from olb.learners import FALT, OSMLELM, PA1BR, OnlineBMR
from olb.learners.base import OnlineLearner, Param
from olb.learners.params import C, ETA, NUM_HIDDEN
from olb.learners.registry import algorithm_names, get_algorithm
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


OWN = [n for n in algorithm_names() if get_algorithm(n).__module__.startswith("olb.learners.")]


@pytest.mark.parametrize("name", OWN)
def test_the_signature_lists_the_declared_hyperparameters_and_no_init_hides_it(name):
    """olb's own learners: each hyperparameter is declared once (a Param class attribute), which the class's
    signature lists with its default; no learner's own ``__init__`` takes ``**hyper``."""
    cls = get_algorithm(name)
    signature = inspect.signature(cls)
    assert list(signature.parameters)[:3] == ["n_features", "n_labels", "seed"]
    hyper = {k: p.default for k, p in list(signature.parameters.items())[3:]}
    assert hyper == {k: p.default for k, p in cls.params.items()}, cls.__name__
    assert all(getattr(cls, k) is p for k, p in cls.params.items())
    assert [k for k in cls.__mro__ if "__init__" in vars(k)] == [OnlineLearner, object], cls.__name__


def test_get_params_and_clone_are_scikit_learns_and_rivers():
    learner = FALT(4, 3, seed=7, eta=0.25)
    assert learner.get_params() == {**FALT.validate({"eta": 0.25}), "n_features": 4, "n_labels": 3, "seed": 7}
    x, y = np.array([1.0, 0.0, 0.5, 0.2]), np.array([1, 0, 1])
    learner.learn_one(x, y)
    twin = learner.clone()
    assert type(twin) is FALT and twin.get_params() == learner.get_params() and not twin.W.any()
    assert learner.clone({"eta": 1.0}).eta == 1.0
    copy = sklearn.base.clone(learner)  # scikit-learn's clone reads get_params and checks the constructor keeps them
    assert copy.get_params() == learner.get_params() and not copy.W.any()
    elm = OSMLELM(4, 3, seed=1, num_hidden=5)  # a seeded learner's clone draws the same random layer
    assert np.array_equal(elm.clone().input_weights, elm.input_weights)


def test_a_parameter_may_allow_alternatives():
    param = Param((int, None), None, low=1, doc="a size, or None for the learner's own")
    assert param.check("toy", "size", None) is None and param.check("toy", "size", 3.0) == 3
    with pytest.raises(ValueError, match=r"^toy: size=0 is out of range; allowed: int with 1 <= value, or None$"):
        param.check("toy", "size", 0)
    with pytest.raises(ValueError, match=r"^toy: size='3' is not a number"):
        param.check("toy", "size", "3")


def test_a_params_table_is_refused_naming_the_class():
    with pytest.raises(TypeError, match=r"\.Old: declare each hyperparameter as a class attribute"):

        class Old(OnlineLearner):
            params = {"eta": ETA}
