"""``python -m olb.run``: a cell from the command line; every bad argument one line on stderr, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]


def olb_run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OLB_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "olb.run", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )


@pytest.mark.parametrize(
    "args, expected",
    [
        (["algorithm=adaolmr", "dataset=emotins"], "unknown data set 'emotins' (did you mean 'emotions'?)"),
        (["algorithm=adaolmrr", "dataset=emotions"], "unknown algorithm 'adaolmrr' (did you mean 'adaolmr'?)"),
        (
            ["algorithm=adaolmr", "dataset=emotions", "num_lerners=2"],
            "unknown key 'num_lerners' (did you mean 'num_learners'?)",
        ),
        (["algorithm=adaolmr", "dataset=emotions", "protocol=train_tst"], "(did you mean 'train_test'?)"),
        (
            ["algorithm=adaolmr", "dataset=emotions", "metrics=[hamming_loss]"],
            "needs the learner's 'labels' output, and adaolmr gives only 'scores'; choose metrics=[...] that use its "
            "output: adaolmr can produce rank_loss,",
        ),
        (["algorithm=adaolmr", "dataset=emotions", "metrics=[rank_los]"], "(did you mean 'rank_loss'?); adaolmr can"),
        (["algorithm=adaolrm", "dataset=emotions"], "unknown algorithm 'adaolrm' (did you mean 'adaolmr'?)"),
        (
            ["algorithm=adaolm", "dataset=balance", "protocol=train_test"],
            "protocol 'train_test' needs a train/test split, and data set 'balance' has none: declare one in "
            "balance.yaml (split: {kind: first_rows or seeded_permutation, n_train: ...}, see docs/data.md) or use a "
            "protocol that needs none, such as protocol=prequential_last20",
        ),
        (["algorithm=adaolmr", "dataset=image"], "data set 'image' is not available"),
        (["algorithm=adaolmr"], "missing dataset"),
        (["adaolmr"], "expected key=value, got 'adaolmr'"),
        (["algorithm=adaolmr", "dataset=emotions", "seed=[1"], "seed: cannot read the value"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(tmp_path, args, expected):
    proc = olb_run(*args, tmp_path=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("olb.run: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert expected in proc.stderr


def test_help_and_a_cell(tmp_path):
    proc = olb_run("--help", tmp_path=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m olb.run")
    for listed in ("Algorithms:\n  adaolm, adaolmr,", "Data sets", "emotions", "table3", "docs/metrics.md"):
        assert listed in proc.stdout
    proc = olb_run("algorithm=adaolmr", "dataset=emotions", "num_learners=2", "seed=3", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = yaml.safe_load(proc.stdout)
    assert 0 < summary["metrics"]["rank_loss"] < 1 and len(summary["data_fingerprint"]) == 16


def test_help_imports_no_heavy_module(tmp_path):
    """The learners are imported (``--help`` lists the registered algorithms), nothing of the grid's stack."""
    code = (
        "import sys, runpy; sys.argv = ['olb.run', '--help']\n"
        "try: runpy.run_module('olb.run', run_name='__main__')\nexcept SystemExit: pass\n"
        "print(sorted(m for m in ('pandas', 'pooch', 'mlflow', 'ray', 'matplotlib', 'hydra') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr
