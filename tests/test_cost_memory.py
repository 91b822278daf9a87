"""The cost model's memory side: every learner's peak-memory prediction, the boosters' forest formula against
what a forest really stores, the refusal of cells too big for any Ray node (all named at once, before work), the
per-cell Ray request, and the memory-kill report. The Ray runs are in tests/test_grid_memory.py (e2e)."""

import math
import os

import numpy as np
import pytest
from omegaconf import OmegaConf

from olb.data import dataset_names, dataset_spec, load_dataset
from olb.grid import GridConfigError, compose
from olb.grid.planning.cost import memory_request_mb
from olb.grid.messages import CellTask
from olb.run import CellSpec
from olb.grid.running.backends.ray_local import LocalRayBackend
from olb.grid.running.backends.ray_lost import lost_failure
from olb.grid.planning.config import BackendConfig
from olb.grid.planning.cost import PROCESS_FLOOR_MB, check_memory, planned_memory_mb
from olb.grid.planning.expand import plan_grid
from olb.learners.base import StreamShape
from olb.learners.registry import algorithm_names, get_algorithm, get_cost_model
from olb.weak import VFDTForest


def _backend_cfg(**kw):
    return OmegaConf.structured(BackendConfig(**kw))


@pytest.mark.parametrize("algorithm", algorithm_names())
def test_every_learner_predicts_a_finite_peak_on_every_data_set(algorithm):
    cls = get_algorithm(algorithm)
    params = cls.validate({})
    for dataset in dataset_names():
        mb = planned_memory_mb(algorithm, params, dataset)
        assert math.isfinite(mb) and mb >= PROCESS_FLOOR_MB, (algorithm, dataset, mb)


def test_the_model_grows_with_what_it_holds():
    corel5k, emotions = StreamShape(499, 374, 4500), StreamShape(72, 6, 391)
    booster = get_cost_model("adaolmr")
    few, many = (get_algorithm("adaolmr").validate({"num_learners": n}) for n in (10, 100))
    assert booster.model_memory_mb(many, corel5k) == pytest.approx(10 * booster.model_memory_mb(few, corel5k))
    assert booster.model_memory_mb(many, corel5k) > 10 * booster.model_memory_mb(many, emotions)
    knn, knn_params = get_cost_model("knn"), get_algorithm("knn").validate({})
    assert knn.model_memory_mb(knn_params, corel5k) > 10 * knn.model_memory_mb(knn_params, emotions)
    elm = get_cost_model("osml_elm")
    small, big = (get_algorithm("osml_elm").validate({"num_hidden": n}) for n in (100, 1000))
    assert elm.model_memory_mb(big, emotions) > 20 * elm.model_memory_mb(small, emotions)
    # the threshold wrapper holds its scorer's model
    wrapped = get_algorithm("adaolmr+threshold").validate({"num_learners": 10})
    assert get_cost_model("adaolmr+threshold").model_memory_mb(wrapped, corel5k) == booster.model_memory_mb(
        few, corel5k
    )


def _forest_bytes(forest: VFDTForest) -> int:
    """What a forest's storage holds in memory: its nodes and slots up to their capacity, and the pool rows used."""
    node_bytes = sum(getattr(forest.arrays, name).nbytes for name in forest._NODE_ARRAYS)
    slot_bytes = sum(getattr(forest.arrays, name).nbytes for name in forest._SLOT_ARRAYS)
    pool_bytes = int(forest.arrays.pairs[0]) * forest._d * 8 * len(forest._POOL_ARRAYS)
    return node_bytes + slot_bytes + pool_bytes


def test_the_forest_prediction_covers_what_a_forest_stores_on_emotions():
    data = load_dataset("emotions")  # embedded in the package
    learner = get_algorithm("adaolmr")(data.n_features, data.n_labels, seed=0, num_learners=20, authors_weights=True)
    n_train = dataset_spec("emotions").n_train
    X, Y = np.asarray(data.X[:n_train], float), np.asarray(data.Y[:n_train])
    for x, y in zip(X, Y):
        learner.predict_one(x)
        learner.learn_one(x, y)
    stored = _forest_bytes(learner.weak) / 2**20
    predicted = VFDTForest.planned_memory_mb(20, 20, data.n_labels, n_train)
    assert stored <= predicted <= 4 * stored, (stored, predicted)


def _plan(overrides):
    cfg = compose(["tracking=off", "seeds=1", *overrides])
    return cfg, plan_grid(cfg)


