"""Configs no one else can plant, and grids refused before work when they cannot fit: a config folder another user
can write to (with a Hydra callback planted in it), another user's data folder or file, YAML that expands without
bound or includes itself, a grid of ten million seeds, a cell bigger than the machine on the serial backend, and
names that leave their folder. The other user is uid 65534 (``setpriv``; the tests run as root, here and in CI)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import olb
from olb.data import DataError, dataset_spec, load_dataset
from olb.grid import GridConfigError, compose, run_grid
from olb.grid.cli import config_folders
from olb.grid.planning.cost import machine_memory_mb, planned_memory_mb
from olb.grid.planning.expand import plan_grid
from olb.trust import MAX_INCLUDE_DEPTH, conf_problems
from test_grid_trust import emotions_copy
from test_shared_machine import OTHER, as_other, second_user

ROOT = Path(__file__).resolve().parents[1]
VICTIM_TEXT = "the victim's shell settings\n"


def grid_command(cwd: Path, *args: str, conf_dir: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m olb.grid args`` in ``cwd`` (serial, tracked in ``cwd``/mlflow.db), OLB_CONF_DIR=``conf_dir``."""
    env = {k: v for k, v in os.environ.items() if k != "OLB_CONF_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if conf_dir is not None:
        env["OLB_CONF_DIR"] = str(conf_dir)
    command = [sys.executable, "-m", "olb.grid", "backend=serial", "seeds=1", "num_learners=2", "plots=false"]
    command.append(f"tracking.uri=sqlite:///{cwd / 'mlflow.db'}")
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def experiment(folder: Path, name: str, text: str) -> Path:
    (folder / "experiment").mkdir(parents=True, exist_ok=True)
    path = folder / "experiment" / f"{name}.yaml"
    path.write_text(f"# @package _global_\nname: {name}\n{text}")
    return path


def takeover(victim: Path) -> str:
    """A Hydra callback that overwrites ``victim`` while Hydra launches (olb's own ``write_private``)."""
    return (
        "hydra:\n  callbacks:\n    x:\n      _target_: olb.grid.auth.write_private\n"
        f"      path: {{_target_: pathlib.Path, _args_: [{victim}]}}\n      text: planted\n"
    )


@pytest.fixture
def open_folder():
    """A folder in /tmp open to all (mode 0777), as a careless shared config folder would be."""
    folder = Path(tempfile.mkdtemp(prefix="olbpl-", dir="/tmp"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.e2e
@second_user
def test_a_callback_planted_in_a_config_folder_open_to_others_never_runs(open_folder, tmp_path):
    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir()
    victim.write_text(VICTIM_TEXT)
    planted = "# @package _global_\n" + takeover(victim)  # without the check: the victim's file says "planted"
    payload = open_folder / "payload"
    payload.write_text(planted)
    payload.chmod(0o644)
    as_other("mkdir", str(open_folder / "experiment"))
    as_other("cp", str(payload), str(open_folder / "experiment" / "default.yaml"))  # the other user's file
    payload.unlink()
    work = tmp_path / "work"
    work.mkdir()
    done = grid_command(work, conf_dir=open_folder)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"olb.grid: error: config folder {open_folder} is writable by other users (mode drwxrwxrwx): they can "
        f"change what olb reads; run `chmod go-w {open_folder}` or use a folder of your own"
    ], done.stderr
    assert victim.read_text() == VICTIM_TEXT
    assert list(work.iterdir()) == []  # no mlflow.db, no outputs/


def test_a_callable_in_a_config_file_of_ones_own_is_refused_naming_file_and_key(tmp_path):
    """No second user needed: a private folder's file that names a callable (a callback, a `_target_` anywhere)
    is refused too; olb's own configs name none."""
    victim = tmp_path / "victim"
    path = experiment(
        tmp_path / "conf",
        "default",
        takeover(victim) + "table:\n  metrics: {_target_: builtins.print}\n",
    )
    with pytest.raises(GridConfigError) as refused:
        compose(["hydra.searchpath=[file://" + str(tmp_path / "conf") + "]"])
    message = str(refused.value)
    assert f"config file {path}: hydra.callbacks.x._target_='olb.grid.auth.write_private' names a callable" in message
    assert "hydra.callbacks.x.path._target_='pathlib.Path' names a callable" in message
    assert "table.metrics._target_='builtins.print' names a callable" in message
    assert not victim.exists()
    assert conf_problems(olb.conf_dirs()) == []


@second_user
def test_another_users_file_in_a_private_config_folder_is_refused(tmp_path):
    path = experiment(tmp_path / "conf", "mine", "seeds: 1\n")
    os.chown(path, OTHER, OTHER)
    (problem,) = conf_problems([tmp_path / "conf"])
    assert problem.startswith(f"config file {path} is owned by uid {OTHER}, not by you (uid 0)"), problem


def test_every_folder_the_command_line_adds_is_checked(open_folder, tmp_path):
    args = ["hydra.searchpath=[pkg://somewhere,file://" + str(open_folder) + "]", "--config-dir", str(tmp_path)]
    assert config_folders(args) == [*olb.conf_dirs(), open_folder, tmp_path]
    (problem,) = conf_problems(config_folders(args))
    assert problem.startswith(f"config folder {open_folder} is writable by other users"), problem


@pytest.mark.e2e
def test_self_including_and_billion_laughs_experiments_are_refused_in_one_line_each(tmp_path):
    conf = tmp_path / "conf"
    loop = experiment(conf, "loop", "defaults:\n  - loop\n")
    anchors = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    anchors += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    laughs = experiment(conf, "laughs", "\n".join(anchors) + "\n")
    started = time.perf_counter()
    done = grid_command(tmp_path, "+experiment=loop", conf_dir=conf)
    assert done.returncode == 2 and time.perf_counter() - started < 60, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"olb.grid: error: config file {laughs} expands to more than 100,000 nodes (YAML aliases repeat what "
        "their anchor holds): too big for a config file",
        f"olb.grid: error: config file {loop} includes itself through its defaults list: experiment/loop -> "
        "experiment/loop",
    ], done.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]


