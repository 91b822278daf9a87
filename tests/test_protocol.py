"""The one evaluation loop: phases, feedback, scoring, curves, timings; and a cell end to end."""

import numpy as np
import pytest

from olb.data.dataset import Dataset
from olb.learners.base import OnlineLearner, Param
from olb.protocol import make_phases, run_stream
from olb.run import CellSpec, main, parse_cli, run_cell


def _dataset(n_train=30, n_test=10, task="multilabel"):
    rng = np.random.default_rng(0)
    n = n_train + n_test
    X = rng.normal(size=(n, 4))
    Y = (X[:, :3] > 0).astype(np.int8) if task == "multilabel" else (X[:, 0] > 0).astype(np.int64)
    labels = ("a", "b", "c") if task == "multilabel" else ("neg", "pos")
    return Dataset("toy", X, Y, task, tuple("f%d" % i for i in range(4)), labels, n_train)


class Recorder(OnlineLearner):
    """Predicts the first three features as scores (a perfect ranker on the toy data) and counts updates."""

    name = "recorder"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.updates = []

    def predict_one(self, x):
        return x[:3].copy()

    def learn_one(self, x, feedback):
        self.updates.append(np.asarray(feedback).copy())


class Hoarder(Recorder):
    """Keeps ``mb`` megabytes alive after its first update (touching every page)."""

    name = "hoarder"
    mb = Param(int, 0, low=0, doc="megabytes kept alive")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.blob = None

    def learn_one(self, x, feedback):
        if self.blob is None:
            self.blob = np.ones(self.mb * 131072)  # 8-byte floats


def test_peak_memory_is_per_stream_not_per_process():
    """A worker process runs many cells: each reports its own peak (Linux VmHWM reset), not the process's."""
    data = _dataset()
    phases = make_phases(data, "train_test", loops=1)
    big = run_stream(Hoarder(4, 3, mb=300), data, phases).peak_rss_mb
    small = run_stream(Hoarder(4, 3, mb=1), data, phases).peak_rss_mb
    assert big > small + 250, (big, small)


def test_train_test_protocol_scores_the_test_split_and_keeps_learning():
    data = _dataset()
    learner = Recorder(4, 3)
    result = run_stream(learner, data, make_phases(data, "train_test", loops=2), curve_every=7)
    assert [*result.phases] == ["train_loop1", "train_loop2", "test"]
    assert len(learner.updates) == 2 * 30 + 10
    assert np.array_equal(learner.updates[-1], data.Y[-1])  # full-information feedback is the label vector
    assert result.metrics == {"rank_loss": 0.0}
    assert result.phases["test"]["n_examples"] == 10 and result.cpu_s >= 0 and result.peak_rss_mb > 0
    steps = result.curve["step"]
    assert steps[-1] == 70 and (np.diff(steps) > 0).all()
    assert set(result.curve["phase"]) == {0, 1, 2}


def test_train_frozen_protocol_does_not_update_on_test():
    data = _dataset()
    learner = Recorder(4, 3)
    run_stream(learner, data, make_phases(data, "train_frozen"))
    assert len(learner.updates) == 30


def test_prequential_last20_shuffles_by_seed_and_scores_the_final_fifth():
    data = _dataset(n_train=40, n_test=10)
    a = make_phases(data, "prequential_last20", rng=np.random.default_rng(1))
    b = make_phases(data, "prequential_last20", rng=np.random.default_rng(1))
    assert [p.name for p in a] == ["stream", "last20"] and len(a[1].rows) == 10
    assert np.array_equal(np.concatenate([p.rows for p in a]), np.concatenate([p.rows for p in b]))
    assert sorted(np.concatenate([p.rows for p in a])) == list(range(50))


