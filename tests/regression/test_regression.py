"""Every booster and row-loop learner reproduces, bit for bit, the results recorded before the learners moved into
families, before the compiled core and before the compiled passes (``cases.py``)."""

import functools
import json

import pytest

from cases import CASES, EXPERIMENTS, MACHINE_PINNED, REFERENCE, cell_ids, compute, machine_key

RECORDED = json.loads(REFERENCE.read_text())
compute_once = functools.cache(lambda name, data_dir: compute(dict(CASES)[name], data_dir))


@pytest.mark.parametrize("name, case", CASES, ids=[name for name, _ in CASES])
def test_same_results_as_recorded(name, case, data_dir):
    result = dict(compute_once(name, str(data_dir)))
    result.pop("machine_model", None)
    assert result == RECORDED[name]


MACHINE_CASES = [(name, case) for name, case in CASES if case["algorithm"] in MACHINE_PINNED]


@pytest.mark.parametrize("name, case", MACHINE_CASES, ids=[name for name, _ in MACHINE_CASES])
def test_same_model_as_recorded_on_this_machine(name, case, data_dir):
    """The models whose last bits are the CPU's (numpy's dispatched exp, BLAS) against the fingerprints recorded on
    a machine like this one (same numpy, SIMD targets and OpenBLAS kernel)."""
    recorded = RECORDED.get("machine_models", {}).get(machine_key())
    if recorded is None:
        pytest.skip(f"no model fingerprints recorded for this machine ({machine_key()}); see cases.py --record-machine")
    assert compute_once(name, str(data_dir))["machine_model"] == recorded[name]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_cell_ids_unchanged(experiment):
    """Finished cells in stores written by earlier versions keep resuming (resume matches by cell id)."""
    assert cell_ids(experiment) == RECORDED["cell_ids"][experiment]
