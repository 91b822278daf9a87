"""backend=auto: serial when the planned work is smaller than Ray's start-up, Ray otherwise; said and recorded."""

import io

import pytest
from omegaconf import OmegaConf

from olb.grid import compose, run_grid
from olb.grid.app import planned_work
from olb.grid.backends import choose_backend
from olb.grid.config import BackendConfig
from olb.grid.plan import plan_grid


def _cfg(**kw):
    return OmegaConf.structured(BackendConfig(**kw))


@pytest.mark.parametrize("work, tasks, cpus, expected", [
    (5.0, 9, 2, "serial"),  # the default grid: seconds of work against ~15 s of start-up
    (60.0, 200, 2, "ray"),  # 15 + 30 < 60
    (25.0, 200, 2, "serial"),  # 15 + 12.5 > 25
    (1e4, 200, 1, "serial"),  # one CPU: Ray only adds its start-up
    (1e4, 1, 8, "serial"),  # one task runs on one CPU either way
])
def test_auto_weighs_the_work_against_rays_start_up(work, tasks, cpus, expected, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    name, reason = choose_backend(_cfg(name="auto", num_cpus=cpus, ray_startup_s=15.0), work, tasks)
    assert name == expected and f"~{work:.0f} CPU s" in reason


def test_a_cluster_or_an_explicit_backend_is_never_second_guessed(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert choose_backend(_cfg(name="auto", address="auto"), 0.1, 1) == ("ray", "a Ray cluster address is given")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert choose_backend(_cfg(name="auto"), 0.1, 1)[0] == "ray"
    assert choose_backend(_cfg(name="serial"), 1e6, 1000) == ("serial", "as configured")


def test_planned_work_grows_with_the_grid():
    small = planned_work(plan_grid(compose(["seeds=1", "num_learners=2", "algorithms=[adaolmr]"])))
    large = planned_work(plan_grid(compose(["+experiment=table3"])))
    assert small[1] == 1 and large[1] == 250 and large[0] > 100 * small[0]


def test_the_default_grid_runs_serially_and_says_why(tmp_path, caplog):
    caplog.set_level("INFO", logger="olb.grid")
    outcome = run_grid(compose(["seeds=1", "num_learners=2", "tracking=off", "plots=false"]), tmp_path / "out",
                       stream=io.StringIO())
    assert outcome.exit_code == 0
    assert any("backend serial: planned work" in r.getMessage() for r in caplog.records)


def test_each_driver_starts_its_local_ray_in_its_own_folder(monkeypatch):
    import os

    from olb.grid.backends import ray_init_kwargs

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert ray_init_kwargs(_cfg())["_temp_dir"] == f"/tmp/olb-ray-{os.getpid()}"
