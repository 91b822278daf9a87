"""The exit codes that tell the truth: cells of the grid's own plan left unavailable exit non-zero unless the
command line accepted it, a data dir that does not exist is refused (grid and olb-run), an unknown experiment
gets a "did you mean" (docs/grid.md, "Exit status")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from olb.grid import GridConfigError, compose, run_grid
from olb.grid.cli import unknown_experiment
from olb.grid.finish import allowed_unavailable
from olb.grid.messages import EXIT_CONFIG, EXIT_OK, EXIT_UNAVAILABLE
from olb.run import main as olb_run

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


def test_cells_left_unavailable_exit_non_zero_unless_the_command_line_accepts_them(tmp_path, monkeypatch):
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "cache"))
    refused = run_grid(compose(TABLE3_WITH_MEDIAMILL), tmp_path / "a", TABLE3_WITH_MEDIAMILL)
    assert refused.exit_code == EXIT_UNAVAILABLE and refused.n_unavailable == 1 and refused.n_run == 1
    accepted = [*TABLE3_WITH_MEDIAMILL, "allow_unavailable=true"]
    assert run_grid(compose(accepted), tmp_path / "b", accepted).exit_code == EXIT_OK


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


def test_an_unknown_experiment_gets_a_did_you_mean():
    assert "(did you mean 'table3'?)" in unknown_experiment(["+experiment=tabel3"])
    assert unknown_experiment(["+experiment=table3"]) is None and unknown_experiment(["seeds=2"]) is None


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
