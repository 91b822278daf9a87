"""olb.grid: config composition, expansion into cells, validation before any work (no Ray, no MLflow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException

from olb.grid import CellKey, GridConfigError, cell_id, compose, plan_grid
from olb.grid.datacheck import check_data
from olb.grid.planning.plan import Problems

REPO = Path(__file__).resolve().parents[1]


def plan(*overrides):
    return plan_grid(compose(list(overrides)))


def test_default_grid_expands():
    p = plan()
    # Ada.OLMR: 1 config; OnlineBMR: gamma in {0.1, 0.01}; 3 seeds
    assert len(p.cells) == (1 + 2) * 3
    assert {c.seed for c in p.cells} == {0, 1, 2}
    assert {c.dataset for c in p.cells} == {"emotions"}
    assert len({c.cell_id for c in p.cells}) == len(p.cells)
    bmr = [c for c in p.cells if c.algorithm == "onlinebmr"]
    assert sorted({c.params["gamma"] for c in bmr}) == [0.01, 0.1]
    assert all(c.params["num_learners"] == 10 for c in p.cells)
    # resolved params carry the algorithm's defaults
    assert bmr[0].params["margin"] == 1.0 and bmr[0].params["invalid_baseline"] == "cap"
    assert p.table_metrics == ["rank_loss", "runtime_s"] and p.select_by == "rank_loss"


def test_table3_settings_and_per_dataset_gamma_grids():
    p = plan("+experiment=table3", "datasets=[emotions,m-reduced]")
    assert {c.seed for c in p.cells} == set(range(10))
    assert all(c.params["num_learners"] == 100 and c.params["num_covariates"] == 20 for c in p.cells)
    gammas = {
        ds: sorted({c.params["gamma"] for c in p.cells if c.algorithm == "onlinebmr" and c.dataset == ds})
        for ds in ("emotions", "m-reduced")
    }
    assert gammas == {"emotions": [0.001, 0.01, 0.1, 0.2], "m-reduced": [0.001, 0.005, 0.01, 0.05]}
    assert len(p.cells) == 2 * 10 + 2 * 4 * 10
    assert p.entries["onlinebmr"]["best_of"] == ("gamma",)
    assert p.entries["onlinebmr"]["paper_name"] == "OnlineBMR (best of 4 gamma)"


TABLE5 = {  # paper 004, Table 5: (N, rho, loops) of TopOpt / TopAda
    "emotions": ((50, 0.02, 20), (50, 0.02, 10)),
    "scene": ((50, 0.02, 10), (50, 0.04, 10)),
    "yeast": ((30, 0.03, 10), (60, 0.04, 10)),
    "m-reduced": ((20, 0.04, 20), (60, 0.06, 20)),
}


def test_topk_experiments_follow_table5_and_share_cells():
    datasets = "datasets=[emotions,scene,yeast,m-reduced]"
    p1, p2 = plan("+experiment=topk_table1", datasets), plan("+experiment=topk_table2", datasets)
    for c in p2.cells:
        if c.algorithm in ("topopt", "topada"):
            n, rho, loops = TABLE5[c.dataset][c.algorithm == "topada"]
            assert (c.params["num_learners"], c.params["rho"], c.loops, c.params["k"]) == (n, rho, loops, 3)
            assert c.params["exploration"] == ("single_swap" if c.entry.endswith("_s") else "uniform")
    gammas = {c.params["gamma"] for c in p2.cells if c.algorithm == "topopt"}
    assert gammas == {0.1, 0.2, 0.3, 0.4} and len({c.seed for c in p2.cells}) == 10
    # Table 2 resumes Table 1's cells, and the full-information columns are Table 3's cells
    assert {c.cell_id for c in p1.cells} < {c.cell_id for c in p2.cells}
    full = {c.cell_id for c in p1.cells if c.algorithm in ("onlinebmr", "adaolmr")}
    assert full == {c.cell_id for c in plan("+experiment=table3", datasets).cells}
    figure = plan("+experiment=topk_figure1")
    assert sorted({c.params["k"] for c in figure.cells}) == [3, 5, 8, 11] and len(figure.cells) == 40


def test_learner_report_figures_are_table_metrics():
    p = plan("+experiment=multiclass_table1", "datasets=[balance]", "algorithms=[best_vfdt,adaolm]")
    assert p.table_metrics == ["accuracy", "best_tree_accuracy", "runtime_s"]
    assert p.lower_is_better["best_tree_accuracy"] is False  # declared by BestVFDT.report_metrics
    assert {c.algorithm: c.measured for c in p.cells} == {
        "best_vfdt": ("accuracy", "best_tree_accuracy"),
        "adaolm": ("accuracy",),
    }
    with pytest.raises(GridConfigError, match="best_tree_accuracy"):  # no learner of this grid reports it
        plan("+experiment=multiclass_table1", "datasets=[balance]", "algorithms=[adaolm]")


def test_command_line_restrictions_and_hyperparameter_shorthand():
    p = plan(
        "+experiment=table3",
        "datasets=[emotions,m-reduced]",
        "algorithms=[onlinebmr]",
        "seeds=3",
        "num_learners=7",
        "gamma=[0.3]",
    )
    assert {c.algorithm for c in p.cells} == {"onlinebmr"}
    assert {c.seed for c in p.cells} == {0, 1, 2}
    assert {c.params["num_learners"] for c in p.cells} == {7}
    assert {c.params["gamma"] for c in p.cells} == {0.3}  # replaces the per-dataset grid too
    assert len(p.cells) == 2 * 3
    p = plan("seeds=[4,9]", "loops=[1,2]", "algorithms=[adaolmr]")
    assert sorted({(c.seed, c.loops) for c in p.cells}) == [(4, 1), (4, 2), (9, 1), (9, 2)]
    assert len({c.cell_id for c in p.cells}) == 4
    # a hyperparameter no selected algorithm has is harmless, and reported
    p = plan("algorithms=[adaolmr]", "gamma=0.5")
    assert any("gamma" in w for w in p.warnings)


@pytest.mark.e2e
def test_cell_ids_are_stable_and_depend_only_on_the_result_determining_fields():
    base = dict(
        algorithm="onlinebmr",
        dataset="emotions",
        seed=1,
        params={"gamma": 0.1, "num_learners": 5},
        protocol="train_test",
        loops=1,
        metrics=("rank_loss",),
        curve_every=50,
    )
    a = cell_id(CellKey(**base))
    assert a == cell_id(CellKey(**{**base, "params": {"num_learners": 5, "gamma": 0.1}}))  # key order
    assert len(a) == 16 and int(a, 16) >= 0
    for change in (
        {"seed": 2},
        {"params": {"gamma": 0.2, "num_learners": 5}},
        {"loops": 2},
        {"metrics": ("rank_loss", "hamming_loss")},
        {"curve_every": 10},
        {"window": 100},
        {"dataset": "yeast"},
    ):
        assert cell_id(CellKey(**{**base, **change})) != a
    assert cell_id(CellKey(**base, window=0)) == a  # no window: the ids of the cells recorded before windows
    # labels, entry names and data_dir do not enter the id; the same config gives the same id everywhere
    p1 = plan("algorithms=[adaolmr]", "algorithm.adaolmr.label=Other", "data_dir=/somewhere")
    p2 = plan("algorithms=[adaolmr]")
    assert [c.cell_id for c in p1.cells] == [c.cell_id for c in p2.cells]
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from olb.grid import compose, plan_grid;"
            "print(' '.join(c.cell_id for c in plan_grid(compose(['algorithms=[adaolmr]'])).cells))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == [c.cell_id for c in p2.cells]


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (["algorithms=[nope]"], ["unknown algorithm 'nope'", "adaolmr", "onlinebmr"]),
        (["datasets=[nope]"], ["unknown data set 'nope'", "emotions", "yeast"]),
        (["gamma=1.5"], ["gamma=1.5", "out of range", "0.0 < value < 1.0"]),
        (["gamma=[0.1,0]"], ["gamma=0", "0.0 < value < 1.0"]),
        (["num_learners=-1"], ["num_learners=-1", "1 <= value"]),
        (["num_learners=2.5"], ["num_learners=2.5", "not an integer"]),
        (["weak_learner=oak"], ["weak_learner='oak'", "one of"]),
        (["seeds=0"], ["seeds=0", "positive integer"]),
        (["seeds=[1,1]"], ["repeated seed"]),
        (["loops=0"], ["loops=0", "integer >= 1"]),
        (["metrics=[nope]"], ["unknown metric 'nope'", "rank_loss"]),
        (["protocol=nope"], ["protocol='nope'", "train_test"]),
        (["table.rows=[foo]"], ["table.rows", "'foo'", "dataset, algorithm, metric"]),
        (["table.metrics=[accuracy]"], ["table.metrics", "'accuracy'", "rank_loss"]),
        (["algorithm.adaolmr.best_of=[gamma]"], ["best_of", "'gamma'", "num_learners"]),
        (["+algorithm.adaolmr.typo=1"], ["algorithm.adaolmr", "typo", "allowed keys", "best_of"]),
        (["+algorithm.onlinebmr.params.gama=[0.1]"], ["unknown hyperparameter 'gama'", "gamma"]),
        (["+algorithm.adaolmr.per_dataset.nope={num_learners:2}"], ["per_dataset", "unknown data set 'nope'"]),
        (["+foo=1"], ["foo: unknown key", "datasets"]),
        (["+backend.foo=1"], ["backend.foo: unknown key", "max_retries"]),
        (["backend.worker_memory_mb=-1"], ["backend.worker_memory_mb=-1", "out of range", "null", "0 (workers keep"]),
        (["datasets=[balance]"], ["solves multilabel", "'balance' is multiclass"]),
    ],
)
def test_invalid_configs_fail_before_any_work_naming_key_and_allowed_values(overrides, expected):
    with pytest.raises(GridConfigError) as err:
        plan(*overrides)
    for text in expected:
        assert text in str(err.value)


@pytest.mark.parametrize("overrides", [["foo=1"], ["curve_every=abc"], ["backend.max_retries=x"], ["backend=nope"]])
def test_hydra_rejects_unknown_keys_and_wrong_types(overrides):
    with pytest.raises(ConfigCompositionException):
        compose(overrides)


@pytest.mark.e2e
def test_unavailable_data_set_is_reported_with_where_to_put_files(tmp_path):
    env = {**os.environ, "OLB_CACHE_DIR": str(tmp_path / "cache")}
    # full mediamill is not available offline: the driver says so before any work and exits 2
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "olb.grid",
            "datasets=[emotions,mediamill]",
            "algorithms=[adaolmr]",
            "tracking=off",
            "backend=serial",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "mediamill" in proc.stderr and "allow_unavailable=true" in proc.stderr
    assert "mediamill/mediamill-train.arff" in proc.stderr  # which files, and where they go
    assert not (tmp_path / "out" / "cells.csv").exists()


def test_availability_check_finds_embedded_and_synthetic_data(monkeypatch, tmp_path):
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path))
    problems = Problems()
    a = check_data(["emotions", "synthetic-mediamill"], None, True, problems)
    assert a.available == ["emotions", "synthetic-mediamill"] and not a.unavailable and not problems.items
    assert a.sources["emotions"].verified and len(a.sources["emotions"].fingerprint) == 16


@pytest.mark.e2e
def test_cli_config_error_exit_code(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "olb.grid", "gamma=2", "tracking=off", f"hydra.run.dir={tmp_path / 'out'}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "gamma=2" in proc.stderr and "0.0 < value < 1.0" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "olb.grid", "curve_every=abc", f"hydra.run.dir={tmp_path / 'out'}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 2  # Hydra's composition errors too (1 means: some cell failed)
    assert "curve_every" in proc.stderr and "Integer" in proc.stderr


def test_unreachable_tracking_server_fails_fast_before_any_work(tmp_path):
    import socket
    import time

    from olb.grid import run_grid

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket is closed
    t0 = time.monotonic()
    with pytest.raises(GridConfigError, match="no MLflow server answers"):
        run_grid(compose(["backend=serial", f"tracking.uri=http://127.0.0.1:{port}"]), tmp_path / "out")
    assert time.monotonic() - t0 < 60
    assert not (tmp_path / "out" / "cells.csv").exists()


def test_unknown_command_line_keys_get_did_you_mean_before_hydra():
    from olb.grid.cli import unknown_override_keys

    assert (
        unknown_override_keys(
            [
                "hydra.run.dir=/x",
                "backend=serial",
                "+experiment=table3",
                "seeds=2",
                "+algorithm.mine.params.gamma=[0.1]",
                "algorithm.adaolmr.label=A",
                "num_learners=3",
                "data_dir=[/a,/b]",
                "verify_checksums=false",
                "--cfg",
            ]
        )
        == []
    )
    problems = unknown_override_keys(["num_lerners=3", "backend.max_retry=2", "+tracking.urii=x"])
    assert len(problems) == 3
    assert "did you mean 'num_learners'?" in problems[0] and "did you mean 'max_retries'?" in problems[1]
    assert problems[2].startswith("tracking.urii: unknown key (did you mean 'uri'?)")


def test_plugin_learners_get_top_level_shorthands(tmp_path, monkeypatch):
    """``imports=`` modules are imported before the schema is built: a plugin's own hyperparameter has its
    ``key=value`` shorthand, on the command line and in unknown-key checks."""
    from olb.grid.cli import unknown_override_keys
    from olb.learners.registry import ALGORITHMS, unregister

    (tmp_path / "olb_test_plugin.py").write_text(
        "from olb.ops.testing import GridStub\n"
        "from olb.learners.base import Param\n"
        "from olb.learners.registry import register\n\n\n"
        "@register\n"
        "class PluginStub(GridStub):\n"
        "    name = '_plugin_stub'\n"
        "    plugin_knob = Param(int, 0, low=0, doc='a plugin-only knob')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "_plugin_stub" not in ALGORITHMS
    try:
        p = plan("imports=[olb_test_plugin]", "algorithms=[_plugin_stub]", "plugin_knob=3", "seeds=1")
        assert [c.params["plugin_knob"] for c in p.cells] == [3]
        assert unknown_override_keys(["plugin_knob=3"]) == []
    finally:
        unregister("_plugin_stub")
        sys.modules.pop("olb_test_plugin", None)
        from olb.grid.planning.config import register_configs

        register_configs()


def test_did_you_mean_ranks_a_swap_first():
    from olb.learners.registry import algorithm_names
    from olb.text import did_you_mean

    assert did_you_mean("adaolrm", algorithm_names()) == " (did you mean 'adaolmr'?)"
    assert did_you_mean("onlienbmr", algorithm_names()) == " (did you mean 'onlinebmr'?)"
    assert did_you_mean("gama", ["gamma", "k"]) == " (did you mean 'gamma'?)"
    assert did_you_mean("xyz", algorithm_names()) == ""


def test_metrics_alone_replaces_the_table_metrics_it_does_not_measure():
    p = plan("+experiment=table3", "datasets=[emotions]", "metrics=[ranking_loss]")
    assert p.table_metrics == ["ranking_loss", "runtime_s"] and p.select_by == "ranking_loss"
    assert any("table.metrics: rank_loss not measured" in w for w in p.warnings)


def test_the_run_line_names_every_value_a_setting_took_the_default_among_them():
    from olb.grid.reporting.markdown import settings_run

    run = settings_run(plan("algorithms=[pa1_br]", "datasets=[emotions]", "C=[0.25,1.0]", "seeds=1"))
    assert "pa1_br (pa1_br, train_frozen, C={0.25, 1.0})" in run
    assert "C=" not in settings_run(plan("algorithms=[pa1_br]", "datasets=[emotions]", "C=1.0", "seeds=1"))
