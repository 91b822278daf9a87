"""Every learner's cost model (olb/learners/*costs.py): found through the registry, apart from the learner classes,
and checked by ``olb.checks`` against the CPU and the resident memory its learner measures on the synthetic stream.

The measurements run in a child process (``olb.checks.costs`` fixes glibc's allocation threshold for the process
it measures in), once for every registered learner."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from olb.checks.costs import CPU_FACTOR, MEMORY_FACTOR, CostMeasurement
from olb.learners.costs import DEFAULT_COST_MODEL, CostModel
from olb.registry import ALGORITHMS, COST_MODELS, FAMILIES, UnknownAlgorithmError, get_cost_model, register

from test_learner_contract import DecayedFrequency

TESTS = Path(__file__).parent

LEARNERS = sorted(
    (cls for family in FAMILIES for cls in importlib.import_module(family).LEARNERS), key=lambda c: c.name
)
COST_ATTRIBUTES = ("cost_per_example_s", "predict_cost_s", "model_memory_mb")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def measured() -> dict[str, CostMeasurement]:
    """Every registered learner's cost measurement, made in a child process."""
    proc = _run(
        "import dataclasses, json; from olb.checks.costs import measure_costs; from olb.registry import FAMILIES; "
        "import importlib; classes = [c for f in FAMILIES for c in importlib.import_module(f).LEARNERS]; "
        "print(json.dumps([dataclasses.asdict(measure_costs(c)) for c in classes]))"
    )
    assert proc.returncode == 0, proc.stderr
    return {row["name"]: CostMeasurement(**row) for row in json.loads(proc.stdout.splitlines()[-1])}


def test_every_learner_has_its_familys_cost_model_and_no_cost_of_its_own():
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
        ALGORITHMS.pop("decayed_frequency", None)
        COST_MODELS.pop("decayed_frequency", None)
    with pytest.raises(UnknownAlgorithmError, match="unknown algorithm 'decayed_frequency'"):
        get_cost_model("decayed_frequency")


@pytest.mark.parametrize("name", [cls.name for cls in LEARNERS])
def test_the_cost_model_holds_on_the_synthetic_stream(measured, name):
    """Predicted CPU per example within ``CPU_FACTOR`` (x10) and memory within ``MEMORY_FACTOR`` (x4) of the
    measured, either way."""
    m = measured[name]
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


def test_the_command_prints_the_table_and_fails_a_model_that_misses():
    """A learner registered with a model that predicts 50x its memory: ``python -m olb.checks`` names it."""
    proc = _run(
        f"import sys; sys.path.insert(0, {str(TESTS)!r}); from test_learner_contract import DecayedFrequency; "
        "from olb.learners.costs import CostModel; from olb.registry import register; "
        "Big = type('Big', (CostModel,), {'model_memory_mb': lambda self, p, s: 5.0}); "
        "register(DecayedFrequency, Big()); from olb.checks.__main__ import main; "
        "sys.exit(main(['decayed_frequency', 'falt']))"
    )
    assert proc.returncode == 1, proc.stderr
    table = proc.stdout.split("cost models against the synthetic stream")[1].splitlines()
    assert table[1].split()[:2] == ["learner", "rows"], proc.stdout
    rows = {line.split()[0]: line for line in table[2:]}
    assert rows["decayed_frequency"].endswith("<- off") and not rows["falt"].endswith("<- off"), proc.stdout
    assert "check_learner: DecayedFrequency (decayed_frequency) passed all 8 contract checks" in proc.stdout
    assert "decayed_frequency: cost model: memory predicted 5.000 MB" in proc.stderr, proc.stderr


def test_the_command_names_every_unknown_algorithm_before_any_work(capsys):
    from olb.checks.__main__ import main

    with pytest.raises(SystemExit) as exit_code:
        main(["falt", "nope", "fal"])
    assert exit_code.value.code == 2
    assert "unknown algorithm(s) 'nope', 'fal' (did you mean 'falt'?); allowed: adaolm," in capsys.readouterr().err
