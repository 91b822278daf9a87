"""The learner contract (olb/learners/base.py), checked once for every learner of every family.

Each learner runs with its ``test_params`` on a short real stream of its task (the first rows of emotions,
or of balance for multiclass learners); nothing here is specific to one learner.
"""

from __future__ import annotations

import importlib
import os
import pickle
import shutil
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp

from olb.data import load_dataset
from olb.data.dataset import Dataset
from olb.feedback import TopKFeedback
from olb.protocol import FEEDBACK_SETTINGS, make_phases, run_stream
from olb.registry import FAMILIES

LEARNERS = [cls for family in FAMILIES for cls in importlib.import_module(family).LEARNERS]
IDS = [cls.name for cls in LEARNERS]
OUTPUT_CHECKS = {
    "scores": lambda v, m: isinstance(v, np.ndarray)
    and v.shape == (m,)
    and v.dtype.kind == "f"
    and not np.isnan(v).any(),
    "labels": lambda v, m: isinstance(v, np.ndarray) and v.shape == (m,) and set(np.unique(v)) <= {0, 1},
    "class": lambda v, m: isinstance(v, (int, np.integer)) and 0 <= v < m,
}


def _small(data: Dataset, n_train: int, n_test: int) -> Dataset:
    rows = np.r_[:n_train, data.n_train : data.n_train + n_test] if data.n_train else np.arange(n_train + n_test)
    return Dataset(
        f"{data.name}-small", data.X[rows], data.Y[rows], data.task, data.feature_names, data.label_names, n_train
    )


@pytest.fixture(scope="module")
def streams(data_dir):
    return {
        "multilabel": _small(load_dataset("emotions", data_dir), 60, 20),
        "multiclass": _small(load_dataset("balance", data_dir), 60, 20),
    }


def _make(cls, data: Dataset, seed=0):
    return cls(data.n_features, data.n_labels, seed=seed, **cls.test_params)


def _feedback(learner, prediction, y):
    if learner.feedback == "topk":
        return TopKFeedback.from_prediction(_outputs(learner, prediction)["scores"], y, learner.k)
    return y


def _outputs(learner, prediction) -> dict:
    return prediction if isinstance(prediction, dict) else {learner.outputs[0]: prediction}


def _train(learner, data: Dataset, rows) -> list:
    """Predict then learn each row (the protocol's order for every learner); the predictions."""
    out = []
    for i in rows:
        x = data.X[i].copy()
        prediction = learner.predict_one(x)
        learner.learn_one(x, _feedback(learner, prediction, data.Y[i]))
        out.append(prediction)
    return out


def _predictions(learner, data: Dataset, rows) -> list:
    return [learner.predict_one(data.X[i].copy()) for i in rows]


