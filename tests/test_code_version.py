"""The code version recorded with every result: the commit, dirty only when the code or configs differ from it."""

import subprocess

import pytest

import olb
from olb.grid.recording.recorder import CODE_PATHS, code_version


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path):
    for path in ("olb/learner.py", "conf/config.yaml", "pyproject.toml", "results/run/table.csv", "docs/a.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("1\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    return tmp_path


def test_a_clean_checkout_records_its_commit(checkout):
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    assert code_version(checkout) == f"{olb.__version__}+g{sha.stdout.strip()}"


@pytest.mark.parametrize("changed", ["results/run/table.csv", "docs/a.md"])
def test_an_export_or_a_doc_edit_leaves_it_clean(checkout, changed):
    (checkout / changed).write_text("2\n")
    assert not code_version(checkout).endswith(".dirty")


@pytest.mark.parametrize("changed", ["olb/learner.py", "conf/config.yaml", "pyproject.toml"])
def test_a_code_or_config_change_marks_it_dirty(checkout, changed):
    assert any(changed.startswith(path) for path in CODE_PATHS)
    (checkout / changed).write_text("2\n")
    assert code_version(checkout).endswith(".dirty")


def test_outside_a_checkout_it_is_the_version(tmp_path):
    assert code_version(tmp_path) == olb.__version__
