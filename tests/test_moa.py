"""MOA's learners through JPype (olb/learners/moa.py): MOA's own classes on a real JVM, seeded repeats, the
multi-label header, the grid on both backends, and the refusal on a machine without a JVM.

The contract's checks (tests/test_learner_contract.py) and the cost models' (tests/test_cost_models.py) cover
these learners too; the tests here are what is specific to MOA.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from olb.learners.moa import MOAAMR, MOABRHT, MOAOzaBag, MOAOzaBoost, missing_requirements
from olb.protocol import make_phases, run_stream

pytestmark = pytest.mark.skipif(bool(missing_requirements()), reason="; ".join(missing_requirements()))


def _multiclass_stream(rng, n=300, d=4, k=3):
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    return X, np.minimum(y, k - 1)


def _predictions(cls, seed, X, y, **hyper):
    learner = cls(X.shape[1], 3, seed=seed, **hyper)
    out = []
    for x, c in zip(X, y):
        out.append(learner.predict_one(x))
        learner.learn_one(x, c)
    return out


def test_moa_commands_are_moas_own_options():
    assert MOAOzaBoost.command(MOAOzaBoost.validate({"ensemble_size": 5, "leaf_prediction": "MC"})) == (
        "meta.OzaBoost -l (trees.HoeffdingTree -g 200 -c 1e-07 -t 0.05 -l MC) -s 5"
    )
    assert MOAAMR.command(MOAAMR.validate({})) == (
        "rules.multilabel.AMRulesMultiLabelClassifier -g 200 -c 1e-07 -t 0.05"
    )
    learner = MOABRHT(3, 2, seed=0, grace_period=20)
    options = learner._model.getCLICreationString(learner._model.getClass().getInterfaces()[0])
    assert "trees.HoeffdingTree" in str(options) and "-g 20" in str(options)


def test_a_seed_repeats_exactly_and_another_seed_draws_otherwise():
    X, y = _multiclass_stream(np.random.default_rng(0))
    first = _predictions(MOAOzaBag, 7, X, y, ensemble_size=5, grace_period=20)
    assert first == _predictions(MOAOzaBag, 7, X, y, ensemble_size=5, grace_period=20)
    assert first != _predictions(MOAOzaBag, 8, X, y, ensemble_size=5, grace_period=20)  # Poisson weights differ


def test_the_multi_label_header_is_moas_convention():
    learner = MOABRHT(5, 3, seed=0)
    header = learner._header
    assert (header.numOutputAttributes(), header.numInputAttributes()) == (3, 5)
    assert [str(header.outputAttribute(j).name()) for j in range(3)] == ["y0", "y1", "y2"]


def test_binary_relevance_learns_each_label_apart():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 3))
    Y = np.stack([X[:, 0] > 0, X[:, 1] > 0], axis=1).astype(np.int8)
    learner = MOABRHT(3, 2, seed=0, grace_period=50)
    for x, labels in zip(X, Y):
        learner.learn_one(x, labels)
    predicted = np.array([learner.predict_one(x)["labels"] for x in X[:200]])
    assert (predicted == Y[:200]).mean(axis=0).min() > 0.85  # both labels' trees split on their own feature


def test_a_multiclass_cell_runs_through_the_protocol(require_data):
    from olb.data import load_dataset

    require_data("balance")
    dataset = load_dataset("balance")
    learner = MOAOzaBoost(dataset.n_features, dataset.n_labels, seed=np.random.default_rng(0), ensemble_size=3)
    result = run_stream(learner, dataset, make_phases(dataset, "prequential_last20", rng=np.random.default_rng(0)))
    assert 0.7 < result.metrics["accuracy"] <= 1.0


@pytest.mark.e2e
def test_the_grid_runs_moa_serially_and_on_ray_with_the_same_results(tmp_path, data_dir):
    from olb.grid import compose, run_grid

    grid = ["algorithms=[moa_br_ht]", "datasets=[emotions]", "seeds=1", "tracking=off", "plots=false"]
    grid += [f"data_dir={data_dir}", "grace_period=50", "backend.num_cpus=1"]
    serial = run_grid(compose([*grid, "backend=serial"]), tmp_path / "serial")
    parallel = run_grid(compose([*grid, "backend=ray"]), tmp_path / "ray")
    assert serial.exit_code == parallel.exit_code == 0
    a, b = serial.cells.set_index("cell_id"), parallel.cells.set_index("cell_id")
    assert list(a.index) == list(b.index) and (b["status"] == "FINISHED").all()
    metrics = [c for c in ("rank_loss", "micro_f1", "hamming_loss") if c in a.columns]
    assert metrics and a[metrics].equals(b.loc[a.index, metrics])  # bit for bit
    assert (a["compile_s"] > 0).all()  # the JVM started in the cell's warm-up, outside its clock


# A fresh process that imported ray first (a notebook, a test session: Ray's own switch for its failure handler
# is then read before the grid sets it): a local Ray, MOA's JVM started while it runs, Ray stopped, started again
# over the running JVM and stopped again. After each step it prints whose code handles SIGSEGV; with Ray up and
# after it stopped, Java threads run compiled code while the collector stops them (safepoint polls: SIGSEGV that
# the JVM handles).
_RAY_AND_JVM = """
import ctypes, threading, time
import ray
import jpype
from olb.grid.planning.config import BackendConfig
from olb.grid.running.backends import LocalRayBackend
from olb.learners.moa_jvm import start_jvm

