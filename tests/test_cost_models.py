"""Every learner's cost model (olb/learners/*costs.py): found through the registry, apart from the learner classes,
and checked by ``olb.checks`` against the CPU and the resident memory its learner measures on the synthetic stream
(each learner in a child process of its own)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from olb.checks.costs import CPU_FACTOR, MEMORY_FACTOR, CostMeasurement, measure_costs
from olb.learners.costs import DEFAULT_COST_MODEL, CostModel
from olb.learners.registry import UnknownAlgorithmError, builtin_learners, get_cost_model, register, unregister

from test_learner_contract import RUNNABLE, DecayedFrequency

LEARNERS = builtin_learners()
COST_ATTRIBUTES = ("cost_per_example_s", "predict_cost_s", "model_memory_mb")


def test_every_learner_registers_with_its_familys_cost_model_and_has_no_cost_of_its_own():
    for cls in LEARNERS:
        model = get_cost_model(cls.name)
        assert isinstance(model, CostModel) and model is not DEFAULT_COST_MODEL, cls.name
        assert type(model).__module__.endswith("costs"), (cls.name, type(model).__module__)
        assert not [name for name in COST_ATTRIBUTES if hasattr(cls, name)], cls.name


def test_a_learner_registered_from_outside_is_planned_with_its_model_or_the_default():
    class Flat(CostModel):
        def model_memory_mb(self, params, shape) -> float:
            return 7.0

    try:
        register(DecayedFrequency)
        assert get_cost_model("decayed_frequency") is DEFAULT_COST_MODEL
        register(DecayedFrequency, Flat())
        assert isinstance(get_cost_model("decayed_frequency"), Flat)
    finally:
        unregister("decayed_frequency")
    with pytest.raises(UnknownAlgorithmError, match="unknown algorithm 'decayed_frequency'"):
        get_cost_model("decayed_frequency")


@pytest.mark.parametrize("cls", RUNNABLE)
def test_the_cost_model_holds_on_the_synthetic_stream(cls):
    """Predicted CPU per example within ``CPU_FACTOR`` (x12) and memory within ``MEMORY_FACTOR`` (x4) of the
    measured, either way (one learner per test, so that parallel workers share them out)."""
    name = cls.name
    m = measure_costs(cls)
    assert m.rows == 400 and m.measured_us > 0 and m.measured_mb >= 0, m
    assert not m.problems(), f"{name}: " + "; ".join(m.problems())


def test_the_factors_are_checked_both_ways():
    fine = CostMeasurement("x", 400, predicted_us=100.0, measured_us=50.0, predicted_mb=1.0, measured_mb=2.0)
    assert fine.problems() == []
    slow = CostMeasurement("x", 400, 100.0, 100.0 * CPU_FACTOR * 1.1, 1.0, 1.0)
    big = CostMeasurement("x", 400, 100.0, 100.0, 1.0 * MEMORY_FACTOR * 1.1, 1.0)
    assert [p.split(" predicted")[0] for p in slow.problems() + big.problems()] == ["CPU per example", "memory"]
    tiny = CostMeasurement("x", 400, 100.0, 100.0, 0.001, 0.04)  # both under the resolution
    assert tiny.problems() == []
    # a model in a collected heap (MOA's JVM): the prediction bounds its live objects, however far above
    assert CostMeasurement("x", 400, 100.0, 100.0, 50.0, 0.0, collected=True).problems() == []
    under = CostMeasurement("x", 400, 100.0, 100.0, 1.0, 1.0 * MEMORY_FACTOR * 1.1, collected=True)
    assert [p.split(" predicted")[0] for p in under.problems()] == ["memory"]


USER_MODULE = """
import numpy as np

from olb.learners import OnlineLearner, Param
from olb.learners.costs import CostModel
from olb.learners.registry import register


class Frequency(OnlineLearner):
    name = "frequency"
    predict_before_learn = False
    decay = Param(float, 0.9, low=0.0, high=1.0, open_low=True, doc="weight of the past")

    def __post_init__(self):
        self.frequency = np.zeros(self.n_labels)

    def predict_one(self, x):
        return self.frequency.copy()

    def learn_one(self, x, y):
        self.frequency = self.decay * self.frequency + (1 - self.decay) * np.asarray(y, float)


class FiveMegabytes(CostModel):
    def model_memory_mb(self, params, shape):
        return 5.0


register(Frequency, FiveMegabytes())
"""


def test_the_command_prints_the_table_and_fails_a_model_that_misses(tmp_path):
    """A learner of the user's own module, registered with a model that predicts ~100x its memory: ``python -m
    olb.checks --import`` names it, and passes FALT's."""
    (tmp_path / "my_learners.py").write_text(USER_MODULE)
    command = [sys.executable, "-m", "olb.checks", "--import", "my_learners", "frequency", "falt"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    table = proc.stdout.split("cost models against the synthetic stream")[1].splitlines()
    assert table[1].split()[:2] == ["learner", "rows"], proc.stdout
    rows = {line.split()[0]: line for line in table[2:]}
    assert rows["frequency"].endswith("<- off") and not rows["falt"].endswith("<- off"), proc.stdout
    assert "check_learner: Frequency (frequency) passed all 8 contract checks" in proc.stdout
    # the CPU figure may miss too (the default model's CPU per example is generic): the memory miss is named
    miss = next(line for line in proc.stderr.splitlines() if line.startswith("frequency: cost model: "))
    assert "memory predicted 5.000 MB, measured" in miss, proc.stderr


def test_the_command_names_every_unknown_algorithm_before_any_work(capsys):
    from olb.checks.__main__ import main

    with pytest.raises(SystemExit) as exit_code:
        main(["falt", "nope", "fal"])
    assert exit_code.value.code == 2
    err = capsys.readouterr().err  # "allowed" lists every registered name, other tests' learners too
    assert "unknown algorithm(s) 'nope', 'fal' (did you mean 'falt'?); allowed: " in err
    assert ", adaolm, " in err or "allowed: adaolm, " in err