def test_protocol_errors_name_the_problem():
    data = _dataset()
    with pytest.raises(ValueError, match="unknown protocol 'online'"):
        make_phases(data, "online")
    with pytest.raises(ValueError, match="loops must be a positive integer, got 0"):
        make_phases(data, "train_test", loops=0)
    no_split = Dataset("nosplit", data.X, data.Y, "multilabel", data.feature_names, data.label_names, None)
    with pytest.raises(ValueError, match="dataset 'nosplit' has none"):
        make_phases(no_split, "train_test")
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['auc'\]"):
        run_stream(Recorder(4, 3), data, make_phases(data, "train_test"), metrics=("auc",))


def test_a_cell_runs_from_python_and_is_deterministic():
    spec = CellSpec("adaolmr", "emotions", seed=3, params={"num_learners": 4})
    first, second = run_cell(spec), run_cell(spec)
    assert first.metrics == second.metrics
    assert 0.0 < first.metrics["rank_loss"] < 0.5
    assert first.params["num_learners"] == 4 and first.params["num_covariates"] == 20
    assert np.array_equal(first.stream.curve["value"], second.stream.curve["value"])


def test_a_cell_runs_from_the_command_line(capsys):
    assert main(["algorithm=onlinebmr", "dataset=emotions", "seed=1", "num_learners=3", "gamma=0.1"]) == 0
    out = capsys.readouterr().out
    assert "rank_loss:" in out and "gamma: 0.1" in out
    assert main(["algorithm=onlinebmr", "dataset=emotions", "gamma=2"]) == 2
    assert "gamma=2 is out of range" in capsys.readouterr().err
    spec = parse_cli(["algorithm=adaolmr", "dataset=yeast", "metrics=[rank_loss]", "num_learners=5"])
    assert spec.metrics == ("rank_loss",) and spec.params == {"num_learners": 5}


def test_a_training_pass_reaches_learn_pass_in_blocks_in_order(monkeypatch):
    """Dense blocks of PASS_BLOCK_BYTES, in the phase's order, give the model row-by-row learning gives."""
    import olb.protocol.stream

    data = _dataset(n_train=40)
    monkeypatch.setattr(olb.protocol.stream, "PASS_BLOCK_BYTES", 16 * 8 * 4 + 7)  # 16 rows of 4 float64 features
    blocks, results = [], []
    for passes in (True, False):
        learner = Recorder(4, 3)
        learner.learns_passes, learner.predict_before_learn = passes, False
        monkeypatch.setattr(learner, "learn_pass", lambda X, Y, f=learner.learn_pass: blocks.append(len(Y)) or f(X, Y))
        run_stream(learner, data, make_phases(data, "train_frozen", loops=2, rng=np.random.default_rng(0)))
        results.append(np.array(learner.updates))
    assert blocks == [16, 16, 8, 16, 16, 8]
    np.testing.assert_array_equal(*results)


def _learners_with_passes():
    from olb.learners.registry import ALGORITHMS

    return sorted(name for name, cls in ALGORITHMS.items() if cls.learns_passes)


@pytest.mark.parametrize("name", _learners_with_passes())
def test_every_learner_with_passes_learns_a_block_as_it_learns_its_rows(name):
    """learn_pass(X, Y) and learn_one row by row give the same predictions, bit for bit (after an initial block
    for the learners that have one)."""
    from olb.learners.registry import get_algorithm

    cls = get_algorithm(name)
    rng = np.random.default_rng(3)
    X = rng.random((60, 5)) * (rng.random((60, 5)) < 0.6)
    Y = (rng.random((60, 4)) < 0.4).astype(np.int8)
    learners = [cls(5, 4, seed=np.random.default_rng(1), **cls.test_params) for _ in range(2)]
    for learner in learners:
        learner.learn_many(X[:10], Y[:10])
    learners[0].learn_pass(X[10:], Y[10:])
    for x, y in zip(X[10:], Y[10:]):
        learners[1].learn_one(x, y)
    for x in X[:20]:
        by_pass, by_row = (learner.predict_one(x) for learner in learners)
        np.testing.assert_array_equal(by_pass["scores"], by_row["scores"])
