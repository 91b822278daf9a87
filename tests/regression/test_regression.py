"""Every booster reproduces, bit for bit, the results recorded before the learners moved into families and
before the compiled core (``cases.py``)."""

import json

import pytest

from cases import CASES, EXPERIMENTS, REFERENCE, cell_ids, compute

RECORDED = json.loads(REFERENCE.read_text())


@pytest.mark.parametrize("name, case", CASES, ids=[name for name, _ in CASES])
def test_same_results_as_recorded(name, case, data_dir):
    assert compute(case, str(data_dir)) == RECORDED[name]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_cell_ids_unchanged(experiment):
    """Finished cells in stores written by earlier versions keep resuming (resume matches by cell id)."""
    assert cell_ids(experiment) == RECORDED["cell_ids"][experiment]
