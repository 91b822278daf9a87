"""Every booster and row-loop learner reproduces, bit for bit, the results recorded before the learners moved into
families, before the compiled core and before the compiled passes (``cases.py``)."""

import functools
import json

import numpy as np
import pytest

from cases import BASELINE_CASES, CASES, EXPERIMENTS, REFERENCE, baseline_models, cell_ids, compute, model_fingerprint

RECORDED = json.loads(REFERENCE.read_text())
compute_once = functools.cache(lambda name: compute(dict(CASES)[name]))
baseline_models_once = functools.cache(baseline_models)


@pytest.mark.parametrize("name, case", CASES, ids=[name for name, _ in CASES])
def test_same_results_as_recorded(name, case, require_data):
    require_data(case["dataset"])
    assert compute_once(name) == RECORDED[name]


@pytest.mark.parametrize("name, case", BASELINE_CASES, ids=[name for name, _ in BASELINE_CASES])
def test_same_model_as_recorded_with_the_code_every_cpu_has(name, case, require_data):
    """The models whose last bits follow the code numpy, OpenBLAS and glibc load for the CPU, computed in a child
    process with the code they load on any x86-64 CPU (``cases.baseline_models``), against the one recorded."""
    require_data(case["dataset"])
    computed, recorded = baseline_models_once(), RECORDED["baseline_models"]
    versions = f"recorded with {recorded['libraries']}; computed with {computed['libraries']}"
    if computed["models"][name] != recorded["models"][name] and computed["libraries"] != recorded["libraries"]:
        # other releases of numpy or OpenBLAS (make test-lowest) load other code: the last bits may follow it
        pytest.skip(f"the model differs with other library versions: {versions}")
    assert computed["models"][name] == recorded["models"][name], versions


def test_a_last_bit_changes_a_model_fingerprint():
    """The pins above see one unit in the last place of one model entry."""

    class Model:
        def __init__(self, weights):
            self.weights = weights

    weights = np.linspace(0.1, 1.0, 50)
    nudged = weights.copy()
    nudged[17] = np.nextafter(nudged[17], 0.0)
    assert model_fingerprint(Model(weights)) != model_fingerprint(Model(nudged))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_cell_ids_unchanged(experiment):
    """Finished cells in stores written by earlier versions keep resuming (resume matches by cell id)."""
    assert cell_ids(experiment) == RECORDED["cell_ids"][experiment]