def test_include_chains_in_a_loop_or_too_deep_are_named(tmp_path):
    experiment(tmp_path / "a", "one", "defaults:\n  - /experiment/two\n")
    experiment(tmp_path / "a", "two", "defaults:\n  - optional one@_here_\n")
    (problem,) = conf_problems([tmp_path / "a"])
    assert "experiment/one -> experiment/two -> experiment/one" in problem, problem
    for i in range(MAX_INCLUDE_DEPTH + 1):
        experiment(tmp_path / "b", f"c{i}", f"defaults:\n  - c{i + 1}\n")
    (problem,) = conf_problems([tmp_path / "b"])
    assert f"include configs more than {MAX_INCLUDE_DEPTH} deep: experiment/c0 -> experiment/c1" in problem
    experiment(tmp_path / "c", "ok", "defaults:\n  - /algorithm@algorithm.x: adaolmr\n  - _self_\n")
    assert conf_problems([tmp_path / "c", *olb.conf_dirs()]) == []  # includes olb's own, once


@second_user
def test_a_data_folder_or_file_of_another_user_is_refused_before_work(tmp_path):
    others = tmp_path / "others"
    others.mkdir()
    os.chown(others, OTHER, OTHER)
    cfg = compose(["backend=serial", "tracking=off", "seeds=1", f"data_dir={others}"])
    with pytest.raises(GridConfigError) as refused:
        run_grid(cfg, tmp_path / "out")
    assert f"data_dir {others} is owned by uid {OTHER}, not by you (uid 0)" in str(refused.value)
    assert not (tmp_path / "out").exists()
    ours = emotions_copy(tmp_path / "ours")  # a folder of ours holding another user's file
    train = ours / dataset_spec("emotions").files["train"].path
    os.chown(train, OTHER, OTHER)
    with pytest.raises(DataError, match=f"data file {train} is owned by uid {OTHER}"):
        load_dataset("emotions", ours)
    os.chown(train, 0, 0)
    load_dataset("emotions", ours)  # root's (or one's own) files are read


def test_ten_million_seeds_are_refused_in_well_under_a_second_before_expansion():
    cfg = compose(["seeds=10000000", "backend=serial", "tracking=off"])
    started = time.perf_counter()
    with pytest.raises(GridConfigError) as refused:
        plan_grid(cfg)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5, elapsed
    assert "the grid has 30,000,000 cells, more than max_cells=1,000,000" in str(refused.value)
    assert "max_cells=N to plan it anyway" in str(refused.value)
    with pytest.raises(GridConfigError, match="the grid has 3 cells, more than max_cells=2 "):
        plan_grid(compose(["seeds=1", "max_cells=2"]))
    assert len(plan_grid(compose(["seeds=1", "max_cells=3"])).cells) == 3


def test_a_cell_bigger_than_the_machine_is_refused_on_the_serial_backend_before_work(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    importlib.import_module("memory_hog")
    mb = 66_000_000  # 66 TB
    overrides = ["tracking=off", "seeds=1", "imports=[memory_hog]", "algorithms=[_memory_hog]"]
    cfg = compose(["backend=serial", *overrides, f"+algorithm._memory_hog.params.mb=[0,{mb}]"])
    with pytest.raises(GridConfigError) as refused:
        run_grid(cfg, tmp_path / "out")
    message = str(refused.value)
    assert f"1 setting(s) need more memory than this machine has ({machine_memory_mb():.0f} MB in all" in message
    predicted = planned_memory_mb("_memory_hog", {"mb": mb, "hold_s": 0.0}, "emotions")
    assert f"_memory_hog (mb={mb}) on emotions: predicted {predicted:.0f} MB" in message, message
    assert not (tmp_path / "out").exists()
    with pytest.raises(GridConfigError, match="this machine has"):  # the dry run refuses it too
        run_grid(compose(["backend=auto", "dry_run=true", *overrides, f"+algorithm._memory_hog.params.mb={mb}"]), ".")


@pytest.mark.e2e
def test_a_name_that_leaves_its_folder_is_refused_before_hydra_makes_it(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    done = grid_command(work, "name=../x")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "olb.grid: error: name: '../x' is not normalised (no '..', '.' or empty part): it would name a path "
        "outside the outputs folder"
    ], done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and list(work.iterdir()) == []


def test_names_and_exports_that_leave_their_folder_are_refused_by_the_planner(tmp_path):
    with pytest.raises(GridConfigError) as refused:
        plan_grid(compose(["name=/etc/olbprobe", f"export={tmp_path}/results/../../x"]))
    message = str(refused.value)
    assert "name: '/etc/olbprobe' is absolute; the grid's name is relative to the outputs folder" in message
    assert f"export='{tmp_path}/results/../../x': " in message and "is not normalised" in message, message
    plan_grid(compose(["name=mine/try", f"export={tmp_path}/results/x/"]))