class _Ray:
    """What check_memory asks of a started backend."""

    name = "ray"

    def __init__(self, memory_mb):
        self.node_memory_mb = memory_mb


def test_cells_bigger_than_every_node_are_refused_all_at_once():
    cfg, plan = _plan(
        ["algorithms=[adaolmr,knn,pa1_br]", "datasets=[emotions,corel5k]", "algorithm.adaolmr.params.num_learners=100"]
    )
    params = {c.algorithm: c.params for c in plan.unique_cells}
    big = planned_memory_mb("adaolmr", params["adaolmr"], "corel5k")
    limit = planned_memory_mb("pa1_br", params["pa1_br"], "corel5k") + 1  # too small for the kNN memory on corel5k
    assert limit < planned_memory_mb("knn", params["knn"], "corel5k") < big
    with pytest.raises(GridConfigError) as err:
        check_memory(cfg, plan, (), _Ray(limit))
    message = str(err.value)
    assert message.startswith("2 setting(s) need more memory than any Ray node has"), message
    assert f"Ada.OLMR on corel5k: predicted {big:.0f} MB" in message and "knn on corel5k" in message, message
    assert "emotions" not in message and "pa1_br" not in message, message
    # unless the user runs them anyway, on another backend, or on an unavailable data set
    cfg.backend.refuse_oversized = False
    check_memory(cfg, plan, (), _Ray(limit))
    cfg.backend.refuse_oversized = True
    check_memory(cfg, plan, ("corel5k",), _Ray(limit))
    serial = _Ray(limit)
    serial.name = "serial"
    check_memory(cfg, plan, (), serial)
    # backend.memory_factor scales the requests: at 0.5 only the booster on corel5k exceeds 40% of its prediction
    cfg.backend.memory_factor = 0.5
    with pytest.raises(GridConfigError, match="1 setting"):
        check_memory(cfg, plan, (), _Ray(0.4 * big))


def test_a_task_asks_for_its_prediction_times_the_factor_at_most_a_node():
    assert memory_request_mb(1000.0, _backend_cfg(), 4000.0) == 1000.0
    assert memory_request_mb(1000.0, _backend_cfg(memory_factor=1.5), 4000.0) == 1500.0
    assert memory_request_mb(1000.0, _backend_cfg(memory_factor=5.0), 4000.0) == 4000.0  # refuse_oversized=false
    assert memory_request_mb(1000.0, _backend_cfg(memory_factor=0.0), 4000.0) == 0.0  # no request


def test_a_local_ray_hands_out_the_configured_memory():
    configured, default = (LocalRayBackend(_backend_cfg(**memory)).init_kwargs() for memory in ({"memory_mb": 300}, {}))
    for kwargs in (configured, default):
        os.rmdir(kwargs["_temp_dir"])  # the fresh private folder each local Ray gets
    assert configured["_memory"] == 300 * 2**20
    assert "_memory" not in default


def test_bad_memory_settings_are_refused_before_any_work():
    cfg = compose(["tracking=off", "backend.memory_factor=-1", "backend.memory_mb=0"])
    with pytest.raises(GridConfigError) as err:
        plan_grid(cfg)
    assert "backend.memory_factor=-1" in str(err.value) and "backend.memory_mb=0" in str(err.value)


def test_a_cell_killed_for_memory_is_reported_with_its_predicted_and_allowed_memory():
    from ray.exceptions import OutOfMemoryError

    message = (  # the figures of Ray's message (its raylet's format)
        "Task was killed due to the node running low on memory. (job ID=01, lease ID=02, "
        "task name=execute_in_worker, "
        "required resources={CPU: 1}, pid=1, actual memory used=1.50GB, worker ID=03) Memory usage 3221225472B "
        "exceeded threshold of 3006477107B (70.0% of 4294967296B limit)"
    )
    task = CellTask(cell_id="c1", spec=CellSpec("_grid_stub", "emotions"), predicted_memory_mb=700.4)
    failure = lost_failure(task, OutOfMemoryError(message), max_retries=1, asked_mb=1050.6)
    assert failure.status == "FAILED" and failure.peak_rss_mb == pytest.approx(1536)
    assert "out of memory" in failure.error and "2 attempt(s)" in failure.error, failure.error
    assert "predicted 700 MB, allowed 1051 MB" in failure.error and "backend.memory_factor" in failure.error