def _same(a, b) -> bool:
    return pickle.dumps(a) == pickle.dumps(b)


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_declarations(cls):
    assert cls.name and cls.task in ("multilabel", "multiclass") and cls.feedback in FEEDBACK_SETTINGS
    assert set(cls.outputs) <= set(OUTPUT_CHECKS) and cls.outputs
    assert set(cls.test_params) <= set(cls.params), "test_params names only declared hyperparameters"
    cls.validate(dict(cls.test_params))
    for name, param in cls.params.items():
        assert param.doc, f"{cls.name}: hyperparameter {name} has no doc"


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_predicts_before_learning_what_it_declares(cls, streams):
    data = streams[cls.task]
    learner = _make(cls, data)
    m = data.n_labels
    for prediction in [*_predictions(learner, data, range(2)), *_train(learner, data, range(30))]:
        outputs = _outputs(learner, prediction)
        assert set(outputs) == set(cls.outputs)
        for name, value in outputs.items():
            assert OUTPUT_CHECKS[name](value, m), f"{cls.name}: bad {name!r} output {value!r}"


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_same_seed_same_stream_and_pickling_mid_stream(cls, streams):
    data = streams[cls.task]
    first, second = _make(cls, data, seed=7), _make(cls, data, seed=7)
    assert _same(_train(first, data, range(40)), _train(second, data, range(40)))
    clone = pickle.loads(pickle.dumps(first))  # mid-stream
    assert _same(_train(first, data, range(40, 60)), _train(clone, data, range(40, 60)))
    assert _same(_predictions(first, data, range(60, 80)), _predictions(clone, data, range(60, 80)))


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_predicting_does_not_change_the_model(cls, streams):
    """Extra predictions on other rows, between the rounds, change nothing the learner later outputs, except
    through its random draws (a randomized prediction consumes them): both copies share one random state."""
    data = streams[cls.task]
    plain, probed = _make(cls, data, seed=3), _make(cls, data, seed=3)
    _train(plain, data, range(20))
    _train(probed, data, range(20))
    for i in range(20, 40):
        state = probed.rng.bit_generator.state
        probed.predict_one(data.X[70].copy())
        probed.rng.bit_generator.state = state
        assert _same(_train(plain, data, [i]), _train(probed, data, [i]))
    assert _same(_predictions(plain, data, range(60, 80)), _predictions(probed, data, range(60, 80)))


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_keeps_no_reference_to_the_callers_arrays(cls, streams):
    data = streams[cls.task]
    learner, twin = _make(cls, data, seed=5), _make(cls, data, seed=5)
    for i in range(30):
        x, y = data.X[i].copy(), np.array(data.Y[i], copy=True)
        prediction = learner.predict_one(x)
        learner.learn_one(x, _feedback(learner, prediction, y))
        x[:] = 1e6  # the caller reuses its buffers
        if np.ndim(y):
            y[:] = 1 - y
        _train(twin, data, [i])
    assert _same(_predictions(learner, data, range(60, 80)), _predictions(twin, data, range(60, 80)))


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_initial_block_and_sparse_rows(cls, streams):
    """``learn_many`` on a block equals learning its rows in turn when the learner has no block-specific
    method; sparse rows give the dense rows' results (only where the learner accepts them)."""
    data = streams[cls.task]
    phases = make_phases(data, "train_frozen", rng=np.random.default_rng(0))
    dense = run_stream(_make(cls, data, seed=2), data, phases, metrics=_metrics(cls))
    again = run_stream(_make(cls, data, seed=2), data, phases, metrics=_metrics(cls))
    assert dense.metrics == again.metrics
    if not cls.accepts_sparse:
        return
    sparse = Dataset(
        data.name, sp.csr_array(data.X), data.Y, data.task, data.feature_names, data.label_names, data.n_train
    )
    result = run_stream(_make(cls, data, seed=2), sparse, phases, metrics=_metrics(cls))
    assert result.metrics == pytest.approx(dense.metrics, abs=1e-9)


def _metrics(cls) -> tuple[str, ...]:
    if cls.task == "multiclass":
        return ("accuracy",)
    return ("rank_loss", "hamming_loss") if "labels" in cls.outputs else ("rank_loss",)


def _cell_task(cls, data_dir) -> dict:
    """The grid's task for one cell of ``cls`` (what a Ray worker runs, ``olb.grid.worker.execute_cell``)."""
    spec = {
        "algorithm": cls.name,
        "dataset": "emotions" if cls.task == "multilabel" else "balance",
        "seed": 4,
        "params": dict(cls.test_params),
        "data_dir": str(data_dir),
    }
    return {"cell_id": cls.name, "spec": spec}


def _result(payload: dict):
    assert payload["status"] == "FINISHED", payload.get("traceback")
    return payload["metrics"], payload["curve"]


@pytest.fixture(scope="module")
def ray_local():
    import ray

    from olb.grid.backends import QUIET_RAY_ENV, ray_init_kwargs
    from olb.grid.config import BackendConfig

    for key, value in QUIET_RAY_ENV.items():
        os.environ.setdefault(key, value)
    temp = tempfile.mkdtemp(prefix="olbc", dir="/tmp")
    ray.init(**ray_init_kwargs(BackendConfig(num_cpus=2, temp_dir=temp)))
    yield ray
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.e2e
def test_serial_and_ray_agree_for_every_learner(ray_local, data_dir):
    from olb.grid.worker import execute_cell

    tasks = [_cell_task(cls, data_dir) for cls in LEARNERS]
    on_ray = ray_local.get([ray_local.remote(num_cpus=1)(execute_cell).remote(task) for task in tasks])
    for task, far in zip(tasks, on_ray):
        assert _result(execute_cell(task)) == _result(far), task["cell_id"]
