"""The exit codes that tell the truth: cells of the grid's own plan left unavailable exit non-zero unless the
command line accepted it (and the lines before say so), a data dir that does not exist is refused (grid and
olb-run, ``data_dir=`` or ``$OLB_DATA_DIR``), an unknown experiment or backend gets a "did you mean", a tracking
store or an output folder olb cannot write to is one line, exit 2 (docs/grid.md, "Exit status"). The command
line reads the numbers olb prints and the metrics a learner reports."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from olb.grid import GridConfigError, compose, run_grid
from olb.grid.cli import unknown_choices, unwritable_run_dir
from olb.grid.driver.finish import allowed_unavailable
from olb.grid.messages import EXIT_CONFIG, EXIT_OK, EXIT_UNAVAILABLE
from olb.run import main as olb_run

import olb

# table3's experiment file sets allow_unavailable: true; mediamill has no local copy and is never downloaded here
TABLE3_WITH_MEDIAMILL = [
    "+experiment=table3",
    "datasets=[emotions,mediamill]",
    "algorithms=[adaolmr]",
    "seeds=1",
    "num_learners=2",
    "backend=serial",
    "tracking=off",
    "plots=false",
]


def test_cells_left_unavailable_exit_non_zero_unless_the_command_line_accepts_them(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "cache"))
    refused = run_grid(compose(TABLE3_WITH_MEDIAMILL), tmp_path / "a", TABLE3_WITH_MEDIAMILL)
    assert refused.exit_code == EXIT_UNAVAILABLE and refused.n_unavailable == 1 and refused.n_run == 1
    # the line that skips the data set says what the exit code will say
    assert (
        "(the experiment's allow_unavailable: true; the grid exits 5 without them unless the command line says "
        "allow_unavailable=true)" in caplog.text
    )
    caplog.clear()
    accepted = [*TABLE3_WITH_MEDIAMILL, "allow_unavailable=true"]
    assert run_grid(compose(accepted), tmp_path / "b", accepted).exit_code == EXIT_OK
    assert "mediamill' is unavailable; its cells are marked unavailable (allow_unavailable=true)" in caplog.text


def test_allow_unavailable_counts_only_as_true_and_the_last_word_wins():
    assert allowed_unavailable(["allow_unavailable=true"]) and allowed_unavailable(["+allow_unavailable=True"])
    assert not allowed_unavailable(["allow_unavailable=true", "allow_unavailable=false"])
    assert not allowed_unavailable(["+experiment=table3", "allow_unavailable_x=true"])


def test_a_data_dir_that_does_not_exist_is_refused_even_with_the_embedded_copy(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    with pytest.raises(GridConfigError, match=f"data_dir: no such folder: {missing}"):
        run_grid(compose(["backend=serial", "tracking=off", f"data_dir={missing}"]), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert olb_run(["algorithm=falt", "dataset=emotions", f"data_dir={missing}"]) == EXIT_CONFIG
    assert f"olb.run: data_dir: no such folder: {missing}" in capsys.readouterr().err


def test_olb_data_dir_naming_no_folder_is_refused_like_data_dir(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("OLB_DATA_DIR", str(missing))
    with pytest.raises(GridConfigError, match=f"OLB_DATA_DIR: no such folder: {missing}"):
        run_grid(compose(["backend=serial", "tracking=off"]), tmp_path / "out")
    assert olb_run(["algorithm=falt", "dataset=emotions"]) == EXIT_CONFIG
    assert capsys.readouterr().err == f"olb.run: OLB_DATA_DIR: no such folder: {missing}\n"


def test_an_unknown_experiment_or_backend_gets_a_did_you_mean():
    assert "(did you mean 'table3'?)" in unknown_choices(["+experiment=tabel3"])[0]
    assert unknown_choices(["backend=rya"]) == [
        f"backend: unknown backend 'rya' (did you mean 'ray'?) in {Path(olb.conf_dir(), 'backend')}; known: auto, ray, "
        "serial"
    ]
    assert unknown_choices(["+experiment=table3", "seeds=2", "backend=serial", "tracking=off"]) == []


def test_a_sqlite_store_in_a_folder_that_does_not_exist_is_refused_and_not_created(tmp_path):
    uri = f"sqlite:///{tmp_path}/no/such/dir/mlflow.db"
    with pytest.raises(GridConfigError, match=f"^tracking.uri={uri}: .*no such folder: {tmp_path}/no/such/dir "):
        run_grid(compose(["backend=serial", f"tracking.uri={uri}"]), tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder olb cannot write in: one's own without write permission, or, for root (who writes there anyway),
    /sys, which the kernel keeps read-only even for root."""
    from olb.paths import unwritable

    folder = tmp_path / "read-only"
    folder.mkdir(mode=0o555)
    if unwritable(folder) is None:
        folder = Path("/sys")
        if unwritable(folder) is None:
            pytest.skip("no folder here refuses this user's writes")
    yield folder
    (tmp_path / "read-only").chmod(0o755)


def test_a_read_only_output_folder_is_one_line_before_hydra_starts(read_only_folder):
    problem = unwritable_run_dir(["+experiment=default", f"hydra.run.dir={read_only_folder}/grid"])
    assert problem is not None and problem.startswith(f"hydra.run.dir={read_only_folder}/grid: cannot write in ")


@pytest.mark.e2e
def test_a_read_only_working_directory_is_one_line_and_exit_2(read_only_folder):
    done = subprocess.run(
        [sys.executable, "-m", "olb.grid", "backend=serial"],
        cwd=read_only_folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_CONFIG and done.stdout == ""
    assert done.stderr.startswith("olb.grid: error: hydra.run.dir=outputs/default/") and done.stderr.count("\n") == 1
    assert f"cannot write in {read_only_folder}" in done.stderr


def test_olb_run_reads_numbers_as_olb_prints_them(capsys):
    for written in ("1e-05", "1e-5"):
        assert olb_run(["algorithm=oml", "dataset=emotions", f"lambda_min={written}", "latent_dim=2"]) == EXIT_OK
        assert yaml.safe_load(capsys.readouterr().out)["params"]["lambda_min"] == 1e-05


def test_a_learners_own_end_of_stream_figure_is_a_metric_to_ask_for(tmp_path, capsys):
    assert olb_run(["algorithm=best_vfdt", "dataset=balance", "num_learners=2", "metrics=[best_tree_accuracy]"]) == 0
    assert 0 < yaml.safe_load(capsys.readouterr().out)["metrics"]["best_tree_accuracy"] <= 1
    grid = ["+experiment=multiclass_table1", "datasets=[balance]", "metrics=[best_tree_accuracy]", "dry_run=true"]
    run_grid(compose([*grid, "algorithms=[best_vfdt]"]), tmp_path, stream=io.StringIO())
    with pytest.raises(GridConfigError, match="algorithm 'oza': oza does not report 'best_tree_accuracy'; choose"):
        run_grid(compose([*grid, "algorithms=[best_vfdt,oza]"]), tmp_path, stream=io.StringIO())


@pytest.mark.e2e
def test_the_command_line_says_did_you_mean_without_hydras_search_path(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "olb.grid", "+experiment=tabel3"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_CONFIG
    assert "did you mean 'table3'?" in done.stderr and "search path" not in done.stderr
    assert list(tmp_path.iterdir()) == []
