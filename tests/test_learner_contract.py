"""The learner contract (olb/learners/base.py), checked by ``olb.checks`` for every registered learner and for a
learner written outside the package; the public import surface ``olb.learners``.

The checks run on olb's synthetic streams (no data folder needed); nothing here is specific to one learner.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import olb.learners
from olb.checks import CHECKS, check_learner
from olb.learners.base import OnlineLearner, Param
from olb.learners.registry import builtin_learners, get_algorithm, register, unregister

# the built-in learners (other test modules register stubs of their own while they are collected)
LEARNERS = builtin_learners()
# skipped, with what to install, where the machine lacks what a learner needs (MOA's: a JVM, jpype1, capymoa)
RUNNABLE = [
    pytest.param(cls, id=cls.name, marks=pytest.mark.skipif(bool(missing), reason="; ".join(missing)))
    for cls, missing in ((cls, cls.missing_requirements()) for cls in LEARNERS)
]


class DecayedFrequency(OnlineLearner):
    """A learner a user could write: each label scored by its exponentially decayed frequency so far."""

    name = "decayed_frequency"
    predict_before_learn = False
    decay = Param(float, 0.99, low=0.0, high=1.0, open_low=True, doc="weight of the past at each example")
    prior = Param(float, 0.5, low=0.0, high=1.0, doc="every label's score before any example")
    test_params = {"decay": 0.9}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.frequency = np.full(self.n_labels, self.prior)

    def predict_one(self, x):
        return self.frequency.copy()

    def learn_one(self, x, y):
        self.frequency = self.decay * self.frequency + (1.0 - self.decay) * np.asarray(y, float)


@pytest.fixture
def registered_outside():
    """DecayedFrequency registered the way a user registers a learner, unregistered afterwards."""
    register(DecayedFrequency)
    yield get_algorithm("decayed_frequency")
    unregister("decayed_frequency")


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
@pytest.mark.parametrize("cls", RUNNABLE)
def test_every_registered_learner_keeps_the_contract(cls, check):
    check(cls)


def test_a_learner_registered_from_outside_the_package_keeps_the_contract(registered_outside):
    assert registered_outside is DecayedFrequency
    check_learner(registered_outside)


class _KeepsTheCallersRow(DecayedFrequency):
    def learn_one(self, x, y):
        super().learn_one(x, y)
        self.last = x

    def predict_one(self, x):
        last = getattr(self, "last", np.zeros(1))
        return self.frequency + 1e-3 * float(last[0])


class _LearnsWhilePredicting(DecayedFrequency):
    def predict_one(self, x):
        self.frequency = 0.5 * self.frequency
        return self.frequency.copy()


class _AcceptsAnything(DecayedFrequency):
    @classmethod
    def validate(cls, hyper):
        return {key: hyper.get(key, p.default) for key, p in cls.params.items()}


class _NaNScores(DecayedFrequency):
    def predict_one(self, x):
        return np.full(self.n_labels, np.nan)


@pytest.mark.parametrize(
    "broken, problem",
    [
        (_KeepsTheCallersRow, "keeps a reference to the caller's x or y"),
        (_LearnsWhilePredicting, "a prediction changed it"),
        (_AcceptsAnything, r"decay=nan was accepted"),
        (_NaNScores, "bad 'scores' output"),
    ],
)
def test_check_learner_finds_a_broken_learner(broken, problem):
    with pytest.raises(AssertionError, match=problem):
        check_learner(broken)


def test_check_learner_takes_a_learner_class():
    with pytest.raises(TypeError, match="OnlineLearner subclass"):
        check_learner(DecayedFrequency(3, 2))


def test_every_registered_learner_is_exported_by_its_class_name():
    exported = {name: getattr(olb.learners, name) for name in olb.learners.__all__}
    assert set(exported) == {cls.__name__ for cls in LEARNERS} | {"OnlineLearner", "Param", "StreamShape"}
    for cls in LEARNERS:
        assert exported[cls.__name__] is cls, cls.name


def test_a_user_checks_a_learner_without_data_and_without_the_grid_stack(tmp_path):
    """In a fresh process with no data dir: the learners and the checks import, and check_learner runs, without
    Ray, MLflow, Hydra, pandas or matplotlib."""
    code = (
        "import sys; from olb.learners import *; from olb.checks import check_learner; check_learner(FALT); "
        "print(sorted(m for m in ('ray', 'mlflow', 'hydra', 'pandas', 'matplotlib') if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OLB_DATA_DIR"} | {"OLB_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["check_learner: FALT (falt) passed all 8 contract checks", "[]"]


def _cell_task(cls, data_dir):
    """The grid's task for one cell of ``cls`` (what a Ray worker runs, ``olb.grid.running.worker.execute_cell``)."""
    from olb.grid.messages import CellTask
    from olb.run import CellSpec

    dataset = "emotions" if cls.task == "multilabel" else "balance"
    spec = CellSpec(cls.name, dataset, seed=4, params=dict(cls.test_params), data_dir=str(data_dir))
    return CellTask(cell_id=cls.name, spec=spec.validated())


def _result(message):
    assert message.status == "FINISHED", getattr(message, "traceback", "")
    return message.metrics, message.curve


@pytest.fixture(scope="module")
def ray_local():
    import ray

    from olb.grid.running.backends import LocalRayBackend
    from olb.grid.planning.config import BackendConfig

    local = LocalRayBackend(BackendConfig(num_cpus=2, temp_dir="/tmp/olbc-{pid}"))  # short: Ray's sockets live there
    local.start()  # private: a fresh token, loopback only
    yield ray
    local.stop()


@pytest.mark.e2e
def test_serial_and_ray_agree_for_every_learner(ray_local, data_dir):
    from olb.grid.running.worker import execute_cell

    tasks = [_cell_task(cls, data_dir) for cls in LEARNERS if not cls.missing_requirements()]
    on_ray = ray_local.get([ray_local.remote(num_cpus=1)(execute_cell).remote(task) for task in tasks])
    for task, far in zip(tasks, on_ray):
        assert _result(execute_cell(task)) == _result(far), task.cell_id