libc = ctypes.CDLL(None)

def segv_handler_file():
    action = ctypes.create_string_buffer(256)  # struct sigaction; its handler comes first
    libc.sigaction(11, None, action)
    info = (ctypes.c_void_p * 4)()  # Dl_info: the file first
    found = libc.dladdr(ctypes.c_void_p.from_buffer(action), info)
    return ctypes.string_at(info[0]).decode() if found and info[0] else "default"

def java_under_the_collector():
    System, Arrays = jpype.JClass("java.lang.System"), jpype.JClass("java.util.Arrays")
    collecting = threading.Thread(target=lambda: [(System.gc(), time.sleep(0.01)) for _ in range(50)])
    collecting.start()
    rows = jpype.JClass("java.util.Random")(1)
    for _ in range(5):
        Arrays.parallelSort(rows.ints(2_000_000).toArray())
    collecting.join()

local = LocalRayBackend(BackendConfig(num_cpus=1, temp_dir="/tmp/olbm-{pid}"))
local.start()
start_jvm()
local.stop()
print(segv_handler_file(), flush=True)
local = LocalRayBackend(BackendConfig(num_cpus=1, temp_dir="/tmp/olbm-{pid}"))
local.start()
print(segv_handler_file(), flush=True)
java_under_the_collector()
local.stop()
print(segv_handler_file(), flush=True)
java_under_the_collector()
print("survived")
"""


@pytest.mark.e2e
def test_the_jvms_signal_handlers_outlast_the_grids_ray_starting_and_stopping(tmp_path):
    """ray.init installs Ray's failure handler and Python's fault handler over the fatal signals, and ray.shutdown
    resets them to the default action; either way the JVM's first intentional SIGSEGV would end the process (the
    grid puts the handlers back, olb.grid.running.backends.fatal_signals)."""
    proc = subprocess.run(
        [sys.executable, "-c", _RAY_AND_JVM], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    *handler_files, survived = proc.stdout.split()[-4:]
    assert [os.path.basename(f) for f in handler_files] == ["libjvm.so"] * 3 and survived == "survived"


@pytest.mark.e2e
def test_without_a_jvm_the_grid_refuses_before_any_work_naming_the_package(tmp_path):
    empty = tmp_path / "no-java"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "olb.grid", "algorithms=[moa_br_ht,moa_amr]", "datasets=[emotions]"]
        + ["backend=serial", "tracking=off", f"hydra.run.dir={tmp_path / 'run'}"],
        env={**os.environ, "JAVA_HOME": str(empty)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "default-jre-headless" in done.stderr, done.stderr
    assert "algorithms 'moa_br_ht', 'moa_amr'" in done.stderr and str(empty) in done.stderr
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").glob("cells.csv"))


def _olb_run(java_home, *args):
    return subprocess.run(
        [sys.executable, "-m", "olb.run", *args],
        env={**os.environ, "JAVA_HOME": str(java_home)},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.e2e
def test_olb_run_refuses_without_a_jvm_and_a_jvm_others_may_change(tmp_path):
    done = _olb_run(tmp_path, "algorithm=moa_ht", "dataset=balance")
    assert done.returncode == 2 and done.stderr.count("\n") <= 1, done.stderr
    assert "default-jre-headless" in done.stderr and "'moa_ht'" in done.stderr
    library = tmp_path / "lib" / "server" / "libjvm.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    library.chmod(0o666)  # anyone may replace the code the JVM would run
    done = _olb_run(tmp_path, "algorithm=moa_ht", "dataset=balance")
    assert done.returncode == 2 and f"{library} is writable by other users" in done.stderr, done.stderr
